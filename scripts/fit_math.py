#!/usr/bin/env python3
# The polynomial coefficients of the vectorizable math functions of the C++ prelude
# (src/codegen/cpp/prelude.ts: tspto_tanhf, tspto_erff, tspto_logf, tspto_sincos_kernel,
# tspto_pow_d) and the 2/pi words of its Payne-Hanek reduction. A development tool, not part of
# the build or of CI: needs numpy and mpmath (python3 -m pip install numpy mpmath).
#
# Each fit is a near-minimax polynomial by Lawson's algorithm (iteratively reweighted least
# squares on a dense Chebyshev grid) of the evaluation form the prelude uses, weighted so that
# the error minimized is the function's relative (or, where the result is near 1, absolute)
# error; mpmath gives the references at 120 bits. The coefficients are printed rounded to the
# type they are used in (float; double for pow's). The accuracy of the functions as built is
# measured by test/codegen/math_accuracy.test.ts, not here.
#
#   python3 scripts/fit_math.py            (all fits)
import sys
import mpmath as mp
import numpy as np

mp.mp.prec = 120


def lawson(xs, target, weight, basis, iters=400):
    """Coefficients c minimizing max |weight * (sum c_k basis_k(x) - target)| over xs."""
    a = np.array([[b(x) for b in basis] for x in xs]) * weight[:, None]
    y = target * weight
    w = np.ones(len(xs)) / len(xs)
    best = None
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)
        e = np.abs(a @ c - y)
        if best is None or e.max() < best[0]:
            best = (e.max(), c)
        w = w * e
        w = w / w.sum()
    return best


def cheb(a, b, n):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def ev(f, xs):
    return np.array([float(f(mp.mpf(x))) for x in xs])


def show(name, err, coefs, as_float=True):
    cs = [repr(float(np.float32(c))) + "f" if as_float else repr(float(c)) for c in coefs]
    print(f"{name}: max weighted error {err:.3g}\n  c0..: {', '.join(cs)}")


def even(deg):
    return [lambda x, k=k: x ** (2 * k) for k in range(deg)]


def powers(deg, mid=0.0):
    return [lambda x, k=k: (x - mid) ** k for k in range(deg + 1)]


def main():
    # tanh(x) = x + x^3 P(x^2), |x| < 0.625 (relative error)
    xs = cheb(1e-4, 0.625, 3000)
    show("tanh P", *lawson(xs, ev(lambda x: (mp.tanh(x) - x) / x ** 3, xs), xs ** 3 / ev(mp.tanh, xs), even(5)))
    # erf(x) = x + x R(x^2), |x| < 1 (relative error)
    xs = cheb(1e-4, 1.0, 3000)
    show("erf R", *lawson(xs, ev(lambda x: mp.erf(x) / x - 1, xs), xs / ev(mp.erf, xs), even(7)))
    # erfc(x) = Q(x - 2.5) on [1, 4] (absolute error: erf = 1 - Q)
    xs = cheb(1.0, 4.0, 3000)
    show("erfc Q", *lawson(xs, ev(mp.erfc, xs), np.ones_like(xs), powers(14, 2.5)))
    # log(1 + f) = f - f^2/2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1] (relative error)
    lo, hi = float(mp.sqrt(0.5)) - 1, float(mp.sqrt(2)) - 1
    xs = np.concatenate([cheb(lo, -1e-5, 1500), cheb(1e-5, hi, 1500)])
    show("log P", *lawson(xs, ev(lambda f: (mp.log1p(f) - f + f ** 2 / 2) / f ** 3, xs), np.abs(xs ** 3 / ev(mp.log1p, xs)), powers(7)))
    # sin r = r + r^3 S(r^2), cos r = 1 - r^2/2 + r^4 C(r^2), |r| <= pi/4 (a hair more)
    xs = cheb(1e-4, float(mp.pi) / 4 * 1.01, 3000)
    show("sin S", *lawson(xs, ev(lambda x: (mp.sin(x) - x) / x ** 3, xs), xs ** 3 / ev(mp.sin, xs), even(3)))
    show("cos C", *lawson(xs, ev(lambda x: (mp.cos(x) - 1 + x ** 2 / 2) / x ** 4, xs), xs ** 4 / ev(mp.cos, xs), even(3)))
    # pow: ln m = 2s + s^3 R(s^2), s = (m - 1)/(m + 1) <= (sqrt2 - 1)/(sqrt2 + 1); 2^f, |f| <= 1/2 (relative, double)
    smax = float((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1))
    xs = cheb(1e-6, smax * 1.001, 3000)
    show("pow ln R", *lawson(xs, ev(lambda s: (2 * mp.atanh(s) - 2 * s) / s ** 3, xs), xs ** 3 / ev(lambda s: 2 * mp.atanh(s), xs), even(5), iters=200), as_float=False)
    xs = cheb(-0.5, 0.5, 3000)
    e2 = ev(lambda f: mp.power(2, f), xs)
    show("pow exp2 P", *lawson(xs, e2, 1 / e2, powers(8), iters=200), as_float=False)
    # Payne-Hanek: 32-bit words 0..10 of the bits of 2/pi after 152 zero bits (words 4..10 used)
    mp.mp.prec = 500
    pad, nbits = 152, 32 * 11
    v = int(mp.floor(2 / mp.pi * mp.mpf(2) ** (nbits - pad)))
    bits = [0] * pad + [int(c) for c in bin(v)[2:].zfill(nbits - pad)]
    words = [int("".join(map(str, bits[32 * j:32 * j + 32])), 2) for j in range(11)]
    print("2/pi words:", ", ".join(f"0x{w:08x}u" for w in words))
    # pi/2 in three parts (33, 33, 53 bits) and pi/2 * 2^-64
    def trunc(x, b):
        e = mp.floor(mp.log(abs(x), 2))
        s = mp.mpf(2) ** (b - 1 - e)
        return mp.floor(x * s) / s
    c1 = trunc(mp.pi / 2, 33)
    c2 = trunc(mp.pi / 2 - c1, 33)
    print("pi/2 parts:", repr(float(c1)), repr(float(c2)), repr(float(mp.pi / 2 - c1 - c2)), " pi/2 * 2^-64:", repr(float(mp.pi / 2 * mp.mpf(2) ** -64)))


if __name__ == "__main__":
    sys.exit(main())

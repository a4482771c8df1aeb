// The fixed C++ prelude of the generated code, as two headers (a program includes one):
//  - PRELUDE_BASE ("tspto_prelude.h"): the ABI header, numeric helpers (float16 / bfloat16
//    conversions bit-exact with src/runtime/dtype.ts, saturating conversions with the five
//    rounding modes of `roundToDType`, saturating int64 arithmetic, NaN-propagating min/max,
//    exp / log / tanh / trig without calls) and the run-time checks of loads and stores;
//  - PRELUDE_SIMD ("tspto_prelude_simd.h"): the base plus <immintrin.h> and what needs it (the
//    register-blocked matmul, the GEMV, non-temporal stores, the bf16 / int8 dot kernels).
// Each is precompiled once per toolchain and ISA path (src/targets/cpu/toolchain.ts), so a
// program's source is only its own tasks and orchestration; a program that calls nothing of the
// second (elementwise, reductions) loads the smaller one. preludeFor picks it.
import { castModeHelpers } from "./cast_modes.js";
import { DOT_KERNELS } from "./prelude_dot.js";

const BASE_TEXT = String.raw`#include "tspto_abi.h"
// libstdc++'s <cmath> in C++17 declares the special functions (std::beta, std::riemann_zeta, ...:
// bits/specfun.h), whose inline wrappers instantiate their templates in every translation unit,
// ~70 ms of each compile even through the precompiled header; the prelude and the generated code
// use none of them, so that header is kept out (its own guard; other libraries ignore the name).
#ifndef _GLIBCXX_BITS_SPECFUN_H
#define _GLIBCXX_BITS_SPECFUN_H 1
#endif
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>
// Loops the compiler vectorizes use the full 512-bit registers where the machine has them
// (GCC's -march=native keeps 256 bits by default): the fused elementwise loops, exp and the row
// reductions then take half the instructions. Declared after the (precompiled) standard headers.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif

namespace {

// ------------------------------------------------------------------ bit casts
static inline float tspto_u2f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline uint32_t tspto_f2u(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static inline int64_t tspto_dbits(double d) { int64_t u; std::memcpy(&u, &d, 8); return u; }
static inline double tspto_bitsd(int64_t u) { double d; std::memcpy(&d, &u, 8); return d; }

// ------------------------------------------------------------------ float16 / bfloat16
// float -> binary16 bits, round to nearest even; overflow -> inf; NaN -> 0x7e00 (unsigned,
// canonical, as f32ToF16Bits in src/runtime/dtype.ts); subnormals exact.
static inline uint16_t tspto_f32_to_f16(float f) {
  uint32_t x = tspto_f2u(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7e00u;
  if (ax >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);         // >= 65536 (and inf)
  if (ax < 0x38800000u) {                                           // < 2^-14: subnormal or zero
    const float t = tspto_u2f(ax) + 0.5f;                           // the FPU rounds (nearest even)
    return (uint16_t)(sign | (tspto_f2u(t) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;                                          // rebias exponent, round
  return (uint16_t)(sign | (ax >> 13));
}
static inline float tspto_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return tspto_u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) { const float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }
  return tspto_u2f(sign | ((e + 112u) << 23) | (m << 13));
}
// float -> bfloat16 bits, round to nearest even; NaN -> 0x7fc0.
static inline uint16_t tspto_f32_to_bf16(float f) {
  uint32_t x = tspto_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static inline float tspto_bf16_to_f32(uint16_t b) { return tspto_u2f((uint32_t)b << 16); }
static inline float tspto_rnd_f16(float x) { return tspto_f16_to_f32(tspto_f32_to_f16(x)); }
static inline float tspto_rnd_bf16(float x) { return tspto_bf16_to_f32(tspto_f32_to_bf16(x)); }
// double -> float rounded to odd: a following rounding to a narrower format (f16, bf16)
// then equals one correct rounding of the double.
static inline float tspto_d2f_odd(double d) {
  float f = (float)d;
  if ((double)f != d && d == d) {
    uint32_t u = tspto_f2u(f);
    if (std::fabs((double)f) > std::fabs(d)) u -= 1u;
    f = tspto_u2f(u | 1u);
  }
  return f;
}
static inline float tspto_d2f16v(double d) { return tspto_rnd_f16(tspto_d2f_odd(d)); }
static inline float tspto_d2bf16v(double d) { return tspto_rnd_bf16(tspto_d2f_odd(d)); }
${castModeHelpers("static inline")}

// ------------------------------------------------------------------ exp
// fp32 exp without calls or branches, so the compiler vectorizes the loops that use it (libm's
// expf is a call without -ffast-math). Cephes expf: x = n ln2 + r (ln2 in two parts),
// |r| <= ln2/2, a degree-7 polynomial, 2^n from exponent bits in two factors (no overflow of
// the scale; one rounding into the subnormals). Where the machine has fused multiply-add the
// steps a * b + c are single FMAs (TSPTO_EXP_FMA: 8 fewer instructions per vector, one rounding
// fewer each); without it they are a multiply and an add. Within 1 ulp of the correctly rounded
// exp over all floats either way (test/codegen/exp_accuracy.test.ts builds it with AVX-512 + FMA,
// AVX2 + FMA and without FMA); inf -> inf, -inf -> 0, NaN -> NaN.
#if defined(__FMA__) || defined(__AVX512F__)
#define TSPTO_EXP_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define TSPTO_EXP_FMA(a, b, c) ((a) * (b) + (c))
#endif
static inline float tspto_expf(float x) {
  // quiet comparisons and a bit blend for NaN: no operation that may trap sits behind a condition,
  // so the compiler turns the selects into blends (vectorized with AVX2 too, not only with masks)
  const float xl = __builtin_isless(x, -104.0f) ? -104.0f : x;
  const float xc = __builtin_isgreater(xl, 89.0f) ? 89.0f : xl;
  const float t = TSPTO_EXP_FMA(xc, 1.44269504088896341f, 12582912.0f);  // round(x / ln2) in the low bits
  const float fn = t - 12582912.0f;
  const int32_t n = (int32_t)(tspto_f2u(t) - 0x4b400000u);
  float r = TSPTO_EXP_FMA(fn, -0.693359375f, xc);                     // exact: fn * 0.693359375 has few bits
  r = TSPTO_EXP_FMA(fn, 2.12194440e-4f, r);
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = TSPTO_EXP_FMA(p, r, 1.3981999507e-3f);
  p = TSPTO_EXP_FMA(p, r, 8.3334519073e-3f);
  p = TSPTO_EXP_FMA(p, r, 4.1665795894e-2f);
  p = TSPTO_EXP_FMA(p, r, 1.6666665459e-1f);
  p = TSPTO_EXP_FMA(p, r, 5.0000001201e-1f);
  p = TSPTO_EXP_FMA(p, r2, r) + 1.0f;
  const int32_t n1 = n >> 1, n2 = n - n1;
  const float y = p * tspto_u2f((uint32_t)(n1 + 127) << 23) * tspto_u2f((uint32_t)(n2 + 127) << 23);
  const uint32_t xb = tspto_f2u(x), nan = 0u - (uint32_t)((xb & 0x7fffffffu) > 0x7f800000u);
  return tspto_u2f(((xb | 0x00400000u) & nan) | (tspto_f2u(y) & ~nan));  // NaN -> the quiet NaN (x + x's bits)
}

// ------------------------------------------------------------------ tanh, sigmoid, erf, log, sin, cos, pow
// fp32 in, fp32 out (float16 / bfloat16 computed in fp32 and rounded once by the caller), with
// neither calls nor branches, so the fused elementwise loops that use them vectorize (libm's are
// calls: scalar, in double). Selects are blends of bits (tspto_self / tspto_seld: both values are
// computed first, so no operation that may trap sits behind a condition the vectorizer would have
// to keep), conditions are quiet comparisons or integer masks. The polynomial coefficients are
// minimax fits of this evaluation order, rounded to the type they are used in (scripts/fit_math.py).
// Accuracy (test/codegen/math_accuracy.test.ts builds these with AVX-512 + FMA, AVX2 + FMA and
// without FMA; docs/semantics.md has the table): over every float, within 1 ulp of the correctly
// rounded value (the interp reference: Math.* in float64 rounded once); special values (+-0,
// +-inf, NaN, subnormals) exactly as Math.*.
#define TSPTO_FMAF(a, b, c) TSPTO_EXP_FMA(a, b, c)
#if defined(__FMA__) || defined(__AVX512F__)
#define TSPTO_FMAD(a, b, c) __builtin_fma((a), (b), (c))
#else
#define TSPTO_FMAD(a, b, c) ((a) * (b) + (c))
#endif
static inline float tspto_self(bool c, float a, float b) { const uint32_t m = 0u - (uint32_t)c; return tspto_u2f((tspto_f2u(a) & m) | (tspto_f2u(b) & ~m)); }
static inline double tspto_seld(bool c, double a, double b) {
  const uint64_t m = 0ull - (uint64_t)c;
  return tspto_bitsd((int64_t)(((uint64_t)tspto_dbits(a) & m) | ((uint64_t)tspto_dbits(b) & ~m)));
}
static inline float tspto_absf(float x) { return tspto_u2f(tspto_f2u(x) & 0x7fffffffu); }
// m (a value with its sign bit clear) with the sign of s
static inline float tspto_signf(float m, float s) { return tspto_u2f(tspto_f2u(m) | (tspto_f2u(s) & 0x80000000u)); }
// v, or x's quiet NaN where x is NaN
static inline float tspto_nanf(float x, float v) {
  const uint32_t xb = tspto_f2u(x), nan = 0u - (uint32_t)((xb & 0x7fffffffu) > 0x7f800000u);
  return tspto_u2f(((xb | 0x00400000u) & nan) | (tspto_f2u(v) & ~nan));
}

// d - q s, exactly where the machine has fused multiply-add (else Dekker's exact product: the
// residual of a division d / s rounded to q)
static inline float tspto_residf(float q, float s, float d) {
#if defined(__FMA__) || defined(__AVX512F__)
  return __builtin_fmaf(-q, s, d);
#else
  const float p = q * s, cq = q * 4097.0f, cs = s * 4097.0f;
  const float qh = cq - (cq - q), ql = q - qh, sh = cs - (cs - s), sl = s - sh;
  return (d - p) - (((qh * sh - p) + qh * sl + ql * sh) + ql * sl);
#endif
}
// (d + dl) / (s + sl) for s in [1, 2): the quotient rounded, then corrected by its residual:
// within about 2^-48 of the exact quotient before the last rounding
static inline float tspto_divcf(float d, float dl, float s, float sl) {
  const float inv = 1.0f / s, q = d * inv;
  return TSPTO_FMAF(tspto_residf(q, s, d) + (dl - q * sl), inv, q);
}

// tanh: |x| < 0.625: x + x^3 P(x^2) (degree 4, relative error 4e-9); else (1 - e) / (1 + e) with
// e = exp(-2|x|) <= 0.29 (no cancellation; e -> 0 gives 1): 1 - e and 1 + e as exact sums of two
// floats and a corrected division, so the result errs by e's error (<= 0.2 ulp of it) and one
// rounding (a plain (1 - e) / (1 + e) rounds three times: 1.5 ulp, 2 apart). The sign is x's
// (tanh(-0) = -0).
static inline float tspto_tanhf(float x) {
  const float ax = tspto_absf(x), x2 = x * x;
  float p = -5.704987328499556e-3f;
  p = TSPTO_FMAF(p, x2, 2.06390880048275e-2f);
  p = TSPTO_FMAF(p, x2, -5.373971536755562e-2f);
  p = TSPTO_FMAF(p, x2, 1.3331441581249237e-1f);
  p = TSPTO_FMAF(p, x2, -3.333328068256378e-1f);
  const float small = TSPTO_FMAF(ax * x2, p, ax);
  const float e = tspto_expf(-2.0f * ax);
  const float s = 1.0f + e, sl = e - (s - 1.0f);                      // 1 + e = s + sl (exact: 1 >= e)
  const float d = 1.0f - e, dl = (1.0f - d) - e;                      // 1 - e = d + dl
  const float big = tspto_divcf(d, dl, s, sl);
  return tspto_signf(tspto_self(__builtin_isless(ax, 0.625f), small, big), x);  // NaN: big is NaN
}

// sigmoid = 1 / (1 + e^-x) as (x < 0 ? e : 1) / (1 + e), e = exp(-|x|) <= 1: never overflows, and
// far below 0 the result is e itself (subnormal down to -103.3, as the reference's). 1 + e as an
// exact sum and a corrected division (as tanh's); what remains is exp's error (for x < 0 the
// result's own) and one rounding: 1.48 ulp at worst over every float, never 2 floats apart.
static inline float tspto_sigmoidf(float x) {
  const float e = tspto_expf(-tspto_absf(x));
  const float s = 1.0f + e, sl = e - (s - 1.0f);
  return tspto_divcf(tspto_self(__builtin_isless(x, 0.0f), e, 1.0f), 0.0f, s, sl);
}

// erf: |x| < 1: x + x R(x^2) (degree 6, relative error 1.2e-9); 1 <= |x|: 1 - Q(min(|x|, 4) - 2.5),
// Q a degree-14 fit of erfc on [1, 4] (absolute error 9.4e-9; erf(x) rounds to 1 from 3.92 on).
static inline float tspto_erff(float x) {
  const float ax = tspto_absf(x), x2 = x * x;
  float p = 7.853883289499208e-05f;
  p = TSPTO_FMAF(p, x2, -8.010200690478086e-4f);
  p = TSPTO_FMAF(p, x2, 5.188328679651022e-3f);
  p = TSPTO_FMAF(p, x2, -2.6853812858462334e-2f);
  p = TSPTO_FMAF(p, x2, 1.128358542919159e-1f);
  p = TSPTO_FMAF(p, x2, -3.761262595653534e-1f);
  p = TSPTO_FMAF(p, x2, 1.2837916612625122e-1f);
  const float small = TSPTO_FMAF(x, p, x);
  const float t = tspto_self(__builtin_isgreater(ax, 4.0f), 4.0f, ax) - 2.5f;  // NaN stays NaN
  float q = -8.961361004367063e-07f;
  q = TSPTO_FMAF(q, t, -5.093404524814105e-07f);
  q = TSPTO_FMAF(q, t, 1.576799877511803e-05f);
  q = TSPTO_FMAF(q, t, -1.7681679310044274e-05f);
  q = TSPTO_FMAF(q, t, -8.125662134261802e-05f);
  q = TSPTO_FMAF(q, t, 2.703979844227433e-4f);
  q = TSPTO_FMAF(q, t, -2.5848072255030274e-4f);
  q = TSPTO_FMAF(q, t, -5.600641015917063e-4f);
  q = TSPTO_FMAF(q, t, 2.797348890453577e-3f);
  q = TSPTO_FMAF(q, t, -6.109302863478661e-3f);
  q = TSPTO_FMAF(q, t, 8.622685447335243e-3f);
  q = TSPTO_FMAF(q, t, -8.35171528160572e-3f);
  q = TSPTO_FMAF(q, t, 5.445676390081644e-3f);
  q = TSPTO_FMAF(q, t, -2.178188879042864e-3f);
  q = TSPTO_FMAF(q, t, 4.069526621606201e-4f);
  return tspto_self(__builtin_isless(ax, 1.0f), small, tspto_signf(1.0f - q, x));
}

// log: x = 2^e m, m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1 (exact):
// log(1 + f) = f - f^2/2 + f^3 P(f) (degree 7, relative error 5.8e-9), plus e ln2 in two parts.
// log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, log(1) = +0.
static inline float tspto_logf(float x) {
  const bool sub = __builtin_isless(x, 1.17549435e-38f);
  const float xs = x * tspto_self(sub, 8388608.0f, 1.0f);
  const uint32_t ud = tspto_f2u(xs) - 0x3f3504f3u;                 // the bits of sqrt(1/2)
  const int32_t e = ((int32_t)ud >> 23) - (sub ? 23 : 0);
  const float f = tspto_u2f((ud & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  const float f2 = f * f;
  float p = -7.634495943784714e-2f;
  p = TSPTO_FMAF(p, f, 1.276157647371292e-1f);
  p = TSPTO_FMAF(p, f, -1.3160182535648346e-1f);
  p = TSPTO_FMAF(p, f, 1.4201758801937103e-1f);
  p = TSPTO_FMAF(p, f, -1.6623356938362122e-1f);
  p = TSPTO_FMAF(p, f, 2.0001226663589478e-1f);
  p = TSPTO_FMAF(p, f, -2.500081956386566e-1f);
  p = TSPTO_FMAF(p, f, 3.333333134651184e-1f);
  const float y = TSPTO_FMAF(f2 * f, p, -0.5f * f2);
  const float ef = (float)e;
  float r = TSPTO_FMAF(ef, -2.12194440e-4f, y);
  r = r + f;
  r = TSPTO_FMAF(ef, 0.693359375f, r);                             // exact product: 0.693359375 has 9 bits
  const float inf = __builtin_inff();
  r = tspto_self(x == 0.0f, -inf, r);
  r = tspto_self(__builtin_isless(x, 0.0f), __builtin_nanf(""), r);
  r = tspto_self(x == inf, inf, r);
  return tspto_nanf(x, r);
}

// sin, cos. |x| = q pi/2 + r, |r| <= pi/4 (a hair more), r as a double:
// - |x| < 2^19: q = round(|x| 2/pi), r = |x| - q (C1 + C2 + C3), pi/2 in three parts of 33, 33 and
//   53 bits (each product exact, with or without FMA);
// - larger (to FLT_MAX): Payne-Hanek. |x| = mi 2^(E-150) (mi the 24-bit significand, E the biased
//   exponent): |x| 2/pi mod 4 is mi times the 96 bits of 2/pi from bit E on (mod 2^96): the
//   quadrant in the top 2 bits of the 64-bit z, r from the next 62 (absolute error 2^-62 of a
//   quadrant). The bits of 2/pi are seven 32-bit words T4..T10 (after 152 zero bits); the window
//   starts in word E >> 5 (4..7: picked by two blends per word, not by a table lookup: the
//   gathers measured 1.5x slower) at bit E & 31.
// Both are computed for every element (branch-free) and blended. Then r = rh + rl (two floats),
// sin r = rh + rh^3 S(rh^2) + rl and cos r = 1 - rh^2/2 + rh^4 C(rh^2) - rh rl (degree 2 fits:
// relative error 4e-9 and 1.3e-10; 1 - rh^2/2 with its rounding error added back). sin of x's
// sign (sin(-0) = -0); inf, NaN -> NaN.
static inline uint32_t tspto_pick4(uint32_t m0, uint32_t m1, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  const uint32_t lo = (b & m0) | (a & ~m0), hi = (d & m0) | (c & ~m0);
  return (hi & m1) | (lo & ~m1);
}
static inline double tspto_trig_reduce(float ax, int32_t* quadrant) {
  const double xd = (double)ax;
  const double t = xd * 0.6366197723675814 + 6755399441055744.0;     // 1.5 * 2^52: round(|x| 2/pi) in the low bits
  const double kd = t - 6755399441055744.0;
  const int32_t kq = (int32_t)tspto_dbits(t);
  double r = TSPTO_FMAD(-kd, 1.5707963267341256, xd);
  r = TSPTO_FMAD(-kd, 6.077100506303966e-11, r);
  r = TSPTO_FMAD(-kd, 2.0222662487959506e-21, r);
  const uint32_t ux = tspto_f2u(ax);
  const uint32_t E = ux >> 23, mi = (ux & 0x7fffffu) | 0x800000u, sh = E & 31u;
  const uint32_t m0 = 0u - ((E >> 5) & 1u), m1 = 0u - ((E >> 6) & 1u);
  const uint32_t T4 = 0x000000a2u, T5 = 0xf9836e4eu, T6 = 0x441529fcu, T7 = 0x2757d1f5u, T8 = 0x34ddc0dbu, T9 = 0x6295993cu, T10 = 0x439041feu;
  const uint32_t W0 = tspto_pick4(m0, m1, T4, T5, T6, T7), W1 = tspto_pick4(m0, m1, T5, T6, T7, T8);
  const uint32_t W2 = tspto_pick4(m0, m1, T6, T7, T8, T9), W3 = tspto_pick4(m0, m1, T7, T8, T9, T10);
  const uint32_t w0 = (W0 << sh) | ((W1 >> 1) >> (31u - sh)), w1 = (W1 << sh) | ((W2 >> 1) >> (31u - sh)), w2 = (W2 << sh) | ((W3 >> 1) >> (31u - sh));
  const uint64_t z = ((uint64_t)(mi * w0) << 32) + (uint64_t)mi * w1 + (((uint64_t)mi * w2) >> 32);
  const int32_t qb = (int32_t)((z + (1ull << 61)) >> 62);          // the nearest quadrant
  const uint64_t zz = z << 2;                                        // the rest: [-1/2, 1/2) quadrant, two's complement, 2^-64 units
  const double fr = (double)(int32_t)(uint32_t)(zz >> 32) * 4294967296.0 + (tspto_bitsd((int64_t)(0x4330000000000000ull | (uint32_t)zz)) - 4503599627370496.0);
  const bool big = __builtin_isgreaterequal(ax, 524288.0f);
  *quadrant = big ? qb : kq;
  return tspto_seld(big, fr * 8.515303950216386e-20, r);           // pi/2 * 2^-64
}
// sin (cosine false) or cos of q pi/2 + r
static inline float tspto_sincos_kernel(double rd, int32_t q, bool cosine) {
  const float rh = (float)rd, rl = (float)(rd - (double)rh);
  const float r2 = rh * rh;
  float s = -1.9508741388563067e-4f;
  s = TSPTO_FMAF(s, r2, 8.332112804055214e-3f);
  s = TSPTO_FMAF(s, r2, -1.6666653752326965e-1f);
  const float sv = rh + TSPTO_FMAF(rh * r2, s, rl);
  float c = 2.4425680749118328e-05f;
  c = TSPTO_FMAF(c, r2, -1.3887251261621714e-3f);
  c = TSPTO_FMAF(c, r2, 4.166664555668831e-2f);
  const float hz = 0.5f * r2, w = 1.0f - hz;
  const float cv = w + (((1.0f - w) - hz) + TSPTO_FMAF(r2 * r2, c, -rh * rl));
  const uint32_t qq = (uint32_t)(cosine ? q + 1 : q);
  const uint32_t odd = 0u - (qq & 1u);                              // an integer mask (a bool from an and does not vectorize)
  const float v = tspto_u2f((tspto_f2u(cv) & odd) | (tspto_f2u(sv) & ~odd));
  return tspto_u2f(tspto_f2u(v) ^ ((qq & 2u) << 30));              // quadrants 2 and 3: negated
}
static inline float tspto_sinf(float x) {
  int32_t q;
  const float ax = tspto_absf(x);
  const double r = tspto_trig_reduce(ax, &q);
  return tspto_self(tspto_f2u(ax) >= 0x7f800000u, x - x, tspto_u2f(tspto_f2u(tspto_sincos_kernel(r, q, false)) ^ (tspto_f2u(x) & 0x80000000u)));
}
static inline float tspto_cosf(float x) {
  int32_t q;
  const float ax = tspto_absf(x);
  const double r = tspto_trig_reduce(ax, &q);
  return tspto_self(tspto_f2u(ax) >= 0x7f800000u, x - x, tspto_sincos_kernel(r, q, true));
}

// pow(a, b) as Math.pow (JS: NaN ** 0 = 1, (+-1) ** +-inf = NaN), in double, for double operands
// (float tile elements convert exactly; a number operand keeps all its bits), rounded once by the
// caller: log2 |a| = e + ln(m)/ln2 with m in [sqrt(1/2), sqrt(2)) and ln m = 2s + s^3 R(s^2),
// s = (m - 1)/(m + 1) (relative error 3e-14), t = b log2 |a| clamped to [-200, 200] (beyond
// float32's range), 2^t = 2^n 2^f with |f| <= 1/2 (degree 8, 7.7e-13): the double is within
// 2^-36 of a^b, so the result is within 1 ulp of the correctly rounded float32 (float16) over all
// operands. Signs and the special cases by selects: an odd integer b keeps a's sign, a negative
// finite a to a non-integer b is NaN, 0 ** -b = inf, inf ** b, b = +-inf as IEEE / JS say.
static inline double tspto_pow_d(double a, double b) {
  const uint64_t abits = (uint64_t)tspto_dbits(a) & 0x7fffffffffffffffull;
  const double ad = tspto_bitsd((int64_t)abits);
  const bool sub = __builtin_isless(ad, 2.2250738585072014e-308);   // a subnormal double (a number operand)
  const int64_t ud = tspto_dbits(ad * tspto_seld(sub, 18014398509481984.0, 1.0)) - 0x3fe6a09e667f3bcdLL;  // the bits of sqrt(1/2)
  const int32_t e = (int32_t)(ud >> 52) - (sub ? 54 : 0);
  const double m = tspto_bitsd((ud & 0x000fffffffffffffLL) + 0x3fe6a09e667f3bcdLL);
  const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  double R = 0.19586404722429296;
  R = TSPTO_FMAD(R, s2, 0.22176046711806197);
  R = TSPTO_FMAD(R, s2, 0.2857211218324805);
  R = TSPTO_FMAD(R, s2, 0.39999995597093796);
  R = TSPTO_FMAD(R, s2, 0.6666666667586156);
  const double inf = __builtin_inf();
  double l2 = TSPTO_FMAD(TSPTO_FMAD(s * s2, R, 2.0 * s), 1.4426950408889634, (double)e);
  l2 = tspto_seld(ad == 0.0, -inf, l2);
  l2 = tspto_seld(ad == inf, inf, l2);
  double t = b * l2;
  t = tspto_seld(__builtin_isless(t, -200.0), -200.0, t);
  t = tspto_seld(__builtin_isgreater(t, 200.0), 200.0, t);
  const double nr = t + 6755399441055744.0, n = nr - 6755399441055744.0, f = t - n;
  const int32_t ni = (int32_t)tspto_dbits(nr);
  double p = 1.3175848341692655e-06;
  p = TSPTO_FMAD(p, f, 1.5309737251891628e-05);
  p = TSPTO_FMAD(p, f, 1.540385179183984e-4);
  p = TSPTO_FMAD(p, f, 1.33334520628743e-3);
  p = TSPTO_FMAD(p, f, 9.618128542805462e-3);
  p = TSPTO_FMAD(p, f, 5.550410939341017e-2);
  p = TSPTO_FMAD(p, f, 2.4022650698880507e-1);
  p = TSPTO_FMAD(p, f, 6.931471805465144e-1);
  p = TSPTO_FMAD(p, f, 9.999999999997624e-1);
  double y = p * tspto_bitsd((int64_t)(ni + 1023) << 52);
  // b an integer (+-inf counts: doubles of 2^53 and up are even integers), an odd one: from its bits
  const uint64_t ub = (uint64_t)tspto_dbits(b) & 0x7fffffffffffffffull, mant = (ub & 0x000fffffffffffffull) | 0x0010000000000000ull;
  const int64_t sh = 1075 - (int64_t)(ub >> 52);                     // |b| = mant 2^-sh
  const uint64_t shc = (uint64_t)(sh < 0 ? 0 : sh > 63 ? 63 : sh);
  const uint64_t hi = mant >> shc;                                   // the integer part of |b| (sh >= 0)
  const uint64_t bint = (uint64_t)((hi << shc) == mant) | (uint64_t)(ub == 0);
  const uint64_t bodd = bint & (uint64_t)(sh >= 0) & hi;
  const uint64_t aneg = (uint64_t)tspto_dbits(a) >> 63;
  y = tspto_bitsd(tspto_dbits(y) ^ (int64_t)((aneg & bodd & 1ull) << 63));
  const double nan = __builtin_nan("");
  y = tspto_seld((aneg & (bint ^ 1ull) & (uint64_t)(ad != 0.0) & (uint64_t)(ad != inf)) != 0, nan, y);
  y = tspto_seld(((uint64_t)(a != a) | (uint64_t)(b != b)) != 0, nan, y);
  y = tspto_seld(((uint64_t)(ad == 1.0) & (uint64_t)(ub == 0x7ff0000000000000ull)) != 0, nan, y);
  return tspto_seld(b == 0.0, 1.0, y);
}
// a^n for a constant integer n >= 1 (pow's fast path): binary powering in double
template <int N> static inline double tspto_powi(double x) {
  if constexpr (N == 1) return x;
  else if constexpr (N % 2 == 0) { const double h = tspto_powi<N / 2>(x); return h * h; }
  else return x * tspto_powi<N - 1>(x);
}

// ------------------------------------------------------------------ streaming stores
// Orders a task's non-temporal stores (tspto_stream_store, in the SIMD part) before its
// completion is published; the builtin needs no header, so the base part has it.
static inline void tspto_stream_fence() {
#if defined(__SSE2__)
  __builtin_ia32_sfence();
#endif
}

// ------------------------------------------------------------------ integers
static inline int8_t tspto_sat_i8(int64_t v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }
static inline int16_t tspto_sat_i16(int64_t v) { return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }
static inline int32_t tspto_sat_i32(int64_t v) { return (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); }
static inline int64_t tspto_sat_i64(int64_t v) { return v; }
static inline uint8_t tspto_sat_u8(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
static inline uint8_t tspto_sat_b(int64_t v) { return (uint8_t)(v != 0); }
// double (already rounded to an integer value) -> integer type, saturating; NaN -> 0.
static inline int8_t tspto_d2i8(double r) { return r != r ? 0 : r <= -128.0 ? -128 : r >= 127.0 ? 127 : (int8_t)r; }
static inline int16_t tspto_d2i16(double r) { return r != r ? 0 : r <= -32768.0 ? -32768 : r >= 32767.0 ? 32767 : (int16_t)r; }
static inline int32_t tspto_d2i32(double r) { return r != r ? 0 : r <= -2147483648.0 ? INT32_MIN : r >= 2147483647.0 ? INT32_MAX : (int32_t)r; }
static inline int64_t tspto_d2i64(double r) {
  return r != r ? 0 : r <= -9223372036854775808.0 ? INT64_MIN : r >= 9223372036854775808.0 ? INT64_MAX : (int64_t)r;
}
static inline uint8_t tspto_d2u8(double r) { return r != r ? 0 : r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r; }
static inline uint8_t tspto_d2b(double r) { return (uint8_t)(r != 0.0); }
// rounding modes: round = half away from zero, rint = half to even
static inline double tspto_mode_round(double x) { return std::round(x); }
static inline double tspto_mode_rint(double x) { return std::nearbyint(x); }
static inline double tspto_mode_floor(double x) { return std::floor(x); }
static inline double tspto_mode_ceil(double x) { return std::ceil(x); }
static inline double tspto_mode_trunc(double x) { return std::trunc(x); }
// int64 arithmetic saturating like the reference (computed exactly, then clamped)
static inline int64_t tspto_add_sat(int64_t a, int64_t b) { int64_t r; return __builtin_add_overflow(a, b, &r) ? (a < 0 ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_sub_sat(int64_t a, int64_t b) { int64_t r; return __builtin_sub_overflow(a, b, &r) ? (a < 0 ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_mul_sat(int64_t a, int64_t b) { int64_t r; return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_neg_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : -a; }
static inline int64_t tspto_abs_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : (a < 0 ? -a : a); }
// truncating division; x / 0 = 0
static inline int64_t tspto_idiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? tspto_neg_sat(a) : a / b; }
// remainder with the sign of a (JS %); x % 0 = 0
static inline int64_t tspto_imod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
// remainder with the sign of b (Python %); x rem 0 = 0
static inline int64_t tspto_irem(int64_t a, int64_t b) { const int64_t r = tspto_imod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline double tspto_frem(double a, double b) { const double r = std::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
// shifts by n: n < 0 shifts by 0; shl by >= 64 gives 0 (wrapping, through uint64); shr by >= bits sign-fills
static inline int64_t tspto_shl(int64_t a, int64_t n) { return n >= 64 ? 0 : (int64_t)((uint64_t)a << (n < 0 ? 0 : n)); }
static inline int64_t tspto_sar(int64_t a, int64_t n, int bits) { return a >> (n < 0 ? 0 : n >= bits ? bits - 1 : n); }
static inline int64_t tspto_shr_u(int64_t a, int64_t n, int bits) { return n >= bits ? 0 : (int64_t)((uint64_t)a >> (n < 0 ? 0 : n)); }
static inline int64_t tspto_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t tspto_imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ------------------------------------------------------------------ floats
// Math.max / Math.min: NaN if either is NaN; max(-0, 0) = 0, min(-0, 0) = -0.
// Equal operands differ at most in the sign of a zero, so the tie is settled on the bits:
// min ORs them (-0 if either is -0), max ANDs them (+0 unless both are -0). The tie was
// 'std::signbit(a) ? a : b', which g++ 12 at -O3 with AVX2/AVX-512 cannot compile once it knows
// the sign (minimum(abs(v), v) over tiles in scratch: an internal compiler error in FRE,
// eliminate_stmt, tree-ssa-sccvn.cc:6459 — test/codegen/minmax_ice.test.ts).
template <typename F> struct TsptoBits { using U = uint32_t; };
template <> struct TsptoBits<double> { using U = uint64_t; };
template <typename F> static inline F tspto_fbits_or(F a, F b) {
  typename TsptoBits<F>::U x, y; std::memcpy(&x, &a, sizeof a); std::memcpy(&y, &b, sizeof b); x |= y; F r; std::memcpy(&r, &x, sizeof r); return r;
}
template <typename F> static inline F tspto_fbits_and(F a, F b) {
  typename TsptoBits<F>::U x, y; std::memcpy(&x, &a, sizeof a); std::memcpy(&y, &b, sizeof b); x &= y; F r; std::memcpy(&r, &x, sizeof r); return r;
}
template <typename F> static inline F tspto_fmax(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a > b ? a : b > a ? b : tspto_fbits_and(a, b);
}
template <typename F> static inline F tspto_fmin(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a < b ? a : b < a ? b : tspto_fbits_or(a, b);
}

template <typename F> static inline F tspto_relu(F a) { return a > (F)0 ? a : (F)0; }

// ------------------------------------------------------------------ transpose
// o[c][r] = x[r][c] of a rows x cols tile, in 16 x 16 blocks (both sides stay in L1). One
// out-of-line copy per element type: a loop specialized for each tile shape is what GCC's
// vectorizer turns into scatters, several times slower and most of a bTrans matmul's compile.
template <typename T>
__attribute__((noinline)) static void tspto_transpose(T* __restrict o, const T* __restrict x, int64_t rows, int64_t cols) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16) {
    const int64_t ie = i0 + 16 < rows ? i0 + 16 : rows;
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      const int64_t je = j0 + 16 < cols ? j0 + 16 : cols;
      for (int64_t i = i0; i < ie; ++i)
        for (int64_t j = j0; j < je; ++j) o[j * rows + i] = x[i * cols + j];
    }
  }
}

// A select of two values: both operands are evaluated (loaded) before the blend, so the
// vectorizer sees unconditional loads and a blend, never masked loads. g++ 12 at -O3
// -march=native miscompiles a vectorized 'm[i] != 0 ? a[i] : b[i]' over small tiles (the
// masked loads of later vectors reuse the first vector's mask); every select of the generated
// element loops goes through this (sel, fillpad's pad, prelu, lrelu, integer division by a
// float scalar): no value is read in one arm of a conditional only. Loops that must not read
// outside a region (edge tiles, a load's valid rows) are split into separate loops instead.
template <typename T> static inline T tspto_blend(bool m, T a, T b) { return m ? a : b; }

// ------------------------------------------------------------------ run-time checks
// a window (slice / assemble / read) outside a tile or tensor: "slice window [..] + [..] is outside tile 'x' of shape [..] (axis k)"
__attribute__((cold, noinline)) static void tspto_bounds_fail(const TsptoRuntimeApi* rt, const char* where, const char* what,
    const char* kind, const char* name, int rank, const int64_t* off, const int64_t* shape, const int64_t* dims) {
  char buf[1024];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  int axis = 0;
  for (int i = 0; i < rank; ++i) if (off[i] < 0 || off[i] > dims[i] - shape[i]) { axis = i; break; }
  put("%s: %s window [", where, what);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)off[i]);
  put("] + [");
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)shape[i]);
  put("] is outside %s '%s' of shape [", kind, name);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)dims[i]);
  put("] (axis %d)", axis);
  rt->fail(rt->ctx, buf);
}
// a load/store window outside a tensor: "load window [..] + [..] is outside tensor 'a' of shape [..] (axis k)"
__attribute__((cold, noinline)) static void tspto_window_fail(const TsptoRuntimeApi* rt, const char* where, const char* what,
    const char* tensor, int rank, const int64_t* off, const int64_t* shape, const int64_t* dims) {
  tspto_bounds_fail(rt, where, what, "tensor", tensor, rank, off, shape, dims);
}
// a window of run-time extent with an extent below 1: "slice extent 0 on axis 1 (shape [1, 0]) must be an integer >= 1"
__attribute__((cold, noinline)) static void tspto_extent_fail(const TsptoRuntimeApi* rt, const char* where, const char* what, int rank, const int64_t* shape) {
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  int axis = 0;
  for (int i = 0; i < rank; ++i) if (shape[i] < 1) { axis = i; break; }
  put("%s: %s extent %lld on axis %d (shape [", where, what, (long long)shape[axis], axis);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)shape[i]);
  put("]) must be an integer >= 1");
  rt->fail(rt->ctx, buf);
}
// an index outside its table: "gather index 70000 (element 3 of the indices) is outside [0, 50257) on axis 0 of tensor 'wte' of shape [50257, 768]"
// (pos < 0: the position is not known here, a tile of a tensor-level gather)
__attribute__((cold, noinline)) static void tspto_index_fail(const TsptoRuntimeApi* rt, const char* where, const char* what, const char* table,
    int rank, const int64_t* dims, int axis, int64_t pos, int64_t idx) {
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  put("%s: %s index %lld", where, what, (long long)idx);
  if (pos >= 0) put(" (element %lld of the indices)", (long long)pos);
  put(" is outside [0, %lld) on axis %d of %s of shape [", (long long)dims[axis], axis, table);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)dims[i]);
  put("]");
  rt->fail(rt->ctx, buf);
}
__attribute__((cold, noinline)) static void tspto_scratch_fail(const TsptoRuntimeApi* rt, const char* kernel, int64_t need) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "kernel '%s' needs %lld bytes of scratch but a core has %lld", kernel, (long long)need,
      (long long)rt->scratch_bytes);
  rt->fail(rt->ctx, buf);
}

}  // namespace
`;

const SIMD_TEXT = String.raw`namespace {

// A write-only output of the launch (pass StreamOutputs) of at least TSPTO_STREAM_MIN bytes:
// each row is computed into a small buffer in L1 and copied out with non-temporal stores
// (straight to memory: no read-for-ownership of each line, the caches keep the inputs).
// tspto_stream_fence orders them before the task's completion is published.
static inline void tspto_stream_store(void* dst, const void* src, int64_t n) {
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#if defined(__AVX512F__)
  const int64_t W = 64;
#elif defined(__AVX__)
  const int64_t W = 32;
#else
  const int64_t W = 16;
#endif
  int64_t head = (int64_t)((W - ((uintptr_t)d & (uintptr_t)(W - 1))) & (uintptr_t)(W - 1));
  if (head > n) head = n;
  std::memcpy(d, s, (size_t)head);
  d += head; s += head; n -= head;
  for (; n >= W; n -= W, d += W, s += W) {
#if defined(__AVX512F__)
    _mm512_stream_si512((__m512i*)d, _mm512_loadu_si512((const void*)s));
#elif defined(__AVX__)
    _mm256_stream_si256((__m256i*)d, _mm256_loadu_si256((const __m256i*)s));
#else
    _mm_stream_si128((__m128i*)d, _mm_loadu_si128((const __m128i*)s));
#endif
  }
#endif
  std::memcpy(d, s, (size_t)n);
}

// ------------------------------------------------------------------ matmul
// 16 floats as one value (GCC / clang vector extension): the register-blocked float matmul
// holds its output block in these; on targets without 512-bit vectors the compiler splits them.
typedef float tspto_v16f __attribute__((vector_size(64)));
static inline tspto_v16f tspto_ld16(const float* p) { tspto_v16f v; std::memcpy(&v, p, 64); return v; }
static inline void tspto_st16(float* p, tspto_v16f v) { std::memcpy(p, &v, 64); }
// (not tspto_v16f{} + x: without fast-math 0 + x is a real addition, as -0 + 0 = +0)
static inline tspto_v16f tspto_splat16(float x) { return tspto_v16f{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
// fused multiply-add, lane by lane: fma(a, b, c) rounded once (matmul with fpContract "fast").
// The build keeps -ffp-contract=off, so a fused operation happens exactly where the IR says.
static inline tspto_v16f tspto_fma16(tspto_v16f a, tspto_v16f b, tspto_v16f c) {
#if defined(__AVX512F__)
  return (tspto_v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
  __m256 a0, a1, b0, b1, c0, c1;
  std::memcpy(&a0, &a, 32); std::memcpy(&a1, (const char*)&a + 32, 32);
  std::memcpy(&b0, &b, 32); std::memcpy(&b1, (const char*)&b + 32, 32);
  std::memcpy(&c0, &c, 32); std::memcpy(&c1, (const char*)&c + 32, 32);
  c0 = _mm256_fmadd_ps(a0, b0, c0);
  c1 = _mm256_fmadd_ps(a1, b1, c1);
  tspto_v16f r;
  std::memcpy(&r, &c0, 32); std::memcpy((char*)&r + 32, &c1, 32);
  return r;
#else
  tspto_v16f r;
  for (int i = 0; i < 16; ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return r;
#endif
}

// The packed panel of a transposed b (matmul with bTrans: b stored [n, k]):
// pb[kk * W + j] = bt[(j0 + j) * ldb + k0 + kk] for 0 <= kk < kl, 0 <= j < W (W a multiple of
// 16), i.e. the layout a panel of a plain b is packed into; 16 x 16 blocks are transposed in
// registers (AVX-512: unpack, shuffle within lanes, then across lanes), the rest element by element.
#if defined(__AVX512F__)
// r[i] = row i of a 16 x 16 block of floats -> r[i] = its column i (in-register transpose)
static inline void tspto_tr16(__m512* r) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) { t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]); t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]); }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44); r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44); r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) { t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88); t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD); }
  for (int i = 0; i < 8; ++i) { r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88); r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD); }
}
#endif
static inline void tspto_pack_bt(float* __restrict pb, int64_t W, const float* __restrict bt, int64_t ldb, int64_t j0, int64_t k0, int64_t kl) {
  int64_t kk = 0;
#if defined(__AVX512F__)
  for (; kk + 16 <= kl; kk += 16) {
    for (int64_t j = 0; j < W; j += 16) {
      const float* s = bt + (j0 + j) * ldb + k0 + kk;
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ldb);
      tspto_tr16(r);
      float* d = pb + kk * W + j;
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(d + i * W, r[i]);
    }
  }
#endif
  for (; kk < kl; ++kk)
    for (int64_t j = 0; j < W; ++j) pb[kk * W + j] = bt[(j0 + j) * ldb + k0 + kk];
}

// A few rows times b stored [n, k] (bTrans), b streamed: o[r, j] = c[r, j] (or 0) + the sum over
// k < K, in k order, of a[r, k] * bt[j, k], for r < M and j < nv. Sixteen rows of bt are read at
// a time, each contiguously, and transposed 16 x 16 in registers (as tspto_pack_bt does), so each
// column j is one lane and its k order is kept: the values are the packed path's bit for bit.
template <int M, bool FUSED>
static inline void tspto_gemv_bt(const float* __restrict a, int64_t lda, const float* __restrict bt, int64_t ldb,
    const float* c, int64_t ldc, float* o, int64_t ldo, int64_t nv, int64_t K) {
  int64_t j0 = 0;
#if defined(__AVX512F__)
  for (; j0 + 16 <= nv; j0 += 16) {
    __m512 acc[M];
    for (int r = 0; r < M; ++r) acc[r] = c ? _mm512_loadu_ps(c + r * ldc + j0) : _mm512_setzero_ps();
    const float* s = bt + j0 * ldb;
    for (int64_t k = 0; k < K; k += 16) {
      const int64_t kn = K - k < 16 ? K - k : 16;
      const __mmask16 mk = (__mmask16)(kn == 16 ? 0xFFFF : (1u << kn) - 1);
      __m512 r_[16];
      for (int i = 0; i < 16; ++i) r_[i] = _mm512_maskz_loadu_ps(mk, s + i * ldb + k);
      tspto_tr16(r_);
      for (int64_t q = 0; q < kn; ++q)
        for (int r = 0; r < M; ++r) {
          const __m512 av = _mm512_set1_ps(a[r * lda + k + q]);
          acc[r] = FUSED ? _mm512_fmadd_ps(av, r_[q], acc[r]) : _mm512_add_ps(acc[r], _mm512_mul_ps(av, r_[q]));
        }
    }
    for (int r = 0; r < M; ++r) _mm512_storeu_ps(o + r * ldo + j0, acc[r]);
  }
#endif
  for (; j0 < nv; ++j0)
    for (int r = 0; r < M; ++r) {
      float v = c ? c[r * ldc + j0] : 0.0f;
      for (int64_t k = 0; k < K; ++k) v = FUSED ? __builtin_fmaf(a[r * lda + k], bt[j0 * ldb + k], v) : v + a[r * lda + k] * bt[j0 * ldb + k];
      o[r * ldo + j0] = v;
    }
}

${DOT_KERNELS}
}  // namespace
`;

/** The name a program's source includes for each part, and the guard each defines. */
export const PRELUDE_BASE_HEADER = "tspto_prelude.h";
export const PRELUDE_SIMD_HEADER = "tspto_prelude_simd.h";

/** The base prelude's header text. */
export const PRELUDE_BASE = `#ifndef TSPTO_PRELUDE_H
#define TSPTO_PRELUDE_H
${BASE_TEXT}
#endif  // TSPTO_PRELUDE_H
`;

/**
 * The full prelude's header text: <immintrin.h> first (before the base's vector-width pragma,
 * so the intrinsics keep their own target options), then the base and the SIMD part.
 */
export const PRELUDE_SIMD = `#ifndef TSPTO_PRELUDE_SIMD_H
#define TSPTO_PRELUDE_SIMD_H
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#ifndef TSPTO_PRELUDE_H
#define TSPTO_PRELUDE_H
${BASE_TEXT}
#endif  // TSPTO_PRELUDE_H
${SIMD_TEXT}
#endif  // TSPTO_PRELUDE_SIMD_H
`;

/** The whole prelude as one text (the cuda target's host orchestration pastes it). */
export const CPP_PRELUDE = PRELUDE_SIMD;

/** Names the SIMD part defines that the base does not: a program calling one needs it. */
const SIMD_NAMES: ReadonlySet<string> = (() => {
  const names = (text: string) => text.replace(/\/\/[^\n]*/g, "").match(/\btspto_\w+/g) ?? []; // (not the comments' mentions)
  const inBase = new Set(names(BASE_TEXT));
  return new Set(names(SIMD_TEXT).filter((n) => !inBase.has(n)));
})();
/** Intrinsics and their types written straight into a program's code (e.g. the quantized loads). */
const INTRINSIC = /\b(_mm\w*|__m\d+\w*|_tile_\w+)\b/;

/** Which prelude header the code `body` needs: the base unless it calls into the SIMD part. */
export function preludeFor(body: string): { header: string; text: string } {
  const simd = INTRINSIC.test(body) || (body.match(/\btspto_\w+/g) ?? []).some((n) => SIMD_NAMES.has(n));
  return simd ? { header: PRELUDE_SIMD_HEADER, text: PRELUDE_SIMD } : { header: PRELUDE_BASE_HEADER, text: PRELUDE_BASE };
}

// The elementwise ops beyond arithmetic (fmod, rem, bitwise ops and shifts, sin/cos/tanh/
// sigmoid/erf, pow, lrelu, cmp, sel, expands) and a number as the first operand, on every
// dtype family each accepts, tile and tensor level (with partial edge tiles), on cpu and
// interp, against independent JavaScript formulas written here (BigInt for integers).
//
// Accuracy of the transcendental functions: the reference rounds Math.sin/cos/tanh/exp/pow
// (and an erf by Simpson integration here) once to the dtype; the cpu platform computes them
// with the prelude's vectorizable fp32 functions, within 1 ulp of the correctly rounded float32,
// and rounds that once to float16 / bfloat16 (within 1 ulp of those): the
// tolerances used below (docs/semantics.md has the table). pow by a constant 2 is exact; every
// other op is compared exactly.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, tensor, zeros, type DType, type HostTensor } from "tspto";
import { mulberry32 } from "../codegen/helpers.js";

const R = 4, C = 40; // C is not a multiple of 8 or 16: vector remainders are used
const PLATFORMS = ["cpu", "interp"] as const;
const cfg = (platform: string) => new RunConfig({ platform });

// ------------------------------------------------------------------ kernels
const INT_OPS = 14;
const intKernel = pl.jit(function intKernel(a: pl.Tensor, b: pl.Tensor, s: pl.Tensor, out: pl.Out<pl.Tensor>, mask: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, C]);
    const y = pl.load(b, [0, 0], [R, C]);
    const n = pl.load(s, [0, 0], [R, C]);
    pl.store(pl.bitAnd(x, y), [0, 0], out);
    pl.store(pl.bitOr(x, y), [R, 0], out);
    pl.store(pl.bitXor(x, 90), [2 * R, 0], out);
    pl.store(pl.bitNot(x), [3 * R, 0], out);
    pl.store(pl.shl(x, n), [4 * R, 0], out);
    pl.store(pl.shr(x, n), [5 * R, 0], out);
    pl.store(pl.shr(x, 3), [6 * R, 0], out);
    pl.store(pl.fmod(x, y), [7 * R, 0], out);
    pl.store(pl.rem(x, y), [8 * R, 0], out);
    pl.store(pl.rem(100, y), [9 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, y, "lt"), x, y), [10 * R, 0], out);
    pl.store(pl.sub(7, x), [11 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, 0, "ge"), 1, x), [12 * R, 0], out);
    pl.store(pl.expands(x, 3), [13 * R, 0], out);
    pl.store(pl.cmp(x, y, "ne"), [0, 0], mask);
  });
  return out;
});

const FLOAT_OPS = 16;
const floatKernel = pl.jit(function floatKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, mask: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, C]);
    const y = pl.load(b, [0, 0], [R, C]);
    pl.store(pl.sin(x), [0, 0], out);
    pl.store(pl.cos(x), [R, 0], out);
    pl.store(pl.tanh(x), [2 * R, 0], out);
    pl.store(pl.sigmoid(x), [3 * R, 0], out);
    pl.store(pl.erf(x), [4 * R, 0], out);
    pl.store(pl.pow(pl.abs(x), y), [5 * R, 0], out);
    pl.store(pl.pow(x, 2), [6 * R, 0], out);
    pl.store(pl.lrelu(x, 0.1), [7 * R, 0], out);
    pl.store(pl.fmod(x, y), [8 * R, 0], out);
    pl.store(pl.rem(x, y), [9 * R, 0], out);
    pl.store(pl.div(1.0, x), [10 * R, 0], out);
    pl.store(pl.maximum(0, x), [11 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, y, "gt"), x, 0.5), [12 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, 0, "le"), pl.mul(x, 2), y), [13 * R, 0], out);
    pl.store(pl.expands(x, 2.5), [14 * R, 0], out);
    pl.store(pl.sub(1.0, x), [15 * R, 0], out);
    pl.store(pl.cmp(x, y, "eq"), [0, 0], mask);
    pl.store(pl.cmp(x, y, "ne"), [R, 0], mask);
  });
  return out;
});

/** Tensor-level forms on a shape with partial edge tiles (1009 rows: prime). */
const TR = 1009, TC = 200;
const tensorKernel = pl.jit(function tensorKernel(a: pl.Tensor, b: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o1, pl.tanh(pl.sub(1.0, a)));
    pl.assign(o2, pl.sel(pl.cmp(a, b, "lt"), pl.rem(a, b), pl.pow(pl.abs(b), 0.5)));
    pl.assign(o3, pl.cmp(a, 0, "gt"));
  });
  return o1;
});
const tensorIntKernel = pl.jit(function tensorIntKernel(a: pl.Tensor, b: pl.Tensor, o: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o, pl.bitXor(pl.shl(a, 2), pl.shr(b, 1)));
  });
  return o;
});

// ------------------------------------------------------------------ independent reference
const RANGE: Record<string, [bigint, bigint]> = {
  int8: [-128n, 127n], int16: [-32768n, 32767n], int32: [-(2n ** 31n), 2n ** 31n - 1n], int64: [-(2n ** 63n), 2n ** 63n - 1n], uint8: [0n, 255n],
};
const WIDTH: Record<string, bigint> = { int8: 8n, int16: 16n, int32: 32n, int64: 64n, uint8: 8n };
const wrap = (d: DType, v: bigint) => Number(d === "uint8" ? BigInt.asUintN(8, v) : BigInt.asIntN(Number(WIDTH[d]), v));
const sat = (d: DType, v: bigint) => { const [lo, hi] = RANGE[d]; return Number(v < lo ? lo : v > hi ? hi : v); };
const tmod = (a: bigint, b: bigint) => (b === 0n ? 0n : a % b);            // C %: sign of a
const pmod = (a: bigint, b: bigint) => { const r = tmod(a, b); return r !== 0n && (r < 0n) !== (b < 0n) ? r + b : r; }; // sign of b

function intRef(op: number, d: DType, x: bigint, y: bigint, n: bigint): number {
  const w = WIDTH[d];
  const k = n < 0n ? 0n : n;
  switch (op) {
    case 0: return wrap(d, x & y);
    case 1: return wrap(d, x | y);
    case 2: return wrap(d, x ^ 90n);
    case 3: return wrap(d, ~x);
    case 4: return k >= w ? 0 : wrap(d, x << k);
    case 5: case 6: {
      const kk = op === 6 ? 3n : k;
      if (d === "uint8") return kk >= w ? 0 : Number(x >> kk);
      return Number(x >> (kk >= w ? w - 1n : kk));
    }
    case 7: return sat(d, tmod(x, y));
    case 8: return sat(d, pmod(x, y));
    case 9: return sat(d, pmod(100n, y));
    case 10: return Number(x < y ? x : y);
    case 11: return sat(d, 7n - x);
    case 12: return x >= 0n ? 1 : Number(x);
    case 13: return 3;
  }
  throw new Error(`op ${op}`);
}

/** erf by composite Simpson integration of 2/sqrt(pi) e^(-t^2) over [0, x] (4000 panels). */
function erfSimpson(x: number): number {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? NaN : Math.sign(x);
  const n = 4000, h = x / n;
  let s = 1 + Math.exp(-x * x);
  for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * Math.exp(-((i * h) ** 2));
  return (2 / Math.sqrt(Math.PI)) * (h / 3) * s;
}
const jsFmod = (a: number, b: number) => a % b;
const jsRem = (a: number, b: number) => { const r = a % b; return r !== 0 && (r < 0) !== (b < 0) ? r + b : r; };
/** Op i of the float kernel on (x, y), in float64 (rounded to the dtype by the caller). */
function floatRef(op: number, x: number, y: number, q: (v: number) => number): number {
  switch (op) {
    case 0: return Math.sin(x);
    case 1: return Math.cos(x);
    case 2: return Math.tanh(x);
    case 3: return 1 / (1 + Math.exp(-x));
    case 4: return erfSimpson(x);
    case 5: return Math.pow(Math.abs(x), y);
    case 6: return x ** 2;
    case 7: return x > 0 ? x : x * 0.1;
    case 8: return jsFmod(x, y);
    case 9: return jsRem(x, y);
    case 10: return 1 / x;
    case 11: return Number.isNaN(x) ? NaN : Math.max(0, x);
    case 12: return x > y ? x : 0.5;
    case 13: return x <= 0 ? q(x * 2) : y;
    case 14: return 2.5;
    case 15: return 1 - x;
  }
  throw new Error(`op ${op}`);
}
/** ulps allowed per op of the float kernel at float32 (float16 / bfloat16: 1 for each of them); absent: exact. */
const TRANSCENDENTAL = new Map([[0, 1], [1, 1], [2, 1], [3, 1], [4, 1], [5, 1]]);

// ------------------------------------------------------------------ data and comparison
function intInputs(d: DType, seed: number): { a: bigint[]; b: bigint[]; s: bigint[] } {
  const rnd = mulberry32(seed);
  const [lo, hi] = RANGE[d];
  const span = Number(hi - lo) + 1;
  const pick = () => {
    const r = rnd();
    if (r < 0.1) return 0n;
    if (r < 0.15) return d === "int64" ? -(2n ** 52n) : lo;
    if (r < 0.2) return d === "int64" ? 2n ** 52n : hi;
    if (r < 0.3) return BigInt(Math.floor(rnd() * 21) - (d === "uint8" ? 0 : 10)); // small values: ties and small divisors
    // int64: within +-2^52 between the extremes (the interp holds tile elements as doubles)
    return d === "int64" ? BigInt(Math.floor((rnd() - 0.5) * 2 ** 53)) : lo + BigInt(Math.floor(rnd() * span));
  };
  const n = R * C;
  const a = Array.from({ length: n }, pick), b = Array.from({ length: n }, pick);
  const s = Array.from({ length: n }, () => BigInt(Math.floor(rnd() * (Number(WIDTH[d]) + 6)) - 2));
  if (d !== "uint8" && d !== "int64") b[0] = -1n, a[0] = lo; // INT_MIN % -1
  return { a, b, s: d === "uint8" ? s.map((v) => (v < 0n ? 0n : v)) : s };
}
const hostInt = (vals: bigint[], d: DType, shape: number[]) =>
  d === "int64" ? tensor(BigInt64Array.from(vals) as unknown as ArrayLike<number>, { shape, dtype: d }) : tensor(vals.map(Number), { shape, dtype: d });
const intValues = (t: HostTensor): bigint[] => (t.dtype === "int64" ? Array.from(t.data as BigInt64Array) : t.toArray().map((v) => BigInt(v)));

function expectNear(label: string, got: readonly number[], want: readonly number[], ulp: (w: number) => number): void {
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) ? Number.isNaN(g) : g === w || Math.abs(g - w) <= ulp(w)) continue;
    expect.fail(`${label}: element ${i}: got ${g}, want ${w}`);
  }
}
const ulpOf = (d: DType) => (w: number) => {
  const bits = d === "float32" ? 23 : d === "float16" ? 10 : 7;
  if (!Number.isFinite(w)) return 0;
  const e = Math.max(Math.floor(Math.log2(Math.max(Math.abs(w), 2 ** -126))), d === "float16" ? -14 : -126);
  return 2 ** (e - bits);
};

// ------------------------------------------------------------------ tests
describe("integer elementwise ops (bitwise, shifts, fmod/rem, cmp/sel, a number first)", () => {
  for (const platform of PLATFORMS) {
    for (const d of ["int8", "int16", "int32", "int64", "uint8"] as DType[]) {
      it(`${d} on ${platform}`, () => {
        const { a, b, s } = intInputs(d, 100 + d.length);
        const out = zeros([INT_OPS * R, C], d), mask = zeros([R, C], "bool");
        intKernel(hostInt(a, d, [R, C]), hostInt(b, d, [R, C]), hostInt(s, d, [R, C]), out, mask, cfg(platform));
        const got = intValues(out);
        for (let op = 0; op < INT_OPS; op++) {
          for (let i = 0; i < R * C; i++) {
            const want = intRef(op, d, a[i], b[i], s[i]);
            if (Number(got[op * R * C + i]) !== want) expect.fail(`${d} op ${op} element ${i} (x=${a[i]}, y=${b[i]}, n=${s[i]}): got ${got[op * R * C + i]}, want ${want}`);
          }
        }
        expect(mask.toArray()).toEqual(a.map((x, i) => (x !== b[i] ? 1 : 0)));
      });
    }
  }
});

describe("float elementwise ops (transcendental, pow, lrelu, fmod/rem, cmp/sel, a number first)", () => {
  const specials = [0, -0, 1, -1, 0.5, -2.5, 3, NaN, Infinity, -Infinity, 1e-3, 7.25];
  for (const platform of PLATFORMS) {
    for (const d of ["float32", "float16", "bfloat16"] as DType[]) {
      it(`${d} on ${platform}`, () => {
        const rnd = mulberry32(7 + d.length);
        const n = R * C;
        const A = tensor(Array.from({ length: n }, (_, i) => (i < specials.length ? specials[i] : (rnd() - 0.5) * 8)), { shape: [R, C], dtype: d });
        const B = tensor(Array.from({ length: n }, (_, i) => (i === 3 ? -1 : i === 4 ? 0 : i % 7 === 0 ? A.toArray()[i] : (rnd() - 0.5) * 6)), { shape: [R, C], dtype: d });
        const out = zeros([FLOAT_OPS * R, C], d), mask = zeros([2 * R, C], "bool");
        floatKernel(A, B, out, mask, cfg(platform));
        const x = A.toArray(), y = B.toArray(), got = out.toArray();
        const q = (v: number) => tensor([v], { shape: [1], dtype: d }).toArray()[0]; // round to d
        for (let op = 0; op < FLOAT_OPS; op++) {
          const want = x.map((xv, i) => q(floatRef(op, xv, y[i], q)));
          const k = d === "float32" ? TRANSCENDENTAL.get(op) : TRANSCENDENTAL.has(op) ? 1 : undefined;
          expectNear(`${d} op ${op}`, got.slice(op * n, (op + 1) * n), want, k ? (w) => k * ulpOf(d)(w) : () => 0);
        }
        expect(mask.toArray()).toEqual([...x.map((v, i) => (v === y[i] ? 1 : 0)), ...x.map((v, i) => (v !== y[i] ? 1 : 0))]);
      });
    }
  }
});

describe("tensor-level forms with partial edge tiles", () => {
  for (const platform of PLATFORMS) {
    it(`float32 and int16 on ${platform}`, () => {
      const rnd = mulberry32(3);
      const n = TR * TC;
      const a = tensor(Array.from({ length: n }, () => (rnd() - 0.5) * 6), { shape: [TR, TC] });
      const b = tensor(Array.from({ length: n }, () => (rnd() - 0.5) * 6), { shape: [TR, TC] });
      const o1 = zeros([TR, TC]), o2 = zeros([TR, TC]), o3 = zeros([TR, TC], "bool");
      tensorKernel(a, b, o1, o2, o3, cfg(platform));
      const f = Math.fround, A = a.toArray(), B = b.toArray();
      expectNear("tanh(1 - a)", o1.toArray(), A.map((x) => f(Math.tanh(f(1 - x)))), ulpOf("float32"));
      expectNear("sel", o2.toArray(), A.map((x, i) => (x < B[i] ? f(jsRem(x, B[i])) : f(Math.pow(Math.abs(B[i]), 0.5)))), ulpOf("float32"));
      expect(o3.toArray()).toEqual(A.map((x) => (x > 0 ? 1 : 0)));
      const ia = Array.from({ length: n }, () => BigInt(Math.floor(rnd() * 65536) - 32768));
      const ib = Array.from({ length: n }, () => BigInt(Math.floor(rnd() * 65536) - 32768));
      const io = zeros([TR, TC], "int16");
      tensorIntKernel(hostInt(ia, "int16", [TR, TC]), hostInt(ib, "int16", [TR, TC]), io, cfg(platform));
      expect(io.toArray()).toEqual(ia.map((x, i) => wrap("int16", BigInt(wrap("int16", x << 2n)) ^ (ib[i] >> 1n))));
    });
  }
});

// pow with a scalar exponent: the cpu formula has fast paths for constant exponents (0, 1, 2,
// +-0.5, -1 exact; other integers up to 64 by binary powering in double, rounded once) and the
// general vectorized pow for a run-time one; each against Math.pow rounded once, on the special
// operands (signed zeros, infinities, NaN, negative bases) exactly and within 1 ulp elsewhere.
const POW_EXPONENTS = [0, -0, 1, 2, 3, -1, -2, 0.5, -0.5, 7, -7, 64, 65, -64, 0.3, 2.5, -1.5] as const;
const PR = 2, PC = 48;
const powConst = pl.jit(function powConst(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [PR, PC]);
    pl.store(pl.pow(x, 0), [0, 0], out);
    pl.store(pl.pow(x, -0), [PR, 0], out);
    pl.store(pl.pow(x, 1), [2 * PR, 0], out);
    pl.store(pl.pow(x, 2), [3 * PR, 0], out);
    pl.store(pl.pow(x, 3), [4 * PR, 0], out);
    pl.store(pl.pow(x, -1), [5 * PR, 0], out);
    pl.store(pl.pow(x, -2), [6 * PR, 0], out);
    pl.store(pl.pow(x, 0.5), [7 * PR, 0], out);
    pl.store(pl.pow(x, -0.5), [8 * PR, 0], out);
    pl.store(pl.pow(x, 7), [9 * PR, 0], out);
    pl.store(pl.pow(x, -7), [10 * PR, 0], out);
    pl.store(pl.pow(x, 64), [11 * PR, 0], out);
    pl.store(pl.pow(x, 65), [12 * PR, 0], out);
    pl.store(pl.pow(x, -64), [13 * PR, 0], out);
    pl.store(pl.pow(x, 0.3), [14 * PR, 0], out);
    pl.store(pl.pow(x, 2.5), [15 * PR, 0], out);
    pl.store(pl.pow(x, -1.5), [16 * PR, 0], out);
  });
  return out;
});
const powScalar = pl.jit(function powScalar(a: pl.Tensor, e: pl.Scalar<pl.FP32>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.pow(pl.load(a, [0, 0], [PR, PC]), e), [0, 0], out);
  });
  return out;
});

describe("pow with a scalar exponent (constant: fast paths; run-time: the general pow)", () => {
  const bases = [0, -0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, Infinity, -Infinity, NaN, 1e-30, -1e-30, 1e30, -1e30, 1.4e-45, 3.4e38];
  const exact = (w: number) => w === 0 || !Number.isFinite(w) || Math.abs(w) === 1;
  const check = (label: string, got: readonly number[], x: readonly number[], e: number, d: DType, q: (v: number) => number) => {
    x.forEach((xv, i) => {
      const w = q(Math.pow(xv, e)), g = got[i];
      const ok = exact(w) || [0, 1, 2, 0.5, -1].includes(e) ? Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w)) : Math.abs(g - w) <= ulpOf(d)(w);
      if (!ok) expect.fail(`${label}: pow(${Object.is(xv, -0) ? "-0" : xv}, ${e}) got ${Object.is(g, -0) ? "-0" : g}, want ${Object.is(w, -0) ? "-0" : w}`);
    });
  };
  for (const d of ["float32", "float16", "bfloat16"] as DType[]) {
    it(`${d}: constant exponents on cpu`, () => {
      const rnd = mulberry32(11 + d.length);
      const A = tensor(Array.from({ length: PR * PC }, (_, i) => (i < bases.length ? bases[i] : (rnd() - 0.5) * 6)), { shape: [PR, PC], dtype: d });
      const out = zeros([POW_EXPONENTS.length * PR, PC], d);
      powConst(A, out, cfg("cpu"));
      const x = A.toArray(), got = out.toArray(), n = PR * PC;
      const q = (v: number) => tensor([v], { shape: [1], dtype: d }).toArray()[0];
      POW_EXPONENTS.forEach((e, k) => check(`${d} const`, got.slice(k * n, (k + 1) * n), x, e, d, q));
    });
  }
  it("float32: a run-time exponent on cpu and interp", () => {
    const rnd = mulberry32(5);
    const A = tensor(Array.from({ length: PR * PC }, (_, i) => (i < bases.length ? bases[i] : (rnd() - 0.5) * 6)), { shape: [PR, PC] });
    for (const platform of PLATFORMS) {
      for (const e of [0, 2, -3, 0.5, 0.3, -1.5, Infinity, -Infinity, NaN]) {
        const out = zeros([PR, PC]);
        powScalar(A, e, out, cfg(platform));
        check(`${platform} e=${e}`, out.toArray(), A.toArray(), e, "float32", Math.fround);
      }
    }
    expect(powScalar.cacheSize).toBe(2); // one specialization per platform: the exponent is a run-time value
  });
});

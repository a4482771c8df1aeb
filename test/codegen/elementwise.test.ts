// Every binary op (tile rhs, float / int scalar rhs, constant rhs) and every unary op on every
// dtype, against independent JS formulas; fused expressions and in-place results.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BINARY, DTYPES, UNARY, isFloat, type DType, type Expr, type Var } from "../../src/ir/index.js";
import { compileArtifact, compileArtifactAsync } from "./helpers.js";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "../../src/runtime/dtype.js";
import { c, call, expectClose, expectExact, load, mulberry32, run, scalarVar, singleKernelProgram, store, tensorVar, type HArg, type Storage, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const N = 16 * 32;
const SHAPE = [16, 32];
// (seconds of g++ for a program of every op: off the event loop)
const build = async (p: Parameters<typeof compileArtifact>[0]) =>
  (await compileArtifactAsync(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("ew"), "a") })).outputDir;

// ------------------------------------------------------------------ independent reference
const INT_RANGE: Record<string, [number, number]> = { int8: [-128, 127], int16: [-32768, 32767], int32: [-2147483648, 2147483647], uint8: [0, 255] };
const I64_MAX = 2n ** 63n - 1n, I64_MIN = -(2n ** 63n);
const sat64 = (v: bigint) => (v > I64_MAX ? I64_MAX : v < I64_MIN ? I64_MIN : v);
const f16 = (x: number) => f16BitsToF32(f32ToF16Bits(x));
const bf16 = (x: number) => bf16BitsToF32(f32ToBf16Bits(x));

/** The value an op result of dtype d holds (computed value v, a double). */
function toD(d: DType, v: number): number {
  switch (d) {
    case "float32": return Math.fround(v);
    case "float16": return f16(v);
    case "bfloat16": return bf16(v);
    case "bool": return v !== 0 ? 1 : 0; // NaN -> 1
    default: {
      if (Number.isNaN(v)) return 0;
      const [lo, hi] = INT_RANGE[d];
      const t = Math.trunc(v);
      return t < lo ? lo : t > hi ? hi : t === 0 ? 0 : t;
    }
  }
}
const nanMax = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b));
const nanMin = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b));
const REF_BIN: Record<string, (a: number, b: number, intDiv: boolean) => number> = {
  add: (a, b) => a + b, sub: (a, b) => a - b, mul: (a, b) => a * b,
  div: (a, b, intDiv) => (intDiv ? (b === 0 ? 0 : Math.trunc(a / b)) : a / b),
  maximum: nanMax, minimum: nanMin,
};
const REF_BIN64: Record<string, (a: bigint, b: bigint) => bigint> = {
  add: (a, b) => sat64(a + b), sub: (a, b) => sat64(a - b), mul: (a, b) => sat64(a * b),
  div: (a, b) => (b === 0n ? 0n : sat64(a / b)), maximum: (a, b) => (a > b ? a : b), minimum: (a, b) => (a < b ? a : b),
};
const REF_UN: Record<string, (a: number) => number> = {
  exp: Math.exp, log: Math.log, sqrt: Math.sqrt, rsqrt: (a) => 1 / Math.fround(Math.sqrt(a)), recip: (a) => 1 / a,
  neg: (a) => -a, abs: Math.abs, relu: (a) => (a > 0 ? a : 0),
};
const REF_UN64: Record<string, (a: bigint) => bigint> = {
  neg: (a) => sat64(-a), abs: (a) => sat64(a < 0n ? -a : a), relu: (a) => (a > 0n ? a : 0n),
};
const TRANSCENDENTAL = new Set(["exp", "log"]);

// ------------------------------------------------------------------ inputs
const FLOAT_SPECIALS = [0, -0, 1, -1, 2.5, -2.5, NaN, Infinity, -Infinity, 1e-40, 65504, 70000, 1e-8, 3, -3, 0.1];
function inputs(d: DType, seed: number, forB: boolean): Storage {
  const r = mulberry32(seed);
  const vals = Array.from({ length: N }, (_, i) => {
    if (isFloat(d)) return i < FLOAT_SPECIALS.length ? FLOAT_SPECIALS[(i + (forB ? 5 : 0)) % FLOAT_SPECIALS.length] : (r() * 16 - 8);
    if (d === "bool") return r() < 0.5 ? 1 : 0;
    if (d === "int64") return 0;
    const [lo, hi] = INT_RANGE[d];
    const special = [lo, hi, 0, 1, -1, 2, -2, 0];
    if (i < special.length) return Math.min(hi, Math.max(lo, special[(i + (forB ? 3 : 0)) % special.length]));
    return i % 3 === 0 ? Math.floor(r() * 21) - 10 : Math.floor(r() * (hi - lo + 1)) + lo;
  });
  switch (d) {
    case "float32": return Float32Array.from(vals);
    case "float16": return Uint16Array.from(vals, f32ToF16Bits);
    case "bfloat16": return Uint16Array.from(vals, f32ToBf16Bits);
    case "int8": return Int8Array.from(vals);
    case "int16": return Int16Array.from(vals);
    case "int32": return Int32Array.from(vals);
    case "uint8": case "bool": return Uint8Array.from(vals);
    case "int64": {
      const big = [I64_MAX, I64_MIN, 0n, 1n, -1n, 2n ** 62n, -(2n ** 62n), 3037000500n];
      return BigInt64Array.from({ length: N }, (_, i) => i < big.length ? big[(i + (forB ? 2 : 0)) % big.length]
        : i % 2 ? BigInt(Math.floor(r() * 2001) - 1000) : BigInt(Math.floor(r() * 2 ** 53) - 2 ** 52) * 1024n);
    }
  }
}
/** Element values as numbers (16-bit floats decoded). */
function values(d: DType, s: Storage): number[] {
  if (d === "float16") return Array.from(s as Uint16Array, f16BitsToF32);
  if (d === "bfloat16") return Array.from(s as Uint16Array, bf16BitsToF32);
  if (d === "int64") return Array.from(s as BigInt64Array, Number);
  return Array.from(s as ArrayLike<number>);
}
function newOut(d: DType): Storage {
  const s = inputs(d, 0, false);
  return new (s.constructor as new (n: number) => Storage)(N);
}

// ------------------------------------------------------------------ the per-dtype program
type Variant = { key: string; rhs: (ta: Var, tb: Var, sf: Var, si: Var) => Expr; ref: (b: number, i: number) => number; kind: "tile" | "float" | "int" };
const SF = -1.75, SI = -3;
const VARIANTS: Variant[] = [
  { key: "tile", rhs: (_a, tb) => tb, ref: (b) => b, kind: "tile" },
  { key: "sf", rhs: (_a, _b, sf) => sf, ref: () => SF, kind: "float" },
  { key: "si", rhs: (_a, _b, _f, si) => si, ref: () => SI, kind: "int" },
  { key: "c01", rhs: () => c(0.1, "float32"), ref: () => 0.1, kind: "float" },
  { key: "c05", rhs: () => c(0.5, "float32"), ref: () => 0.5, kind: "float" },
  { key: "c7", rhs: () => c(7), ref: () => 7, kind: "int" },
];

function elementwiseProgram(d: DType) {
  const a = tensorVar("a", SHAPE, d), b = tensorVar("b", SHAPE, d), sf = scalarVar("sf", "float32"), si = scalarVar("si");
  const outs: { key: string; v: Var }[] = [];
  for (const op of Object.keys(BINARY)) for (const v of VARIANTS) outs.push({ key: `${op}:${v.key}`, v: tensorVar(`o_${op}_${v.key}`, SHAPE, d) });
  for (const [op, { floatOnly }] of Object.entries(UNARY)) if (!floatOnly || isFloat(d)) outs.push({ key: op, v: tensorVar(`o_${op}`, SHAPE, d) });
  const p = singleKernelProgram(`ew_${d}`, [[a, "in"], [b, "in"], [sf, "in"], [si, "in"], ...outs.map((o) => [o.v, "out"] as [Var, "out"])], (k, [ka, kb, ksf, ksi, ...kos]) => {
    const ta = k.let("ta", load(ka, [c(0), c(0)], SHAPE));
    const tb = k.let("tb", load(kb, [c(0), c(0)], SHAPE));
    outs.forEach((o, i) => {
      const [op, vk] = o.key.split(":");
      const args = vk ? [ta, VARIANTS.find((v) => v.key === vk)!.rhs(ta, tb, ksf, ksi)] : [ta];
      const r = k.let(`r_${i}`, call(`tile.${op}`, args));
      k.eval(store(r, [c(0), c(0)], kos[i]));
    });
  });
  return { p, outs };
}

describe("elementwise ops on every dtype", () => {
  for (const d of DTYPES) {
    it(`binary (tile, scalar and constant rhs) and unary ops on ${d}`, async () => {
      const { p, outs } = elementwiseProgram(d);
      const dir = await build(p);
      const A = inputs(d, 101, false), Bv = inputs(d, 202, true);
      const args: HArg[] = [{ tensor: A }, { tensor: Bv }, { float: SF }, { int: SI }, ...outs.map(() => ({ tensor: newOut(d) }))];
      const r = run(dir, args);
      expect(r.rc).toBe(0);
      expect(r.fails).toEqual([]);
      const av = values(d, A), bv = values(d, Bv);
      outs.forEach((o, k) => {
        const got = r.tensors[4 + k]!;
        const [op, vk] = o.key.split(":");
        const what = `${d} ${o.key}`;
        if (d === "int64") {
          const a64 = A as BigInt64Array, b64 = Bv as BigInt64Array;
          const exp = Array.from(a64, (x, i) => {
            if (!vk) return REF_UN64[op](x);
            const variant = VARIANTS.find((v) => v.key === vk)!;
            if (variant.kind === "float") {
              const v = REF_BIN[op](Number(x), variant.ref(0, i), true);
              if (Number.isNaN(v)) return 0n;
              return v >= 2 ** 63 ? I64_MAX : v <= -(2 ** 63) ? I64_MIN : BigInt(Math.trunc(v));
            }
            return REF_BIN64[op](x, variant.kind === "tile" ? b64[i] : BigInt(variant.ref(0, i)));
          });
          expectExact(got as BigInt64Array, exp, what);
          return;
        }
        const exp = av.map((x, i) => {
          if (!vk) return toD(d, REF_UN[op](x));
          const variant = VARIANTS.find((v) => v.key === vk)!;
          const rhs = variant.kind === "tile" ? bv[i] : variant.ref(bv[i], i);
          return toD(d, REF_BIN[op](x, rhs, !isFloat(d) && d !== "bool"));
        });
        const gotV = values(d, got);
        if (vk || !TRANSCENDENTAL.has(op)) {
          if (d === "float16" || d === "bfloat16") {
            // bit-exact 16-bit patterns
            const enc = d === "float16" ? f32ToF16Bits : f32ToBf16Bits;
            expectExact(got as Uint16Array, exp.map(enc), what);
          } else {
            expectExact(gotV, exp, what);
          }
        } else {
          const rtol = d === "float32" ? 2.5e-7 : d === "float16" ? 1e-3 : 8e-3;
          expectClose(gotV, exp, rtol, 0, what);
        }
      });
    });
  }
});

describe("fused and in-place elementwise code", () => {
  it("a nested expression is one loop and matches op-by-op rounding (float32 and float16)", async () => {
    for (const d of ["float32", "float16"] as const) {
      const a = tensorVar("a", SHAPE, d), b = tensorVar("b", SHAPE, d), out = tensorVar("out", SHAPE, d), out2 = tensorVar("out2", SHAPE, d);
      const p = singleKernelProgram(`fused_${d}`, [[a, "in"], [b, "in"], [out, "out"], [out2, "out"]], (k, [ka, kb, ko, ko2]) => {
        const ta = k.let("ta", load(ka, [c(0), c(0)], SHAPE));
        const tb = k.let("tb", load(kb, [c(0), c(0)], SHAPE));
        const r = k.let("r", call("tile.add", [call("tile.mul", [call("tile.exp", [ta]), tb]), c(1.5, "float32")]));
        k.eval(store(r, [c(0), c(0)], ko));
        // a store of an expression computes it in the store loop
        k.eval(store(call("tile.maximum", [call("tile.sub", [ta, tb]), call("tile.recip", [tb])]), [c(0), c(0)], ko2));
      });
      const dir = await build(p);
      const src = Array.from({ length: N }, (_, i) => Math.sin(i) * 3);
      const src2 = Array.from({ length: N }, (_, i) => Math.cos(i * 0.7) * 2 + 0.01);
      const enc = (xs: number[]) => (d === "float32" ? Float32Array.from(xs) : Uint16Array.from(xs, f32ToF16Bits));
      const A = enc(src), Bv = enc(src2);
      const res = run(dir, [{ tensor: A }, { tensor: Bv }, { tensor: enc(src.map(() => 0)) }, { tensor: enc(src.map(() => 0)) }]);
      const av = values(d, A), bv = values(d, Bv);
      const exp1 = av.map((x, i) => toD(d, toD(d, toD(d, Math.exp(x)) * bv[i]) + 1.5));
      const exp2 = av.map((x, i) => toD(d, nanMax(toD(d, x - bv[i]), toD(d, 1 / bv[i]))));
      expectClose(values(d, res.tensors[2]!), exp1, d === "float32" ? 1e-6 : 2e-3, 1e-6, `fused ${d}`);
      expectExact(values(d, res.tensors[3]!), exp2, `fused store ${d}`);
    }
  });

  it("results written over an operand: same width in place, wider through a temporary", async () => {
    const a = tensorVar("a", SHAPE, "int8"), b = tensorVar("b", SHAPE, "float32");
    const o1 = tensorVar("o1", SHAPE, "float32"), o2 = tensorVar("o2", SHAPE, "int8"), o3 = tensorVar("o3", SHAPE, "float32");
    const p = singleKernelProgram("inplace", [[a, "in"], [b, "in"], [o1, "out"], [o2, "out"], [o3, "out"]], (k, [ka, kb, k1, k2, k3]) => {
      const ti = k.let("ti", load(ka, [c(0), c(0)], SHAPE));
      const tf = k.let("tf", load(kb, [c(0), c(0)], SHAPE));
      const tiAddr = (ti.type as { addr: number }).addr, tfAddr = (tf.type as { addr: number }).addr;
      // narrowing in place: f32 -> int8 over tf, then int8 -> f32 (wider) over ti
      const n = k.let("n", call("tile.cast", [call("tile.mul", [tf, c(3)])], { dtype: "int8", mode: "rint" }), tfAddr);
      k.eval(store(n, [c(0), c(0)], k2));
      const w = k.let("w", call("tile.add", [call("tile.cast", [ti], { dtype: "float32" }), call("tile.cast", [n], { dtype: "float32" })]), tiAddr);
      k.eval(store(w, [c(0), c(0)], k1));
      // same width in place
      const s = k.let("s", call("tile.mul", [w, w]), tiAddr);
      k.eval(store(s, [c(0), c(0)], k3));
    });
    const dir = await build(p);
    const r0 = mulberry32(7);
    const A = Int8Array.from({ length: N }, () => Math.floor(r0() * 256) - 128);
    const Bv = Float32Array.from({ length: N }, () => r0() * 100 - 50);
    const res = run(dir, [{ tensor: A }, { tensor: Bv }, { tensor: new Float32Array(N) }, { tensor: new Int8Array(N) }, { tensor: new Float32Array(N) }]);
    const rint = (x: number) => { const f = Math.floor(x), d = x - f; return d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1; };
    const nExp = Array.from(Bv, (x) => Math.max(-128, Math.min(127, rint(Math.fround(x * 3)))));
    expectExact(res.tensors[3] as Int8Array, nExp, "narrow in place");
    const wExp = Array.from(A, (x, i) => Math.fround(x + nExp[i]));
    expectExact(res.tensors[2] as Float32Array, wExp, "widen over an operand");
    expectExact(res.tensors[4] as Float32Array, wExp.map((x) => Math.fround(x * x)), "same width in place");
  });
});

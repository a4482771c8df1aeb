// cast between every pair of dtypes with every rounding mode; float16 / bfloat16 conversions
// bit-exact with src/runtime/dtype.ts over exhaustive and boundary inputs.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DTYPES, INDEX, isFloat, mkFor, mkVar, type DType, type Var } from "../../src/ir/index.js";
import { compileArtifact } from "./helpers.js";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "../../src/runtime/dtype.js";
import { B, c, call, expectExact, load, mulberry32, run, singleKernelProgram, store, tensorVar, type Storage, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const build = (p: Parameters<typeof compileArtifact>[0]) =>
  compileArtifact(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("cast"), "a") }).outputDir;
const MODES = ["round", "rint", "floor", "ceil", "trunc"] as const;
type Mode = (typeof MODES)[number];
const ROWS = 4, COLS = 128, N = ROWS * COLS;

// ------------------------------------------------------------------ independent reference
const RANGE: Record<string, [number, number]> = { int8: [-128, 127], int16: [-32768, 32767], int32: [-2147483648, 2147483647], uint8: [0, 255] };
const I64_MAX = 2n ** 63n - 1n, I64_MIN = -(2n ** 63n);
function applyMode(x: number, m: Mode): number {
  switch (m) {
    case "floor": return Math.floor(x);
    case "ceil": return Math.ceil(x);
    case "trunc": return Math.trunc(x);
    case "round": return Math.sign(x) * Math.floor(Math.abs(x) + 0.5); // inputs are float32 values: + 0.5 is exact
    case "rint": {
      const f = Math.floor(x);
      if (x - f === 0.5) return f % 2 === 0 ? f : f + 1;
      return Math.round(x);
    }
  }
}
/**
 * x rounded to a binary float (`mant` fraction bits, minimum normal exponent `emin`, largest
 * finite `max`) in a cast rounding mode: the two neighbours of x in the format, picked by the
 * mode; past `max` Infinity, or `max` where the mode rounds toward zero for x's sign.
 */
function roundFloatMode(x: number, mant: number, emin: number, max: number, mode: Mode): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x), s = Math.sign(x);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (Math.max(e, emin) - mant);
  const lo = Math.floor(a / ulp) * ulp, hi = lo + ulp;
  let r: number;
  if (lo === a) r = a;
  else {
    switch (mode) {
      case "trunc": r = lo; break;
      case "floor": r = s > 0 ? lo : hi; break;
      case "ceil": r = s > 0 ? hi : lo; break;
      case "round": r = a - lo >= hi - a ? hi : lo; break;
      case "rint": r = a - lo > hi - a ? hi : a - lo < hi - a ? lo : (lo / ulp) % 2 === 0 ? lo : hi; break;
    }
  }
  if (r > max) r = mode === "trunc" || (mode === "floor" && s > 0) || (mode === "ceil" && s < 0) ? max : Infinity;
  return s * r;
}
/** cast's value in a float dtype (SEMANTICS.md: the mode rounds float targets too). */
function floatRef(x: number, to: DType, mode: Mode): number {
  if (Number.isNaN(x)) return NaN;
  if (to === "float32") return roundFloatMode(x, 23, -126, 3.4028234663852886e38, mode);
  if (to === "float16") return roundFloatMode(x, 10, -14, 65504, mode);
  return roundFloatMode(x, 7, -126, 3.3895313892515355e38, mode);
}
/** The storage element of a float dtype's value. */
const floatBits = (v: number, to: DType): number => (to === "float32" ? v : to === "float16" ? f32ToF16Bits(v) : f32ToBf16Bits(v));
/** Expected storage element of cast(x, to, mode); x is the source element value (bigint for int64). */
function castRef(x: number | bigint, to: DType, mode: Mode): number | bigint {
  if (typeof x === "bigint") {
    // through a double, as the cpu and the reference convert an int64 (exact within ±2^53)
    if (isFloat(to)) return floatBits(floatRef(Number(x), to, mode), to);
    if (to === "bool") return x !== 0n ? 1 : 0;
    if (to === "int64") return x;
    const [lo, hi] = RANGE[to];
    return x < BigInt(lo) ? lo : x > BigInt(hi) ? hi : Number(x);
  }
  if (isFloat(to)) return floatBits(floatRef(x, to, mode), to);
  if (to === "bool") return x !== 0 ? 1 : 0;
  if (Number.isNaN(x)) return to === "int64" ? 0n : 0;
  const r = applyMode(x, mode);
  if (to === "int64") return r >= 2 ** 63 ? I64_MAX : r <= -(2 ** 63) ? I64_MIN : BigInt(r);
  const [lo, hi] = RANGE[to];
  const v = r < lo ? lo : r > hi ? hi : r;
  return v === 0 ? 0 : v;
}

// ------------------------------------------------------------------ inputs
const FLOAT_EDGES = [
  0, -0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 0.49999997, 127.4, 127.5, 127.6, 128, -128.5, -129, 255.5, 256, -0.75,
  32767.5, -32768.5, 65504, 65519, 65520, 70000, 2147483520, 2147483648, -2147483648, -2147483904, 9.2e18, 9223372036854775807,
  -9223372036854775808, 1e30, -1e30, NaN, Infinity, -Infinity, 1e-30, -1e-30, 6e-8, 3e-5, 1e-40,
];
function sourceValues(d: DType, seed: number): { storage: Storage; vals: (number | bigint)[] } {
  const r = mulberry32(seed);
  if (isFloat(d)) {
    const xs = Array.from({ length: N }, (_, i) => {
      if (i < FLOAT_EDGES.length) return FLOAT_EDGES[i];
      const k = i % 4;
      return k === 0 ? Math.floor(r() * 600 - 300) + 0.5 : k === 1 ? r() * 600 - 300 : k === 2 ? (r() - 0.5) * 2e10 : (r() - 0.5) * 8;
    });
    if (d === "float32") { const s = Float32Array.from(xs); return { storage: s, vals: Array.from(s) }; }
    const enc = d === "float16" ? f32ToF16Bits : f32ToBf16Bits, dec = d === "float16" ? f16BitsToF32 : bf16BitsToF32;
    const s = Uint16Array.from(xs, enc);
    return { storage: s, vals: Array.from(s, dec) };
  }
  if (d === "int64") {
    // values just off a bfloat16 / float16 tie that a float32 intermediate would round onto the tie
    const ties = Array.from({ length: 39 }, (_, j) => BigInt(j + 24)).flatMap((k) => [
      2n ** k + 2n ** (k - 8n) + 1n, -(2n ** k + 3n * 2n ** (k - 8n) - 1n), 2n ** k + 2n ** (k - 11n) + 1n]);
    const edges = [I64_MAX, I64_MIN, 0n, 1n, -1n, 2n ** 53n + 1n, 2n ** 62n + 12345n, -(2n ** 40n) - 1n, ...ties];
    const s = BigInt64Array.from({ length: N }, (_, i) => i < edges.length ? edges[i]
      : ((BigInt(Math.floor(r() * 2 ** 31)) << 32n) | BigInt(Math.floor(r() * 2 ** 32))) * (r() < 0.5 ? -1n : 1n) >> BigInt(Math.floor(r() * 40)));
    return { storage: s, vals: Array.from(s) };
  }
  if (d === "bool") { const s = Uint8Array.from({ length: N }, () => (r() < 0.5 ? 1 : 0)); return { storage: s, vals: Array.from(s) }; }
  const [lo, hi] = RANGE[d];
  const ties = d === "int32" ? [24, 25, 26, 27, 28, 29, 30].flatMap((k) => [2 ** k + 2 ** (k - 8) + 1, -(2 ** k + 3 * 2 ** (k - 8) - 1), 2 ** k + 2 ** (k - 11) + 1]) : [];
  const edges = [lo, hi, 0, 1, ...ties];
  const xs = Array.from({ length: N }, (_, i) => (i < edges.length ? edges[i] : Math.floor(r() * (hi - lo + 1)) + lo));
  const s = d === "int8" ? Int8Array.from(xs) : d === "int16" ? Int16Array.from(xs) : d === "int32" ? Int32Array.from(xs) : Uint8Array.from(xs);
  return { storage: s, vals: Array.from(s) };
}
function zeros(d: DType, n: number): Storage {
  switch (d) {
    case "float32": return new Float32Array(n);
    case "float16": case "bfloat16": return new Uint16Array(n);
    case "int8": return new Int8Array(n);
    case "int16": return new Int16Array(n);
    case "int32": return new Int32Array(n);
    case "int64": return new BigInt64Array(n);
    default: return new Uint8Array(n);
  }
}

describe("cast", () => {
  for (const from of DTYPES) {
    it(`from ${from} to every dtype with every rounding mode`, () => {
      const cases: { to: DType; mode: Mode }[] = [];
      for (const to of DTYPES) {
        // every mode where it may matter (a narrowing: to an integer, or to a float format); one
        // mode elsewhere (the same dtype, to bool), which must not change the value
        const modes: readonly Mode[] = to !== from && to !== "bool" ? MODES : [to === from ? "floor" : "ceil"];
        for (const mode of modes) cases.push({ to, mode });
      }
      const a = tensorVar("a", [ROWS, COLS], from);
      const outs = cases.map((k) => tensorVar(`o_${k.to}_${k.mode}`, [ROWS, COLS], k.to));
      const p = singleKernelProgram(`cast_${from}`, [[a, "in"], ...outs.map((o) => [o, "out"] as [Var, "out"])], (b, [ka, ...kos]) => {
        const t = b.let("t", load(ka, [c(0), c(0)], [ROWS, COLS]));
        cases.forEach((k, i) => {
          const r = b.let(`r${i}`, call("tile.cast", [t], { dtype: k.to, mode: k.mode }));
          b.eval(store(r, [c(0), c(0)], kos[i]));
        });
      });
      const dir = build(p);
      const src = sourceValues(from, 31 + DTYPES.indexOf(from));
      const res = run(dir, [{ tensor: src.storage }, ...cases.map((k) => ({ tensor: zeros(k.to, N) }))]);
      expect(res.rc).toBe(0);
      cases.forEach((k, i) => {
        const got = res.tensors[1 + i]!;
        const exp = src.vals.map((x) => castRef(x, k.to, k.mode));
        expectExact(got as ArrayLike<number | bigint>, exp, `cast ${from} -> ${k.to} (${k.mode})`);
      });
    });
  }
});

// ------------------------------------------------------------------ conversion sweeps
const CH = 4096;
/** out[rows, CH] = cast(a[rows, CH], dtype, mode) chunk by chunk, in a loop with dynamic offsets (mode absent: the default). */
function sweepProgram(name: string, from: DType, tos: DType[], rows: number, modes: readonly (Mode | undefined)[] = [undefined]) {
  const a = tensorVar("a", [rows, CH], from);
  const cases = tos.flatMap((d) => modes.map((m) => ({ d, m })));
  const outs = cases.map(({ d, m }) => tensorVar(`o_${d}_${m ?? "default"}`, [rows, CH], d));
  return singleKernelProgram(name, [[a, "in"], ...outs.map((o) => [o, "out"] as [Var, "out"])], (b, [ka, ...kos]) => {
    const i = mkVar("i", INDEX);
    const body = new B(b.plan);
    const t = body.let("t", load(ka, [i, c(0)], [1, CH]));
    cases.forEach(({ d, m }, k) => body.eval(store(body.let(`r${k}`, call("tile.cast", [t], m ? { dtype: d, mode: m } : { dtype: d })), [i, c(0)], kos[k])));
    b.push(mkFor({ loopVar: i, start: c(0), stop: c(rows), step: c(1), iterArgs: [], inits: [], body: body.stmts, results: [] }));
  });
}

describe("float16 / bfloat16 conversions are bit-exact with src/runtime/dtype.ts", () => {
  for (const d of ["float16", "bfloat16"] as const) it(`float32 -> ${d} in every mode: every pattern's neighbours, midpoints (ties) and random bits`, () => {
    const xs: number[] = [];
    const f = new Float32Array(1), u = new Uint32Array(f.buffer);
    const near = (v: number) => {
      f[0] = v;
      const b = u[0];
      xs.push(v);
      u[0] = b + 1; xs.push(f[0]);
      u[0] = b - 1; xs.push(f[0]);
    };
    for (const [dec, bits] of [[f16BitsToF32, 16], [bf16BitsToF32, 16]] as const) {
      for (let h = 0; h < 2 ** bits; h++) {
        const v = dec(h), w = dec(h + 1);
        if (!Number.isFinite(v)) continue;
        near(v);
        if (Number.isFinite(w) && (h & 0x7fff) !== 0x7fff && (h & 0x8000) === ((h + 1) & 0x8000)) near(Math.fround((v + w) / 2));
      }
    }
    const r = mulberry32(99);
    for (let k = 0; k < 100_000; k++) { u[0] = Math.floor(r() * 2 ** 32); xs.push(f[0]); }
    xs.push(65504, 65519.996, 65520, 65536, 3.4028234663852886e38, -3.4028234663852886e38, 5.960464477539063e-8, 2.98023223876953125e-8, 2.980232594040899e-8, 1e-45);
    const rows = Math.ceil(xs.length / CH);
    const A = new Float32Array(rows * CH);
    A.set(xs);
    const modes = [undefined, ...MODES] as const;
    const dir = build(sweepProgram(`sweep_f32_${d}`, "float32", [d], rows, modes));
    const res = run(dir, [{ tensor: A }, ...modes.map(() => ({ tensor: new Uint16Array(rows * CH) }))]);
    expect(res.rc).toBe(0);
    modes.forEach((m, mi) => {
      const got = res.tensors[1 + mi] as Uint16Array;
      // rint: the plain nearest-even conversion (src/runtime/dtype.ts); the default mode is "round"
      const want = m === "rint" ? Array.from(A, d === "float16" ? f32ToF16Bits : f32ToBf16Bits) : Array.from(A, (x) => floatBits(floatRef(x, d, m ?? "round"), d));
      expectExact(got, want, `f32 -> ${d} bits (${m ?? "default mode"})`);
    });
  }, 120_000);

  for (const [d, dec] of [["float16", f16BitsToF32], ["bfloat16", bf16BitsToF32]] as const) {
    it(`${d} -> float32 for all 65536 patterns`, () => {
      const A = Uint16Array.from({ length: 65536 }, (_, i) => i);
      const dir = build(sweepProgram(`sweep_${d}`, d, ["float32"], 16));
      const res = run(dir, [{ tensor: A }, { tensor: new Float32Array(65536) }]);
      expectExact(res.tensors[1] as Float32Array, Array.from(A, dec), `${d} -> f32`);
      const neg0 = (res.tensors[1] as Float32Array)[0x8000];
      expect(Object.is(neg0, -0)).toBe(true);
    }, 60_000);
  }
});

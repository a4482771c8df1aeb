// Differential fuzzer: seeded random kernels, written as kernel source (a .ts module with one
// pl.jit entry holding many cases, one or more pl.at scopes each, so one C++ compile covers a
// batch), run on every target (cpu, interp) and compared with an independent reference written
// here (not the interpreter: its own arithmetic, saturation, bit operations, casts in every
// rounding mode, 16-bit float rounding, reductions and matmul sums).
//
// Case kinds (each lists the registry ops it generates; coverage.ts checks that every op of
// the registry has a generator): tensor-level elementwise chains over every dtype (arithmetic,
// remainders, bitwise ops and shifts, transcendental functions, pow, compare/select, casts in
// every mode, constants), half with a dynamic first dimension; tile-level chains on partial
// tiles (static or run-time validShape, fillpad, read, move, atomic-add stores); reductions
// (sum/max/min/prod, arg-max/min) with partial tiles; row/column broadcasts and prelu; shape
// ops (transpose, slice, concat, assemble, reshape, broadcastTo) on tiles and tensors; matmul
// (transposed operands, outDtype, matmulAcc, matmulBias, batchMatmul, elementwise epilogues);
// row/column reductions inside tensor expressions; scalar index arithmetic and control flow
// (Math.*, comparisons, &&/||, pl.dim, pl.read); loops with carried tiles; two-stage programs
// through an intermediate createTensor; row loops over a dynamic dimension with run-time
// validShape; gather (tile and tensor forms, int32/int64 indices), iota masks, slices of
// run-time extent (with a column reduction down the run-time height); weight-only quantized
// matmul (int8 / int4 weights, per-group scales, tile and tensor forms).
//
// runBatch can also build the cpu program at -O0 ($TSPTO_CXX_OPT, internal) and compare it
// bit for bit with the production build: a difference is the optimizer miscompiling.
//
// Used by test/fuzz/differential.test.ts (a bounded run in CI) and scripts/fuzz.ts (long runs).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ChipWorker, HostTensor, RunConfig, ir, type DType } from "../../src/index.js";

const SRC_INDEX = fileURLToPath(new URL("../../src/index.ts", import.meta.url));

// ------------------------------------------------------------------ random
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

// ------------------------------------------------------------------ independent numerics
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
const fround = Math.fround;

function f16Bits(x: number): number {
  F32[0] = x;
  const b = U32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}
function f16Value(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
function bf16Bits(x: number): number {
  F32[0] = x;
  const b = U32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return ((b >>> 16) | 0x40) & 0xffff;
  return Math.floor((b + 0x7fff + ((b >>> 16) & 1)) / 65536) & 0xffff;
}
function bf16Value(h: number): number {
  U32[0] = (h << 16) >>> 0;
  return F32[0];
}

const INT_RANGE: Record<string, [number, number]> = {
  int8: [-128, 127], int16: [-32768, 32767], int32: [-2147483648, 2147483647],
  int64: [-9223372036854775808, 9223372036854775807], uint8: [0, 255],
};
const isFloat = (d: DType) => d === "float32" || d === "float16" || d === "bfloat16";
const clamp = (v: number, d: DType) => {
  const [lo, hi] = INT_RANGE[d];
  return v < lo ? lo : v > hi ? hi : v === 0 ? 0 : v;
};
type Mode = "round" | "rint" | "floor" | "ceil" | "trunc";
function roundMode(x: number, m: Mode): number {
  switch (m) {
    case "floor": return Math.floor(x);
    case "ceil": return Math.ceil(x);
    case "trunc": return Math.trunc(x);
    case "round": { const a = Math.floor(Math.abs(x) + 0.5); return x < 0 ? -a : a; }
    case "rint": {
      const f = Math.floor(x), d = x - f;
      return d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1;
    }
  }
}
/** A value stored in dtype d (as the number the host reads back). */
function store(v: number, d: DType, mode: Mode = "trunc"): number {
  switch (d) {
    case "float32": return fround(v);
    case "float16": return f16Value(f16Bits(v));
    case "bfloat16": return bf16Value(bf16Bits(v));
    case "bool": return v !== 0 ? 1 : 0;
    default: return Number.isNaN(v) ? 0 : clamp(roundMode(v, mode), d);
  }
}

/**
 * x rounded to a binary float (`mant` fraction bits, minimum normal exponent `emin`, largest
 * finite `max`) in a cast rounding mode: the neighbour of x the mode picks; past `max`
 * Infinity, or `max` where the mode rounds toward zero for x's sign.
 */
function roundFloatMode(x: number, mant: number, emin: number, max: number, m: Mode): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (Math.max(e, emin) - mant);
  const lo = Math.floor(a / ulp) * ulp, hi = lo + ulp;
  let v = lo === a ? a
    : m === "trunc" ? lo : m === "floor" ? (x > 0 ? lo : hi) : m === "ceil" ? (x > 0 ? hi : lo)
    : m === "round" ? (a - lo >= hi - a ? hi : lo)
    : a - lo > hi - a ? hi : a - lo < hi - a ? lo : (lo / ulp) % 2 === 0 ? lo : hi;
  if (v > max) v = m === "trunc" || (m === "floor" && x > 0) || (m === "ceil" && x < 0) ? max : Infinity;
  return x < 0 ? -v : v;
}
/** cast(v, d, mode) (SEMANTICS.md: the mode rounds every narrowing, to a float format too). */
function castTo(v: number, d: DType, mode: Mode): number {
  if (Number.isNaN(v) && isFloat(d)) return NaN;
  switch (d) {
    case "float32": return roundFloatMode(v, 23, -126, 3.4028234663852886e38, mode);
    case "float16": return roundFloatMode(v, 10, -14, 65504, mode);
    case "bfloat16": return roundFloatMode(v, 7, -126, 3.3895313892515355e38, mode);
    default: return store(v, d, mode);
  }
}

// ------------------------------------------------------------------ host data
function hostTensor(values: readonly number[], shape: readonly number[], d: DType): HostTensor {
  const n = values.length;
  let data;
  switch (d) {
    case "float32": data = Float32Array.from(values); break;
    case "float16": data = Uint16Array.from(values, f16Bits); break;
    case "bfloat16": data = Uint16Array.from(values, bf16Bits); break;
    case "int8": data = Int8Array.from(values); break;
    case "int16": data = Int16Array.from(values); break;
    case "int32": data = Int32Array.from(values); break;
    case "int64": data = BigInt64Array.from(values, (v) => BigInt(v)); break;
    case "uint8": case "bool": data = Uint8Array.from(values); break;
  }
  if (data.length !== n) throw new Error("internal");
  return new HostTensor(data, shape, d);
}
function readBack(t: HostTensor): number[] {
  const d = t.dtype;
  if (d === "float16") return Array.from(t.data as Uint16Array, f16Value);
  if (d === "bfloat16") return Array.from(t.data as Uint16Array, bf16Value);
  if (d === "int64") return Array.from(t.data as BigInt64Array, Number);
  return Array.from(t.data as ArrayLike<number>);
}
function randomValues(r: Rand, n: number, d: DType): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    switch (d) {
      case "float32": case "float16": case "bfloat16": out[i] = store(r() < 0.1 ? int(r, -4, 4) : (r() * 8 - 4), d); break;
      case "int8": case "int16": case "uint8": { const [lo, hi] = INT_RANGE[d]; out[i] = int(r, lo, hi); break; }
      case "int32": out[i] = r() < 0.3 ? int(r, -2147483648, 2147483647) : int(r, -50000, 50000); break;
      case "int64": out[i] = int(r, -1000, 1000); break;
      case "bool": out[i] = r() < 0.5 ? 1 : 0; break;
    }
    if (r() < 0.03) out[i] = 0;
  }
  return out;
}

// ------------------------------------------------------------------ more independent numerics
const BITS: Partial<Record<DType, number>> = { int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8 };
/** Two's-complement wrap of an integer to dtype d. */
function wrap(v: bigint, d: DType): number {
  const bits = BITS[d]!;
  return Number(d === "uint8" ? BigInt.asUintN(bits, v) : BigInt.asIntN(bits, v));
}
const B = (x: number) => BigInt(Math.trunc(x));
function shlRef(a: number, n: number, d: DType): number {
  const k = n < 0 ? 0 : n;
  return k >= BITS[d]! ? 0 : wrap(B(a) << BigInt(k), d);
}
function shrRef(a: number, n: number, d: DType): number {
  const k = n < 0 ? 0 : n, bits = BITS[d]!;
  if (d === "uint8") return k >= bits ? 0 : a >>> k;
  if (k >= bits) return a < 0 ? -1 : 0;
  return Number(B(a) >> BigInt(k));
}
/** Remainder with the sign of the dividend (C fmod, C %; integer b = 0 gives 0). */
function fmodRef(a: number, b: number, d: DType): number {
  if (isFloat(d)) return a % b;
  return b === 0 ? 0 : Number(B(a) % B(b));
}
/** Remainder with the sign of the divisor (Python %; integer b = 0 gives 0). */
function remRef(a: number, b: number, d: DType): number {
  const r = fmodRef(a, b, d);
  return r !== 0 && !Number.isNaN(r) && (r < 0) !== (b < 0) ? r + b : r;
}
/**
 * erf(x): the power series for |x| <= 2.5, and 1 - erfc(x) with erfc's continued fraction
 * (Lentz) beyond; both far below fp32's resolution.
 */
function erfRef(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  if (a <= 2.5) {
    let term = x, sum = x;
    for (let n = 1; n < 300; n++) { term *= -(x * x) / n; const t = term / (2 * n + 1); sum += t; if (Math.abs(t) < 1e-18) break; }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  if (a > 6) return Math.sign(x);
  // erfc(a) = exp(-a^2)/sqrt(pi) * 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...))))
  let f = a, C = a, D = 0;
  for (let n = 1; n < 300; n++) {
    const an = n / 2;
    D = a + an * D; D = 1 / D;
    C = a + an / C;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-a * a) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}
type CmpMode = "eq" | "ne" | "lt" | "le" | "gt" | "ge";
function cmpRef(a: number, b: number, m: CmpMode): number {
  switch (m) {
    case "eq": return a === b ? 1 : 0;
    case "ne": return a !== b ? 1 : 0;
    case "lt": return a < b ? 1 : 0;
    case "le": return a <= b ? 1 : 0;
    case "gt": return a > b ? 1 : 0;
    case "ge": return a >= b ? 1 : 0;
  }
}
const nanMax = (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.max(x, y));
const nanMin = (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.min(x, y));
/** fillpad's pad value of dtype d. */
function padOf(pad: "zero" | "min" | "max", d: DType): number {
  if (pad === "zero") return 0;
  const f = d === "float16" ? 65504 : d === "bfloat16" ? 3.3895313892515355e38 : 3.4028234663852886e38;
  if (isFloat(d)) return pad === "min" ? -f : f;
  return pad === "min" ? INT_RANGE[d][0] : INT_RANGE[d][1];
}

// ------------------------------------------------------------------ cases
interface Input { name: string; shape: number[]; dtype: DType; values: number[] }
interface Case {
  id: number;
  kind: string;
  /** The pl.at bodies (kernel source), one scope each, after the orchestration statements `pre`. */
  scopes: string[];
  pre?: string;
  inputs: Input[];
  /** Dynamic int64 scalar parameters (run-time validShape extents). */
  scalars?: { name: string; value: number }[];
  out: { name: string; shape: number[]; dtype: DType; init: number[]; inout?: boolean };
  expected: number[];
  /** Float tolerance class: exact for integers. */
  tol: { rtol: number; atol: number } | null;
  /** A description for failure reports. */
  what: string;
  /** The tensors' first dimension is a dynamic dimension (annotated with a name, R<id>). */
  dynRows?: boolean;
  /** The registry ops the case's source uses (their pl names; scalar ops by registry name). */
  ops: string[];
}

const DT: Record<DType, string> = {
  float32: "pl.FP32", float16: "pl.FP16", bfloat16: "pl.BF16", int8: "pl.INT8", int16: "pl.INT16",
  int32: "pl.INT32", int64: "pl.INT64", uint8: "pl.UINT8", bool: "pl.BOOL",
};
const ELEM_DTYPES: DType[] = ["float32", "float32", "float16", "bfloat16", "int8", "int16", "int32", "int32", "int64", "uint8"];
const MODES = ["round", "rint", "floor", "ceil", "trunc"] as const;
const CMP: CmpMode[] = ["eq", "ne", "lt", "le", "gt", "ge"];

const lit = (v: number, d: DType) => (isFloat(d) ? (Number.isInteger(v) ? `${v}.0` : String(v)) : String(v));

interface Expr { src: string; dtype: DType; eval: (i: number) => number; transcendental: boolean }

/** What an expression may use: its level, its leaves, and the ops it records. */
interface Gen {
  r: Rand;
  level: "tensor" | "tile";
  leaves: Input[];
  newLeaf: (d: DType) => Input;
  /** How a leaf is written in the expression (a tensor parameter, or the tile loaded from it). */
  ref: (inp: Input) => string;
  used: Set<string>;
  /** A full-size constant operand (pl.full) may appear: its shape (static shapes only). */
  fullShape: number[] | null;
  /** Tile level: valid element positions for pl.read (row, column). */
  readAt?: [number, number];
  ncols: number;
}

/** A random elementwise expression over same-shape leaves. */
function genExpr(g: Gen, depth: number, d: DType): Expr {
  const { r } = g;
  const leafOf = (dd: DType): Expr => {
    const cands = g.leaves.filter((l) => l.dtype === dd);
    const inp = cands.length && r() < 0.6 ? pick(r, cands) : g.newLeaf(dd);
    return { src: g.ref(inp), dtype: dd, eval: (i) => inp.values[i], transcendental: false };
  };
  const exact = (e: Expr): Expr => (e.transcendental ? leafOf(e.dtype) : e); // a discontinuous op takes exact operands only
  const float = isFloat(d);
  if (depth <= 0 || r() < 0.2) {
    const c = r();
    if (c < 0.22) {
      // a cast of a leaf of another dtype, in a random mode
      const from = pick(r, ELEM_DTYPES.filter((x) => x !== d));
      const mode = pick(r, MODES);
      const x = leafOf(from);
      g.used.add("cast");
      return { src: `pl.cast(${x.src}, ${DT[d]}, "${mode}")`, dtype: d, eval: (i) => castTo(x.eval(i), d, mode), transcendental: false };
    }
    if (c < 0.27) {
      const v = float ? pick(r, [0.5, -2, 3.25, 0]) : d === "uint8" ? int(r, 0, 200) : int(r, -100, 100);
      const x = leafOf(d);
      g.used.add("expands");
      return { src: `pl.expands(${x.src}, ${lit(v, d)})`, dtype: d, eval: () => store(v, d), transcendental: false };
    }
    if (c < 0.31 && g.fullShape && g.level === "tile") {
      const v = float ? pick(r, [1.5, -0.75, 2]) : d === "uint8" ? int(r, 0, 9) : int(r, -9, 9);
      g.used.add("full");
      return { src: `pl.full([${g.fullShape.join(", ")}], ${DT[d]}, ${lit(v, d)})`, dtype: d, eval: () => store(v, d), transcendental: false };
    }
    if (c < 0.35 && g.level === "tile") {
      g.used.add("move");
      const x = leafOf(d);
      return { ...x, src: `pl.move(${x.src}, pl.Mem.Vec)` };
    }
    return leafOf(d);
  }
  const choice = r();
  if (choice < 0.42) {
    const ops = float ? ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "rem", "pow"]
      : d === "int64" ? ["add", "sub", "div", "maximum", "minimum", "fmod", "rem", "bitAnd", "bitOr", "bitXor", "shr"]
      : ["add", "sub", "mul", "div", "maximum", "minimum", "fmod", "rem", "bitAnd", "bitOr", "bitXor", "shl", "shr"];
    const op = pick(r, ops);
    g.used.add(op);
    const discontinuous = ["fmod", "rem"].includes(op);
    let a = genExpr(g, depth - 1, d);
    if (discontinuous || op === "pow") a = exact(a);
    let b: Expr;
    let lhsConst = false;
    const bits = BITS[d] ?? 0;
    if (op === "pow") {
      const v = pick(r, [0.5, 2, -1, 3, 1.5]);
      if (r() < 0.25) { lhsConst = true; b = a; a = { src: lit(pick(r, [2, 0.5, 1.5]), d), dtype: d, eval: () => 0, transcendental: false }; }
      else b = { src: lit(v, d), dtype: d, eval: () => v, transcendental: false };
    } else if (r() < 0.3 || op === "shl" || op === "shr") {
      const v = op === "shl" || op === "shr" ? int(r, -1, bits + 1)
        : float ? pick(r, [0.5, 2, -1.5, 3, 0.25])
        : op === "div" || op === "fmod" || op === "rem" ? pick(r, [0, 1, -1, 2, 3, 7])
        : d === "uint8" ? int(r, 0, 9) : int(r, -9, 9);
      if ((op === "shl" || op === "shr") && r() < 0.3) b = exact(genExpr(g, 0, d)); // a tile of counts
      else b = { src: lit(v, d), dtype: d, eval: () => v, transcendental: false };
      if (!(op === "shl" || op === "shr") && ["sub", "div", "maximum"].includes(op) && r() < 0.3) { lhsConst = true; [a, b] = [b, a]; }
    } else if (g.fullShape && g.level === "tensor" && /\bx\d+_\d+\b/.test(a.src) && r() < 0.15) {
      // a constant tensor operand: pl.full is a tensor where it is an operand of a tensor-level op (next to a tensor)
      const v = float ? pick(r, [1.5, -0.75, 2]) : d === "uint8" ? int(r, 0, 9) : op === "div" || op === "fmod" || op === "rem" ? pick(r, [0, 3, -2]) : int(r, -9, 9);
      g.used.add("full");
      b = { src: `pl.full([${g.fullShape.join(", ")}], ${DT[d]}, ${lit(v, d)})`, dtype: d, eval: () => store(v, d), transcendental: false };
    } else {
      b = genExpr(g, depth - 1, d);
      if (discontinuous) b = exact(b);
    }
    const lhsV = op === "pow" && lhsConst ? Number(a.src) : NaN;
    const f = (x: number, y: number): number => {
      switch (op) {
        case "add": return x + y;
        case "sub": return x - y;
        case "mul": return x * y;
        case "div": return float ? x / y : y === 0 ? 0 : Math.trunc(x / y);
        case "maximum": return nanMax(x, y);
        case "minimum": return nanMin(x, y);
        case "fmod": return fmodRef(x, y, d);
        case "rem": return remRef(x, y, d);
        case "pow": return Math.pow(lhsConst ? lhsV : x, y);
        case "bitAnd": return wrap(B(x) & B(y), d);
        case "bitOr": return wrap(B(x) | B(y), d);
        case "bitXor": return wrap(B(x) ^ B(y), d);
        case "shl": return shlRef(x, y, d);
        default: return shrRef(x, y, d);
      }
    };
    return {
      src: `pl.${op}(${a.src}, ${b.src})`, dtype: d, eval: (i) => store(f(a.eval(i), b.eval(i)), d),
      transcendental: a.transcendental || b.transcendental || (float && (op === "div" || op === "pow")),
    };
  }
  if (choice < 0.72) {
    const ops = float ? ["neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "recip", "sin", "cos", "tanh", "sigmoid", "erf"] : ["neg", "abs", "relu", "bitNot"];
    const op = pick(r, ops);
    g.used.add(op);
    const a = genExpr(g, depth - 1, d);
    // keep exp in range: exp of a small value
    const inner = op === "exp" ? `pl.mul(${a.src}, ${lit(0.25, d)})` : a.src;
    if (op === "exp") g.used.add("mul");
    const ia = op === "exp" ? (i: number) => store(a.eval(i) * 0.25, d) : a.eval;
    const f = (x: number): number => {
      switch (op) {
        case "neg": return -x;
        case "abs": return Math.abs(x);
        case "relu": return x > 0 ? x : 0;
        case "bitNot": return wrap(~B(x), d);
        case "exp": return Math.exp(x);
        case "log": return Math.log(x);
        case "sqrt": return Math.sqrt(x);
        case "rsqrt": return 1 / fround(Math.sqrt(x));
        case "recip": return 1 / x;
        case "sin": return Math.sin(x);
        case "cos": return Math.cos(x);
        case "tanh": return Math.tanh(x);
        case "sigmoid": return 1 / (1 + Math.exp(-x));
        default: return erfRef(x);
      }
    };
    const trans = !["neg", "abs", "relu", "bitNot"].includes(op);
    return { src: `pl.${op}(${inner})`, dtype: d, eval: (i) => store(f(ia(i)), d), transcendental: a.transcendental || trans };
  }
  if (choice < 0.84) {
    // sel(cmp(p, q, mode), x, y): the mask from exact leaves of any dtype
    const dc = pick(r, ELEM_DTYPES);
    const p = leafOf(dc);
    const qConst = r() < 0.4;
    const qv = isFloat(dc) ? pick(r, [0, 0.5, -1]) : dc === "uint8" ? int(r, 0, 100) : int(r, -50, 50);
    const q = qConst ? { src: lit(qv, dc), dtype: dc, eval: () => qv, transcendental: false } : leafOf(dc);
    const mode = pick(r, CMP);
    const x = genExpr(g, depth - 1, d), y = r() < 0.3 ? null : genExpr(g, depth - 1, d);
    const yv = float ? -0.5 : 3;
    g.used.add("sel"); g.used.add("cmp");
    return {
      src: `pl.sel(pl.cmp(${p.src}, ${q.src}, "${mode}"), ${x.src}, ${y ? y.src : lit(yv, d)})`, dtype: d,
      eval: (i) => (cmpRef(p.eval(i), q.eval(i), mode) ? x.eval(i) : y ? y.eval(i) : store(yv, d)),
      transcendental: x.transcendental || (y?.transcendental ?? false),
    };
  }
  if (float && choice < 0.9) {
    const s = pick(r, [0.25, -0.5, 2]);
    const a = genExpr(g, depth - 1, d);
    g.used.add("lrelu");
    return { src: `pl.lrelu(${a.src}, ${lit(s, d)})`, dtype: d, eval: (i) => { const x = a.eval(i); return store(x > 0 ? x : x * s, d); }, transcendental: a.transcendental };
  }
  if (g.level === "tile" && g.readAt && choice < 0.95) {
    // a scalar read from a valid element of a leaf, added to an expression
    const inp = pick(r, g.leaves.filter((l) => l.dtype === d).concat(g.newLeaf(d)));
    const [ri, ci] = g.readAt;
    const a = genExpr(g, depth - 1, d);
    g.used.add("read"); g.used.add("add");
    const v = inp.values[ri * g.ncols + ci];
    return { src: `pl.add(${a.src}, pl.read(${g.ref(inp)}, [${ri}, ${ci}]))`, dtype: d, eval: (i) => store(a.eval(i) + v, d), transcendental: a.transcendental };
  }
  return genExpr(g, depth - 1, d);
}

function floatTol(d: DType, transcendental: boolean): { rtol: number; atol: number } {
  if (d === "float16") return { rtol: 2e-2, atol: 2e-2 };
  if (d === "bfloat16") return { rtol: 6e-2, atol: 6e-2 };
  return transcendental ? { rtol: 2e-4, atol: 1e-4 } : { rtol: 1e-5, atol: 1e-5 };
}
const tolOf = (d: DType, transcendental: boolean) => (isFloat(d) ? floatTol(d, transcendental) : null);

function tensorGen(r: Rand, id: number, shape: number[], inputs: Input[], fullShape: number[] | null): Gen {
  const n = shape.reduce((a, b) => a * b, 1);
  return {
    r, level: "tensor", leaves: inputs, ref: (x) => x.name, used: new Set<string>(), fullShape, ncols: shape[1],
    newLeaf: (dd) => { const inp = { name: `x${id}_${inputs.length}`, shape, dtype: dd, values: randomValues(r, n, dd) }; inputs.push(inp); return inp; },
  };
}

function elementwiseCase(r: Rand, id: number): Case {
  const shape = [int(r, 1, 70), int(r, 1, 140)];
  const n = shape[0] * shape[1];
  const d = pick(r, ELEM_DTYPES);
  const dynRows = r() < 0.5; // half of them with a dynamic first dimension (run-time trip counts, row-by-row tail)
  const inputs: Input[] = [];
  const g = tensorGen(r, id, shape, inputs, dynRows ? null : shape);
  let e = genExpr(g, int(r, 1, 4), d);
  if (e.src === inputs[0]?.name) e = genExpr(g, 2, d); // not a bare copy only
  if (!inputs.length) g.newLeaf(d); // every case reads a tensor
  let outD = d;
  let expected = Array.from({ length: n }, (_, i) => e.eval(i));
  let body = `pl.assign(o${id}, ${e.src});`;
  if (r() < 0.08) { // a final cast to bool
    outD = "bool";
    expected = expected.map((v) => (v !== 0 ? 1 : 0));
    body = `pl.assign(o${id}, pl.cast(${e.src}, pl.BOOL));`;
    g.used.add("cast");
  }
  return {
    id, kind: "elementwise", scopes: [body], inputs, out: { name: `o${id}`, shape, dtype: outD, init: new Array(n).fill(0) }, expected, tol: tolOf(outD, e.transcendental),
    what: `elementwise ${d}[${dynRows ? `R${id}=` : ""}${shape}] ${body}`, dynRows, ops: ["assign", ...g.used],
  };
}

/**
 * Tile-level chains on a tile that may be partial (a static or run-time validShape): loads,
 * elementwise ops, pl.read, move; the store writes the valid region only (the rest of a pure
 * Out stays zero), or the whole tile after fillpad; sometimes an atomic-add store into an InOut.
 */
function tileCase(r: Rand, id: number): Case {
  const M = int(r, 1, 40), N = int(r, 1, 72);
  const d = pick(r, ELEM_DTYPES);
  const partial = r() < 0.6;
  const vm = partial ? int(r, 1, M) : M, vn = partial ? int(r, 1, N) : N;
  const dynamic = partial && r() < 0.5;
  const scalars = dynamic ? [{ name: `v${id}`, value: vm }] : [];
  const inputs: Input[] = [];
  const g: Gen = {
    r, level: "tile", leaves: inputs, ref: (x) => `t_${x.name}`, used: new Set(["load", "store"]), fullShape: partial ? null : [M, N],
    readAt: [int(r, 0, vm - 1), int(r, 0, vn - 1)], ncols: N,
    newLeaf: (dd) => { const inp = { name: `x${id}_${inputs.length}`, shape: [M, N], dtype: dd, values: randomValues(r, M * N, dd) }; inputs.push(inp); return inp; },
  };
  const e = genExpr(g, int(r, 1, 3), d);
  if (!inputs.length) g.newLeaf(d);
  const valid = partial ? `, { validShape: [${dynamic ? `v${id}` : vm}, ${vn}] }` : "";
  const loads = inputs.map((x) => `const t_${x.name} = pl.load(${x.name}, [0, 0], [${M}, ${N}]${valid});`).join("\n    ");
  const pad = partial && r() < 0.4 ? pick(r, ["zero", "min", "max"] as const) : null;
  const atomic = !pad && r() < 0.2;
  let value = e.src, ev = e.eval, bind = "";
  // the value bound to a tile used twice (kept in scratch, not fused into the store) and
  // combined with a loaded leaf by maximum/minimum: minimum(abs(v), v) of such a tile was a
  // g++ internal compiler error (issue 19 item 9)
  const leaf = inputs.find((x) => x.dtype === d);
  if (leaf && r() < 0.35) {
    const mm = (op: string) => (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? NaN : op === "minimum" ? Math.min(x, y) : Math.max(x, y));
    const [op1, op2] = [pick(r, ["minimum", "maximum"]), pick(r, ["minimum", "maximum"])];
    const [f1, f2] = [mm(op1), mm(op2)];
    const s = `s${id}`, l = g.ref(leaf);
    bind = `const ${s} = ${e.src};\n    `;
    const form = r();
    if (form < 0.35) {
      value = `pl.${op1}(pl.${op2}(${s}, ${s}), ${l})`;
      ev = (k) => store(f1(f2(e.eval(k), e.eval(k)), leaf.values[k]), d);
    } else if (form < 0.7) {
      // op1(s, leaf) itself (the issue's minimum(abs(v), v) when s = abs(v)), s used again in s - s
      value = `pl.add(pl.${op1}(${s}, ${l}), pl.sub(${s}, ${s}))`;
      ev = (k) => store(store(f1(e.eval(k), leaf.values[k]), d) + store(e.eval(k) - e.eval(k), d), d);
      g.used.add("add"); g.used.add("sub");
    } else {
      value = `pl.${op1}(${s}, pl.${op2}(${l}, ${s}))`;
      ev = (k) => store(f1(e.eval(k), f2(leaf.values[k], e.eval(k))), d);
    }
    g.used.add(op1); g.used.add(op2);
  }
  if (pad) { value = `pl.fillpad(${value}, "${pad}")`; g.used.add("fillpad"); }
  if (!partial && r() < 0.15) { value = `pl.add(${value}, pl.expands(pl.createTile([${M}, ${N}], ${DT[d]}), 1))`; g.used.add("createTile"); g.used.add("expands"); g.used.add("add"); }
  const plusOne = !partial && value.includes("pl.createTile(");
  const init = atomic ? randomValues(r, M * N, d) : new Array(M * N).fill(0);
  const expected = Array.from({ length: M * N }, (_, k) => {
    const i = Math.floor(k / N), j = k % N;
    const inside = i < vm && j < vn;
    const v = inside ? (plusOne ? store(ev(k) + 1, d) : ev(k)) : pad ? padOf(pad, d) : null;
    if (v === null) return init[k];
    return atomic ? store(init[k] + v, d) : v;
  });
  const storeOpts = atomic ? ", { atomic: \"add\" }" : "";
  const body = `${loads}\n    ${bind}pl.store(${value}, [0, 0], o${id}${storeOpts});`;
  return {
    id, kind: "tile", scopes: [body], inputs, scalars, out: { name: `o${id}`, shape: [M, N], dtype: d, init, inout: atomic }, expected,
    tol: tolOf(d, e.transcendental),
    what: `tile ${d}[${M},${N}] valid [${dynamic ? `v=${vm}` : vm},${vn}]${pad ? ` fillpad ${pad}` : ""}${atomic ? " atomic add" : ""}: ${value}`, ops: [...g.used],
  };
}

const RED_DTYPES: DType[] = ["float32", "float32", "int32", "int16", "float16", "bfloat16", "int8"];
const RED_KINDS = ["rowSum", "rowMax", "rowMin", "rowProd", "colSum", "colMax", "colMin", "colProd", "rowArgmax", "rowArgmin", "colArgmax", "colArgmin"] as const;

function reductionCase(r: Rand, id: number): Case {
  const M = int(r, 1, 40), N = int(r, 1, 72);
  const d = pick(r, RED_DTYPES);
  const kind = pick(r, RED_KINDS);
  const isProd = kind.endsWith("Prod"), isArg = kind.includes("Arg");
  const smallInts = isProd ? (d === "int32" || d === "int16" ? "int8" : d) : d === "int32" ? "int16" : d;
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, smallInts) };
  if (isProd && isFloat(d)) a.values = a.values.map((v) => store(v / 3, d)); // products of magnitudes near 1
  const partial = !isProd && r() < 0.4;
  const vm = partial ? int(r, 1, M) : M, vn = partial ? int(r, 1, N) : N;
  const isMax = /Max|Argmax/.test(kind), isMin = /Min|Argmin/.test(kind);
  const pad = isMax ? "min" : isMin ? "max" : "zero";
  const padV = padOf(pad, d);
  // a partial tile is reduced either after fillpad (the whole tile) or as it is: its valid region
  // only, the result's pad (rows / columns past the valid ones) not stored (docs/semantics.md)
  const filled = partial && r() < 0.5;
  const x = (i: number, j: number) => (i < vm && j < vn ? a.values[i * N + j] : padV);
  const rowWise = kind.startsWith("row");
  const outShape = rowWise ? [M, 1] : [1, N];
  const outD: DType = isArg ? "int32" : d;
  const combine = (vals: number[]): number => {
    if (kind.endsWith("Sum")) return store(vals.reduce((s, v) => s + v, 0), d);
    if (isProd) {
      if (isFloat(d)) return store(vals.reduce((s, v) => s * v, 1), d);
      // integers: each step saturates at the int64 range, then the dtype's
      let p = 1n;
      const hi = 2n ** 63n - 1n, lo = -(2n ** 63n);
      for (const v of vals) { p *= BigInt(v); if (p > hi) p = hi; if (p < lo) p = lo; }
      return clamp(Number(p), d);
    }
    if (isArg) {
      // the first extreme; a NaN is the extreme and the first NaN wins
      let best = vals[0], bi = 0;
      for (let j = 1; j < vals.length; j++) {
        const v = vals[j];
        if (Number.isNaN(best)) break;
        if (Number.isNaN(v) || (isMax ? v > best : v < best)) { best = v; bi = j; }
      }
      return bi;
    }
    if (vals.some(Number.isNaN)) return NaN;
    return isMax ? Math.max(...vals) : Math.min(...vals);
  };
  const expected: number[] = [];
  if (!partial || filled) {
    if (rowWise) for (let i = 0; i < M; i++) expected.push(combine(Array.from({ length: N }, (_, j) => x(i, j))));
    else for (let j = 0; j < N; j++) expected.push(combine(Array.from({ length: M }, (_, i) => x(i, j))));
  } else if (rowWise) {
    for (let i = 0; i < M; i++) expected.push(i < vm ? combine(Array.from({ length: vn }, (_, j) => x(i, j))) : 0);
  } else {
    for (let j = 0; j < N; j++) expected.push(j < vn ? combine(Array.from({ length: vm }, (_, i) => x(i, j))) : 0);
  }
  const partialLoad = `pl.load(${a.name}, [0, 0], [${M}, ${N}], { validShape: [${vm}, ${vn}] })`;
  const load = !partial ? `pl.load(${a.name}, [0, 0], [${M}, ${N}])` : filled ? `pl.fillpad(${partialLoad}, "${pad}")` : partialLoad;
  const tmp = rowWise && (!isArg || r() < 0.5);
  const call = tmp ? `pl.${kind}(t, pl.createTile([${M}, ${N}], ${DT[d]}))` : `pl.${kind}(t)`;
  const body = `const t = ${load};\n    pl.store(${call}, [0, 0], o${id});`;
  const tol = isFloat(outD) ? (d === "float16" || d === "bfloat16" ? { rtol: 6e-2, atol: 6e-2 } : isProd ? { rtol: 1e-5, atol: 1e-30 } : { rtol: 1e-5, atol: 1e-4 }) : null;
  return {
    id, kind: "reduction", scopes: [body], inputs: [a], out: { name: `o${id}`, shape: outShape, dtype: outD, init: new Array(outShape[0] * outShape[1]).fill(0) },
    expected, tol, what: `reduction ${kind} ${d}[${M},${N}] valid [${vm},${vn}] ${filled ? `pad ${pad}` : partial ? "valid region only" : ""}`,
    ops: ["load", "store", kind, ...(filled ? ["fillpad"] : []), ...(tmp ? ["createTile"] : [])],
  };
}

function broadcastCase(r: Rand, id: number): Case {
  const M = int(r, 1, 40), N = int(r, 1, 72);
  const d = pick(r, ["float32", "float32", "int32", "float16", "bfloat16"] as DType[]);
  const float = isFloat(d);
  const srcD = d === "int32" ? "int16" : d;
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, srcD) };
  const row = r() < 0.5;
  const v: Input = { name: `x${id}_1`, shape: row ? [M, 1] : [1, N], dtype: d, values: randomValues(r, row ? M : N, srcD) };
  const ops = float ? ["Add", "Sub", "Mul", "Div", "Max", "Min", "Expdif", "", "prelu"] : ["Add", "Sub", "Mul", "Div", "Max", "Min", ""];
  let op = pick(r, ops);
  if (op === "prelu" && !row) op = "Add";
  const fname = op === "prelu" ? "prelu" : `${row ? "rowExpand" : "colExpand"}${op}`;
  const f = (x: number, y: number): number => {
    switch (op) {
      case "Add": return x + y;
      case "Sub": return x - y;
      case "Mul": return x * y;
      case "Div": return float ? x / y : y === 0 ? 0 : Math.trunc(x / y);
      case "Max": return nanMax(x, y);
      case "Min": return nanMin(x, y);
      case "Expdif": return Math.exp(store(x - y, d));
      case "prelu": return x > 0 ? x : x * y;
      default: return y;
    }
  };
  const expected: number[] = [];
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) expected.push(store(f(a.values[i * N + j], v.values[row ? i : j]), d));
  // tile level, or (for the row/column ops) the tensor form
  const tensor = op !== "prelu" && r() < 0.35;
  const body = tensor
    ? `pl.assign(o${id}, pl.${fname}(${a.name}, ${v.name}));`
    : `pl.store(pl.${fname}(pl.load(${a.name}, [0, 0], [${M}, ${N}]), pl.load(${v.name}, [0, 0], [${v.shape[0]}, ${v.shape[1]}])), [0, 0], o${id});`;
  return {
    id, kind: "broadcast", scopes: [body], inputs: [a, v], out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) },
    expected, tol: tolOf(d, op === "Div" || op === "Expdif"), what: `broadcast ${fname} ${d}[${M},${N}]${tensor ? " (tensor)" : ""}`,
    ops: tensor ? ["assign", fname] : ["load", "store", fname],
  };
}

/** Shape ops on tiles and tensors: transpose, slice, concat, assemble, reshape, broadcastTo. */
function shapeCase(r: Rand, id: number): Case {
  const d = pick(r, ELEM_DTYPES);
  const M = int(r, 1, 32), N = int(r, 1, 48);
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, d) };
  const kind = pick(r, ["transpose", "slice", "concat", "assemble", "reshape", "broadcastTo"] as const);
  const tensor = r() < 0.4;
  const inputs: Input[] = [a];
  let outShape: number[], expected: number[], tileSrc: string, tensorSrc: string;
  // the tile forms of slice and concat sometimes read a partial tile, pad included: a
  // kernel that reads a pad starts from zeroed scratch, so the pad reads 0 (docs/semantics.md)
  const padded = (kind === "slice" || kind === "concat") && !tensor && r() < 0.4;
  const vm = padded ? int(r, 1, M) : M, vn = padded ? int(r, 1, N) : N;
  const at = (i: number, j: number) => (i < vm && j < vn ? a.values[i * N + j] : 0);
  const T = padded ? `pl.load(${a.name}, [0, 0], [${M}, ${N}], { validShape: [${vm}, ${vn}] })` : `pl.load(${a.name}, [0, 0], [${M}, ${N}])`;
  switch (kind) {
    case "transpose":
      outShape = [N, M];
      expected = Array.from({ length: N * M }, (_, k) => at(k % M, Math.floor(k / M)));
      tileSrc = `pl.transpose(${T}, 0, 1)`; tensorSrc = `pl.transpose(${a.name}, 0, 1)`;
      break;
    case "slice": {
      const h = int(r, 1, M), w = int(r, 1, N), r0 = int(r, 0, M - h), c0 = int(r, 0, N - w);
      outShape = [h, w];
      expected = Array.from({ length: h * w }, (_, k) => at(r0 + Math.floor(k / w), c0 + (k % w)));
      tileSrc = `pl.slice(${T}, [${h}, ${w}], [${r0}, ${c0}])`; tensorSrc = `pl.slice(${a.name}, [${h}, ${w}], [${r0}, ${c0}])`;
      break;
    }
    case "concat": {
      const Nb = int(r, 1, 40);
      const b: Input = { name: `x${id}_1`, shape: [M, Nb], dtype: d, values: randomValues(r, M * Nb, d) };
      inputs.push(b);
      outShape = [M, N + Nb];
      expected = Array.from({ length: M * (N + Nb) }, (_, k) => { const i = Math.floor(k / (N + Nb)), j = k % (N + Nb); return j < N ? at(i, j) : b.values[i * Nb + j - N]; });
      tileSrc = `pl.concat(${T}, pl.load(${b.name}, [0, 0], [${M}, ${Nb}]))`; tensorSrc = `pl.concat(${a.name}, ${b.name})`;
      break;
    }
    case "assemble": {
      const h = int(r, 1, M), w = int(r, 1, N), r0 = int(r, 0, M - h), c0 = int(r, 0, N - w);
      const b: Input = { name: `x${id}_1`, shape: [h, w], dtype: d, values: randomValues(r, h * w, d) };
      inputs.push(b);
      outShape = [M, N];
      expected = Array.from({ length: M * N }, (_, k) => {
        const i = Math.floor(k / N), j = k % N;
        return i >= r0 && i < r0 + h && j >= c0 && j < c0 + w ? b.values[(i - r0) * w + j - c0] : at(i, j);
      });
      tileSrc = `pl.assemble(${T}, pl.load(${b.name}, [0, 0], [${h}, ${w}]), [${r0}, ${c0}])`;
      tensorSrc = "";
      break;
    }
    case "reshape": {
      const n = M * N;
      const divs = Array.from({ length: n }, (_, k) => k + 1).filter((k) => n % k === 0);
      const rows = pick(r, divs);
      outShape = [rows, n / rows];
      expected = [...a.values];
      tileSrc = `pl.reshape(${T}, [${rows}, ${n / rows}])`; tensorSrc = `pl.reshape(${a.name}, [${rows}, ${n / rows}])`;
      break;
    }
    default: {
      const row = r() < 0.5;
      const v: Input = { name: `x${id}_1`, shape: row ? [M, 1] : [1, N], dtype: d, values: randomValues(r, row ? M : N, d) };
      inputs.push(v);
      outShape = [M, N];
      expected = Array.from({ length: M * N }, (_, k) => v.values[row ? Math.floor(k / N) : k % N]);
      tileSrc = `pl.broadcastTo(pl.load(${v.name}, [0, 0], [${v.shape[0]}, ${v.shape[1]}]), [${M}, ${N}])`;
      tensorSrc = `pl.broadcastTo(${v.name}, [${M}, ${N}])`;
    }
  }
  const useTensor = tensor && tensorSrc !== "";
  const body = useTensor ? `pl.assign(o${id}, ${tensorSrc});` : `pl.store(${tileSrc}, [0, 0], o${id});`;
  return {
    id, kind: "shape", scopes: [body], inputs, out: { name: `o${id}`, shape: outShape, dtype: d, init: new Array(outShape[0] * outShape[1]).fill(0) },
    expected, tol: null, what: `shape ${kind} ${d}[${M},${N}]${useTensor ? " (tensor)" : ""}: ${body}`,
    ops: useTensor ? ["assign", kind] : ["load", "store", kind],
  };
}

function loopCase(r: Rand, id: number): Case {
  const M = int(r, 1, 32), N = int(r, 1, 64);
  const d = pick(r, ["float32", "int32", "int8", "float32"] as DType[]);
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, d) };
  const b: Input = { name: `x${id}_1`, shape: [M, N], dtype: d, values: randomValues(r, M * N, d) };
  const K = int(r, 0, 9);
  const c = isFloat(d) ? 0.5 : pick(r, [2, -1, 3]);
  const expected = a.values.map((v0, i) => {
    let t = v0;
    for (let k = 0; k < K; k++) t = store(store(t * c, d) + store(b.values[i] - k, d), d);
    return t;
  });
  const body = `let t = pl.load(${a.name}, [0, 0], [${M}, ${N}]);
    const u = pl.load(${b.name}, [0, 0], [${M}, ${N}]);
    for (const k of pl.range(${K})) {
      t = pl.add(pl.mul(t, ${lit(c, d)}), pl.sub(u, k));
    }
    pl.store(t, [0, 0], o${id});`;
  return {
    id, kind: "loop", scopes: [body], inputs: [a, b], out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) },
    expected, tol: isFloat(d) ? { rtol: 1e-5, atol: 1e-4 } : null, what: `loop ${d}[${M},${N}] x${K} c=${c}`, ops: ["load", "store", "add", "mul", "sub"],
  };
}

/**
 * Scalar arithmetic and control flow in a kernel: a loop whose index feeds random int64
 * expressions (+ - * %, Math.min/max/floor/ceil/trunc of a true division, unary minus,
 * pl.dim, pl.read of a tensor element) and conditions (comparisons, &&, ||, !) choosing what
 * is added to a carried tile.
 */
function scalarCase(r: Rand, id: number): Case {
  const M = int(r, 1, 16), N = int(r, 1, 40);
  const d = pick(r, ["float32", "int32"] as DType[]);
  const x: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, d === "int32" ? "int16" : d) };
  const ix: Input = { name: `x${id}_1`, shape: [2, 3], dtype: "int32", values: Array.from({ length: 6 }, () => int(r, -5, 5)) };
  const used = new Set<string>(["load", "store", "add", "sub", "dim", "read"]);
  const K = int(r, 1, 8);
  type S = { src: string; ev: (k: number) => number };
  const leaf = (): S => {
    const c = r();
    if (c < 0.45) return { src: "k", ev: (k) => k };
    if (c < 0.6) { const ax = int(r, 0, 1); return { src: `pl.dim(${x.name}, ${ax})`, ev: () => x.shape[ax] }; }
    if (c < 0.7) { const [i, j] = [int(r, 0, 1), int(r, 0, 2)]; return { src: `pl.read(${ix.name}, [${i}, ${j}])`, ev: () => ix.values[i * 3 + j] }; }
    const v = int(r, -7, 9);
    return { src: v < 0 ? `(${v})` : String(v), ev: () => v };
  };
  const sexpr = (depth: number): S => {
    if (depth <= 0 || r() < 0.25) return leaf();
    const c = r();
    const a = sexpr(depth - 1), b = sexpr(depth - 1);
    if (c < 0.15) { used.add("scalar.add"); return { src: `(${a.src} + ${b.src})`, ev: (k) => a.ev(k) + b.ev(k) }; }
    if (c < 0.3) { used.add("scalar.sub"); return { src: `(${a.src} - ${b.src})`, ev: (k) => a.ev(k) - b.ev(k) }; }
    if (c < 0.42) { used.add("scalar.mul"); return { src: `(${a.src} * ${b.src})`, ev: (k) => a.ev(k) * b.ev(k) }; }
    if (c < 0.52) { const m = int(r, 2, 5); used.add("scalar.mod"); return { src: `(${a.src} % ${m})`, ev: (k) => a.ev(k) % m || 0 }; }
    if (c < 0.62) { const f = pick(r, ["min", "max"] as const); used.add(`scalar.${f}`); return { src: `Math.${f}(${a.src}, ${b.src})`, ev: (k) => Math[f](a.ev(k), b.ev(k)) }; }
    if (c < 0.8) {
      const f = pick(r, ["floor", "ceil", "trunc"] as const), q = pick(r, [2, 3, 4]);
      used.add(`scalar.${f}`); used.add("scalar.div");
      return { src: `Math.${f}(${a.src} / ${q})`, ev: (k) => Math[f](a.ev(k) / q) || 0 };
    }
    used.add("scalar.neg");
    return { src: `(-(${a.src}))`, ev: (k) => -a.ev(k) || 0 };
  };
  const cond = (depth: number): { src: string; ev: (k: number) => boolean } => {
    const c = r();
    if (depth > 0 && c < 0.3) {
      const a = cond(depth - 1), b = cond(depth - 1), and = r() < 0.5;
      used.add(and ? "scalar.and" : "scalar.or");
      return { src: `(${a.src} ${and ? "&&" : "||"} ${b.src})`, ev: (k) => (and ? a.ev(k) && b.ev(k) : a.ev(k) || b.ev(k)) };
    }
    if (depth > 0 && c < 0.4) { const a = cond(depth - 1); used.add("scalar.not"); return { src: `!(${a.src})`, ev: (k) => !a.ev(k) }; }
    const ops = [["<", "lt"], ["<=", "le"], [">", "gt"], [">=", "ge"], ["===", "eq"], ["!==", "ne"]] as const;
    const [o, name] = pick(r, ops);
    used.add(`scalar.${name}`);
    const a = sexpr(1), b = sexpr(1);
    const f = (p: number, q: number) => (o === "<" ? p < q : o === "<=" ? p <= q : o === ">" ? p > q : o === ">=" ? p >= q : o === "===" ? p === q : p !== q);
    return { src: `${a.src} ${o} ${b.src}`, ev: (k) => f(a.ev(k), b.ev(k)) };
  };
  const s1 = sexpr(2), s2 = sexpr(2), c1 = cond(2);
  const expected = x.values.map((v0) => {
    let t = v0;
    for (let k = 0; k < K; k++) t = c1.ev(k) ? store(t + s1.ev(k), d) : store(t - s2.ev(k), d);
    return t;
  });
  const body = `let t = pl.load(${x.name}, [0, 0], [${M}, ${N}]);
    for (const k of pl.range(${K})) {
      if (${c1.src}) {
        t = pl.add(t, ${s1.src});
      } else {
        t = pl.sub(t, ${s2.src});
      }
    }
    pl.store(t, [0, 0], o${id});`;
  return {
    id, kind: "scalar", scopes: [body], inputs: [x, ix], out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) },
    expected, tol: isFloat(d) ? { rtol: 1e-5, atol: 1e-4 } : null, what: `scalar control flow ${d}[${M},${N}] x${K}: if (${c1.src}) +${s1.src} else -${s2.src}`, ops: [...used],
  };
}

/**
 * A row or column reduction inside a tensor-level expression (`pl.assign(o, op(f(x),
 * rowMax(g(x))))`, TensorToTile's whole-row / whole-column tiles): float32, random elementwise
 * f and g, half of the row cases with a dynamic row count. Sums only over exact-in-fp64 operands
 * (no transcendental op in g), so the reference's sequential fp64 sum rounds to the same float
 * as the cpu's lane sums.
 */
function rowReductionExprCase(r: Rand, id: number): Case {
  const shape = [int(r, 1, 45), int(r, 1, 90)];
  const [M, N] = shape;
  const d: DType = "float32";
  const inputs: Input[] = [];
  const axis = r() < 0.7 ? "row" : "col";  // a column reduction: tiles of whole columns (static rows)
  const dynRows = axis === "row" && r() < 0.5;
  const gen = tensorGen(r, id, shape, inputs, null);
  const g = genExpr(gen, int(r, 0, 2), d);
  const kind = `${axis}${pick(r, g.transcendental ? ["Max", "Min"] : ["Sum", "Max", "Min"])}`;
  const [lines, along] = axis === "row" ? [M, N] : [N, M];
  const at = (line: number, q: number) => (axis === "row" ? line * N + q : q * N + line);
  const red = Array.from({ length: lines }, (_, i) => {
    const vals = Array.from({ length: along }, (_, q) => g.eval(at(i, q)));
    if (kind.endsWith("Sum")) return store(vals.reduce((s, v) => s + v, 0), d);
    if (vals.some(Number.isNaN)) return NaN;
    return kind.endsWith("Max") ? Math.max(...vals) : Math.min(...vals);
  });
  const f = genExpr(gen, int(r, 0, 2), d);
  if (!inputs.length) gen.newLeaf(d);
  const op = pick(r, [`${axis}ExpandSub`, `${axis}ExpandAdd`, `${axis}ExpandMul`, "sub", "add", "mul"]);
  const fn = (x: number, y: number) => (op.endsWith("ub") ? x - y : op.endsWith("dd") ? x + y : x * y);
  const expected = Array.from({ length: M * N }, (_, k) => store(fn(f.eval(k), red[axis === "row" ? Math.floor(k / N) : k % N]), d));
  const body = `pl.assign(o${id}, pl.${op}(${f.src}, pl.${kind}(${g.src})));`;
  return {
    id, kind: "rowReductionExpr", scopes: [body], inputs, out: { name: `o${id}`, shape, dtype: d, init: new Array(M * N).fill(0) }, expected,
    tol: floatTol(d, f.transcendental || g.transcendental), what: `row reduction in an expression ${d}[${dynRows ? `R${id}=` : ""}${shape}] ${body}`, dynRows,
    ops: ["assign", op, kind, ...gen.used],
  };
}

/** fp32 sums of products in k order (fused where the target fuses: within the tolerance), as the reference's fp64 sum rounded. */
function matmulRef(a: (i: number, q: number) => number, b: (q: number, j: number) => number, M: number, K: number, N: number): number[] {
  return Array.from({ length: M * N }, (_, k) => {
    const i = Math.floor(k / N), j = k % N;
    let t = 0;
    for (let q = 0; q < K; q++) t += a(i, q) * b(q, j);
    return t;
  });
}

/** A matmul under an elementwise epilogue (`pl.assign(o, op(matmul(a, b), f(x)))`), float32, static shapes. */
function matmulEpilogueCase(r: Rand, id: number): Case {
  const [M, K, N] = [int(r, 1, 40), int(r, 1, 40), int(r, 1, 40)];
  const d: DType = "float32";
  const a: Input = { name: `x${id}_a`, shape: [M, K], dtype: d, values: randomValues(r, M * K, d) };
  const b: Input = { name: `x${id}_b`, shape: [K, N], dtype: d, values: randomValues(r, K * N, d) };
  const inputs: Input[] = [a, b];
  const epi: Input[] = [];
  const gen = tensorGen(r, id, [M, N], epi, null);
  gen.newLeaf = (dd) => { const inp = { name: `x${id}_${inputs.length}`, shape: [M, N], dtype: dd, values: randomValues(r, M * N, dd) }; inputs.push(inp); epi.push(inp); return inp; };
  const f = genExpr(gen, int(r, 0, 2), d);
  const op = pick(r, ["add", "sub", "mul", "maximum"] as const);
  const mm = matmulRef((i, q) => a.values[i * K + q], (q, j) => b.values[q * N + j], M, K, N).map((v) => store(v, d));
  const fn = (x: number, y: number) => (op === "add" ? x + y : op === "sub" ? x - y : op === "mul" ? x * y : nanMax(x, y));
  const expected = mm.map((v, k) => store(fn(v, f.eval(k)), d));
  const body = `pl.assign(o${id}, pl.${op}(pl.matmul(${a.name}, ${b.name}), ${f.src}));`;
  return {
    id, kind: "matmulEpilogue", scopes: [body], inputs, out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) }, expected,
    tol: { rtol: 2e-4, atol: 2e-4 }, what: `matmul epilogue [${M},${K}]x[${K},${N}] ${body}`, ops: ["assign", "matmul", op, ...gen.used],
  };
}

/**
 * The matmul family: tensor-level matmul with transposed operands and an outDtype (fp32,
 * fp16, bf16 and int8 inputs), tile-level matmulAcc and matmulBias, and batchMatmul.
 */
function matmulCase(r: Rand, id: number): Case {
  const [M, K, N] = [int(r, 1, 36), int(r, 1, 36), int(r, 1, 36)];
  const d = pick(r, ["float32", "float32", "float16", "bfloat16", "int8"] as DType[]);
  const float = isFloat(d);
  const accD: DType = float ? "float32" : "int32";
  const vals = (n: number) => (float ? randomValues(r, n, d) : Array.from({ length: n }, () => int(r, -20, 20)));
  const kind = pick(r, ["matmul", "matmul", "matmulAcc", "matmulBias", "batchMatmul"] as const);
  const tolF = { rtol: 2e-4, atol: 2e-4 };
  if (kind === "batchMatmul") {
    const Bn = int(r, 1, 3);
    const a: Input = { name: `x${id}_a`, shape: [Bn, M, K], dtype: d, values: vals(Bn * M * K) };
    const b: Input = { name: `x${id}_b`, shape: [Bn, K, N], dtype: d, values: vals(Bn * K * N) };
    const expected: number[] = [];
    for (let q = 0; q < Bn; q++) expected.push(...matmulRef((i, k) => a.values[(q * M + i) * K + k], (k, j) => b.values[(q * K + k) * N + j], M, K, N).map((v) => store(v, accD)));
    return {
      id, kind: "matmul", scopes: [`pl.assign(o${id}, pl.batchMatmul(${a.name}, ${b.name}));`], inputs: [a, b],
      out: { name: `o${id}`, shape: [Bn, M, N], dtype: accD, init: new Array(Bn * M * N).fill(0) }, expected, tol: float ? tolF : null,
      what: `batchMatmul ${d}[${Bn},${M},${K}]x[${Bn},${K},${N}]`, ops: ["assign", "batchMatmul"],
    };
  }
  if (kind === "matmul") {
    const aT = r() < 0.35, bT = r() < 0.35;
    const outD: DType = float && r() < 0.3 ? pick(r, ["float16", "bfloat16"] as DType[]) : accD;
    const a: Input = { name: `x${id}_a`, shape: aT ? [K, M] : [M, K], dtype: d, values: vals(M * K) };
    const b: Input = { name: `x${id}_b`, shape: bT ? [N, K] : [K, N], dtype: d, values: vals(K * N) };
    const av = (i: number, q: number) => (aT ? a.values[q * M + i] : a.values[i * K + q]);
    const bv = (q: number, j: number) => (bT ? b.values[j * K + q] : b.values[q * N + j]);
    const expected = matmulRef(av, bv, M, K, N).map((v) => (outD === accD ? store(v, accD) : castTo(fround(v), outD, "round")));
    const opts = [aT ? "aTrans: true" : "", bT ? "bTrans: true" : "", outD !== accD ? `outDtype: ${DT[outD]}` : ""].filter(Boolean);
    const body = `pl.assign(o${id}, pl.matmul(${a.name}, ${b.name}${opts.length ? `, { ${opts.join(", ")} }` : ""}));`;
    return {
      id, kind: "matmul", scopes: [body], inputs: [a, b], out: { name: `o${id}`, shape: [M, N], dtype: outD, init: new Array(M * N).fill(0) }, expected,
      tol: isFloat(outD) ? (outD === "float32" ? tolF : { rtol: 2e-2, atol: 2e-2 }) : null, what: `matmul ${d} [${M},${K}]x[${K},${N}] ${body}`, ops: ["assign", "matmul"],
    };
  }
  const a: Input = { name: `x${id}_a`, shape: [M, K], dtype: d, values: vals(M * K) };
  const b: Input = { name: `x${id}_b`, shape: [K, N], dtype: d, values: vals(K * N) };
  const mm = matmulRef((i, q) => a.values[i * K + q], (q, j) => b.values[q * N + j], M, K, N);
  const ta = `pl.load(${a.name}, [0, 0], [${M}, ${K}])`, tb = `pl.load(${b.name}, [0, 0], [${K}, ${N}])`;
  if (kind === "matmulAcc") {
    const K2 = int(r, 1, 24);
    const c: Input = { name: `x${id}_c`, shape: [M, K2], dtype: d, values: vals(M * K2) };
    const e: Input = { name: `x${id}_d`, shape: [K2, N], dtype: d, values: vals(K2 * N) };
    const m2 = matmulRef((i, q) => c.values[i * K2 + q], (q, j) => e.values[q * N + j], M, K2, N);
    const expected = mm.map((v, k) => store(store(v, accD) + m2[k], accD));
    const body = `const acc = pl.matmul(${ta}, ${tb});
    pl.store(pl.matmulAcc(acc, pl.load(${c.name}, [0, 0], [${M}, ${K2}]), pl.load(${e.name}, [0, 0], [${K2}, ${N}])), [0, 0], o${id});`;
    return {
      id, kind: "matmul", scopes: [body], inputs: [a, b, c, e], out: { name: `o${id}`, shape: [M, N], dtype: accD, init: new Array(M * N).fill(0) }, expected,
      tol: float ? { rtol: 4e-4, atol: 4e-4 } : null, what: `matmulAcc ${d} [${M},${K}]x[${K},${N}] + [${M},${K2}]x[${K2},${N}]`, ops: ["load", "store", "matmul", "matmulAcc"],
    };
  }
  const bias: Input = { name: `x${id}_bias`, shape: [1, N], dtype: accD, values: float ? randomValues(r, N, "float32") : Array.from({ length: N }, () => int(r, -100, 100)) };
  const expected = mm.map((v, k) => store(store(v, accD) + bias.values[k % N], accD));
  const body = `pl.store(pl.matmulBias(${ta}, ${tb}, pl.load(${bias.name}, [0, 0], [1, ${N}])), [0, 0], o${id});`;
  return {
    id, kind: "matmul", scopes: [body], inputs: [a, b, bias], out: { name: `o${id}`, shape: [M, N], dtype: accD, init: new Array(M * N).fill(0) }, expected,
    tol: float ? tolF : null, what: `matmulBias ${d} [${M},${K}]x[${K},${N}]`, ops: ["load", "store", "matmulBias"],
  };
}

/**
 * Weight-only quantized matmul (pl.matmulQuant): int8 or packed int4 weights, per-group scales
 * (fp32 / fp16 / bf16), group sizes that are and are not multiples of 16, tile and tensor forms,
 * with a bias epilogue on tensors. x holds halves, the weights small integers and the scales
 * powers of two, so every sum is exact in fp32 in any order: the reference is exact.
 */
function matmulQuantCase(r: Rand, id: number): Case {
  const bits = pick(r, [4, 8] as const);
  const g = pick(r, [2, 8, 16, 24, 32, 48]);
  const K = g * int(r, 1, 4), M = int(r, 1, 6), N = int(r, 1, 40);
  const sd = pick(r, ["float32", "float16", "bfloat16"] as DType[]);
  const x: Input = { name: `x${id}_x`, shape: [M, K], dtype: "float32", values: Array.from({ length: M * K }, () => int(r, -8, 8) / 2) };
  const q = Array.from({ length: N * K }, () => (bits === 4 ? int(r, -8, 7) : int(r, -20, 20)));
  const wv = bits === 8 ? q : Array.from({ length: (N * K) / 2 }, (_, j) => ((q[2 * j] + 8) & 15) | (((q[2 * j + 1] + 8) & 15) << 4));
  const w: Input = { name: `x${id}_w`, shape: bits === 8 ? [N, K] : [N, K / 2], dtype: bits === 8 ? "int8" : "uint8", values: wv };
  const G = K / g;
  const sc: Input = { name: `x${id}_s`, shape: [N, G], dtype: sd, values: Array.from({ length: N * G }, () => pick(r, [0.5, -0.25, 1, 2, -0.125, 0.0625])) };
  const expected: number[] = [];
  for (let i = 0; i < M; i++) for (let n = 0; n < N; n++) {
    let t = 0;
    for (let k = 0; k < K; k++) t += x.values[i * K + k] * q[n * K + k] * sc.values[n * G + Math.floor(k / g)];
    expected.push(t);
  }
  const opts = `{ bits: ${bits}, groupSize: ${g} }`;
  const tensorForm = r() < 0.6;
  if (tensorForm) {
    const withBias = r() < 0.5;
    const bias: Input = { name: `x${id}_b`, shape: [1, N], dtype: "float32", values: Array.from({ length: N }, () => int(r, -8, 8) / 4) };
    const mm = `pl.matmulQuant(${x.name}, ${w.name}, ${sc.name}, ${opts})`;
    return {
      id, kind: "matmulQuant", scopes: [`pl.assign(o${id}, ${withBias ? `pl.add(${mm}, ${bias.name})` : mm});`], inputs: withBias ? [x, w, sc, bias] : [x, w, sc],
      out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) },
      expected: withBias ? expected.map((v, k) => v + bias.values[k % N]) : expected, tol: { rtol: 1e-6, atol: 1e-6 },
      what: `matmulQuant int${bits} g${g} ${sd} scales [${M},${K}] x [${N},${K}]${withBias ? " + bias" : ""} (tensor)`, ops: withBias ? ["assign", "matmulQuant", "add"] : ["assign", "matmulQuant"],
    };
  }
  const body = `pl.store(pl.matmulQuant(pl.load(${x.name}, [0, 0], [${M}, ${K}]), pl.load(${w.name}, [0, 0], [${w.shape.join(", ")}]), pl.load(${sc.name}, [0, 0], [${N}, ${G}]), ${opts}), [0, 0], o${id});`;
  return {
    id, kind: "matmulQuant", scopes: [body], inputs: [x, w, sc], out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) },
    expected, tol: { rtol: 1e-6, atol: 1e-6 }, what: `matmulQuant int${bits} g${g} ${sd} scales [${M},${K}] x [${N},${K}] (tile)`, ops: ["load", "store", "matmulQuant"],
  };
}

/** Two scopes through an intermediate tensor made in the orchestration (createTensor): the second task depends on the first. */
function twoStageCase(r: Rand, id: number): Case {
  const shape = [int(r, 1, 48), int(r, 1, 96)];
  const n = shape[0] * shape[1];
  const d = pick(r, ELEM_DTYPES);
  const inputs: Input[] = [];
  const g1 = tensorGen(r, id, shape, inputs, shape);
  const e1 = genExpr(g1, int(r, 1, 3), d);
  if (!inputs.length) g1.newLeaf(d);
  const tmp: Input = { name: `tmp${id}`, shape, dtype: d, values: Array.from({ length: n }, (_, i) => e1.eval(i)) };
  const g2 = tensorGen(r, id, shape, inputs, shape);
  g2.leaves = [...inputs, tmp];
  const e2 = genExpr(g2, int(r, 1, 3), d);
  const src2 = e2.src.includes(tmp.name) ? e2.src : `pl.add(${e2.src}, ${tmp.name})`;
  const ev2 = e2.src.includes(tmp.name) ? e2.eval : (i: number) => store(e2.eval(i) + tmp.values[i], d);
  inputs.splice(0, inputs.length, ...inputs.filter((x) => x !== tmp));
  const expected = Array.from({ length: n }, (_, i) => ev2(i));
  return {
    id, kind: "twoStage", pre: `const ${tmp.name} = pl.createTensor([${shape.join(", ")}], ${DT[d]});`,
    scopes: [`pl.assign(${tmp.name}, ${e1.src});`, `pl.assign(o${id}, ${src2});`], inputs,
    out: { name: `o${id}`, shape, dtype: d, init: new Array(n).fill(0) }, expected, tol: tolOf(d, e1.transcendental || e2.transcendental),
    what: `two stages through createTensor ${d}[${shape}]: ${tmp.name} = ${e1.src}; o = ${src2}`, ops: ["createTensor", "assign", "add", ...g1.used, ...g2.used],
  };
}

/** A row loop over a dynamic dimension inside one kernel: row bands of TR rows, the last one partial (a run-time validShape). */
function dynLoopCase(r: Rand, id: number): Case {
  const R = int(r, 1, 50), N = int(r, 1, 64), TR = pick(r, [1, 4, 8, 16]);
  const d = pick(r, ["float32", "int16", "float16", "int32"] as DType[]);
  const inputs: Input[] = [];
  const g: Gen = {
    r, level: "tile", leaves: inputs, ref: (x) => `t_${x.name}`, used: new Set(["load", "store", "dim", "scalar.min", "scalar.sub"]), fullShape: null, ncols: N,
    newLeaf: (dd) => { const inp = { name: `x${id}_${inputs.length}`, shape: [R, N], dtype: dd, values: randomValues(r, R * N, dd) }; inputs.push(inp); return inp; },
  };
  const e = genExpr(g, int(r, 1, 2), d);
  if (!inputs.length) g.newLeaf(d);
  const loads = inputs.map((x) => `const t_${x.name} = pl.load(${x.name}, [i, 0], [${TR}, ${N}], { validShape: [Math.min(${TR}, pl.dim(${inputs[0].name}, 0) - i), ${N}] });`).join("\n      ");
  const body = `for (const i of pl.range(0, pl.dim(${inputs[0].name}, 0), ${TR})) {
      ${loads}
      pl.store(${e.src}, [i, 0], o${id});
    }`;
  const expected = Array.from({ length: R * N }, (_, k) => e.eval(k));
  return {
    id, kind: "dynLoop", scopes: [body], inputs, out: { name: `o${id}`, shape: [R, N], dtype: d, init: new Array(R * N).fill(0) }, expected,
    tol: tolOf(d, e.transcendental), what: `row loop over a dynamic dimension ${d}[R${id}=${R},${N}] band ${TR}: ${e.src}`, dynRows: true, ops: [...g.used],
  };
}

/**
 * gather (an embedding lookup): rows (axis 0, ids [N, 1]) or columns (axis 1, ids [1, N]) of a
 * table at int32 / int64 indices, the tensor form (alone, or plus another tensor in the same
 * expression: each tile reads its rows straight from the table) or the tile form.
 */
function gatherCase(r: Rand, id: number): Case {
  const axis = r() < 0.7 ? 0 : 1;
  const V = int(r, 1, 60), W = int(r, 1, 100), N = int(r, 1, 70);
  const d = pick(r, ["float32", "float32", "int32", "float16"] as DType[]);
  const idD = pick(r, ["int32", "int64"] as DType[]);
  const table: Input = { name: `x${id}_t`, shape: axis === 0 ? [V, W] : [W, V], dtype: d, values: randomValues(r, V * W, d === "int32" ? "int16" : d) };
  const idx = Array.from({ length: N }, () => (r() < 0.2 ? pick(r, [0, V - 1]) : int(r, 0, V - 1)));
  const ids: Input = { name: `x${id}_i`, shape: axis === 0 ? [N, 1] : [1, N], dtype: idD, values: idx };
  const outShape = axis === 0 ? [N, W] : [W, N];
  const at = (k: number) => {
    const i = Math.floor(k / outShape[1]), j = k % outShape[1];
    return axis === 0 ? table.values[idx[i] * W + j] : table.values[i * V + idx[j]];
  };
  const inputs = [table, ids];
  let body: string, expected: number[], ops: string[];
  const form = r();
  if (form < 0.3) {
    body = `pl.store(pl.gather(pl.load(${table.name}, [0, 0], [${table.shape}]), pl.load(${ids.name}, [0, 0], [${ids.shape}])${axis ? ", 1" : ""}), [0, 0], o${id});`;
    expected = Array.from({ length: N * W }, (_, k) => at(k));
    ops = ["load", "store", "gather"];
  } else if (form < 0.6) {
    const x: Input = { name: `x${id}_x`, shape: outShape, dtype: d, values: randomValues(r, N * W, d === "int32" ? "int16" : d) };
    inputs.push(x);
    body = `pl.assign(o${id}, pl.add(pl.gather(${table.name}, ${ids.name}${axis ? ", 1" : ""}), ${x.name}));`;
    expected = Array.from({ length: N * W }, (_, k) => store(at(k) + x.values[k], d));
    ops = ["assign", "gather", "add"];
  } else if (form < 0.8) {
    body = `pl.assign(o${id}, pl.gather(${table.name}, ${ids.name}${axis ? ", 1" : ""}));`;
    expected = Array.from({ length: N * W }, (_, k) => at(k));
    ops = ["assign", "gather"];
  } else {
    // the tile op a tensor-level gather becomes, written directly: a [N, w] (axis 0) or [w, N]
    // (axis 1) window at offset c0 along the other axis, with a partial valid region (the pad
    // is not stored: the output keeps its zeros there)
    const w = int(r, 1, W), c0 = int(r, 0, W - w);
    const nv = r() < 0.5 ? N : int(r, 1, N), wv = r() < 0.5 ? w : int(r, 1, w);
    const shape = axis === 0 ? [N, w] : [w, N], valid = axis === 0 ? [nv, wv] : [wv, nv];
    const partial = nv < N || wv < w;
    body = `pl.store(pl.gatherLoad(${table.name}, pl.load(${ids.name}, [0, 0], [${ids.shape}]), ${c0}, [${shape}]${axis ? ", { axis: 1" : partial ? ", {" : ""}${partial ? `${axis ? "," : ""} validShape: [${valid}]` : ""}${axis || partial ? " }" : ""}), [0, 0], o${id});`;
    expected = Array.from({ length: N * w }, (_, k) => {
      const i = Math.floor(k / shape[1]), j = k % shape[1];
      if (i >= valid[0] || j >= valid[1]) return 0;
      return axis === 0 ? table.values[idx[i] * W + c0 + j] : table.values[(c0 + i) * V + idx[j]];
    });
    ops = ["load", "store", "gatherLoad"];
    return {
      id, kind: "gather", scopes: [body], inputs, out: { name: `o${id}`, shape, dtype: d, init: new Array(N * w).fill(0) }, expected,
      tol: isFloat(d) ? floatTol(d, false) : null, what: `gatherLoad ${d}[${table.shape}] at ${idD}[${ids.shape}] axis ${axis}: ${body}`, ops,
    };
  }
  return {
    id, kind: "gather", scopes: [body], inputs, out: { name: `o${id}`, shape: outShape, dtype: d, init: new Array(N * W).fill(0) }, expected,
    tol: isFloat(d) ? floatTol(d, false) : null, what: `gather ${d}[${table.shape}] at ${idD}[${ids.shape}] axis ${axis}: ${body}`, ops,
  };
}

/**
 * iota masks: sel(cmp(iota(s, a1), iota(s, a2) + off, mode), x, c) on a tensor of [M, N]
 * (half with a dynamic first dimension: the iota's shape names it), or an iota tile cast to float.
 */
function iotaCase(r: Rand, id: number): Case {
  const M = int(r, 1, 45), N = int(r, 1, 300);
  const x: Input = { name: `x${id}_0`, shape: [M, N], dtype: "float32", values: randomValues(r, M * N, "float32") };
  const dynRows = r() < 0.5;
  const a1 = int(r, 0, 1), a2 = int(r, 0, 1), off = int(r, -5, 5), mode = pick(r, ["lt", "le", "gt", "ge", "eq", "ne"] as const), c = pick(r, [-1e9, 0, 2.5]);
  const rows = dynRows ? JSON.stringify(`R${id}`) : String(M);
  const cmpOf = (p: number, q: number) => (mode === "lt" ? p < q : mode === "le" ? p <= q : mode === "gt" ? p > q : mode === "ge" ? p >= q : mode === "eq" ? p === q : p !== q);
  if (!dynRows && r() < 0.3) {
    const body = `pl.store(pl.cast(pl.iota([${M}, ${N}], ${a1}, pl.INT32), pl.FP32), [0, 0], o${id});`;
    return {
      id, kind: "iota", scopes: [body], inputs: [x], out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) },
      expected: Array.from({ length: M * N }, (_, k) => (a1 === 0 ? Math.floor(k / N) : k % N)), tol: null, what: `iota tile [${M}, ${N}] axis ${a1}`, ops: ["store", "cast", "iota"],
    };
  }
  const body = `pl.assign(o${id}, pl.sel(pl.cmp(pl.iota([${rows}, ${N}], ${a1}, pl.INT32), pl.add(pl.iota([${rows}, ${N}], ${a2}, pl.INT32), ${off}), "${mode}"), ${x.name}, ${lit(c, "float32")}));`;
  const expected = Array.from({ length: M * N }, (_, k) => {
    const ix = [Math.floor(k / N), k % N];
    return cmpOf(ix[a1], ix[a2] + off) ? x.values[k] : fround(c);
  });
  return {
    id, kind: "iota", scopes: [body], inputs: [x], out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) }, expected,
    tol: null, what: `iota mask [${dynRows ? `R${id}=` : ""}${M}, ${N}]: ${body}`, dynRows, ops: ["assign", "sel", "cmp", "iota", "add"],
  };
}

/**
 * A slice of run-time extent: the [pl.dim(x, 0), w] column window at c0 of a tensor with a
 * dynamic row count, scaled, or centred by its column maxima (a column reduction down the
 * run-time height: reduced in blocks), written to a [R, w] output.
 */
function dynSliceCase(r: Rand, id: number): Case {
  const M = int(r, 1, 80), N = int(r, 2, 120);
  const w = int(r, 1, N), c0 = int(r, 0, N - w);
  const x: Input = { name: `x${id}_0`, shape: [M, N], dtype: "float32", values: randomValues(r, M * N, "float32") };
  const win = (i: number, j: number) => x.values[i * N + c0 + j];
  const centred = r() < 0.5;
  const colMax = Array.from({ length: w }, (_, j) => { let m = -Infinity; for (let i = 0; i < M; i++) m = Math.max(m, win(i, j)); return m; });
  const slice = `pl.slice(${x.name}, [pl.dim(${x.name}, 0), ${w}], [0, ${c0}])`;
  // half of them check the window first themselves (checkWindow: what TensorToTile emits for the slice)
  const check = r() < 0.5 ? `pl.checkWindow(${x.name}, [pl.dim(${x.name}, 0), ${w}], [0, ${c0}]);\n    ` : "";
  const body = check + (centred
    ? `const win = ${slice};
    pl.assign(o${id}, pl.colExpandSub(win, pl.colMax(win)));`
    : `pl.assign(o${id}, pl.mul(${slice}, 3.0));`);
  const expected = Array.from({ length: M * w }, (_, k) => {
    const i = Math.floor(k / w), j = k % w;
    return centred ? fround(win(i, j) - colMax[j]) : fround(win(i, j) * 3);
  });
  return {
    id, kind: "dynSlice", scopes: [body], inputs: [x], out: { name: `o${id}`, shape: [M, w], dtype: "float32", init: new Array(M * w).fill(0) }, expected,
    tol: null, what: `dynamic slice [R${id}=${M}, ${N}] -> [R, ${w}] at column ${c0}${centred ? " centred by colMax" : " * 3"}`, dynRows: true,
    ops: [...(centred ? ["assign", "slice", "dim", "colExpandSub", "colMax"] : ["assign", "slice", "dim", "mul"]), ...(check ? ["checkWindow"] : [])],
  };
}


/**
 * The case kinds and how often each is drawn (a kind twice in the list is drawn twice as
 * often). A new kind: a function (r, id) => Case that lists the registry ops it uses in
 * `ops`, added here; coverage.ts then names the ops that still have no generator.
 */
export const CASE_KINDS: readonly ((r: Rand, id: number) => Case)[] = [
  elementwiseCase, elementwiseCase, elementwiseCase, tileCase, tileCase, reductionCase, reductionCase, broadcastCase, shapeCase, loopCase,
  scalarCase, rowReductionExprCase, matmulEpilogueCase, matmulCase, twoStageCase, dynLoopCase, gatherCase, iotaCase, dynSliceCase,
  matmulQuantCase,
];

// ------------------------------------------------------------------ batches
export interface Batch { seed: number; name: string; cases: Case[]; source: string }

export function genBatch(seed: number, size: number, kinds?: readonly string[]): Batch {
  const r = rng(seed);
  // kinds: only the case kinds named (their function's name less "Case": "gather", "iota", ...)
  const from = kinds ? CASE_KINDS.filter((k) => kinds.includes(k.name.replace(/Case$/, ""))) : CASE_KINDS;
  if (!from.length) throw new Error(`no case kind named ${kinds!.join(", ")}`);
  const cases = Array.from({ length: size }, (_, id) => pick(r, from)(r, id));
  const name = `fuzz_${seed >>> 0}`;
  const params: string[] = [];
  // a dynamic first dimension: pl.Tensor<["R<id>", N], dtype>
  const ann = (c: Case, shape: readonly number[], d: DType) => (c.dynRows ? `pl.Tensor<[${JSON.stringify(`R${c.id}`)}, ${shape.slice(1).join(", ")}], ${DT[d]}>` : "pl.Tensor");
  for (const c of cases) {
    for (const i of c.inputs) params.push(`${i.name}: ${ann(c, i.shape, i.dtype)}`);
    params.push(`${c.out.name}: ${c.out.inout ? "pl.InOut" : "pl.Out"}<${ann(c, c.out.shape, c.out.dtype)}>`);
    for (const s of c.scalars ?? []) params.push(`${s.name}: pl.Scalar<pl.INT64>`);
  }
  const scopes = cases.map((c) => `${c.pre ? `  ${c.pre}\n` : ""}${c.scopes.map((s) => `  pl.at(pl.Level.CORE_GROUP, () => {\n    ${s}\n  });`).join("\n")}`).join("\n");
  const source = `// generated by test/fuzz/differential.ts, seed ${seed}
import { pl } from ${JSON.stringify(SRC_INDEX)};
export const kernel = pl.jit(function ${name}(${params.join(", ")}) {
${scopes}
  return ${cases[0].out.name};
});
`;
  return { seed, name, cases, source };
}

export interface Mismatch { seed: number; platform: string; what: string; index: number; got: number; want: number; source: string }

function close(got: number, want: number, tol: { rtol: number; atol: number } | null, scale: number): boolean {
  if (Number.isNaN(want)) return Number.isNaN(got);
  if (!tol) return got === want;
  if (Number.isNaN(got)) return false;
  if (!Number.isFinite(want) || !Number.isFinite(got)) {
    return got === want || (Math.abs(got) > 1e30 && Math.abs(want) > 1e30 && Math.sign(got) === Math.sign(want));
  }
  return Math.abs(got - want) <= tol.atol * Math.max(1, scale * 1e-3) + tol.rtol * Math.abs(want);
}

let workDir: string | null = null;
/** A temporary directory for generated modules and artifacts (removed by cleanupFuzz). */
function work(): string {
  if (!workDir) {
    workDir = mkdtempSync(join(tmpdir(), "tspto-fuzz-"));
    writeFileSync(join(workDir, "package.json"), JSON.stringify({ type: "module" }));
  }
  return workDir;
}
export function cleanupFuzz(): void {
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  workDir = null;
}

const workers = new Map<string, ChipWorker>();
const workerFor = (platform: string) => {
  let w = workers.get(platform);
  if (!w || w.closed) { w = new ChipWorker(new RunConfig({ platform: platform as "cpu" })); workers.set(platform, w); }
  return w;
};
export function closeFuzzWorkers(): void {
  for (const w of workers.values()) w.close();
  workers.clear();
}

/** Builds `lowered` for cpu with $TSPTO_CXX_OPT set to `opt` (restored after). */
function compileAt(lowered: Parameters<typeof ir.compile>[0], outputDir: string, opt: string) {
  const saved = process.env.TSPTO_CXX_OPT;
  process.env.TSPTO_CXX_OPT = opt;
  try { return ir.compile(lowered, { platform: "cpu", outputDir }); } finally {
    if (saved === undefined) delete process.env.TSPTO_CXX_OPT; else process.env.TSPTO_CXX_OPT = saved;
  }
}

/**
 * The first element where x and y differ in their bits, or -1 — except that two NaNs are the
 * same value whatever their sign and payload: IEEE 754 leaves which NaN an operation of two NaNs
 * returns unspecified (x86 returns the first operand's), and the optimizer may commute such an
 * operation (a * b as b * a); docs/semantics.md says so.
 */
const sameBits = (x: HostTensor, y: HostTensor): number => {
  const a = new Uint8Array(x.data.buffer, x.data.byteOffset, x.data.byteLength), b = new Uint8Array(y.data.buffer, y.data.byteOffset, y.data.byteLength);
  const w = x.data.BYTES_PER_ELEMENT;
  const isFloat = x.dtype === "float32" || x.dtype === "float16" || x.dtype === "bfloat16";
  const vx = isFloat ? readBack(x) : null, vy = isFloat ? readBack(y) : null;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    const e = Math.floor(i / w);
    if (vx && Number.isNaN(vx[e]) && Number.isNaN(vy![e])) { i = (e + 1) * w - 1; continue; }
    return e;
  }
  return -1;
};

export interface BatchOptions {
  /** A self-check that the comparison can fail: every case's first expected value is off. */
  corrupt?: boolean;
  /** Also build the cpu program at -O0 and compare it bit for bit with the production build (platform "cpu -O0" in mismatches). */
  o0?: boolean;
  /** Draw only these case kinds (genBatch's kinds). */
  kinds?: readonly string[];
}

/** Generates, compiles (cpu + interp) and runs one batch; returns the mismatches. */
export async function runBatch(seed: number, size: number, platforms: readonly string[] = ["cpu", "interp"], opts: BatchOptions = {}): Promise<{ cases: number; mismatches: Mismatch[]; ops: Set<string> }> {
  const b = genBatch(seed, size, opts.kinds);
  if (opts.corrupt) for (const c of b.cases) c.expected[0] = Number.isNaN(c.expected[0]) ? 1 : c.expected[0] + 1 + Math.abs(c.expected[0]);
  const dir = join(work(), b.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "kernel.ts");
  writeFileSync(file, b.source);
  const mod = (await import(pathToFileURL(file).href)) as { kernel: { lower: (...a: unknown[]) => unknown } };
  const hostArgs = (): unknown[] => {
    const args: unknown[] = [];
    for (const c of b.cases) {
      for (const i of c.inputs) args.push(hostTensor(i.values, i.shape, i.dtype));
      args.push(hostTensor(c.out.init, c.out.shape, c.out.dtype));
      for (const s of c.scalars ?? []) args.push(s.value);
    }
    return args;
  };
  const outIndex: number[] = [];
  { let k = 0; for (const c of b.cases) { k += c.inputs.length; outIndex.push(k); k += 1 + (c.scalars?.length ?? 0); } }
  const lowered = mod.kernel.lower(...hostArgs()) as Parameters<typeof ir.compile>[0];
  const mismatches: Mismatch[] = [];
  const runOn = (compiled: ReturnType<typeof ir.compile>, platform: string) => {
    const args = hostArgs();
    workerFor(platform).run(compiled, ...args);
    return args;
  };
  let cpuArgs: unknown[] | null = null;
  for (const platform of platforms) {
    // (off the event loop: a batch of kernels is seconds of g++)
    const compiled = await ir.compileAsync(lowered, { platform: platform as "cpu", outputDir: join(dir, platform) });
    const args = runOn(compiled, platform);
    if (platform === "cpu") cpuArgs = args;
    b.cases.forEach((c, ci) => {
      const got = readBack(args[outIndex[ci]] as HostTensor);
      const scale = c.expected.reduce((m, v) => (Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m), 0);
      for (let i = 0; i < got.length; i++) {
        if (!close(got[i], c.expected[i], c.tol, scale)) {
          mismatches.push({ seed, platform, what: `case ${c.id}: ${c.what}`, index: i, got: got[i], want: c.expected[i], source: file });
          break;
        }
      }
    });
  }
  if (opts.o0 && cpuArgs) {
    const args = runOn(compileAt(lowered, join(dir, "cpu-O0"), "-O0"), "cpu");
    b.cases.forEach((c, ci) => {
      const at = sameBits(args[outIndex[ci]] as HostTensor, cpuArgs![outIndex[ci]] as HostTensor);
      if (at >= 0) {
        const g0 = readBack(args[outIndex[ci]] as HostTensor)[at], g3 = readBack(cpuArgs![outIndex[ci]] as HostTensor)[at];
        mismatches.push({ seed, platform: "cpu -O0 vs -O3", what: `case ${c.id}: ${c.what}`, index: at, got: g3, want: g0, source: file });
      }
    });
  }
  const ops = new Set<string>();
  for (const c of b.cases) for (const o of c.ops) ops.add(o);
  return { cases: b.cases.length, mismatches, ops };
}

/** The registry ops the cases of `batches` batches (from `seed`) use, and the case kinds drawn; nothing is compiled. */
export function generatedOps(seed: number, batches: number, size: number): { ops: Map<string, number>; kinds: Map<string, number> } {
  const ops = new Map<string, number>(), kinds = new Map<string, number>();
  for (let k = 0; k < batches; k++) {
    for (const c of genBatch(seed + k, size).cases) {
      kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
      for (const o of c.ops) ops.set(o, (ops.get(o) ?? 0) + 1);
    }
  }
  return { ops, kinds };
}

// Differential fuzzer: seeded random kernels, written as kernel source (a .ts module with one
// pl.jit entry holding many cases, one pl.at scope each, so one C++ compile covers a batch),
// run on every target (cpu, interp) and compared with an independent reference written here
// (not the interpreter: its own arithmetic, saturation, casts and 16-bit float rounding).
//
// Case kinds: tensor-level elementwise chains (every dtype, casts, scalar operands) on shapes
// that are not tile multiples; tile-level reductions (row/col sum/max/min), with partial tiles
// (validShape) padded by fillpad; broadcasts (rowExpand*/colExpand*); loops with
// loop-carried tiles; gather (tile and tensor forms, int32/int64 indices), iota masks, slices
// of run-time extent (with a column reduction down the run-time height).
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

// ------------------------------------------------------------------ cases
interface Input { name: string; shape: number[]; dtype: DType; values: number[] }
interface Case {
  id: number;
  kind: string;
  /** The pl.at body (kernel source). */
  body: string;
  inputs: Input[];
  out: { name: string; shape: number[]; dtype: DType; init: number[] };
  expected: number[];
  /** Float tolerance class: exact for integers. */
  tol: { rtol: number; atol: number } | null;
  /** A description for failure reports. */
  what: string;
  /** The tensors' first dimension is a dynamic dimension (annotated with a name, R<id>). */
  dynRows?: boolean;
}

const DT: Record<DType, string> = {
  float32: "pl.FP32", float16: "pl.FP16", bfloat16: "pl.BF16", int8: "pl.INT8", int16: "pl.INT16",
  int32: "pl.INT32", int64: "pl.INT64", uint8: "pl.UINT8", bool: "pl.BOOL",
};
const ELEM_DTYPES: DType[] = ["float32", "float32", "float16", "bfloat16", "int8", "int16", "int32", "int32", "int64", "uint8"];

const lit = (v: number, d: DType) => (isFloat(d) ? (Number.isInteger(v) ? `${v}.0` : String(v)) : String(v));

interface Expr { src: string; dtype: DType; eval: (i: number) => number; transcendental: boolean }

/** A random elementwise expression over same-shape inputs. */
function genExpr(r: Rand, depth: number, d: DType, leaves: Input[], newLeaf: (d: DType) => Input): Expr {
  const leafOf = (dd: DType): Expr => {
    const cands = leaves.filter((l) => l.dtype === dd);
    const inp = cands.length && r() < 0.6 ? pick(r, cands) : newLeaf(dd);
    return { src: inp.name, dtype: dd, eval: (i) => inp.values[i], transcendental: false };
  };
  if (depth <= 0 || r() < 0.2) {
    // a leaf, or a cast of a leaf of another dtype (float -> int only directly from a leaf)
    if (r() < 0.25) {
      const from = pick(r, ELEM_DTYPES.filter((x) => x !== d));
      const mode = pick(r, ["round", "rint", "floor", "ceil", "trunc"] as const);
      const x = leafOf(from);
      return { src: `pl.cast(${x.src}, ${DT[d]}, "${mode}")`, dtype: d, eval: (i) => store(x.eval(i), d, mode), transcendental: false };
    }
    return leafOf(d);
  }
  const float = isFloat(d);
  const choice = r();
  if (choice < 0.55) {
    const ops = d === "int64" ? ["add", "sub", "div", "maximum", "minimum"] : ["add", "sub", "mul", "div", "maximum", "minimum"];
    const op = pick(r, ops);
    const a = genExpr(r, depth - 1, d, leaves, newLeaf);
    let b: Expr;
    if (r() < 0.3) {
      const v = float ? pick(r, [0.5, 2, -1.5, 3, 0.25]) : op === "div" ? pick(r, [0, 1, -1, 2, 3, 7]) : d === "uint8" ? int(r, 0, 9) : int(r, -9, 9);
      b = { src: lit(v, d), dtype: d, eval: () => v, transcendental: false };
    } else {
      b = genExpr(r, depth - 1, d, leaves, newLeaf);
    }
    const f = (x: number, y: number): number => {
      switch (op) {
        case "add": return x + y;
        case "sub": return x - y;
        case "mul": return x * y;
        case "div": return float ? x / y : y === 0 ? 0 : Math.trunc(x / y);
        case "maximum": return Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.max(x, y);
        default: return Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.min(x, y);
      }
    };
    return {
      src: `pl.${op}(${a.src}, ${b.src})`, dtype: d, eval: (i) => store(f(a.eval(i), b.eval(i)), d),
      transcendental: a.transcendental || b.transcendental || (float && op === "div"),
    };
  }
  if (choice < 0.85 || !float) {
    const op = pick(r, ["neg", "abs", "relu"]);
    const a = genExpr(r, depth - 1, d, leaves, newLeaf);
    const f = (x: number) => (op === "neg" ? -x : op === "abs" ? Math.abs(x) : x > 0 ? x : 0);
    return { src: `pl.${op}(${a.src})`, dtype: d, eval: (i) => store(f(a.eval(i)), d), transcendental: a.transcendental };
  }
  const op = pick(r, ["exp", "log", "sqrt", "rsqrt", "recip"]);
  const a = genExpr(r, depth - 1, d, leaves, newLeaf);
  // keep exp in range: exp of a small value
  const inner = op === "exp" ? `pl.mul(${a.src}, ${lit(0.25, d)})` : a.src;
  const ia = op === "exp" ? (i: number) => store(a.eval(i) * 0.25, d) : a.eval;
  const f = (x: number) => {
    switch (op) {
      case "exp": return Math.exp(x);
      case "log": return Math.log(x);
      case "sqrt": return Math.sqrt(x);
      case "rsqrt": return 1 / fround(Math.sqrt(x));
      default: return 1 / x;
    }
  };
  return { src: `pl.${op}(${inner})`, dtype: d, eval: (i) => store(f(ia(i)), d), transcendental: true };
}

function floatTol(d: DType, transcendental: boolean): { rtol: number; atol: number } {
  if (d === "float16") return { rtol: 2e-2, atol: 2e-2 };
  if (d === "bfloat16") return { rtol: 6e-2, atol: 6e-2 };
  return transcendental ? { rtol: 2e-4, atol: 1e-4 } : { rtol: 1e-5, atol: 1e-5 };
}

function elementwiseCase(r: Rand, id: number): Case {
  const shape = [int(r, 1, 70), int(r, 1, 140)];
  const n = shape[0] * shape[1];
  const d = pick(r, ELEM_DTYPES);
  const inputs: Input[] = [];
  const newLeaf = (dd: DType): Input => {
    const inp = { name: `x${id}_${inputs.length}`, shape, dtype: dd, values: randomValues(r, n, dd) };
    inputs.push(inp);
    return inp;
  };
  let e = genExpr(r, int(r, 1, 4), d, inputs, newLeaf);
  if (e.src === inputs[0]?.name) e = genExpr(r, 2, d, inputs, newLeaf); // not a bare copy only
  let outD = d;
  let expected = Array.from({ length: n }, (_, i) => e.eval(i));
  let body = `pl.assign(o${id}, ${e.src});`;
  if (r() < 0.08) { // a final cast to bool
    outD = "bool";
    expected = expected.map((v) => (v !== 0 ? 1 : 0));
    body = `pl.assign(o${id}, pl.cast(${e.src}, pl.BOOL));`;
  }
  const tol = isFloat(outD) ? floatTol(outD, e.transcendental) : null;
  const dynRows = r() < 0.5; // half of them with a dynamic first dimension (run-time trip counts, row-by-row tail)
  return {
    id, kind: "elementwise", body, inputs, out: { name: `o${id}`, shape, dtype: outD, init: new Array(n).fill(0) }, expected, tol,
    what: `elementwise ${d}[${dynRows ? `R${id}=` : ""}${shape}] ${body}`, dynRows,
  };
}

const RED_DTYPES: DType[] = ["float32", "float32", "int32", "int16", "float16"];

function reductionCase(r: Rand, id: number): Case {
  const M = int(r, 1, 40), N = int(r, 1, 72);
  const d = pick(r, RED_DTYPES);
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, d === "int32" ? "int16" : d) };
  const kind = pick(r, ["rowSum", "rowMax", "rowMin", "colSum", "colMax", "colMin"] as const);
  const partial = r() < 0.4;
  const vm = partial ? int(r, 1, M) : M, vn = partial ? int(r, 1, N) : N;
  const isMax = kind.endsWith("Max"), isMin = kind.endsWith("Min");
  const pad = isMax ? "min" : isMin ? "max" : "zero";
  const lowest = isFloat(d) ? (d === "float16" ? -65504 : -3.4028234663852886e38) : INT_RANGE[d][0];
  const highest = isFloat(d) ? (d === "float16" ? 65504 : 3.4028234663852886e38) : INT_RANGE[d][1];
  const padV = pad === "min" ? lowest : pad === "max" ? highest : 0;
  const x = (i: number, j: number) => (i < vm && j < vn ? a.values[i * N + j] : padV);
  const rowWise = kind.startsWith("row");
  const outShape = rowWise ? [M, 1] : [1, N];
  const expected: number[] = [];
  const combine = (vals: number[]) => {
    if (kind.endsWith("Sum")) return store(vals.reduce((s, v) => s + v, 0), d);
    if (vals.some(Number.isNaN)) return NaN;
    return isMax ? Math.max(...vals) : Math.min(...vals);
  };
  if (rowWise) for (let i = 0; i < M; i++) expected.push(combine(Array.from({ length: N }, (_, j) => x(i, j))));
  else for (let j = 0; j < N; j++) expected.push(combine(Array.from({ length: M }, (_, i) => x(i, j))));
  const load = partial ? `pl.fillpad(pl.load(${a.name}, [0, 0], [${M}, ${N}], { validShape: [${vm}, ${vn}] }), "${pad}")` : `pl.load(${a.name}, [0, 0], [${M}, ${N}])`;
  const needsTmp = rowWise;
  const call = needsTmp ? `pl.${kind}(t, pl.createTile([${M}, ${N}], ${DT[d]}))` : `pl.${kind}(t)`;
  const body = `const t = ${load};\n    pl.store(${call}, [0, 0], o${id});`;
  return {
    id, kind: "reduction", body, inputs: [a], out: { name: `o${id}`, shape: outShape, dtype: d, init: new Array(outShape[0] * outShape[1]).fill(0) },
    expected, tol: isFloat(d) ? (d === "float16" ? { rtol: 2e-2, atol: 5e-2 } : { rtol: 1e-5, atol: 1e-4 }) : null,
    what: `reduction ${kind} ${d}[${M},${N}] valid [${vm},${vn}] pad ${pad}`,
  };
}

function broadcastCase(r: Rand, id: number): Case {
  const M = int(r, 1, 40), N = int(r, 1, 72);
  const d = pick(r, ["float32", "float32", "int32", "float16"] as DType[]);
  const srcD = d === "int32" ? "int16" : d;
  const a: Input = { name: `x${id}_0`, shape: [M, N], dtype: d, values: randomValues(r, M * N, srcD) };
  const row = r() < 0.5;
  const v: Input = { name: `x${id}_1`, shape: row ? [M, 1] : [1, N], dtype: d, values: randomValues(r, row ? M : N, srcD) };
  const op = pick(r, ["Add", "Sub", "Mul", "Div", ""] as const);
  const fname = `${row ? "rowExpand" : "colExpand"}${op}`;
  const f = (x: number, y: number) => {
    switch (op) {
      case "Add": return x + y;
      case "Sub": return x - y;
      case "Mul": return x * y;
      case "Div": return isFloat(d) ? x / y : y === 0 ? 0 : Math.trunc(x / y);
      default: return y;
    }
  };
  const expected: number[] = [];
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) expected.push(store(f(a.values[i * N + j], v.values[row ? i : j]), d));
  const body = `pl.store(pl.${fname}(pl.load(${a.name}, [0, 0], [${M}, ${N}]), pl.load(${v.name}, [0, 0], [${v.shape[0]}, ${v.shape[1]}])), [0, 0], o${id});`;
  return {
    id, kind: "broadcast", body, inputs: [a, v], out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) },
    expected, tol: isFloat(d) ? floatTol(d, op === "Div") : null, what: `broadcast ${fname} ${d}[${M},${N}]`,
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
    id, kind: "loop", body, inputs: [a, b], out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) },
    expected, tol: isFloat(d) ? { rtol: 1e-5, atol: 1e-4 } : null, what: `loop ${d}[${M},${N}] x${K} c=${c}`,
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
  const newLeaf = (dd: DType): Input => {
    const inp = { name: `x${id}_${inputs.length}`, shape, dtype: dd, values: randomValues(r, M * N, dd) };
    inputs.push(inp);
    return inp;
  };
  const g = genExpr(r, int(r, 0, 2), d, inputs, newLeaf);
  const axis = r() < 0.7 ? "row" : "col";  // a column reduction: tiles of whole columns (static rows)
  const kind = `${axis}${pick(r, g.transcendental ? ["Max", "Min"] : ["Sum", "Max", "Min"])}`;
  const [lines, along] = axis === "row" ? [M, N] : [N, M];
  const at = (line: number, q: number) => (axis === "row" ? line * N + q : q * N + line);
  const red = Array.from({ length: lines }, (_, i) => {
    const vals = Array.from({ length: along }, (_, q) => g.eval(at(i, q)));
    if (kind.endsWith("Sum")) return store(vals.reduce((s, v) => s + v, 0), d);
    if (vals.some(Number.isNaN)) return NaN;
    return kind.endsWith("Max") ? Math.max(...vals) : Math.min(...vals);
  });
  const f = genExpr(r, int(r, 0, 2), d, inputs, newLeaf);
  const op = pick(r, [`${axis}ExpandSub`, `${axis}ExpandAdd`, `${axis}ExpandMul`, "sub", "add", "mul"]);
  const fn = (x: number, y: number) => (op.endsWith("ub") ? x - y : op.endsWith("dd") ? x + y : x * y);
  const expected = Array.from({ length: M * N }, (_, k) => store(fn(f.eval(k), red[axis === "row" ? Math.floor(k / N) : k % N]), d));
  const body = `pl.assign(o${id}, pl.${op}(${f.src}, pl.${kind}(${g.src})));`;
  const dynRows = axis === "row" && r() < 0.5;
  return {
    id, kind: "rowReductionExpr", body, inputs, out: { name: `o${id}`, shape, dtype: d, init: new Array(M * N).fill(0) }, expected,
    tol: floatTol(d, f.transcendental || g.transcendental), what: `row reduction in an expression ${d}[${dynRows ? `R${id}=` : ""}${shape}] ${body}`, dynRows,
  };
}

/** A matmul under an elementwise epilogue (`pl.assign(o, op(matmul(a, b), f(x)))`), float32, static shapes. */
function matmulEpilogueCase(r: Rand, id: number): Case {
  const [M, K, N] = [int(r, 1, 40), int(r, 1, 40), int(r, 1, 40)];
  const d: DType = "float32";
  const a: Input = { name: `x${id}_a`, shape: [M, K], dtype: d, values: randomValues(r, M * K, d) };
  const b: Input = { name: `x${id}_b`, shape: [K, N], dtype: d, values: randomValues(r, K * N, d) };
  const inputs: Input[] = [a, b];
  const newLeaf = (dd: DType): Input => {
    const inp = { name: `x${id}_${inputs.length}`, shape: [M, N], dtype: dd, values: randomValues(r, M * N, dd) };
    inputs.push(inp);
    return inp;
  };
  const f = genExpr(r, int(r, 0, 2), d, inputs.slice(2), newLeaf);
  const op = pick(r, ["add", "sub", "mul", "maximum"] as const);
  const mm = Array.from({ length: M * N }, (_, k) => {
    const i = Math.floor(k / N), j = k % N;
    let t = 0;
    for (let q = 0; q < K; q++) t += a.values[i * K + q] * b.values[q * N + j];
    return store(t, d);
  });
  const fn = (x: number, y: number) => (op === "add" ? x + y : op === "sub" ? x - y : op === "mul" ? x * y : Number.isNaN(x) || Number.isNaN(y) ? NaN : Math.max(x, y));
  const expected = mm.map((v, k) => store(fn(v, f.eval(k)), d));
  const body = `pl.assign(o${id}, pl.${op}(pl.matmul(${a.name}, ${b.name}), ${f.src}));`;
  return {
    id, kind: "matmulEpilogue", body, inputs, out: { name: `o${id}`, shape: [M, N], dtype: d, init: new Array(M * N).fill(0) }, expected,
    tol: { rtol: 2e-4, atol: 2e-4 }, what: `matmul epilogue [${M},${K}]x[${K},${N}] ${body}`,
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
  let body: string, expected: number[];
  const form = r();
  if (form < 0.3) {
    body = `pl.store(pl.gather(pl.load(${table.name}, [0, 0], [${table.shape}]), pl.load(${ids.name}, [0, 0], [${ids.shape}])${axis ? ", 1" : ""}), [0, 0], o${id});`;
    expected = Array.from({ length: N * W }, (_, k) => at(k));
  } else if (form < 0.6) {
    const x: Input = { name: `x${id}_x`, shape: outShape, dtype: d, values: randomValues(r, N * W, d === "int32" ? "int16" : d) };
    inputs.push(x);
    body = `pl.assign(o${id}, pl.add(pl.gather(${table.name}, ${ids.name}${axis ? ", 1" : ""}), ${x.name}));`;
    expected = Array.from({ length: N * W }, (_, k) => store(at(k) + x.values[k], d));
  } else {
    body = `pl.assign(o${id}, pl.gather(${table.name}, ${ids.name}${axis ? ", 1" : ""}));`;
    expected = Array.from({ length: N * W }, (_, k) => at(k));
  }
  return {
    id, kind: "gather", body, inputs, out: { name: `o${id}`, shape: outShape, dtype: d, init: new Array(N * W).fill(0) }, expected,
    tol: isFloat(d) ? floatTol(d, false) : null, what: `gather ${d}[${table.shape}] at ${idD}[${ids.shape}] axis ${axis}: ${body}`,
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
      id, kind: "iota", body, inputs: [x], out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) },
      expected: Array.from({ length: M * N }, (_, k) => (a1 === 0 ? Math.floor(k / N) : k % N)), tol: null, what: `iota tile [${M}, ${N}] axis ${a1}`,
    };
  }
  const body = `pl.assign(o${id}, pl.sel(pl.cmp(pl.iota([${rows}, ${N}], ${a1}, pl.INT32), pl.add(pl.iota([${rows}, ${N}], ${a2}, pl.INT32), ${off}), "${mode}"), ${x.name}, ${lit(c, "float32")}));`;
  const expected = Array.from({ length: M * N }, (_, k) => {
    const ix = [Math.floor(k / N), k % N];
    return cmpOf(ix[a1], ix[a2] + off) ? x.values[k] : fround(c);
  });
  return {
    id, kind: "iota", body, inputs: [x], out: { name: `o${id}`, shape: [M, N], dtype: "float32", init: new Array(M * N).fill(0) }, expected,
    tol: null, what: `iota mask [${dynRows ? `R${id}=` : ""}${M}, ${N}]: ${body}`, dynRows,
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
  const body = centred
    ? `const win = ${slice};
    pl.assign(o${id}, pl.colExpandSub(win, pl.colMax(win)));`
    : `pl.assign(o${id}, pl.mul(${slice}, 3.0));`;
  const expected = Array.from({ length: M * w }, (_, k) => {
    const i = Math.floor(k / w), j = k % w;
    return centred ? fround(win(i, j) - colMax[j]) : fround(win(i, j) * 3);
  });
  return {
    id, kind: "dynSlice", body, inputs: [x], out: { name: `o${id}`, shape: [M, w], dtype: "float32", init: new Array(M * w).fill(0) }, expected,
    tol: null, what: `dynamic slice [R${id}=${M}, ${N}] -> [R, ${w}] at column ${c0}${centred ? " centred by colMax" : " * 3"}`, dynRows: true,
  };
}

const GENERATORS = [elementwiseCase, elementwiseCase, elementwiseCase, reductionCase, broadcastCase, loopCase, rowReductionExprCase, matmulEpilogueCase, gatherCase, iotaCase, dynSliceCase];

// ------------------------------------------------------------------ batches
export interface Batch { seed: number; name: string; cases: Case[]; source: string }

export function genBatch(seed: number, size: number): Batch {
  const r = rng(seed);
  const cases = Array.from({ length: size }, (_, id) => pick(r, GENERATORS)(r, id));
  const name = `fuzz_${seed >>> 0}`;
  const params: string[] = [];
  // a dynamic first dimension: pl.Tensor<["R<id>", N], dtype>
  const ann = (c: Case, shape: readonly number[], d: DType) => (c.dynRows ? `pl.Tensor<[${JSON.stringify(`R${c.id}`)}, ${shape.slice(1).join(", ")}], ${DT[d]}>` : "pl.Tensor");
  for (const c of cases) {
    for (const i of c.inputs) params.push(`${i.name}: ${ann(c, i.shape, i.dtype)}`);
    params.push(`${c.out.name}: pl.Out<${ann(c, c.out.shape, c.out.dtype)}>`);
  }
  const scopes = cases.map((c) => `  pl.at(pl.Level.CORE_GROUP, () => {\n    ${c.body}\n  });`).join("\n");
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

/** Generates, compiles (cpu + interp) and runs one batch; returns the mismatches. */
export async function runBatch(seed: number, size: number, platforms: readonly string[] = ["cpu", "interp"], opts: { corrupt?: boolean } = {}): Promise<{ cases: number; mismatches: Mismatch[] }> {
  const b = genBatch(seed, size);
  // corrupt: a self-check that the comparison can fail (every case's first expected value is off)
  if (opts.corrupt) for (const c of b.cases) c.expected[0] = Number.isNaN(c.expected[0]) ? 1 : c.expected[0] + 1 + Math.abs(c.expected[0]);
  const dir = join(work(), b.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "kernel.ts");
  writeFileSync(file, b.source);
  const mod = (await import(pathToFileURL(file).href)) as { kernel: { lower: (...a: unknown[]) => unknown } };
  const hostArgs = () => {
    const args: HostTensor[] = [];
    for (const c of b.cases) {
      for (const i of c.inputs) args.push(hostTensor(i.values, i.shape, i.dtype));
      args.push(hostTensor(c.out.init, c.out.shape, c.out.dtype));
    }
    return args;
  };
  const lowered = mod.kernel.lower(...hostArgs()) as Parameters<typeof ir.compile>[0];
  const mismatches: Mismatch[] = [];
  for (const platform of platforms) {
    const compiled = ir.compile(lowered, { platform: platform as "cpu", outputDir: join(dir, platform) });
    const args = hostArgs();
    workerFor(platform).run(compiled, ...args);
    let k = 0;
    for (const c of b.cases) {
      k += c.inputs.length;
      const got = readBack(args[k++]);
      const scale = c.expected.reduce((m, v) => (Number.isFinite(v) ? Math.max(m, Math.abs(v)) : m), 0);
      for (let i = 0; i < got.length; i++) {
        if (!close(got[i], c.expected[i], c.tol, scale)) {
          mismatches.push({ seed, platform, what: `case ${c.id}: ${c.what}`, index: i, got: got[i], want: c.expected[i], source: file });
          break;
        }
      }
    }
  }
  return { cases: b.cases.length, mismatches };
}

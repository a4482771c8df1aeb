// C++ emitters, keyed by registry op name. Adding an op = one registry entry (src/ir/ops) +
// its emitter here. The elementwise families are generated from the same BINARY / UNARY
// tables the registry uses; an entry of those tables without a C++ formula below simply has
// no emitter, and generating code that uses it fails with a clear internal error.
//
// Value conventions (see prelude.ts for the helpers):
// - a tile element is held in its *scratch type*: float for float32/float16/bfloat16 (already
//   rounded to the tile's dtype), int8_t/int16_t/int32_t/int64_t/uint8_t, bool as uint8_t;
// - a scalar is int64_t (integer dtypes), double (float dtypes) or bool;
// - every op's element result is rounded/saturated to its dtype exactly like the registry's
//   `evaluate` (`toDType` = round for floats, trunc + saturate for integers, != 0 for bool).
import {
  BINARY, UNARY, isFloat, numel, tileElemBytes, shapeStr, DTYPE_BYTES, REDUCTIONS, PROD_REDUCTIONS, ARG_REDUCTIONS, EXPAND_OPS, padValue,
} from "../../ir/index.js";
import type { Call, DType, Expr, Span, TensorType, TileType } from "../../ir/index.js";
import { TsptoCompileError, contractOf } from "../../ir/index.js";
import { toDType } from "../../ir/values.js";

// ------------------------------------------------------------------ C types
export type ScalarCType = "int64_t" | "double" | "bool";
/** A C++ scalar expression and its C type. */
export interface CExpr { readonly code: string; readonly ctype: ScalarCType }

export const scalarCType = (d: DType): ScalarCType => (isFloat(d) ? "double" : d === "bool" ? "bool" : "int64_t");

/** C type of a tile element in scratch. */
export const scratchCType = (d: DType): string => {
  switch (d) {
    case "float32": case "float16": case "bfloat16": return "float";
    case "int8": return "int8_t";
    case "int16": return "int16_t";
    case "int32": return "int32_t";
    case "int64": return "int64_t";
    case "uint8": case "bool": return "uint8_t";
  }
};
/** C type of a tensor element in device memory. */
export const storageCType = (d: DType): string => {
  switch (d) {
    case "float32": return "float";
    case "float16": case "bfloat16": return "uint16_t";
    default: return scratchCType(d);
  }
};
/** Tensor storage element -> scratch element. */
export const loadConv = (d: DType, x: string): string =>
  d === "float16" ? `tspto_f16_to_f32(${x})` : d === "bfloat16" ? `tspto_bf16_to_f32(${x})` : x;
/** Scratch element (already representable in d) -> tensor storage element. */
export const storeConv = (d: DType, x: string): string =>
  d === "float16" ? `tspto_f32_to_f16(${x})` : d === "bfloat16" ? `tspto_f32_to_bf16(${x})` : d === "bool" ? `(uint8_t)(${x} != 0)` : x;

const SAT: Record<string, string> = { int8: "tspto_sat_i8", int16: "tspto_sat_i16", int32: "tspto_sat_i32", int64: "tspto_sat_i64", uint8: "tspto_sat_u8", bool: "tspto_sat_b" };
const D2I: Record<string, string> = { int8: "tspto_d2i8", int16: "tspto_d2i16", int32: "tspto_d2i32", int64: "tspto_d2i64", uint8: "tspto_d2u8", bool: "tspto_d2b" };

/** Round a float (fp32) expression to a float dtype's value set. */
const roundF = (d: DType, x: string): string => (d === "float16" ? `tspto_rnd_f16(${x})` : d === "bfloat16" ? `tspto_rnd_bf16(${x})` : x);
/** Round a double expression (one correct rounding) to a float dtype's value, as float. */
const roundD = (d: DType, x: string): string =>
  d === "float16" ? `tspto_d2f16v(${x})` : d === "bfloat16" ? `tspto_d2bf16v(${x})` : `(float)(${x})`;

// ------------------------------------------------------------------ literals
export function doubleLit(v: number): string {
  if (Number.isNaN(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (v === Infinity) return "std::numeric_limits<double>::infinity()";
  if (v === -Infinity) return "(-std::numeric_limits<double>::infinity())";
  if (Object.is(v, -0)) return "(-0.0)";
  const s = String(v);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}
export function intLit(v: number): string {
  if (!Number.isFinite(v)) throw new Error(`internal: integer literal ${v}`);
  if (v >= 9223372036854775807) return "INT64_MAX";
  if (v <= -9223372036854775808) return "INT64_MIN";
  return `INT64_C(${BigInt(Math.trunc(v)).toString()})`;
}
/** A constant already representable in dtype d, as an expression of its scratch type. */
export function scratchLit(d: DType, v: number): string {
  if (isFloat(d)) return `(float)${doubleLit(v)}`;
  return `(${scratchCType(d)})${intLit(v)}`;
}
/** C string literal. */
export function cstr(s: string): string {
  let out = '"';
  for (const ch of Buffer.from(s, "utf8")) {
    if (ch === 0x22) out += '\\"';
    else if (ch === 0x5c) out += "\\\\";
    else if (ch === 0x3f) out += "\\?"; // never form trigraph-like sequences
    else if (ch < 0x20 || ch === 0x7f) out += `\\${ch.toString(8).padStart(3, "0")}`;
    else if (ch >= 0x80) out += `\\${ch.toString(8).padStart(3, "0")}`;
    else out += String.fromCharCode(ch);
  }
  return `${out}"`;
}
export const spanWhere = (s: Span): string => `${s.file}:${s.line}:${s.col}`;

// ------------------------------------------------------------------ emitter kinds
/** An operand of an elementwise op inside a fused loop: a tile element or a hoisted scalar. */
export interface ElemOperand {
  readonly kind: "tile" | "scalar";
  readonly code: string;
  readonly dtype: DType;
  /** A constant scalar whose value is exactly a float32: fp32 arithmetic then equals the reference's double arithmetic. */
  readonly exactF32?: boolean;
}

/** A reference to a tensor in the current function: its C++ pointer expression, static type, display name. */
export interface TensorRef { readonly ptr: string; readonly type: TensorType & { shape: readonly number[] }; readonly label: string }

/** Where an op writes a tile: a `uint8_t*` expression (scratch + addr, or a temporary). */
export interface TileDest { readonly ptr: string; readonly type: TileType }

/** What statement-level emitters may use from the kernel generator. */
export interface KernelCtx {
  line(s: string): void;
  open(s: string): void;
  close(s?: string): void;
  /** A fresh C++ identifier. */
  fresh(prefix: string): string;
  /** The C++ expression of a scalar IR expression. */
  scalar(e: Expr): CExpr;
  /** The tensor an IR expression denotes. */
  tensor(e: Expr): TensorRef;
  /**
   * Prepare reading the elements of a tile-valued expression (a planned tile, or a fused
   * elementwise expression over planned tiles and scalars): declares its operands in the
   * current block and returns the element at a linear tile index (scratch type).
   */
  elements(e: Expr): (idx: string) => string;
  /** The tile.load a matmul operand reads straight from its tensor (not materialized), or null. */
  matmulOperand?(e: Expr): Call | null;
  /** The statement that leaves the kernel after a run-time failure. */
  readonly failExit: string;
}

export interface ElementwiseEmitter {
  readonly kind: "elementwise";
  /** The element of the result, in the scratch type of `call.type`'s dtype, rounded to it. */
  emit(call: Call, operands: readonly ElemOperand[]): string;
}
export interface ScalarEmitter {
  readonly kind: "scalar";
  emit(call: Call, args: readonly CExpr[]): CExpr;
}
/** An op that fills a tile with its own loops (tile.load). */
export interface TileStmtEmitter {
  readonly kind: "tile-stmt";
  emitInto(ctx: KernelCtx, call: Call, dest: TileDest): void;
}
/** An op with a side effect on a tensor (tile.store); its value is that tensor. */
export interface TensorStmtEmitter {
  readonly kind: "tensor-stmt";
  emit(ctx: KernelCtx, call: Call): void;
  /** Index of the operand that is the op's (tensor) result. */
  readonly resultArg: number;
}
/** An op whose scalar result needs statements first (tile.read): emits them, returns the value. */
export interface ScalarStmtEmitter {
  readonly kind: "scalar-stmt";
  emit(ctx: KernelCtx, call: Call): CExpr;
}
/** An orchestration op that binds a new device tensor (tensor.create): declares `name` (an int64 device address). */
export interface TensorAllocEmitter {
  readonly kind: "tensor-alloc";
  emit(ctx: KernelCtx, call: Call, name: string): void;
}
export type Emitter = ElementwiseEmitter | ScalarEmitter | TileStmtEmitter | TensorStmtEmitter | ScalarStmtEmitter | TensorAllocEmitter;

export const EMITTERS = new Map<string, Emitter>();
const def = (name: string, e: Emitter) => {
  if (EMITTERS.has(name)) throw new Error(`internal: emitter for '${name}' defined twice`);
  EMITTERS.set(name, e);
};

/** The emitter of an op, or a clear internal error. */
export function emitterFor(op: string, span: Span): Emitter {
  const e = EMITTERS.get(op);
  if (!e) {
    throw new TsptoCompileError("E_CODEGEN", `internal: the cpu code generator has no emitter for op '${op}'`, span,
      op.startsWith("tensor.")
        ? "tensor-level ops must be lowered to tiles by the pass pipeline (tensor-to-tile) before code generation"
        : `add an emitter for '${op}' in src/codegen/cpp/emitters.ts (next to its registry entry)`);
  }
  return e;
}

// ------------------------------------------------------------------ elementwise: binary
interface BinaryCpp {
  /** Float arithmetic on values of C type F ("float" or "double"). */
  f(a: string, b: string, F: "float" | "double"): string;
  /** An integer-dtype result computed from double operands (a float scalar rhs): double value, truncated later. */
  fi?(a: string, b: string): string;
  /** int64 arithmetic whose exact result fits int64 (operands of narrower integer dtypes). */
  i(a: string, b: string): string;
  /** Saturating int64 arithmetic. */
  i64(a: string, b: string): string;
}
const BINARY_CPP: Record<string, BinaryCpp> = {
  add: { f: (a, b) => `(${a} + ${b})`, i: (a, b) => `(${a} + ${b})`, i64: (a, b) => `tspto_add_sat(${a}, ${b})` },
  sub: { f: (a, b) => `(${a} - ${b})`, i: (a, b) => `(${a} - ${b})`, i64: (a, b) => `tspto_sub_sat(${a}, ${b})` },
  mul: { f: (a, b) => `(${a} * ${b})`, i: (a, b) => `(${a} * ${b})`, i64: (a, b) => `tspto_mul_sat(${a}, ${b})` },
  div: {
    f: (a, b) => `(${a} / ${b})`, fi: (a, b) => `(${b} == 0.0 ? 0.0 : (${a} / ${b}))`,
    i: (a, b) => `tspto_idiv(${a}, ${b})`, i64: (a, b) => `tspto_idiv(${a}, ${b})`,
  },
  maximum: { f: (a, b, F) => `tspto_fmax<${F}>(${a}, ${b})`, i: (a, b) => `tspto_imax(${a}, ${b})`, i64: (a, b) => `tspto_imax(${a}, ${b})` },
  minimum: { f: (a, b, F) => `tspto_fmin<${F}>(${a}, ${b})`, i: (a, b) => `tspto_imin(${a}, ${b})`, i64: (a, b) => `tspto_imin(${a}, ${b})` },
};

function binaryElem(fm: BinaryCpp, d: DType, a: ElemOperand, b: ElemOperand): string {
  const da = `(double)${a.code}`, db = `(double)${b.code}`;
  if (isFloat(d)) {
    // fp32 ops on fp32 (or narrower) values are correctly rounded, and rounding them again to
    // float16/bfloat16 is exact (24 >= 2p + 2); a scalar operand (either side) is a double:
    // compute in double unless it is exactly a float32.
    const asF = (x: ElemOperand) => (x.kind === "tile" ? x.code : `(float)${x.code}`);
    if ((a.kind === "tile" || a.exactF32) && (b.kind === "tile" || b.exactF32)) return roundF(d, fm.f(asF(a), asF(b), "float"));
    return roundD(d, fm.f(da, db, "double"));
  }
  if (d === "bool") return `tspto_d2b(${fm.f(da, db, "double")})`;
  if ((b.kind === "scalar" && isFloat(b.dtype)) || (a.kind === "scalar" && isFloat(a.dtype))) return `${D2I[d]}(tspto_mode_trunc(${(fm.fi ?? fm.f)(da, db, "double")}))`;
  const ia = `(int64_t)${a.code}`, ib = `(int64_t)${b.code}`;
  return d === "int64" ? fm.i64(ia, ib) : `${SAT[d]}(${fm.i(ia, ib)})`;
}

for (const name of Object.keys(BINARY)) {
  const fm = BINARY_CPP[name];
  if (!fm) continue; // no formula: emitterFor() reports it when a program uses the op
  def(`tile.${name}`, {
    kind: "elementwise",
    emit(call, [a, b]) { return binaryElem(fm, (call.type as TileType).dtype, a, b); },
  });
}

// ------------------------------------------------------------------ elementwise: unary
interface UnaryCpp {
  f(a: string, F: "float" | "double"): string;
  /** int64 arithmetic whose exact result fits int64 (narrower integer dtypes); absent for float-only ops. */
  i?(a: string): string;
  i64?(a: string): string;
}
const UNARY_CPP: Record<string, UnaryCpp> = {
  exp: { f: (a, F) => (F === "float" ? `tspto_expf(${a})` : `std::exp(${a})`) },
  log: { f: (a) => `std::log(${a})` },
  sqrt: { f: (a) => `std::sqrt(${a})` },
  // the reference rounds sqrt to fp32 before dividing
  rsqrt: { f: (a, F) => (F === "float" ? `(1.0f / std::sqrt(${a}))` : `(1.0 / (double)std::sqrt((float)${a}))`) },
  recip: { f: (a, F) => (F === "float" ? `(1.0f / ${a})` : `(1.0 / ${a})`) },
  neg: { f: (a) => `(-${a})`, i: (a) => `(-${a})`, i64: (a) => `tspto_neg_sat(${a})` },
  abs: { f: (a) => `std::fabs(${a})`, i: (a) => `tspto_abs_sat(${a})`, i64: (a) => `tspto_abs_sat(${a})` },
  relu: { f: (a, F) => `tspto_fmax<${F}>(${a}, (${F})0)`, i: (a) => `tspto_imax(${a}, 0)`, i64: (a) => `tspto_imax(${a}, 0)` },
};
// relu(NaN) is 0 in the reference (NaN > 0 is false), unlike max(NaN, 0): use a select.
UNARY_CPP.relu.f = (a, F) => `tspto_relu<${F}>(${a})`;

function unaryElem(name: string, fm: UnaryCpp, d: DType, a: ElemOperand, span: Span): string {
  if (isFloat(d)) return roundF(d, fm.f(a.code, "float"));
  if (d === "bool") return `tspto_d2b(${fm.f(`(double)${a.code}`, "double")})`;
  if (!fm.i || !fm.i64) throw new TsptoCompileError("E_CODEGEN", `internal: tile.${name} has no integer form (dtype ${d})`, span);
  const ia = `(int64_t)${a.code}`;
  return d === "int64" ? fm.i64(ia) : `${SAT[d]}(${fm.i(ia)})`;
}

for (const name of Object.keys(UNARY)) {
  const fm = UNARY_CPP[name];
  if (!fm) continue;
  def(`tile.${name}`, {
    kind: "elementwise",
    emit(call, [a]) { return unaryElem(name, fm, (call.type as TileType).dtype, a, call.span); },
  });
}

// ------------------------------------------------------------------ elementwise: one formula per registry spec
// The ops of src/ir/ops/math.ts (and any op defined with defineElementwise): a formula gives
// the element of the result (scratch type of the result dtype, rounded to it) from the operands.
export type ElementwiseFormula = (operands: readonly ElemOperand[], dtype: DType, call: Call) => string;

/** Add the cpu formula of an elementwise op (tile.<name>; its tensor form is lowered to it). */
export function defineElementwiseCpp(name: string, formula: ElementwiseFormula): void {
  def(`tile.${name}`, { kind: "elementwise", emit(call, ops) { return formula(ops, (call.type as TileType).dtype, call); } });
}
/** An operand as a double / an int64 (a float number truncated toward zero, as the reference's BigInt(trunc(x))). */
export const dbl = (x: ElemOperand): string => `(double)${x.code}`;
export const i64 = (x: ElemOperand): string => (x.kind === "scalar" && isFloat(x.dtype) ? `tspto_d2i64(std::trunc(${x.code}))` : `(int64_t)${x.code}`);
/** A double value rounded to dtype d (toDType), as d's scratch type. */
export const fromDouble = (d: DType, v: string): string => (isFloat(d) ? roundD(d, v) : d === "bool" ? `tspto_d2b(${v})` : `${D2I[d]}(tspto_mode_trunc(${v}))`);
/** An int64 value wrapped to integer dtype d (two's complement, as the reference's wrapInt). */
const wrapTo = (d: DType, v: string): string => `(${scratchCType(d)})(${v})`;
/** An operand converted to the element of dtype d (a tile operand already is one). */
const elemOf = (d: DType, x: ElemOperand): string => {
  if (x.kind === "tile") return x.code;
  return isFloat(x.dtype) || isFloat(d) || d === "bool" ? fromDouble(d, dbl(x)) : `${SAT[d]}((int64_t)${x.code})`;
};
const BIT_WIDTH: Partial<Record<DType, number>> = { int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8 };
const unaryD = (fn: (x: string) => string): ElementwiseFormula => ([x], d) => fromDouble(d, fn(dbl(x)));

const ELEMENTWISE_CPP: Record<string, ElementwiseFormula> = {
  fmod: ([a, b], d) => (isFloat(d) ? fromDouble(d, `std::fmod(${dbl(a)}, ${dbl(b)})`) : `${SAT[d]}(tspto_imod(${i64(a)}, ${i64(b)}))`),
  rem: ([a, b], d) => (isFloat(d) ? fromDouble(d, `tspto_frem(${dbl(a)}, ${dbl(b)})`) : `${SAT[d]}(tspto_irem(${i64(a)}, ${i64(b)}))`),
  bitAnd: ([a, b], d) => wrapTo(d, `${i64(a)} & ${i64(b)}`),
  bitOr: ([a, b], d) => wrapTo(d, `${i64(a)} | ${i64(b)}`),
  bitXor: ([a, b], d) => wrapTo(d, `${i64(a)} ^ ${i64(b)}`),
  bitNot: ([a], d) => wrapTo(d, `~${i64(a)}`),
  shl: ([a, n], d) => wrapTo(d, `tspto_shl(${i64(a)}, ${i64(n)})`),
  shr: ([a, n], d) => wrapTo(d, d === "uint8" ? `tspto_shr_u(${i64(a)}, ${i64(n)}, 8)` : `tspto_sar(${i64(a)}, ${i64(n)}, ${BIT_WIDTH[d] ?? 64})`),
  // libm in double, rounded once: within 1 ulp of Math.* at fp32 (test/ops/math.test.ts)
  sin: unaryD((x) => `std::sin(${x})`),
  cos: unaryD((x) => `std::cos(${x})`),
  tanh: unaryD((x) => `std::tanh(${x})`),
  erf: unaryD((x) => `std::erf(${x})`),
  sigmoid: unaryD((x) => `(1.0 / (1.0 + std::exp(-${x})))`),
  pow: ([a, b], d) => fromDouble(d, `tspto_pow(${dbl(a)}, ${dbl(b)})`),
  lrelu: ([x, s], d) => fromDouble(d, `(${dbl(x)} > 0.0 ? ${dbl(x)} : ${dbl(x)} * ${dbl(s)})`),
  cmp: ([a, b], _d, call) => {
    const op = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" }[String(call.attrs.mode)];
    if (!op) throw new TsptoCompileError("E_CODEGEN", `internal: cmp mode ${JSON.stringify(call.attrs.mode)}`, call.span);
    return `(uint8_t)(${dbl(a)} ${op} ${dbl(b)})`;
  },
  sel: ([m, a, b], d) => `((${m.kind === "tile" ? m.code : `(bool)(${m.code})`}) != 0 ? ${elemOf(d, a)} : ${elemOf(d, b)})`,
  expands: ([, v], d) => elemOf(d, v),
};
for (const [name, formula] of Object.entries(ELEMENTWISE_CPP)) defineElementwiseCpp(name, formula);

// ------------------------------------------------------------------ elementwise: cast, move, full, create
export type RoundModeName = "round" | "rint" | "floor" | "ceil" | "trunc";
/** Convert an element of dtype `from` (scratch type) to dtype `to` (scratch type), like roundToDType(x, to, mode). */
export function castElem(from: DType, to: DType, mode: RoundModeName, x: string): string {
  if (isFloat(from)) {
    if (isFloat(to)) return roundF(to, x);
    if (to === "bool") return `tspto_d2b((double)${x})`;
    return `${D2I[to]}(tspto_mode_${mode}((double)${x}))`;
  }
  // integer or bool source: the value is an integer
  if (isFloat(to)) return roundD(to, `(double)${x}`);
  if (from === to && to !== "bool") return x;
  return `${SAT[to]}((int64_t)${x})`;
}

def("tile.cast", {
  kind: "elementwise",
  emit(call, [a]) {
    const mode = String(call.attrs.mode ?? "round") as RoundModeName;
    return castElem(a.dtype, (call.type as TileType).dtype, mode, a.code);
  },
});
def("tile.move", { kind: "elementwise", emit(_call, [a]) { return a.code; } });
def("tile.full", {
  kind: "elementwise",
  emit(call) {
    const d = (call.type as TileType).dtype;
    return scratchLit(d, toDType(Number(call.attrs.value), d));
  },
});
def("tile.create", { kind: "elementwise", emit(call) { return scratchLit((call.type as TileType).dtype, 0); } });

// ------------------------------------------------------------------ memory: load, store
function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** Offsets of a load/store as int64 C++ expressions (constants folded to numbers). */
function offsetsOf(ctx: KernelCtx, e: Expr, rank: number, what: string, span: Span): (number | string)[] {
  if (e.kind !== "list") throw new TsptoCompileError("E_CODEGEN", `internal: ${what} offsets must be a list expression`, span);
  if (e.items.length !== rank) throw new TsptoCompileError("E_CODEGEN", `internal: ${what} has ${e.items.length} offsets for rank ${rank}`, span);
  return e.items.map((it) => {
    if (it.kind === "const") return Number(it.value);
    const c = ctx.scalar(it);
    return c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(std::trunc(${c.code}))` : `(int64_t)${c.code}`;
  });
}

/**
 * Bind the offsets to locals and check the window [off, off + region) against the tensor's
 * dims: statically for constant offsets (a compile error), at run time for the others
 * (rt->fail with the window, then leave the kernel). Returns the offsets' C++ names/values.
 */
function windowCheck(ctx: KernelCtx, what: "load" | "store", t: TensorRef, offs: (number | string)[], region: readonly number[], span: Span): string[] {
  const dims = t.type.shape;
  for (let ax = 0; ax < region.length; ax++) {
    if (region[ax] > dims[ax] || (typeof offs[ax] === "number" && ((offs[ax] as number) < 0 || (offs[ax] as number) + region[ax] > dims[ax]))) {
      throw new TsptoCompileError("E_WINDOW",
        `${what} window [${offs.map((o) => (typeof o === "number" ? o : "?")).join(", ")}] + ${shapeStr(region)} is outside tensor '${t.label}' of shape ${shapeStr(dims)} (axis ${ax})`,
        span, "keep offset + shape within the tensor on every axis");
    }
  }
  const names = offs.map((o) => {
    if (typeof o === "number") return intLit(o);
    const n = ctx.fresh("o");
    ctx.line(`const int64_t ${n} = ${o};`);
    return n;
  });
  const conds: string[] = [];
  offs.forEach((o, ax) => { if (typeof o !== "number") conds.push(`${names[ax]} < 0 || ${names[ax]} > ${dims[ax] - region[ax]}`); });
  if (conds.length) {
    ctx.open(`if (__builtin_expect(${conds.join(" || ")}, 0)) {`);
    ctx.line(`const int64_t _off[] = { ${names.join(", ")} };`);
    ctx.line(`const int64_t _shp[] = { ${region.join(", ")} };`);
    ctx.line(`const int64_t _dims[] = { ${dims.join(", ")} };`);
    ctx.line(`tspto_window_fail(rt, ${cstr(spanWhere(span))}, "${what}", ${cstr(t.label)}, ${region.length}, _off, _shp, _dims);`);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}

/**
 * Nested loops over `region` (row-major); the innermost one is contiguous in both the tensor
 * and the tile. `body(tensorIndex, tileIndex)` gives the innermost statement.
 */
function regionLoops(ctx: KernelCtx, region: readonly number[], tensorBase: string[], tensorStrides: number[], tileStrides: number[],
  body: (ti: string, si: string) => string): void {
  const rank = region.length;
  const idx: string[] = [];
  for (let ax = 0; ax < rank - 1; ax++) {
    const v = ctx.fresh("r");
    idx.push(v);
    ctx.open(`for (int64_t ${v} = 0; ${v} < ${region[ax]}; ++${v}) {`);
  }
  const j = ctx.fresh("j");
  const tOff = [...idx.map((v, ax) => `(${tensorBase[ax]} + ${v}) * ${tensorStrides[ax]}`), tensorBase[rank - 1]].join(" + ");
  const sOff = idx.map((v, ax) => `${v} * ${tileStrides[ax]}`).join(" + ") || "0";
  const tb = ctx.fresh("tb"), sb = ctx.fresh("sb");
  ctx.line(`const int64_t ${tb} = ${tOff}, ${sb} = ${sOff};`);
  ctx.line("#pragma GCC ivdep");
  ctx.line(`for (int64_t ${j} = 0; ${j} < ${region[rank - 1]}; ++${j}) ${body(`${tb} + ${j}`, `${sb} + ${j}`)}`);
  for (let ax = 0; ax < rank - 1; ax++) ctx.close();
}

const validRegion = (t: TileType, span: Span): number[] => {
  if (!t.validShape) return [...t.shape];
  return t.validShape.map((d) => {
    if (typeof d !== "number") throw new TsptoCompileError("E_DYNAMIC", `dynamic valid shapes are not supported on the cpu platform yet (validShape ${shapeStr(t.validShape!)})`, span);
    return d;
  });
};

def("tile.load", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const region = validRegion(type, call.span);
    const offs = windowCheck(ctx, "load", t, offsetsOf(ctx, call.args[1], t.type.shape.length, "load", call.span), region, call.span);
    const S = scratchCType(type.dtype), T = storageCType(t.type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    ctx.line(`${S}* __restrict ${d} = (${S}*)(${dest.ptr});`);
    ctx.line(`const ${T}* __restrict ${s} = (const ${T}*)${t.ptr};`);
    if (numel(region) < numel(type.shape)) ctx.line(`std::memset(${d}, 0, ${numel(type.shape) * tileElemBytes(type.dtype)});`);
    regionLoops(ctx, region, offs, strides(t.type.shape), strides(type.shape), (ti, si) => `${d}[${si}] = ${loadConv(type.dtype, `${s}[${ti}]`)};`);
  },
});

def("tile.store", {
  kind: "tensor-stmt",
  resultArg: 2,
  emit(ctx, call) {
    const tileType = exprTileType(call.args[0]);
    const t = ctx.tensor(call.args[2]);
    const region = validRegion(tileType, call.span);
    const offs = windowCheck(ctx, "store", t, offsetsOf(ctx, call.args[1], t.type.shape.length, "store", call.span), region, call.span);
    const elem = ctx.elements(call.args[0]);
    const T = storageCType(t.type.dtype);
    const o = ctx.fresh("t");
    ctx.line(`${T}* __restrict ${o} = (${T}*)${t.ptr};`);
    if (call.attrs.atomic === "add") {
      // out += tile: the tasks that touch the window are ordered by their (read-write) accesses
      const d = t.type.dtype;
      const sum = (ti: string, si: string) => binaryElem(BINARY_CPP.add, d, { kind: "tile", code: loadConv(d, `${o}[${ti}]`), dtype: d }, { kind: "tile", code: elem(si), dtype: d });
      regionLoops(ctx, region, offs, strides(t.type.shape), strides(tileType.shape), (ti, si) => `${o}[${ti}] = ${storeConv(d, sum(ti, si))};`);
      return;
    }
    regionLoops(ctx, region, offs, strides(t.type.shape), strides(tileType.shape), (ti, si) => `${o}[${ti}] = ${storeConv(t.type.dtype, elem(si))};`);
  },
});

function exprTileType(e: Expr): TileType {
  const t = e.kind === "const" ? null : e.type;
  if (!t || t.kind !== "tile") throw new Error("internal: expected a tile operand");
  return t;
}

// ------------------------------------------------------------------ scalar ops
const asDouble = (a: CExpr) => (a.ctype === "double" ? a.code : `(double)${a.code}`);
const asInt = (a: CExpr) => (a.ctype === "int64_t" ? a.code : `(int64_t)${a.code}`);
const resultCType = (call: Call): ScalarCType => (call.type.kind === "scalar" ? scalarCType(call.type.dtype) : "int64_t");
const arith = (op: string) => (call: Call, [a, b]: readonly CExpr[]): CExpr => {
  const ct = resultCType(call);
  return ct === "double" ? { code: `(${asDouble(a)} ${op} ${asDouble(b)})`, ctype: ct } : { code: `(${asInt(a)} ${op} ${asInt(b)})`, ctype: "int64_t" };
};
const cmp = (op: string) => (_call: Call, [a, b]: readonly CExpr[]): CExpr => ({ code: `(${a.code} ${op} ${b.code})`, ctype: "bool" });
const toInt = (fn: string) => (_call: Call, [a]: readonly CExpr[]): CExpr =>
  ({ code: a.ctype === "double" ? `tspto_d2i64(std::${fn}(${a.code}))` : asInt(a), ctype: "int64_t" });
const minmax = (fn: "min" | "max") => (call: Call, [a, b]: readonly CExpr[]): CExpr =>
  resultCType(call) === "double"
    ? { code: `tspto_f${fn}<double>(${asDouble(a)}, ${asDouble(b)})`, ctype: "double" }
    : { code: `tspto_i${fn}(${asInt(a)}, ${asInt(b)})`, ctype: "int64_t" };

const SCALAR_CPP: Record<string, ScalarEmitter["emit"]> = {
  add: arith("+"), sub: arith("-"), mul: arith("*"),
  div: (_c, [a, b]) => ({ code: `(${asDouble(a)} / ${asDouble(b)})`, ctype: "double" }),
  mod: (call, [a, b]) => resultCType(call) === "double"
    ? { code: `std::fmod(${asDouble(a)}, ${asDouble(b)})`, ctype: "double" }
    : { code: `tspto_imod(${asInt(a)}, ${asInt(b)})`, ctype: "int64_t" },
  lt: cmp("<"), le: cmp("<="), gt: cmp(">"), ge: cmp(">="), eq: cmp("=="), ne: cmp("!="),
  and: (_c, [a, b]) => ({ code: `((bool)(${a.code}) && (bool)(${b.code}))`, ctype: "bool" }),
  or: (_c, [a, b]) => ({ code: `((bool)(${a.code}) || (bool)(${b.code}))`, ctype: "bool" }),
  not: (_c, [a]) => ({ code: `(!(${a.code}))`, ctype: "bool" }),
  neg: (call, [a]) => (resultCType(call) === "double" ? { code: `(-${asDouble(a)})`, ctype: "double" } : { code: `(-${asInt(a)})`, ctype: "int64_t" }),
  min: minmax("min"), max: minmax("max"),
  floor: toInt("floor"), ceil: toInt("ceil"), trunc: toInt("trunc"),
};
for (const [name, emit] of Object.entries(SCALAR_CPP)) def(`scalar.${name}`, { kind: "scalar", emit });

// ------------------------------------------------------------------ shared helpers of the non-elementwise tile ops
const tileOperand = (e: Expr): TileType => exprTileType(e);

/** Declare `S* __restrict o = dest` and return o. */
function destPtr(ctx: KernelCtx, dest: TileDest): string {
  const S = scratchCType(dest.type.dtype);
  const o = ctx.fresh("o");
  ctx.line(`${S}* __restrict ${o} = (${S}*)(${dest.ptr});`);
  return o;
}

/** Nested loops over `shape` (row-major); body(indexVars) gives the innermost statement. */
function shapeLoops(ctx: KernelCtx, shape: readonly number[], body: (idx: string[]) => string): void {
  const idx = shape.map(() => ctx.fresh("i"));
  shape.forEach((d, ax) => {
    if (ax === shape.length - 1) ctx.line("#pragma GCC ivdep");
    ctx.open(`for (int64_t ${idx[ax]} = 0; ${idx[ax]} < ${d}; ++${idx[ax]}) {`);
  });
  ctx.line(body(idx));
  shape.forEach(() => ctx.close());
}
/** The linear index `sum((idx + off) * stride)` as C++. */
function linear(idx: readonly string[], shape: readonly number[], off?: readonly string[]): string {
  const st = strides(shape);
  return idx.map((v, ax) => {
    const e = off && off[ax] !== "INT64_C(0)" ? `(${v} + ${off[ax]})` : v;
    return st[ax] === 1 ? e : `${e} * ${st[ax]}`;
  }).join(" + ") || "0";
}

/**
 * Offsets of a window inside a tile (slice, assemble, read): constants were checked at
 * compile time; the others are bound to locals and checked here at run time.
 */
function tileWindow(ctx: KernelCtx, what: string, name: string, list: Expr, shape: readonly number[], outer: readonly number[], span: Span, kind = "tile"): string[] {
  if (list.kind !== "list") throw new TsptoCompileError("E_CODEGEN", `internal: ${what} offsets must be a list expression`, span);
  const names = list.items.map((it) => {
    if (it.kind === "const") return intLit(Number(it.value));
    const c = ctx.scalar(it);
    const n = ctx.fresh("o");
    ctx.line(`const int64_t ${n} = ${c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(std::trunc(${c.code}))` : `(int64_t)${c.code}`};`);
    return n;
  });
  const conds = list.items.flatMap((it, ax) => (it.kind === "const" ? [] : [`${names[ax]} < 0 || ${names[ax]} > ${outer[ax] - shape[ax]}`]));
  if (conds.length) {
    ctx.open(`if (__builtin_expect(${conds.join(" || ")}, 0)) {`);
    ctx.line(`const int64_t _off[] = { ${names.join(", ")} };`);
    ctx.line(`const int64_t _shp[] = { ${shape.join(", ")} };`);
    ctx.line(`const int64_t _dims[] = { ${outer.join(", ")} };`);
    ctx.line(`tspto_bounds_fail(rt, ${cstr(spanWhere(span))}, "${what}", "${kind}", ${cstr(name)}, ${shape.length}, _off, _shp, _dims);`);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}
const exprLabel = (e: Expr): string => (e.kind === "var" ? e.name : "<expr>");

// ------------------------------------------------------------------ reductions
for (const [name, { axis, kind }] of Object.entries(REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const [m, n] = x.shape;
      const d = x.dtype;
      const S = scratchCType(d);
      const A = kind === "sum" ? (isFloat(d) ? "double" : "int64_t") : S;
      const op = (a: string, b: string): string => {
        if (kind === "sum") return !isFloat(d) && d === "int64" ? `tspto_add_sat(${a}, ${b})` : `(${a} + ${b})`;
        if (isFloat(d)) return `tspto_f${kind}<float>(${a}, ${b})`;
        return `(${S})tspto_i${kind}(${a}, ${b})`;
      };
      const fin = (acc: string): string => (kind !== "sum" ? acc : isFloat(d) ? roundF(d, `(float)(${acc})`) : `${SAT[d]}(${acc})`);
      const elem = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      if (axis === "row" && kind !== "sum" && isFloat(d)) {
        // float row max / min on ordered integer keys (bits ^ (sign ? 0x7fffffff : 0): -0 < +0),
        // with NaN tracked apart: integer max / min and or vectorize, the NaN-aware select does
        // not. Exact, as tspto_fmax / tspto_fmin: NaN if any element is NaN; max(-0, 0) = 0.
        const r = ctx.fresh("r"), j = ctx.fresh("j"), kx = ctx.fresh("key"), nn = ctx.fresh("nan"), x = ctx.fresh("x"), b = ctx.fresh("b");
        const better = kind === "max" ? ">" : "<";
        const step = (q: string, idx: string): string =>
          `{ const float ${x} = ${elem(idx)}; const int32_t ${b} = (int32_t)tspto_f2u(${x}); const int32_t ${b}k = ${b} ^ ((${b} >> 31) & 0x7fffffff); ${kx}[${q}] = ${b}k ${better} ${kx}[${q}] ? ${b}k : ${kx}[${q}]; ${nn}[${q}] |= (int32_t)(${x} != ${x}); }`;
        ctx.open(`for (int64_t ${r} = 0; ${r} < ${m}; ++${r}) {`);
        ctx.line(`int32_t ${kx}[16], ${nn}[16];`);
        ctx.line(`for (int q = 0; q < 16; ++q) { ${kx}[q] = ${kind === "max" ? "INT32_MIN" : "INT32_MAX"}; ${nn}[q] = 0; }`);
        ctx.line(`int64_t ${j} = 0;`);
        ctx.open(`for (; ${j} + 16 <= ${n}; ${j} += 16) {`);
        ctx.line(`for (int q = 0; q < 16; ++q) ${step("q", `${r} * ${n} + ${j} + q`)}`);
        ctx.close();
        ctx.line(`for (; ${j} < ${n}; ++${j}) ${step(`${j} & 15`, `${r} * ${n} + ${j}`)}`);
        ctx.line(`int32_t ${b}best = ${kx}[0], ${b}nan = ${nn}[0];`);
        ctx.line(`for (int q = 1; q < 16; ++q) { ${b}best = ${kx}[q] ${better} ${b}best ? ${kx}[q] : ${b}best; ${b}nan |= ${nn}[q]; }`);
        ctx.line(`${o}[${r}] = ${b}nan ? std::numeric_limits<float>::quiet_NaN() : tspto_u2f((uint32_t)(${b}best ^ ((${b}best >> 31) & 0x7fffffff)));`);
        ctx.close();
      } else if (axis === "row") {
        const r = ctx.fresh("r"), j = ctx.fresh("j"), l = ctx.fresh("l");
        ctx.open(`for (int64_t ${r} = 0; ${r} < ${m}; ++${r}) {`);
        ctx.line(`${A} ${l}[8];`);
        ctx.line(`for (int q = 0; q < 8; ++q) ${l}[q] = ${kind === "sum" ? `(${A})0` : `(${A})${elem(`${r} * ${n}`)}`};`);
        ctx.line(`int64_t ${j} = 0;`);
        ctx.open(`for (; ${j} + 8 <= ${n}; ${j} += 8) {`);
        ctx.line(`for (int q = 0; q < 8; ++q) ${l}[q] = ${op(`${l}[q]`, `(${A})${elem(`${r} * ${n} + ${j} + q`)}`)};`);
        ctx.close();
        ctx.line(`for (; ${j} < ${n}; ++${j}) ${l}[${j} & 7] = ${op(`${l}[${j} & 7]`, `(${A})${elem(`${r} * ${n} + ${j}`)}`)};`);
        ctx.line(`${o}[${r}] = ${fin(op(op(op(`${l}[0]`, `${l}[1]`), op(`${l}[2]`, `${l}[3]`)), op(op(`${l}[4]`, `${l}[5]`), op(`${l}[6]`, `${l}[7]`))))};`);
        ctx.close();
      } else {
        const B = 256;
        const c0 = ctx.fresh("c"), cn = ctx.fresh("cn"), a = ctx.fresh("a"), i = ctx.fresh("i"), c = ctx.fresh("c");
        ctx.open(`for (int64_t ${c0} = 0; ${c0} < ${n}; ${c0} += ${B}) {`);
        ctx.line(`const int64_t ${cn} = ${n} - ${c0} < ${B} ? ${n} - ${c0} : ${B};`);
        ctx.line(`${A} ${a}[${B}];`);
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${a}[${c}] = ${kind === "sum" ? `(${A})0` : `(${A})${elem(`${c0} + ${c}`)}`};`);
        ctx.open(`for (int64_t ${i} = ${kind === "sum" ? 0 : 1}; ${i} < ${m}; ++${i}) {`);
        ctx.line("#pragma GCC ivdep");
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${a}[${c}] = ${op(`${a}[${c}]`, `(${A})${elem(`${i} * ${n} + ${c0} + ${c}`)}`)};`);
        ctx.close();
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${o}[${c0} + ${c}] = ${fin(`${a}[${c}]`)};`);
        ctx.close();
      }
    },
  });
}

// ------------------------------------------------------------------ row / column broadcasts
for (const axis of ["row", "col"] as const) {
  for (const [suffix, bin] of Object.entries(EXPAND_OPS)) {
    const fm = BINARY_CPP[bin];
    def(`tile.${axis}Expand${suffix}`, {
      kind: "tile-stmt",
      emitInto(ctx, call, dest) {
        const [m, n] = tileOperand(call.args[0]).shape;
        const d = dest.type.dtype;
        const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
        const o = destPtr(ctx, dest);
        shapeLoops(ctx, [m, n], ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${binaryElem(fm, d,
          { kind: "tile", code: et(`${r} * ${n} + ${c}`), dtype: d }, { kind: "tile", code: ev(axis === "row" ? r : c), dtype: d })};`);
      },
    });
  }
  def(`tile.${axis}Expand`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const [m, n] = tileOperand(call.args[0]).shape;
      const ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      shapeLoops(ctx, [m, n], ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${ev(axis === "row" ? r : c)};`);
    },
  });
}

// rowExpandExpdif / colExpandExpdif: exp(t - v), the difference rounded to the dtype first
for (const axis of ["row", "col"] as const) {
  def(`tile.${axis}ExpandExpdif`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const [m, n] = tileOperand(call.args[0]).shape;
      const d = dest.type.dtype;
      const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      shapeLoops(ctx, [m, n], ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${roundF(d, `tspto_expf(${roundF(d, `(${et(`${r} * ${n} + ${c}`)} - ${ev(axis === "row" ? r : c)})`)})`)};`);
    },
  });
}
// prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope[r]
def("tile.prelu", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, n] = tileOperand(call.args[0]).shape;
    const d = dest.type.dtype;
    const ex = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const x = ctx.fresh("x");
    shapeLoops(ctx, [m, n], ([r, c]) => `{ const float ${x} = ${ex(`${r} * ${n} + ${c}`)}; ${o}[${r} * ${n} + ${c}] = ${x} > 0.0f ? ${x} : ${roundF(d, `(${x} * ${es(r)})`)}; }`);
  },
});

// ------------------------------------------------------------------ products and arg-reductions (see src/ir/ops/reduce.ts)
/** Loops over the lines of an [m, n] tile along `axis`: line index, element index of j, count. */
function lineLoops(ctx: KernelCtx, m: number, n: number, axis: "row" | "col", body: (line: string, at: (j: string) => string, count: number) => void): void {
  const l = ctx.fresh("l");
  ctx.open(`for (int64_t ${l} = 0; ${l} < ${axis === "row" ? m : n}; ++${l}) {`);
  body(l, axis === "row" ? (j) => `${l} * ${n} + ${j}` : (j) => `${j} * ${n} + ${l}`, axis === "row" ? n : m);
  ctx.close();
}
for (const [name, axis] of Object.entries(PROD_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const [m, n] = x.shape;
      const d = x.dtype;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      lineLoops(ctx, m, n, axis, (l, at, cnt) => {
        const acc = ctx.fresh("acc"), j = ctx.fresh("j");
        if (isFloat(d)) {
          ctx.line(`double ${acc} = 1.0;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} *= (double)${ex(at(j))};`);
          ctx.line(`${o}[${l}] = ${roundD(d, acc)};`);
        } else {
          ctx.line(`int64_t ${acc} = 1;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} = tspto_mul_sat(${acc}, (int64_t)${ex(at(j))});`);
          ctx.line(`${o}[${l}] = ${SAT[d]}(${acc});`);
        }
      });
    },
  });
}
for (const [name, { axis, kind }] of Object.entries(ARG_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const [m, n] = x.shape;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      const S = scratchCType(x.dtype), float = isFloat(x.dtype);
      lineLoops(ctx, m, n, axis, (l, at, cnt) => {
        const best = ctx.fresh("best"), bi = ctx.fresh("bi"), j = ctx.fresh("j"), v = ctx.fresh("v");
        ctx.line(`${S} ${best} = ${ex(at("0"))}; int32_t ${bi} = 0;`);
        // the first extreme wins; a NaN beats every number and the first NaN wins
        const better = float
          ? `(${best} == ${best}) && ((${v} != ${v}) || ${v} ${kind === "max" ? ">" : "<"} ${best})`
          : `${v} ${kind === "max" ? ">" : "<"} ${best}`;
        ctx.line(`for (int64_t ${j} = 1; ${j} < ${cnt}; ++${j}) { const ${S} ${v} = ${ex(at(j))}; if (${better}) { ${best} = ${v}; ${bi} = (int32_t)${j}; } }`);
        ctx.line(`${o}[${l}] = ${bi};`);
      });
    },
  });
}

// broadcastTo: the dims of 1 of x stretched
def("tile.broadcastTo", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, dest.type.shape, (idx) => `${o}[${linear(idx, dest.type.shape)}] = ${ex(linear(idx.map((v, ax) => (x.shape[ax] === 1 ? "0" : v)), x.shape))};`);
  },
});

// ------------------------------------------------------------------ transpose
def("tile.transpose", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const a1 = Number(call.attrs.axis1), a2 = Number(call.attrs.axis2);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, x.shape, (idx) => {
      const sw = [...idx];
      [sw[a1], sw[a2]] = [sw[a2], sw[a1]];
      return `${o}[${linear(sw, dest.type.shape)}] = ${ex(linear(idx, x.shape))};`;
    });
  },
});

// ------------------------------------------------------------------ matmul
function emitMatmul(ctx: KernelCtx, call: Call, dest: TileDest, accArg: Expr | null): void {
  const base = accArg ? 1 : 0;
  const at = tileOperand(call.args[base]), bt = tileOperand(call.args[base + 1]);
  const [m, k] = at.shape, n = bt.shape[1];
  // fpContract "fast" (set by the FpContract pass): each step is one fused multiply-add
  const fused = contractOf(call.attrs) === "fast";
  if (isFloat(at.dtype)) {
    // An operand that is load(t, ...) or move(load(t, ...)) used only here is read straight
    // from the tensor window (./forward.ts): row stride = the tensor's row length, no copies.
    const direct = (x: Expr): { ptr: string; ld: number } | null => {
      const load = ctx.matmulOperand?.(x);
      if (!load) return null;
      const t = ctx.tensor(load.args[0]);
      const lt = load.type as TileType;
      const offs = windowCheck(ctx, "load", t, offsetsOf(ctx, load.args[1], 2, "load", load.span), [...lt.shape], load.span);
      const p = ctx.fresh("p");
      ctx.line(`const float* __restrict ${p} = (const float*)${t.ptr} + ${offs[0]} * ${t.type.shape[1]} + ${offs[1]};  // matmul operand read from '${t.label.replace(/[^\w.]/g, "_")}' (forwarded)`);
      return { ptr: p, ld: t.type.shape[1] };
    };
    const da = direct(call.args[base]), db = direct(call.args[base + 1]);
    const ea = da ? null : ctx.elements(call.args[base]), eb = db ? null : ctx.elements(call.args[base + 1]);
    const ec = accArg ? ctx.elements(accArg) : null;
    const o = destPtr(ctx, dest);
    // the operands' element expressions as plain arrays (name[index]): vector loads of b rows
    const arr = (f: ((i: string) => string) | null): string | null => {
      if (!f) return null;
      const mm = /^([A-Za-z_]\w*)\[@IDX@\]$/.exec(f("@IDX@"));
      return mm ? mm[1] : null;
    };
    const A = da ? da.ptr : arr(ea), Bp = db ? db.ptr : arr(eb), C = arr(ec);
    const lda = da ? da.ld : k, ldb = db ? db.ld : n;
    /** Element (r, c) of a / b (C++ index expressions). */
    const aE = (r: string, c: string) => (da ? `${da.ptr}[(${r}) * ${lda} + ${c}]` : ea!(`(${r}) * ${k} + ${c}`));
    const bE = (r: string, c: string) => (db ? `${db.ptr}[(${r}) * ${ldb} + ${c}]` : eb!(`(${r}) * ${n} + ${c}`));
    // Register blocking: an [MR, NR] block of the output is held in registers (tspto_v16f
    // values, 16 floats each) across the whole k loop; each k step loads NR contiguous elements
    // of a row of b and multiplies them with MR broadcast elements of a. Every output element
    // accumulates in fp32 in k order (acc + a*b, or fma(a, b, acc) with fpContract "fast"),
    // exactly as src/ir/ops/matmul.ts says. Remainder rows use a smaller block, remainder
    // columns a 16-wide block and then scalar code; operands that are not plain arrays (fused
    // element expressions) use the scalar block code throughout.
    const MR = 6, NR = 32;
    const mFull = m - (m % MR), nFull = n - (n % NR);
    const block = (rows: number, cols: number, i0: string, j0: string): void => {
      const acc = ctx.fresh("acc"), kk = ctx.fresh("k"), r = ctx.fresh("r"), c = ctx.fresh("c"), aik = ctx.fresh("aik");
      ctx.open("{");
      ctx.line(`float ${acc}[${rows}][${cols}];`);
      ctx.line(`for (int ${r} = 0; ${r} < ${rows}; ++${r}) for (int ${c} = 0; ${c} < ${cols}; ++${c}) ${acc}[${r}][${c}] = ${ec ? ec(`(${i0} + ${r}) * ${n} + ${j0} + ${c}`) : "0.0f"};`);
      ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${k}; ++${kk}) {`);
      ctx.open(`for (int ${r} = 0; ${r} < ${rows}; ++${r}) {`);
      ctx.line(`const float ${aik} = ${aE(`${i0} + ${r}`, kk)};`);
      const bkj = bE(kk, `${j0} + ${c}`);
      ctx.line(`for (int ${c} = 0; ${c} < ${cols}; ++${c}) ${acc}[${r}][${c}] = ${fused ? `__builtin_fmaf(${aik}, ${bkj}, ${acc}[${r}][${c}])` : `${acc}[${r}][${c}] + ${aik} * ${bkj}`};`);
      ctx.close();
      ctx.close();
      ctx.line(`for (int ${r} = 0; ${r} < ${rows}; ++${r}) for (int ${c} = 0; ${c} < ${cols}; ++${c}) ${o}[(${i0} + ${r}) * ${n} + ${j0} + ${c}] = ${acc}[${r}][${c}];`);
      ctx.close();
    };
    const vec = A !== null && Bp !== null && (ec === null || C !== null);
    // rows x (16 nv) block in tspto_v16f accumulators (vector registers); b from `bsrc` with
    // row stride `bld` starting at column `bcol`
    const vblock = (rows: number, nv: number, i0: string, j0: string, bsrc: string, bld: number, bcol: string): void => {
      const acc = ctx.fresh("acc"), kk = ctx.fresh("k"), bv = ctx.fresh("b"), av = ctx.fresh("a");
      const name = (r: number, v: number) => `${acc}_${r}_${v}`;
      ctx.open("{");
      for (let r = 0; r < rows; r++) {
        for (let v = 0; v < nv; v++) {
          ctx.line(`tspto_v16f ${name(r, v)} = ${C ? `tspto_ld16(&${C}[(${i0} + ${r}) * ${n} + ${j0} + ${16 * v}])` : "tspto_v16f{}"};`);
        }
      }
      ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${k}; ++${kk}) {`);
      for (let v = 0; v < nv; v++) ctx.line(`const tspto_v16f ${bv}${v} = tspto_ld16(&${bsrc}[${kk} * ${bld} + ${bcol} + ${16 * v}]);`);
      for (let r = 0; r < rows; r++) {
        const aik = `${A}[(${i0} + ${r}) * ${lda} + ${kk}]`;
        if (fused) {
          ctx.line(`{ const tspto_v16f ${av} = tspto_splat16(${aik}); ${Array.from({ length: nv }, (_, v) => `${name(r, v)} = tspto_fma16(${av}, ${bv}${v}, ${name(r, v)});`).join(" ")} }`);
        } else {
          ctx.line(`{ const float ${av} = ${aik}; ${Array.from({ length: nv }, (_, v) => `${name(r, v)} = ${name(r, v)} + ${av} * ${bv}${v};`).join(" ")} }`);
        }
      }
      ctx.close();
      for (let r = 0; r < rows; r++) {
        for (let v = 0; v < nv; v++) ctx.line(`tspto_st16(&${o}[(${i0} + ${r}) * ${n} + ${j0} + ${16 * v}], ${name(r, v)});`);
      }
      ctx.close();
    };
    if (!vec) {
      const i0 = ctx.fresh("i"), j0 = ctx.fresh("j");
      if (mFull > 0 && nFull > 0) {
        ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}; ${i0} += ${MR}) {`);
        ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${nFull}; ${j0} += ${NR}) {`);
        block(MR, NR, i0, j0);
        ctx.close();
        ctx.close();
      }
      if (n > nFull) for (const [rows, r0] of [[mFull, "0"], [m - mFull, String(mFull)]] as const) if (rows > 0) block(rows, n - nFull, r0, String(nFull));
      if (m > mFull && nFull > 0) {
        ctx.open(`for (int64_t ${j0}r = 0; ${j0}r < ${nFull}; ${j0}r += ${NR}) {`);
        block(m - mFull, NR, String(mFull), `${j0}r`);
        ctx.close();
      }
      return;
    }
    // Panels: for each NR-column panel of b, its k x NR block is packed into a contiguous
    // buffer once (it stays in L1 while every row block of a streams past it), then the
    // row blocks run over it. Packing only reorders loads: the arithmetic is unchanged.
    const pack = nFull > 0 && k * NR * 4 <= 64 * 1024 && m > MR;
    const pb = ctx.fresh("pb");
    if (nFull > 0) {
      const j0 = ctx.fresh("j"), kk = ctx.fresh("k");
      if (pack) ctx.line(`alignas(64) float ${pb}[${k * NR}];`);
      ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${nFull}; ${j0} += ${NR}) {`);
      if (pack) ctx.line(`for (int64_t ${kk} = 0; ${kk} < ${k}; ++${kk}) std::memcpy(&${pb}[${kk} * ${NR}], &${Bp}[${kk} * ${ldb} + ${j0}], ${NR * 4});`);
      const [bsrc, bld, bcol] = pack ? [pb, NR, "0"] : [Bp!, ldb, j0];
      if (mFull > 0) {
        const i0 = ctx.fresh("i");
        ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}; ${i0} += ${MR}) {`);
        vblock(MR, NR / 16, i0, j0, bsrc, bld, bcol);
        ctx.close();
      }
      if (m % MR) vblock(m % MR, NR / 16, String(mFull), j0, bsrc, bld, bcol);
      ctx.close();
    }
    // remainder columns: a 16-wide block, then scalar code
    const rowsDo = (f: (rows: number, i0: string) => void) => {
      if (mFull > 0) {
        const i0 = ctx.fresh("i");
        ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}; ${i0} += ${MR}) {`);
        f(MR, i0);
        ctx.close();
      }
      if (m % MR) f(m % MR, String(mFull));
    };
    let j1 = nFull;
    if (n - j1 >= 16) { const jj = j1; rowsDo((rows, i0) => vblock(rows, 1, i0, String(jj), Bp!, ldb, String(jj))); j1 += 16; }
    if (n > j1) { const jj = j1; rowsDo((rows, i0) => block(rows, n - jj, i0, String(jj))); }
    return;
  }
  const ea = ctx.elements(call.args[base]), eb = ctx.elements(call.args[base + 1]);
  const ec = accArg ? ctx.elements(accArg) : null;
  const o = destPtr(ctx, dest);
  const i = ctx.fresh("i"), kk = ctx.fresh("k"), j = ctx.fresh("j");
  ctx.open(`for (int64_t ${i} = 0; ${i} < ${m}; ++${i}) {`);
  {
    // integers: int64 accumulators, 256 columns at a time, saturated to int32 at the end
    const B = 256;
    const j0 = ctx.fresh("j"), jn = ctx.fresh("jn"), acc = ctx.fresh("acc"), aik = ctx.fresh("aik");
    ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${n}; ${j0} += ${B}) {`);
    ctx.line(`const int64_t ${jn} = ${n} - ${j0} < ${B} ? ${n} - ${j0} : ${B};`);
    ctx.line(`int64_t ${acc}[${B}];`);
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${acc}[${j}] = ${ec ? `(int64_t)${ec(`${i} * ${n} + ${j0} + ${j}`)}` : "0"};`);
    ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${k}; ++${kk}) {`);
    ctx.line(`const int64_t ${aik} = (int64_t)${ea(`${i} * ${k} + ${kk}`)};`);
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${acc}[${j}] += ${aik} * (int64_t)${eb(`${kk} * ${n} + ${j0} + ${j}`)};`);
    ctx.close();
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${o}[${i} * ${n} + ${j0} + ${j}] = ${SAT[dest.type.dtype]}(${acc}[${j}]);`);
    ctx.close();
  }
  ctx.close();
}
def("tile.matmul", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, null); } });
def("tile.matmulAcc", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, call.args[0]); } });

// ------------------------------------------------------------------ shape ops
// reshape keeps the row-major order: element i of the result is element i of the operand.
def("tile.reshape", { kind: "elementwise", emit(_call, [a]) { return a.code; } });

def("tile.slice", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const shape = dest.type.shape;
    const off = tileWindow(ctx, "slice", exprLabel(call.args[0]), call.args[1], shape, x.shape, call.span);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, shape, (idx) => `${o}[${linear(idx, shape)}] = ${ex(linear(idx, x.shape, off))};`);
  },
});

def("tile.concat", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, na] = tileOperand(call.args[0]).shape, nb = tileOperand(call.args[1]).shape[1];
    const n = na + nb;
    const ea = ctx.elements(call.args[0]), eb = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const r = ctx.fresh("r"), c = ctx.fresh("c");
    ctx.open(`for (int64_t ${r} = 0; ${r} < ${m}; ++${r}) {`);
    ctx.line(`for (int64_t ${c} = 0; ${c} < ${na}; ++${c}) ${o}[${r} * ${n} + ${c}] = ${ea(`${r} * ${na} + ${c}`)};`);
    ctx.line(`for (int64_t ${c} = 0; ${c} < ${nb}; ++${c}) ${o}[${r} * ${n} + ${na} + ${c}] = ${eb(`${r} * ${nb} + ${c}`)};`);
    ctx.close();
  },
});

def("tile.assemble", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = tileOperand(call.args[0]), s = tileOperand(call.args[1]);
    const off = tileWindow(ctx, "assemble", exprLabel(call.args[0]), call.args[2], s.shape, t.shape, call.span);
    const et = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const i = ctx.fresh("i");
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${i} = 0; ${i} < ${numel(t.shape)}; ++${i}) ${o}[${i}] = ${et(i)};`);
    shapeLoops(ctx, s.shape, (idx) => `${o}[${linear(idx, t.shape, off)}] = ${es(linear(idx, s.shape))};`);
  },
});

def("tile.fillpad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const valid = validRegion(x, call.span);
    const d = x.dtype;
    const pad = scratchLit(d, toDType(padValue(d, String(call.attrs.padValue ?? "zero")), d));
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, x.shape, (idx) => {
      const inside = idx.flatMap((v, ax) => (valid[ax] < x.shape[ax] ? [`${v} < ${valid[ax]}`] : []));
      const at = linear(idx, x.shape);
      return `${o}[${at}] = ${inside.length ? `(${inside.join(" && ")}) ? ${ex(at)} : ${pad}` : ex(at)};`;
    });
  },
});

// read: one element as a scalar (tiles in scratch; tensors in device memory, in kernels)
const scalarOfElem = (d: DType, code: string): CExpr => {
  const ct = scalarCType(d);
  return { code: ct === "bool" ? `(${code} != 0)` : `(${ct})${code}`, ctype: ct };
};
def("tile.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const x = tileOperand(call.args[0]);
    const idx = tileWindow(ctx, "read", exprLabel(call.args[0]), call.args[1], x.shape.map(() => 1), x.shape, call.span);
    const e = ctx.elements(call.args[0]);
    const v = scalarOfElem(x.dtype, e(idx.map((s, ax) => (strides(x.shape)[ax] === 1 ? s : `${s} * ${strides(x.shape)[ax]}`)).join(" + ")));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});
def("tensor.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const t = ctx.tensor(call.args[0]);
    const shape = t.type.shape;
    const idx = tileWindow(ctx, "read", t.label, call.args[1], shape.map(() => 1), shape, call.span, "tensor");
    const T = storageCType(t.type.dtype);
    const at = idx.map((s, ax) => (strides(shape)[ax] === 1 ? s : `${s} * ${strides(shape)[ax]}`)).join(" + ");
    const v = scalarOfElem(t.type.dtype, loadConv(t.type.dtype, `((const ${T}*)${t.ptr})[${at}]`));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});

// dim: the extent of a tensor's axis (static shapes: simplify folds it to a constant first)
def("tensor.dim", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const d = ctx.tensor(call.args[0]).type.shape[Number(call.attrs.axis)];
    return { code: intLit(d), ctype: "int64_t" };
  },
});

// createTensor: an orchestration-level device buffer, zero-filled, freed at the end of the launch
def("tensor.create", {
  kind: "tensor-alloc",
  emit(ctx, call, name) {
    const t = call.type as TensorType;
    const shape = t.shape.map((d) => {
      if (typeof d !== "number") throw new TsptoCompileError("E_DYNAMIC", `createTensor needs a static shape, got ${shapeStr(t.shape)}`, call.span);
      return d;
    });
    ctx.line(`const int64_t ${name} = rt->alloc(rt->ctx, ${numel(shape) * DTYPE_BYTES[t.dtype]});  // createTensor(${shapeStr(shape)}, ${t.dtype})`);
    ctx.line(`if (${name} == 0) ${ctx.failExit}`);
  },
});

// Elementwise emitters: the binary / unary families (from the registry's BINARY / UNARY
// tables), one formula per registry spec (defineElementwiseCpp), and cast / move / full / create.
import { BINARY, type Call, type DType, type Span, type TileType, TsptoCompileError, UNARY, isFloat } from "../../../ir/index.js";
import { castNarrows, toDType } from "../../../ir/values.js";
import { CAST_MODE_INDEX } from "../cast_modes.js";
import { D2I, SAT, roundD, roundF, scratchCType, scratchLit } from "./ctypes.js";
import { type ElemOperand, def } from "./table.js";

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
export const BINARY_CPP: Record<string, BinaryCpp> = {
  add: { f: (a, b) => `(${a} + ${b})`, i: (a, b) => `(${a} + ${b})`, i64: (a, b) => `tspto_add_sat(${a}, ${b})` },
  sub: { f: (a, b) => `(${a} - ${b})`, i: (a, b) => `(${a} - ${b})`, i64: (a, b) => `tspto_sub_sat(${a}, ${b})` },
  mul: { f: (a, b) => `(${a} * ${b})`, i: (a, b) => `(${a} * ${b})`, i64: (a, b) => `tspto_mul_sat(${a}, ${b})` },
  div: {
    // a float scalar into an integer result: x / 0 = 0 (both computed, then blended: no operand is read in one arm only)
    f: (a, b) => `(${a} / ${b})`, fi: (a, b) => `tspto_blend<double>(${b} == 0.0, 0.0, ${a} / ${b})`,
    i: (a, b) => `tspto_idiv(${a}, ${b})`, i64: (a, b) => `tspto_idiv(${a}, ${b})`,
  },
  maximum: { f: (a, b, F) => `tspto_fmax<${F}>(${a}, ${b})`, i: (a, b) => `tspto_imax(${a}, ${b})`, i64: (a, b) => `tspto_imax(${a}, ${b})` },
  minimum: { f: (a, b, F) => `tspto_fmin<${F}>(${a}, ${b})`, i: (a, b) => `tspto_imin(${a}, ${b})`, i64: (a, b) => `tspto_imin(${a}, ${b})` },
};

export function binaryElem(fm: BinaryCpp, d: DType, a: ElemOperand, b: ElemOperand): string {
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
  log: { f: (a, F) => (F === "float" ? `tspto_logf(${a})` : `std::log(${a})`) },
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
/** A float-only unary op by an fp32 prelude function (the operand is a float tile element). */
const unaryF = (fn: string): ElementwiseFormula => ([x], d) => roundF(d, `${fn}(${x.code})`);

/**
 * pow(a, b): Math.pow. A constant exponent gets a fast path equal to the reference (0, 1, 2,
 * +-0.5, -1: exact or one correct rounding, with Math.pow's signed zeros and infinities; other
 * integers up to 64 in magnitude: binary powering in double, rounded once); anything else the
 * prelude's vectorizable tspto_pow_d in double (a number operand keeps all its bits), rounded once.
 */
function powFormula([a, b]: readonly ElemOperand[], d: DType, call: Call): string {
  const e = call.args[1];
  const v = e.kind === "const" && typeof e.value === "number" && a.kind === "tile" ? e.value : null;
  const x = a.code;
  const inf = "__builtin_inff()";
  if (v === 0) return roundF(d, "1.0f");                                     // NaN ** 0 = 1
  if (v === 1) return x;
  if (v === 2) return roundF(d, `(${x} * ${x})`);                            // exact in double: one rounding either way
  if (v === 0.5) return roundF(d, `tspto_self(${x} == -${inf}, ${inf}, std::sqrt(${x}) + 0.0f)`);   // (-0) ** 0.5 = +0, (-inf) ** 0.5 = inf
  if (v === -1) return roundF(d, `(1.0f / ${x})`);
  if (v === -0.5) return roundD(d, `tspto_seld(${x} == -${inf}, 0.0, 1.0 / (std::sqrt((double)${x}) + 0.0))`);
  if (v !== null && Number.isInteger(v) && Math.abs(v) <= 64) {
    const p = `tspto_powi<${Math.abs(v)}>((double)${x})`;
    return roundD(d, v > 0 ? p : `(1.0 / ${p})`);
  }
  return roundD(d, `tspto_pow_d(${dbl(a)}, ${dbl(b)})`);
}

const ELEMENTWISE_CPP: Record<string, ElementwiseFormula> = {
  fmod: ([a, b], d) => (isFloat(d) ? fromDouble(d, `std::fmod(${dbl(a)}, ${dbl(b)})`) : `${SAT[d]}(tspto_imod(${i64(a)}, ${i64(b)}))`),
  rem: ([a, b], d) => (isFloat(d) ? fromDouble(d, `tspto_frem(${dbl(a)}, ${dbl(b)})`) : `${SAT[d]}(tspto_irem(${i64(a)}, ${i64(b)}))`),
  bitAnd: ([a, b], d) => wrapTo(d, `${i64(a)} & ${i64(b)}`),
  bitOr: ([a, b], d) => wrapTo(d, `${i64(a)} | ${i64(b)}`),
  bitXor: ([a, b], d) => wrapTo(d, `${i64(a)} ^ ${i64(b)}`),
  bitNot: ([a], d) => wrapTo(d, `~${i64(a)}`),
  shl: ([a, n], d) => wrapTo(d, `tspto_shl(${i64(a)}, ${i64(n)})`),
  shr: ([a, n], d) => wrapTo(d, d === "uint8" ? `tspto_shr_u(${i64(a)}, ${i64(n)}, 8)` : `tspto_sar(${i64(a)}, ${i64(n)}, ${BIT_WIDTH[d] ?? 64})`),
  // the prelude's vectorizable fp32 functions, rounded once to float16 / bfloat16 (accuracy: the
  // prelude's table, docs/semantics.md)
  sin: unaryF("tspto_sinf"),
  cos: unaryF("tspto_cosf"),
  tanh: unaryF("tspto_tanhf"),
  erf: unaryF("tspto_erff"),
  sigmoid: unaryF("tspto_sigmoidf"),
  pow: powFormula,
  lrelu: ([x, s], d) => fromDouble(d, `tspto_blend<double>(${dbl(x)} > 0.0, ${dbl(x)}, ${dbl(x)} * ${dbl(s)})`),
  cmp: ([a, b], _d, call) => {
    const op = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" }[String(call.attrs.mode)];
    if (!op) throw new TsptoCompileError("E_CODEGEN", `internal: cmp mode ${JSON.stringify(call.attrs.mode)}`, call.span);
    return `(uint8_t)(${dbl(a)} ${op} ${dbl(b)})`;
  },
  // both operands loaded, then blended (tspto_blend): no conditional loads
  sel: ([m, a, b], d) => `tspto_blend<${scratchCType(d)}>((${m.kind === "tile" ? m.code : `(bool)(${m.code})`}) != 0, ${elemOf(d, a)}, ${elemOf(d, b)})`,
  expands: ([, v], d) => elemOf(d, v),
};
for (const [name, formula] of Object.entries(ELEMENTWISE_CPP)) defineElementwiseCpp(name, formula);

// ------------------------------------------------------------------ elementwise: cast, move, full, create
export type RoundModeName = "round" | "rint" | "floor" | "ceil" | "trunc";
/**
 * Convert an element of dtype `from` (scratch type) to dtype `to` (scratch type), like
 * castToDType(x, to, mode): the mode rounds every narrowing, to a float format too
 * (cast_modes.ts; `rint` is the plain nearest-even conversion).
 */
export function castElem(from: DType, to: DType, mode: RoundModeName, x: string): string {
  const directed = mode !== "rint" && castNarrows(from, to);
  const M = CAST_MODE_INDEX[mode];
  if (isFloat(from)) {
    if (isFloat(to)) {
      if (!directed) return roundF(to, x);
      return to === "float16" ? `tspto_cast_f16<${M}>(${x})` : `tspto_cast_bf16<${M}>(${x})`;
    }
    if (to === "bool") return `tspto_d2b((double)${x})`;
    return `${D2I[to]}(tspto_mode_${mode}((double)${x}))`;
  }
  // integer or bool source: the value is an integer (exact as a double: int64 within ±2^53)
  if (isFloat(to)) {
    if (!directed) return roundD(to, `(double)${x}`);
    if (to === "float32") return `tspto_d2f_mode<${M}>((double)${x})`;
    // through float rounded to odd: the second rounding then equals one rounding of the double
    return `tspto_cast_${to === "float16" ? "f16" : "bf16"}<${M}>(tspto_d2f_odd((double)${x}))`;
  }
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

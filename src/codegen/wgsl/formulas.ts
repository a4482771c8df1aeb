// WGSL formulas of the elementwise and scalar ops, keyed by registry op name (the webgpu
// counterpart of src/codegen/cpp/emitters/elementwise.ts and scalar.ts). Value conventions:
// a tile element is f32 (float32 / float16 / bfloat16, already rounded to its dtype) or i32
// (the integer dtypes and bool as 0 / 1); a scalar is f32, i32 or bool. Every result is
// rounded / saturated to its dtype as the registry's reference does, computed in fp32 and i32:
// where the reference computes in double (a float scalar that is not an fp32 value, the libm
// functions) the result may differ in the last fp32 bit, and integer sums and products that
// leave i32 saturate or wrap at 32 bits (README, webgpu).
import { BINARY, TsptoCompileError, UNARY, isFloat, toDType, type Call, type DType, type TileType } from "../../ir/index.js";
import type { CExpr, ElemOperand, ElementwiseEmitter, ScalarEmitter, ScalarCType } from "../cpp/emitters/index.js";
import { f32Lit, i32Lit } from "./syntax.js";

export const WGSL_FORMULAS = new Map<string, ElementwiseEmitter | ScalarEmitter>();
const elem = (name: string, emit: (call: Call, ops: readonly ElemOperand[], d: DType) => string) =>
  WGSL_FORMULAS.set(`tile.${name}`, { kind: "elementwise", emit: (call, ops) => emit(call, ops, (call.type as TileType).dtype) });

const SAT: Record<string, string> = { int8: "tspto_sat_i8", int16: "tspto_sat_i16", int32: "tspto_sat_i32", uint8: "tspto_sat_u8", bool: "tspto_sat_b" };
const D2I: Record<string, string> = { int8: "tspto_d2i8", int16: "tspto_d2i16", int32: "tspto_d2i32", uint8: "tspto_d2u8", bool: "tspto_d2b" };
const WRAP: Record<string, (v: string) => string> = {
  int8: (v) => `tspto_wrap_i8(${v})`, int16: (v) => `tspto_wrap_i16(${v})`, int32: (v) => v, uint8: (v) => `tspto_wrap_u8(${v})`, bool: (v) => `tspto_wrap_u8(${v})`,
};
const BITS: Partial<Record<DType, number>> = { int8: 8, int16: 16, int32: 32, uint8: 8 };

const int64Refused = (call: Call): never => {
  throw new TsptoCompileError("E_DTYPE", `'${call.op}' on int64 values is not supported on the webgpu platform (WGSL has no 64-bit integers)`, call.span,
    "use int32 (pl.INT32), or run on the cpu / interp platform");
};

/** Round an fp32 value to float dtype d. */
export const roundF = (d: DType, x: string): string => (d === "float16" ? `tspto_rnd_f16(${x})` : d === "bfloat16" ? `tspto_rnd_bf16(${x})` : x);
/** An operand as f32 / as i32 (a float truncated toward zero, saturating). */
const isIntCode = (x: ElemOperand) => !isFloat(x.dtype) && x.dtype !== "bool";
const f32Of = (x: ElemOperand): string => (isFloat(x.dtype) ? x.code : x.kind === "scalar" && x.dtype === "bool" ? `select(0.0f, 1.0f, ${x.code})` : `f32(${x.code})`);
const i32Of = (x: ElemOperand): string => (isFloat(x.dtype) ? `tspto_f2i(${x.code})` : x.kind === "scalar" && x.dtype === "bool" ? `select(0i, 1i, ${x.code})` : x.code);
/** An f32 value rounded to dtype d (floats), or converted to its element (integers: truncated, saturated). */
const fromF32 = (d: DType, v: string): string => (isFloat(d) ? roundF(d, v) : d === "bool" ? `tspto_d2b(${v})` : `${D2I[d]}(trunc(${v}))`);
/** An operand as an element of dtype d (a tile operand already is one). */
const elemOf = (d: DType, x: ElemOperand): string => {
  if (x.kind === "tile") return x.code;
  if (isFloat(d)) return roundF(d, f32Of(x));
  if (isFloat(x.dtype)) return fromF32(d, x.code);
  return `${SAT[d]}(${i32Of(x)})`;
};

// ------------------------------------------------------------------ binary
interface BinaryWgsl { f(a: string, b: string): string; i(a: string, b: string): string; i32(a: string, b: string): string; fi?(a: string, b: string): string }
const BINARY_WGSL: Record<string, BinaryWgsl> = {
  add: { f: (a, b) => `(${a} + ${b})`, i: (a, b) => `(${a} + ${b})`, i32: (a, b) => `tspto_add_sat(${a}, ${b})` },
  sub: { f: (a, b) => `(${a} - ${b})`, i: (a, b) => `(${a} - ${b})`, i32: (a, b) => `tspto_sub_sat(${a}, ${b})` },
  mul: { f: (a, b) => `(${a} * ${b})`, i: (a, b) => `(${a} * ${b})`, i32: (a, b) => `tspto_mul_sat(${a}, ${b})` },
  div: { f: (a, b) => `(${a} / ${b})`, fi: (a, b) => `select(${a} / ${b}, 0.0f, ${b} == 0.0f)`, i: (a, b) => `tspto_idiv(${a}, ${b})`, i32: (a, b) => `tspto_idiv(${a}, ${b})` },
  maximum: { f: (a, b) => `tspto_fmax(${a}, ${b})`, i: (a, b) => `max(${a}, ${b})`, i32: (a, b) => `max(${a}, ${b})` },
  minimum: { f: (a, b) => `tspto_fmin(${a}, ${b})`, i: (a, b) => `min(${a}, ${b})`, i32: (a, b) => `min(${a}, ${b})` },
};
for (const name of Object.keys(BINARY)) {
  const fm = BINARY_WGSL[name];
  if (!fm) continue;
  elem(name, (call, [a, b], d) => {
    if (isFloat(d)) return roundF(d, fm.f(f32Of(a), f32Of(b)));
    if (d === "int64") return int64Refused(call);
    if (d === "bool") return `tspto_d2b(${fm.f(f32Of(a), f32Of(b))})`;
    // an integer result with a float scalar operand: computed in float, truncated
    if ((a.kind === "scalar" && isFloat(a.dtype)) || (b.kind === "scalar" && isFloat(b.dtype))) return `${D2I[d]}(trunc(${(fm.fi ?? fm.f)(f32Of(a), f32Of(b))}))`;
    return d === "int32" ? fm.i32(i32Of(a), i32Of(b)) : `${SAT[d]}(${fm.i(i32Of(a), i32Of(b))})`;
  });
}

// ------------------------------------------------------------------ unary
interface UnaryWgsl { f(a: string): string; i?(a: string): string; i32?(a: string): string }
const UNARY_WGSL: Record<string, UnaryWgsl> = {
  exp: { f: (a) => `tspto_expf(${a})` },
  log: { f: (a) => `tspto_logf(${a})` },
  sqrt: { f: (a) => `sqrt(${a})` },
  rsqrt: { f: (a) => `(1.0f / sqrt(${a}))` },
  recip: { f: (a) => `(1.0f / ${a})` },
  neg: { f: (a) => `(-${a})`, i: (a) => `(-${a})`, i32: (a) => `tspto_neg_sat(${a})` },
  abs: { f: (a) => `abs(${a})`, i: (a) => `abs(${a})`, i32: (a) => `tspto_abs_sat(${a})` },
  relu: { f: (a) => `tspto_relu(${a})`, i: (a) => `max(${a}, 0i)`, i32: (a) => `max(${a}, 0i)` },
};
for (const name of Object.keys(UNARY)) {
  const fm = UNARY_WGSL[name];
  if (!fm) continue;
  elem(name, (call, [a], d) => {
    if (isFloat(d)) return roundF(d, fm.f(a.code));
    if (d === "int64") return int64Refused(call);
    if (d === "bool") return `tspto_d2b(${fm.f(f32Of(a))})`;
    if (!fm.i || !fm.i32) throw new TsptoCompileError("E_CODEGEN", `internal: tile.${name} has no integer form (dtype ${d})`, call.span);
    return d === "int32" ? fm.i32(a.code) : `${SAT[d]}(${fm.i(a.code)})`;
  });
}

// ------------------------------------------------------------------ the other elementwise ops (src/ir/ops/math.ts and the like)
const intOnly = (call: Call, d: DType) => { if (d === "int64") int64Refused(call); };
const unaryF = (fn: (x: string) => string) => (_c: Call, [x]: readonly ElemOperand[], d: DType) => fromF32(d, fn(f32Of(x)));
const FORMULAS: Record<string, (call: Call, ops: readonly ElemOperand[], d: DType) => string> = {
  fmod: (call, [a, b], d) => (isFloat(d) ? fromF32(d, `(${f32Of(a)} % ${f32Of(b)})`) : (intOnly(call, d), `${SAT[d]}(tspto_imod(${i32Of(a)}, ${i32Of(b)}))`)),
  rem: (call, [a, b], d) => (isFloat(d) ? fromF32(d, `tspto_frem(${f32Of(a)}, ${f32Of(b)})`) : (intOnly(call, d), `${SAT[d]}(tspto_irem(${i32Of(a)}, ${i32Of(b)}))`)),
  bitAnd: (call, [a, b], d) => (intOnly(call, d), WRAP[d](`(${i32Of(a)} & ${i32Of(b)})`)),
  bitOr: (call, [a, b], d) => (intOnly(call, d), WRAP[d](`(${i32Of(a)} | ${i32Of(b)})`)),
  bitXor: (call, [a, b], d) => (intOnly(call, d), WRAP[d](`(${i32Of(a)} ^ ${i32Of(b)})`)),
  bitNot: (call, [a], d) => (intOnly(call, d), WRAP[d](`(~${i32Of(a)})`)),
  shl: (call, [a, n], d) => (intOnly(call, d), WRAP[d](`tspto_shl(${i32Of(a)}, ${i32Of(n)})`)),
  shr: (call, [a, n], d) => (intOnly(call, d), WRAP[d](d === "uint8" || d === "bool" ? `tspto_shr_u(${i32Of(a)}, ${i32Of(n)}, 8)` : `tspto_sar(${i32Of(a)}, ${i32Of(n)}, ${BITS[d] ?? 32})`)),
  // fp32 libm of the prelude: WGSL's sin / cos / tanh / log may be far less accurate (and tanh
  // overflows to NaN for large x on some implementations)
  sin: unaryF((x) => `tspto_sinf(${x})`),
  cos: unaryF((x) => `tspto_cosf(${x})`),
  tanh: unaryF((x) => `tspto_tanhf(${x})`),
  erf: unaryF((x) => `tspto_erf(${x})`),
  sigmoid: unaryF((x) => `(1.0f / (1.0f + tspto_expf(-${x})))`),
  pow: (_c, [a, b], d) => fromF32(d, `tspto_pow(${f32Of(a)}, ${f32Of(b)})`),
  lrelu: (_c, [x, s], d) => fromF32(d, `select(${f32Of(x)} * ${f32Of(s)}, ${f32Of(x)}, ${f32Of(x)} > 0.0f)`),
  cmp: (call, [a, b]) => {
    const op = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" }[String(call.attrs.mode)];
    if (!op) throw new TsptoCompileError("E_CODEGEN", `internal: cmp mode ${JSON.stringify(call.attrs.mode)}`, call.span);
    // integers compare exactly as i32; a float on either side compares in fp32
    const ints = (isIntCode(a) || a.dtype === "bool") && (isIntCode(b) || b.dtype === "bool");
    return ints ? `select(0i, 1i, ${i32Of(a)} ${op} ${i32Of(b)})` : `select(0i, 1i, ${f32Of(a)} ${op} ${f32Of(b)})`;
  },
  sel: (_c, [m, a, b], d) => `select(${elemOf(d, b)}, ${elemOf(d, a)}, ${m.kind === "tile" ? `${m.code} != 0i` : m.dtype === "bool" ? m.code : `${m.code} != ${isFloat(m.dtype) ? "0.0f" : "0i"}`})`,
  expands: (_c, [, v], d) => elemOf(d, v),
};
for (const [name, f] of Object.entries(FORMULAS)) elem(name, f);

// ------------------------------------------------------------------ cast, move, full, create
/** A constant already representable in dtype d, as a scratch element. */
export const scratchLitW = (d: DType, v: number): string => (isFloat(d) ? f32Lit(v) : i32Lit(v));
export type RoundModeName = "round" | "rint" | "floor" | "ceil" | "trunc";
const CAST_MODE: Record<RoundModeName, number> = { round: 0, rint: 1, floor: 2, ceil: 3, trunc: 4 };
export function castElem(from: DType, to: DType, mode: RoundModeName, x: string): string {
  if (isFloat(from)) {
    // to float16 / bfloat16 in the cast's mode (float32 -> float32 is exact)
    if (to === "float16" || to === "bfloat16") return `tspto_cast_${to === "float16" ? "f16" : "bf16"}(${x}, ${CAST_MODE[mode]}u)`;
    if (isFloat(to)) return roundF(to, x);
    if (to === "bool") return `tspto_d2b(${x})`;
    return `${D2I[to]}(tspto_mode_${mode}(${x}))`;
  }
  // integer or bool source: the value is an integer
  // (int32 beyond 2^24 is rounded to fp32 first: no doubles in WGSL)
  if (to === "float16" || to === "bfloat16") return `tspto_cast_${to === "float16" ? "f16" : "bf16"}(f32(${x}), ${CAST_MODE[mode]}u)`;
  if (isFloat(to)) return roundF(to, `f32(${x})`);
  if (from === to && to !== "bool") return x;
  return `${SAT[to]}(${x})`;
}
elem("cast", (call, [a], d) => {
  if (a.dtype === "int64" || d === "int64") int64Refused(call);
  return castElem(a.dtype, d, String(call.attrs.mode ?? "round") as RoundModeName, a.code);
});
elem("move", (_c, [a]) => a.code);
// reshape: the same elements in the same order (a tile's linear index is unchanged)
elem("reshape", (_c, [a]) => a.code);
elem("full", (call, _ops, d) => (d === "int64" ? int64Refused(call) : scratchLitW(d, toDType(Number(call.attrs.value), d))));
elem("create", (call, _ops, d) => (d === "int64" ? int64Refused(call) : scratchLitW(d, 0)));

// ------------------------------------------------------------------ scalars (scalar.*): i32 / f32 / bool
const asF = (a: CExpr) => (a.ctype === "double" ? a.code : a.ctype === "bool" ? `select(0.0f, 1.0f, ${a.code})` : `f32(${a.code})`);
const asI = (a: CExpr) => (a.ctype === "int64_t" ? a.code : a.ctype === "bool" ? `select(0i, 1i, ${a.code})` : `tspto_f2i(${a.code})`);
const resultCType = (call: Call): ScalarCType => (call.type.kind === "scalar" ? (isFloat(call.type.dtype) ? "double" : call.type.dtype === "bool" ? "bool" : "int64_t") : "int64_t");
const arith = (op: string) => (call: Call, [a, b]: readonly CExpr[]): CExpr =>
  (resultCType(call) === "double" ? { code: `(${asF(a)} ${op} ${asF(b)})`, ctype: "double" } : { code: `(${asI(a)} ${op} ${asI(b)})`, ctype: "int64_t" });
const cmp = (op: string) => (_call: Call, [a, b]: readonly CExpr[]): CExpr => {
  if (a.ctype === "bool" && b.ctype === "bool") return { code: `(${a.code} ${op} ${b.code})`, ctype: "bool" };
  if (a.ctype === "double" || b.ctype === "double") return { code: `(${asF(a)} ${op} ${asF(b)})`, ctype: "bool" };
  return { code: `(${asI(a)} ${op} ${asI(b)})`, ctype: "bool" };
};
const toInt = (fn: string) => (_call: Call, [a]: readonly CExpr[]): CExpr => ({ code: a.ctype === "double" ? `tspto_d2i32(${fn}(${a.code}))` : asI(a), ctype: "int64_t" });
const minmax = (fn: "min" | "max") => (call: Call, [a, b]: readonly CExpr[]): CExpr =>
  (resultCType(call) === "double" ? { code: `tspto_f${fn}(${asF(a)}, ${asF(b)})`, ctype: "double" } : { code: `${fn}(${asI(a)}, ${asI(b)})`, ctype: "int64_t" });
const asB = (a: CExpr) => (a.ctype === "bool" ? a.code : `(${a.code} != ${a.ctype === "double" ? "0.0f" : "0i"})`);
const SCALAR_WGSL: Record<string, ScalarEmitter["emit"]> = {
  add: arith("+"), sub: arith("-"), mul: arith("*"),
  div: (_c, [a, b]) => ({ code: `(${asF(a)} / ${asF(b)})`, ctype: "double" }),
  mod: (call, [a, b]) => (resultCType(call) === "double" ? { code: `(${asF(a)} % ${asF(b)})`, ctype: "double" } : { code: `tspto_imod(${asI(a)}, ${asI(b)})`, ctype: "int64_t" }),
  lt: cmp("<"), le: cmp("<="), gt: cmp(">"), ge: cmp(">="), eq: cmp("=="), ne: cmp("!="),
  and: (_c, [a, b]) => ({ code: `(${asB(a)} && ${asB(b)})`, ctype: "bool" }),
  or: (_c, [a, b]) => ({ code: `(${asB(a)} || ${asB(b)})`, ctype: "bool" }),
  not: (_c, [a]) => ({ code: `(!${asB(a)})`, ctype: "bool" }),
  neg: (call, [a]) => (resultCType(call) === "double" ? { code: `(-${asF(a)})`, ctype: "double" } : { code: `(-${asI(a)})`, ctype: "int64_t" }),
  min: minmax("min"), max: minmax("max"),
  floor: toInt("floor"), ceil: toInt("ceil"), trunc: toInt("trunc"),
};
for (const [name, emit] of Object.entries(SCALAR_WGSL)) WGSL_FORMULAS.set(`scalar.${name}`, { kind: "scalar", emit });

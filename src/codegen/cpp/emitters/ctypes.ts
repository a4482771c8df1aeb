// C types and literals of the cpu code generator's emitted C++: the scratch / storage / scalar
// C type of each dtype, load/store conversions, rounding to a dtype, literal spelling.
import { type DType, type Span, isFloat } from "../../../ir/index.js";

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

export const SAT: Record<string, string> = { int8: "tspto_sat_i8", int16: "tspto_sat_i16", int32: "tspto_sat_i32", int64: "tspto_sat_i64", uint8: "tspto_sat_u8", bool: "tspto_sat_b" };
export const D2I: Record<string, string> = { int8: "tspto_d2i8", int16: "tspto_d2i16", int32: "tspto_d2i32", int64: "tspto_d2i64", uint8: "tspto_d2u8", bool: "tspto_d2b" };

/** Round a float (fp32) expression to a float dtype's value set. */
export const roundF = (d: DType, x: string): string => (d === "float16" ? `tspto_rnd_f16(${x})` : d === "bfloat16" ? `tspto_rnd_bf16(${x})` : x);
/** Round a double expression (one correct rounding) to a float dtype's value, as float. */
export const roundD = (d: DType, x: string): string =>
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

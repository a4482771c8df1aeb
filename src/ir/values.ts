// Runtime values of the reference semantics (the interp platform and the registry's
// `evaluate` functions). Tensors hold their dtype's host storage (16-bit floats as bit
// patterns); tiles hold numbers (already rounded to the tile's dtype).
import type { DType, Mem } from "./types.js";
import type { Span } from "./nodes.js";
import { f16BitsToF32, bf16BitsToF32, f32ToF16Bits, f32ToBf16Bits, roundToDType, castToDType, castNarrows } from "./dtype.js";

export type Storage = Float32Array | Uint16Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Uint8Array;

export interface TensorValue {
  readonly kind: "tensor";
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Row-major contiguous storage. */
  readonly data: Storage;
}
export interface TileValue {
  readonly kind: "tile";
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly mem: Mem;
  readonly validShape: readonly number[] | null;
  readonly data: Float64Array;
}
export type Value = number | boolean | TensorValue | TileValue | readonly Value[] | undefined;

export interface EvalEnv {
  /** Throw a runtime error (e.g. a dynamic window out of bounds) located at span. */
  fail(message: string, span: Span): never;
  /** The extents of the dynamic dimensions of the running function's parameters, by name. */
  readonly dims?: ReadonlyMap<string, number>;
}

export function readElem(t: TensorValue, i: number): number {
  const d = t.data;
  switch (t.dtype) {
    case "float16": return f16BitsToF32((d as Uint16Array)[i]);
    case "bfloat16": return bf16BitsToF32((d as Uint16Array)[i]);
    case "int64": return Number((d as BigInt64Array)[i]);
    default: return (d as Float32Array)[i];
  }
}
/** Store `v` (already representable in t.dtype) into element i. */
export function writeElem(t: TensorValue, i: number, v: number): void {
  const d = t.data;
  switch (t.dtype) {
    case "float16": (d as Uint16Array)[i] = f32ToF16Bits(v); break;
    case "bfloat16": (d as Uint16Array)[i] = f32ToBf16Bits(v); break;
    case "int64": (d as BigInt64Array)[i] = v >= 2 ** 63 ? INT64_MAX : v <= -(2 ** 63) ? INT64_MIN : BigInt(Math.trunc(v)); break;
    case "bool": (d as Uint8Array)[i] = v ? 1 : 0; break;
    default: (d as Float32Array)[i] = v; break;
  }
}

const INT64_MAX = (1n << 63n) - 1n, INT64_MIN = -(1n << 63n);

export function mkTile(shape: readonly number[], dtype: DType, mem: Mem = "Vec", validShape: readonly number[] | null = null, data?: Float64Array): TileValue {
  const n = shape.reduce((a, b) => a * b, 1);
  return { kind: "tile", shape: [...shape], dtype, mem, validShape: validShape ? [...validShape] : null, data: data ?? new Float64Array(n) };
}

/**
 * The value an op result of `dtype` holds: floats round to the dtype (fp32 first, as the
 * device computes in fp32); integer results truncate toward zero and saturate to the type's
 * range (NaN -> 0); bool is v != 0 (NaN != 0, as in C).
 */
export function toDType(v: number, dtype: DType): number {
  switch (dtype) {
    case "float32": return Math.fround(v);
    case "float16": case "bfloat16": return roundToDType(Math.fround(v), dtype);
    case "bool": return v !== 0 ? 1 : 0;
    default: return roundToDType(v, dtype, "trunc");
  }
}
export { roundToDType, castToDType, castNarrows };

// IR types. Tensors live in device memory (DDR); tiles are on-chip buffers of a core.
import { DTYPES, isDType, dtypeBytes, type DType } from "./dtype.js";
export { DTYPES, isDType, type DType };
export const DTYPE_BYTES: Record<DType, number> = Object.fromEntries(DTYPES.map((d) => [d, dtypeBytes(d)])) as Record<DType, number>;
export const isFloat = (d: DType) => d === "float32" || d === "float16" || d === "bfloat16";
export const isInt = (d: DType) => !isFloat(d) && d !== "bool";
/** `pl.` constant names of the dtypes, used by the printer and parser. */
export const DTYPE_CONST: Record<DType, string> = {
  float32: "FP32", float16: "FP16", bfloat16: "BF16", int8: "INT8", int16: "INT16", int32: "INT32",
  int64: "INT64", uint8: "UINT8", bool: "BOOL",
};

export type Mem = "Vec" | "Mat" | "Left" | "Right" | "Acc" | "Bias";
export const MEMS: readonly Mem[] = ["Vec", "Mat", "Left", "Right", "Acc", "Bias"];

/** A dimension: a static extent, or a symbolic (dynamic) dimension's name. */
export type Dim = number | string;
/**
 * A tile's valid extent known only at run time (`pl.load(x, offs, shape, { validShape: [n - i, 64] })`
 * has validShape ["?", 64]). The value travels as an operand of the op that introduces it; the
 * type only says "runtime" (so tiles with runtime extents keep one type across loop iterations).
 */
export const RUNTIME_DIM = "?";
/** Does a tile type have an extent known only at run time? */
export const hasRuntimeValid = (t: { readonly validShape: readonly Dim[] | null }): boolean =>
  t.validShape !== null && t.validShape.some((d) => typeof d !== "number");

export interface ScalarType { readonly kind: "scalar"; readonly dtype: DType }
export interface TensorType { readonly kind: "tensor"; readonly shape: readonly Dim[]; readonly dtype: DType }
export interface TileType {
  readonly kind: "tile";
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly mem: Mem;
  /** Region holding real data (null: the whole tile). */
  readonly validShape: readonly Dim[] | null;
  /** Byte offset in the per-core scratch arena, set by memory planning (null before). */
  readonly addr: number | null;
}
/** Lists of scalars (load/store offsets). */
export interface ListType { readonly kind: "list"; readonly elems: readonly Type[] }
/** Multiple results (calls of functions returning several values). */
export interface TupleType { readonly kind: "tuple"; readonly elems: readonly Type[] }
export interface VoidType { readonly kind: "void" }
export type Type = ScalarType | TensorType | TileType | ListType | TupleType | VoidType;

export const scalarT = (dtype: DType): ScalarType => ({ kind: "scalar", dtype });
export const tensorT = (shape: readonly Dim[], dtype: DType): TensorType => ({ kind: "tensor", shape: [...shape], dtype });
export const tileT = (
  shape: readonly number[], dtype: DType, mem: Mem = "Vec", validShape: readonly Dim[] | null = null, addr: number | null = null,
): TileType => ({ kind: "tile", shape: [...shape], dtype, mem, validShape: validShape ? [...validShape] : null, addr });
export const tupleT = (elems: readonly Type[]): TupleType => ({ kind: "tuple", elems: [...elems] });
export const voidT: VoidType = { kind: "void" };
/** Loop indices and scalar index arithmetic. */
export const INDEX = scalarT("int64");

export function typeEqual(a: Type, b: Type): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case "scalar": return a.dtype === (b as ScalarType).dtype;
    case "tensor": { const t = b as TensorType; return a.dtype === t.dtype && dimsEqual(a.shape, t.shape); }
    case "tile": {
      const t = b as TileType;
      return a.dtype === t.dtype && a.mem === t.mem && a.addr === t.addr && dimsEqual(a.shape, t.shape) &&
        (a.validShape === null ? t.validShape === null : t.validShape !== null && dimsEqual(a.validShape, t.validShape));
    }
    case "list": case "tuple": {
      const t = b as ListType | TupleType;
      return a.elems.length === t.elems.length && a.elems.every((e, i) => typeEqual(e, t.elems[i]));
    }
    case "void": return true;
  }
}
export const dimsEqual = (a: readonly Dim[], b: readonly Dim[]) => a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * The dynamic dimensions (symbol names) of a list of shapes, in order of first appearance.
 * A program passes them after its entry parameters at launch, and every InCore call after
 * the callee's parameters, in this order (each the extent of the symbol's first occurrence).
 */
export function dimSymbolsOf(shapes: readonly (readonly Dim[] | null | undefined)[]): string[] {
  const out: string[] = [];
  for (const s of shapes) for (const d of s ?? []) if (typeof d === "string" && !out.includes(d)) out.push(d);
  return out;
}

export function shapeStr(shape: readonly Dim[]): string {
  return `[${shape.map((d) => (typeof d === "number" ? String(d) : JSON.stringify(d))).join(", ")}]`;
}

/** Human-readable type, used in error messages. */
export function typeStr(t: Type): string {
  switch (t.kind) {
    case "scalar": return `Scalar<${t.dtype}>`;
    case "tensor": return `Tensor<${shapeStr(t.shape)}, ${t.dtype}>`;
    case "tile": return `Tile<${shapeStr(t.shape)}, ${t.dtype}, ${t.mem}>`;
    case "list": return `[${t.elems.map(typeStr).join(", ")}]`;
    case "tuple": return `(${t.elems.map(typeStr).join(", ")})`;
    case "void": return "void";
  }
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * Bytes per element of a tile in the per-core scratch arena. Floating tiles (float32,
 * float16, bfloat16) hold fp32 values (arithmetic is done in fp32; results are rounded to
 * the tile's dtype), integer tiles their own width, bool one byte.
 */
export const tileElemBytes = (d: DType): number => (isFloat(d) ? 4 : DTYPE_BYTES[d]);
/** Bytes a tile occupies in scratch, rounded up to 64-byte alignment. */
export const tileBytes = (t: TileType): number => Math.ceil((numel(t.shape) * tileElemBytes(t.dtype)) / 64) * 64;

// Tensor-likes: objects from other libraries (ndarray, onnxruntime, ...) with a TypedArray
// `data` and a `shape` or `dims`, read without copying. (HostTensor wraps the result:
// asTensorLike in host_tensor.ts.)
import {
  DTYPES, dtypeOfTypedArray, isDType, isTypedArray, typedArrayFor, type DType, type StorageArray, type TypedArray,
} from "../dtype.js";
import { argError, checkShape, fmtAny, productOf, shapeStr } from "./check.js";

/** A normalized tensor-like: contiguous row-major `data` in `dtype`'s host storage. */
export interface TensorLike {
  readonly data: StorageArray;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/**
 * What a caller may pass where a tensor is expected: a `HostTensor`, or any object with a
 * TypedArray `data` and a `shape` (ndarray) or `dims` (onnxruntime), optionally a `dtype` or
 * `type` string.
 */
export interface TensorLikeInput {
  readonly data: TypedArray | ArrayBufferView;
  readonly shape?: readonly number[];
  readonly dims?: readonly number[];
  readonly dtype?: string;
  readonly type?: string;
}

const Float16ArrayCtor: (new (...args: never[]) => ArrayBufferView) | undefined =
  (globalThis as { Float16Array?: new (...args: never[]) => ArrayBufferView }).Float16Array;

/** dtype/type strings of ndarray / onnxruntime objects that map onto a tspto dtype. */
const DTYPE_ALIASES: Record<string, DType> = { bigint64: "int64", uint8_clamped: "uint8" };

export function viewAs<T extends StorageArray>(ctor: { new (b: ArrayBufferLike, off: number, len: number): T }, a: ArrayBufferView & { length: number }): T {
  return new ctor(a.buffer, a.byteOffset, a.length);
}

/**
 * Read a tensor-like without copying: an object with a TypedArray `data` and a `shape` or
 * `dims` gives its contiguous element data (sharing the buffer), shape and dtype.
 * The dtype comes from `dtype`/`type` when present, else from the TypedArray class.
 * Returns `null` when `x` is not tensor-like at all; throws a TsptoArgumentError when it is
 * tensor-like but unusable (unsupported or ambiguous element type, shape/length mismatch,
 * non-contiguous strides).
 */
export function readTensorLike(x: unknown): TensorLike | null {
  if (x === null || typeof x !== "object") return null;
  const o = x as Record<string, unknown>;
  if (!("data" in o) || (!("shape" in o) && !("dims" in o))) return null;
  let raw: unknown;
  try {
    raw = o.data;
  } catch (e) {
    throw argError("E_TENSOR_LIKE", `tensor-like data is not readable on the host: ${(e as Error).message}`);
  }
  if (!isTypedArray(raw)) return null;
  const shapeRaw = o.shape !== undefined ? o.shape : o.dims;
  const shape = checkShape(
    Array.isArray(shapeRaw) ? shapeRaw.map((d) => (typeof d === "bigint" ? Number(d) : d)) : shapeRaw,
    "tensor-like");
  const size = productOf(shape);

  const tag = typeof o.dtype === "string" ? o.dtype : typeof o.type === "string" ? o.type : undefined;
  let dtype: DType;
  let data: ArrayBufferView & { length: number } = raw as TypedArray;
  if (tag !== undefined) {
    const d = isDType(tag) ? tag : DTYPE_ALIASES[tag];
    if (d === undefined) {
      throw argError("E_DTYPE", `tensor-like dtype ${JSON.stringify(tag)} is not supported; supported: ${DTYPES.join(", ")}`);
    }
    dtype = d;
  } else {
    const d = dtypeOfTypedArray(raw) ?? (raw instanceof Uint8ClampedArray ? "uint8"
      : Float16ArrayCtor && raw instanceof Float16ArrayCtor ? "float16" : undefined);
    if (d === undefined) {
      if (raw instanceof Uint16Array) {
        throw argError("E_DTYPE", 
          `tensor-like data is a Uint16Array but no dtype is given; set dtype (or type) to "float16" or "bfloat16"`);
      }
      throw argError("E_DTYPE", 
        `tensor-like data is a ${raw.constructor.name}, which has no tspto dtype; supported: ${DTYPES.join(", ")}`);
    }
    dtype = d;
  }
  const ctor = typedArrayFor(dtype);
  if (!(data instanceof ctor)) {
    if (dtype === "uint8" && data instanceof Uint8ClampedArray) data = viewAs(Uint8Array, data);
    else if (dtype === "float16" && Float16ArrayCtor && data instanceof Float16ArrayCtor) data = viewAs(Uint16Array, data as never);
    else {
      throw argError("E_DTYPE", 
        `tensor-like has dtype ${JSON.stringify(tag ?? dtype)} but its data is a ${raw.constructor.name} (expected ${ctor.name})`);
    }
  }

  // ndarray-style offset / stride
  const offset = typeof o.offset === "number" ? o.offset : 0;
  const stride = Array.isArray(o.stride) ? (o.stride as unknown[]) : undefined;
  if (stride !== undefined) {
    let expect = 1;
    for (let k = shape.length - 1; k >= 0; k--) {
      if (shape[k] !== 1 && stride[k] !== expect) {
        throw argError("E_TENSOR_LIKE", 
          `tensor-like is not contiguous (stride ${fmtAny(stride)} for shape ${shapeStr(shape)}); it cannot be used without copying, make it contiguous first`);
      }
      expect *= shape[k]!;
    }
  }
  if (offset !== 0 || ((stride !== undefined || "offset" in o) && data.length > size)) {
    if (!Number.isInteger(offset) || offset < 0 || offset + size > data.length) {
      throw argError("E_TENSOR_LIKE", 
        `tensor-like offset ${offset} + shape ${shapeStr(shape)} (${size} elements) exceeds data length ${data.length}`);
    }
    data = (data as StorageArray).subarray(offset, offset + size);
  }
  if (data.length !== size) {
    throw argError("E_SHAPE", `tensor-like shape ${shapeStr(shape)} (${size} elements) does not match data length ${data.length}`);
  }
  return { data: data as StorageArray, shape, dtype };
}

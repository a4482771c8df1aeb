// Constructors of host tensors: tensor (from TypedArrays, nested arrays, tensor-likes, numbers),
// zeros and full.
import {
  dtypeOfTypedArray, isTypedArray, saturateInt64, toStorageValue, typedArrayFor, type DType, type StorageArray, type TypedArray,
} from "../dtype.js";
import { argError, checkDType, checkShape, fmtAny, productOf, shapeStr } from "./check.js";
import { asTensorLike, HostTensor } from "./host_tensor.js";
import { viewAs, type TensorLikeInput } from "./tensor_like.js";

/** Nested arrays of numbers (or booleans / bigints), e.g. `[[1, 2], [3, 4]]`. */
export type NestedNumbers = number | boolean | bigint | readonly NestedNumbers[];

function fillFromValues(values: ArrayLike<number | bigint | boolean>, dtype: DType): StorageArray {
  const out = new (typedArrayFor(dtype))(values.length) as StorageArray;
  const w = out as { [i: number]: number | bigint };
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v === "bigint") {
      w[i] = dtype === "int64" ? saturateInt64(v) : toStorageValue(Number(v), dtype);
    } else if (typeof v === "boolean") {
      w[i] = toStorageValue(v ? 1 : 0, dtype);
    } else if (typeof v === "number") {
      w[i] = toStorageValue(v, dtype);
    } else {
      throw argError("E_ARG", `tensor: element ${i} is ${fmtAny(v)}, expected a number`);
    }
  }
  return out;
}

export function flattenNested(data: readonly NestedNumbers[]): { shape: number[]; values: (number | bigint | boolean)[] } {
  const shape: number[] = [];
  let level: unknown = data;
  while (Array.isArray(level)) {
    shape.push(level.length);
    level = level[0];
  }
  const values: (number | bigint | boolean)[] = [];
  const walk = (x: unknown, depth: number, path: number[]): void => {
    if (depth === shape.length) {
      if (Array.isArray(x)) throw argError("E_SHAPE", `tensor: ragged nested array: unexpected array at ${shapeStr(path)}`);
      values.push(x as number);
      return;
    }
    if (!Array.isArray(x)) {
      throw argError("E_SHAPE", `tensor: ragged nested array: expected an array of length ${shape[depth]} at ${shapeStr(path)}, got ${fmtAny(x)}`);
    }
    if (x.length !== shape[depth]) {
      throw argError("E_SHAPE", `tensor: ragged nested array: expected length ${shape[depth]} at ${shapeStr(path)}, got ${x.length}`);
    }
    for (let i = 0; i < x.length; i++) walk(x[i], depth + 1, [...path, i]);
  };
  walk(data, 0, []);
  return { shape, values };
}

/**
 * Make a host tensor.
 * - A TypedArray that is the dtype's storage class (`Float32Array` for float32, `Uint16Array`
 *   for float16/bfloat16, ...) is used WITHOUT copying. A `Uint16Array` needs an explicit
 *   dtype. Other arrays (e.g. `Float64Array`) are converted (float32 by default).
 * - Nested arrays infer the shape; a flat array/ArrayLike is 1-D unless `shape` is given.
 * - A tensor-like (`{data, shape|dims}`) is wrapped without copying unless `dtype` differs.
 * - A single number makes a 0-d tensor.
 * The default dtype is float32. A `shape` whose size differs from the data length throws.
 */
export function tensor(
  data: NestedNumbers | ArrayLike<number> | TypedArray | TensorLikeInput,
  opts: { shape?: readonly number[]; dtype?: DType } = {},
): HostTensor {
  const want = opts.dtype === undefined ? undefined : checkDType(opts.dtype, "tensor");
  const given = opts.shape === undefined ? undefined : checkShape(opts.shape, "tensor");
  const withShape = (inferred: readonly number[], length: number): readonly number[] => {
    if (given === undefined) return inferred;
    if (productOf(given) !== length) {
      throw argError("E_SHAPE", `tensor: shape ${shapeStr(given)} (${productOf(given)} elements) does not match data length ${length}`);
    }
    return given;
  };

  if (isTypedArray(data)) {
    const arr = data as TypedArray;
    if (want !== undefined && arr instanceof typedArrayFor(want)) {
      return new HostTensor(arr as StorageArray, withShape([arr.length], arr.length), want);
    }
    if (want === undefined) {
      const d = dtypeOfTypedArray(arr);
      if (d !== undefined) return new HostTensor(arr as StorageArray, withShape([arr.length], arr.length), d);
      if (arr instanceof Uint16Array) {
        throw argError("E_ARG", 
          `tensor: a Uint16Array is ambiguous (float16 or bfloat16 bit patterns); pass { dtype: "float16" } or { dtype: "bfloat16" }`);
      }
      if (arr instanceof Uint8ClampedArray) {
        return new HostTensor(viewAs(Uint8Array, arr), withShape([arr.length], arr.length), "uint8");
      }
    }
    const dt = want ?? (arr instanceof Uint32Array || arr instanceof BigUint64Array ? "int64" : "float32");
    return new HostTensor(fillFromValues(arr as ArrayLike<number | bigint>, dt), withShape([arr.length], arr.length), dt);
  }

  if (data !== null && typeof data === "object" && !Array.isArray(data) && "data" in data) {
    const tl = asTensorLike(data);
    if (tl !== null) {
      const t = want !== undefined && want !== tl.dtype ? tl.astype(want) : tl;
      return given === undefined ? t : t.reshape(withShape(t.shape, t.size));
    }
  }

  const dt = want ?? "float32";
  if (typeof data === "number" || typeof data === "boolean" || typeof data === "bigint") {
    return new HostTensor(fillFromValues([data], dt), withShape([], 1), dt);
  }
  if (Array.isArray(data)) {
    const { shape, values } = flattenNested(data as readonly NestedNumbers[]);
    return new HostTensor(fillFromValues(values, dt), withShape(shape, values.length), dt);
  }
  if (data !== null && typeof data === "object" && typeof (data as ArrayLike<number>).length === "number") {
    const al = data as ArrayLike<number>;
    return new HostTensor(fillFromValues(al, dt), withShape([al.length], al.length), dt);
  }
  throw argError("E_TENSOR_LIKE", `tensor: expected a TypedArray, a (nested) array of numbers, a tensor-like or a number, got ${fmtAny(data)}`);
}

/** A tensor of zeros. */
export function zeros(shape: readonly number[], dtype: DType = "float32"): HostTensor {
  const s = checkShape(shape, "zeros");
  const d = checkDType(dtype, "zeros");
  return new HostTensor(new (typedArrayFor(d))(productOf(s)) as StorageArray, s, d);
}

/** A tensor filled with `value` (converted to the dtype). */
export function full(shape: readonly number[], value: number, dtype: DType = "float32"): HostTensor {
  const s = checkShape(shape, "full");
  const d = checkDType(dtype, "full");
  if (typeof value !== "number" && typeof value !== "boolean" && typeof value !== "bigint") {
    throw argError("E_ARG", `full: value must be a number, got ${fmtAny(value)}`);
  }
  const out = new (typedArrayFor(d))(productOf(s)) as StorageArray;
  const v = typeof value === "bigint" ? (d === "int64" ? saturateInt64(value) : toStorageValue(Number(value), d))
    : toStorageValue(Number(value), d);
  (out as { fill(v: number | bigint): unknown }).fill(v);
  return new HostTensor(out, s, d);
}

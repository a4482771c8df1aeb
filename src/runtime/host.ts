/**
 * Host tensors: the torch stand-in used by examples, tests and the runtime's argument packing.
 *
 * A `HostTensor` is a row-major (C-contiguous) view of a TypedArray: `data` is the dtype's
 * host storage (see `typedArrayFor`): float16/bfloat16 as 16-bit patterns, int64 as bigints,
 * bool as 0/1 bytes. Numeric helpers (`get`, `toArray`, arithmetic, `assertClose`) decode to
 * JS numbers.
 *
 * Conversion of a number to an integer dtype (in `tensor`, `full`, `astype` and arithmetic)
 * uses `roundToDType`'s default mode "round" (half away from zero) then saturates, except
 * integer division, which truncates toward zero.
 */

import {
  type DType, type RoundMode, type StorageArray, type TypedArray,
  DTYPES, dtypeBytes, dtypeOfTypedArray, fromStorageValue, isDType, isFloatDType, isTypedArray,
  roundToDType, saturateInt64, toStorageValue, typedArrayFor,
} from "./dtype.js";

import { TsptoArgumentError } from "../ir/errors.js";

export type { DType } from "./dtype.js";

/** Every validation failure of this module: a TsptoArgumentError with a stable code. */
function argError(code: string, detail: string): TsptoArgumentError {
  return new TsptoArgumentError(code, detail);
}

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

/** Nested arrays of numbers (or booleans / bigints), e.g. `[[1, 2], [3, 4]]`. */
export type NestedNumbers = number | boolean | bigint | readonly NestedNumbers[];

type BinOp = "add" | "sub" | "mul" | "div";

function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

function productOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Validate a shape: an array of non-negative safe integers. Returns a frozen copy. */
function checkShape(shape: unknown, who: string): readonly number[] {
  const ok = Array.isArray(shape) && shape.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d >= 0);
  if (!ok) {
    const got = Array.isArray(shape) ? `[${shape.map((d) => fmtAny(d)).join(", ")}]` : fmtAny(shape);
    throw argError("E_SHAPE", `${who}: shape must be an array of non-negative integers, got ${got}`);
  }
  return Object.freeze([...(shape as number[])]);
}

function fmtAny(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (Array.isArray(x)) return `[${x.map(fmtAny).join(", ")}]`;
  if (x !== null && typeof x === "object") return x.constructor?.name ?? "object";
  return String(x);
}

function checkDType(dtype: unknown, who: string): DType {
  if (!isDType(dtype)) {
    throw argError("E_DTYPE", `${who}: dtype must be one of ${DTYPES.join(", ")}, got ${fmtAny(dtype)}`);
  }
  return dtype;
}

function unravel(flat: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length);
  for (let k = shape.length - 1; k >= 0; k--) {
    const d = shape[k]!;
    idx[k] = d === 0 ? 0 : flat % d;
    flat = d === 0 ? 0 : Math.floor(flat / d);
  }
  return idx;
}

export class HostTensor implements TensorLike {
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly data: StorageArray;

  /**
   * Wrap `data` (not copied) as a tensor of `shape` and `dtype`. `data` must be `dtype`'s host
   * storage class (see `typedArrayFor`) and hold exactly `prod(shape)` elements.
   */
  constructor(data: StorageArray, shape: readonly number[], dtype: DType) {
    this.dtype = checkDType(dtype, "HostTensor");
    this.shape = checkShape(shape, "HostTensor");
    const ctor = typedArrayFor(this.dtype);
    if (!(data instanceof ctor)) {
      throw argError("E_DTYPE", 
        `HostTensor: dtype ${this.dtype} is stored in a ${ctor.name}, got ${fmtAny(data)}`);
    }
    const size = productOf(this.shape);
    if (data.length !== size) {
      throw argError("E_SHAPE", 
        `HostTensor: shape ${shapeStr(this.shape)} (${size} elements) does not match data length ${data.length}`);
    }
    this.data = data;
  }

  /** Number of elements. */
  get size(): number {
    return this.data.length;
  }

  get ndim(): number {
    return this.shape.length;
  }

  /** Bytes of element data. */
  get nbytes(): number {
    return this.data.length * dtypeBytes(this.dtype);
  }

  /** Row-major flat offset of a full index; throws on a wrong rank or out-of-range index. */
  flatIndex(idx: readonly number[]): number {
    if (idx.length !== this.shape.length) {
      throw argError("E_INDEX", 
        `HostTensor: index ${shapeStr(idx)} has ${idx.length} entries, tensor has shape ${shapeStr(this.shape)}`);
    }
    let off = 0;
    for (let k = 0; k < idx.length; k++) {
      const i = idx[k]!;
      const d = this.shape[k]!;
      if (!Number.isInteger(i) || i < 0 || i >= d) {
        throw argError("E_INDEX", 
          `HostTensor: index ${shapeStr(idx)} is out of bounds for shape ${shapeStr(this.shape)} (axis ${k})`);
      }
      off = off * d + i;
    }
    return off;
  }

  /** The element at a full index, as a number (16-bit floats decoded, int64 via Number). */
  get(...idx: number[]): number {
    return fromStorageValue(this.data[this.flatIndex(idx)]!, this.dtype);
  }

  /** Store `value` (converted to the dtype) at a full index. */
  set(idx: readonly number[], value: number): void {
    const off = this.flatIndex(idx);
    (this.data as { [i: number]: number | bigint })[off] = toStorageValue(value, this.dtype);
  }

  /** All elements, row-major, as numbers. */
  toArray(): number[] {
    const out = new Array<number>(this.data.length);
    for (let i = 0; i < out.length; i++) out[i] = fromStorageValue(this.data[i]!, this.dtype);
    return out;
  }

  /** A deep copy (new buffer). */
  clone(): HostTensor {
    return new HostTensor(this.data.slice() as StorageArray, this.shape, this.dtype);
  }

  /** The same data under another shape of equal size (no copy). */
  reshape(shape: readonly number[]): HostTensor {
    const s = checkShape(shape, "HostTensor.reshape");
    if (productOf(s) !== this.size) {
      throw argError("E_SHAPE", 
        `HostTensor.reshape: cannot reshape ${shapeStr(this.shape)} (${this.size} elements) to ${shapeStr(s)} (${productOf(s)} elements)`);
    }
    return new HostTensor(this.data, s, this.dtype);
  }

  /** A converted copy in `dtype` (float -> int uses `mode`, default "round"). */
  astype(dtype: DType, mode: RoundMode = "round"): HostTensor {
    const d = checkDType(dtype, "HostTensor.astype");
    const out = new (typedArrayFor(d))(this.size) as StorageArray;
    if (d === this.dtype) {
      out.set(this.data as never);
    } else if (d === "int64" && this.dtype !== "float16" && this.dtype !== "bfloat16" && this.dtype !== "float32") {
      for (let i = 0; i < out.length; i++) (out as BigInt64Array)[i] = BigInt(this.data[i]!);
    } else {
      const w = out as { [i: number]: number | bigint };
      for (let i = 0; i < out.length; i++) w[i] = toStorageValue(fromStorageValue(this.data[i]!, this.dtype), d, mode);
    }
    return new HostTensor(out, this.shape, d);
  }

  add(u: HostTensor | TensorLikeInput | number): HostTensor { return this.binary("add", u); }
  sub(u: HostTensor | TensorLikeInput | number): HostTensor { return this.binary("sub", u); }
  mul(u: HostTensor | TensorLikeInput | number): HostTensor { return this.binary("mul", u); }
  /** Elementwise division; for integer dtypes (and bool) truncates toward zero and rejects division by zero. */
  div(u: HostTensor | TensorLikeInput | number): HostTensor { return this.binary("div", u); }

  private binary(op: BinOp, u: HostTensor | TensorLikeInput | number): HostTensor {
    const who = `HostTensor.${op}`;
    const n = this.size;
    const dtype = this.dtype;
    const intLike = !isFloatDType(dtype);
    let other: TensorLike | null = null;
    let scalar = 0;
    if (typeof u === "number") {
      scalar = u;
    } else {
      other = asTensorLike(u);
      if (other === null) {
        throw argError("E_TENSOR_LIKE", `${who}: operand must be a HostTensor, a tensor-like or a number, got ${fmtAny(u)}`);
      }
      if (!sameShape(other.shape, this.shape)) {
        throw argError("E_SHAPE", 
          `${who}: shape mismatch ${shapeStr(this.shape)} vs ${shapeStr(other.shape)} (same shape required; no broadcasting)`);
      }
      if (other.dtype !== dtype) {
        throw argError("E_DTYPE", 
          `${who}: dtype mismatch ${dtype} vs ${other.dtype} (convert one operand with astype first)`);
      }
    }
    const out = new (typedArrayFor(dtype))(n) as StorageArray;
    const divZero = (i: number): never => {
      throw argError("E_DIV_ZERO", `${who}: integer division by zero at ${shapeStr(unravel(i, this.shape))}`);
    };

    // int64 with int64 tensor / integral scalar: exact bigint arithmetic, saturated.
    if (dtype === "int64" && (other !== null || Number.isSafeInteger(scalar))) {
      const a = this.data as BigInt64Array;
      const b = other ? (other.data as BigInt64Array) : null;
      const s = BigInt(other ? 0 : scalar);
      const o = out as BigInt64Array;
      for (let i = 0; i < n; i++) {
        const x = a[i]!;
        const y = b ? b[i]! : s;
        let r: bigint;
        switch (op) {
          case "add": r = x + y; break;
          case "sub": r = x - y; break;
          case "mul": r = x * y; break;
          case "div": r = y === 0n ? divZero(i) : x / y; break;
        }
        o[i] = saturateInt64(r);
      }
      return new HostTensor(out, this.shape, dtype);
    }

    const a = this.data;
    const b = other?.data;
    const w = out as { [i: number]: number | bigint };
    const mode: RoundMode = op === "div" && intLike ? "trunc" : "round";
    for (let i = 0; i < n; i++) {
      const x = fromStorageValue(a[i]!, dtype);
      const y = b ? fromStorageValue(b[i]!, dtype) : scalar;
      let r: number;
      switch (op) {
        case "add": r = x + y; break;
        case "sub": r = x - y; break;
        case "mul": r = x * y; break;
        case "div": r = intLike && y === 0 ? divZero(i) : x / y; break;
      }
      w[i] = toStorageValue(r, dtype, mode);
    }
    return new HostTensor(out, this.shape, dtype);
  }

  /** Short summary: shape, dtype and the first values. */
  toString(): string {
    const k = Math.min(6, this.size);
    const vals: string[] = [];
    for (let i = 0; i < k; i++) vals.push(String(Number(fromStorageValue(this.data[i]!, this.dtype).toPrecision(6))));
    const more = this.size > k ? `, ... (${this.size} values)` : "";
    return `HostTensor(shape=${shapeStr(this.shape)}, dtype=${this.dtype}, [${vals.join(", ")}${more}])`;
  }

  /** Node's util.inspect / console.log. */
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

// ---------------------------------------------------------------------------------------------
// Tensor-likes

const Float16ArrayCtor: (new (...args: never[]) => ArrayBufferView) | undefined =
  (globalThis as { Float16Array?: new (...args: never[]) => ArrayBufferView }).Float16Array;

/** dtype/type strings of ndarray / onnxruntime objects that map onto a tspto dtype. */
const DTYPE_ALIASES: Record<string, DType> = { bigint64: "int64", uint8_clamped: "uint8" };

function viewAs<T extends StorageArray>(ctor: { new (b: ArrayBufferLike, off: number, len: number): T }, a: ArrayBufferView & { length: number }): T {
  return new ctor(a.buffer, a.byteOffset, a.length);
}

/**
 * Normalize a tensor-like without copying: a `HostTensor` is returned as is; an object with a
 * TypedArray `data` and a `shape` or `dims` is wrapped in a `HostTensor` sharing its buffer.
 * The dtype comes from `dtype`/`type` when present, else from the TypedArray class.
 * Returns `null` when `x` is not tensor-like at all; throws a TsptoArgumentError when it is
 * tensor-like but unusable (unsupported or ambiguous element type, shape/length mismatch,
 * non-contiguous strides).
 */
export function asTensorLike(x: unknown): HostTensor | null {
  if (x instanceof HostTensor) return x;
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
  return new HostTensor(data as StorageArray, shape, dtype);
}

/** A byte view (no copy) of a tensor's, tensor-like's or TypedArray's element data. */
export function bufferView(t: HostTensor | TensorLikeInput | ArrayBufferView): Uint8Array {
  if (ArrayBuffer.isView(t)) return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
  const tl = asTensorLike(t);
  if (tl === null) throw argError("E_TENSOR_LIKE", `bufferView: expected a tensor, tensor-like or TypedArray, got ${fmtAny(t)}`);
  return new Uint8Array(tl.data.buffer, tl.data.byteOffset, tl.data.byteLength);
}

// ---------------------------------------------------------------------------------------------
// Constructors

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

function flattenNested(data: readonly NestedNumbers[]): { shape: number[]; values: (number | bigint | boolean)[] } {
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

// ---------------------------------------------------------------------------------------------
// Seeded random numbers: splitmix32 seeding + xoshiro128**, Box–Muller normals.

/** A deterministic PRNG (xoshiro128**) seeded from any safe integer via splitmix32. */
export class Rng {
  private s0: number; private s1: number; private s2: number; private s3: number;
  private spare: number | null = null;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw argError("E_ARG", `Rng: seed must be a safe integer, got ${fmtAny(seed)}`);
    const lo = seed >>> 0;
    const hi = Math.floor(seed / 4294967296) >>> 0; // two's complement high word for negatives
    let x = (lo ^ Math.imul(hi, 0x85ebca6b) ^ 0x9e3779b9) >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next(); this.s1 = next() ^ hi; this.s2 = next(); this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0; this.s3 ^= this.s1; this.s1 ^= this.s2; this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0; this.s1 >>>= 0; this.s2 >>>= 0; this.s3 >>>= 0;
    return result;
  }

  /** A uniform double in [0, 1) with 53 random bits. */
  uniform(): number {
    const a = this.nextU32() >>> 5;
    const b = this.nextU32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }

  /** A standard normal sample (Box–Muller; pairs are used in turn). */
  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    const u1 = 1 - this.uniform(); // (0, 1]
    const u2 = this.uniform();
    const r = Math.sqrt(-2 * Math.log(u1));
    const th = 2 * Math.PI * u2;
    this.spare = r * Math.sin(th);
    return r * Math.cos(th);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * Standard-normal samples, deterministic per `seed` (default 0). Float dtypes get the normal
 * value rounded to the dtype; integer dtypes get small integers `round(4 * normal)` saturated
 * (uint8: its absolute value); bool gets 0/1 with probability 1/2.
 */
export function randn(shape: readonly number[], opts: { seed?: number; dtype?: DType } = {}): HostTensor {
  const s = checkShape(shape, "randn");
  const d = checkDType(opts.dtype ?? "float32", "randn");
  const seed = opts.seed ?? 0;
  if (typeof seed !== "number" || !Number.isSafeInteger(seed)) {
    throw argError("E_ARG", `randn: seed must be an integer, got ${fmtAny(seed)}`);
  }
  const rng = new Rng(seed);
  const n = productOf(s);
  const out = new (typedArrayFor(d))(n) as StorageArray;
  const w = out as { [i: number]: number | bigint };
  for (let i = 0; i < n; i++) {
    let v: number;
    if (d === "bool") v = rng.uniform() < 0.5 ? 0 : 1;
    else if (isFloatDType(d)) v = rng.normal();
    else {
      v = Math.round(rng.normal() * 4);
      if (d === "uint8") v = Math.abs(v);
    }
    w[i] = toStorageValue(v, d);
  }
  return new HostTensor(out, s, d);
}

// ---------------------------------------------------------------------------------------------
// assertClose

interface Values { shape: readonly number[]; at(i: number): number; size: number }

function valuesOf(x: unknown, who: string): Values {
  const tl = asTensorLike(x);
  if (tl !== null) {
    const { data, dtype } = tl;
    return { shape: tl.shape, size: data.length, at: (i) => fromStorageValue(data[i]!, dtype) };
  }
  if (typeof x === "number") return { shape: [], size: 1, at: () => x };
  if (Array.isArray(x)) {
    const { shape, values } = flattenNested(x as readonly NestedNumbers[]);
    return { shape, size: values.length, at: (i) => Number(values[i]) };
  }
  if (isTypedArray(x)) {
    const a = x as ArrayLike<number | bigint>;
    return { shape: [a.length], size: a.length, at: (i) => Number(a[i]) };
  }
  throw argError("E_TENSOR_LIKE", `assertClose: ${who} must be a HostTensor, tensor-like, array or number, got ${fmtAny(x)}`);
}

/** Format a tolerance: the shorter of plain and exponential notation (1e-4, 0.5). */
function fmtTol(x: number): string {
  const p = String(x);
  const e = x.toExponential().replace("e+", "e");
  return e.length < p.length ? e : p;
}

/**
 * Assert |actual - expected| <= atol + rtol * |expected| elementwise (NaN equals NaN, equal
 * infinities are close). Shapes must be equal; dtypes may differ (values are compared).
 * On failure throws an Error naming the count of differing elements, the first one and the
 * largest difference.
 */
export function assertClose(
  actual: HostTensor | TensorLikeInput | NestedNumbers | TypedArray,
  expected: HostTensor | TensorLikeInput | NestedNumbers | TypedArray,
  opts: { rtol?: number; atol?: number } = {},
): void {
  const rtol = opts.rtol ?? 1e-5;
  const atol = opts.atol ?? 1e-8;
  for (const [name, v] of [["rtol", rtol], ["atol", atol]] as const) {
    if (typeof v !== "number" || !(v >= 0) || !Number.isFinite(v)) {
      throw argError("E_ARG", `assertClose: ${name} must be a finite number >= 0, got ${fmtAny(v)}`);
    }
  }
  const a = valuesOf(actual, "actual");
  const e = valuesOf(expected, "expected");
  if (!sameShape(a.shape, e.shape)) {
    throw new Error(`assertClose: shape mismatch: actual ${shapeStr(a.shape)} vs expected ${shapeStr(e.shape)}`);
  }
  let bad = 0;
  let first = -1, firstA = 0, firstE = 0, firstDiff = 0, firstTol = 0;
  let maxDiff = -1, maxAt = -1;
  for (let i = 0; i < a.size; i++) {
    const x = a.at(i);
    const y = e.at(i);
    if (x === y || (Number.isNaN(x) && Number.isNaN(y))) continue;
    const diff = Math.abs(x - y);
    const tol = atol + rtol * Math.abs(y);
    if (diff <= tol && Number.isFinite(y)) continue; // an infinity is close only to itself
    bad++;
    if (first < 0) { first = i; firstA = x; firstE = y; firstDiff = diff; firstTol = tol; }
    const key = Number.isNaN(diff) ? Infinity : diff; // NaN mismatches rank as largest
    if (key > maxDiff) { maxDiff = key; maxAt = i; }
  }
  if (bad === 0) return;
  const at = (i: number) => shapeStr(unravel(i, a.shape));
  const maxVal = Math.abs(a.at(maxAt) - e.at(maxAt));
  const err = new Error(
    `assertClose: ${bad} of ${a.size} elements differ (rtol=${fmtTol(rtol)}, atol=${fmtTol(atol)}); ` +
    `first at ${at(first)}: actual ${firstA} expected ${firstE} (|diff| ${firstDiff} > tol ${firstTol}); ` +
    `max |diff| ${maxVal} at ${at(maxAt)}`);
  err.name = "AssertionError";
  throw err;
}

// HostTensor: a row-major view of a TypedArray in a dtype's host storage, with elementwise
// arithmetic, reshape and astype; asTensorLike normalizes anything tensor-like to one.
import {
  dtypeBytes, fromStorageValue, isFloatDType, saturateInt64, toStorageValue, typedArrayFor, type DType, type RoundMode, type StorageArray,
} from "../dtype.js";
import { argError, checkDType, checkShape, fmtAny, productOf, sameShape, shapeStr, unravel } from "./check.js";
import { readTensorLike, type TensorLike, type TensorLikeInput } from "./tensor_like.js";

type BinOp = "add" | "sub" | "mul" | "div";

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

/**
 * Normalize a tensor-like without copying: a `HostTensor` is returned as is; an object with a
 * TypedArray `data` and a `shape` or `dims` is wrapped in a `HostTensor` sharing its buffer
 * (see readTensorLike). Returns `null` when `x` is not tensor-like at all; throws a
 * TsptoArgumentError when it is tensor-like but unusable.
 */
export function asTensorLike(x: unknown): HostTensor | null {
  if (x instanceof HostTensor) return x;
  const t = readTensorLike(x);
  return t === null ? null : new HostTensor(t.data, t.shape, t.dtype);
}

/** A byte view (no copy) of a tensor's, tensor-like's or TypedArray's element data. */
export function bufferView(t: HostTensor | TensorLikeInput | ArrayBufferView): Uint8Array {
  if (ArrayBuffer.isView(t)) return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
  const tl = asTensorLike(t);
  if (tl === null) throw argError("E_TENSOR_LIKE", `bufferView: expected a tensor, tensor-like or TypedArray, got ${fmtAny(t)}`);
  return new Uint8Array(tl.data.buffer, tl.data.byteOffset, tl.data.byteLength);
}

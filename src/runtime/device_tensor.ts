// DeviceTensor: a device-resident buffer owned by one ChipWorker (weights, KV caches). It
// never crosses the host/device boundary at launch; read it with ChipWorker.copyFrom.
//
// Views (`t.view(shape)`, `t.narrow(axis, start, length)`) are DeviceTensors over the same
// memory: their address is the allocation's plus a byte offset, they belong to the same
// worker, and they live exactly as long as the allocation (`live` reads the base's; freeing
// the base kills every view of it; a view is never freed on its own). A view is contiguous:
// kernels take row-major tensors without strides, so a narrow that would need a stride (a
// window along an axis after one of extent > 1) is refused when it is made.
import { TsptoArgumentError, TsptoRuntimeError } from "../ir/index.js";
import { callerSpan } from "./caller.js";
import { dtypeBytes, type DType } from "./dtype.js";

/** Internal ownership record, shared with the worker that allocated the tensor. */
export interface DeviceTensorOwner {
  readonly workerId: number;
}

const shapeText = (s: readonly number[]) => `[${s.join(", ")}]`;
const argErr = (code: string, msg: string, hint?: string) => new TsptoArgumentError(code, msg, callerSpan(), hint);

export class DeviceTensor {
  /** Device address (bigint) of the first byte. */
  readonly dataPtr: bigint;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly nbytes: number;
  /** @internal */ readonly owner: DeviceTensorOwner;
  /** The allocation this tensor is a view of (t.view, t.narrow), or null: it is an allocation itself. */
  readonly base: DeviceTensor | null;
  /** Byte offset of this tensor's first byte in its allocation (0 for an allocation). */
  readonly byteOffset: number;
  #live = true;
  /** @internal */
  constructor(dataPtr: bigint, shape: readonly number[], dtype: DType, nbytes: number, owner: DeviceTensorOwner, base: DeviceTensor | null = null, byteOffset = 0) {
    this.dataPtr = dataPtr;
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.nbytes = nbytes;
    this.owner = owner;
    this.base = base;
    this.byteOffset = byteOffset;
  }

  /** @internal Whether the memory is still allocated (a view: its allocation's). Set false by freeTensor/close on an allocation. */
  get live(): boolean { return this.base ? this.base.live : this.#live; }
  set live(v: boolean) {
    if (this.base) throw new TsptoRuntimeError("E_INTERNAL", "internal: a view's liveness is its allocation's");
    this.#live = v;
  }

  /** Whether this tensor is a view of another (t.view, t.narrow). */
  get isView(): boolean { return this.base !== null; }

  #checkLive(what: string): void {
    if (!this.live) throw new TsptoRuntimeError("E_FREED", `${what}: DeviceTensor is not a live allocation (it was freed, or its worker was closed)`, callerSpan(), "allocate it again");
  }

  /**
   * The same bytes seen with another shape (as many elements, row-major): a view that shares
   * this tensor's memory and lifetime.
   */
  view(shape: readonly number[]): DeviceTensor {
    this.#checkLive("view");
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw argErr("E_SHAPE", `view: shape must be a non-empty list of positive integers, got ${JSON.stringify(shape)}`);
    }
    const n = shape.reduce((a, b) => a * b, 1), have = this.nbytes / dtypeBytes(this.dtype);
    if (n !== have) {
      throw argErr("E_SHAPE", `view: ${shapeText(shape)} has ${n} elements, but the ${shapeText(this.shape)} DeviceTensor has ${have}`, "a view keeps the bytes: give a shape with as many elements (narrow() takes a part)");
    }
    return new DeviceTensor(this.dataPtr, shape, this.dtype, this.nbytes, this.owner, this.base ?? this, this.byteOffset);
  }

  /**
   * The window [start, start + length) along `axis`, the other axes whole: a view of this
   * tensor's memory. It must be contiguous: `axis` 0, or an axis after only extents of 1
   * (narrow(1, ...) of a [1, N] tensor); a window that would need a stride is an E_VIEW error.
   */
  narrow(axis: number, start: number, length: number): DeviceTensor {
    this.#checkLive("narrow");
    const r = this.shape.length;
    if (!Number.isInteger(axis) || axis < 0 || axis >= r) throw argErr("E_VIEW", `narrow: axis must be an integer in [0, ${r - 1}] for a ${shapeText(this.shape)} DeviceTensor, got ${String(axis)}`);
    const d = this.shape[axis];
    if (!Number.isInteger(start) || !Number.isInteger(length) || start < 0 || length < 1 || start + length > d) {
      throw argErr("E_VIEW", `narrow: the window [${String(start)}, ${String(start)} + ${String(length)}) is outside axis ${axis} of a ${shapeText(this.shape)} DeviceTensor (extent ${d})`,
        `give 0 <= start and 1 <= length with start + length <= ${d}`);
    }
    const outer = this.shape.slice(0, axis);
    if (outer.some((x) => x !== 1) && length !== d) {
      throw argErr("E_VIEW", `narrow(${axis}, ${start}, ${length}) of a ${shapeText(this.shape)} DeviceTensor would be a strided view (each of its ${outer.reduce((a, b) => a * b, 1)} slices along axis ${axis} is a separate piece of memory); kernel tensors are contiguous, so only a window along axis 0 (or after axes of extent 1) can be a view`,
        "narrow axis 0 (e.g. rows of a KV cache), or copy the columns into a tensor of their own; inside a kernel, pl.slice(t, shape, offset) takes any window");
    }
    const inner = this.shape.slice(axis + 1).reduce((a, b) => a * b, 1) * dtypeBytes(this.dtype);
    const shape = this.shape.map((x, k) => (k === axis ? length : x));
    const off = start * inner;
    return new DeviceTensor(this.dataPtr + BigInt(off), shape, this.dtype, length * inner, this.owner, this.base ?? this, this.byteOffset + off);
  }

  toString(): string {
    const v = this.base ? `, view at byte ${this.byteOffset}` : "";
    return `DeviceTensor(shape=[${this.shape.join(", ")}], dtype=${this.dtype}, dataPtr=0x${this.dataPtr.toString(16)}${v}${this.live ? "" : ", freed"})`;
  }
}

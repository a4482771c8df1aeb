// DeviceTensor: a device-resident buffer owned by one ChipWorker (weights, KV caches). It
// never crosses the host/device boundary at launch; read it with ChipWorker.copyFrom.
import type { DType } from "./dtype.js";

/** Internal ownership record, shared with the worker that allocated the tensor. */
export interface DeviceTensorOwner {
  readonly workerId: number;
}

export class DeviceTensor {
  /** Device address (bigint) of the first byte. */
  readonly dataPtr: bigint;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly nbytes: number;
  /** @internal */ readonly owner: DeviceTensorOwner;
  /** @internal allocation generation: set to false when freed. */ live = true;
  /** @internal */
  constructor(dataPtr: bigint, shape: readonly number[], dtype: DType, nbytes: number, owner: DeviceTensorOwner) {
    this.dataPtr = dataPtr;
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.nbytes = nbytes;
    this.owner = owner;
  }
  toString(): string {
    return `DeviceTensor(shape=[${this.shape.join(", ")}], dtype=${this.dtype}, dataPtr=0x${this.dataPtr.toString(16)}${this.live ? "" : ", freed"})`;
  }
}

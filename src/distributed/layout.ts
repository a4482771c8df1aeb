// Byte layouts of sharded tensors (row-major). A tensor of shape S split into N equal chunks
// along `axis` is, per chunk, `outer` rows of `rowBytes` bytes, where outer = prod(S[:axis])
// and rowBytes = (S[axis] / N) * prod(S[axis+1:]) * elementBytes. The "stacked" layout puts
// the N chunks one after another ([N][outer][row]); the "axis" layout is the tensor itself
// ([outer][N][row]). For axis 0 (outer = 1) the two are the same bytes.
import type { DType } from "../runtime/dtype.js";
import { typedArrayFor } from "../runtime/dtype.js";
import type { ReduceOp } from "./mpi.js";

export const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** outer and rowBytes of one of N chunks of `shape` split along `axis`. */
export function chunkGeometry(shape: readonly number[], axis: number, n: number, elemBytes: number): { outer: number; rowBytes: number } {
  return { outer: prod(shape.slice(0, axis)), rowBytes: (shape[axis] / n) * prod(shape.slice(axis + 1)) * elemBytes };
}

/** [N][outer][row] -> [outer][N][row]. */
export function axisFromStacked(stacked: Uint8Array, n: number, outer: number, rowBytes: number): Uint8Array {
  if (outer === 1) return stacked;
  const out = new Uint8Array(stacked.length);
  for (let k = 0; k < n; k++) {
    for (let o = 0; o < outer; o++) {
      const src = (k * outer + o) * rowBytes;
      out.set(stacked.subarray(src, src + rowBytes), (o * n + k) * rowBytes);
    }
  }
  return out;
}

/** [outer][N][row] -> [N][outer][row]. */
export function stackedFromAxis(buf: Uint8Array, n: number, outer: number, rowBytes: number): Uint8Array {
  if (outer === 1) return buf;
  const out = new Uint8Array(buf.length);
  for (let k = 0; k < n; k++) {
    for (let o = 0; o < outer; o++) {
      const src = (o * n + k) * rowBytes;
      out.set(buf.subarray(src, src + rowBytes), (k * outer + o) * rowBytes);
    }
  }
  return out;
}

/** The bytes of a typed array (a view, not a copy). */
export function bytesOf(v: ArrayBufferView): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** A typed view of `bytes` as `dtype`'s host storage (bytes must be aligned: the buffers here are fresh). */
function typedView(bytes: Uint8Array, dtype: DType): ArrayLike<number | bigint> & { [i: number]: number | bigint } {
  const C = typedArrayFor(dtype) as unknown as new (b: ArrayBufferLike, off: number, len: number) => ArrayLike<number | bigint> & { [i: number]: number | bigint };
  const esize = (C as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
  if (bytes.byteOffset % esize !== 0) throw new Error(`internal: unaligned ${dtype} view`);
  return new C(bytes.buffer, bytes.byteOffset, bytes.byteLength / esize);
}

/**
 * acc[i] = acc[i] op src[i], in the dtype's own arithmetic (integers wrap like C's, as MPI's
 * do; float32 rounds each step to float32). acc and src hold `dtype`'s host storage.
 */
export function reduceInto(acc: Uint8Array, src: Uint8Array, dtype: DType, op: ReduceOp): void {
  const a = typedView(acc, dtype), b = typedView(src, dtype);
  const n = a.length;
  if (dtype === "int64") {
    const x = a as unknown as BigInt64Array, y = b as unknown as BigInt64Array;
    for (let i = 0; i < n; i++) {
      const p = x[i], q = y[i];
      x[i] = op === "sum" ? p + q : op === "prod" ? p * q : op === "max" ? (p > q ? p : q) : (p < q ? p : q);
    }
  } else {
    const x = a as unknown as Float32Array, y = b as unknown as Float32Array;
    const int32 = dtype === "int32";
    switch (op) {
      case "sum": for (let i = 0; i < n; i++) x[i] += y[i]; break;
      case "prod": if (int32) { for (let i = 0; i < n; i++) x[i] = Math.imul(x[i], y[i]); } else { for (let i = 0; i < n; i++) x[i] *= y[i]; } break;
      // Open MPI's MPI_MAX/MPI_MIN: out = out > in ? out : in (so a NaN on either side gives in).
      case "max": for (let i = 0; i < n; i++) { const p = x[i], q = y[i]; x[i] = p > q ? p : q; } break;
      case "min": for (let i = 0; i < n; i++) { const p = x[i], q = y[i]; x[i] = p < q ? p : q; } break;
    }
  }
}

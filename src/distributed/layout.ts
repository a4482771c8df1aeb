// Byte layouts of sharded tensors (row-major). A tensor of shape S split along `axis` into N
// chunks of extents e_0..e_{N-1} (sum = S[axis]) is, per chunk g, `outer` rows of e_g * unit
// bytes, where outer = prod(S[:axis]) and unit = prod(S[axis+1:]) * elementBytes. The
// "stacked" layout puts the chunks one after another (chunk g's bytes contiguous); the "axis"
// layout is the tensor itself ([outer][S[axis]][...]). For axis 0 (outer = 1) the two are the
// same bytes. Extents differ by at most one (splitExtent), as numpy.array_split's do.
import type { DType } from "../runtime/dtype.js";
import { typedArrayFor } from "../runtime/dtype.js";
import type { ReduceOp } from "./mpi.js";

export const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);

/** `extent` split into n parts that differ by at most one: the first extent % n get one more. */
export function splitExtent(extent: number, n: number): number[] {
  const base = Math.floor(extent / n), rem = extent % n;
  return Array.from({ length: n }, (_, g) => base + (g < rem ? 1 : 0));
}

export interface Layout {
  /** prod(shape[:axis]) */
  outer: number;
  /** bytes of one index along the axis in one outer row: prod(shape[axis+1:]) * elementBytes */
  unit: number;
  /** each chunk's extent along the axis */
  extents: readonly number[];
}

export function layoutOf(shape: readonly number[], axis: number, extents: readonly number[], elemBytes: number): Layout {
  return { outer: prod(shape.slice(0, axis)), unit: prod(shape.slice(axis + 1)) * elemBytes, extents };
}

/** Bytes of chunk g. */
export const chunkBytes = (l: Layout, g: number) => l.outer * l.extents[g] * l.unit;

/** Byte offset of each chunk in the stacked layout (and the total at the end). */
export function chunkOffsets(l: Layout): number[] {
  const off = [0];
  for (let g = 0; g < l.extents.length; g++) off.push(off[g] + chunkBytes(l, g));
  return off;
}

/** stacked -> axis layout. */
export function axisFromStacked(stacked: Uint8Array, l: Layout): Uint8Array {
  if (l.outer === 1) return stacked;
  return permute(stacked, l, true);
}

/** axis -> stacked layout. */
export function stackedFromAxis(buf: Uint8Array, l: Layout): Uint8Array {
  if (l.outer === 1) return buf;
  return permute(buf, l, false);
}

function permute(src: Uint8Array, l: Layout, toAxis: boolean): Uint8Array {
  const out = new Uint8Array(src.length);
  const row = l.extents.reduce((a, b) => a + b, 0) * l.unit; // one outer row of the axis layout
  let stackedAt = 0, col = 0;
  for (const e of l.extents) {
    const w = e * l.unit;
    for (let o = 0; o < l.outer; o++) {
      const axisAt = o * row + col;
      if (toAxis) out.set(src.subarray(stackedAt, stackedAt + w), axisAt);
      else out.set(src.subarray(axisAt, axisAt + w), stackedAt);
      stackedAt += w;
    }
    col += w;
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

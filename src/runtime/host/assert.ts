// assertClose: elementwise comparison of tensors, tensor-likes, arrays or numbers within
// rtol/atol, with a message naming the first and the largest difference.
import { fromStorageValue, isTypedArray, type TypedArray } from "../dtype.js";
import { argError, fmtAny, sameShape, shapeStr, unravel } from "./check.js";
import { flattenNested, type NestedNumbers } from "./factories.js";
import { asTensorLike, type HostTensor } from "./host_tensor.js";
import type { TensorLikeInput } from "./tensor_like.js";

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

// Checks a launch binder runs on each argument before anything reaches the native layer:
// scalars against their dtype, host views against the bytes the program uses (at their
// LIVE length: a detached, transferred or shrunk ArrayBuffer has fewer bytes than its
// tensor's shape says).
import { TsptoArgumentError, formatValue } from "../ir/index.js";
import { intRange, isFloatDType, isIntDType, type DType } from "./dtype.js";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function rangeOf(dtype: DType): [bigint, bigint] {
  if (dtype === "int64") return [INT64_MIN, INT64_MAX];
  const [lo, hi] = intRange(dtype);
  return [BigInt(lo), BigInt(hi)];
}

/**
 * Checks a scalar argument against its dtype and returns it unchanged when it is valid.
 *  - integer dtypes (int8/16/32/64, uint8): a number that is an integer inside the dtype's
 *    range (int64: a safe integer, or a bigint in [-2^63, 2^63)); a bigint in range.
 *    1.5, NaN, Infinity, true, "3" are rejected (no silent truncation or wrap-around).
 *  - float dtypes (float32/float16/bfloat16): any number (NaN and ±Infinity are floats).
 *  - bool: a boolean (or the numbers 0 and 1).
 * `name` is the parameter's name and `index` its 0-based index in the call (`program`, when
 * given, the program's name); the error (TsptoArgumentError, code E_SCALAR) names the
 * parameter and its 1-based position.
 */
export function checkScalar(dtype: DType, value: unknown, name: string, index: number, program?: string): number | bigint | boolean {
  const fail = (rule: string): never => {
    throw new TsptoArgumentError(
      "E_SCALAR",
      `argument '${name}' (#${index + 1})${program ? ` of '${program}'` : ""} must be ${rule}, got ${typeof value === "number" || typeof value === "bigint" ? formatValue(value) : `${typeof value} ${formatValue(value)}`}`,
      undefined,
      "scalar parameters take a value of their declared dtype; convert it explicitly (Math.round, Number(...)) if a conversion is what you want",
      { argument: name, position: index + 1 },
    );
  };
  if (dtype === "bool") {
    if (typeof value === "boolean") return value;
    if (value === 0 || value === 1) return value;
    return fail("a boolean (bool scalar)");
  }
  if (isFloatDType(dtype)) {
    if (typeof value === "number") return value;
    return fail(`a number (${dtype} scalar)`);
  }
  if (isIntDType(dtype)) {
    const [lo, hi] = rangeOf(dtype);
    const rule = `an integer in [${lo}, ${hi}] (${dtype} scalar)`;
    if (typeof value === "bigint") {
      if (value < lo || value > hi) fail(rule);
      return value;
    }
    if (typeof value !== "number" || !Number.isInteger(value)) return fail(rule);
    if (dtype === "int64" && !Number.isSafeInteger(value)) {
      return fail(`${rule.replace(" (int64 scalar)", "")} (int64 scalar; beyond 2^53 pass a bigint, a number has lost precision)`);
    }
    if (BigInt(value) < lo || BigInt(value) > hi) fail(rule);
    return value;
  }
  return fail(`a scalar of a known dtype (got dtype ${formatValue(dtype)})`);
}

/** checkScalar without the error: true when `value` is a valid `dtype` scalar (hot paths). */
export function isValidScalar(dtype: DType, value: unknown): boolean {
  if (typeof value === "number") {
    if (isFloatDType(dtype)) return true;
    if (dtype === "bool") return value === 0 || value === 1;
    if (!Number.isInteger(value)) return false;
    if (dtype === "int64") return Number.isSafeInteger(value);
    const [lo, hi] = intRange(dtype);
    return value >= lo && value <= hi;
  }
  if (typeof value === "boolean") return dtype === "bool";
  if (typeof value === "bigint" && isIntDType(dtype)) {
    const [lo, hi] = rangeOf(dtype);
    return value >= lo && value <= hi;
  }
  return false;
}

/**
 * Checks that host view `view` (a launch argument's TypedArray) still holds `nbytes` bytes
 * at its live length. `name` / `index` (0-based) name the argument. Throws
 * TsptoArgumentError E_HOST_VIEW otherwise. The native launch checks the same thing again
 * (the last line of defence); this check gives the interp platform and the JS side the same
 * error first.
 */
export function checkHostView(view: ArrayBufferView, nbytes: number, name: string, index: number, program?: string): void {
  const have = view.byteLength; // 0 once the buffer is detached; shrinks with a resizable buffer
  if (have >= nbytes) return;
  const why = isDetached(view.buffer) ? "its ArrayBuffer is detached (transferred)" : "a shrunk resizable ArrayBuffer, or a view that is too short";
  throw new TsptoArgumentError(
    "E_HOST_VIEW",
    `argument '${name}' (#${index + 1})${program ? ` of '${program}'` : ""} is a host view of ${have} bytes, but the program uses ${nbytes} bytes (${why})`,
    undefined,
    "pass a view that holds the whole tensor; do not transfer, detach or shrink its ArrayBuffer while tspto uses it",
    { argument: name, position: index + 1 },
  );
}

/** True for a detached (transferred) ArrayBuffer (`.detached` is ES2024; Node 20 lacks it). */
function isDetached(buf: ArrayBufferLike): boolean {
  const flag = (buf as { detached?: boolean }).detached;
  if (typeof flag === "boolean") return flag;
  if (buf.byteLength !== 0) return false;
  try {
    new Uint8Array(buf);
    return false;
  } catch {
    return true;
  }
}

// Validation and formatting helpers shared by the host-tensor files: every validation failure
// is a TsptoArgumentError with a stable code.
import { DTYPES, isDType, type DType } from "../dtype.js";
import { TsptoArgumentError } from "../../ir/errors.js";

/** Every validation failure of this module: a TsptoArgumentError with a stable code. */
export function argError(code: string, detail: string): TsptoArgumentError {
  return new TsptoArgumentError(code, detail);
}

export function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

export function productOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Validate a shape: an array of non-negative safe integers. Returns a frozen copy. */
export function checkShape(shape: unknown, who: string): readonly number[] {
  const ok = Array.isArray(shape) && shape.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d >= 0);
  if (!ok) {
    const got = Array.isArray(shape) ? `[${shape.map((d) => fmtAny(d)).join(", ")}]` : fmtAny(shape);
    throw argError("E_SHAPE", `${who}: shape must be an array of non-negative integers, got ${got}`);
  }
  return Object.freeze([...(shape as number[])]);
}

export function fmtAny(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (Array.isArray(x)) return `[${x.map(fmtAny).join(", ")}]`;
  if (x !== null && typeof x === "object") return x.constructor?.name ?? "object";
  return String(x);
}

export function checkDType(dtype: unknown, who: string): DType {
  if (!isDType(dtype)) {
    throw argError("E_DTYPE", `${who}: dtype must be one of ${DTYPES.join(", ")}, got ${fmtAny(dtype)}`);
  }
  return dtype;
}

export function unravel(flat: number, shape: readonly number[]): number[] {
  const idx = new Array<number>(shape.length);
  for (let k = shape.length - 1; k >= 0; k--) {
    const d = shape[k]!;
    idx[k] = d === 0 ? 0 : flat % d;
    flat = d === 0 ? 0 : Math.floor(flat / d);
  }
  return idx;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

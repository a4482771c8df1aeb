/**
 * Element types, their host storage, and exact conversions.
 *
 * float16 / bfloat16 are stored on the host as 16-bit patterns in a `Uint16Array`;
 * int64 is stored in a `BigInt64Array`; bool is stored as 0/1 in a `Uint8Array`.
 */

export type DType = "float32" | "float16" | "bfloat16" | "int8" | "int16" | "int32" | "int64" | "uint8" | "bool";

export const DTYPES: readonly DType[] = Object.freeze([
  "float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
] as DType[]);

export function isDType(x: unknown): x is DType {
  return typeof x === "string" && (DTYPES as readonly string[]).includes(x);
}

const BYTES: Record<DType, number> = {
  float32: 4, float16: 2, bfloat16: 2, int8: 1, int16: 2, int32: 4, int64: 8, uint8: 1, bool: 1,
};

/** Bytes per element of `d`. */
export function dtypeBytes(d: DType): number {
  const b = BYTES[d];
  if (b === undefined) throw new TypeError(`unknown dtype ${JSON.stringify(d)}; expected one of ${DTYPES.join(", ")}`);
  return b;
}

export function isFloatDType(d: DType): boolean {
  return d === "float32" || d === "float16" || d === "bfloat16";
}

/** Integer dtypes (bool is neither float nor int). */
export function isIntDType(d: DType): boolean {
  return d === "int8" || d === "int16" || d === "int32" || d === "int64" || d === "uint8";
}

export type TypedArray =
  | Float32Array | Float64Array | Uint16Array | Int8Array | Int16Array | Int32Array
  | BigInt64Array | Uint8Array | Uint8ClampedArray | Uint32Array | BigUint64Array;

/** A TypedArray used as host storage for some dtype. */
export type StorageArray = Float32Array | Uint16Array | Int8Array | Int16Array | Int32Array | BigInt64Array | Uint8Array;

export type StorageConstructor =
  | Float32ArrayConstructor | Uint16ArrayConstructor | Int8ArrayConstructor | Int16ArrayConstructor
  | Int32ArrayConstructor | BigInt64ArrayConstructor | Uint8ArrayConstructor;

const STORAGE: Record<DType, StorageConstructor> = {
  float32: Float32Array, float16: Uint16Array, bfloat16: Uint16Array, int8: Int8Array, int16: Int16Array,
  int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, bool: Uint8Array,
};

/** The TypedArray constructor used to store `dtype` on the host. */
export function typedArrayFor(dtype: DType): StorageConstructor {
  const c = STORAGE[dtype];
  if (c === undefined) throw new TypeError(`unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(", ")}`);
  return c;
}

/** True when `x` is any TypedArray (not a DataView). */
export function isTypedArray(x: unknown): x is TypedArray {
  return ArrayBuffer.isView(x) && !(x instanceof DataView);
}

/**
 * The dtype whose host storage is `arr`'s class. `Uint8Array` is "uint8" unless the hint is "bool";
 * `Uint16Array` is ambiguous and yields `undefined` unless `hint` is "float16" or "bfloat16".
 * A hint whose storage class does not match `arr` yields `undefined`. Unsupported arrays
 * (Float64Array, Uint32Array, ...) yield `undefined`.
 */
export function dtypeOfTypedArray(arr: unknown, hint?: DType): DType | undefined {
  if (hint !== undefined) {
    return isDType(hint) && arr instanceof STORAGE[hint] ? hint : undefined;
  }
  if (arr instanceof Float32Array) return "float32";
  if (arr instanceof Int8Array) return "int8";
  if (arr instanceof Int16Array) return "int16";
  if (arr instanceof Int32Array) return "int32";
  if (arr instanceof BigInt64Array) return "int64";
  if (arr instanceof Uint8Array) return "uint8";
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Exact binary16 / bfloat16 conversions.
//
// The encoders round the given JS number *once*, to nearest with ties to even. A float32 value is
// exactly representable as a JS number, so for float32 inputs this is the IEEE float->half
// conversion; callers emulating fp32 arithmetic should `Math.fround` their result first.

/** Round a non-negative finite double to an integer, ties to even. Exact for values < 2^52. */
function rneInt(v: number): number {
  const f = Math.floor(v);
  const r = v - f;
  if (r > 0.5) return f + 1;
  if (r < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** floor(log2(a)) for a finite a > 0, exactly. */
function ilog2(a: number): number {
  let e = Math.floor(Math.log2(a));
  // Math.log2 may be off by one near powers of two.
  while (Math.pow(2, e) > a) e--;
  while (Math.pow(2, e + 1) <= a) e++;
  return e;
}

/** Encode x into a binary float with `eBits` exponent bits and `mBits` mantissa bits. */
function encodeFloat(x: number, eBits: number, mBits: number): number {
  const bias = (1 << (eBits - 1)) - 1;
  const expMask = (1 << eBits) - 1;
  const inf = expMask << mBits;
  if (Number.isNaN(x)) return inf | (1 << (mBits - 1)); // canonical quiet NaN
  const sign = x < 0 || Object.is(x, -0) ? 1 << (eBits + mBits) : 0;
  const a = Math.abs(x);
  if (a === Infinity) return sign | inf;
  if (a === 0) return sign;
  const emin = 1 - bias;
  const implicit = 1 << mBits;
  if (a < Math.pow(2, emin)) {
    // subnormal: units of 2^(emin - mBits); rounding up to `implicit` gives the smallest normal
    const m = rneInt(a * Math.pow(2, mBits - emin));
    return sign | m;
  }
  let e = ilog2(a);
  let m = rneInt(a * Math.pow(2, mBits - e)); // in [implicit, 2*implicit]
  if (m === 2 * implicit) { e++; m = implicit; }
  if (e > bias) return sign | inf; // overflow
  return sign | ((e + bias) << mBits) | (m - implicit);
}

function decodeFloat(b: number, eBits: number, mBits: number): number {
  const bias = (1 << (eBits - 1)) - 1;
  const expMask = (1 << eBits) - 1;
  const sign = (b >>> (eBits + mBits)) & 1 ? -1 : 1;
  const e = (b >>> mBits) & expMask;
  const m = b & ((1 << mBits) - 1);
  if (e === expMask) return m === 0 ? sign * Infinity : NaN;
  if (e === 0) return sign * m * Math.pow(2, 1 - bias - mBits);
  return sign * (m + (1 << mBits)) * Math.pow(2, e - bias - mBits);
}

/** IEEE binary16 bit pattern of x (round to nearest even; overflow -> inf; NaN -> 0x7e00). */
export function f32ToF16Bits(x: number): number {
  return encodeFloat(x, 5, 10);
}

/** The value of a binary16 bit pattern (exact; every half is a float32). */
export function f16BitsToF32(b: number): number {
  return decodeFloat(b & 0xffff, 5, 10);
}

/** bfloat16 bit pattern of x (round to nearest even; overflow -> inf; NaN -> 0x7fc0). */
export function f32ToBf16Bits(x: number): number {
  return encodeFloat(x, 8, 7);
}

/** The value of a bfloat16 bit pattern (exact). */
export function bf16BitsToF32(b: number): number {
  return decodeFloat(b & 0xffff, 8, 7);
}

// ---------------------------------------------------------------------------------------------
// Conversion of a value to a dtype.

export type RoundMode = "round" | "rint" | "floor" | "ceil" | "trunc";
const ROUND_MODES: readonly RoundMode[] = Object.freeze(["round", "rint", "floor", "ceil", "trunc"] as RoundMode[]);

/** Inclusive integer range of an integer dtype (int64 bounds as the nearest doubles). */
export function intRange(d: DType): [number, number] {
  switch (d) {
    case "int8": return [-128, 127];
    case "int16": return [-32768, 32767];
    case "int32": return [-2147483648, 2147483647];
    case "int64": return [-9223372036854775808, 9223372036854775807];
    case "uint8": return [0, 255];
    case "bool": return [0, 1];
    default: throw new TypeError(`intRange: ${d} is not an integer dtype`);
  }
}

/** Apply a rounding mode to a number (`round` = half away from zero, `rint` = half to even). */
export function applyRoundMode(x: number, mode: RoundMode): number {
  switch (mode) {
    case "round": return roundHalfAway(x);
    case "rint": {
      if (!Number.isFinite(x)) return x;
      const a = Math.abs(x);
      const r = a >= 4503599627370496 ? a : rneInt(a); // >= 2^52: already an integer
      return x < 0 ? -r : r;
    }
    case "floor": return Math.floor(x);
    case "ceil": return Math.ceil(x);
    case "trunc": return Math.trunc(x);
    default: throw new TypeError(`unknown rounding mode ${JSON.stringify(mode)}; expected one of ${ROUND_MODES.join(", ")}`);
  }
}

function roundHalfAway(x: number): number {
  if (!Number.isFinite(x)) return x;
  const a = Math.abs(x);
  if (a >= 4503599627370496) return x; // >= 2^52: already an integer
  const f = Math.floor(a);
  const r = a - f >= 0.5 ? f + 1 : f;
  return x < 0 ? -r : r;
}

/**
 * The value a conversion of `value` to `dtype` produces, as a JS number.
 * - float32: `Math.fround`; float16/bfloat16: rounded to nearest even (once, from `value`).
 * - integers: apply `mode`, then saturate to the type's range; NaN -> 0.
 * - bool: `value != 0` -> 1 else 0 (NaN -> 1, as in C).
 * For int64 the result is a double; bounds are ±2^63 as doubles.
 */
export function roundToDType(value: number, dtype: DType, mode: RoundMode = "round"): number {
  switch (dtype) {
    case "float32": return Math.fround(value);
    case "float16": return f16BitsToF32(f32ToF16Bits(value));
    case "bfloat16": return bf16BitsToF32(f32ToBf16Bits(value));
    case "bool": return value !== 0 ? 1 : 0;
    case "int8": case "int16": case "int32": case "int64": case "uint8": {
      if (Number.isNaN(value)) return 0;
      const [lo, hi] = intRange(dtype);
      const r = applyRoundMode(value, mode);
      const s = r < lo ? lo : r > hi ? hi : r;
      return s === 0 ? 0 : s; // no -0
    }
    default: throw new TypeError(`unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(", ")}`);
  }
}

/**
 * `x` rounded to a binary float format (`mBits` fraction bits, `eBits` exponent bits: float32
 * 8/23, float16 5/10, bfloat16 8/7) in a cast rounding mode: `rint` nearest (ties to even,
 * IEEE's default), `round` nearest (ties away from zero), `floor` toward -Infinity, `ceil`
 * toward +Infinity, `trunc` toward zero (drops the low fraction bits). Subnormals are rounded
 * in the same units; a result past the largest finite value is Infinity, except where the
 * mode rounds toward zero for that sign (`trunc`; `floor` of a positive, `ceil` of a
 * negative), which gives the largest finite value. NaN, ±Infinity and ±0 are kept.
 */
export function roundToFormat(x: number, eBits: number, mBits: number, mode: RoundMode): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const bias = (1 << (eBits - 1)) - 1;
  const neg = x < 0, a = Math.abs(x);
  const q = Math.pow(2, Math.max(ilog2(a), 1 - bias) - mBits); // the format's unit at a's exponent
  const m = a / q;                                                 // exact: a power-of-two scaling
  const f = Math.floor(m);
  let r: number;
  switch (mode) {
    case "rint": r = rneInt(m); break;
    case "round": r = m - f >= 0.5 ? f + 1 : f; break;
    case "floor": r = neg ? Math.ceil(m) : f; break;
    case "ceil": r = neg ? f : Math.ceil(m); break;
    case "trunc": r = f; break;
    default: throw new TypeError(`unknown rounding mode ${JSON.stringify(mode)}; expected one of ${ROUND_MODES.join(", ")}`);
  }
  let v = r * q;
  const max = (2 - Math.pow(2, -mBits)) * Math.pow(2, bias);
  if (v > max) v = mode === "trunc" || (mode === "floor" && !neg) || (mode === "ceil" && neg) ? max : Infinity;
  return neg ? -v : v;
}

/** Bits of an integer dtype's magnitude (a value of the dtype is exact in a float of at least that many significand bits). */
const INT_MAGNITUDE_BITS: Partial<Record<DType, number>> = { bool: 1, uint8: 8, int8: 7, int16: 15, int32: 31, int64: 63 };
/** Significand bits (with the implicit one) of the float dtypes. */
const SIGNIFICAND_BITS: Partial<Record<DType, number>> = { float32: 24, float16: 11, bfloat16: 8 };

/**
 * Does converting every value of dtype `from` to dtype `to` round (or saturate)? Widening
 * conversions (float16/bfloat16 → float32, int8 → float16, ...) are exact; every other one is
 * a narrowing, where `cast`'s mode applies.
 */
export function castNarrows(from: DType, to: DType): boolean {
  if (from === to) return false;
  const fromF = SIGNIFICAND_BITS[from], toF = SIGNIFICAND_BITS[to];
  if (toF === undefined) return true;                                          // -> an integer or bool
  if (fromF === undefined) return INT_MAGNITUDE_BITS[from]! > toF;             // integer -> float
  return !(to === "float32");                                                  // float -> float16/bfloat16 (f16 <-> bf16 both ways)
}

/**
 * `cast(x, dtype, mode)`'s value (SEMANTICS.md): the rounding mode applies to every narrowing
 * conversion, to an integer (then saturated; NaN -> 0) and to a float format alike (float32,
 * float16, bfloat16: roundToFormat). Storing an arithmetic result into a float16/bfloat16 tile
 * is not a cast: it rounds to nearest even (roundToDType).
 */
export function castToDType(value: number, dtype: DType, mode: RoundMode = "round"): number {
  switch (dtype) {
    case "float32": return mode === "rint" ? Math.fround(value) : roundToFormat(value, 8, 23, mode);
    case "float16": return Number.isNaN(value) ? NaN : roundToFormat(value, 5, 10, mode);
    case "bfloat16": return Number.isNaN(value) ? NaN : roundToFormat(value, 8, 7, mode);
    default: return roundToDType(value, dtype, mode);
  }
}

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/** Saturate a bigint to the int64 range. */
export function saturateInt64(v: bigint): bigint {
  return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : v;
}

/**
 * The storage element for `value` in `dtype`'s host array: the 16-bit pattern for
 * float16/bfloat16, a saturated bigint for int64, the converted number otherwise.
 */
export function toStorageValue(value: number, dtype: DType, mode: RoundMode = "round"): number | bigint {
  switch (dtype) {
    case "float16": return f32ToF16Bits(value);
    case "bfloat16": return f32ToBf16Bits(value);
    case "int64": {
      const r = roundToDType(value, "int64", mode);
      return r >= 9223372036854775807 ? INT64_MAX : BigInt(r);
    }
    default: return roundToDType(value, dtype, mode);
  }
}

/** The numeric value of a storage element of `dtype` (decodes 16-bit floats, bigint -> number). */
export function fromStorageValue(raw: number | bigint, dtype: DType): number {
  switch (dtype) {
    case "float16": return f16BitsToF32(raw as number);
    case "bfloat16": return bf16BitsToF32(raw as number);
    case "int64": return Number(raw);
    default: return raw as number;
  }
}

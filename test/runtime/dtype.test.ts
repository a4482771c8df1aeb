import { describe, expect, it } from "vitest";
import {
  DTYPES, applyRoundMode, bf16BitsToF32, dtypeBytes, dtypeOfTypedArray, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits,
  fromStorageValue, intRange, isDType, isFloatDType, isIntDType, roundToDType, toStorageValue, typedArrayFor,
  type DType,
} from "../../src/runtime/dtype.js";

describe("dtype tables", () => {
  it("lists the nine dtypes and recognises them", () => {
    expect([...DTYPES]).toEqual(["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"]);
    for (const d of DTYPES) expect(isDType(d)).toBe(true);
    for (const x of ["float64", "fp32", "", 3, null, undefined, "FLOAT32"]) expect(isDType(x)).toBe(false);
  });

  it("knows element sizes and classes", () => {
    const bytes: Record<DType, number> = {
      float32: 4, float16: 2, bfloat16: 2, int8: 1, int16: 2, int32: 4, int64: 8, uint8: 1, bool: 1,
    };
    for (const d of DTYPES) {
      expect(dtypeBytes(d)).toBe(bytes[d]);
      expect(typedArrayFor(d).BYTES_PER_ELEMENT).toBe(bytes[d]);
    }
    expect(DTYPES.filter(isFloatDType)).toEqual(["float32", "float16", "bfloat16"]);
    expect(DTYPES.filter(isIntDType)).toEqual(["int8", "int16", "int32", "int64", "uint8"]);
    expect(() => dtypeBytes("float64" as DType)).toThrow(
      'unknown dtype "float64"; expected one of float32, float16, bfloat16, int8, int16, int32, int64, uint8, bool');
    expect(() => typedArrayFor("f32" as DType)).toThrow('unknown dtype "f32"');
  });

  it("maps dtypes to host storage classes", () => {
    expect(typedArrayFor("float32")).toBe(Float32Array);
    expect(typedArrayFor("float16")).toBe(Uint16Array);
    expect(typedArrayFor("bfloat16")).toBe(Uint16Array);
    expect(typedArrayFor("int8")).toBe(Int8Array);
    expect(typedArrayFor("int16")).toBe(Int16Array);
    expect(typedArrayFor("int32")).toBe(Int32Array);
    expect(typedArrayFor("int64")).toBe(BigInt64Array);
    expect(typedArrayFor("uint8")).toBe(Uint8Array);
    expect(typedArrayFor("bool")).toBe(Uint8Array);
  });

  it("infers dtypes from TypedArrays; Uint16Array needs a hint", () => {
    expect(dtypeOfTypedArray(new Float32Array(1))).toBe("float32");
    expect(dtypeOfTypedArray(new Int8Array(1))).toBe("int8");
    expect(dtypeOfTypedArray(new Int16Array(1))).toBe("int16");
    expect(dtypeOfTypedArray(new Int32Array(1))).toBe("int32");
    expect(dtypeOfTypedArray(new BigInt64Array(1))).toBe("int64");
    expect(dtypeOfTypedArray(new Uint8Array(1))).toBe("uint8");
    expect(dtypeOfTypedArray(new Uint8Array(1), "bool")).toBe("bool");
    expect(dtypeOfTypedArray(new Uint16Array(1))).toBeUndefined();
    expect(dtypeOfTypedArray(new Uint16Array(1), "float16")).toBe("float16");
    expect(dtypeOfTypedArray(new Uint16Array(1), "bfloat16")).toBe("bfloat16");
    expect(dtypeOfTypedArray(new Uint16Array(1), "float32")).toBeUndefined();
    expect(dtypeOfTypedArray(new Float64Array(1))).toBeUndefined();
    expect(dtypeOfTypedArray(new Uint32Array(1))).toBeUndefined();
    expect(dtypeOfTypedArray([1, 2])).toBeUndefined();
  });
});

describe("float16", () => {
  it("decodes known patterns", () => {
    expect(f16BitsToF32(0x3c00)).toBe(1);
    expect(f16BitsToF32(0xc000)).toBe(-2);
    expect(f16BitsToF32(0x7bff)).toBe(65504);
    expect(f16BitsToF32(0x0400)).toBe(2 ** -14);
    expect(f16BitsToF32(0x0001)).toBe(2 ** -24);
    expect(f16BitsToF32(0x03ff)).toBe(1023 * 2 ** -24);
    expect(f16BitsToF32(0x3555)).toBe(0.333251953125);
    expect(f16BitsToF32(0x7c00)).toBe(Infinity);
    expect(f16BitsToF32(0xfc00)).toBe(-Infinity);
    expect(Object.is(f16BitsToF32(0x8000), -0)).toBe(true);
    expect(f16BitsToF32(0x7e00)).toBeNaN();
    expect(f16BitsToF32(0xfc01)).toBeNaN();
  });

  it("round-trips all 65536 patterns (NaNs stay NaN)", () => {
    let checked = 0;
    for (let b = 0; b < 0x10000; b++) {
      const v = f16BitsToF32(b);
      const back = f32ToF16Bits(v);
      if (Number.isNaN(v)) {
        expect(Number.isNaN(f16BitsToF32(back))).toBe(true);
      } else if (back !== b) {
        expect.fail(`pattern 0x${b.toString(16)} (${v}) re-encoded as 0x${back.toString(16)}`);
      }
      // every half is exactly a float32
      if (!Number.isNaN(v)) expect(Math.fround(v) === v).toBe(true);
      checked++;
    }
    expect(checked).toBe(65536);
  });

  it("rounds every midpoint to even and neighbours to nearest", () => {
    // for every pair of adjacent positive finite halves (incl. subnormals and the max -> inf gap is separate)
    for (let b = 0; b < 0x7bff; b++) {
      const lo = f16BitsToF32(b), hi = f16BitsToF32(b + 1);
      const mid = (lo + hi) / 2; // exact in double
      const even = b % 2 === 0 ? b : b + 1;
      if (f32ToF16Bits(mid) !== even) expect.fail(`midpoint of 0x${b.toString(16)}: got 0x${f32ToF16Bits(mid).toString(16)}`);
      const eps = (hi - lo) * 2 ** -20;
      if (f32ToF16Bits(mid - eps) !== b) expect.fail(`below midpoint of 0x${b.toString(16)}`);
      if (f32ToF16Bits(mid + eps) !== b + 1) expect.fail(`above midpoint of 0x${b.toString(16)}`);
      if (f32ToF16Bits(-mid) !== (even | 0x8000)) expect.fail(`negative midpoint of 0x${b.toString(16)}`);
    }
  });

  it("handles overflow, underflow, zero signs and NaN", () => {
    expect(f32ToF16Bits(65504)).toBe(0x7bff);
    expect(f32ToF16Bits(65519.99)).toBe(0x7bff);
    expect(f32ToF16Bits(65520)).toBe(0x7c00); // tie to even -> 2^16 -> inf
    expect(f32ToF16Bits(1e10)).toBe(0x7c00);
    expect(f32ToF16Bits(-65520)).toBe(0xfc00);
    expect(f32ToF16Bits(Infinity)).toBe(0x7c00);
    expect(f32ToF16Bits(-Infinity)).toBe(0xfc00);
    expect(f32ToF16Bits(2 ** -25)).toBe(0); // tie between 0 and the smallest subnormal -> 0
    expect(f32ToF16Bits(2 ** -25 * 1.0001)).toBe(1);
    expect(f32ToF16Bits(3 * 2 ** -25)).toBe(2); // tie between 1 and 2 -> 2
    expect(f32ToF16Bits(2 ** -26)).toBe(0);
    expect(f32ToF16Bits(-(2 ** -30))).toBe(0x8000);
    expect(f32ToF16Bits(0)).toBe(0);
    expect(f32ToF16Bits(-0)).toBe(0x8000);
    expect(f32ToF16Bits((1023.5) * 2 ** -24)).toBe(0x0400); // rounds up into the normals
    expect(f32ToF16Bits(NaN)).toBe(0x7e00);
    expect(f32ToF16Bits(0.1)).toBe(0x2e66);
    expect(f32ToF16Bits(1 / 3)).toBe(0x3555);
  });
});

/** Independent reference: the classic float32 -> bfloat16 bit trick (RNE), for float32 inputs. */
function refBf16(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0]!;
  if (Number.isNaN(f[0]!)) return 0x7fc0 | ((u >>> 16) & 0x8000);
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

function mulberry32(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("bfloat16", () => {
  it("decodes known patterns", () => {
    expect(bf16BitsToF32(0x3f80)).toBe(1);
    expect(bf16BitsToF32(0xc000)).toBe(-2);
    expect(bf16BitsToF32(0x7f7f)).toBe((2 - 2 ** -7) * 2 ** 127);
    expect(bf16BitsToF32(0x0080)).toBe(2 ** -126);
    expect(bf16BitsToF32(0x0001)).toBe(2 ** -133);
    expect(bf16BitsToF32(0x7f80)).toBe(Infinity);
    expect(bf16BitsToF32(0xff80)).toBe(-Infinity);
    expect(bf16BitsToF32(0x7fc0)).toBeNaN();
    expect(Object.is(bf16BitsToF32(0x8000), -0)).toBe(true);
  });

  it("round-trips all 65536 patterns", () => {
    for (let b = 0; b < 0x10000; b++) {
      const v = bf16BitsToF32(b);
      if (Number.isNaN(v)) continue;
      const back = f32ToBf16Bits(v);
      if (back !== b) expect.fail(`pattern 0x${b.toString(16)} (${v}) re-encoded as 0x${back.toString(16)}`);
    }
  });

  it("matches the reference bit trick on random and edge float32 values", () => {
    const rnd = mulberry32(1234);
    const u = new Uint32Array(1);
    const f = new Float32Array(u.buffer);
    let n = 0;
    for (let i = 0; i < 200000; i++) {
      u[0] = (rnd() * 4294967296) >>> 0;
      const x = f[0]!;
      if (Number.isNaN(x)) continue;
      if (f32ToBf16Bits(x) !== refBf16(x)) expect.fail(`0x${u[0]!.toString(16)} (${x})`);
      n++;
    }
    expect(n).toBeGreaterThan(190000);
    const edges = [0, -0, 1, -1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, 3.0e38, 3.4028234663852886e38,
      (2 - 2 ** -8) * 2 ** 127, 2 ** -126, 2 ** -133, 2 ** -134, 3 * 2 ** -134, 1.1754942e-38, Math.PI, -Math.E, 65504];
    for (const x of edges) expect(f32ToBf16Bits(Math.fround(x))).toBe(refBf16(x));
  });

  it("handles ties, overflow and NaN", () => {
    expect(f32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80); // tie -> even (1.0)
    expect(f32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82); // tie -> even (1.015625)
    expect(f32ToBf16Bits((2 - 2 ** -8) * 2 ** 127)).toBe(0x7f80); // halfway above max -> inf
    expect(f32ToBf16Bits(3.3895313892515355e38)).toBe(0x7f7f); // max finite
    expect(f32ToBf16Bits(1e39)).toBe(0x7f80);
    expect(f32ToBf16Bits(-1e39)).toBe(0xff80);
    expect(f32ToBf16Bits(2 ** -134)).toBe(0); // tie with 0 -> 0
    expect(f32ToBf16Bits(3 * 2 ** -134)).toBe(2);
    expect(f32ToBf16Bits(NaN)).toBe(0x7fc0);
    expect(f32ToBf16Bits(-0)).toBe(0x8000);
  });
});

describe("roundToDType", () => {
  it("applies every rounding mode to halves", () => {
    const cases: [number, Record<string, number>][] = [
      [2.5, { round: 3, rint: 2, floor: 2, ceil: 3, trunc: 2 }],
      [-2.5, { round: -3, rint: -2, floor: -3, ceil: -2, trunc: -2 }],
      [3.5, { round: 4, rint: 4, floor: 3, ceil: 4, trunc: 3 }],
      [-3.5, { round: -4, rint: -4, floor: -4, ceil: -3, trunc: -3 }],
      [0.5, { round: 1, rint: 0, floor: 0, ceil: 1, trunc: 0 }],
      [-0.5, { round: -1, rint: 0, floor: -1, ceil: 0, trunc: 0 }],
      [1.4999999999999998, { round: 1, rint: 1, floor: 1, ceil: 2, trunc: 1 }],
      [0.49999999999999994, { round: 0, rint: 0, floor: 0, ceil: 1, trunc: 0 }],
      [-7.7, { round: -8, rint: -8, floor: -8, ceil: -7, trunc: -7 }],
      [7, { round: 7, rint: 7, floor: 7, ceil: 7, trunc: 7 }],
    ];
    for (const [x, want] of cases) {
      for (const [mode, v] of Object.entries(want)) {
        expect(roundToDType(x, "int32", mode as never), `${x} ${mode}`).toBe(v);
        expect(applyRoundMode(x, mode as never) + 0, `${x} ${mode}`).toBe(v); // + 0 folds -0
      }
    }
    expect(roundToDType(2.5, "int32")).toBe(3); // default mode is "round"
    expect(roundToDType(2 ** 53 + 2, "int64", "rint")).toBe(2 ** 53 + 2);
    expect(Object.is(roundToDType(-0.4, "int32"), 0)).toBe(true); // no negative zero
  });

  it("saturates to each integer type's range", () => {
    expect(roundToDType(200, "int8")).toBe(127);
    expect(roundToDType(-200, "int8")).toBe(-128);
    expect(roundToDType(127.5, "int8")).toBe(127);
    expect(roundToDType(-128.5, "int8", "rint")).toBe(-128);
    expect(roundToDType(40000, "int16")).toBe(32767);
    expect(roundToDType(-40000, "int16")).toBe(-32768);
    expect(roundToDType(1e10, "int32")).toBe(2147483647);
    expect(roundToDType(-1e10, "int32")).toBe(-2147483648);
    expect(roundToDType(2147483647.4, "int32")).toBe(2147483647);
    expect(roundToDType(1e30, "int64")).toBe(2 ** 63);
    expect(roundToDType(-1e30, "int64")).toBe(-(2 ** 63));
    expect(roundToDType(-3, "uint8")).toBe(0);
    expect(roundToDType(255.4, "uint8")).toBe(255);
    expect(roundToDType(300, "uint8")).toBe(255);
    expect(roundToDType(Infinity, "int32")).toBe(2147483647);
    expect(roundToDType(-Infinity, "uint8")).toBe(0);
    for (const d of ["int8", "int16", "int32", "int64", "uint8"] as const) expect(roundToDType(NaN, d)).toBe(0);
    expect(intRange("uint8")).toEqual([0, 255]);
  });

  it("converts floats and bools", () => {
    expect(roundToDType(0.1, "float32")).toBe(Math.fround(0.1));
    expect(roundToDType(0.1, "float16")).toBe(0.0999755859375);
    expect(roundToDType(1e5, "float16")).toBe(Infinity);
    expect(roundToDType(1 + 2 ** -8, "bfloat16")).toBe(1);
    expect(roundToDType(1 + 3 * 2 ** -8, "bfloat16")).toBe(1.015625);
    expect(roundToDType(NaN, "float16")).toBeNaN();
    expect(roundToDType(0.3, "bool")).toBe(1);
    expect(roundToDType(-2, "bool")).toBe(1);
    expect(roundToDType(0, "bool")).toBe(0);
    expect(roundToDType(-0, "bool")).toBe(0);
  });

  it("rejects unknown modes and dtypes", () => {
    expect(() => roundToDType(1.5, "int32", "nearest" as never)).toThrow(
      'unknown rounding mode "nearest"; expected one of round, rint, floor, ceil, trunc');
    expect(() => roundToDType(1.5, "float64" as DType)).toThrow('unknown dtype "float64"');
  });

  it("builds storage values", () => {
    expect(toStorageValue(1, "float16")).toBe(0x3c00);
    expect(toStorageValue(1, "bfloat16")).toBe(0x3f80);
    expect(toStorageValue(1e30, "int64")).toBe(9223372036854775807n);
    expect(toStorageValue(-1e30, "int64")).toBe(-9223372036854775808n);
    expect(toStorageValue(-2.5, "int64")).toBe(-3n);
    expect(toStorageValue(2.5, "int16", "rint")).toBe(2);
    expect(fromStorageValue(0xc000, "float16")).toBe(-2);
    expect(fromStorageValue(0xc000, "bfloat16")).toBe(-2);
    expect(fromStorageValue(-5n, "int64")).toBe(-5);
  });
});

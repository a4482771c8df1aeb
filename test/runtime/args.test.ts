// checkScalar / isValidScalar / checkHostView: the checks a launch binder runs before the
// native layer.
import { describe, expect, it } from "vitest";
import { TsptoArgumentError, type TsptoError } from "../../src/ir/errors.js";
import { checkHostView, checkScalar, isValidScalar } from "../../src/runtime/args.js";
import type { DType } from "../../src/runtime/dtype.js";

const grab = (f: () => unknown): TsptoError => {
  try { f(); } catch (e) { expect(e).toBeInstanceOf(TsptoArgumentError); return e as TsptoError; }
  throw new Error("no throw");
};

describe("checkScalar", () => {
  const ok: [DType, unknown][] = [
    ["int32", 0], ["int32", -2147483648], ["int32", 2147483647], ["int32", 5n], ["int8", -128], ["uint8", 255],
    ["int64", Number.MAX_SAFE_INTEGER], ["int64", -(2n ** 63n)], ["int64", 2n ** 63n - 1n],
    ["float32", 1.5], ["float32", NaN], ["float32", -Infinity], ["float16", 0.1], ["bool", true], ["bool", false], ["bool", 1], ["bool", 0],
  ];
  for (const [dtype, v] of ok) {
    it(`accepts ${dtype} ${String(v)}`, () => {
      expect(checkScalar(dtype, v, "k", 0)).toBe(v);
      expect(isValidScalar(dtype, v)).toBe(true);
    });
  }
  const bad: [DType, unknown, string][] = [
    ["int32", 1.5, "must be an integer in [-2147483648, 2147483647] (int32 scalar), got 1.5"],
    ["int32", NaN, "must be an integer in [-2147483648, 2147483647] (int32 scalar), got NaN"],
    ["int32", true, "must be an integer in [-2147483648, 2147483647] (int32 scalar), got boolean true"],
    ["int32", 2 ** 31, "must be an integer in [-2147483648, 2147483647] (int32 scalar), got 2147483648"],
    ["int32", 2n ** 31n, "must be an integer in [-2147483648, 2147483647] (int32 scalar), got 2147483648n"],
    ["int32", "3", 'must be an integer in [-2147483648, 2147483647] (int32 scalar), got string "3"'],
    ["uint8", -1, "must be an integer in [0, 255] (uint8 scalar), got -1"],
    ["int64", 2 ** 60, "must be an integer in [-9223372036854775808, 9223372036854775807] (int64 scalar; beyond 2^53 pass a bigint, a number has lost precision), got 1152921504606847000"],
    ["int64", 2n ** 63n, "must be an integer in [-9223372036854775808, 9223372036854775807] (int64 scalar), got 9223372036854775808n"],
    ["float32", 1n, "must be a number (float32 scalar), got 1n"],
    ["float32", false, "must be a number (float32 scalar), got boolean false"],
    ["bool", 2, "must be a boolean (bool scalar), got 2"],
    ["bool", "true", 'must be a boolean (bool scalar), got string "true"'],
  ];
  for (const [dtype, v, msg] of bad) {
    it(`rejects ${dtype} ${typeof v} ${String(v)}`, () => {
      const e = grab(() => checkScalar(dtype, v, "k", 1));
      expect(e.code).toBe("E_SCALAR");
      expect(e.detail).toBe(`argument 'k' (#2) ${msg}`);
      expect(e.argument).toBe("k");
      expect(e.position).toBe(2);
      expect(isValidScalar(dtype, v)).toBe(false);
    });
  }
});

describe("checkHostView", () => {
  it("accepts a view that holds the bytes (longer is fine)", () => {
    expect(() => checkHostView(new Float32Array(8), 32, "x", 0)).not.toThrow();
    expect(() => checkHostView(new Float32Array(9), 32, "x", 0)).not.toThrow();
  });
  it("names a detached buffer", () => {
    const v = new Float32Array(8);
    structuredClone(v.buffer, { transfer: [v.buffer] });
    const e = grab(() => checkHostView(v, 32, "x", 2));
    expect(e.code).toBe("E_HOST_VIEW");
    expect(e.detail).toBe("argument 'x' (#3) is a host view of 0 bytes, but the program uses 32 bytes (its ArrayBuffer is detached (transferred))");
    expect(e.position).toBe(3);
  });
  it("names a short view", () => {
    const e = grab(() => checkHostView(new Float32Array(7), 32, "y", 0));
    expect(e.detail).toBe("argument 'y' (#1) is a host view of 28 bytes, but the program uses 32 bytes (a shrunk resizable ArrayBuffer, or a view that is too short)");
  });
});

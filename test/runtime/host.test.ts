import { describe, expect, it } from "vitest";
import {
  HostTensor, Rng, asTensorLike, assertClose, bufferView, full, randn, tensor, zeros,
} from "../../src/runtime/host/index.js";
import { f32ToF16Bits, f32ToBf16Bits } from "../../src/runtime/dtype.js";

describe("tensor()", () => {
  it("wraps a storage-class TypedArray without copying", () => {
    const arr = new Float32Array([1, 2, 3, 4, 5, 6]);
    const t = tensor(arr, { shape: [2, 3] });
    expect(t.data).toBe(arr);
    expect(t.shape).toEqual([2, 3]);
    expect(t.dtype).toBe("float32");
    expect(t.size).toBe(6);
    expect(t.nbytes).toBe(24);
    arr[4] = 50;
    expect(t.get(1, 1)).toBe(50);

    const i32 = new Int32Array([7, -8]);
    expect(tensor(i32).data).toBe(i32);
    expect(tensor(i32).dtype).toBe("int32");
    expect(tensor(i32).shape).toEqual([2]);
    const big = new BigInt64Array([1n, -2n]);
    expect(tensor(big).dtype).toBe("int64");
    expect(tensor(big).data).toBe(big);
    const u8 = new Uint8Array([0, 1, 1]);
    expect(tensor(u8).dtype).toBe("uint8");
    const b = tensor(u8, { dtype: "bool" });
    expect(b.dtype).toBe("bool");
    expect(b.data).toBe(u8);
  });

  it("needs a dtype for Uint16Array and uses it without copying", () => {
    const bits = new Uint16Array([f32ToF16Bits(1.5), f32ToF16Bits(-0.25)]);
    expect(() => tensor(bits)).toThrow(
      'tensor: a Uint16Array is ambiguous (float16 or bfloat16 bit patterns); pass { dtype: "float16" } or { dtype: "bfloat16" }');
    const h = tensor(bits, { dtype: "float16" });
    expect(h.data).toBe(bits);
    expect(h.toArray()).toEqual([1.5, -0.25]);
    const bb = new Uint16Array([f32ToBf16Bits(3), f32ToBf16Bits(-0.5)]);
    expect(tensor(bb, { dtype: "bfloat16" }).toArray()).toEqual([3, -0.5]);
  });

  it("converts other arrays", () => {
    const f64 = new Float64Array([0.1, 2.5]);
    const t = tensor(f64);
    expect(t.dtype).toBe("float32");
    expect(t.data).not.toBe(f64);
    expect(t.toArray()).toEqual([Math.fround(0.1), 2.5]);
    expect(tensor(new Float32Array([1.25, -2.5, 3.5]), { dtype: "int32" }).toArray()).toEqual([1, -3, 4]);
    expect(tensor(new Float32Array([0.1]), { dtype: "float16" }).toArray()).toEqual([0.0999755859375]);
    expect(tensor(new Uint8ClampedArray([3, 255])).dtype).toBe("uint8");
  });

  it("infers nested shapes, defaults to float32", () => {
    const t = tensor([[1, 2, 3], [4, 5, 6]]);
    expect(t.shape).toEqual([2, 3]);
    expect(t.dtype).toBe("float32");
    expect(t.data).toBeInstanceOf(Float32Array);
    expect(t.get(1, 2)).toBe(6);
    expect(tensor([[[1], [2]]]).shape).toEqual([1, 2, 1]);
    expect(tensor([]).shape).toEqual([0]);
    expect(tensor(3.5).shape).toEqual([]);
    expect(tensor(3.5).get()).toBe(3.5);
    expect(tensor([1, 2, 3, 4], { shape: [2, 2], dtype: "int8" }).get(1, 0)).toBe(3);
    expect(tensor([true, false], { dtype: "bool" }).toArray()).toEqual([1, 0]);
    expect(tensor([9007199254740993n], { dtype: "int64" }).data[0]).toBe(9007199254740993n);
  });

  it("rejects shape/length mismatches and ragged arrays, naming both", () => {
    expect(() => tensor([1, 2, 3, 4], { shape: [2, 3] })).toThrow(
      "tensor: shape [2, 3] (6 elements) does not match data length 4");
    expect(() => tensor(new Float32Array(5), { shape: [2, 2] })).toThrow(
      "tensor: shape [2, 2] (4 elements) does not match data length 5");
    expect(() => tensor([[1, 2], [3]])).toThrow("tensor: ragged nested array: expected length 2 at [1], got 1");
    expect(() => tensor([[1, 2], 3] as never)).toThrow(
      "tensor: ragged nested array: expected an array of length 2 at [1], got 3");
    expect(() => tensor([1, "x"] as never)).toThrow('tensor: element 1 is "x", expected a number');
    expect(() => tensor([1], { shape: [-1] })).toThrow("tensor: shape must be an array of non-negative integers, got [-1]");
    expect(() => tensor([1], { dtype: "float64" as never })).toThrow(
      'tensor: dtype must be one of float32, float16, bfloat16, int8, int16, int32, int64, uint8, bool, got "float64"');
    expect(() => tensor(null as never)).toThrow("tensor: expected a TypedArray, a (nested) array of numbers");
  });
});

describe("zeros / full / HostTensor", () => {
  it("makes zeros and filled tensors in every dtype", () => {
    const z = zeros([3, 4]);
    expect(z.dtype).toBe("float32");
    expect(z.shape).toEqual([3, 4]);
    expect(z.toArray()).toEqual(new Array(12).fill(0));
    expect(zeros([2], "int64").data).toBeInstanceOf(BigInt64Array);
    expect(full([2, 2], 1.5).toArray()).toEqual([1.5, 1.5, 1.5, 1.5]);
    expect(full([2], 0.1, "float16").data[0]).toBe(f32ToF16Bits(0.1));
    expect(full([2], 0.1, "float16").get(1)).toBe(0.0999755859375);
    expect(full([2], 2.5, "int32").toArray()).toEqual([3, 3]);
    expect(full([1], 300, "uint8").toArray()).toEqual([255]);
    expect(full([1], -7, "int64").data[0]).toBe(-7n);
    expect(full([1], 5, "bool").toArray()).toEqual([1]);
    expect(zeros([0, 5]).size).toBe(0);
    expect(() => zeros([2, 1.5])).toThrow("zeros: shape must be an array of non-negative integers, got [2, 1.5]");
    expect(() => full(3 as never, 1)).toThrow("full: shape must be an array of non-negative integers, got 3");
    expect(() => full([1], "a" as never)).toThrow('full: value must be a number, got "a"');
  });

  it("validates its constructor arguments", () => {
    expect(() => new HostTensor(new Float32Array(3), [2, 2], "float32")).toThrow(
      "HostTensor: shape [2, 2] (4 elements) does not match data length 3");
    expect(() => new HostTensor(new Float32Array(4) as never, [4], "float16")).toThrow(
      "HostTensor: dtype float16 is stored in a Uint16Array, got Float32Array");
  });

  it("indexes, sets, clones and reshapes", () => {
    const t = randn([3, 5], { seed: 7 });
    const flat = t.toArray();
    expect(t.get(2, 4)).toBe(flat[14]);
    expect(t.flatIndex([1, 2])).toBe(7);
    expect(() => t.get(3, 0)).toThrow("HostTensor: index [3, 0] is out of bounds for shape [3, 5] (axis 0)");
    expect(() => t.get(1)).toThrow("HostTensor: index [1] has 1 entries, tensor has shape [3, 5]");
    const c = t.clone();
    expect(c.data).not.toBe(t.data);
    expect(c.toArray()).toEqual(flat);
    c.set([0, 0], 42);
    expect(c.get(0, 0)).toBe(42);
    expect(t.get(0, 0)).toBe(flat[0]);
    const r = t.reshape([5, 3]);
    expect(r.data).toBe(t.data);
    expect(r.get(4, 2)).toBe(flat[14]);
    expect(() => t.reshape([4, 4])).toThrow("HostTensor.reshape: cannot reshape [3, 5] (15 elements) to [4, 4] (16 elements)");
    expect(Object.isFrozen(t.shape)).toBe(true);
  });

  it("converts with astype", () => {
    const t = tensor([1.5, -2.5, 300.7]);
    expect(t.astype("int32").toArray()).toEqual([2, -3, 301]);
    expect(t.astype("int32", "trunc").toArray()).toEqual([1, -2, 300]);
    expect(t.astype("int8").toArray()).toEqual([2, -3, 127]);
    expect(t.astype("float16").toArray()).toEqual([1.5, -2.5, 300.75]);
    expect(tensor([5, -6], { dtype: "int32" }).astype("int64").data).toEqual(new BigInt64Array([5n, -6n]));
  });

  it("summarises itself", () => {
    const t = tensor([[1, 2, 3, 4], [5, 6, 7, 8]]);
    expect(t.toString()).toBe("HostTensor(shape=[2, 4], dtype=float32, [1, 2, 3, 4, 5, 6, ... (8 values)])");
    expect(tensor([1, 2], { dtype: "int8" }).toString()).toBe("HostTensor(shape=[2], dtype=int8, [1, 2])");
  });
});

describe("arithmetic", () => {
  const a = randn([16, 32], { seed: 1 });
  const b = randn([16, 32], { seed: 2 });
  const A = a.toArray(), B = b.toArray();

  it("computes float32 add/sub/mul/div elementwise with float32 rounding", () => {
    const ops = {
      add: (x: number, y: number) => x + y, sub: (x: number, y: number) => x - y,
      mul: (x: number, y: number) => x * y, div: (x: number, y: number) => x / y,
    } as const;
    for (const [name, f] of Object.entries(ops)) {
      const r = (a as unknown as Record<string, (u: HostTensor) => HostTensor>)[name]!.call(a, b);
      expect(r.shape).toEqual([16, 32]);
      expect(r.dtype).toBe("float32");
      expect(r.data).not.toBe(a.data);
      expect(r.toArray()).toEqual(A.map((x, i) => Math.fround(f(x, B[i]!))));
    }
    expect(a.add(2).toArray()).toEqual(A.map((x) => Math.fround(x + 2)));
    expect(a.mul(-0.5).toArray()).toEqual(A.map((x) => Math.fround(x * -0.5)));
    expect(a.toArray()).toEqual(A); // operands untouched
  });

  it("rounds float16/bfloat16 results to the dtype", () => {
    const h = tensor([1, 2048, 0.1], { dtype: "float16" });
    expect(h.add(tensor([2 ** -11, 1, 0.2], { dtype: "float16" })).toArray()).toEqual([1, 2048, 0.2998046875]);
    const bf = tensor([1, 256], { dtype: "bfloat16" });
    expect(bf.add(1.5 * 2 ** -7).toArray()).toEqual([1.015625, 256]);
  });

  it("integer arithmetic: div truncates toward zero, results saturate", () => {
    const x = tensor([7, -7, 7, -7, 100], { dtype: "int32" });
    const y = tensor([2, 2, -2, -2, 3], { dtype: "int32" });
    expect(x.div(y).toArray()).toEqual([3, -3, -3, 3, 33]);
    expect(x.div(2.5).toArray()).toEqual([2, -2, 2, -2, 40]);
    expect(x.mul(y).toArray()).toEqual([14, -14, -14, 14, 300]);
    expect(tensor([100, -100], { dtype: "int8" }).mul(2).toArray()).toEqual([127, -128]);
    expect(tensor([100, -100], { dtype: "int8" }).add(100).toArray()).toEqual([127, 0]);
    expect(tensor([5], { dtype: "uint8" }).sub(10).toArray()).toEqual([0]);
    expect(tensor([3], { dtype: "int32" }).mul(0.5).toArray()).toEqual([2]); // 1.5 rounds half away
    expect(() => x.div(tensor([1, 1, 0, 1, 1], { dtype: "int32" }))).toThrow(
      "HostTensor.div: integer division by zero at [2]");
    expect(() => tensor([[1, 2]], { dtype: "int16" }).div(0)).toThrow("HostTensor.div: integer division by zero at [0, 0]");
    expect(tensor([1, -1, 0], { dtype: "float32" }).div(0).toArray()).toEqual([Infinity, -Infinity, NaN]);
  });

  it("int64 arithmetic is exact beyond 2^53 and saturates", () => {
    const big = tensor([9007199254740993n, -5n], { dtype: "int64" });
    expect(big.add(1).data).toEqual(new BigInt64Array([9007199254740994n, -4n]));
    expect(big.div(tensor([2n, 2n], { dtype: "int64" })).data).toEqual(new BigInt64Array([4503599627370496n, -2n]));
    expect(tensor([9223372036854775807n], { dtype: "int64" }).add(1).data[0]).toBe(9223372036854775807n);
    expect(tensor([10n], { dtype: "int64" }).mul(0.25).data[0]).toBe(3n); // 2.5 rounds half away
    expect(() => big.div(0)).toThrow("HostTensor.div: integer division by zero at [0]");
  });

  it("rejects shape and dtype mismatches", () => {
    expect(() => a.add(randn([32, 16], { seed: 1 }))).toThrow(
      "HostTensor.add: shape mismatch [16, 32] vs [32, 16] (same shape required; no broadcasting)");
    expect(() => a.mul(zeros([16, 32], "int32"))).toThrow(
      "HostTensor.mul: dtype mismatch float32 vs int32 (convert one operand with astype first)");
    expect(() => a.sub("1" as never)).toThrow('HostTensor.sub: operand must be a HostTensor, a tensor-like or a number, got "1"');
  });

  it("accepts tensor-like operands", () => {
    const r = a.add({ data: b.data, dims: [16, 32], type: "float32" });
    expect(r.toArray()).toEqual(a.add(b).toArray());
  });
});

describe("randn", () => {
  it("is deterministic per seed and differs across seeds", () => {
    const x1 = randn([64, 64], { seed: 0 });
    const x2 = randn([64, 64], { seed: 0 });
    const y = randn([64, 64], { seed: 1 });
    expect(x1.toArray()).toEqual(x2.toArray());
    const same = x1.toArray().filter((v, i) => v === y.toArray()[i]).length;
    expect(same).toBeLessThan(5);
    expect(randn([8], { seed: -3 }).toArray()).not.toEqual(randn([8], { seed: 3 }).toArray());
    expect(randn([8], { seed: 2 ** 40 }).toArray()).not.toEqual(randn([8], { seed: 0 }).toArray());
    expect(randn([8]).toArray()).toEqual(randn([8], { seed: 0 }).toArray()); // default seed 0
    // a prefix of a longer draw matches the shorter draw
    expect(randn([100], { seed: 5 }).toArray().slice(0, 10)).toEqual(randn([10], { seed: 5 }).toArray());
  });

  it("has mean ~0 and std ~1 over 100k samples", () => {
    for (const seed of [0, 12345]) {
      const v = randn([100000], { seed }).toArray();
      const mean = v.reduce((s, x) => s + x, 0) / v.length;
      const std = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
      expect(Math.abs(mean)).toBeLessThan(0.015);
      expect(Math.abs(std - 1)).toBeLessThan(0.015);
      const within1 = v.filter((x) => Math.abs(x) < 1).length / v.length;
      expect(within1).toBeGreaterThan(0.673);
      expect(within1).toBeLessThan(0.692);
    }
  });

  it("produces values in every dtype", () => {
    const h = randn([1000], { seed: 3, dtype: "float16" });
    expect(h.data).toBeInstanceOf(Uint16Array);
    expect(h.toArray().every((x) => Number.isFinite(x))).toBe(true);
    expect(new Set(h.toArray()).size).toBeGreaterThan(500);
    const i = randn([1000], { seed: 3, dtype: "int32" }).toArray();
    expect(i.every((x) => Number.isInteger(x) && Math.abs(x) < 40)).toBe(true);
    expect(new Set(i).size).toBeGreaterThan(10);
    const u = randn([1000], { seed: 3, dtype: "uint8" }).toArray();
    expect(u.every((x) => x >= 0 && x < 40)).toBe(true);
    expect(u.filter((x) => x > 0).length).toBeGreaterThan(700);
    const bits = randn([1000], { seed: 3, dtype: "bool" }).toArray();
    const ones = bits.filter((x) => x === 1).length;
    expect(bits.every((x) => x === 0 || x === 1)).toBe(true);
    expect(ones).toBeGreaterThan(430);
    expect(ones).toBeLessThan(570);
    expect(randn([4], { seed: 3, dtype: "int64" }).data).toBeInstanceOf(BigInt64Array);
    expect(() => randn([4], { seed: 1.5 })).toThrow("randn: seed must be an integer, got 1.5");
  });

  it("Rng yields uniform doubles in [0, 1)", () => {
    const r = new Rng(9);
    let s = 0;
    for (let k = 0; k < 10000; k++) {
      const u = r.uniform();
      expect(u >= 0 && u < 1).toBe(true);
      s += u;
    }
    expect(Math.abs(s / 10000 - 0.5)).toBeLessThan(0.02);
  });
});

describe("assertClose", () => {
  it("passes within tolerance, NaN == NaN, equal infinities", () => {
    const e = randn([64, 64], { seed: 11 });
    const a = e.add(1e-6);
    expect(() => assertClose(a, e, { rtol: 1e-4, atol: 1e-4 })).not.toThrow();
    assertClose(e, e); // identical
    assertClose(tensor([NaN, Infinity, -Infinity, 1]), tensor([NaN, Infinity, -Infinity, 1]));
    assertClose([1.5, 2], [1, 2], { rtol: 0.5, atol: 0 }); // boundary: |diff| == rtol*|e| passes
    assertClose([1.5, 2], [1, 2], { rtol: 0, atol: 0.5 }); // boundary: |diff| == atol passes
    expect(() => assertClose([1.5], [1], { rtol: 0.25, atol: 0.2 })).toThrow("(|diff| 0.5 > tol 0.45)");
  });

  it("fails with count, first and max differences", () => {
    const e = randn([128, 128], { seed: 0 });
    const a = e.clone();
    a.set([2, 17], e.get(2, 17) + 0.25);
    a.set([5, 3], e.get(5, 3) - 1);
    a.set([100, 0], e.get(100, 0) + 0.01);
    let msg = "";
    try {
      assertClose(a, e, { rtol: 1e-4, atol: 1e-4 });
    } catch (err) {
      msg = (err as Error).message;
    }
    expect(msg).toMatch(/^assertClose: 3 of 16384 elements differ \(rtol=1e-4, atol=1e-4\); first at \[2, 17\]: actual /);
    expect(msg).toMatch(/; max \|diff\| 1(\.0+\d*)? at \[5, 3\]$|; max \|diff\| 0\.9999\d* at \[5, 3\]$/);
  });

  it("formats the message exactly", () => {
    const e = tensor([[1, 2], [1.25, 4]]);
    const a = tensor([[1, 2], [1.5, 4]]);
    expect(() => assertClose(a, e, { rtol: 1e-4, atol: 1e-4 })).toThrow(
      `assertClose: 1 of 4 elements differ (rtol=1e-4, atol=1e-4); first at [1, 0]: actual 1.5 expected 1.25 ` +
      `(|diff| 0.25 > tol ${1e-4 + 1e-4 * 1.25}); max |diff| 0.25 at [1, 0]`);
    expect(() => assertClose(tensor([1, NaN]), tensor([1, 2]))).toThrow(
      "assertClose: 1 of 2 elements differ (rtol=1e-5, atol=1e-8); first at [1]: actual NaN expected 2");
    expect(() => assertClose(tensor([Infinity]), tensor([-Infinity]))).toThrow("1 of 1 elements differ");
    expect(() => assertClose([5], [Infinity], { rtol: 1 })).toThrow("first at [0]: actual 5 expected Infinity");
    expect(() => assertClose([Infinity], [5], { rtol: 1 })).toThrow("first at [0]: actual Infinity expected 5");
  });

  it("checks shapes and options", () => {
    expect(() => assertClose(zeros([2, 3]), zeros([3, 2]))).toThrow(
      "assertClose: shape mismatch: actual [2, 3] vs expected [3, 2]");
    expect(() => assertClose(zeros([2]), zeros([2]), { rtol: -1 })).toThrow(
      "assertClose: rtol must be a finite number >= 0, got -1");
    expect(() => assertClose(zeros([2]), zeros([2]), { atol: NaN })).toThrow(
      "assertClose: atol must be a finite number >= 0, got NaN");
    expect(() => assertClose("x" as never, zeros([2]))).toThrow(
      'assertClose: actual must be a HostTensor, tensor-like, array or number, got "x"');
  });

  it("compares across dtypes and tensor-likes", () => {
    const x = randn([4, 4], { seed: 4 });
    assertClose(x.astype("float16"), x, { rtol: 1e-3, atol: 1e-3 });
    expect(() => assertClose(x.astype("float16"), x, { rtol: 1e-7, atol: 0 })).toThrow("assertClose:");
    assertClose({ data: x.data, dims: [4, 4], type: "float32" }, x);
    assertClose(x, x.toArray().reduce<number[][]>((rows, v, i) => {
      if (i % 4 === 0) rows.push([]);
      rows[rows.length - 1]!.push(v);
      return rows;
    }, []));
  });
});

describe("tensor-likes", () => {
  it("accepts onnxruntime-style objects without copying", () => {
    const data = new Float32Array([1, 2, 3, 4, 5, 6]);
    const ort = { data, dims: [2, 3] as readonly number[], type: "float32", size: 6, location: "cpu" };
    const t = asTensorLike(ort)!;
    expect(t).not.toBeNull();
    expect(t.data).toBe(data);
    expect(t.shape).toEqual([2, 3]);
    expect(t.dtype).toBe("float32");
    const h = asTensorLike({ data: new Uint16Array([0x3c00]), dims: [1], type: "float16" })!;
    expect(h.dtype).toBe("float16");
    expect(h.toArray()).toEqual([1]);
    const b = new Uint8Array([1, 0, 1]);
    const bt = asTensorLike({ data: b, dims: [3], type: "bool" })!;
    expect(bt.dtype).toBe("bool");
    expect(bt.data).toBe(b);
    const i64 = new BigInt64Array([1n, 2n]);
    expect(asTensorLike({ data: i64, dims: [2], type: "int64" })!.data).toBe(i64);
    expect(tensor({ data, dims: [3, 2], type: "float32" }).data).toBe(data);
  });

  it("accepts ndarray-style objects without copying", () => {
    const buf = new Float32Array(12).map((_, i) => i * 0.5);
    const nd = { data: buf, shape: [3, 4], stride: [4, 1], offset: 0, dtype: "float32" };
    const t = asTensorLike(nd)!;
    expect(t.data).toBe(buf);
    expect(t.get(2, 3)).toBe(5.5);
    // offset view: same buffer, shifted
    const v = asTensorLike({ data: buf, shape: [2, 4], stride: [4, 1], offset: 4, dtype: "float32" })!;
    expect(v.data.buffer).toBe(buf.buffer);
    expect(v.data.byteOffset).toBe(16);
    expect(v.get(0, 0)).toBe(2);
    // int32 ndarray without dtype string: inferred from the class
    const i32 = new Int32Array([1, 2, 3, 4]);
    expect(asTensorLike({ data: i32, shape: [2, 2] })!.dtype).toBe("int32");
    expect(asTensorLike({ data: new Uint8ClampedArray(4), shape: [4], dtype: "uint8_clamped" })!.dtype).toBe("uint8");
    expect(asTensorLike({ data: new BigInt64Array(2), shape: [2], dtype: "bigint64" })!.dtype).toBe("int64");
  });

  it("returns a HostTensor unchanged and null for non-tensors", () => {
    const t = zeros([2]);
    expect(asTensorLike(t)).toBe(t);
    for (const x of [null, undefined, 3, "a", {}, [1, 2], { data: [1, 2], shape: [2] }, { data: new Float32Array(2) }]) {
      expect(asTensorLike(x)).toBeNull();
    }
  });

  it("rejects unusable tensor-likes with clear errors", () => {
    expect(() => asTensorLike({ data: new Uint16Array(2), dims: [2] })).toThrow(
      'tensor-like data is a Uint16Array but no dtype is given; set dtype (or type) to "float16" or "bfloat16"');
    expect(() => asTensorLike({ data: new Float64Array(2), shape: [2] })).toThrow(
      "tensor-like data is a Float64Array, which has no tspto dtype; supported: float32, float16");
    expect(() => asTensorLike({ data: new Float64Array(2), dims: [2], type: "float64" })).toThrow(
      'tensor-like dtype "float64" is not supported; supported: float32, float16');
    expect(() => asTensorLike({ data: new Float32Array(2), dims: [2], type: "float16" })).toThrow(
      'tensor-like has dtype "float16" but its data is a Float32Array (expected Uint16Array)');
    expect(() => asTensorLike({ data: new Float32Array(5), dims: [2, 2], type: "float32" })).toThrow(
      "tensor-like shape [2, 2] (4 elements) does not match data length 5");
    expect(() => asTensorLike({ data: new Float32Array(4), shape: [2, 2], stride: [1, 2], offset: 0 })).toThrow(
      "tensor-like is not contiguous (stride [1, 2] for shape [2, 2]); it cannot be used without copying, make it contiguous first");
    expect(() => asTensorLike({ data: new Float32Array(4), shape: [2, 2], stride: [2, 1], offset: 2 })).toThrow(
      "tensor-like offset 2 + shape [2, 2] (4 elements) exceeds data length 4");
    expect(() => asTensorLike({ data: new Float32Array(4), dims: [2, -2] })).toThrow(
      "tensor-like: shape must be an array of non-negative integers, got [2, -2]");
    const gpu = { get data(): Float32Array { throw new Error("data is on GPU"); }, dims: [2], type: "float32" };
    expect(() => asTensorLike(gpu)).toThrow("tensor-like data is not readable on the host: data is on GPU");
  });

  it("gives byte views that share memory", () => {
    const t = randn([4, 4], { seed: 2 });
    const v = bufferView(t);
    expect(v.buffer).toBe(t.data.buffer);
    expect(v.byteLength).toBe(t.nbytes);
    expect(bufferView(new Int16Array(3)).byteLength).toBe(6);
    const sub = new Float32Array(8).subarray(2, 4);
    expect(bufferView(sub).byteOffset).toBe(8);
    expect(bufferView({ data: new Float32Array(6), dims: [2, 3], type: "float32" }).byteLength).toBe(24);
    expect(() => bufferView(5 as never)).toThrow("bufferView: expected a tensor, tensor-like or TypedArray, got 5");
  });
});

// DeviceTensor views (API.md §4 DeviceTensor, SEMANTICS.md "A view ... is the same memory"):
// t.view(shape) and t.narrow(axis, start, length) share the allocation's memory and lifetime;
// a view is accepted by worker.run, registration handles and runAsync, including for a
// parameter with a dynamic dimension (the first L rows of a [1024, 768] cache); writes through
// a view are writes to the base; freeing the base kills its views; a view cannot be freed on
// its own; a strided narrow is a clear error. On cpu and interp, against independent formulas.
import { describe, it, expect } from "vitest";
import { pl, ChipWorker, RunConfig, DeviceTensor, randn, zeros, HostTensor } from "tspto";
import { TsptoError } from "../../src/ir/index.js";

const PLATFORMS = ["cpu", "interp"] as const;

// out[r, c] = 2 * x[r, c] + 1 over a dynamic row count, and an in-place update of a cache window
const affine = pl.jit(function affine(x: pl.Tensor<["L", 96], pl.FP32>, out: pl.Out<pl.Tensor<["L", 96], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(pl.mul(x, 2.0), 1.0)); });
});
const bump = pl.jit(function bump(c: pl.InOut<pl.Tensor<["R", 96], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.add(c, 10.0)); });
});
const rowsum = pl.jit(function rowsum(x: pl.Tensor<[1, 96], pl.FP32>, out: pl.Out<pl.Tensor<[1, 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.rowSum(x)); });
});

const codeOf = (f: () => unknown): string => { try { f(); } catch (e) { return e instanceof TsptoError ? e.code : `not a TsptoError: ${String(e)}`; } return "no error"; };
const errOf = (f: () => unknown): TsptoError => { try { f(); } catch (e) { if (e instanceof TsptoError) return e; throw e; } throw new Error("no error"); };
const f32 = (t: HostTensor) => Array.from(t.data as Float32Array);

describe("DeviceTensor views", () => {
  for (const platform of PLATFORMS) {
    const cfg = new RunConfig({ platform });

    it(`${platform}: narrow(0, start, L) of a [1024, 96] cache feeds a kernel's ["L", 96] parameter; writes through a view land in the base`, () => {
      using w = new ChipWorker(cfg);
      const init = randn([1024, 96], { seed: 7 });
      const cache = w.allocTensor([1024, 96], "float32", { init });
      const compiled = affine.compile(randn([3, 96]), zeros([3, 96]), cfg);
      const bumped = bump.compile(randn([3, 96]), cfg);
      const src = init.data as Float32Array;
      for (const [start, len] of [[0, 1], [0, 37], [5, 64], [1000, 24]] as const) {
        const view = cache.narrow(0, start, len);
        expect(view.shape).toEqual([len, 96]);
        expect(view.isView && view.base === cache).toBe(true);
        expect(view.dataPtr - cache.dataPtr).toBe(BigInt(start * 96 * 4));
        const out = zeros([len, 96]);
        w.run(compiled, view, out);
        const want = Array.from(src.subarray(start * 96, (start + len) * 96), (v) => Math.fround(Math.fround(v * 2) + 1));
        expect(f32(out)).toEqual(want);
      }
      // an InOut kernel through a narrow view updates exactly those rows of the base
      w.run(bumped, cache.narrow(0, 10, 5));
      const back = zeros([1024, 96]);
      w.copyFrom(back, cache, cache.nbytes);
      const b = back.data as Float32Array;
      for (let r = 0; r < 1024; r++) {
        for (const c of [0, 95]) expect(b[r * 96 + c]).toBe(r >= 10 && r < 15 ? Math.fround(src[r * 96 + c] + 10) : src[r * 96 + c]);
      }
      w.freeTensor(cache);
    });

    it(`${platform}: view(shape) reshapes the same bytes; a [1, 96] row of a view is a kernel argument; handles and runAsync take views`, async () => {
      using w = new ChipWorker(cfg);
      const init = randn([4, 2, 96], { seed: 3 });
      const t = w.allocTensor([4, 2, 96], "float32", { init });
      const flat = t.view([8, 96]);
      expect(flat.base).toBe(t);
      const row = flat.narrow(0, 5, 1);           // [1, 96]: row 5 of the flat view
      const compiled = rowsum.compile(randn([1, 96]), zeros([1, 1]), cfg);
      const handle = w.register(compiled);
      const out = zeros([1, 1]);
      handle(row, out);
      let want = 0;
      for (let c = 0; c < 96; c++) want += (init.data as Float32Array)[5 * 96 + c];
      expect((out.data as Float32Array)[0]).toBeCloseTo(want, 4);
      const out2 = zeros([1, 1]);
      await w.runAsync(compiled, row, out2);
      expect((out2.data as Float32Array)[0]).toBe((out.data as Float32Array)[0]);
      // narrow(1, ...) after axes of extent 1 is contiguous: the same row, columns 32..63 of [1, 96]
      const cols = row.narrow(1, 32, 32);
      expect([cols.shape, cols.dataPtr - t.dataPtr]).toEqual([[1, 32], BigInt((5 * 96 + 32) * 4)]);
      const part = new Float32Array(32);
      w.copyFrom(part, cols, cols.nbytes);
      expect(Array.from(part)).toEqual(Array.from((init.data as Float32Array).subarray(5 * 96 + 32, 5 * 96 + 64)));
      w.freeTensor(t);
    });

    it(`${platform}: a view dies with its base, cannot be freed on its own, and is refused once the base is freed`, async () => {
      using w = new ChipWorker(cfg);
      const cache = w.allocTensor([64, 96], "float32");
      const compiled = affine.compile(randn([3, 96]), zeros([3, 96]), cfg);
      const v = cache.narrow(0, 0, 8);
      const e = errOf(() => w.freeTensor(v));
      expect(e.code).toBe("E_VIEW");
      expect(e.message).toContain("is a view of a [64, 96] DeviceTensor");
      expect(e.message).toContain("free the tensor it was made from");
      expect(w.stats.liveTensors).toBe(1);
      // an async launch holds the base of the view it uses: a free meanwhile is deferred, the result intact
      const out = zeros([8, 96]);
      const p = w.runAsync(compiled, v, out);
      w.freeTensor(cache);
      await p;
      expect(f32(out).every((x) => x === 1)).toBe(true); // zeroed memory: 2 * 0 + 1
      expect(v.live).toBe(false);
      const late = errOf(() => w.run(compiled, v, zeros([8, 96])));
      expect(late.code).toBe("E_FREED");
      expect(late.message).toContain("DeviceTensor is not a live allocation owned by this ChipWorker");
      expect(codeOf(() => cache.narrow(0, 0, 4))).toBe("E_FREED");
      expect(codeOf(() => v.view([768]))).toBe("E_FREED");
      expect(String(v)).toContain("freed");
    });

    it(`${platform}: the device re-checks a view's address: it must lie in a live allocation that holds the bytes the program uses`, () => {
      using w = new ChipWorker(cfg);
      const compiled = affine.compile(randn([3, 96]), zeros([3, 96]), cfg);
      const reg = w.registration(compiled);
      const t = w.allocTensor([8, 96], "float32");
      const kinds = Uint8Array.of(3 /* Device */, 1 /* HostOut */, 4 /* Int: L */);
      // rows 4..7 of t as the start of an L = 4 tensor: inside the allocation, accepted
      w.device.launch(reg.module, [t.dataPtr + BigInt(4 * 96 * 4), new Float32Array(4 * 96), 4], kinds);
      // the same address with L = 8: the program would read past the allocation's end
      const e = errOf(() => w.device.launch(reg.module, [t.dataPtr + BigInt(4 * 96 * 4), new Float32Array(8 * 96), 8], kinds));
      expect(e.code).toBe("E_ADDRESS");
      expect(e.message).toMatch(/leaves the allocation at 0x[0-9a-f]+ of 3072 bytes/);
      w.freeTensor(t);
      expect(codeOf(() => w.device.launch(reg.module, [t.dataPtr + BigInt(4 * 96 * 4), new Float32Array(4 * 96), 4], kinds))).toBe("E_ADDRESS");
    });

    it(`${platform}: views are bound to their worker; close() ends them`, () => {
      const w1 = new ChipWorker(cfg), w2 = new ChipWorker(cfg);
      try {
        const compiled = affine.compile(randn([3, 96]), zeros([3, 96]), cfg);
        const t = w1.allocTensor([16, 96], "float32");
        const v = t.narrow(0, 2, 3);
        expect(codeOf(() => w2.run(compiled, v, zeros([3, 96])))).toBe("E_FOREIGN");
        w1.close();
        expect(v.live).toBe(false);
        expect(codeOf(() => w1.run(compiled, v, zeros([3, 96])))).not.toBe("no error");
      } finally { w1.close(); w2.close(); }
    });
  }

  it("view / narrow argument errors name the rule", () => {
    using w = new ChipWorker(new RunConfig({ platform: "interp" }));
    const t = w.allocTensor([1024, 768], "float32");
    const strided = errOf(() => t.narrow(1, 64, 64));
    expect(strided.code).toBe("E_VIEW");
    expect(strided.message).toContain("narrow(1, 64, 64) of a [1024, 768] DeviceTensor would be a strided view");
    expect(strided.message).toContain("narrow axis 0");
    expect(errOf(() => t.narrow(0, 1000, 25)).message).toContain("the window [1000, 1000 + 25) is outside axis 0 of a [1024, 768] DeviceTensor (extent 1024)");
    expect(errOf(() => t.narrow(2, 0, 1)).message).toContain("narrow: axis must be an integer in [0, 1]");
    expect(errOf(() => t.narrow(0, 0, 0)).code).toBe("E_VIEW");
    const v = errOf(() => t.view([1024, 767]));
    expect(v.code).toBe("E_SHAPE");
    expect(v.message).toContain("view: [1024, 767] has 785408 elements, but the [1024, 768] DeviceTensor has 786432");
    expect(codeOf(() => t.view([0, 5]))).toBe("E_SHAPE");
    // a whole-axis narrow along a later axis is the tensor itself: contiguous
    expect(t.narrow(1, 0, 768).dataPtr).toBe(t.dataPtr);
    expect(t.view([768, 1024]).narrow(0, 2, 1).shape).toEqual([1, 1024]);
    expect(t).toBeInstanceOf(DeviceTensor);
  });
});

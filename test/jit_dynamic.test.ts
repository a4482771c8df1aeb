// Dynamic dimensions (API.md "Dynamic shapes"): a name in a shape annotation compiles once for
// every extent; the extent is passed at launch. Explicit loops over pl.dim, tensor-level ops
// (run-time trip counts, tail rows, SPMD bands with a run-time end), the binder's checks and
// their messages, on cpu and interp against independent formulas.
import { describe, it, expect, vi } from "vitest";
import { Binder } from "../src/runtime/binder.js";
import { readArtifact } from "../src/artifact/index.js";
import { ArgKind } from "../src/targets/index.js";
import { pl, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { TsptoError } from "../src/ir/index.js";

const PLATFORMS = ["cpu", "interp"] as const;

const twice = pl.jit(function twice(x: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 64], pl.FP32>>) {
  const m = pl.dim(x, 0);
  for (const r of pl.range(0, m, 16)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(x, [r, 0], [16, 64]);
      pl.store(pl.add(pl.mul(t, 2.0), 1.0), [r, 0], out);
    });
  }
});

const bias = pl.jit(function bias(a: pl.Tensor<["M", 300], pl.FP32>, b: pl.Tensor<[1, 300], pl.FP32>, out: pl.Out<pl.Tensor<["M", 300], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(pl.mul(a, 2.0), b)); });
});

const rowSums = pl.jit(function rowSums(a: pl.Tensor<["B", 100], pl.FP32>, out: pl.Out<pl.Tensor<["B", 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.rowSum(a)); });
});

const mm = pl.jit(function mm(a: pl.Tensor<["M", 96], pl.FP32>, b: pl.Tensor<[96, "N"], pl.FP32>, out: pl.Out<pl.Tensor<["M", "N"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(a, b)); });
});

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => { let d = 0; for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i])); return d; };
const cfgOf = (platform: string) => new RunConfig({ platform });

describe("dynamic dimensions", () => {
  for (const platform of PLATFORMS) {
    it(`${platform}: an explicit loop to pl.dim(x, 0) compiles once for every M`, () => {
      twice.clearCache();
      const cfg = cfgOf(platform);
      const compiled = twice.compile(randn([16, 64]), zeros([16, 64]), cfg);
      for (const m of [16, 48, 320]) {
        const x = randn([m, 64], { seed: m }), out = zeros([m, 64]);
        expect(twice.compile(x, out, cfg)).toBe(compiled); // the key holds "M", not its value
        twice(x, out, cfg);
        expect(maxDiff((out.data as Float32Array), Array.from((x.data as Float32Array), (v) => Math.fround(Math.fround(v * 2) + 1)))).toBe(0);
      }
      expect(twice.cacheSize).toBe(1);
      expect(compiled.meta.params[0]).toMatchObject({ shape: [-1, 64], dimNames: ["M", null] });
    });

    it(`${platform}: tensor-level ops over dynamic extents (run-time trip counts, tail rows, broadcast, reductions, matmul)`, () => {
      const cfg = cfgOf(platform);
      bias.clearCache(); rowSums.clearCache(); mm.clearCache();
      for (const m of [1, 7, 37, 1000]) {
        const a = randn([m, 300], { seed: m }), b = randn([1, 300], { seed: 3 }), out = zeros([m, 300]);
        bias(a, b, out, cfg);
        expect(maxDiff((out.data as Float32Array), Array.from((a.data as Float32Array), (v, i) => Math.fround(Math.fround(v * 2) + (b.data as Float32Array)[i % 300])))).toBe(0);

        const x = randn([m, 100], { seed: m + 1 }), s = zeros([m, 1]);
        rowSums(x, s, cfg);
        const ref = Array.from({ length: m }, (_, r) => { let t = 0; for (let j = 0; j < 100; j++) t += (x.data as Float32Array)[r * 100 + j]; return t; });
        expect(maxDiff((s.data as Float32Array), ref)).toBeLessThan(1e-4);

        const n = 1 + ((m * 13) % 150);
        const A = randn([m, 96], { seed: 5 }), B = randn([96, n], { seed: 6 }), C = zeros([m, n]);
        mm(A, B, C, cfg);
        const cref: number[] = [];
        for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) { let t = 0; for (let k = 0; k < 96; k++) t += (A.data as Float32Array)[i * 96 + k] * (B.data as Float32Array)[k * n + j]; cref.push(t); }
        expect(maxDiff((C.data as Float32Array), cref)).toBeLessThan(1e-3);
      }
      expect([bias.cacheSize, rowSums.cacheSize, mm.cacheSize]).toEqual([1, 1, 1]);
    });
  }

  it("after the first call, calls with other extents take the fast path (hashed by the dimension's name, packed by tryPack)", () => {
    twice.clearCache();
    twice(randn([16, 64]), zeros([16, 64]));
    const pack = vi.spyOn(Binder.prototype, "pack"), tryPack = vi.spyOn(Binder.prototype, "tryPack");
    try {
      for (const m of [48, 320, 16]) {
        const x = randn([m, 64], { seed: m }), out = zeros([m, 64]);
        twice(x, out);
        expect(maxDiff((out.data as Float32Array), Array.from((x.data as Float32Array), (v) => Math.fround(Math.fround(v * 2) + 1)))).toBe(0);
      }
      expect(pack).not.toHaveBeenCalled();
      expect(tryPack).toHaveBeenCalledTimes(3);
    } finally { pack.mockRestore(); tryPack.mockRestore(); }
  });

  for (const platform of PLATFORMS) {
    it(`${platform}: a matmul over a dynamic K (attention's P @ V over a run-time sequence length) equals the one over the static K`, () => {
      const pv = pl.jit(function pv(p: pl.Tensor<[40, "S"], pl.FP32>, v: pl.Tensor<["S", 24], pl.FP32>, acc: pl.Tensor<[40, 24], pl.FP32>, out: pl.Out<pl.Tensor<[40, 24], pl.FP32>>, out2: pl.Out<pl.Tensor<[40, 24], pl.FP32>>) {
        pl.at(pl.Level.CORE_GROUP, () => {
          pl.assign(out, pl.matmul(p, v));
          pl.assign(out2, pl.matmulAcc(acc, p, v));
        });
      });
      const pvStatic = pl.jit(function pvStatic(p: pl.Tensor, v: pl.Tensor, out: pl.Out<pl.Tensor>) {
        pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(p, v)); });
      });
      const cfg = cfgOf(platform);
      for (const s of [1, 5, 130, 300]) {
        const p = randn([40, s], { seed: s }), v = randn([s, 24], { seed: s + 1 }), acc = randn([40, 24], { seed: 9 });
        const out = zeros([40, 24]), out2 = zeros([40, 24]), ref = zeros([40, 24]);
        pv(p, v, acc, out, out2, cfg);
        pvStatic(p, v, ref, cfg);
        // the same k order and the same fused multiply-adds: bit-identical to the static program
        expect(Array.from(out.data as Float32Array)).toEqual(Array.from(ref.data as Float32Array));
        const want: number[] = [];
        for (let i = 0; i < 40; i++) for (let j = 0; j < 24; j++) {
          let t = (acc.data as Float32Array)[i * 24 + j];
          for (let k = 0; k < s; k++) t += (p.data as Float32Array)[i * s + k] * (v.data as Float32Array)[k * 24 + j];
          want.push(t);
        }
        expect(maxDiff(out2.data as Float32Array, want)).toBeLessThan(1e-3);
      }
      expect(pv.cacheSize).toBe(1);
    });
  }

  for (const platform of PLATFORMS) {
    it(`${platform}: reductions along a dynamic axis (softmax over a run-time sequence length)`, () => {
      const smx = pl.jit(function smx(s: pl.Tensor<[24, "S"], pl.FP32>, mx: pl.Out<pl.Tensor<[24, 1], pl.FP32>>, sm: pl.Out<pl.Tensor<[24, 1], pl.FP32>>,
        cm: pl.Out<pl.Tensor<[1, "S"], pl.FP32>>, cs: pl.Out<pl.Tensor<[1, "S"], pl.FP32>>) {
        pl.at(pl.Level.CORE_GROUP, () => {
          pl.assign(mx, pl.rowMax(s));
          pl.assign(sm, pl.rowSum(pl.exp(s)));
          pl.assign(cm, pl.colMin(s));
          pl.assign(cs, pl.colSum(s));
        });
      });
      const cfg = cfgOf(platform);
      for (const n of [1, 3, 513, 1300]) {
        const s = randn([24, n], { seed: n }), d = s.data as Float32Array;
        const mx = zeros([24, 1]), sm = zeros([24, 1]), cm = zeros([1, n]), cs = zeros([1, n]);
        smx(s, mx, sm, cm, cs, cfg);
        const rows = Array.from({ length: 24 }, (_, r) => Array.from(d.subarray(r * n, (r + 1) * n)));
        expect(Array.from(mx.data as Float32Array)).toEqual(rows.map((r) => Math.max(...r))); // max is exact
        expect(maxDiff(sm.data as Float32Array, rows.map((r) => r.reduce((a, v) => a + Math.exp(v), 0)))).toBeLessThan(1e-6 * n * 8);
        const cols = Array.from({ length: n }, (_, c) => rows.map((r) => r[c]));
        expect(Array.from(cm.data as Float32Array)).toEqual(cols.map((c) => Math.min(...c)));
        expect(maxDiff(cs.data as Float32Array, cols.map((c) => c.reduce((a, v) => a + v, 0)))).toBeLessThan(1e-4);
      }
      expect(smx.cacheSize).toBe(1);
    });
  }

  it("cpu: a tensor-level loop over a dynamic extent is split into row bands at run time (one task per core)", () => {
    const w = new ChipWorker(new RunConfig());
    try {
      const compiled = bias.compile(randn([8, 300]), randn([1, 300]), zeros([8, 300]));
      const a = randn([4096, 300], { seed: 1 }), b = randn([1, 300], { seed: 2 }), out = zeros([4096, 300]);
      const before = w.deviceStats?.tasksRun ?? 0;
      w.run(compiled, a, b, out);
      expect((w.deviceStats?.tasksRun ?? 0) - before).toBeGreaterThanOrEqual(2);
      expect(maxDiff((out.data as Float32Array), Array.from((a.data as Float32Array), (v, i) => Math.fround(Math.fround(v * 2) + (b.data as Float32Array)[i % 300])))).toBe(0);
      const small = zeros([3, 300]);
      const t0 = w.deviceStats?.tasksRun ?? 0;
      w.run(compiled, randn([3, 300]), b, small); // 3 rows: not worth a second task
      expect((w.deviceStats?.tasksRun ?? 0) - t0).toBe(1);
    } finally { w.close(); }
  });

  it("cpu: DeviceTensors of different extents run through one registered program", () => {
    const w = new ChipWorker(new RunConfig());
    try {
      const compiled = twice.compile(randn([16, 64]), zeros([16, 64]));
      for (const m of [32, 160]) {
        const x = randn([m, 64], { seed: m });
        const dx = w.allocTensor([m, 64], "float32", { init: x }), dout = w.allocTensor([m, 64]);
        w.run(compiled, dx, dout);
        const host = zeros([m, 64]);
        w.copyFrom(host, dout, m * 64 * 4);
        expect(maxDiff((host.data as Float32Array), Array.from((x.data as Float32Array), (v) => Math.fround(Math.fround(v * 2) + 1)))).toBe(0);
      }
    } finally { w.close(); }
  });

  it("the interp device checks the extent slots itself (a launch that skips the binder)", () => {
    const compiled = twice.compile(randn([16, 64]), zeros([16, 64]), cfgOf("interp"));
    const w = new ChipWorker(cfgOf("interp"));
    try {
      const dev = w.device;
      const id = dev.load(readArtifact(compiled.outputDir));
      const kinds = Uint8Array.of(ArgKind.HostIn, ArgKind.HostOut, ArgKind.Int);
      let err: unknown;
      try { dev.launch(id, [new Float32Array(64), new Float32Array(64), 0], kinds); } catch (e) { err = e; }
      expect((err as TsptoError).code).toBe("E_ARG");
      expect((err as Error).message).toContain("launch: dynamic dimension 'M' is 0; it must be an integer >= 1");
      const x = randn([16, 64], { seed: 3 }), out = new Float32Array(16 * 64);
      dev.launch(id, [x.data, out, 16], kinds);
      expect(maxDiff(out, Array.from(x.data as Float32Array, (v) => Math.fround(Math.fround(v * 2) + 1)))).toBe(0);
    } finally { w.close(); }
  });

  it("tensors that share a dimension name must agree on its extent (E_ARG names both)", () => {
    for (const platform of PLATFORMS) {
      let err: unknown;
      try { twice(randn([32, 64]), zeros([48, 64]), cfgOf(platform)); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoError);
      expect((err as TsptoError).code).toBe("E_ARG");
      expect((err as Error).message).toContain("argument 'out' (#2) of 'twice': dynamic dimension 'M' (axis 0) is 48, but argument 'x' (#1) gave M = 32");
    }
  });

  it("a name used twice in one shape must have one extent there (E_ARG names the axes, not a TypeError)", () => {
    const square = pl.jit(function square(x: pl.Tensor<["N", "N"], pl.FP32>, out: pl.Out<pl.Tensor<["N", "N"], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(x, 1.0)); });
    });
    for (const platform of PLATFORMS) {
      let err: unknown;
      try { square(randn([3, 4]), zeros([3, 4]), cfgOf(platform)); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoError);
      expect((err as TsptoError).code).toBe("E_ARG");
      expect((err as Error).message).toContain("argument 'x' (#1) of 'square': dynamic dimension 'N' (axis 1) is 4, but axis 0 of the same argument gave N = 3");
      const x = randn([3, 3], { seed: 5 }), out = zeros([3, 3]);
      square(x, out, cfgOf(platform));
      expect(maxDiff(out.data as Float32Array, Array.from(x.data as Float32Array, (v) => Math.fround(v + 1)))).toBe(0);
    }
  });

  it("a static dimension still has to match, and the message shows the dimension names", () => {
    const compiled = twice.compile(randn([16, 64]), zeros([16, 64]));
    const w = new ChipWorker(new RunConfig());
    try {
      expect(() => w.run(compiled, randn([16, 32]), zeros([16, 32]))).toThrow("expected a float32 tensor of shape [M, 64], got float32 of shape [16, 32]");
    } finally { w.close(); }
  });

  it("an explicit window past the run-time extent fails at run time with the window and file:line:col", () => {
    for (const platform of PLATFORMS) {
      let err: unknown;
      try { twice(randn([40, 64]), zeros([40, 64]), cfgOf(platform)); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoError);
      expect((err as Error).message).toMatch(/jit_dynamic\.test\.ts:\d+:\d+/);
      expect((err as Error).message).toContain("[32, 0]");
    }
  });

  it("createTensor with a dimension name: a launch buffer of the entry's extent; an unknown name is E_DYNAMIC", () => {
    const viaBuffer = pl.jit(function viaBuffer(x: pl.Tensor<["M", 16], pl.FP32>, out: pl.Out<pl.Tensor<["M", 16], pl.FP32>>) {
      const tmp = pl.createTensor(["M", 16], pl.FP32);
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(tmp, pl.exp(x)); });
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(tmp, 1.0)); });
    });
    for (const platform of PLATFORMS) {
      for (const m of [3, 70]) {
        const x = randn([m, 16], { seed: m }), out = zeros([m, 16]);
        viaBuffer(x, out, cfgOf(platform));
        expect(maxDiff(out.data as Float32Array, Array.from(x.data as Float32Array, (v) => Math.exp(v) + 1))).toBeLessThan(1e-5);
      }
    }
    const unknown = pl.jit(function unknown(x: pl.Tensor<["M", 16], pl.FP32>, out: pl.Out<pl.Tensor<["M", 16], pl.FP32>>) {
      const tmp = pl.createTensor(["N", 16], pl.FP32);
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(tmp, pl.exp(x)); pl.assign(out, x); });
    });
    for (const platform of PLATFORMS) {
      let err: unknown;
      try { unknown(randn([4, 16]), zeros([4, 16]), cfgOf(platform)); } catch (e) { err = e; }
      expect((err as TsptoError).code).toBe("E_DYNAMIC");
      expect((err as Error).message).toContain(`createTensor(["N", 16]): "N" is not a dynamic dimension of the entry's parameters`);
      expect((err as Error).message).toMatch(/jit_dynamic\.test\.ts:\d+:\d+/);
    }
  });

  it("createTensor's shape takes constants and dimension names only: the messages say so", () => {
    const notConst = pl.jit(function notConst(x: pl.Tensor<["M", 16], pl.FP32>, n: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<["M", 16], pl.FP32>>) {
      const tmp = pl.createTensor([n, 16], pl.FP32);
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(tmp, x); pl.assign(out, x); });
    });
    expect(() => notConst(randn([4, 16]), 4, zeros([4, 16]))).toThrow(/pl\.createTensor: 'shape' must be a list of constant integers and dynamic dimension names/);
    const badName = pl.jit(function badName(x: pl.Tensor<["M", 16], pl.FP32>, out: pl.Out<pl.Tensor<["M", 16], pl.FP32>>) {
      const tmp = pl.createTensor(["M-1", 16], pl.FP32);
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(tmp, x); pl.assign(out, x); });
    });
    expect(() => badName(randn([4, 16]), zeros([4, 16]))).toThrow(/shape must be a non-empty list of positive integers and dynamic dimension names, got \["M-1",16\]/);
  });

  it("what a dynamic dimension cannot do is a compile error that says so", () => {
    const argmax = pl.jit(function argmax(a: pl.Tensor<[8, "S"], pl.FP32>, out: pl.Out<pl.Tensor<[8, 1], pl.INT32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.rowArgmax(a)); });
    });
    expect(() => argmax(randn([8, 4]), zeros([8, 1], "int32"))).toThrow(/pl\.rowArgmax along a dynamic axis \(Tensor<\[8, "S"\], float32>\) is not supported/);
  });
});

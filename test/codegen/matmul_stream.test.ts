// Products of few rows (a decode GEMV: M <= 6, fp32, b as [K, N]) on cpu: TensorToTile gives them
// wide column tiles (about one band per core) and the code generator streams b row by row (k outer),
// src/codegen/cpp/emitters/matmul.ts. The values are interp's bit for bit in both contraction modes:
// every element still accumulates in k order. Column tails (< 16), k tails (not a multiple of 4),
// partial tiles, matmulAcc / matmulBias epilogues, the tile-level form and b stored [N, K] (bTrans:
// 16 rows of b at a time, transposed in registers) are covered.
import { readFileSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { fewRowTileWidth } from "../../src/passes/tensor_to_tile.js";
import { forEachExpr } from "../../src/ir/index.js";
import { getTarget } from "../../src/targets/index.js";

const bits = (t: HostTensor) => Array.from(t.data as Float32Array);
const cfg = (platform: string, fpContract: "fast" | "off") => new RunConfig({ platform, fpContract });

const gemv = pl.jit(function gemv(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w)); });
});
const linear = pl.jit(function linear(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.relu(pl.add(pl.matmul(x, w), b))); });
});
const gemvT = pl.jit(function gemvT(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w, { bTrans: true })); });
});
const accT = pl.jit(function accT(c: pl.Tensor, x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.add(pl.matmulAcc(c, x, w, { bTrans: true }), 1)); });
});
const acc = pl.jit(function acc(c: pl.Tensor, x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmulAcc(c, x, w)); });
});
// the tile-level form: a [1, K] row against [K, 256] tiles, K in steps of 64
const rows = pl.jit(function rows(x: pl.Tensor<[1, 192], pl.FP32>, w: pl.Tensor<[192, 512], pl.FP32>, y: pl.Out<pl.Tensor<[1, 512], pl.FP32>>) {
  for (const j of pl.range(0, 512, 256)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      let a = pl.matmul(pl.load(x, [0, 0], [1, 64]), pl.load(w, [0, j], [64, 256]));
      for (const k of pl.range(64, 192, 64)) a = pl.matmulAcc(a, pl.load(x, [0, k], [1, 64]), pl.load(w, [k, j], [64, 256]));
      pl.store(a, [0, j], y);
    });
  }
});

type Jit = { compileAsync(...a: unknown[]): Promise<unknown> };
/** The cpu programs of a test built off the event loop first, in both contraction modes (the test's calls then hit the cache). */
const warm = (calls: readonly (readonly [unknown, readonly unknown[]])[], out: unknown) =>
  Promise.all((["fast", "off"] as const).flatMap((mode) => calls.map(([f, args]) => (f as Jit).compileAsync(...args, out, cfg("cpu", mode)))));
const source = (dir: string): string => readFileSync(join(dir, "kernels", readdirSync(join(dir, "kernels")).find((f) => f.endsWith(".cpp"))!), "utf8");

describe("few-row fp32 products stream b on cpu", () => {
  for (const [m, k, n] of [[1, 768, 768], [1, 300, 1000], [3, 257, 2304], [6, 64, 520]] as const) {
    it(`[${m}, ${k}] x [${k}, ${n}] equals interp bit for bit, fused and not`, async () => {
      const x = randn([m, k], { seed: m + k }), w = randn([k, n], { seed: n }), b = randn([1, n], { seed: 9 }), c = randn([m, n], { seed: 10 });
      await warm([[gemv, [x, w]], [linear, [x, w, b]], [acc, [c, x, w]]], zeros([m, n]));
      for (const mode of ["fast", "off"] as const) {
        for (const [f, args] of [[gemv, [x, w]], [linear, [x, w, b]], [acc, [c, x, w]]] as const) {
          const got = zeros([m, n]), want = zeros([m, n]);
          (f as (...a: unknown[]) => void)(...args, got, cfg("cpu", mode));
          (f as (...a: unknown[]) => void)(...args, want, cfg("interp", mode));
          expect(bits(got), `${f.name} ${mode}`).toEqual(bits(want));
        }
      }
      expect(source(gemv.compile(x, w, zeros([m, n])).outputDir)).toContain("few rows: b streamed row by row");
    });
  }

  for (const [m, k, n] of [[1, 768, 1000], [2, 300, 77], [6, 4100, 33], [1, 5, 16]] as const) {
    it(`[${m}, ${k}] x [${n}, ${k}]ᵀ (bTrans) equals interp bit for bit, fused and not`, async () => {
      const x = randn([m, k], { seed: m + k }), w = randn([n, k], { seed: n }), c = randn([m, n], { seed: 10 });
      await warm([[gemvT, [x, w]], [accT, [c, x, w]]], zeros([m, n]));
      for (const mode of ["fast", "off"] as const) {
        for (const [f, args] of [[gemvT, [x, w]], [accT, [c, x, w]]] as const) {
          const got = zeros([m, n]), want = zeros([m, n]);
          (f as (...a: unknown[]) => void)(...args, got, cfg("cpu", mode));
          (f as (...a: unknown[]) => void)(...args, want, cfg("interp", mode));
          expect(bits(got), `${f.name} ${mode}`).toEqual(bits(want));
        }
      }
      expect(source(gemvT.compile(x, w, zeros([m, n])).outputDir)).toContain("tspto_gemv_bt<");
    });
  }

  it("the tile-level form ([1, K] rows against [K, N] tiles) takes the same path, bit for bit", async () => {
    const x = randn([1, 192], { seed: 1 }), w = randn([192, 512], { seed: 2 });
    await warm([[rows, [x, w]]], zeros([1, 512]));
    for (const mode of ["fast", "off"] as const) {
      const got = zeros([1, 512]), want = zeros([1, 512]);
      rows(x, w, got, cfg("cpu", mode));
      rows(x, w, want, cfg("interp", mode));
      expect(bits(got), mode).toEqual(bits(want));
    }
    expect(source(rows.compile(x, w, zeros([1, 512])).outputDir)).toContain("few rows: b streamed row by row");
  });

  // one program for the prompt and every decode step: M is a run-time dimension; M = 1 takes the
  // wide streamed tile (a branch on M), other M the usual tiles over the same bands
  const dynLinear = pl.jit(function dynLinear(x: pl.Tensor<["S", 300], pl.FP32>, w: pl.Tensor<[300, 1000], pl.FP32>, b: pl.Tensor<[1, 1000], pl.FP32>,
    r: pl.Tensor<["S", 1000], pl.FP32>, y: pl.Out<pl.Tensor<["S", 1000], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.add(pl.relu(pl.add(pl.matmul(x, w), b)), r)); });
  });
  it("a run-time M: M = 1 streams b through one wide tile, other M keep the usual tiles, all bit for bit", async () => {
    const w = randn([300, 1000], { seed: 3 }), b = randn([1, 1000], { seed: 4 });
    await warm([[dynLinear, [randn([1, 300], { seed: 1 }), w, b, randn([1, 1000], { seed: 2 })]]], zeros([1, 1000]));
    const prog = dynLinear.compile(randn([1, 300], { seed: 1 }), w, b, randn([1, 1000], { seed: 2 }), zeros([1, 1000]));
    const cores = getTarget("cpu").description.fewRowMatmulCores!;
    const wide = fewRowTileWidth({ scratchCapacity: 1 << 20, fewRowMatmulCores: cores }, 1, 1000, 300, false, false, 0, "float32", "float32");
    if (wide) {
      expect(source(prog.outputDir)).toContain("few rows: b streamed row by row");
      const widths = new Set<string>();
      for (const fn of dynLinear.lower(randn([1, 300], { seed: 1 }), w, b, randn([1, 1000], { seed: 2 }), zeros([1, 1000])).functions) {
        forEachExpr(fn.body, (e) => { if (e.kind === "call" && e.op === "tile.matmul" && e.type.kind === "tile") widths.add(`${e.type.shape[0]}x${e.type.shape[1]}`); });
      }
      expect(widths.has(`1x${wide}`)).toBe(true);
    }
    for (const s of [1, 2, 7, 130]) {
      const x = randn([s, 300], { seed: s }), r = randn([s, 1000], { seed: s + 1 });
      for (const mode of ["fast", "off"] as const) {
        const got = zeros([s, 1000]), want = zeros([s, 1000]);
        dynLinear(x, w, b, r, got, cfg("cpu", mode));
        dynLinear(x, w, b, r, want, cfg("interp", mode));
        expect(bits(got), `S = ${s} ${mode}`).toEqual(bits(want));
      }
    }
  });

  it("tiles such products one band of columns per core, at most 1024 wide; other products keep 128", () => {
    const w = (m: number, k: number, n: number, cores: number | undefined, o: { bT?: boolean; dtype?: string } = {}) =>
      fewRowTileWidth({ scratchCapacity: 1 << 20, fewRowMatmulCores: cores }, m, n, k, false, o.bT ?? false, 0, "float32", o.dtype ?? "float32");
    expect(w(1, 768, 768, 2)).toBe(384);
    expect(w(1, 4096, 4096, 2)).toBe(1024);
    expect(w(1, 768, 2304, 2)).toBe(576);
    expect(w(4, 768, 3072, 1)).toBe(1024);
    expect(w(1, 768, 768, 16)).toBeNull(); // 48 columns a core: the usual tiles
    expect(w(1, 768, 768, undefined)).toBeNull(); // a target that does not stream (cuda, webgpu)
    expect(w(8, 768, 768, 2)).toBeNull(); // more rows than are streamed
    expect(w(1, 768, 768, 2, { bT: true })).toBeNull(); // b stored [n, k]
    expect(w(1, 768, 768, 2, { dtype: "bfloat16" })).toBeNull(); // the dot-unit kernels
    // the cpu target tiles for the cores of this machine: f.lower() (its facts) gives those widths
    const cores = getTarget("cpu").description.fewRowMatmulCores;
    expect(cores).toBe(Math.min(16, availableParallelism()));
    const low = gemv.lower(randn([1, 768], { seed: 1 }), randn([768, 4096], { seed: 2 }), zeros([1, 4096]));
    const widths = new Set<number>();
    for (const fn of low.functions) forEachExpr(fn.body, (e) => { if (e.kind === "call" && e.op === "tile.matmul" && e.type.kind === "tile") widths.add(e.type.shape[1] as number); });
    expect([...widths]).toEqual([w(1, 768, 4096, cores) ?? 128]);
  });
});

// The cuda code generator without nvcc: every op that can reach code generation has a CUDA
// formula; an op without one is a compile error naming it; generated kernels have the
// promised structure (hand-built programs in ./helpers.ts).
import { describe, expect, it } from "vitest";
import { allOps, TsptoCompileError, NO_SPAN } from "../../src/ir/index.js";
import "../../src/ir/ops/index.js";
import { cudaEmitterFor, generateCuda } from "../../src/codegen/cuda/index.js";
import { SIMT_OPS } from "../../src/codegen/simt/index.js";
import { seedProgram } from "../targets/cuda/corpus.js";
import { indexingPrograms } from "../ops/fixtures/indexing.js";
import { pl, RunConfig, randn, zeros } from "tspto";

/** Softmax over [64, 256]: FuseRowReductions makes exp(t - max) and its sum one rowSumKeep. */
const softmaxK = pl.jit(function softmaxK(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [64, 256]);
    const tmp = pl.createTile([64, 256], pl.FP32, pl.Mem.Vec);
    const mx: pl.Tile<[64, 1], pl.FP32> = pl.rowMax(t, tmp);
    const e = pl.exp(pl.rowExpandSub(t, mx));
    const s: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(e, tmp);
    pl.store(pl.rowExpandDiv(e, s), [0, 0], out);
  });
  return out;
});

// tensor-level ops are lowered to tiles by the pass pipeline; of them only tensor.read stays
// in kernels, and tensor.create in the orchestration (the host C++ generator's)
const LOWERED_AWAY = (op: string) => op.startsWith("tensor.") && op !== "tensor.read";

describe("cuda formulas", () => {
  it("every tile and scalar op of the registry (and tensor.read) has one", () => {
    const missing: string[] = [];
    for (const op of allOps()) {
      // ops with loweredBy (matmulBias, batchMatmul: the MatmulForms pass) never reach code generation
      if (LOWERED_AWAY(op.name) || op.level === "orchestration" || op.loweredBy) continue;
      try { cudaEmitterFor(op.name, NO_SPAN); } catch { missing.push(op.name); }
    }
    expect(missing).toEqual([]);
    expect(SIMT_OPS.has("tile.matmul")).toBe(true);
  });

  it("an op without a formula is a TsptoCompileError naming it", () => {
    let err: unknown;
    try { cudaEmitterFor("tile.frobnicate", NO_SPAN); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_CODEGEN");
    expect((err as Error).message).toContain("the cuda code generator has no formula for op 'tile.frobnicate'");
    expect(() => cudaEmitterFor("tensor.add", NO_SPAN)).toThrow(/must be lowered to tiles/);
  });

  it("rowSumKeep (two results): the block computes the kept tile, syncs, then the warps sum its rows", () => {
    const p = softmaxK.lower(randn([64, 256], { seed: 1 }), zeros([64, 256]));
    expect(p.asText()).toMatch(/const \[e, s\]: \[pl\.Tile<\[1, 256\].*\] = pl\.rowSumKeep\(/);
    const src = generateCuda(p).source;
    const a = src.indexOf("// e = tile.exp"), b = src.indexOf("// s = tile.rowSum");
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a);
    expect(src.slice(a, b)).toContain("__syncthreads();");
    expect(src.slice(b)).toContain("__shfl_xor_sync");
  });

  it("the seed program: one kernel, a host entry that submits it with the launch descriptor, 128-bit paths", () => {
    const g = generateCuda(seedProgram());
    expect(g.kernels).toHaveLength(1);
    expect((g.source.match(/__global__ void __launch_bounds__\(256\)/g) ?? []).length).toBe(1);
    expect(g.source).toContain("const TsptoCudaArgs a");
    expect(g.source).toContain("float4");
    // slots a, b, out, then the descriptor (lo_slot, hi_slot, start, step, trips, grid) of a one-block launch
    expect(g.entry).toMatch(/const int64_t _slots\d+\[9\] = \{ a_\d+, b_\d+, out_\d+, -1, -1, 0, 0, 1, 1 \};/);
    expect(g.entry).toContain("rt->submit(rt->ctx, TSPTO_CUDA_KERNEL(0), \"addKernel_incore_0\"");
    expect(g.entry).toContain("tspto_cuda_kernel_names[1] = { \"k_addKernel_incore_0\" }");
  });

  it("dynamic dimensions are a compile error on cuda that says so (cpu and interp take them)", () => {
    const dyn = pl.jit(function dyn(x: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 64], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.exp(x)); });
    });
    const lowered = dyn.lower(randn([8, 64]), zeros([8, 64]), new RunConfig({ platform: "cuda" }));
    let err: unknown;
    try { generateCuda(lowered); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_DYNAMIC");
    expect((err as Error).message).toContain("dynamic dimensions are not supported on the cuda platform yet");
  });

  it("a tensor-level slice of run-time extent is E_DYNAMIC on cuda; iota, gather and gatherLoad generate block-parallel code with checked indices", () => {
    const prefix = pl.jit(function prefix(x: pl.Tensor<[64, 32], pl.FP32>, n: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<[64, 32], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.slice(x, [n, 32], [0, 0])); });
    });
    let err: unknown;
    try { generateCuda(prefix.lower(randn([64, 32]), 4, zeros([64, 32]), new RunConfig({ platform: "cuda" }))); } catch (e) { err = e; }
    expect((err as TsptoCompileError).code).toBe("E_DYNAMIC");
    expect((err as Error).message).toContain("a tensor-level pl.slice of run-time extent is not supported on the cuda platform yet");
    const g = generateCuda(indexingPrograms().get("embed")!);
    expect(g.source).toMatch(/\/\/ \w+ = tile\.gatherLoad/);
    expect(g.source).toContain("tspto_fail(a, ");
    expect(generateCuda(indexingPrograms().get("iotas")!).source).toMatch(/\/\/ \w+ = tile\.iota/);
    expect(generateCuda(indexingPrograms().get("tileGather")!).source).toMatch(/\/\/ \w+ = tile\.gather\b/);
  });
});

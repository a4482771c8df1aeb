// The v2 TMA + wgmma GEMM (src/codegen/cuda/tma_gemm.ts): which InCore functions it takes,
// the kernel and tensor-map table it generates, the native loader's checks of that table and
// the cuTensorMapEncodeTiled arguments it derives (native/src/cuda_host.h, through the addon's
// cudaHost export: host logic, no GPU). The nvcc / ptxas gates of the kernel are in
// static_gates.test.ts. Numerics need a GPU (the GPU pack's v2 checks).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RunConfig, pl, zeros } from "tspto";
import { generateCuda } from "../../../src/codegen/cuda/index.js";
import { matchTmaGemm } from "../../../src/codegen/cuda/tma_gemm.js";
import { loadNative } from "../../../src/targets/native.js";
import { GMM, V2_MATMUL_CHECKS, gpuMatmul } from "../../../bench/gpu_kernels.js";
import { findNvcc } from "../../../src/targets/cuda/index.js";
import { compileSource, gateFailures, ptxEntry } from "./gates.js";
import type { Program } from "../../../src/ir/index.js";

const V2 = { kernels: "v2", wgmma: true } as const;
const cfg = new RunConfig({ platform: "cuda" });

/** 128-row tiles, 64 x 128 B tiles, f16 in, fp32 out (TM = 128: two m64 rows per consumer). */
const mm128 = pl.jit(function mm128(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 512, 128)) {
      for (const j of pl.range(0, 256, 128)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [128, 64]), pl.load(b, [0, j], [64, 128]));
        for (const k of pl.range(64, 384, 64)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [128, 64]), pl.load(b, [k, j], [64, 128]));
        pl.store(acc, [i, j], c);
      }
    }
  });
  return c;
});

/** A narrowing cast before the store (cast's rounding modes are the tile lowering's). */
const mmCast = pl.jit(function mmCast(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 512, 128)) {
      for (const j of pl.range(0, 256, 128)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [128, 64]), pl.load(b, [0, j], [64, 128]));
        for (const k of pl.range(64, 384, 64)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [128, 64]), pl.load(b, [k, j], [64, 128]));
        pl.store(pl.cast(acc, pl.FP16), [i, j], c);
      }
    }
  });
  return c;
});

/** The same contraction with an epilogue (relu) between the accumulator and the store: not the template's. */
const mmRelu = pl.jit(function mmRelu(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 256, 64)) {
      for (const j of pl.range(0, 256, 64)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [64, 64]), pl.load(b, [0, j], [64, 64]));
        for (const k of pl.range(64, 256, 64)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [64, 64]), pl.load(b, [k, j], [64, 64]));
        pl.store(pl.relu(acc), [i, j], c);
      }
    }
  });
  return c;
});

const incore = (p: Program) => p.functions.find((f) => f.fnKind === "incore")!;
const mmProgram = () => gpuMatmul.lower(zeros([GMM, GMM], "bfloat16"), zeros([GMM, GMM], "bfloat16"), zeros([GMM, GMM]), cfg);

describe("cuda v2: the TMA GEMM's match", () => {
  it("takes the GPU benchmark's bf16 matmul: 64-row band tiles, 256-wide consumer tiles, a 5-stage ring, both tensor maps", () => {
    const p = mmProgram();
    const plan = matchTmaGemm(p, incore(p))!;
    expect(plan).not.toBeNull();
    expect({ ty: plan.ty, tm: plan.tm, bn: plan.bn, j: [plan.j0, plan.j1], k: [plan.k0, plan.k1], stages: plan.stages, cType: plan.cType }).toEqual({
      ty: "bf16", tm: 64, bn: 256, j: [0, GMM], k: [0, GMM], stages: 5, cType: "float",
    });
    expect(plan.lo).toEqual({ slot: 3 });
    expect(plan.hi).toEqual({ slot: 4 });
    expect(plan.slots).toEqual({ a: 0, b: 1, c: 2 });
    // A: boxes of 64 k-columns x 64 rows; B: 64 n-columns x 64 k-rows; both 128-byte inner boxes (the 128B swizzle)
    expect(plan.maps).toEqual([
      { slot: 0, dtype: 9, dims: [GMM, GMM], rowBytes: GMM * 2, box: [64, 64] },
      { slot: 1, dtype: 9, dims: [GMM, GMM], rowBytes: GMM * 2, box: [64, 64] },
    ]);
    expect(plan.sharedBytes).toBe(5 * (64 * 128 + 256 * 128) + 1024);
    expect(plan.sharedBytes).toBeLessThanOrEqual(227 * 1024);
  });

  it("takes 128-row tiles (two wgmma rows per consumer, 128-wide); leaves an epilogue it does not fuse to the tile lowering", () => {
    const p = mm128.lower(zeros([512, 384], "float16"), zeros([384, 256], "float16"), zeros([512, 256]), cfg);
    const plan = matchTmaGemm(p, incore(p))!;
    expect(plan).not.toBeNull();
    expect({ ty: plan.ty, tm: plan.tm, bn: plan.bn, k: [plan.k0, plan.k1], cType: plan.cType, lo: plan.lo, hi: plan.hi }).toEqual({
      ty: "f16", tm: 128, bn: 128, k: [0, 384], cType: "float", lo: { slot: 3 }, hi: { slot: 4 },
    });
    expect(plan.maps[0]).toEqual({ slot: 0, dtype: 6, dims: [384, 512], rowBytes: 768, box: [64, 128] });
    expect(plan.maps[1]).toEqual({ slot: 1, dtype: 6, dims: [256, 384], rowBytes: 512, box: [64, 64] });
    const src = generateCuda(p, V2).source;
    expect(src).toContain("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16");
    expect(src).toContain("make_float2(d1[r], d1[r + 1])");
    expect(src).toContain("const int64_t lo = tspto_slot(a, 3), hi = tspto_slot(a, 4);");

    const r = mmRelu.lower(zeros([256, 256], "bfloat16"), zeros([256, 256], "bfloat16"), zeros([256, 256]), cfg);
    expect(matchTmaGemm(r, incore(r))).toBeNull();
    const g = generateCuda(r, V2);
    expect(g.kernels[0].tmaGemm).toBeUndefined();
    expect(g.entry).toContain("tspto_cuda_tmap_count = 0;");
  });

  it("fp32 operands, a narrowing store and shapes the boxes cannot tile stay on the tile lowering", () => {
    const cast = mmCast.lower(zeros([512, 384], "float16"), zeros([384, 256], "float16"), zeros([512, 256], "float16"), cfg);
    expect(matchTmaGemm(cast, incore(cast))).toBeNull();
    const f32 = mmRelu.lower(zeros([256, 256]), zeros([256, 256]), zeros([256, 256]), cfg);
    expect(matchTmaGemm(f32, incore(f32))).toBeNull();
    // 32-column tiles of B: the j range (96 columns) is no multiple of a 64-column box
    const narrow = pl.jit(function narrow(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        for (const i of pl.range(0, 128, 64)) {
          for (const j of pl.range(0, 96, 32)) pl.store(pl.matmul(pl.load(a, [i, 0], [64, 64]), pl.load(b, [0, j], [64, 32])), [i, j], c);
        }
      });
      return c;
    });
    const n = narrow.lower(zeros([128, 64], "bfloat16"), zeros([64, 96], "bfloat16"), zeros([128, 96]), cfg);
    expect(matchTmaGemm(n, incore(n))).toBeNull();
  });

  it("generates the warp-specialized kernel, the tensor-map table and the opt-outs", () => {
    const p = mmProgram();
    const g = generateCuda(p, V2);
    expect(g.kernels[0].tmaGemm).toBeDefined();
    expect(g.kernels[0].sharedBytes).toBe(g.kernels[0].tmaGemm!.sharedBytes);
    expect(g.source).toContain("const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB");
    expect(g.source).toContain("tspto_mbar_wait(&empty[s], ph ^ 1u);");
    expect(g.source).toContain("tspto_tma_load_2d(st, &tmA, kc, (int32_t)i, &full[s]);");
    expect(g.source).toContain("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16");
    expect(g.entry).toContain("tspto_cuda_tmap_count = 2;");
    expect(g.entry).toContain(`tspto_cuda_tmaps[18] = { 0, 0, 9, ${GMM}, ${GMM}, ${GMM * 2}, 64, 64, 3, 0, 1, 9, ${GMM}, ${GMM}, ${GMM * 2}, 64, 64, 3 };`);
    // v1, v2 without wgmma (other architectures) and tma: false keep the tile lowering
    for (const opts of [{}, { kernels: "v2" } as const, { ...V2, tma: false }]) {
      const o = generateCuda(p, opts);
      expect(o.kernels[0].tmaGemm).toBeUndefined();
      expect(o.source).not.toContain("__grid_constant__");
    }
  });
});

describe("cuda device host logic: tensor-map rows -> cuTensorMapEncodeTiled arguments (no GPU)", () => {
  const host = (loadNative() as unknown as { cudaHost: { tensorMapArgs(row: number[], kernels: number, maxSlots: number): Record<string, unknown> } }).cudaHost;

  it("the rows the code generator writes encode as 2D bf16 maps with the 128B swizzle and L2 promotion", () => {
    const p = mmProgram();
    const rows = generateCuda(p, V2).entry.match(/tspto_cuda_tmaps\[18\] = \{ ([^}]*) \}/)![1].split(", ").map(Number);
    const a = host.tensorMapArgs(rows.slice(0, 9), 1, 48), b = host.tensorMapArgs(rows.slice(9), 1, 48);
    expect(a).toEqual({
      kernel: 0, slot: 0, dtype: 9, rank: 2, dims: [GMM, GMM], strides: [GMM * 2], box: [64, 64], elementStrides: [1, 1],
      interleave: 0, swizzle: 3, l2Promotion: 2, oobFill: 0,
    });
    expect(b.slot).toBe(1);
  });

  it("refuses rows the driver would reject, with the reason", () => {
    const ok = [0, 0, 9, 8192, 8192, 16384, 64, 64, 3];
    const bad = (i: number, v: number) => { const r = [...ok]; r[i] = v; return r; };
    expect(() => host.tensorMapArgs(bad(0, 1), 1, 48)).toThrow("kernel index 1 out of range");
    expect(() => host.tensorMapArgs(bad(1, 48), 1, 48)).toThrow("slot 48 out of range");
    expect(() => host.tensorMapArgs(bad(2, 42), 1, 48)).toThrow("unsupported data type 42");
    expect(() => host.tensorMapArgs(bad(5, 16390), 1, 48)).toThrow("row bytes 16390 must cover a row and be a multiple of 16");
    expect(() => host.tensorMapArgs(bad(6, 128), 1, 48)).toThrow("the inner box (256 bytes) exceeds the swizzle span of 128");
    expect(() => host.tensorMapArgs(bad(6, 4), 1, 48)).toThrow("the inner box must be a multiple of 16 bytes");
    expect(() => host.tensorMapArgs(bad(7, 300), 1, 48)).toThrow("box out of range");
    expect(() => host.tensorMapArgs(bad(8, 7), 1, 48)).toThrow("unsupported swizzle 7");
  });
});

describe.runIf(findNvcc())("cuda v2: the TMA GEMMs of the GPU checks under the static gates (nvcc + ptxas, sm_90a)", () => {
  const root = mkdtempSync(join(tmpdir(), "tspto-cuda-tma-"));
  afterAll(() => { rmSync(root, { recursive: true, force: true }); });
  it("64-row (n256) and 128-row (two m64 rows, n128) tiles: 0 spills, ≤ 168 registers, no C7510, the shared ring within 227 KiB", async () => {
    for (const [i, k] of V2_MATMUL_CHECKS.slice(0, 2).entries()) {
      const p = k.fn.lower(zeros([...k.a], k.dtype), zeros([...k.b], k.dtype), zeros([...k.c]), cfg);
      const g = generateCuda(p, V2);
      const kern = g.kernels[0];
      expect(kern.tmaGemm, k.name).toBeDefined();
      const out = await compileSource(findNvcc()!.path, root, `chk${i}.cu`, g.source, "sm_90a");
      expect(out.status, out.ptxas).toBe(0);
      expect(gateFailures(out.ptxas, new Map([[kern.symbol, { registers: 168, smem: 227 * 1024 }]]), new Map([[kern.symbol, kern.sharedBytes]])), k.name).toEqual([]);
      const ptx = ptxEntry(out.ptx, kern.symbol);
      const ty = k.dtype === "float16" ? "f16" : "bf16";
      expect(ptx).toContain(`wgmma.mma_async.sync.aligned.m64n${kern.tmaGemm!.bn}k16.f32.${ty}.${ty}`);
      expect(ptx).toContain("cp.async.bulk.tensor.2d");
    }
  }, 300_000);
});

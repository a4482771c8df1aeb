// Static gates of the v2 CUDA kernels (TSPTO_CUDA_KERNELS=v2), checked with nvcc + ptxas only
// (no GPU): the hot kernels of the GPU benchmark (add 2^28, softmax [16384, 4096], bf16 matmul
// 8192^3) and a bf16 elementwise kernel, built with -gencode=arch=compute_90a,code=sm_90a,
// have 0 spills and registers / shared memory within their budgets; the elementwise PTX moves
// 16-byte words (.v4); the bf16 matmul's PTX holds wgmma.mma_async (and, where cuobjdump is
// installed, its SASS holds HGMMA); ptxas's C7510 (wgmma serialized) fails; every corpus
// program compiles as v2 for sm_90a. Numerics of v2 need a GPU (the GPU pack's v2 checks).
// Needs nvcc; skipped without it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig, pl, zeros } from "tspto";
import { generateCuda, type GeneratedCuda } from "../../../src/codegen/cuda/index.js";
import { buildCuda, cudaBuildPlan, cudaKernels, findNvcc } from "../../../src/targets/cuda/index.js";
import { whichSync } from "../../../src/targets/which.js";
import { TsptoCompileError } from "../../../src/ir/index.js";
import { PACKAGE_VERSION } from "../../../src/version.js";
import { ADD_COLS, ADD_ROWS, GMM, SMX_COLS, SMX_ROWS, gpuAdd, gpuMatmul, gpuSoftmax } from "../../../bench/gpu_kernels.js";
import { compileSource, gateFailures, parsePtxasInfo, ptxEntry, type Budget, type Compiled } from "./gates.js";
import { corpusPrograms } from "./corpus.js";

const nvcc = findNvcc();
const root = mkdtempSync(join(tmpdir(), "tspto-cuda-gates-"));
afterAll(() => { if (process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(root, { recursive: true, force: true }); });
const V2 = { kernels: "v2", wgmma: true } as const;
const KIB = 1024;

/** A 2-byte elementwise kernel (int16 here: bf16 tiles are fp32 in scratch, so their loads and stores mix sizes and stay scalar in v2). */
const bf16Add = pl.jit(function bf16Add(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

describe("cuda v2 kernels: the opt-in", () => {
  it("v1 is the default; TSPTO_CUDA_KERNELS / cudaKernels pick v2; anything else is E_OPTION with a hint", () => {
    const saved = process.env.TSPTO_CUDA_KERNELS;
    try {
      delete process.env.TSPTO_CUDA_KERNELS;
      expect(cudaKernels()).toBe("v1");
      process.env.TSPTO_CUDA_KERNELS = "v2";
      expect(cudaKernels()).toBe("v2");
      expect(cudaKernels("v1")).toBe("v1"); // the option wins
      process.env.TSPTO_CUDA_KERNELS = "fast";
      let err: unknown;
      try { cudaKernels(); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoCompileError);
      expect((err as TsptoCompileError).code).toBe("E_OPTION");
      expect((err as Error).message).toContain('cuda kernels must be "v1" or "v2", got "fast"');
      expect((err as Error).message).toContain("hint: set TSPTO_CUDA_KERNELS");
    } finally {
      if (saved === undefined) delete process.env.TSPTO_CUDA_KERNELS; else process.env.TSPTO_CUDA_KERNELS = saved;
    }
  });

  it("v2 on sm_90 builds sm_90a with wgmma; on other architectures v2 keeps WMMA", () => {
    expect(cudaBuildPlan("sm_90", "v2")).toEqual({ arch: "sm_90a", gen: { kernels: "v2", wgmma: true } });
    expect(cudaBuildPlan("sm_80", "v2")).toEqual({ arch: "sm_80", gen: { kernels: "v2" } });
    expect(cudaBuildPlan("sm_90", "v1")).toEqual({ arch: "sm_90", gen: { kernels: "v1" } });
    const cfg = new RunConfig({ platform: "cuda" });
    const mm = gpuMatmul.lower(zeros([GMM, GMM], "bfloat16"), zeros([GMM, GMM], "bfloat16"), zeros([GMM, GMM]), cfg);
    const v1 = generateCuda(mm), v2 = generateCuda(mm, { ...V2, tma: false }), v2wmma = generateCuda(mm, { kernels: "v2" });
    expect(v1.source).toContain("nvcuda::wmma::mma_sync");
    expect(v1.source).not.toContain("wgmma");
    expect(v1.entry).toContain("tspto_cuda_kernels_version = 1;");
    expect(v1.entry).toContain("tspto_cuda_tmap_count = 0;");
    // (tma: false: the tile lowering's wgmma; the default v2 build takes the TMA GEMM, test/targets/cuda/tma_gemm.test.ts)
    expect(v2.source).toContain("wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16");
    expect(v2.source).not.toContain("nvcuda::wmma::mma_sync");
    expect(v2.source).not.toContain("tspto_tma_load_2d(st");
    expect(v2.entry).toContain("tspto_cuda_kernels_version = 2;");
    expect(v2wmma.source).toContain("nvcuda::wmma::mma_sync");
    expect(v2wmma.source).not.toContain("wgmma.mma_async");
  });
});

describe.runIf(nvcc)("cuda v2 kernels: static gates (nvcc + ptxas, sm_90a)", () => {
  const hot = new Map<string, { gen: GeneratedCuda; out: Compiled }>();
  const sharedOf = (g: GeneratedCuda) => new Map(g.kernels.map((k) => [k.symbol, k.sharedBytes]));
  beforeAll(async () => {
    const cfg = new RunConfig({ platform: "cuda" });
    const f32 = (s: number[]) => zeros(s), bf = (s: number[]) => zeros(s, "bfloat16");
    const progs = {
      add: gpuAdd.lower(f32([ADD_ROWS, ADD_COLS]), f32([ADD_ROWS, ADD_COLS]), f32([ADD_ROWS, ADD_COLS]), cfg),
      softmax: gpuSoftmax.lower(f32([SMX_ROWS, SMX_COLS]), f32([SMX_ROWS, SMX_COLS]), cfg),
      matmul: gpuMatmul.lower(bf([GMM, GMM]), bf([GMM, GMM]), f32([GMM, GMM]), cfg),
      matmulTile: gpuMatmul.lower(bf([GMM, GMM]), bf([GMM, GMM]), f32([GMM, GMM]), cfg),
      bf16add: bf16Add.lower(zeros([1024, 4100], "int16"), zeros([1024, 4100], "int16"), zeros([1024, 4100], "int16"), cfg),
    };
    await Promise.all(Object.entries(progs).map(async ([name, p]) => {
      // matmulTile: the tile lowering's wgmma (the TMA GEMM off); matmul: the TMA GEMM
      const gen = generateCuda(p, name === "matmulTile" ? { ...V2, tma: false } : V2);
      hot.set(name, { gen, out: await compileSource(nvcc!.path, root, `${name}.cu`, gen.source, "sm_90a") });
    }));
  }, 600_000);

  const budgets: Record<string, Budget> = {
    add: { registers: 64, smem: 48 * KIB },
    bf16add: { registers: 64, smem: 48 * KIB },
    softmax: { registers: 64, smem: 64 * KIB },
    // cuBLAS's Hopper GEMMs use 168 registers per thread
    matmul: { registers: 168, smem: 227 * KIB },
    matmulTile: { registers: 168, smem: 227 * KIB },
  };

  it("each hot kernel: 0 spills, registers and shared memory within budget, no C7510", () => {
    for (const [name, { gen, out }] of hot) {
      expect(out.status, `${name}:\n${out.ptxas}`).toBe(0);
      const ks = gen.kernels.map((k) => k.symbol);
      const fails = gateFailures(out.ptxas, new Map(ks.map((k) => [k, budgets[name]])), sharedOf(gen));
      expect(fails, name).toEqual([]);
      const use = parsePtxasInfo(out.ptxas);
      for (const k of ks) expect(use.get(k)?.registers, `${name}/${k}`).toBeGreaterThan(0);
    }
  });

  it("elementwise PTX moves 16-byte words: float4 for fp32, packed 16-bit elements (int16) in uint4", () => {
    const add = hot.get("add")!, k = ptxEntry(add.out.ptx, add.gen.kernels[0].symbol);
    expect(k).toMatch(/ld\.global\.nc\.v4\.f32/);
    expect(k).toMatch(/st\.global(\.wb)?\.v4\.f32/);
    const b = hot.get("bf16add")!, kb = ptxEntry(b.out.ptx, b.gen.kernels[0].symbol);
    expect(kb).toMatch(/ld\.global\.nc\.v4\.(u32|b32)/);
    expect(kb).toMatch(/st\.global(\.wb)?\.v4\.(u32|b32)/);
  });

  it("the bf16 matmul of the tile lowering holds wgmma: fence, mma_async, commit, wait in its PTX", () => {
    const mm = hot.get("matmulTile")!, k = ptxEntry(mm.out.ptx, mm.gen.kernels[0].symbol);
    expect(k).toContain("wgmma.fence.sync.aligned");
    expect(k).toMatch(/wgmma\.mma_async\.sync\.aligned\.m64n32k16\.f32\.bf16\.bf16/);
    expect(k).toContain("wgmma.commit_group.sync.aligned");
    expect(k).toContain("wgmma.wait_group.sync.aligned");
    expect(k).toContain("fence.proxy.async.shared::cta");
  });

  const cuobjdump = whichSync("cuobjdump") ?? (nvcc ? [join(nvcc.path, "..", "cuobjdump")].find((p) => spawnSync(p, ["--version"]).status === 0) : undefined);
  it.skipIf(!cuobjdump)("the bf16 matmul's sm_90a cubin holds HGMMA in its SASS (needs cuobjdump, not part of every toolkit install)", () => {
    const mm = hot.get("matmul")!;
    const r = spawnSync(cuobjdump!, ["-sass", mm.out.cubin], { encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/HGMMA/);
    // the TMA GEMM's loads are tensor-memory-access instructions
    expect(r.stdout).toMatch(/UTMALDG/);
  });

  it("the TMA GEMM's PTX: 2D bulk tensor loads on mbarriers, parity waits, wgmma m64n256k16 with B transposed, one group in flight", () => {
    const mm = hot.get("matmul")!, k = ptxEntry(mm.out.ptx, mm.gen.kernels[0].symbol);
    expect(mm.gen.kernels[0].tmaGemm).toBeDefined();
    expect(k).toMatch(/cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes/);
    expect(k).toContain("mbarrier.try_wait.parity.shared::cta.b64");
    expect(k).toContain("mbarrier.arrive.expect_tx.shared::cta.b64");
    expect(k).toContain("fence.mbarrier_init.release.cluster");
    expect(k).toMatch(/wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16[^;]*, 1, 1, 0, 1;/);
    expect(k).toContain("wgmma.wait_group.sync.aligned 1");
    // the tensor maps are kernel parameters (param space), not loads from global memory
    expect(k).toMatch(/\.param \.align (64|128) \.b8 k_gpuMatmul_incore_0_param_1\[128\]/);
  });

  it("the gates fail: C7510 when wgmma crosses a function call, spills and budgets from the ptxas report", async () => {
    // a wgmma site in a __noinline__ function: ptxas serializes the pipeline (C7510)
    const src = readFileSync(join(root, "matmulTile.cu"), "utf8")
      .replace(/extern "C" __global__ void __launch_bounds__\(256\) (k_\w+)\(const TsptoCudaArgs a\) \{/, '__device__ __noinline__ void $1_body(const TsptoCudaArgs& a) {')
      + '\nextern "C" __global__ void __launch_bounds__(256) k_serialized(const TsptoCudaArgs a) { k_gpuMatmul_incore_0_body(a); }\n';
    const out = await compileSource(nvcc!.path, root, "serialized.cu", src, "sm_90a");
    expect(out.status, out.ptxas).toBe(0);
    const fails = gateFailures(out.ptxas, new Map());
    expect(fails.length).toBeGreaterThan(0);
    expect(fails[0]).toMatch(/^C7510 \(wgmma serialized\)/);
    const report = [
      "ptxas info    : Function properties for k_x",
      "    8 bytes stack frame, 24 bytes spill stores, 16 bytes spill loads",
      "ptxas info    : Used 200 registers, used 1 barriers, 8 bytes cumulative stack size, 1024 bytes smem",
    ].join("\n");
    expect(gateFailures(report, new Map([["k_x", { registers: 168, smem: 2048 }]]), new Map([["k_x", 4096]]))).toEqual([
      "k_x: 24 bytes spill stores, 16 bytes spill loads",
      "k_x: 200 registers, budget 168",
      "k_x: 5120 bytes of shared memory (static 1024 + dynamic), budget 2048",
    ]);
  }, 120_000);

  it("every corpus program compiles as v2 for sm_90a (one translation unit), with 0 spills", async () => {
    const programs = await corpusPrograms();
    const marker = "extern __shared__ __align__(16) unsigned char tspto_smem[];";
    let all = "";
    [...programs.values()].forEach((p, i) => {
      const src = generateCuda(p, V2).source;
      const at = src.indexOf(marker);
      if (!all) all = `${src.slice(0, at + marker.length)}\n`;
      all += src.slice(at + marker.length).replace(/\b(k_\w+)\(const TsptoCudaArgs a\)/g, `$1__p${i}(const TsptoCudaArgs a)`);
    });
    const out = await compileSource(nvcc!.path, root, "corpus_v2.cu", all, "sm_90a");
    expect(out.ptxas).not.toMatch(/error/);
    expect(out.status).toBe(0);
    const spilled = [...parsePtxasInfo(out.ptxas).values()].filter((u) => u.spillStores || u.spillLoads).map((u) => `${u.name}: ${u.spillStores}/${u.spillLoads}`);
    expect(spilled).toEqual([]);
    expect(out.ptxas).not.toMatch(/C7510/);
  }, 600_000);

  it("a v2 build: fatbin for sm_90a from compute_90a (no compute_90 image), kernels version in the stamp", () => {
    const cfg = new RunConfig({ platform: "cuda" });
    const p = bf16Add.lower(zeros([64, 64], "bfloat16"), zeros([64, 64], "bfloat16"), zeros([64, 64], "bfloat16"), cfg);
    const r = buildCuda(p, { packageVersion: PACKAGE_VERSION, outputDir: join(root, "v2build"), options: { cudaKernels: "v2" } });
    const stamp = JSON.parse(readFileSync(join(r.outputDir, "build", "stamp.json"), "utf8"));
    expect(stamp.arch).toBe("sm_90a");
    expect(stamp.kernelFormulas).toBe("v2");
    const flags = stamp.nvccFlags.join(" ");
    expect(flags).toContain("-gencode=arch=compute_90a,code=sm_90a");
    expect(flags).toContain("-gencode=arch=compute_90a,code=compute_90a");
    expect(flags).not.toMatch(/compute_90(?!a)/);
  }, 300_000);
});

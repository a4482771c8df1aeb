// cuda target without a GPU: every example program and the seed program compile to a fatbin
// (nvcc + ptxas, SASS for sm_90 + PTX) and a host orchestration library; the generated CUDA
// has the promised structure. Needs nvcc (CI: /usr/local/cuda/bin); skipped without it.
import { existsSync, readFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Program } from "../../../src/ir/index.js";
import { buildCudaAsync, findNvcc } from "../../../src/targets/cuda/index.js";
import { generateCuda } from "../../../src/codegen/cuda/index.js";
import { PACKAGE_VERSION } from "../../../src/version.js";
import { corpusPrograms } from "./corpus.js";

const nvcc = findNvcc();
const root = mkdtempSync(join(tmpdir(), "tspto-cuda-compile-"));
afterAll(() => { if (process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(root, { recursive: true, force: true }); });

describe.runIf(nvcc)("cuda: the corpus compiles for sm_90", () => {
  let programs: Map<string, Program>;
  const built = new Map<string, { outputDir: string; error?: unknown }>();
  let wallMs = 0;
  beforeAll(async () => {
    programs = await corpusPrograms();
    // every build runs nvcc and the host compiler at once; a few builds at a time
    const queue = [...programs.entries()];
    const t0 = performance.now();
    const worker = async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        const [name, p] = e;
        try {
          const r = await buildCudaAsync(p, { packageVersion: PACKAGE_VERSION, outputDir: join(root, name), options: { cudaArch: "sm_90" } });
          built.set(name, { outputDir: r.outputDir });
        } catch (err) {
          built.set(name, { outputDir: "", error: err });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(2, Math.min(4, cpus().length)) }, worker));
    wallMs = performance.now() - t0;
    if (process.env.TSPTO_LOG_CUDA_TIME) console.log(`cuda corpus: ${programs.size} programs built in ${(wallMs / 1000).toFixed(1)} s`);
  }, 600_000);

  it("holds the seed program and a program of every example", () => {
    expect(programs.size).toBeGreaterThan(30);
    expect([...programs.keys()]).toContain("seed_addKernel");
    for (const k of ["tileSoftmax", "matmulHalf", "layerNorm", "ffnSwiglu", "dynValidShape", "tileConcat32x32"]) {
      expect([...programs.keys()].some((n) => n.startsWith(`${k}-`))).toBe(true);
    }
  });

  it("every program builds: fatbin with sm_90 SASS, host library, metadata", () => {
    const failed = [...built.entries()].filter(([, b]) => b.error).map(([n, b]) => `${n}: ${(b.error as Error).message.slice(0, 400)}`);
    expect(failed).toEqual([]);
    for (const [, b] of built) {
      const fatbin = readFileSync(join(b.outputDir, "build", "program.fatbin"));
      expect(fatbin.length).toBeGreaterThan(100);
      expect(fatbin.readUInt32LE(0)).toBe(0xba55ed50); // fatbin magic
      expect(existsSync(join(b.outputDir, "build", "libentry.so"))).toBe(true);
      const meta = JSON.parse(readFileSync(join(b.outputDir, "compiled_meta.json"), "utf8"));
      expect(meta.platform).toBe("cuda");
      expect(meta.library).toBe("build/libentry.so");
      const stamp = JSON.parse(readFileSync(join(b.outputDir, "build", "stamp.json"), "utf8"));
      expect(stamp.arch).toBe("sm_90");
      expect(stamp.nvccVersion).toMatch(/release \d+\.\d+/);
      expect(stamp.nvccFlags.join(" ")).toContain("code=sm_90");
      expect(stamp.nvccFlags.join(" ")).toContain("code=compute_90");
    }
  });

  it("one __global__ kernel per InCore function; reductions shuffle; fp16 matmul on tensor cores", () => {
    for (const [name, p] of programs) {
      const g = generateCuda(p);
      const incore = p.functions.filter((f) => f.fnKind === "incore").length;
      expect((g.source.match(/__global__ void/g) ?? []).length, name).toBe(incore);
      expect(g.kernels.length).toBe(incore);
      expect(g.entry).toContain("extern \"C\" int tspto_entry(");
      if (/tile\.row(Sum|Max|Min)/.test(JSON.stringify(p.toJSON()))) expect(g.source, name).toContain("__shfl_xor_sync");
    }
    const half = [...programs.entries()].find(([n]) => n.startsWith("matmulHalf-"))![1];
    const src = generateCuda(half).source;
    expect(src).toContain("nvcuda::wmma::mma_sync");
    expect(src).toContain("__half");
    const add = generateCuda(programs.get("seed_addKernel")!).source;
    expect(add).toContain("float4"); // 128-bit loads where aligned
  });
});

// cuda target without a GPU: every example program and the seed program compile for sm_90
// (nvcc + ptxas, SASS + PTX; the corpus as one translation unit, a few programs through the
// whole artifact build), the orchestrations compile with the host compiler, and the generated
// CUDA has the promised structure. Needs nvcc (CI: /usr/local/cuda/bin); skipped without it.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Program } from "../../../src/ir/index.js";
import { buildCuda, buildCudaAsync, findNvcc, prebuiltName } from "../../../src/targets/cuda/index.js";
import { abiInclude, hostCxx, nvccArgs } from "../../../src/targets/cuda/toolchain.js";
import { TsptoCompileError } from "../../../src/ir/index.js";
import { generateCuda } from "../../../src/codegen/cuda/index.js";
import { PACKAGE_VERSION } from "../../../src/version.js";
import { corpusPrograms, seedProgram } from "./corpus.js";

const nvcc = findNvcc();
const root = mkdtempSync(join(tmpdir(), "tspto-cuda-compile-"));
afterAll(() => { if (process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(root, { recursive: true, force: true }); });

/**
 * Every program's kernels in one translation unit (one prelude; kernel symbols suffixed per
 * program), so that one nvcc process compiles the whole corpus: process start-up and the CUDA
 * headers are most of a small program's nvcc time.
 */
function combinedKernels(sources: readonly string[]): string {
  const marker = "extern __shared__ __align__(16) unsigned char tspto_smem[];";
  let out = "";
  sources.forEach((src, i) => {
    const at = src.indexOf(marker);
    if (at < 0) throw new Error("generated CUDA without the shared-memory declaration");
    if (!out) out = `${src.slice(0, at + marker.length)}\n`;
    out += src.slice(at + marker.length).replace(/\b(k_\w+)\(const TsptoCudaArgs a\)/g, `$1__p${i}(const TsptoCudaArgs a)`);
  });
  return out;
}

const run = (cmd: string, args: string[], cwd: string) => new Promise<{ status: number | null; output: string }>((res) => {
  const p = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  p.stdout.on("data", (d: Buffer) => { output += d.toString(); });
  p.stderr.on("data", (d: Buffer) => { output += d.toString(); });
  p.on("error", (e) => res({ status: null, output: e.message }));
  p.on("close", (status) => res({ status, output }));
});

/** Programs that also get the full artifact build (nvcc + host library + metadata). */
const FULL = ["seed_addKernel", "matmulHalf-", "tileSoftmax-", "dynValidShape-", "ffnSwiglu-", "tileAssembleDoubleLoop-"];

describe.runIf(nvcc)("cuda: the corpus compiles for sm_90", () => {
  let programs: Map<string, Program>;
  const built = new Map<string, { outputDir: string; error?: unknown }>();
  let kernelsBuild: { status: number | null; output: string };
  let entriesBuild: { status: number | null; output: string };
  beforeAll(async () => {
    programs = await corpusPrograms();
    const t0 = performance.now();
    const dir = join(root, "corpus");
    mkdirSync(dir, { recursive: true });
    const gens = [...programs.values()].map((p) => generateCuda(p));
    writeFileSync(join(dir, "all.cu"), combinedKernels(gens.map((g) => g.source)));
    const entries = gens.map((g, i) => { const f = join(dir, `entry${i}.cpp`); writeFileSync(f, g.entry); return f; });
    const full = [...programs.entries()].filter(([n]) => FULL.some((f) => n === f || n.startsWith(f)));
    [kernelsBuild, entriesBuild] = await Promise.all([
      run(nvcc!.path, [...nvccArgs("sm_90").slice(0, -3), "-o", "all.fatbin", "all.cu"], dir),
      run(hostCxx()[0], [...hostCxx().slice(1), "-std=c++17", "-Wno-psabi", "-fsyntax-only", "-I", abiInclude(), ...entries], dir),
      ...full.map(async ([name, p]) => {
        try {
          const r = await buildCudaAsync(p, { packageVersion: PACKAGE_VERSION, outputDir: join(root, name), options: { cudaArch: "sm_90" } });
          built.set(name, { outputDir: r.outputDir });
        } catch (err) {
          built.set(name, { outputDir: "", error: err });
        }
        return { status: 0, output: "" };
      }),
    ]);
    if (process.env.TSPTO_LOG_CUDA_TIME) console.log(`cuda corpus: ${programs.size} programs (${full.length} full artifact builds) compiled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }, 600_000);

  it("holds the seed program and a program of every example", () => {
    expect(programs.size).toBeGreaterThan(30);
    expect([...programs.keys()]).toContain("seed_addKernel");
    for (const k of ["tileSoftmax", "matmulHalf", "layerNorm", "ffnSwiglu", "dynValidShape", "tileConcat32x32"]) {
      expect([...programs.keys()].some((n) => n.startsWith(`${k}-`))).toBe(true);
    }
  });

  it("every program's kernels compile with nvcc + ptxas to sm_90 SASS + PTX, and every orchestration with the host compiler", () => {
    expect(kernelsBuild.output).not.toMatch(/error/);
    expect(kernelsBuild.status).toBe(0);
    const fatbin = readFileSync(join(root, "corpus", "all.fatbin"));
    expect(fatbin.readUInt32LE(0)).toBe(0xba55ed50); // fatbin magic
    expect(entriesBuild.output).toBe("");
    expect(entriesBuild.status).toBe(0);
  });

  it("full builds: fatbin with sm_90 SASS, host library, metadata, stamp with the nvcc version", () => {
    const failed = [...built.entries()].filter(([, b]) => b.error).map(([n, b]) => `${n}: ${(b.error as Error).message.slice(0, 400)}`);
    expect(failed).toEqual([]);
    expect(built.size).toBeGreaterThanOrEqual(FULL.length);
    for (const [, b] of built) {
      const fatbin = readFileSync(join(b.outputDir, "build", "program.fatbin"));
      expect(fatbin.readUInt32LE(0)).toBe(0xba55ed50);
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

describe("cuda build without nvcc", () => {
  const withEnv = <T>(env: Record<string, string | undefined>, f: () => T): T => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(env)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
    try { return f(); } finally { for (const [k, v] of Object.entries(saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; } }
  };

  it("fails with E_NVCC and a hint when no nvcc is found", () => {
    let err: unknown;
    withEnv({ TSPTO_NVCC: "off", TSPTO_CUDA_PREBUILT: undefined }, () => {
      try { buildCuda(seedProgram(), { packageVersion: PACKAGE_VERSION, outputDir: join(root, "no-nvcc") }); } catch (e) { err = e; }
    });
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_NVCC");
    expect((err as Error).message).toContain("no CUDA compiler: TSPTO_NVCC=off");
    expect((err as Error).message).toContain("hint: install the CUDA toolkit (nvcc)");
  });

  it.runIf(nvcc)("uses a prebuilt artifact ($TSPTO_CUDA_PREBUILT, found by its generated sources) without nvcc", () => {
    const pre = join(root, "prebuilt");
    const p = seedProgram();
    const opts = { packageVersion: PACKAGE_VERSION, options: { cudaArch: "sm_90" } };
    const made = buildCuda(p, { ...opts, outputDir: join(pre, prebuiltName(p, opts)) });
    const got = withEnv({ TSPTO_NVCC: "off", TSPTO_CUDA_PREBUILT: pre }, () => buildCuda(seedProgram(), opts));
    expect(got.outputDir).toBe(made.outputDir);
    expect(got.meta.platform).toBe("cuda");
  });

  it.runIf(nvcc)("a wrong architecture option is a clear error", () => {
    expect(() => buildCuda(seedProgram(), { packageVersion: PACKAGE_VERSION, options: { cudaArch: "volta" } })).toThrow(/cuda architecture must look like "sm_90", got "volta"/);
  });
});

// cuda target toolchain: nvcc (kernels -> fatbin with SASS for the GPU architecture + PTX) and
// the host C++ compiler (orchestration -> build/libentry.so). Nothing here needs a GPU.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { TsptoCompileError } from "../../ir/index.js";
import { commandWords, whichSync } from "../which.js";
import type { CudaGenOptions, CudaKernels } from "../../codegen/cuda/index.js";

export const CUDA_SOURCE_PATH = "kernels/program.cu";
export const ENTRY_SOURCE_PATH = "kernels/entry.cpp";
export const FATBIN_PATH = "build/program.fatbin";
export const ENTRY_LIBRARY_PATH = "build/libentry.so";
/** Default GPU architecture (H100 / H200). */
export const DEFAULT_CUDA_ARCH = "sm_90";

export const NVCC_FLAGS: readonly string[] = ["-std=c++17", "-O3", "--expt-relaxed-constexpr", "-diag-suppress", "177,550", "-fatbin"];
export const ENTRY_CXX_FLAGS: readonly string[] = ["-std=c++17", "-O2", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off", "-Wno-psabi"];

const NVCC_HINT = "install the CUDA toolkit (nvcc), or set $CUDA_HOME to its directory (nvcc is looked up in $TSPTO_NVCC, $CUDA_HOME/bin, /usr/local/cuda/bin, then $PATH)";


export interface Nvcc { path: string; version: string }
let nvccMemo: { env: string; nvcc: Nvcc | null } | undefined;

/**
 * nvcc from $TSPTO_NVCC (a path; "off": none), else $CUDA_HOME/bin, /usr/local/cuda/bin or
 * $PATH, with its release line; null when absent.
 */
export function findNvcc(): Nvcc | null {
  const env = `${process.env.TSPTO_NVCC ?? ""}\0${process.env.CUDA_HOME ?? ""}\0${process.env.PATH ?? ""}`;
  if (nvccMemo && nvccMemo.env === env) return nvccMemo.nvcc;
  const forced = process.env.TSPTO_NVCC;
  const cands = forced ? (forced === "off" ? [] : [forced])
    : [process.env.CUDA_HOME ? join(process.env.CUDA_HOME, "bin", "nvcc") : null, "/usr/local/cuda/bin/nvcc", whichSync("nvcc")];
  let nvcc: Nvcc | null = null;
  for (const c of cands) {
    if (!c || !existsSync(c)) continue;
    const r = spawnSync(c, ["--version"], { encoding: "utf8", timeout: 60_000 });
    if (r.error || r.status !== 0) continue;
    const line = (r.stdout ?? "").split(/\r?\n/).find((l) => /release/.test(l)) ?? (r.stdout ?? "").trim().split(/\r?\n/).pop() ?? "unknown";
    nvcc = { path: resolve(c), version: line.trim() };
    break;
  }
  nvccMemo = { env, nvcc };
  return nvcc;
}

export function requireNvcc(): Nvcc {
  const n = findNvcc();
  if (!n) {
    throw new TsptoCompileError("E_NVCC", process.env.TSPTO_NVCC === "off" ? "no CUDA compiler: TSPTO_NVCC=off" : `no CUDA compiler found (nvcc is not ${process.env.TSPTO_NVCC ? `at TSPTO_NVCC=${process.env.TSPTO_NVCC}` : "in $CUDA_HOME/bin, /usr/local/cuda/bin or on $PATH"})`,
      undefined, NVCC_HINT);
  }
  return n;
}

/** The GPU architecture to build for: `arch` (an option), else $TSPTO_CUDA_ARCH, else sm_90. */
export function cudaArch(arch?: unknown): string {
  const a = arch ?? process.env.TSPTO_CUDA_ARCH ?? DEFAULT_CUDA_ARCH;
  if (typeof a !== "string" || !/^sm_\d{2,3}[a-z]?$/.test(a)) {
    throw new TsptoCompileError("E_OPTION", `cuda architecture must look like "sm_90", got ${JSON.stringify(a)}`, undefined,
      "set TSPTO_CUDA_ARCH (or the cudaArch compile option) to the GPU's compute capability, e.g. sm_80 (A100) or sm_90 (H100/H200)");
  }
  return a;
}

/**
 * The kernel formulas: `kernels` (the cudaKernels option), else $TSPTO_CUDA_KERNELS, else v1.
 * v2 is the opt-in set of Hopper-class kernels (src/codegen/cuda/v2.ts), unverified on a GPU
 * until the GPU pack's v2 checks have run.
 */
export function cudaKernels(kernels?: unknown): CudaKernels {
  const k = kernels ?? (process.env.TSPTO_CUDA_KERNELS || "v1");
  if (k !== "v1" && k !== "v2") {
    throw new TsptoCompileError("E_OPTION", `cuda kernels must be "v1" or "v2", got ${JSON.stringify(k)}`, undefined,
      "set TSPTO_CUDA_KERNELS (or the cudaKernels compile option) to v2 for the opt-in Hopper-class kernels, or leave it unset (v1)");
  }
  return k;
}

/** What the cuda code generator is asked for and the architecture nvcc then builds: v2 on sm_90 builds sm_90a (wgmma). */
export function cudaBuildPlan(arch: string, kernels: CudaKernels): { arch: string; gen: CudaGenOptions } {
  if (kernels === "v2" && (arch === "sm_90" || arch === "sm_90a")) return { arch: "sm_90a", gen: { kernels, wgmma: true } };
  return { arch, gen: { kernels } };
}

/**
 * nvcc arguments for one program (run in the artifact directory): SASS for `arch` and PTX.
 * An architecture-specific target (sm_90a) gets its own virtual architecture (compute_90a):
 * plain -arch=sm_90a would also build a compute_90 PTX image, which cannot hold wgmma.
 */
export function nvccArgs(arch: string): string[] {
  const cc = arch.replace(/^sm_/, "");
  return [...NVCC_FLAGS, `-gencode=arch=compute_${cc},code=${arch}`, `-gencode=arch=compute_${cc},code=compute_${cc}`,
    "-o", FATBIN_PATH, CUDA_SOURCE_PATH];
}

/** The host C++ compiler for the orchestration library: $CXX (first word) else c++ / g++ / clang++. */
export function hostCxx(): string[] {
  const env = (process.env.CXX ?? "").trim();
  if (env) return commandWords(env);
  for (const c of ["c++", "g++", "clang++"]) if (whichSync(c)) return [c];
  throw new TsptoCompileError("E_CXX", "no C++ compiler found (tried c++, g++, clang++)", undefined,
    "set $CXX to a working C++17 compiler (g++ or clang++), or install one (e.g. `apt-get install g++`)");
}

/** native/include (tspto_abi.h), found above this file. */
export function abiInclude(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const cand = join(dir, "native", "include");
    if (existsSync(join(cand, "tspto_abi.h"))) return cand;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new TsptoCompileError("E_CXX", "cannot find native/include/tspto_abi.h", undefined, "the tspto package is incomplete: native/include must ship with it");
}

export function entryCxxArgs(): string[] {
  return [...ENTRY_CXX_FLAGS, "-I", abiInclude(), "-o", ENTRY_LIBRARY_PATH, ENTRY_SOURCE_PATH];
}

export interface StepResult { command: string; args: string[]; status: number | null; signal: string | null; error?: string; output: string; ms: number }

/** Runs the two compiles of an artifact (in `cwd`) at the same time; resolves when both end. */
export function runStepsAsync(cwd: string, steps: readonly string[][]): Promise<StepResult[]> {
  return Promise.all(steps.map(([command, ...args]) => new Promise<StepResult>((res) => {
    const t0 = performance.now();
    let output = "";
    const p = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    p.stdout.on("data", (d: Buffer) => { output += d.toString(); });
    p.stderr.on("data", (d: Buffer) => { output += d.toString(); });
    p.on("error", (e) => res({ command, args, status: null, signal: null, error: (e as NodeJS.ErrnoException).code ?? e.message, output, ms: performance.now() - t0 }));
    p.on("close", (status, signal) => res({ command, args, status, signal, output, ms: performance.now() - t0 }));
  })));
}

/**
 * The same, synchronously: both compilers run concurrently under one `sh` (the build is
 * synchronous, as the Target interface is), each step's output and status in a log file.
 */
export function runStepsSync(cwd: string, steps: readonly string[][]): StepResult[] {
  const q = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  const script = steps.map((st, i) => `( ${st.map(q).join(" ")} > build/step${i}.log 2>&1; echo $? > build/step${i}.rc ) &`).join("\n") + "\nwait\n";
  const t0 = performance.now();
  const r = spawnSync("sh", ["-c", script], { cwd, encoding: "utf8", timeout: 900_000 });
  const ms = performance.now() - t0;
  return steps.map(([command, ...args], i) => {
    let output = "", status: number | null = null;
    try { output = readFileSync(join(cwd, `build/step${i}.log`), "utf8"); } catch { /* none */ }
    try { status = Number(readFileSync(join(cwd, `build/step${i}.rc`), "utf8").trim()); } catch { /* none */ }
    rmSync(join(cwd, `build/step${i}.log`), { force: true });
    rmSync(join(cwd, `build/step${i}.rc`), { force: true });
    if (Number.isNaN(status)) status = null;
    return { command, args, status, signal: r.signal ?? null, error: r.error ? String(r.error) : undefined, output, ms };
  });
}

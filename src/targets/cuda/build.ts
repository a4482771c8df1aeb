// cuda target: lowered Program -> artifact directory (the cpu layout):
//   compiled_meta.json          platform "cuda"; library = build/libentry.so (+ sha256)
//   program.json                the lowered IR
//   kernels/program.cu          generated kernels (src/codegen/cuda)
//   kernels/entry.cpp           generated host orchestration (tspto_entry + kernel table)
//   orchestration/              entry.cpp excerpt and a README
//   build/program.fatbin        nvcc: SASS for the architecture (default sm_90) + PTX
//   build/libentry.so           host C++ compiler
//   build/stamp.json            nvcc version, arch, flags, times, hashes (the fatbin's sha256
//                               is checked before the device loads it)
// nvcc and the host compiler run at the same time. The artifact key holds the nvcc path and
// version, the architecture and the flags, so another toolkit or GPU gets another artifact.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Program } from "../../ir/index.js";
import { TsptoCompileError } from "../../ir/index.js";
import { ENTRY_BEGIN, ENTRY_END } from "../../codegen/cpp/index.js";
import { generateCuda, type CudaGenOptions, type CudaKernels, type GeneratedCuda } from "../../codegen/cuda/index.js";
import { entrySignature } from "../../codegen/index.js";
import type { ArtifactRef, BuildOptions } from "../target.js";
import { compilerFailure, processFailure } from "../compiler_failure.js";
import {
  FILE_LIMITS, META_FILE, META_SCHEMA, META_SCHEMA_VERSION, STAMP_FILE, canonicalJSON, checkReplaceable, defaultArtifactRoot, installArtifact,
  markerKey, publishPartialArtifact, readInside, readTextInside, reuseArtifact, safeName, sealArtifact, sha256, startArtifact, validateMeta,
  metaText,
  writeDumps, type CompiledMeta,
} from "../../artifact/index.js";
import {
  CUDA_SOURCE_PATH, ENTRY_LIBRARY_PATH, ENTRY_SOURCE_PATH, FATBIN_PATH, NVCC_FLAGS, ENTRY_CXX_FLAGS,
  cudaArch, cudaBuildPlan, cudaKernels, entryCxxArgs, findNvcc, hostCxx, nvccArgs, requireNvcc, runStepsAsync, runStepsSync, type Nvcc, type StepResult,
} from "./toolchain.js";

/** Bump when generated code changes meaning (part of the artifact key). */
const CODEGEN_VERSION = "cuda-1";

/** The build's machine-dependent identity: nvcc (path, version), architecture, flags, host compiler. */
export function cudaKeyParts(arch = cudaArch(), kernels = cudaKernels()): string[] {
  const n = findNvcc();
  let cxx = "c++:missing";
  try { cxx = hostCxx().join(" "); } catch { /* prebuilt artifacts only */ }
  return [n ? n.path : "nvcc:missing", n ? n.version : "", arch, `kernels=${kernels}`, NVCC_FLAGS.join(" "), cxx, ENTRY_CXX_FLAGS.join(" ")];
}

interface Prepared { gen: GeneratedCuda; key: string; outputDir: string; arch: string; kernels: CudaKernels; nvcc: Nvcc; tmp: string | null; reused: ArtifactRef | null }

function tryReuse(dir: string, key: string): ArtifactRef | null {
  try {
    const meta = reuseArtifact(dir, key);
    if (!meta || !meta.library) return null;
    const stamp = JSON.parse(readTextInside(dir, STAMP_FILE, { maxBytes: FILE_LIMITS.meta })) as { fatbinSha256?: string };
    if (sha256(readInside(dir, FATBIN_PATH, { maxBytes: FILE_LIMITS.library })) !== stamp.fatbinSha256) return null;
    return { outputDir: dir, meta };
  } catch {
    return null;
  }
}

/**
 * The key of a build that does not depend on the toolkit present: the generated sources, the
 * architecture and the flags. Prebuilt artifacts ($TSPTO_CUDA_PREBUILT, e.g. the GPU check
 * pack of `npm run gpu:pack`) are looked up by it, so a machine without nvcc can run them.
 */
/** The architecture nvcc builds and the code generator's options, from the compile options and the environment. */
function plan(opts: Pick<BuildOptions, "options">): { arch: string; kernels: CudaKernels; gen: CudaGenOptions } {
  const kernels = cudaKernels(opts.options?.cudaKernels);
  return { ...cudaBuildPlan(cudaArch(opts.options?.cudaArch), kernels), kernels };
}

export function prebuiltName(program: Program, opts: Pick<BuildOptions, "packageVersion" | "options">, gen = generateCuda(program, plan(opts).gen)): string {
  const { arch, kernels } = plan(opts);
  // (other compile options do not change the generated CUDA; leaving them out lets a runtime
  // that passes more options still find the prebuilt artifact)
  const key = sha256([CODEGEN_VERSION, opts.packageVersion, "cuda", arch, `kernels=${kernels}`, NVCC_FLAGS.join(" "), ENTRY_CXX_FLAGS.join(" "),
    sha256(gen.source), sha256(gen.entry)].join("\0"));
  return `${safeName(program.name)}-${key.slice(0, 32)}`;
}

function findPrebuilt(program: Program, opts: BuildOptions, gen: GeneratedCuda): ArtifactRef | null {
  const root = process.env.TSPTO_CUDA_PREBUILT;
  if (!root) return null;
  const dir = join(resolve(root), prebuiltName(program, opts, gen));
  try {
    const key = markerKey(dir);
    return key ? tryReuse(dir, key) : null;
  } catch {
    return null;
  }
}

function prepare(program: Program, opts: BuildOptions): Prepared {
  const { arch, kernels, gen: genOpts } = plan(opts);
  const gen = generateCuda(program, genOpts);
  const pre = findPrebuilt(program, opts, gen);
  if (pre) return { gen, key: "", outputDir: pre.outputDir, arch, kernels, nvcc: { path: "", version: "" }, tmp: null, reused: pre };
  const nvcc = requireNvcc();
  const key = sha256([CODEGEN_VERSION, opts.packageVersion, opts.fingerprint ?? "", "cuda", JSON.stringify(opts.options ?? {}), canonicalJSON(program.toJSON()),
    sha256(gen.source), sha256(gen.entry), ...cudaKeyParts(arch, kernels)].join("\0"));
  const outputDir = resolve(opts.outputDir ?? join(defaultArtifactRoot(), `${safeName(program.name)}-${key.slice(0, 16)}`));
  const reused = tryReuse(outputDir, key);
  if (reused) { writeDumps(outputDir, opts.dumps, true); return { gen, key, outputDir, arch, kernels, nvcc, tmp: null, reused }; }
  checkReplaceable(outputDir);
  const tmp = startArtifact(outputDir);
  for (const d of ["kernels", "orchestration", "build"]) mkdirSync(join(tmp, d), { recursive: true });
  writeFileSync(join(tmp, "program.json"), `${JSON.stringify(program.toJSON(), null, 1)}\n`);
  writeFileSync(join(tmp, CUDA_SOURCE_PATH), gen.source);
  writeFileSync(join(tmp, ENTRY_SOURCE_PATH), gen.entry);
  const b = gen.entry.indexOf(ENTRY_BEGIN), e = gen.entry.indexOf(ENTRY_END);
  writeFileSync(join(tmp, "orchestration", "entry.cpp"),
    `// Excerpt of ../${ENTRY_SOURCE_PATH}: the orchestration, compiled into ../${ENTRY_LIBRARY_PATH} as tspto_entry.\n${b >= 0 && e > b ? gen.entry.slice(b, e + ENTRY_END.length) : ""}\n`);
  writeFileSync(join(tmp, "orchestration", "README.md"),
    `The orchestration of '${program.entry}' runs on the host as \`tspto_entry\` in ../${ENTRY_LIBRARY_PATH}; each InCore call is one kernel launch (cuLaunchKernel on the worker's stream) of a kernel in ../${FATBIN_PATH}.\n`);
  return { gen, key, outputDir, arch, kernels, nvcc, tmp, reused: null };
}

function steps(p: Prepared): string[][] {
  return [[p.nvcc.path, ...nvccArgs(p.arch)], [...hostCxx(), ...entryCxxArgs()]];
}

function finish(program: Program, opts: BuildOptions, p: Prepared, results: StepResult[]): ArtifactRef {
  const tmp = p.tmp!;
  let keepTmp = false;
  try {
    results.forEach((r, i) => {
      const out = i === 0 ? FATBIN_PATH : ENTRY_LIBRARY_PATH;
      if (r.status === 0 && existsSync(join(tmp, out))) return;
      // leave the generated source where the user can read it
      const where = publishPartialArtifact(tmp, p.outputDir);
      keepTmp = where === tmp;
      throw new TsptoCompileError(i === 0 ? "E_NVCC" : "E_CXX",
        compilerFailure(`${i === 0 ? "CUDA" : "C++"} compilation of program '${program.name}'`, processFailure(r.command, r), r.output,
          join(where, i === 0 ? CUDA_SOURCE_PATH : ENTRY_SOURCE_PATH), `${r.command} ${r.args.join(" ")}`),
        undefined, i === 0 ? "this is a bug in the cuda code generator unless the CUDA toolkit is broken; the message above is nvcc's" : "set $CXX to a working C++17 compiler");
    });
    const fatbinSha256 = sha256(readFileSync(join(tmp, FATBIN_PATH)));
    const libraryHash = sha256(readFileSync(join(tmp, ENTRY_LIBRARY_PATH)));
    writeFileSync(join(tmp, "build", "stamp.json"), `${JSON.stringify({
      nvcc: p.nvcc.path, nvccVersion: p.nvcc.version, arch: p.arch, kernelFormulas: p.kernels, nvccFlags: nvccArgs(p.arch), cxx: hostCxx().join(" "), cxxFlags: entryCxxArgs(),
      nvccMs: Math.round(results[0].ms), cxxMs: Math.round(results[1].ms), compileMs: Math.round(Math.max(results[0].ms, results[1].ms)),
      sourceSha256: sha256(p.gen.source), entrySha256: sha256(p.gen.entry), fatbinSha256, librarySha256: libraryHash, key: p.key,
      kernels: p.gen.kernels, blockThreads: p.gen.blockThreads,
    }, null, 2)}\n`);
    const sig = entrySignature(program, { dynamicDims: false, platform: "cuda" });
    const meta: CompiledMeta = {
      schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name: program.name, entry: program.entry, platform: "cuda",
      backendType: "cuda", runtimeName: "tspto-cuda", ...sig, scratchBytes: p.gen.scratchBytes,
      kernels: p.gen.kernels.map((k) => ({ name: k.name, symbol: k.symbol, scratchBytes: k.scratchBytes })),
      library: ENTRY_LIBRARY_PATH, libraryHash, tspto: opts.packageVersion, createdAt: new Date().toISOString(),
    };
    writeDumps(tmp, opts.dumps, false);
    validateMeta(meta, join(p.outputDir, META_FILE)); // what we write must read back
    writeFileSync(join(tmp, META_FILE), metaText(meta));
    sealArtifact(tmp, p.key);
    try {
      renameSync(tmp, p.outputDir);
    } catch {
      const theirs = tryReuse(p.outputDir, p.key);
      if (theirs) { rmSync(tmp, { recursive: true, force: true }); return theirs; }
      installArtifact(tmp, p.outputDir);
    }
    return { outputDir: p.outputDir, meta };
  } finally {
    // (a failed build's directory is kept when it could not be published: the error names its source)
    if (!keepTmp && existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
  }
}

/** Lowered program -> artifact (nvcc and the host compiler run concurrently; blocks until both end). */
export function buildCuda(program: Program, opts: BuildOptions): ArtifactRef {
  const p = prepare(program, opts);
  if (p.reused) return p.reused;
  return finish(program, opts, p, runStepsSync(p.tmp!, steps(p)));
}

/** The same without blocking the event loop (many programs at once: tests, the GPU pack). */
export async function buildCudaAsync(program: Program, opts: BuildOptions): Promise<ArtifactRef> {
  const p = prepare(program, opts);
  if (p.reused) return p.reused;
  return finish(program, opts, p, await runStepsAsync(p.tmp!, steps(p)));
}

// Builds the cuda artifacts of the GPU check (every corpus program, the seed program, the GPU
// benchmark kernels) into $TSPTO_CUDA_PREBUILT_OUT, named by prebuiltName() so that
// $TSPTO_CUDA_PREBUILT finds them on a machine without nvcc. Run by scripts/gpu_pack.ts from
// the staged tree (the generated sources name the kernels' source files by absolute path, so
// the tree must sit where run.sh unpacks it).
import { mkdirSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { zeros } from "tspto";
import type { Program } from "../src/ir/index.js";
import { buildCudaAsync, prebuiltName } from "../src/targets/cuda/index.js";
import { PACKAGE_VERSION } from "../src/version.js";
import { corpusPrograms } from "../test/targets/cuda/corpus.js";
import { ADD_COLS, ADD_ROWS, GMM, GV_K, GV_N, GV_ROWS, SMX_COLS, SMX_ROWS, V2_MATMUL_CHECKS, gpuAdd, gpuGemv, gpuMatmul, gpuSoftmax, tinyAdd } from "../bench/gpu_kernels.js";

const out = process.env.TSPTO_CUDA_PREBUILT_OUT;
if (!out) throw new Error("set TSPTO_CUDA_PREBUILT_OUT");
mkdirSync(out, { recursive: true });
const programs: [string, Program][] = [...(await corpusPrograms()).entries()];
{
  const a = zeros([ADD_ROWS, ADD_COLS]);
  programs.push(["gpuAdd", gpuAdd.lower(a, a, a)]);
}
{
  const a = zeros([SMX_ROWS, SMX_COLS]);
  programs.push(["gpuSoftmax", gpuSoftmax.lower(a, a)]);
}
{
  const a = zeros([GMM, GMM], "bfloat16"), c = zeros([GMM, GMM]);
  programs.push(["gpuMatmul", gpuMatmul.lower(a, a, c)]);
}
programs.push(["tinyAdd", tinyAdd.lower(zeros([8, 8]), zeros([8, 8]), zeros([8, 8]))]);
programs.push(["gpuGemv", gpuGemv.lower(zeros([GV_ROWS, GV_K], "bfloat16"), zeros([GV_K, GV_N], "bfloat16"), zeros([GV_ROWS, GV_N]))]);
for (const k of V2_MATMUL_CHECKS) programs.push([k.name, k.fn.lower(zeros([...k.a], k.dtype), zeros([...k.b], k.dtype), zeros([...k.c]))]);
// both kernel sets (v1, the default, and the opt-in v2: TSPTO_CUDA_KERNELS=v2 on the GPU machine)
const kernelSets = (process.env.TSPTO_CUDA_PREBUILT_KERNELS ?? "v1,v2").split(",").filter(Boolean);
const builds = kernelSets.flatMap((k) => programs.map(([name, p]) => [`${name} (${k})`, p, { packageVersion: PACKAGE_VERSION, options: { cudaArch: process.env.TSPTO_CUDA_ARCH ?? "sm_90", cudaKernels: k } }] as const));
const queue = [...builds];
let failed = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: Math.max(2, Math.min(8, cpus().length)) }, async () => {
  for (let e = queue.shift(); e; e = queue.shift()) {
    const [name, p, opts] = e;
    try {
      await buildCudaAsync(p, { ...opts, outputDir: join(out, prebuiltName(p, opts)) });
    } catch (err) {
      failed++;
      process.stderr.write(`prebuild of ${name} failed: ${(err as Error).message}\n`);
    }
  }
}));
process.stdout.write(`prebuilt ${builds.length - failed} of ${builds.length} cuda programs (kernels ${kernelSets.join(", ")}) in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
process.exit(failed ? 1 : 0);

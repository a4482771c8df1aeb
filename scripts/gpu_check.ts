// The GPU check (run by gpu-pack/run.sh on a machine with an NVIDIA GPU, or directly:
// `npx tsx scripts/gpu_check.ts`): the GPU tests of test/targets/cuda/gpu_checks.ts, then the
// GPU benchmark table (bench/gpu.ts). Prints "N passed, M failed"; exit code 0 when all passed.
// Without a GPU it prints the cuda device's error and fails every check.
import { CudaDevice } from "../src/targets/cuda/index.js";
import { gpuChecks, runChecks } from "../test/targets/cuda/gpu_checks.js";

// --kernels=v2: the checks and the benchmark with the opt-in v2 kernels (TSPTO_CUDA_KERNELS=v2),
// every v2 path against interp; their numerics and speed are unverified until this has run on a GPU.
const kernelsArg = process.argv.find((a) => a.startsWith("--kernels="));
if (kernelsArg) process.env.TSPTO_CUDA_KERNELS = kernelsArg.slice("--kernels=".length);
// --graph: v2 modules launch through CUDA graphs (TSPTO_CUDA_GRAPH=1: recorded per segment, built once, parameters patched)
if (process.argv.includes("--graph")) process.env.TSPTO_CUDA_GRAPH = "1";
process.stdout.write(`cuda kernels: ${process.env.TSPTO_CUDA_KERNELS || "v1"}${process.env.TSPTO_CUDA_GRAPH === "1" ? ", CUDA graphs" : ""}\n`);

if (process.argv.includes("--verify-prebuilt")) {
  await verifyPrebuilt();
  process.exit(0);
}

/**
 * Without a GPU and without nvcc (TSPTO_NVCC=off): every program the checks and the benchmark
 * compile must come from the prebuilt artifacts ($TSPTO_CUDA_PREBUILT). Examples stop at the
 * device (E_NO_GPU) after their first kernel compiled; E_NVCC means a prebuilt one is missing.
 */
async function verifyPrebuilt(): Promise<void> {
  process.env.TSPTO_NVCC = "off";
  const { ir, zeros } = await import("tspto");
  const { corpusPrograms, cudaExampleFiles, runExample } = await import("../test/targets/cuda/corpus.js");
  const k = await import("../bench/gpu_kernels.js");
  let found = 0;
  const missing: string[] = [];
  const tryBuild = (name: string, f: () => unknown) => {
    try { f(); found++; } catch (e) { missing.push(`${name}: ${(e as Error).message.split("\n")[0]}`); }
  };
  for (const [name, p] of await corpusPrograms()) tryBuild(name, () => ir.compile(p, { platform: "cuda" }));
  const cuda = (await import("tspto")).RunConfig;
  const cfg = new cuda({ platform: "cuda" });
  tryBuild("gpuAdd", () => { const a = zeros([k.ADD_ROWS, k.ADD_COLS]); k.gpuAdd.compile(a, a, a, cfg); });
  tryBuild("gpuSoftmax", () => { const a = zeros([k.SMX_ROWS, k.SMX_COLS]); k.gpuSoftmax.compile(a, a, cfg); });
  tryBuild("gpuMatmul", () => { const a = zeros([k.GMM, k.GMM], "bfloat16"); k.gpuMatmul.compile(a, a, zeros([k.GMM, k.GMM]), cfg); });
  tryBuild("tinyAdd", () => { k.tinyAdd.compile(zeros([8, 8]), zeros([8, 8]), zeros([8, 8]), cfg); });
  tryBuild("gpuGemv", () => { k.gpuGemv.compile(zeros([k.GV_ROWS, k.GV_K], "bfloat16"), zeros([k.GV_K, k.GV_N], "bfloat16"), zeros([k.GV_ROWS, k.GV_N]), cfg); });
  for (const c of k.V2_MATMUL_CHECKS) tryBuild(c.name, () => { c.fn.compile(zeros([...c.a], c.dtype), zeros([...c.b], c.dtype), zeros([...c.c]), cfg); });
  for (const f of cudaExampleFiles()) {
    try { await runExample(f, "cuda"); found++; } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "E_NO_GPU") found++; else missing.push(`example ${f}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  process.stdout.write(`prebuilt: ${found} found, ${missing.length} missing\n${missing.map((m) => `  missing ${m}\n`).join("")}`);
  if (missing.length) process.exit(1);
}

const checks = gpuChecks();
const t0 = performance.now();
let gpu = true;
try {
  new CudaDevice({ deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 20, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 }).close();
} catch (e) {
  gpu = false;
  process.stdout.write(`cuda device unavailable: ${(e as Error).message}\n`);
}
if (!gpu) {
  process.stdout.write(`0 passed, ${checks.length} failed\n`);
  process.exit(1);
}
const { failed } = await runChecks(checks);
process.stdout.write(`(checks took ${((performance.now() - t0) / 1000).toFixed(1)} s)\n\n`);
if (process.env.TSPTO_GPU_BENCH !== "0") {
  const { gpuBench } = await import("../bench/gpu.js");
  await gpuBench();
}
process.exit(failed ? 1 : 0);

// The GPU check (run by gpu-pack/run.sh on a machine with an NVIDIA GPU, or directly:
// `npx tsx scripts/gpu_check.ts`): the GPU tests of test/targets/cuda/gpu_checks.ts, then the
// GPU benchmark table (bench/gpu.ts). Prints "N passed, M failed"; exit code 0 when all passed.
// Without a GPU it prints the cuda device's error and fails every check.
import { CudaDevice } from "../src/targets/cuda/index.js";
import { gpuChecks, runChecks } from "../test/targets/cuda/gpu_checks.js";

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

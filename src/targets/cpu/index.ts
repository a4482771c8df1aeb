// The cpu target (the default platform): generated C++ on the native runtime's simulated
// chip (a device-memory arena, a persistent thread pool of core threads, a task scheduler).
import { availableParallelism } from "node:os";
import type { Target } from "../target.js";
import { buildCpu, buildCpuAsync } from "./build.js";
import { portableIdentity, toolchainIdentity } from "./toolchain.js";
import { CpuDevice } from "./device.js";
import { cpuLimits, cpuLimitsAsync } from "./limits.js";

/** The core threads a launch runs on by default (the machine's; the tiling of few-row matmuls follows it). */
const CORES = Math.max(1, Math.min(16, availableParallelism()));

/** Per-core scratch of the simulated chip (bytes). */
export const CPU_SCRATCH_BYTES = 1 << 20;

export const cpuTarget: Target = {
  name: "cpu",
  summary: "generated C++ on the native runtime (a simulated chip: host memory arena, thread pool)",
  description: { scratchBytes: CPU_SCRATCH_BYTES, matmulOperandsInPlace: true, fewRowMatmulCores: CORES },
  build: buildCpu,
  buildAsync: buildCpuAsync,
  cacheKeyParts: () => [...toolchainIdentity(), `cores=${CORES}`],
  portableKeyParts: () => [...portableIdentity(), `cores=${CORES}`],
  openDevice: (opts) => new CpuDevice(opts),
  limits: cpuLimits,
  limitsAsync: cpuLimitsAsync,
};
export { CXX_FLAGS, installPrecompiledHeader, whichSync, abiIncludeDir } from "./toolchain.js";
export { FMA_PEAK, DOT_PEAK, NATIVE_READ, FmaPeak, DotPeak, NativeRead, buildProgram, peakFlags, readFlags, cpuLimits, cpuLimitsAsync, measureLimits, limitsMeasurements, limitsCacheFile, forgetLimitsMemo } from "./limits.js";

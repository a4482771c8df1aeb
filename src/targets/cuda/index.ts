// The cuda target: the same lowered programs as CUDA kernels on an NVIDIA GPU.
//  - codegen: src/codegen/cuda (one __global__ kernel per InCore function, host orchestration);
//  - build: nvcc -> build/program.fatbin (SASS for sm_90 by default, TSPTO_CUDA_ARCH or the
//    cudaArch option, plus PTX) and the host compiler -> build/libentry.so (./build.ts);
//  - device: the native addon's CudaDevice, which loads libcuda.so.1 at run time (./device.ts).
import type { Target } from "../target.js";
import { buildCuda } from "./build.js";
import { cudaKeyParts } from "./build.js";
import { CudaDevice } from "./device.js";

/**
 * Tile scratch per block the passes plan against. The same as the cpu platform's, so one
 * lowered program serves both; kernels whose tiles exceed shared memory keep them in device
 * memory (src/codegen/cuda/generate.ts, SHARED_LIMIT).
 */
export const CUDA_SCRATCH_BYTES = 1 << 20;

export const cudaTarget: Target = {
  name: "cuda",
  summary: "generated CUDA kernels on an NVIDIA GPU (CUDA driver API loaded at run time)",
  description: { scratchBytes: CUDA_SCRATCH_BYTES },
  build: buildCuda,
  cacheKeyParts: () => cudaKeyParts(),
  openDevice: (opts) => new CudaDevice(opts),
};
export { buildCuda, buildCudaAsync, cudaKeyParts, prebuiltName } from "./build.js";
export { CudaDevice } from "./device.js";
export { findNvcc, cudaArch, cudaKernels, cudaBuildPlan, DEFAULT_CUDA_ARCH, FATBIN_PATH, ENTRY_LIBRARY_PATH } from "./toolchain.js";

// The cuda code generator: lowered Program -> CUDA C++ kernels (program.cu) + a host-side
// orchestration (entry.cpp). See generate.ts for the mapping; the kernels are the shared SIMT
// lowering (../simt/) in CUDA C++ (./lang.ts).
export { generateCuda, SHARED_LIMIT, DESCRIPTOR_SLOTS, type GeneratedCuda, type CudaKernelInfo } from "./generate.js";
export { CUDA_LANG, cudaEmitterFor } from "./lang.js";
export { CUDA_PRELUDE, CUDA_MAX_SLOTS, CUDA_ERR_WORDS, CUDA_BLOCK_THREADS } from "./prelude.js";
export { cudaLangV2, WGMMA_STAGE_ELEMS, type CudaGenOptions, type CudaKernels } from "./v2.js";

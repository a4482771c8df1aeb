// tspto's package root in a browser (the "browser" export condition; scripts/build-browser.mjs):
// the names of src/index.ts that make sense in a page — the kernel language and its jit, the
// runtime (ChipWorker, RunConfig, DeviceTensor, CompiledProgram, benchmark), host tensors, the
// errors, the DFX trace as data and as an HTML view — over the webgpu and interp platforms.
// Distributed workers (MPI) and the cpu/cuda platforms are Node-only.
export * from "./index_common.js";

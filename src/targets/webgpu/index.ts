// The webgpu target: the same lowered programs on any GPU through WebGPU.
//  - codegen: src/codegen/wgsl (one WGSL compute module per InCore function: the SIMT lowering
//    shared with cuda); the entry runs in JavaScript (./orchestrate.ts);
//  - build: writes the WGSL and the kernel table into the artifact (./build.ts); the WebGPU
//    implementation compiles them when a device loads the program;
//  - device: ./device.ts over a GPUDevice (in Node from Dawn's npm package, ./node.ts).
// Device facts: tiles are 32-bit words in scratch (minTileElemBytes 4); scratch is planned like
// the cpu's (1 MiB) so one lowered program serves every target, and kernels whose tiles exceed
// workgroup memory keep them in device memory (src/codegen/wgsl/lang.ts).
import type { Target } from "../target.js";
import { WGSL_CODEGEN_VERSION } from "../../codegen/wgsl/index.js";
import { buildWebgpu } from "./build.js";
import { WebGpuDevice } from "./device.js";
import { NODE_HOST, dawnInstalled } from "./node.js";

export const WEBGPU_SCRATCH_BYTES = 1 << 20;

export const webgpuTarget: Target = {
  name: "webgpu",
  summary: "generated WGSL compute shaders on any GPU through WebGPU (Dawn's npm package 'webgpu' in Node)",
  description: { scratchBytes: WEBGPU_SCRATCH_BYTES, minTileElemBytes: 4 },
  build: buildWebgpu,
  cacheKeyParts: () => [WGSL_CODEGEN_VERSION],
  openDevice: (opts) => new WebGpuDevice(opts, NODE_HOST),
};
export { buildWebgpu } from "./build.js";
export { WebGpuDevice, asyncError, type WebGpuHost, type OpenedGpu, type WebGpuModuleSource, type WebGpuKernelEntry } from "./device.js";
export { NODE_HOST, dawnInstalled, dawnGpu, openGpu, readModuleFiles, KERNEL_TABLE, DAWN_PACKAGE } from "./node.js";
export { compileOrchestration, type Orchestration, type OrchTensor, type OrchHooks } from "./orchestrate.js";

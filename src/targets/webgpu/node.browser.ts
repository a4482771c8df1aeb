// The webgpu target's host in the browser build (used for ./node.ts by scripts/build-browser.mjs):
// WebGPU from navigator.gpu instead of Dawn; artifacts are read from the page's in-memory volume
// (src/browser/node/fs.ts) by the same reader as in Node.
import { TsptoDeviceError } from "../../ir/index.js";
import type { Gpu } from "./gpu.js";
import { openAdapter } from "./open.js";
import type { OpenedGpu, WebGpuHost } from "./device.js";
import { readModuleFiles, KERNEL_TABLE } from "./files.js";

export { readModuleFiles, KERNEL_TABLE };
export const DAWN_PACKAGE = "webgpu";

const BROWSER_HINT = "use a browser with WebGPU (Chrome / Edge 113+, Safari 26+, Firefox 141+ on Windows), served over https or localhost; "
  + "headless Chromium needs --enable-unsafe-webgpu (without a GPU: --use-webgpu-adapter=swiftshader --enable-features=Vulkan)";

/** The page's WebGPU (navigator.gpu), or E_NO_GPU saying what the page needs. */
export function dawnGpu(): Promise<Gpu> {
  const gpu = (globalThis as { navigator?: { gpu?: Gpu } }).navigator?.gpu;
  if (!gpu) return Promise.reject(new TsptoDeviceError("E_NO_GPU", "this page has no WebGPU (navigator.gpu is undefined)", undefined, BROWSER_HINT));
  return Promise.resolve(gpu);
}
/** Whether WebGPU can be asked for in this page. */
export function dawnInstalled(): boolean {
  return !!(globalThis as { navigator?: { gpu?: Gpu } }).navigator?.gpu;
}
export function openGpu(gpu: Gpu): Promise<OpenedGpu> {
  return openAdapter(gpu, BROWSER_HINT);
}
/** The page's host of a webgpu device. */
export const NODE_HOST: WebGpuHost = {
  open: async () => openGpu(await dawnGpu()),
  readModule: readModuleFiles,
  nowNs: () => Math.round(performance.now() * 1e6),
};

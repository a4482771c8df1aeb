// The webgpu platform in Node (node-only: the browser build uses navigator.gpu and keeps
// artifacts in memory). WebGPU comes from Dawn's npm package `webgpu` (an optional dependency,
// pinned in package.json): loaded on the first device open, one GPU instance per process,
// created with Dawn's timestamp_quantization toggle off so that timestamp queries have ns
// resolution. An adapter is requested with high performance preference (TSPTO_WEBGPU_ADAPTER:
// a substring of the adapter's name, Dawn's `adapter=` option); the device is requested with
// the adapter's own limits for the buffers and workgroup memory tspto uses and with
// timestamp-query where the adapter has it. Without the package, or without an adapter, opening
// the device fails with one E_NO_GPU error that says what to install.
//
// On a Linux machine without a GPU, Dawn finds SwiftShader's Vulkan driver (shipped by Debian's
// chromium-headless-shell) with LD_LIBRARY_PATH=/usr/lib/chromium
// VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (Mesa's lavapipe lacks features
// Dawn requires): correct, slow, for tests.
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TsptoDeviceError } from "../../ir/index.js";
import { TsptoArtifactError, readProgram, type ArtifactRef } from "../../artifact/index.js";
import type { FailSite } from "../../codegen/simt/index.js";
import type { Gpu } from "./gpu.js";
import { openAdapter } from "./open.js";
import type { OpenedGpu, WebGpuHost } from "./device.js";
import { readModuleFiles, KERNEL_TABLE } from "./files.js";

export { readModuleFiles, KERNEL_TABLE };

/** The pinned Dawn package. */
export const DAWN_PACKAGE = "webgpu";

const SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json";

const INSTALL_HINT = `install Dawn for Node: npm install ${DAWN_PACKAGE} (tspto's optional dependency; a prebuilt binary for linux-x64/arm64, darwin, win32)`;

function noAdapterHint(): string {
  const parts = ["run on a machine with a GPU and its Vulkan (Linux), Metal (macOS) or D3D12 (Windows) driver"];
  if (process.platform === "linux") {
    parts.push(existsSync(SWIFTSHADER_ICD)
      ? `or use SwiftShader (installed here): LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=${SWIFTSHADER_ICD} node ...`
      : "or install SwiftShader for CPU-only testing: apt-get install chromium-headless-shell, then run with LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json");
  }
  return parts.join("; ");
}

/** Whether Dawn's package can be found (no load, no adapter request). */
export function dawnInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(DAWN_PACKAGE);
    return true;
  } catch {
    return false;
  }
}

let gpuPromise: Promise<Gpu> | null = null;

/** The process's WebGPU entry point from Dawn (loaded once). */
export function dawnGpu(): Promise<Gpu> {
  gpuPromise ??= (async () => {
    if (!dawnInstalled()) {
      throw new TsptoDeviceError("E_NO_GPU", `the webgpu platform needs WebGPU, and in Node that is Dawn's npm package '${DAWN_PACKAGE}', which is not installed`, undefined, INSTALL_HINT);
    }
    let mod: { create(flags: string[]): Gpu; globals: Record<string, unknown> };
    try {
      mod = (await import(DAWN_PACKAGE)) as typeof mod;
    } catch (e) {
      throw new TsptoDeviceError("E_NO_GPU", `loading Dawn's npm package '${DAWN_PACKAGE}' failed: ${(e as Error).message}`, undefined,
        `${INSTALL_HINT}; its binary must match this platform (${process.platform}-${process.arch})`);
    }
    // Dawn's classes as globals (instanceof checks in user code); tspto itself needs none
    for (const [k, v] of Object.entries(mod.globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    const flags = ["disable-dawn-features=timestamp_quantization"];
    const adapter = process.env.TSPTO_WEBGPU_ADAPTER;
    if (adapter) flags.push(`adapter=${adapter}`);
    return mod.create(flags);
  })();
  gpuPromise.catch(() => { gpuPromise = null; });
  return gpuPromise;
}

/** Requests an adapter and a device with the limits and features tspto uses (./open.ts). */
export function openGpu(gpu: Gpu): Promise<OpenedGpu> {
  return openAdapter(gpu, noAdapterHint(), "WebGPU found no adapter (no GPU driver Dawn can use)");
}

/** The Node host of a webgpu device. */
export const NODE_HOST: WebGpuHost = {
  open: async () => openGpu(await dawnGpu()),
  readModule: readModuleFiles,
  nowNs: () => Number(process.hrtime.bigint()),
};

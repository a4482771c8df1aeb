// The webgpu platform in a browser: WebGPU from navigator.gpu, programs held in memory. A
// program is lowered ahead of time (in Node: ir.compile(..., { platform: "webgpu" }) writes
// its program.json, or a build plugin does), and the page turns it into WGSL modules with the
// same code generator (src/codegen/wgsl) and runs its entry with the same device and
// orchestration as Node. Nothing here, nor anything it imports, is a Node built-in
// (test/architecture/browser_paths.test.ts); test/browser/ runs it in headless Chromium.
import { Program } from "../../ir/index.js";
import { TsptoDeviceError } from "../../ir/index.js";
import { TsptoArtifactError } from "../../artifact/meta.js";
import type { ArtifactRef } from "../../artifact/read.js";
import { generateWgsl } from "../../codegen/wgsl/index.js";
import type { DeviceOptions } from "../target.js";
import { WebGpuDevice, type OpenedGpu, type WebGpuHost, type WebGpuModuleSource } from "./device.js";
import type { Gpu } from "./gpu.js";
import { moduleOf, webgpuMeta } from "./meta.js";
import { openAdapter } from "./open.js";

const BROWSER_HINT = "use a browser with WebGPU (Chrome / Edge 113+, Safari 26+, Firefox 141+ on Windows), served over https or localhost; "
  + "headless Chromium needs --enable-unsafe-webgpu (without a GPU: --use-webgpu-adapter=swiftshader --enable-features=Vulkan)";

/** navigator.gpu, or E_NO_GPU saying what the page needs. */
function navigatorGpu(): Promise<Gpu> {
  const gpu = (globalThis as { navigator?: { gpu?: Gpu } }).navigator?.gpu;
  if (!gpu) {
    return Promise.reject(new TsptoDeviceError("E_NO_GPU", "this page has no WebGPU (navigator.gpu is undefined)", undefined, BROWSER_HINT));
  }
  return Promise.resolve(gpu);
}

/** Programs the page holds, by their in-memory artifact name, and the host of a device over them. */
export class BrowserWebGpu implements WebGpuHost {
  readonly device: WebGpuDevice;
  readonly #modules = new Map<string, WebGpuModuleSource>();
  readonly #gpu: () => Promise<Gpu>;
  #next = 0;

  /** `memoryBytes`: the device arena's upper bound (the adapter's maxStorageBufferBindingSize caps it). */
  constructor(opts: { gpu?: Gpu; memoryBytes?: number } = {}) {
    this.#gpu = opts.gpu ? () => Promise.resolve(opts.gpu!) : navigatorGpu;
    const dopts: DeviceOptions = { deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 0, memoryBytes: opts.memoryBytes ?? 256 * 2 ** 20, ringTaskWindow: 0, ringHeap: 0, ringDepPool: 0 };
    this.device = new WebGpuDevice(dopts, this);
  }

  async open(): Promise<OpenedGpu> {
    return openAdapter(await this.#gpu(), BROWSER_HINT);
  }

  nowNs(): number {
    return Math.round(performance.now() * 1e6);
  }

  /**
   * A program lowered for webgpu (a Program or its JSON, program.json of a webgpu artifact) as
   * an artifact held in memory: its WGSL generated now; `device.load` takes the result.
   */
  add(program: Program | object, packageVersion = "browser"): ArtifactRef {
    const p = program instanceof Program ? program : Program.fromJSON(program as Parameters<typeof Program.fromJSON>[0]);
    const gen = generateWgsl(p);
    const dir = `memory:${p.name}#${this.#next++}`;
    this.#modules.set(dir, moduleOf(p, gen, dir));
    return { outputDir: dir, meta: webgpuMeta(p, gen, packageVersion) };
  }

  readModule(artifact: ArtifactRef): WebGpuModuleSource {
    const m = this.#modules.get(artifact.outputDir);
    if (!m) throw new TsptoArtifactError(`no program '${artifact.outputDir}' in this page (add it first)`);
    return m;
  }
}

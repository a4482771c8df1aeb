// The webgpu platform's Device (src/targets/target.ts) over a WebGPU GPUDevice: Dawn in Node
// (./node.ts), navigator.gpu in a browser. It imports no Node built-in.
//
// Memory. Device memory is one storage buffer (the arena), grown on demand up to the adapter's
// maxStorageBufferBindingSize: DeviceTensors, a launch's staging of host arguments, its
// createTensor buffers and the global scratch of big tiles are ranges of it, so every kernel
// binds the same three resources (its uniform slice, the arena, the failure record) and two
// parameters may share a buffer (WebGPU forbids a writable binding aliasing another in one
// dispatch; with one binding nothing aliases). An address is (allocation generation << 40 |
// byte offset): never handed out twice, so a freed or foreign address is rejected, and a view's
// interior address finds its allocation at once. Allocations are 64-byte aligned and zero-filled
// (a reused range is cleared on the queue before anything else touches it).
//
// Order. Everything goes to the device's one queue, in call order: writeBuffer (h2d, staging,
// uniforms) runs when called, recorded commands (clears, device copies, a launch's compute pass)
// when submitted, and each launch submits before the next call writes anything, so a range freed
// under a queued launch can be reused at once: the queue runs the launch first. That is how
// frees under queued launches are deferred here (no bookkeeping), and why one uniform buffer
// serves every launch: the next launch's writeBuffer runs after this launch's dispatches.
//
// Asynchrony. A launch whose results stay on the device is enqueued synchronously (launch);
// anything that reads device memory back waits for the GPU, so only the async forms do it
// (launchAsync, d2hAsync); the synchronous ones throw E_ASYNC naming them. Until the adapter
// and device are open (requestAdapter is asynchronous) every operation is queued in order and
// runs once they are; an open that fails rejects the next async operation (and makes every later
// one fail) with what to install.
import { TsptoArgumentError, TsptoCompileError, TsptoDeviceError, TsptoError, TsptoKernelError, TsptoOutOfMemoryError, TsptoRuntimeError, type Program } from "../../ir/index.js";
import type { ArtifactRef } from "../../artifact/index.js";
import type { FailSite } from "../../codegen/simt/index.js";
import {
  BINDING_ERRORS, BINDING_MEMORY, BINDING_UNIFORMS, ERR_WORDS, UNIFORM_HEADER_WORDS, U_GSCRATCH, U_HI_SLOT, U_LO_SLOT, U_MODULE, U_START, U_STEP, U_TRIPS,
  type WgslParam,
} from "../../codegen/wgsl/index.js";
import type { SpmdAttr } from "../../passes/index.js";
import { ArgKind, type Device, type DeviceOptions, type DeviceStats, type DeviceTrace, type DeviceTraceTask } from "../target.js";
import { compileOrchestration, type OrchTensor, type OrchValue, type Orchestration } from "./orchestrate.js";
import {
  BufferUsage, MapMode, ShaderStage, type GpuBindGroup, type GpuBindGroupLayout, type GpuBuffer, type GpuCommandEncoder, type GpuComputePipeline,
  type GpuDevice, type GpuPipelineLayout, type GpuQuerySet,
} from "./gpu.js";

/** One kernel of a module, as the artifact's kernel table (kernels/webgpu.json) holds it. */
export interface WebGpuKernelEntry {
  readonly name: string;
  readonly symbol: string;
  readonly file: string;
  readonly source: string;
  readonly params: readonly WgslParam[];
  readonly uniformWords: number;
  readonly scratchBytes: number;
  readonly globalScratch: boolean;
  readonly workgroupBytes: number;
}
/** What a module load reads from an artifact (./node.ts reads the files; a browser keeps them in memory). */
export interface WebGpuModuleSource {
  readonly name: string;
  readonly dir: string;
  readonly program: Program;
  readonly kernels: readonly WebGpuKernelEntry[];
  readonly sites: readonly FailSite[];
}
/** The GPU a device runs on, once open. */
export interface OpenedGpu {
  readonly device: GpuDevice;
  /** The adapter in words (vendor, architecture, description). */
  readonly adapter: string;
  /** Timestamp queries (timestamp-query feature) are enabled. */
  readonly timestamps: boolean;
}
/** What differs between Node and a browser. */
export interface WebGpuHost {
  /** Requests the adapter and device; rejects with a TsptoError that says what is missing. */
  open(): Promise<OpenedGpu>;
  readModule(artifact: ArtifactRef): WebGpuModuleSource;
  /** A monotonic clock in ns. */
  nowNs(): number;
}

const GEN_SHIFT = 40n;
const OFF_MASK = (1n << GEN_SHIFT) - 1n;
/** The first 256 bytes of the arena are never allocated (no address is 0). */
const ARENA_RESERVED = 256;
const ARENA_MIN = 1 << 20;
/** Bytes of every dispatch's uniform slice (dynamic offsets are 256-byte aligned). */
const UNIFORM_STRIDE = 256;
/** Global scratch of one launch: at most this many bytes (bigger kernels get fewer workgroups, each more bands). */
const GSCRATCH_BUDGET = 64 << 20;
const MAX_WORKGROUPS = 65535;
const SLICE_WORDS = UNIFORM_STRIDE / 4;
const ELEM_BYTES: Record<string, number> = { float32: 4, int32: 4, float16: 2, bfloat16: 2, int16: 2, int8: 1, uint8: 1, bool: 1 };

const hex = (a: bigint) => `0x${a.toString(16)}`;
const err = (code: string, msg: string, hint?: string) => new TsptoDeviceError(code, msg, undefined, hint);
const ceil = (n: number, a: number) => Math.ceil(n / a) * a;

interface Allocation { readonly gen: number; readonly offset: number; readonly size: number; readonly reserved: number }
interface Loaded {
  readonly id: number;
  readonly src: WebGpuModuleSource;
  readonly orch: Orchestration;
  pipelines: GpuComputePipeline[] | null;
  /** WGSL compilation / pipeline validation: settles with the first error of the module, or null. */
  checked: Promise<TsptoError | null> | null;
}
interface Dispatch { readonly kernel: number; readonly grid: number; readonly gscratch: boolean }
interface OutCopy { readonly view: ArrayBufferView; readonly offset: number; readonly nbytes: number; readonly index: number }
interface Recorded { readonly scope: Promise<{ message: string } | null>; readonly outs: readonly OutCopy[]; readonly readback: GpuBuffer | null; readonly rbSize: number; readonly errAt: number; readonly tsAt: number; readonly passes: number; readonly dispatches: readonly Dispatch[]; readonly submitNs: number; readonly mod: Loaded }

export class WebGpuDevice implements Device {
  readonly asynchronous = true;
  readonly #host: WebGpuHost;
  #gpu: OpenedGpu | null = null;
  #openError: TsptoError | null = null;
  #opening: Promise<void>;
  /** Operations called before the device was open, in order. */
  #pending: (() => void)[] = [];
  #closed = false;

  // ---------------------------------------------------------------- arena
  #mem: GpuBuffer | null = null;
  #memSize = 0;
  #capacity: number;
  readonly #allocs = new Map<number, Allocation>();
  /** Free ranges of the arena below #top, by offset. */
  #free: { offset: number; size: number }[] = [];
  #top = ARENA_RESERVED;
  #gen = 0;
  #inUse = 0;

  // ---------------------------------------------------------------- device objects
  #encoder: GpuCommandEncoder | null = null;
  #bgl: GpuBindGroupLayout | null = null;
  #layout: GpuPipelineLayout | null = null;
  #bindGroup: GpuBindGroup | null = null;
  #uniforms: GpuBuffer | null = null;
  #uniformSize = 0;
  #errBuf: GpuBuffer | null = null;
  readonly #readbacks = new Map<number, GpuBuffer[]>();
  #copyPipeline: GpuComputePipeline | null = null;
  #querySet: GpuQuerySet | null = null;
  #queryCount = 0;
  #resolveBuf: GpuBuffer | null = null;
  /** The first error the GPU reported outside an error scope (a validation error of a submit): reported at the next wait. */
  #uncaptured: string | null = null;

  /** The host copy of a launch's uniform slices (grown as needed), and the dynamic offset of a setBindGroup. */
  #uniHost = new Int32Array(64 * SLICE_WORDS);
  readonly #dynOffset = new Uint32Array(1);
  readonly #modules = new Map<number, Loaded>();
  #nextModule = 1;
  readonly #s = { launches: 0, h2dBytes: 0, d2hBytes: 0, moduleLoads: 0, tasksRun: 0 };
  #recordMask = 0;
  #trace: DeviceTrace | null = null;

  readonly #memoryBytes: number;

  constructor(opts: DeviceOptions, host: WebGpuHost) {
    this.#host = host;
    this.#memoryBytes = opts.memoryBytes;
    // until the device is open: WebGPU's guaranteed maxStorageBufferBindingSize
    this.#capacity = Math.floor(Math.min(opts.memoryBytes, 128 * 2 ** 20) / 64) * 64;
    this.#opening = host.open().then((g) => this.#opened(g), (e: unknown) => {
      this.#openError = e instanceof TsptoError ? e : err("E_WEBGPU", `opening the WebGPU device failed: ${(e as Error)?.message ?? String(e)}`);
      this.#pending = [];
    });
  }

  /** Resolves when the device is open (rejects with the reason it could not be). */
  async ready(): Promise<void> {
    await this.#opening;
    if (this.#openError) throw this.#openError;
    this.#check("open");
  }

  /** The adapter in words (after ready()). */
  get adapter(): string { return this.#gpu?.adapter ?? "(not open)"; }
  /** Timestamp queries time launches and dispatches (after ready()). */
  get timestamps(): boolean { return this.#gpu?.timestamps ?? false; }

  #opened(g: OpenedGpu): void {
    if (this.#closed) { g.device.destroy(); return; }
    this.#gpu = g;
    const d = g.device;
    this.#capacity = Math.max(this.#top, Math.floor(Math.min(this.#memoryBytes, d.limits.maxStorageBufferBindingSize ?? 128 * 2 ** 20, d.limits.maxBufferSize ?? 256 * 2 ** 20) / 64) * 64);
    d.onuncapturederror = (ev) => { this.#uncaptured ??= ev.error.message; };
    void d.lost.then((info) => { if (!this.#closed && info.reason !== "destroyed") this.#uncaptured ??= `the WebGPU device was lost: ${info.message}`; });
    this.#bgl = d.createBindGroupLayout({
      entries: [
        { binding: BINDING_UNIFORMS, visibility: ShaderStage.COMPUTE, buffer: { type: "uniform", hasDynamicOffset: true, minBindingSize: UNIFORM_STRIDE } },
        { binding: BINDING_MEMORY, visibility: ShaderStage.COMPUTE, buffer: { type: "storage" } },
        { binding: BINDING_ERRORS, visibility: ShaderStage.COMPUTE, buffer: { type: "storage" } },
      ],
    });
    this.#layout = d.createPipelineLayout({ bindGroupLayouts: [this.#bgl] });
    this.#errBuf = d.createBuffer({ size: ERR_WORDS * 4, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST, label: "tspto failure record" });
    const ops = this.#pending;
    this.#pending = [];
    for (const op of ops) op();
  }

  /** Runs `op` now when the device is open, else queues it (in order). */
  #when(op: () => void): void {
    if (this.#gpu) op();
    else if (!this.#openError) this.#pending.push(op);
  }

  #check(op: string): void {
    if (this.#closed) throw err("E_CLOSED", `${op}: device is closed`, "construct a new ChipWorker");
    if (this.#openError) throw this.#openError;
  }

  #size(op: string, nbytes: number): void {
    if (!Number.isSafeInteger(nbytes) || nbytes < 0) throw new TsptoArgumentError("E_ARG", `${op}: nbytes must be a non-negative integer, got ${String(nbytes)}`);
  }

  // ---------------------------------------------------------------- memory
  alloc(nbytes: number): bigint {
    this.#check("alloc");
    this.#size("alloc", nbytes);
    const a = this.#allocate(nbytes, true);
    this.#inUse += a.reserved;
    return (BigInt(a.gen) << GEN_SHIFT) | BigInt(a.offset);
  }

  /** A range of the arena, zero-filled on the queue when `zero` (launch temporaries use it too: no accounting). */
  #allocate(nbytes: number, zero: boolean): Allocation {
    const reserved = Math.max(64, ceil(nbytes, 64));
    let offset = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const f = this.#free[i];
      if (f.size < reserved) continue;
      offset = f.offset;
      if (f.size === reserved) this.#free.splice(i, 1);
      else this.#free[i] = { offset: f.offset + reserved, size: f.size - reserved };
      break;
    }
    if (offset < 0) {
      if (this.#top + reserved > this.#capacity) {
        throw new TsptoOutOfMemoryError("E_DEVICE_OOM", `device out of memory: requested ${nbytes} bytes, ${this.#inUse} bytes in use of ${this.#capacity} bytes capacity (webgpu device memory is one storage buffer of at most the adapter's maxStorageBufferBindingSize)`,
          undefined, "free DeviceTensors you no longer need (freeTensor), use smaller tensors, or run on an adapter with a larger maxStorageBufferBindingSize");
      }
      offset = this.#top;
      this.#top += reserved;
    }
    const a: Allocation = { gen: ++this.#gen, offset, size: nbytes, reserved };
    this.#allocs.set(a.gen, a);
    const end = offset + reserved;
    this.#when(() => {
      this.#ensureArena(end);
      // (a range may have been used before: a freed one, or one below a top that came down)
      if (zero) this.#enc().clearBuffer(this.#mem!, offset, reserved);
    });
    return a;
  }

  #release(a: Allocation): void {
    this.#allocs.delete(a.gen);
    // coalesce with the free neighbours; a free range ending at the top lowers it
    let { offset, size } = { offset: a.offset, size: a.reserved };
    const i = this.#free.findIndex((f) => f.offset > offset);
    const at = i < 0 ? this.#free.length : i;
    const prev = this.#free[at - 1], next = this.#free[at];
    if (next && offset + size === next.offset) { size += next.size; this.#free.splice(at, 1); }
    if (prev && prev.offset + prev.size === offset) { offset = prev.offset; size += prev.size; this.#free.splice(at - 1, 1, { offset, size }); }
    else this.#free.splice(at, 0, { offset, size });
    const last = this.#free[this.#free.length - 1];
    if (last && last.offset + last.size === this.#top) { this.#top = last.offset; this.#free.pop(); }
  }

  free(addr: bigint): void {
    this.#check("free");
    const a = this.#base("free", addr);
    this.#inUse -= a.reserved;
    this.#release(a);
  }

  isLive(addr: bigint): boolean {
    if (typeof addr !== "bigint") return false;
    const a = this.#allocs.get(Number(addr >> GEN_SHIFT));
    return !!a && BigInt(a.offset) === (addr & OFF_MASK);
  }

  #base(op: string, addr: bigint): Allocation {
    if (typeof addr !== "bigint") throw new TsptoArgumentError("E_ARG", `${op}: address must be a bigint, got ${typeof addr}`);
    const a = this.#allocs.get(Number(addr >> GEN_SHIFT));
    const off = Number(addr & OFF_MASK);
    if (!a) throw err("E_ADDRESS", `${op}: ${hex(addr)} is not a live allocation (already freed or never allocated)`);
    if (off !== a.offset) throw err("E_ADDRESS", `${op}: ${hex(addr)} is an interior pointer (offset ${off - a.offset} into the allocation of ${a.size} bytes), not the start of an allocation`);
    return a;
  }

  /** The arena offset of [addr, addr + nbytes), which must lie in one live allocation. */
  #resolve(op: string, addr: bigint, nbytes: number): number {
    this.#size(op, nbytes);
    if (typeof addr !== "bigint") throw new TsptoArgumentError("E_ARG", `${op}: address must be a bigint, got ${typeof addr}`);
    const a = this.#allocs.get(Number(addr >> GEN_SHIFT));
    const off = Number(addr & OFF_MASK);
    if (!a || off < a.offset || off > a.offset + a.size) throw err("E_ADDRESS", `${op}: ${hex(addr)} is not inside a live allocation (freed, never allocated, or past the end of one)`);
    if (nbytes > a.offset + a.size - off) {
      throw err("E_ADDRESS", `${op}: range [${hex(addr)}, ${hex(addr)} + ${nbytes}) leaves the allocation of ${a.size} bytes (${a.offset + a.size - off} bytes available from ${hex(addr)})`);
    }
    return off;
  }

  /** The arena holds at least `end` bytes (grown: a bigger buffer, the old contents copied on the queue). */
  #ensureArena(end: number): void {
    if (end <= this.#memSize) return;
    const d = this.#gpu!.device;
    const size = Math.min(ceil(this.#capacity, 4), Math.max(ARENA_MIN, ceil(end, 4), 2 * this.#memSize));
    const mem = d.createBuffer({ size, usage: BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST, label: "tspto device memory" });
    if (this.#mem) {
      const old = this.#mem;
      this.#enc().copyBufferToBuffer(old, 0, mem, 0, this.#memSize);
      this.#flush();
      old.destroy(); // after the copy: the queue runs it first
    }
    this.#mem = mem;
    this.#memSize = size;
    this.#bindGroup = null;
  }

  #enc(): GpuCommandEncoder {
    this.#encoder ??= this.#gpu!.device.createCommandEncoder();
    return this.#encoder;
  }

  /** Submits the recorded commands (before anything that writes to the queue directly). */
  #flush(): void {
    if (!this.#encoder) return;
    const e = this.#encoder;
    this.#encoder = null;
    this.#gpu!.device.queue.submit([e.finish()]);
  }

  #view(op: string, v: ArrayBufferView, nbytes: number): Uint8Array {
    if (!ArrayBuffer.isView(v)) throw new TsptoArgumentError("E_ARG", `${op}: host must be a TypedArray`);
    if (v.byteLength < nbytes) throw new TsptoArgumentError("E_HOST_VIEW", `${op}: host buffer has ${v.byteLength} bytes, ${nbytes} requested`);
    return new Uint8Array(v.buffer, v.byteOffset, nbytes);
  }

  /** Host bytes -> the arena at `off` (writeBuffer: 4-byte aligned ranges; a tail inside an allocation's padding is padded). */
  #write(op: string, addr: bigint, off: number, bytes: Uint8Array): void {
    let data = bytes;
    if (off % 4 !== 0 || data.byteLength % 4 !== 0) {
      const a = this.#allocs.get(Number(addr >> GEN_SHIFT))!;
      const end = ceil(off + data.byteLength, 4);
      if (off % 4 !== 0 || end > a.offset + a.reserved || off + data.byteLength !== a.offset + a.size) {
        throw new TsptoArgumentError("E_ALIGN", `${op}: webgpu writes device memory in 4-byte words; the range [${off - a.offset}, ${off - a.offset + data.byteLength}) of an allocation of ${a.size} bytes is not word-aligned`,
          undefined, "copy whole tensors, or ranges whose offset and length are multiples of 4 bytes");
      }
      const padded = new Uint8Array(end - off);
      padded.set(data);
      data = padded;
    } else if (this.#gpu === null) {
      data = data.slice(); // queued until the device opens: the caller may change its buffer meanwhile
    }
    this.#when(() => {
      this.#flush();
      this.#gpu!.device.queue.writeBuffer(this.#mem!, off, data);
    });
  }

  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void {
    this.#check("h2d");
    const off = this.#resolve("h2d", addr, nbytes);
    this.#write("h2d", addr, off, this.#view("h2d", src, nbytes));
    this.#s.h2dBytes += nbytes;
  }

  d2h(_dst: ArrayBufferView, _addr: bigint, _nbytes: number): void {
    this.#check("d2h");
    throw asyncError("copyFrom (device -> host)", "await worker.copyFromAsync(host, devPtr, nbytes)");
  }

  /** Device -> host after everything queued before it. */
  async d2hAsync(dst: ArrayBufferView, addr: bigint, nbytes: number): Promise<void> {
    this.#check("d2hAsync");
    const off = this.#resolve("d2hAsync", addr, nbytes);
    const view = this.#view("d2hAsync", dst, nbytes);
    await this.#opening;
    this.#check("d2hAsync");
    // the aligned words holding the range, and the failure record of earlier launches
    const a0 = Math.floor(off / 4) * 4, a1 = ceil(off + nbytes, 4);
    const errAt = ceil(a1 - a0, 256);
    const size = errAt + ERR_WORDS * 4;
    const rb = this.#readback(size);
    const e = this.#enc();
    if (a1 > a0) e.copyBufferToBuffer(this.#mem!, a0, rb, 0, a1 - a0);
    e.copyBufferToBuffer(this.#errBuf!, 0, rb, errAt, ERR_WORDS * 4);
    this.#flush();
    await this.#map(rb);
    try {
      const bytes = new Uint8Array(rb.getMappedRange(0, size));
      this.#checkFailure(new Uint32Array(bytes.buffer, bytes.byteOffset + errAt, ERR_WORDS), null);
      if (view.byteLength < nbytes) throw new TsptoArgumentError("E_HOST_VIEW", `d2hAsync: the host buffer shrank to ${view.byteLength} bytes while the copy was queued`);
      view.set(bytes.subarray(off - a0, off - a0 + nbytes));
    } finally {
      rb.unmap();
      this.#giveBack(rb);
    }
    this.#s.d2hBytes += nbytes;
  }

  /** Host -> device, ordered after the launches queued before it (writeBuffer is queue-ordered: nothing to wait for). */
  async h2dAsync(addr: bigint, src: ArrayBufferView, nbytes: number): Promise<void> {
    this.h2d(addr, src, nbytes);
  }

  d2d(dst: bigint, src: bigint, nbytes: number): void {
    this.#check("d2d");
    const d = this.#resolve("d2d", dst, nbytes), s = this.#resolve("d2d", src, nbytes);
    if (nbytes === 0 || d === s) return;
    this.#when(() => this.#copyBytes(d, s, nbytes));
  }

  /** A byte copy inside the arena with the device's copy kernel (copyBufferToBuffer cannot copy a buffer onto itself). */
  #copyBytes(dst: number, src: number, nbytes: number): void {
    const overlap = dst < src + nbytes && src < dst + nbytes;
    if (overlap) {
      // through a temporary range
      const t = this.#allocate(nbytes, false);
      this.#copyBytes(t.offset, src, nbytes);
      this.#copyBytes(dst, t.offset, nbytes);
      this.#release(t);
      return;
    }
    const d = this.#gpu!.device;
    this.#copyPipeline ??= d.createComputePipeline({ layout: this.#layout!, compute: { module: d.createShaderModule({ code: COPY_WGSL }), entryPoint: "tspto_copy" }, label: "tspto device copy" });
    const words = new Int32Array(UNIFORM_STRIDE / 4);
    words[UNIFORM_HEADER_WORDS] = src; words[UNIFORM_HEADER_WORDS + 1] = dst; words[UNIFORM_HEADER_WORDS + 2] = nbytes;
    this.#ensureUniforms(UNIFORM_STRIDE);
    this.#flush();
    this.#gpu!.device.queue.writeBuffer(this.#uniforms!, 0, words.buffer, 0, UNIFORM_STRIDE);
    const words32 = Math.ceil(((dst % 4) + nbytes) / 4);
    const pass = this.#enc().beginComputePass();
    pass.setPipeline(this.#copyPipeline);
    pass.setBindGroup(0, this.#group(), [0]);
    pass.dispatchWorkgroups(Math.min(MAX_WORKGROUPS, Math.ceil(words32 / 256)));
    pass.end();
    this.#flush();
  }

  // ---------------------------------------------------------------- modules
  load(artifact: ArtifactRef): number {
    this.#check("load");
    const src = this.#host.readModule(artifact);
    const index = new Map(src.kernels.map((k, i) => [k.name, i]));
    for (const k of src.kernels) {
      if (k.uniformWords * 4 > UNIFORM_STRIDE) {
        throw new TsptoCompileError("E_LIMIT", `kernel '${k.name}' takes ${k.params.length} arguments; a webgpu dispatch passes at most ${UNIFORM_STRIDE / 4 - UNIFORM_HEADER_WORDS}`, undefined,
          "pass fewer tensors and scalars to one pl.at scope (split it into several)");
      }
    }
    const mod: Loaded = { id: this.#nextModule++, src, orch: compileOrchestration(src.program, index), pipelines: null, checked: null };
    this.#modules.set(mod.id, mod);
    this.#s.moduleLoads++;
    this.#when(() => this.#pipelines(mod));
    return mod.id;
  }

  unload(module: number): void {
    this.#modules.delete(module);
  }

  /** The module's pipelines (created once the device is open), their WGSL checked in the background. */
  #pipelines(mod: Loaded): GpuComputePipeline[] {
    if (mod.pipelines) return mod.pipelines;
    const d = this.#gpu!.device;
    const limit = d.limits.maxComputeWorkgroupStorageSize ?? 16384;
    const checks: Promise<TsptoError | null>[] = [];
    mod.pipelines = mod.src.kernels.map((k) => {
      if (k.workgroupBytes > limit) {
        throw new TsptoCompileError("E_LIMIT", `kernel '${k.name}' needs ${k.workgroupBytes} bytes of workgroup memory; this adapter allows ${limit} (maxComputeWorkgroupStorageSize)`, undefined,
          "use smaller tiles in the kernel");
      }
      d.pushErrorScope("validation");
      const sm = d.createShaderModule({ code: k.source, label: k.symbol });
      const p = d.createComputePipeline({ layout: this.#layout!, compute: { module: sm, entryPoint: k.symbol }, label: k.symbol });
      const where = `${mod.src.dir}/${k.file}`;
      checks.push(Promise.all([sm.getCompilationInfo(), d.popErrorScope()]).then(([info, e]) => {
        const errors = info.messages.filter((m) => m.type === "error");
        if (!errors.length && !e) return null;
        const lines = errors.map((m) => `${where}:${m.lineNum}:${m.linePos}: ${m.message}`);
        return new TsptoCompileError("E_WGSL", `the WebGPU implementation rejected the generated WGSL of kernel '${k.name}'${lines.length ? `:\n${lines.join("\n")}` : `: ${e!.message}`}`, undefined,
          "this is a bug in tspto's WGSL code generator: report it with the kernel source above (or run on the cpu / interp platform)");
      }));
      return p;
    });
    mod.checked = Promise.all(checks).then((es) => es.find((x) => x !== null) ?? null);
    return mod.pipelines;
  }

  #module(op: string, module: number): Loaded {
    this.#check(op);
    const m = this.#modules.get(module);
    if (!m) throw err("E_MODULE", `${op}: unknown module id ${module} (never loaded or already unloaded)`);
    return m;
  }

  // ---------------------------------------------------------------- launches
  launch(module: number, args: readonly unknown[], kinds: Uint8Array): number {
    const mod = this.#module("launch", module);
    for (let i = 0; i < kinds.length; i++) {
      if (kinds[i] === ArgKind.HostOut || kinds[i] === ArgKind.HostInOut) {
        throw asyncError(`a launch of '${mod.src.name}' with a host output ('${mod.src.program.entryFunction.params[i]?.var.name ?? i}')`,
          "await worker.runAsync(compiled, ...args), await handle.callAsync(...args) or await kernel.callAsync(...args); or pass DeviceTensors for the outputs and read them with copyFromAsync");
      }
    }
    const staged = this.#stage(mod, args, kinds);
    this.#when(() => { this.#record(mod, staged, false); });
    return 0;
  }

  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array): Promise<number> {
    let mod: Loaded, staged: Staged;
    try {
      mod = this.#module("launchAsync", module);
      staged = this.#stage(mod, args, kinds);
    } catch (e) {
      return Promise.reject(e);
    }
    // recorded in call order (now, or when the device opens), then waited for
    let rec: Recorded | null = null;
    let fail: unknown = null;
    this.#when(() => { try { rec = this.#record(mod, staged, true); } catch (e) { fail = e; } });
    return this.#opening.then(async () => {
      this.#check("launchAsync");
      if (fail) throw fail;
      return this.#finish(rec!);
    });
  }

  /**
   * A launch's arguments as orchestration values, with host inputs copied now (an input
   * changed after the call never changes the result) into launch staging of the arena.
   */
  #stage(mod: Loaded, args: readonly unknown[], kinds: Uint8Array): Staged {
    const entry = mod.src.program.entryFunction;
    if (args.length < entry.params.length) throw new TsptoArgumentError("E_ARG", `launch: '${entry.name}' takes ${entry.params.length} arguments, got ${args.length}`);
    const vals: OrchValue[] = [];
    const temps: Allocation[] = [];
    const outs: OutCopy[] = [];
    const writes: { off: number; data: Uint8Array; addr: bigint }[] = [];
    try {
      entry.params.forEach((p, i) => {
        const t = p.var.type;
        const a = args[i], kind = kinds[i];
        if (t.kind !== "tensor") { vals.push(kind === ArgKind.Bool ? Boolean(a) : Number(a)); return; }
        const shape = t.shape as readonly number[];
        const nbytes = shape.reduce((x, y) => x * y, 1) * ELEM_BYTES[t.dtype];
        if (kind === ArgKind.Device) {
          vals.push({ offset: this.#resolve(`launch argument #${i + 1}`, a as bigint, nbytes), dtype: t.dtype, shape });
          return;
        }
        const host = a as ArrayBufferView;
        if (!ArrayBuffer.isView(host) || host.byteLength < nbytes) {
          throw new TsptoArgumentError("E_HOST_VIEW", `launch: argument #${i + 1} host buffer has ${ArrayBuffer.isView(host) ? host.byteLength : 0} bytes, ${nbytes} needed (detached or shrunk?)`);
        }
        const st = this.#allocate(nbytes, kind === ArgKind.HostOut);
        temps.push(st);
        if (kind !== ArgKind.HostOut) {
          writes.push({ off: st.offset, data: new Uint8Array(host.buffer, host.byteOffset, nbytes).slice(), addr: (BigInt(st.gen) << GEN_SHIFT) | BigInt(st.offset) });
          this.#s.h2dBytes += nbytes;
        }
        if (kind !== ArgKind.HostIn) outs.push({ view: host, offset: st.offset, nbytes, index: i });
        vals.push({ offset: st.offset, dtype: t.dtype, shape });
      });
    } catch (e) {
      for (const t of temps) this.#release(t);
      throw e;
    }
    return { vals, temps, outs, writes };
  }

  /** Runs the orchestration, records the launch's commands and submits them; `readback`: copy outputs and the failure record out. */
  #record(mod: Loaded, staged: Staged, readback: boolean): Recorded {
    const g = this.#gpu!;
    const d = g.device;
    const pipelines = this.#pipelines(mod);
    // the launch's own validation errors (an awaited launch reports them; a queued one at the next wait)
    d.pushErrorScope("validation");
    let scoped = true;
    const closeScope = () => {
      scoped = false;
      const scope = d.popErrorScope();
      if (!readback) void scope.then((e) => { if (e) this.#uncaptured ??= e.message; }, () => undefined);
      return scope;
    };
    const temps = [...staged.temps];
    const dispatches: Dispatch[] = [];
    try {
      // staged host inputs (queue order: before this launch's commands)
      this.#ensureArena(this.#top);
      this.#flush();
      for (const w of staged.writes) this.#writePadded(w.off, w.data);
      let gscratch = 0;
      mod.orch(staged.vals, {
        create: (dtype, shape) => {
          const nbytes = shape.reduce((x, y) => x * y, 1) * ELEM_BYTES[dtype];
          const a = this.#allocate(nbytes, true);
          temps.push(a);
          return { offset: a.offset, dtype, shape };
        },
        call: (k, args, spmd, span) => {
          const kern = mod.src.kernels[k];
          // this dispatch's uniform slice, in the host copy of the launch's uniforms
          const at = dispatches.length * SLICE_WORDS;
          if (at + SLICE_WORDS > this.#uniHost.length) {
            const grown = new Int32Array(2 * this.#uniHost.length);
            grown.set(this.#uniHost);
            this.#uniHost = grown;
          }
          const u = this.#uniHost;
          let grid = 1;
          if (spmd) {
            const trips = Math.max(0, Math.ceil(((spmd.stop ?? 0) - spmd.start) / spmd.step));
            u[at + U_LO_SLOT] = spmd.lo; u[at + U_HI_SLOT] = spmd.hi; u[at + U_START] = spmd.start; u[at + U_STEP] = spmd.step; u[at + U_TRIPS] = trips;
            grid = Math.max(1, Math.min(trips, MAX_WORKGROUPS, kern.globalScratch ? Math.floor(GSCRATCH_BUDGET / Math.max(1, kern.scratchBytes)) : MAX_WORKGROUPS));
          } else {
            u[at + U_LO_SLOT] = -1; u[at + U_HI_SLOT] = -1; u[at + U_START] = 0; u[at + U_STEP] = 0; u[at + U_TRIPS] = 0;
          }
          u[at + U_GSCRATCH] = 0;
          u[at + U_MODULE] = mod.id;
          packSlots(u, at, kern, args, span);
          if (kern.globalScratch) gscratch = Math.max(gscratch, grid * kern.scratchBytes);
          dispatches.push({ kernel: k, grid, gscratch: kern.globalScratch });
        },
      });
      if (gscratch > 0) {
        const gs = this.#allocate(gscratch, false);
        temps.push(gs);
        dispatches.forEach((x, i) => { if (x.gscratch) this.#uniHost[i * SLICE_WORDS + U_GSCRATCH] = gs.offset / 4; });
      }
      this.#ensureArena(this.#top);
      // one uniform slice per dispatch, written at once
      const uniBytes = Math.max(1, dispatches.length) * UNIFORM_STRIDE;
      this.#ensureUniforms(uniBytes);
      // the dispatches: one compute pass, or one per dispatch when timing each (DFX swimlane)
      const perDispatch = this.#recordMask !== 0 && g.timestamps && readback;
      const timed = g.timestamps && (readback || perDispatch);
      const passes = dispatches.length === 0 ? 0 : perDispatch ? dispatches.length : 1;
      if (timed && passes > 0) this.#ensureQueries(2 * passes);
      const group = this.#group();
      this.#flush();
      d.queue.writeBuffer(this.#uniforms!, 0, this.#uniHost.buffer, 0, uniBytes);
      const e = this.#enc();
      let pass = null as ReturnType<GpuCommandEncoder["beginComputePass"]> | null;
      let prev: GpuComputePipeline | null = null;
      const offset = this.#dynOffset;
      dispatches.forEach((x, i) => {
        if (!pass || perDispatch) {
          if (pass) pass.end();
          const q = perDispatch ? i : 0;
          pass = e.beginComputePass(timed ? { timestampWrites: { querySet: this.#querySet!, beginningOfPassWriteIndex: 2 * q, endOfPassWriteIndex: 2 * q + 1 } } : undefined);
          prev = null;
        }
        const p = pipelines[x.kernel];
        if (p !== prev) { pass.setPipeline(p); prev = p; }
        offset[0] = i * UNIFORM_STRIDE;
        pass.setBindGroup(0, group, offset, 0, 1);
        pass.dispatchWorkgroups(x.grid);
      });
      if (pass) (pass as { end(): void }).end();
      let rb: GpuBuffer | null = null, rbSize = 0, errAt = 0, tsAt = 0;
      let places: number[] = [];
      if (readback) {
        let at = 0;
        places = staged.outs.map((o) => { const p = at; at = ceil(at + ceil(o.nbytes, 4), 256); return p; });
        errAt = at;
        tsAt = ceil(errAt + ERR_WORDS * 4, 256);
        rbSize = tsAt + (timed ? 16 * passes : 0);
        rb = this.#readback(rbSize);
        staged.outs.forEach((o, k) => { if (o.nbytes > 0) e.copyBufferToBuffer(this.#mem!, o.offset, rb!, places[k], ceil(o.nbytes, 4)); });
        e.copyBufferToBuffer(this.#errBuf!, 0, rb, errAt, ERR_WORDS * 4);
        if (timed && passes > 0) {
          e.resolveQuerySet(this.#querySet!, 0, 2 * passes, this.#resolveBuf!, 0);
          e.copyBufferToBuffer(this.#resolveBuf!, 0, rb, tsAt, 16 * passes);
        }
      }
      const submitNs = this.#host.nowNs();
      this.#flush();
      const scope = closeScope();
      this.#s.launches++;
      this.#s.tasksRun += dispatches.length;
      return { scope, outs: staged.outs.map((o, k) => ({ ...o, offset: places[k] ?? 0 })), readback: rb, rbSize, errAt, tsAt, passes: timed ? passes : 0, dispatches, submitNs, mod };
    } catch (e) {
      this.#encoder = null; // nothing of a launch that failed while it was recorded is submitted
      throw e;
    } finally {
      if (scoped) void closeScope();
      // released at once: the queue runs this launch before anything reuses the ranges
      for (const t of temps) this.#release(t);
    }
  }

  #writePadded(off: number, data: Uint8Array): void {
    if (data.byteLength === 0) return;
    let bytes = data;
    if (bytes.byteLength % 4 !== 0) { bytes = new Uint8Array(ceil(data.byteLength, 4)); bytes.set(data); }
    this.#gpu!.device.queue.writeBuffer(this.#mem!, off, bytes);
  }

  /** Waits for a recorded launch: outputs to their host views, its failure record, its device time. */
  async #finish(r: Recorded): Promise<number> {
    const rb = r.readback!;
    const checked = r.mod.checked ? await r.mod.checked : null;
    const rejected = await r.scope;
    await this.#map(rb);
    const doneNs = this.#host.nowNs();
    try {
      if (checked) throw checked;
      if (rejected) {
        throw new TsptoKernelError("E_WEBGPU", `the WebGPU implementation rejected the launch of '${r.mod.src.name}' (nothing of it ran): ${rejected.message}`, undefined,
          "if the message names a generated kernel, this is a bug in tspto: report it");
      }
      const bytes = new Uint8Array(rb.getMappedRange(0, r.rbSize));
      this.#checkFailure(new Uint32Array(bytes.buffer, bytes.byteOffset + r.errAt, ERR_WORDS), r.mod);
      for (const o of r.outs) {
        if (o.view.byteLength < o.nbytes) throw new TsptoArgumentError("E_HOST_VIEW", `launch: an output host buffer shrank to ${o.view.byteLength} bytes during the launch`);
        new Uint8Array(o.view.buffer, o.view.byteOffset, o.nbytes).set(bytes.subarray(o.offset, o.offset + o.nbytes));
        this.#s.d2hBytes += o.nbytes;
      }
      let ns = doneNs - r.submitNs;
      if (r.passes > 0) {
        const ts = new BigUint64Array(bytes.buffer.slice(bytes.byteOffset + r.tsAt, bytes.byteOffset + r.tsAt + 16 * r.passes));
        const t0 = ts[0], t1 = ts[2 * r.passes - 1];
        if (t1 >= t0 && t0 > 0n) ns = Number(t1 - t0);
        if (this.#recordMask !== 0) this.#trace = this.#traceOf(r, ts, doneNs);
      } else if (this.#recordMask !== 0) {
        this.#trace = this.#traceOf(r, null, doneNs);
      }
      return ns;
    } finally {
      rb.unmap();
      this.#giveBack(rb);
    }
  }

  /** The failure record: a kernel's run-time window check failed (first failure since the last wait wins). */
  #checkFailure(rec: Uint32Array, mod: Loaded | null): void {
    if (this.#uncaptured) {
      const m = this.#uncaptured;
      this.#uncaptured = null;
      throw new TsptoKernelError("E_WEBGPU", `the WebGPU implementation reported an error: ${m}`, undefined,
        "a launch's commands were rejected (nothing of it ran); if the message names a generated kernel, this is a bug in tspto: report it");
    }
    if (rec[0] === 0) return;
    const site = rec[1], modId = rec[2];
    const offs = Array.from(rec.subarray(3, 11), (w) => w | 0);
    this.#gpu!.device.queue.writeBuffer(this.#errBuf!, 0, new Uint32Array(ERR_WORDS).buffer, 0, ERR_WORDS * 4);
    const m = this.#modules.get(modId) ?? mod;
    const s = m?.src.sites[site];
    if (!s) throw new TsptoKernelError("E_KERNEL", "kernel failure: a webgpu kernel recorded a failure of an unloaded program", undefined, KERNEL_HINT);
    const rank = s.shape.length;
    const off = offs.slice(0, rank);
    let axis = 0;
    for (let i = 0; i < rank; i++) if (off[i] < 0 || off[i] > s.dims[i] - s.shape[i]) { axis = i; break; }
    throw new TsptoKernelError("E_KERNEL", `kernel failure: ${s.where}: ${s.what} window [${off.join(", ")}] + [${s.shape.join(", ")}] is outside ${s.kind} '${s.name}' of shape [${s.dims.join(", ")}] (axis ${axis})`,
      undefined, KERNEL_HINT);
  }

  #traceOf(r: Recorded, ts: BigUint64Array | null, doneNs: number): DeviceTrace {
    const base = ts && ts[0] > 0n ? ts[0] : 0n;
    const tasks: DeviceTraceTask[] = r.dispatches.map((x, i) => {
      const k = r.mod.src.kernels[x.kernel];
      const per = ts && r.passes === r.dispatches.length;
      const start = per ? Number(ts![2 * i] - base) : 0, end = per ? Number(ts![2 * i + 1] - base) : 0;
      return { id: i, kernel: k.symbol, scope: 0, core: 0, submitNs: 0, startNs: start, endNs: end, cycles: -1, instructions: -1, accesses: [] };
    });
    const last = tasks.length ? Math.max(...tasks.map((t) => t.endNs)) : doneNs - r.submitNs;
    return { launchStartNs: 0, entryEndNs: 0, launchEndNs: last, mask: this.#recordMask, pmuError: "no hardware counters on webgpu", argSlots: [], orchBuffers: [], tasks, edges: [] };
  }

  // ---------------------------------------------------------------- device objects
  #group(): GpuBindGroup {
    if (this.#bindGroup) return this.#bindGroup;
    this.#ensureUniforms(UNIFORM_STRIDE);
    this.#ensureArena(ARENA_MIN);
    this.#bindGroup = this.#gpu!.device.createBindGroup({
      layout: this.#bgl!,
      entries: [
        { binding: BINDING_UNIFORMS, resource: { buffer: this.#uniforms!, offset: 0, size: UNIFORM_STRIDE } },
        { binding: BINDING_MEMORY, resource: { buffer: this.#mem!, offset: 0, size: this.#memSize } },
        { binding: BINDING_ERRORS, resource: { buffer: this.#errBuf!, offset: 0, size: ERR_WORDS * 4 } },
      ],
    });
    return this.#bindGroup;
  }

  #ensureUniforms(bytes: number): void {
    if (bytes <= this.#uniformSize) return;
    const size = Math.max(16 * UNIFORM_STRIDE, ceil(bytes, UNIFORM_STRIDE), 2 * this.#uniformSize);
    if (size > (this.#gpu!.device.limits.maxBufferSize ?? 256 * 2 ** 20)) throw err("E_LIMIT", `a launch of ${bytes / UNIFORM_STRIDE} dispatches needs ${bytes} bytes of uniforms, more than the adapter's maxBufferSize`);
    this.#flush();
    this.#uniforms?.destroy();
    this.#uniforms = this.#gpu!.device.createBuffer({ size, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: "tspto dispatch uniforms" });
    this.#uniformSize = size;
    this.#bindGroup = null;
  }

  #ensureQueries(count: number): void {
    if (count <= this.#queryCount) return;
    const n = Math.min(4096, Math.max(64, 2 ** Math.ceil(Math.log2(count))));
    if (count > n) throw err("E_LIMIT", `a launch timed per dispatch has ${count / 2} dispatches; at most 2048 are timed one by one (DFX swimlane)`);
    this.#flush();
    this.#querySet?.destroy();
    this.#resolveBuf?.destroy();
    const d = this.#gpu!.device;
    this.#querySet = d.createQuerySet({ type: "timestamp", count: n });
    this.#resolveBuf = d.createBuffer({ size: 8 * n, usage: BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC, label: "tspto timestamps" });
    this.#queryCount = n;
  }

  #readback(size: number): GpuBuffer {
    const cls = Math.max(256, 2 ** Math.ceil(Math.log2(size)));
    const pool = this.#readbacks.get(cls);
    if (pool?.length) return pool.pop()!;
    return this.#gpu!.device.createBuffer({ size: cls, usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST, label: "tspto readback" });
  }

  #giveBack(b: GpuBuffer): void {
    if (this.#closed) { b.destroy(); return; }
    const list = this.#readbacks.get(b.size) ?? [];
    if (list.length < 4) { list.push(b); this.#readbacks.set(b.size, list); } else b.destroy();
  }

  async #map(b: GpuBuffer): Promise<void> {
    try {
      await b.mapAsync(MapMode.READ);
    } catch (e) {
      if (this.#closed) throw err("E_CLOSED", "the device was closed while a read back was queued", "construct a new ChipWorker");
      throw err("E_WEBGPU", `reading device memory back failed: ${(e as Error)?.message ?? String(e)}${this.#uncaptured ? ` (${this.#uncaptured})` : ""}`);
    }
  }

  // ---------------------------------------------------------------- stats, DFX, lifecycle
  stats(): DeviceStats {
    return { ...this.#s, bytesInUse: this.#inUse, liveAllocations: this.#allocs.size - 0, capacity: this.#capacity, modulesLoaded: this.#modules.size };
  }

  /** Records a swimlane of dispatches (timestamp queries, one compute pass per dispatch while recording). */
  get records(): boolean { return true; }
  setRecording(mask: number): void { this.#recordMask = mask; }
  takeTrace(): DeviceTrace | null {
    const t = this.#trace;
    this.#trace = null;
    return t;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#allocs.clear();
    this.#modules.clear();
    this.#pending = [];
    this.#inUse = 0;
    const g = this.#gpu;
    this.#gpu = null;
    if (g) {
      try { this.#encoder = null; g.device.destroy(); } catch { /* already lost */ }
    }
    for (const list of this.#readbacks.values()) for (const b of list) { try { b.destroy(); } catch { /* gone with the device */ } }
    this.#readbacks.clear();
  }

  get closed(): boolean { return this.#closed; }
}

interface Staged { readonly vals: OrchValue[]; readonly temps: Allocation[]; readonly outs: OutCopy[]; readonly writes: { off: number; data: Uint8Array; addr: bigint }[] }

const KERNEL_HINT = "the program failed while it ran (a dynamic window out of bounds); host Out buffers were not written";

export function asyncError(what: string, instead: string): TsptoRuntimeError {
  return new TsptoRuntimeError("E_ASYNC", `${what} has to wait for the GPU on the webgpu platform, so it has no synchronous form`, undefined, `use ${instead}`);
}

const F32 = new Float32Array(1), I32 = new Int32Array(F32.buffer);
/** A dispatch's argument slots (after the header): element offsets, i32 / f32 bits / bools. */
function packSlots(words: Int32Array, at: number, k: WebGpuKernelEntry, args: readonly OrchValue[], span: { file: string; line: number; col: number }): void {
  const ps = k.params;
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i];
    const a = args[i];
    const w = at + UNIFORM_HEADER_WORDS + i;
    if (p.kind === "tensor") {
      const t = a as OrchTensor;
      const off = t.offset, eb = ELEM_BYTES[t.dtype];
      if (off % eb !== 0) throw new TsptoArgumentError("E_ALIGN", `'${k.name}': tensor argument '${p.name}' starts at byte ${off}, not a multiple of its ${eb}-byte elements`);
      words[w] = off / eb;
    } else if (p.kind === "float") {
      F32[0] = Number(a);
      words[w] = I32[0];
    } else if (p.kind === "bool") {
      words[w] = a ? 1 : 0;
    } else {
      const v = Number(a);
      if (!Number.isInteger(v) || v < -(2 ** 31) || v > 2 ** 31 - 1) {
        throw new TsptoArgumentError("E_RANGE", `'${k.name}': scalar argument '${p.name}' = ${v} does not fit the 32-bit integers of the webgpu platform (${span.file}:${span.line}:${span.col})`,
          undefined, "keep integer scalars passed to kernels within [-2147483648, 2147483647] on webgpu");
      }
      words[w] = v;
    }
  }
}

/** The device copy kernel: bytes [src, src + n) -> [dst, dst + n) of the arena, one destination word per invocation. */
const COPY_WGSL = `struct U { w: array<vec4<i32>, ${UNIFORM_STRIDE / 16}> }
@group(0) @binding(${BINDING_UNIFORMS}) var<uniform> u: U;
@group(0) @binding(${BINDING_MEMORY}) var<storage, read_write> mem: array<u32>;
fn word(i: i32) -> i32 { return u.w[i >> 2][i & 3]; }
fn byteAt(b: i32) -> u32 { return (mem[b >> 2u] >> (u32(b & 3) * 8u)) & 0xffu; }
@compute @workgroup_size(256)
fn tspto_copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let src = word(${UNIFORM_HEADER_WORDS}); let dst = word(${UNIFORM_HEADER_WORDS + 1}); let n = word(${UNIFORM_HEADER_WORDS + 2});
  let first = dst >> 2u; let last = (dst + n - 1) >> 2u;
  for (var w = first + i32(gid.x); w <= last; w += i32(nwg.x) * 256) {
    var v = mem[w];
    for (var k = 0; k < 4; k++) {
      let b = w * 4 + k;
      if (b >= dst && b < dst + n) {
        let sh = u32(k) * 8u;
        v = (v & ~(0xffu << sh)) | (byteAt(src + b - dst) << sh);
      }
    }
    mem[w] = v;
  }
}`;


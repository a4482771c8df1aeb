// The webgpu platform's Device (src/targets/target.ts) over a WebGPU GPUDevice: Dawn in Node
// (./node.ts), navigator.gpu in a browser. It imports no Node built-in.
//
// Memory. Device memory is one storage buffer (the arena), grown on demand up to the adapter's
// maxStorageBufferBindingSize and maxBufferSize: DeviceTensors, a launch's staging of host
// arguments, its createTensor buffers and the global scratch of big tiles are ranges of it, so
// every kernel binds the same three resources (its uniform slice, the arena, the failure record)
// and two parameters may share a buffer (WebGPU forbids a writable binding aliasing another in
// one dispatch; with one binding nothing aliases). An address is (allocation generation << 40 |
// byte offset): never handed out twice, so a freed or foreign address is rejected, and a view's
// interior address finds its allocation at once. Allocations are 64-byte aligned and zero-filled
// (a reused range is cleared on the queue before anything else touches it).
//
// Growth. An allocation past the arena queues a growth: a bigger buffer is created inside
// out-of-memory and validation error scopes, and nothing on the queue touches it until the scopes
// said it exists (the queue is held meanwhile, as before the device opens); then the old contents
// are copied into it and the old buffer is destroyed. When the implementation cannot back it, a
// smaller one that holds the allocations so far is tried; when that fails too the arena stays as
// it was (every resident tensor intact), the capacity comes down to what exists, later
// allocations past it are refused with E_DEVICE_OOM at once, and the allocations that did not
// fit fail with E_DEVICE_OOM wherever they are used. No command ever names a buffer that failed
// (so the implementation reports nothing else), and uncaptured errors are reported by the next
// wait, not printed.
//
// Order. Everything goes to the device's one queue, in call order: writeBuffer (h2d, staging,
// uniforms) runs when called, recorded commands (clears, device copies, a launch's compute pass)
// when submitted, and each launch submits before the next call writes anything, so a range freed
// under a queued launch can be reused at once: the queue runs the launch first. That is how
// frees under queued launches are deferred here (no bookkeeping), and why one uniform buffer
// serves every launch: the next launch's writeBuffer runs after this launch's dispatches. A
// launch's orchestration runs when it is called (its allocations, dispatches and uniforms are
// known at once); its commands are recorded then, or in order once the queue is no longer held.
//
// Asynchrony. A launch whose results stay on the device is enqueued synchronously (launch);
// anything that reads device memory back waits for the GPU, so only the async forms do it
// (launchAsync, d2hAsync); the synchronous ones throw E_ASYNC naming them. Until the adapter
// and device are open (requestAdapter is asynchronous) every operation is queued in order and
// runs once they are; an open that fails rejects the next async operation (and makes every later
// one fail) with what to install.
//
// Waits. Every wait for the GPU (an awaited launch, a read back) ends when the device closes
// (E_CLOSED) and, with a launch timeout (RunConfig.launchTimeoutS), after that many seconds
// (E_LAUNCH_TIMEOUT): WebGPU cannot stop a running kernel, so the device is then given up (every
// later operation fails with E_LAUNCH_TIMEOUT). close() never waits for the GPU: a device with work
// still running is destroyed once that work is done (destroying it earlier would block until
// then).
import { TsptoArgumentError, TsptoCompileError, TsptoDeviceError, TsptoError, TsptoKernelError, TsptoOutOfMemoryError, TsptoRuntimeError, type Program } from "../../ir/index.js";
import type { ArtifactRef } from "../../artifact/index.js";
import type { FailSite } from "../../codegen/simt/index.js";
import {
  BINDING_ERRORS, BINDING_MEMORY, BINDING_UNIFORMS, ERR_WORDS, UNIFORM_HEADER_WORDS, U_GSCRATCH, U_HI_SLOT, U_LO_SLOT, U_MODULE, U_START, U_STEP, U_TRIPS,
  type WgslParam,
} from "../../codegen/wgsl/index.js";
import { ArgKind, oomHint, type Device, type DeviceOptions, type DeviceStats, type DeviceTrace, type DeviceTraceTask } from "../target.js";
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
/**
 * The arena stays this far below the adapter's maxBufferSize: Dawn backs a storage buffer with a
 * few bytes more than its size, so where the largest allocation the driver makes is maxBufferSize
 * (SwiftShader: 1 GiB) a buffer of exactly that size cannot be created.
 */
const ARENA_SLACK = 1 << 20;
const ARENA_USAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;
const ARENA_LABEL = "tspto device memory";
/** Bytes of every dispatch's uniform slice (dynamic offsets are 256-byte aligned). */
const UNIFORM_STRIDE = 256;
/** Global scratch of one launch: at most this many bytes (bigger kernels get fewer workgroups, each more bands). */
const GSCRATCH_BUDGET = 64 << 20;
const MAX_WORKGROUPS = 65535;
const SLICE_WORDS = UNIFORM_STRIDE / 4;
const ELEM_BYTES: Record<string, number> = { float32: 4, int32: 4, float16: 2, bfloat16: 2, int16: 2, int8: 1, uint8: 1, bool: 1 };
/** The longest setTimeout delay (ms); a launch timeout beyond it waits without a timer. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const hex = (a: bigint) => `0x${a.toString(16)}`;
const err = (code: string, msg: string, hint?: string) => new TsptoDeviceError(code, msg, undefined, hint);
const ceil = (n: number, a: number) => Math.ceil(n / a) * a;
const firstLine = (m: string) => m.split("\n")[0].trim();

const OOM_HINT = oomHint("run on an adapter with more memory (a larger maxStorageBufferBindingSize / maxBufferSize)");
const TIMEOUT_HINT = "construct a new ChipWorker (the DeviceTensors of this one are lost); raise RunConfig.launchTimeoutS (0 = no limit) if launches are meant to run that long";

interface Allocation {
  readonly gen: number; readonly offset: number; readonly size: number; readonly reserved: number;
  /** Why it has no device memory (a growth of the arena that failed), else null. */
  lost: string | null;
}
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
/** A launch as its call left it: the orchestration ran, its ranges are allocated; #submit records its commands. */
interface Plan {
  readonly mod: Loaded;
  readonly staged: Staged;
  readonly dispatches: readonly Dispatch[];
  /** The dispatches' uniform slices: the shared host buffer, or a copy of them while the launch waits in the queue. */
  uni: Int32Array<ArrayBuffer>;
  readonly readback: boolean;
  readonly recordMask: number;
  /** The end of the highest arena range the launch uses (arguments, staging, temporaries). */
  readonly end: number;
  readonly timeoutS: number;
}
interface Recorded {
  readonly scope: Promise<Caught | null>; readonly outs: readonly OutCopy[]; readonly readback: GpuBuffer | null; readonly rbSize: number;
  readonly errAt: number; readonly tsAt: number; readonly passes: number; readonly dispatches: readonly Dispatch[]; readonly submitNs: number; readonly mod: Loaded;
  readonly recordMask: number; readonly timeoutS: number;
  /** Submits up to and including this launch's. */
  readonly serial: number;
}
/** What the error scopes of an operation caught: the first error, and whether the implementation ran out of memory. */
interface Caught { readonly oom: boolean; readonly message: string }
/** An operation waiting for the queue: `fail` (async ones) hears why it will never run. */
interface Pending { readonly run: () => void; readonly fail: ((e: TsptoError) => void) | null }
/** What ends a wait early: the error for it, from the wait's own words. */
type Abort = (make: (what: string) => TsptoError) => void;

export class WebGpuDevice implements Device {
  readonly asynchronous = true;
  readonly #host: WebGpuHost;
  #gpu: OpenedGpu | null = null;
  #openError: TsptoError | null = null;
  #opening: Promise<void>;
  /** Operations called while the queue is held (before the device is open, while the arena grows), in order. */
  #pending: Pending[] = [];
  /** The arena is growing: the queue is held until the new buffer is known to exist. */
  #growing = false;
  #closed = false;
  /** Why the device was given up (a wait ran past the launch timeout); every later operation fails with it. */
  #gaveUp: string | null = null;
  /** The waits for the GPU in progress (each ends when the device closes or is given up). */
  readonly #waits = new Set<Abort>();
  /** Submits so far, and those a finished wait saw complete: the GPU is idle when they agree. */
  #submits = 0;
  #doneSubmits = 0;
  /** RunConfig.launchTimeoutS of the worker: the limit of every wait (a launch may bring its own). */
  readonly #timeoutS: number;
  /** A failure of an operation that ran on the queue and was not awaited: reported by the next wait. */
  #deferred: TsptoError | null = null;

  // ---------------------------------------------------------------- arena
  #mem: GpuBuffer | null = null;
  #memSize = 0;
  /** The arena's size once the growths queued so far have run. */
  #planned = 0;
  #capacity: number;
  /** What the implementation said when the arena could not grow (the capacity came down to what exists). */
  #arenaFailure: string | null = null;
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
  #uniHost: Int32Array<ArrayBuffer> = new Int32Array(64 * SLICE_WORDS);
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
    this.#timeoutS = opts.launchTimeoutS ?? 0;
    // until the device is open: WebGPU's guaranteed maxStorageBufferBindingSize
    this.#capacity = Math.floor(Math.min(opts.memoryBytes, 128 * 2 ** 20) / 64) * 64;
    this.#opening = host.open().then((g) => this.#opened(g), (e: unknown) => {
      this.#openError = e instanceof TsptoError ? e : err("E_WEBGPU", `opening the WebGPU device failed: ${(e as Error)?.message ?? String(e)}`);
      const ops = this.#pending;
      this.#pending = [];
      for (const p of ops) p.fail?.(this.#openError);
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
    const limit = Math.min(d.limits.maxStorageBufferBindingSize ?? 128 * 2 ** 20, (d.limits.maxBufferSize ?? 256 * 2 ** 20) - ARENA_SLACK);
    this.#capacity = Math.max(this.#top, Math.floor(Math.min(this.#memoryBytes, limit) / 64) * 64);
    // reported by the next wait, and not printed as well (Dawn prints an uncaptured error, a browser logs it, unless it is prevented)
    d.onuncapturederror = (ev) => { ev.preventDefault?.(); this.#uncaptured ??= ev.error.message; };
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
    // the arena, for everything queued so far, before any of it runs
    const size = Math.min(ceil(this.#capacity, 4), Math.max(ARENA_MIN, this.#planned));
    this.#planned = size;
    this.#pending.unshift({ run: () => this.#grow(size, this.#top), fail: null });
    this.#drain();
  }

  /** Nothing holds the queue: an operation runs when it is called. */
  #now(): boolean {
    return this.#gpu !== null && !this.#growing && this.#pending.length === 0;
  }

  /** Runs `run` now when nothing holds the queue, else queues it (in order); `fail` hears why it never runs. */
  #when(run: () => void, fail: ((e: TsptoError) => void) | null = null): void {
    if (this.#now()) run();
    else if (this.#openError) fail?.(this.#openError);
    else this.#pending.push({ run, fail });
  }

  /** #when for an operation whose result is awaited. */
  #whenAsync<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => this.#when(() => { try { resolve(run()); } catch (e) { reject(e); } }, reject));
  }

  /** Runs the queued operations until something holds the queue again (a growth) or none is left. */
  #drain(): void {
    while (this.#pending.length > 0 && this.#gpu !== null && !this.#growing) {
      const p = this.#pending.shift()!;
      try { p.run(); } catch (e) { this.#defer(e); }
    }
  }

  /** A failure of an operation nobody awaits: the next wait reports it (the first one wins). */
  #defer(e: unknown): void {
    this.#deferred ??= e instanceof TsptoError ? e : new TsptoKernelError("E_WEBGPU", `a queued operation failed: ${(e as Error)?.message ?? String(e)}`);
  }

  /** Opens out-of-memory and validation error scopes; the function returned closes them and gives what they caught. */
  #scopes(): () => Promise<Caught | null> {
    const d = this.#gpu!.device;
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    return () => {
      const invalid = d.popErrorScope(), oom = d.popErrorScope();
      return Promise.all([invalid, oom]).then(([v, o]) => (o ? { oom: true, message: o.message } : v ? { oom: false, message: v.message } : null),
        (x: unknown) => ({ oom: false, message: (x as Error)?.message ?? String(x) }));
    };
  }

  #check(op: string): void {
    if (this.#closed) throw err("E_CLOSED", `${op}: device is closed`, "construct a new ChipWorker");
    if (this.#openError) throw this.#openError;
    if (this.#gaveUp !== null) throw this.#gaveUpError(op);
  }

  #gaveUpError(op: string): TsptoDeviceError {
    return err("E_LAUNCH_TIMEOUT", `${op}: the webgpu device was given up: ${this.#gaveUp}; WebGPU cannot stop a running kernel, so its queue and memory are unusable`, TIMEOUT_HINT);
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
      if (f.size < reserved || f.offset + reserved > this.#capacity) continue;
      offset = f.offset;
      if (f.size === reserved) this.#free.splice(i, 1);
      else this.#free[i] = { offset: f.offset + reserved, size: f.size - reserved };
      break;
    }
    if (offset < 0) {
      if (this.#top + reserved > this.#capacity) {
        const why = this.#arenaFailure !== null
          ? `the WebGPU implementation could not grow device memory past ${this.#capacity} bytes: ${this.#arenaFailure}`
          : "webgpu device memory is one storage buffer of at most the adapter's maxStorageBufferBindingSize and maxBufferSize";
        throw new TsptoOutOfMemoryError("E_DEVICE_OOM", `device out of memory: requested ${nbytes} bytes, ${this.#inUse} bytes in use of ${this.#capacity} bytes capacity (${why})`, undefined, OOM_HINT);
      }
      offset = this.#top;
      this.#top += reserved;
    }
    const a: Allocation = { gen: ++this.#gen, offset, size: nbytes, reserved, lost: null };
    this.#allocs.set(a.gen, a);
    const end = offset + reserved;
    if (end > this.#planned) {
      // (before the device opens, one growth covers everything: #opened queues it first)
      const size = Math.min(ceil(this.#capacity, 4), Math.max(ARENA_MIN, end, 2 * this.#planned));
      this.#planned = size;
      if (this.#gpu) this.#when(() => this.#grow(size, end));
    }
    // (a range may have been used before: a freed one, or one below a top that came down)
    if (zero) this.#when(() => { if (end <= this.#memSize) this.#enc().clearBuffer(this.#mem!, offset, reserved); });
    return a;
  }

  /**
   * On the queue: the arena grows to `size` bytes (or, where the implementation cannot back that,
   * to what the allocations so far need, at least `end`), holding the queue until the error scopes
   * say whether the new buffer exists; nothing touches it before. Then the old contents are copied
   * into it. When it cannot be created the arena stays as it is (every resident byte intact), the
   * capacity comes down to it, and the allocations past it are lost (E_DEVICE_OOM where used).
   */
  #grow(size: number, end: number): void {
    if (size <= this.#memSize) return;
    const d = this.#gpu!.device;
    const need = Math.min(size, Math.max(ceil(end, 4), ceil(this.#top, 4)));
    const tries = need < size ? [size, need] : [size];
    this.#flush();
    this.#growing = true;
    void (async () => {
      let mem: GpuBuffer | null = null, why = "";
      for (const s of tries) {
        const caught = this.#scopes();
        const b = d.createBuffer({ size: s, usage: ARENA_USAGE, label: ARENA_LABEL });
        const e = await caught();
        if (!e) { mem = b; break; }
        b.destroy();
        why ||= firstLine(e.message);
      }
      if (this.#closed || this.#gaveUp !== null || this.#gpu === null) { mem?.destroy(); return; }
      if (mem) {
        if (this.#mem) {
          this.#enc().copyBufferToBuffer(this.#mem, 0, mem, 0, this.#memSize);
          this.#flush();
          this.#mem.destroy(); // after the copy: the queue runs it first
        }
        this.#mem = mem;
        this.#memSize = mem.size;
        this.#bindGroup = null;
      }
      if (why) {
        // what exists is the capacity now: an allocation past it is refused when it is made, not lost later
        this.#arenaFailure = `${why} (asked for ${size} bytes)`;
        this.#capacity = this.#memSize;
        this.#planned = this.#memSize;
        const lost = `no device memory: growing webgpu device memory to ${size} bytes failed (${why}); it stays at ${this.#memSize} bytes`;
        for (const a of this.#allocs.values()) if (a.lost === null && a.offset + a.reserved > this.#memSize) a.lost = lost;
      }
      this.#growing = false;
      this.#drain();
    })().catch((e: unknown) => {
      this.#growing = false;
      this.#defer(e);
      this.#drain();
    });
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
    // (a device given up has nothing to release on the GPU: the bookkeeping only)
    if (this.#gaveUp === null) this.#check("free");
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

  /** The live allocation holding [addr, addr + nbytes), which must lie in it and have device memory. */
  #allocation(op: string, addr: bigint, nbytes: number): Allocation {
    this.#size(op, nbytes);
    if (typeof addr !== "bigint") throw new TsptoArgumentError("E_ARG", `${op}: address must be a bigint, got ${typeof addr}`);
    const a = this.#allocs.get(Number(addr >> GEN_SHIFT));
    const off = Number(addr & OFF_MASK);
    if (!a || off < a.offset || off > a.offset + a.size) throw err("E_ADDRESS", `${op}: ${hex(addr)} is not inside a live allocation (freed, never allocated, or past the end of one)`);
    if (nbytes > a.offset + a.size - off) {
      throw err("E_ADDRESS", `${op}: range [${hex(addr)}, ${hex(addr)} + ${nbytes}) leaves the allocation of ${a.size} bytes (${a.offset + a.size - off} bytes available from ${hex(addr)})`);
    }
    if (a.lost !== null) throw this.#lostError(op, a);
    return a;
  }

  /** The arena offset of [addr, addr + nbytes), which must lie in one live allocation. */
  #resolve(op: string, addr: bigint, nbytes: number): number {
    this.#allocation(op, addr, nbytes);
    return Number(addr & OFF_MASK);
  }

  #lostError(op: string, a: Allocation): TsptoOutOfMemoryError {
    return new TsptoOutOfMemoryError("E_DEVICE_OOM", `${op}: the allocation of ${a.size} bytes at ${hex((BigInt(a.gen) << GEN_SHIFT) | BigInt(a.offset))} has ${a.lost}`, undefined,
      "free it (freeTensor): the allocations made before it are intact; allocate less, or run on an adapter with more memory");
  }

  /** A queued operation found ranges past the arena that exists (a growth failed). */
  #pastArena(what: string): TsptoOutOfMemoryError {
    return new TsptoOutOfMemoryError("E_DEVICE_OOM", `${what} uses device memory past the ${this.#memSize} bytes that exist: growing webgpu device memory failed (${this.#arenaFailure ?? "unknown"}); nothing of it ran`,
      undefined, OOM_HINT);
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
    this.#submits++;
  }

  #view(op: string, v: ArrayBufferView, nbytes: number): Uint8Array {
    if (!ArrayBuffer.isView(v)) throw new TsptoArgumentError("E_ARG", `${op}: host must be a TypedArray`);
    if (v.byteLength < nbytes) throw new TsptoArgumentError("E_HOST_VIEW", `${op}: host buffer has ${v.byteLength} bytes, ${nbytes} requested`);
    return new Uint8Array(v.buffer, v.byteOffset, nbytes);
  }

  /** Host bytes -> the arena at `off` (writeBuffer: 4-byte aligned ranges; a tail inside an allocation's padding is padded). */
  #write(op: string, a: Allocation, off: number, bytes: Uint8Array): void {
    let data = bytes;
    if (off % 4 !== 0 || data.byteLength % 4 !== 0) {
      const end = ceil(off + data.byteLength, 4);
      if (off % 4 !== 0 || end > a.offset + a.reserved || off + data.byteLength !== a.offset + a.size) {
        throw new TsptoArgumentError("E_ALIGN", `${op}: webgpu writes device memory in 4-byte words; the range [${off - a.offset}, ${off - a.offset + data.byteLength}) of an allocation of ${a.size} bytes is not word-aligned`,
          undefined, "copy whole tensors, or ranges whose offset and length are multiples of 4 bytes");
      }
      const padded = new Uint8Array(end - off);
      padded.set(data);
      data = padded;
    } else if (!this.#now()) {
      data = data.slice(); // queued: the caller may change its buffer meanwhile
    }
    this.#when(() => {
      // (an allocation a failed growth left without memory says so where it is used)
      if (a.lost !== null || off + data.byteLength > this.#memSize) return;
      this.#flush();
      this.#gpu!.device.queue.writeBuffer(this.#mem!, off, data);
    });
  }

  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void {
    this.#check("h2d");
    const a = this.#allocation("h2d", addr, nbytes);
    this.#write("h2d", a, Number(addr & OFF_MASK), this.#view("h2d", src, nbytes));
    this.#s.h2dBytes += nbytes;
  }

  d2h(_dst: ArrayBufferView, _addr: bigint, _nbytes: number): void {
    this.#check("d2h");
    throw asyncError("copyFrom (device -> host)", "await worker.copyFromAsync(host, devPtr, nbytes)");
  }

  /** Device -> host after everything queued before it. */
  async d2hAsync(dst: ArrayBufferView, addr: bigint, nbytes: number): Promise<void> {
    this.#check("d2hAsync");
    const a = this.#allocation("d2hAsync", addr, nbytes);
    const off = Number(addr & OFF_MASK);
    const view = this.#view("d2hAsync", dst, nbytes);
    const timeoutS = this.#timeoutS;
    // the aligned words holding the range, and the failure record of earlier launches
    const a0 = Math.floor(off / 4) * 4, a1 = ceil(off + nbytes, 4);
    const errAt = ceil(a1 - a0, 256);
    const size = errAt + ERR_WORDS * 4;
    const { rb, serial, scope } = await this.#whenAsync(() => {
      if (a.lost !== null) throw this.#lostError("d2hAsync", a);
      this.#flush();
      const caught = this.#scopes();
      const rb = this.#readback(size);
      const e = this.#enc();
      if (a1 > a0) e.copyBufferToBuffer(this.#mem!, a0, rb, 0, a1 - a0);
      e.copyBufferToBuffer(this.#errBuf!, 0, rb, errAt, ERR_WORDS * 4);
      this.#flush();
      return { rb, serial: this.#submits, scope: caught() };
    });
    const what = "a read back of device memory (copyFromAsync)";
    try {
      const [refused, unmapped] = await this.#wait(Promise.all([scope, this.#map(rb).then(() => null, (e: unknown) => e ?? "map failed")]), what, serial, timeoutS, false);
      if (refused) throw this.#refused(what, refused);
      if (unmapped !== null) throw unmapped;
    } catch (e) {
      this.#drop(rb);
      throw e;
    }
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
    // overlapping ranges go through a temporary one, allocated now (the queue runs the copies before anything reuses it)
    const t = d < s + nbytes && s < d + nbytes ? this.#allocate(nbytes, false) : null;
    const end = Math.max(d, s, t ? t.offset : 0) + nbytes;
    this.#when(() => {
      if (end > this.#memSize) { this.#defer(this.#pastArena("a device copy (copyDevice)")); return; }
      if (t) { this.#copyBytes(t.offset, s, nbytes); this.#copyBytes(d, t.offset, nbytes); } else this.#copyBytes(d, s, nbytes);
    });
    if (t) this.#release(t);
  }

  /** A byte copy between disjoint ranges of the arena with the device's copy kernel (copyBufferToBuffer cannot copy a buffer onto itself). */
  #copyBytes(dst: number, src: number, nbytes: number): void {
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
    const plan = this.#plan(mod, this.#stage(mod, args, kinds), false, 0);
    if (this.#now()) this.#submit(plan);
    else { this.#keep(plan); this.#when(() => { this.#submit(plan); }); }
    return 0;
  }

  /** `timeoutS`: this launch's RunConfig.launchTimeoutS (else the worker's). */
  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array, _slots?: Float64Array, timeoutS?: number): Promise<number> {
    let plan: Plan;
    try {
      const mod = this.#module("launchAsync", module);
      plan = this.#plan(mod, this.#stage(mod, args, kinds), true, timeoutS ?? this.#timeoutS);
    } catch (e) {
      return Promise.reject(e);
    }
    // recorded in call order (now, or once the queue is no longer held), then waited for
    if (!this.#now()) this.#keep(plan);
    return this.#whenAsync(() => this.#submit(plan)).then((r) => this.#finish(r));
  }

  /** A plan that waits in the queue keeps its own copy of its uniform slices (the next launch's plan reuses the shared buffer). */
  #keep(p: Plan): void {
    p.uni = p.uni.slice(0, Math.max(1, p.dispatches.length) * SLICE_WORDS);
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
    let end = 0;
    try {
      entry.params.forEach((p, i) => {
        const t = p.var.type;
        const a = args[i], kind = kinds[i];
        if (t.kind !== "tensor") { vals.push(kind === ArgKind.Bool ? Boolean(a) : Number(a)); return; }
        const shape = t.shape as readonly number[];
        const nbytes = shape.reduce((x, y) => x * y, 1) * ELEM_BYTES[t.dtype];
        if (kind === ArgKind.Device) {
          const offset = this.#resolve(`launch argument #${i + 1}`, a as bigint, nbytes);
          end = Math.max(end, offset + nbytes);
          vals.push({ offset, dtype: t.dtype, shape });
          return;
        }
        const host = a as ArrayBufferView;
        if (!ArrayBuffer.isView(host) || host.byteLength < nbytes) {
          throw new TsptoArgumentError("E_HOST_VIEW", `launch: argument #${i + 1} host buffer has ${ArrayBuffer.isView(host) ? host.byteLength : 0} bytes, ${nbytes} needed (detached or shrunk?)`);
        }
        const st = this.#allocate(nbytes, kind === ArgKind.HostOut);
        temps.push(st);
        end = Math.max(end, st.offset + st.reserved);
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
    return { vals, temps, outs, writes, end };
  }

  /**
   * Runs the orchestration when the launch is called: its createTensor buffers and global scratch
   * are allocated (growths queued before the launch), its dispatches and their uniform slices
   * known. Its temporaries are released at once: the queue runs this launch before anything
   * reuses the ranges.
   */
  #plan(mod: Loaded, staged: Staged, readback: boolean, timeoutS: number): Plan {
    const temps = [...staged.temps];
    const dispatches: Dispatch[] = [];
    let end = staged.end;
    try {
      let gscratch = 0;
      mod.orch(staged.vals, {
        create: (dtype, shape) => {
          const nbytes = shape.reduce((x, y) => x * y, 1) * ELEM_BYTES[dtype];
          const a = this.#allocate(nbytes, true);
          temps.push(a);
          end = Math.max(end, a.offset + a.reserved);
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
        end = Math.max(end, gs.offset + gs.reserved);
        dispatches.forEach((x, i) => { if (x.gscratch) this.#uniHost[i * SLICE_WORDS + U_GSCRATCH] = gs.offset / 4; });
      }
      return { mod, staged, dispatches, uni: this.#uniHost, readback, recordMask: this.#recordMask, end, timeoutS };
    } finally {
      for (const t of temps) this.#release(t);
    }
  }

  /** Records a planned launch's commands and submits them; `readback`: copy outputs and the failure record out. */
  #submit(p: Plan): Recorded {
    const g = this.#gpu!;
    const d = g.device;
    const { mod, staged, dispatches, readback } = p;
    if (p.end > this.#memSize) throw this.#pastArena(`the launch of '${mod.src.name}'`);
    const pipelines = this.#pipelines(mod);
    this.#flush(); // (what was recorded before: not this launch's)
    // the launch's own errors (an awaited launch reports them; a queued one the next wait)
    const caught = this.#scopes();
    let scoped = true;
    const closeScope = () => {
      scoped = false;
      const scope = caught();
      if (!readback) void scope.then((e) => { if (e) this.#defer(this.#refused(`the launch of '${mod.src.name}'`, e)); });
      return scope;
    };
    try {
      // staged host inputs (queue order: before this launch's commands)
      for (const w of staged.writes) this.#writePadded(w.off, w.data);
      // one uniform slice per dispatch, written at once
      const uniBytes = Math.max(1, dispatches.length) * UNIFORM_STRIDE;
      this.#ensureUniforms(uniBytes);
      // the dispatches: one compute pass, or one per dispatch when timing each (DFX swimlane)
      const perDispatch = p.recordMask !== 0 && g.timestamps && readback;
      const timed = g.timestamps && (readback || perDispatch);
      const passes = dispatches.length === 0 ? 0 : perDispatch ? dispatches.length : 1;
      if (timed && passes > 0) this.#ensureQueries(2 * passes);
      const group = this.#group();
      this.#flush();
      d.queue.writeBuffer(this.#uniforms!, 0, p.uni.buffer, p.uni.byteOffset, uniBytes);
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
        const pl = pipelines[x.kernel];
        if (pl !== prev) { pass.setPipeline(pl); prev = pl; }
        offset[0] = i * UNIFORM_STRIDE;
        pass.setBindGroup(0, group, offset, 0, 1);
        pass.dispatchWorkgroups(x.grid);
      });
      if (pass) (pass as { end(): void }).end();
      let rb: GpuBuffer | null = null, rbSize = 0, errAt = 0, tsAt = 0;
      let places: number[] = [];
      if (readback) {
        let at = 0;
        places = staged.outs.map((o) => { const q = at; at = ceil(at + ceil(o.nbytes, 4), 256); return q; });
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
      return {
        scope, outs: staged.outs.map((o, k) => ({ ...o, offset: places[k] ?? 0 })), readback: rb, rbSize, errAt, tsAt, passes: timed ? passes : 0, dispatches, submitNs, mod,
        recordMask: p.recordMask, timeoutS: p.timeoutS, serial: this.#submits,
      };
    } catch (e) {
      this.#encoder = null; // nothing of a launch that failed while it was recorded is submitted
      throw e;
    } finally {
      if (scoped) void closeScope();
    }
  }

  #writePadded(off: number, data: Uint8Array): void {
    if (data.byteLength === 0) return;
    let bytes = data;
    if (bytes.byteLength % 4 !== 0) { bytes = new Uint8Array(ceil(data.byteLength, 4)); bytes.set(data); }
    this.#gpu!.device.queue.writeBuffer(this.#mem!, off, bytes);
  }

  /** What the error scopes of `what` caught, as its error: nothing of it ran. */
  #refused(what: string, e: Caught): TsptoError {
    return e.oom
      ? new TsptoOutOfMemoryError("E_DEVICE_OOM", `${what} could not get the memory it needs from the WebGPU implementation (nothing of it ran): ${firstLine(e.message)}`, undefined, OOM_HINT)
      : new TsptoKernelError("E_WEBGPU", `the WebGPU implementation rejected ${what} (nothing of it ran): ${e.message}`, undefined,
        "if the message names a generated kernel, this is a bug in tspto: report it");
  }

  /**
   * Waits for `p`, a wait for the GPU's work up to submit `serial`: it ends early when the device
   * closes (E_CLOSED) or is given up, and after `timeoutS` seconds (0: never), which gives the
   * device up (E_LAUNCH_TIMEOUT: WebGPU cannot stop a running kernel).
   */
  #wait<T>(p: Promise<T>, what: string, serial: number, timeoutS: number, launch: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const end = () => { this.#waits.delete(abort); if (timer !== undefined) clearTimeout(timer); };
      const abort: Abort = (make) => { end(); reject(make(what)); };
      this.#waits.add(abort);
      if (timeoutS > 0 && timeoutS * 1000 <= MAX_TIMER_MS) {
        timer = setTimeout(() => {
          end();
          const late = `${what} did not complete within ${timeoutS} s (RunConfig.launchTimeoutS)`;
          this.#giveUp(late);
          reject(new (launch ? TsptoKernelError : TsptoDeviceError)("E_LAUNCH_TIMEOUT",
            `${late}; WebGPU cannot stop a running kernel, so the device was given up: every later operation on it fails`, undefined, TIMEOUT_HINT));
        }, timeoutS * 1000);
      }
      p.then((v) => { end(); this.#doneSubmits = Math.max(this.#doneSubmits, serial); resolve(v); }, (e: unknown) => { end(); reject(e); });
    });
  }

  /** A readback buffer a wait gave up on (its mapping may still be pending): never reused. */
  #drop(rb: GpuBuffer): void {
    try { rb.unmap(); rb.destroy(); } catch { /* gone with the device */ }
  }

  /** Waits for a recorded launch: outputs to their host views, its failure record, its device time. */
  async #finish(r: Recorded): Promise<number> {
    const rb = r.readback!;
    let checked: TsptoError | null, rejected: Caught | null, unmapped: unknown;
    try {
      [checked, rejected, unmapped] = await this.#wait(Promise.all([r.mod.checked ?? null, r.scope, this.#map(rb).then(() => null, (e: unknown) => e ?? "map failed")]),
        `the launch of '${r.mod.src.name}'`, r.serial, r.timeoutS, true);
    } catch (e) {
      this.#drop(rb);
      throw e;
    }
    const doneNs = this.#host.nowNs();
    const refused = checked ?? (rejected ? this.#refused(`the launch of '${r.mod.src.name}'`, rejected) : null);
    if (unmapped !== null) {
      this.#drop(rb);
      throw refused ?? unmapped;
    }
    try {
      if (refused) throw refused;
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
        if (r.recordMask !== 0) this.#trace = this.#traceOf(r, ts, doneNs);
      } else if (r.recordMask !== 0) {
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
    if (this.#deferred) {
      const e = this.#deferred;
      this.#deferred = null;
      throw e;
    }
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
    return { launchStartNs: 0, entryEndNs: 0, launchEndNs: last, mask: r.recordMask, pmuError: "no hardware counters on webgpu", argSlots: [], orchBuffers: [], tasks, edges: [] };
  }

  // ---------------------------------------------------------------- device objects
  #group(): GpuBindGroup {
    if (this.#bindGroup) return this.#bindGroup;
    this.#ensureUniforms(UNIFORM_STRIDE);
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
    if (this.#closed || this.#gaveUp !== null) { b.destroy(); return; }
    const list = this.#readbacks.get(b.size) ?? [];
    if (list.length < 4) { list.push(b); this.#readbacks.set(b.size, list); } else b.destroy();
  }

  async #map(b: GpuBuffer): Promise<void> {
    try {
      await b.mapAsync(MapMode.READ);
    } catch (e) {
      if (this.#closed) throw err("E_CLOSED", "the device was closed while a read back was queued", "construct a new ChipWorker");
      const also = this.#uncaptured;
      this.#uncaptured = null; // reported here, not by the next wait as well
      throw err("E_WEBGPU", `reading device memory back failed: ${(e as Error)?.message ?? String(e)}${also ? ` (${also})` : ""}`);
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

  /** Ends every queued operation and every wait with the error `make` gives. */
  #abortAll(make: (what: string) => TsptoError): void {
    const ops = this.#pending;
    this.#pending = [];
    for (const p of ops) p.fail?.(make("an operation queued on the device"));
    for (const w of [...this.#waits]) w(make);
  }

  /**
   * Lets go of the GPU device: destroyed now when its work is done, else once it is
   * (GPUDevice.destroy() waits for the work it has, blocking the thread: a running kernel
   * would hold close() until it ends).
   */
  #retire(g: OpenedGpu): void {
    this.#encoder = null;
    const destroy = () => { try { g.device.destroy(); } catch { /* already lost */ } };
    if (this.#doneSubmits >= this.#submits) destroy();
    else g.device.queue.onSubmittedWorkDone().then(destroy, destroy);
    for (const list of this.#readbacks.values()) for (const b of list) { try { b.destroy(); } catch { /* gone with the device */ } }
    this.#readbacks.clear();
  }

  /** A wait ran past the launch timeout: the device is given up (its queue may run that kernel for ever). */
  #giveUp(reason: string): void {
    if (this.#closed || this.#gaveUp !== null) return;
    this.#gaveUp = reason;
    this.#abortAll((what) => this.#gaveUpError(what));
    const g = this.#gpu;
    this.#gpu = null;
    if (g) this.#retire(g);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#abortAll((what) => err("E_CLOSED", `${what}: the device was closed while it was queued or waiting for the GPU`, "construct a new ChipWorker"));
    this.#allocs.clear();
    this.#modules.clear();
    this.#inUse = 0;
    const g = this.#gpu;
    this.#gpu = null;
    if (g) this.#retire(g);
  }

  get closed(): boolean { return this.#closed; }
}

interface Staged {
  readonly vals: OrchValue[]; readonly temps: Allocation[]; readonly outs: OutCopy[]; readonly writes: { off: number; data: Uint8Array; addr: bigint }[];
  /** The end of the highest range the arguments use (DeviceTensors and staging). */
  readonly end: number;
}

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


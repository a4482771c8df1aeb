// ChipWorker: one open device of a target. Launches compiled programs (explicitly with
// run/register/runAsync, or implicitly through a platform's default worker), owns
// DeviceTensors, counts transfers. It knows no platform by name: the target registry opens
// its Device, and every call form goes through one launch path:
//   registration(compiled) -> Registration (loaded once; its Binder packs arguments)
//   binder.pack(args) / binder.tryPack(args)  -> Packed
//   worker.launch(registration, packed)        -> device.launch
import { availableParallelism } from "node:os";
import { getTarget, type Device, type Target } from "../targets/index.js";
import { RunConfig } from "./config.js";
import { ProgramHandle } from "./program_handle.js";
import { DeviceTensor, type DeviceTensorOwner } from "./device_tensor.js";
import { asTensorLike, HostTensor } from "./host/index.js";
import { isDType, dtypeBytes, type DType } from "./dtype.js";
import { Binder, rtErr, describe, show, type Packed } from "./binder.js";
import { TRACE_TASKS, recordingOf, writeDfx } from "./dfx.js";
import { globalTaskListeners, type TaskListener } from "./task_listeners.js";
import { profileFromEnv } from "./profile.js";

let noDfxWarned = false;
export type { TaskListener };

// `tspto profile` runs a script with $TSPTO_PROFILE set: every launch of this process is profiled
profileFromEnv();

export interface WorkerStats {
  launches: number;
  h2dBytes: number;
  d2hBytes: number;
  deviceBytesInUse: number;
  liveTensors: number;
  /** After close(): what close() released (device bytes, DeviceTensors the caller forgot, registrations). */
  released?: { deviceBytes: number; tensors: number; registrations: number };
}

/**
 * Core threads of a device: one per hardware thread of the machine
 * (os.availableParallelism()), or $TSPTO_CORE_THREADS (an integer >= 1; tests run with 1
 * and with all cores).
 */
export function coreThreadCount(): number {
  const env = process.env.TSPTO_CORE_THREADS;
  if (env !== undefined && env !== "") {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 1 || n > 1024) {
      throw rtErr("E_CONFIG", `TSPTO_CORE_THREADS must be an integer in [1, 1024], got ${JSON.stringify(env)}`);
    }
    return n;
  }
  return Math.max(1, availableParallelism());
}

/** Default device memory reservation (virtual; pages are committed on use). */
const DEFAULT_MEMORY_BYTES = Number(process.env.TSPTO_DEVICE_MEMORY ?? 16 * 2 ** 30);

/** A program loaded on one worker: its module on the device and its argument binder. */
export class Registration {
  closed = false;
  handle: RegistrationHandle | undefined;
  /** Async launches in flight; an unregister waits for them before the module is unloaded. */
  inflight = 0;
  unloadPending = false;
  constructor(readonly compiled: ProgramHandle, readonly binder: Binder, readonly module: number) {}
  get name(): string { return this.compiled.meta.name; }
}

export interface RegistrationHandle {
  (...args: unknown[]): unknown;
  readonly compiled: ProgramHandle;
  readonly closed: boolean;
  unregister(): void;
  callAsync(...args: unknown[]): Promise<unknown>;
}

let nextWorkerId = 1;
/** Options of a ChipWorker beyond its RunConfig (what layers above the runtime set). */
export interface ChipWorkerOptions {
  /** Where under dfx_outputs/ this worker's DFX files go (e.g. rank_0/device_1; default: dfx_outputs/ itself). */
  readonly dfxSubdir?: string;
}

export class ChipWorker implements Disposable {
  readonly config: RunConfig;
  readonly target: Target;
  readonly #owner: DeviceTensorOwner = { workerId: nextWorkerId++ };
  #device: Device | null = null;
  #closed = false;
  #everInit = false;
  /** Live DeviceTensors by address. */
  readonly #tensors = new Map<bigint, DeviceTensor>();
  /** In-flight async launches per DeviceTensor; a free waits for them (see freeTensor). */
  readonly #holds = new Map<DeviceTensor, number>();
  readonly #pendingFree = new Set<DeviceTensor>();
  readonly #regs = new Map<ProgramHandle, Registration>();
  #finalStats: WorkerStats | null = null;
  /** Device time of the last launch (ns). */
  lastDeviceNs = 0;
  /** Settles after the last async launch queued so far (copyFromAsync / copyToAsync wait for it). */
  #tail: Promise<unknown> = Promise.resolve();
  /** Recording mask set on the device (DFX), and the worker config's own. */
  #devMask = 0;
  #devDump = 0;
  readonly #cfgRec: { mask: number; dumpBytes: number };
  #cores = 1;
  /** Where under dfx_outputs/ this worker's DFX files go ("" = dfx_outputs/ itself). */
  readonly #dfxSubdir: string;
  readonly #taskListeners = new Set<TaskListener>();

  constructor(config: RunConfig = new RunConfig(), opts: ChipWorkerOptions = {}) {
    if (!(config instanceof RunConfig)) throw rtErr("E_ARG", `ChipWorker: config must be a RunConfig, got ${describe(config)}`, "construct it with new RunConfig({ ... })", { argument: "config", position: 1 });
    this.config = config;
    this.#dfxSubdir = opts.dfxSubdir ?? "";
    this.target = getTarget(config.platform);
    this.#cfgRec = recordingOf(config);
    this.init();
  }

  get platform(): string { return this.config.platform; }
  /** Core threads of its device (the limits a roofline compares with are measured on as many). */
  get coreThreads(): number { return this.#cores; }

  /** A listener of this worker's launches (see TaskListener); returns its removal. */
  addTaskListener(l: TaskListener): () => void {
    this.#taskListeners.add(l);
    return () => { this.#taskListeners.delete(l); };
  }
  /** Whether launches hand their task traces to a listener now (and whether the device can). */
  get tracingTasks(): boolean { return (this.#taskListeners.size > 0 || globalTaskListeners.size > 0) && !!this.#device?.records; }
  get closed(): boolean { return this.#closed; }

  /** Opens the device (idempotent). A closed worker cannot be re-opened. */
  init(): this {
    if (this.#device) return this;
    if (this.#closed) throw rtErr("E_CLOSED", "ChipWorker is closed", "construct a new ChipWorker");
    this.#cores = coreThreadCount();
    this.#device = this.target.openDevice({
      deviceId: this.config.deviceId, coreThreads: this.#cores, schedThreads: this.config.aicpuThreadNum,
      scratchBytes: this.target.description.scratchBytes, memoryBytes: DEFAULT_MEMORY_BYTES,
      ringTaskWindow: this.config.ringTaskWindowFor(0), ringHeap: this.config.ringHeapFor(0), ringDepPool: this.config.ringDepPoolFor(0),
      launchTimeoutS: this.config.launchTimeoutS,
    });
    this.#everInit = true;
    return this;
  }

  /**
   * Resolves with this worker once its device is open. Devices that open asynchronously
   * (webgpu: requestAdapter / requestDevice) reject here with the reason they could not open;
   * operations called before that are queued in order and run once the device is open.
   */
  async initAsync(): Promise<this> {
    this.init();
    await this.#dev().ready?.();
    return this;
  }

  /** The open Device (for layers above the runtime, e.g. collectives handing device ranges to MPI); throws once closed. */
  get device(): Device {
    return this.#dev();
  }

  #dev(): Device {
    if (this.#closed || !this.#device) throw rtErr("E_CLOSED", "ChipWorker is closed", "construct a new ChipWorker (close() releases its device)");
    return this.#device;
  }

  // ------------------------------------------------------------------ device memory
  allocTensor(shape: readonly number[], dtype: DType = "float32", opts: { init?: unknown } = {}): DeviceTensor {
    const dev = this.#dev();
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw rtErr("E_SHAPE", `allocTensor: shape must be a non-empty list of positive integers, got ${show(shape)}`);
    }
    if (!isDType(dtype)) throw rtErr("E_DTYPE", `allocTensor: unknown dtype ${show(dtype)}`, "use float32, float16, bfloat16, int8, int16, int32, int64, uint8 or bool");
    const nbytes = shape.reduce((a, b) => a * b, 1) * dtypeBytes(dtype);
    const ptr = dev.alloc(nbytes);
    const t = new DeviceTensor(ptr, shape, dtype, nbytes, this.#owner);
    this.#tensors.set(ptr, t);
    if (opts.init !== undefined) {
      const h = asTensorLike(opts.init);
      if (!h || h.dtype !== dtype || h.shape.length !== shape.length || h.shape.some((d, i) => d !== shape[i])) {
        this.freeTensor(t);
        const got = h ? `shape=${shapeStr(h.shape)} dtype=${h.dtype}` : `a ${typeof opts.init}`;
        throw rtErr("E_INIT", `init must have shape=${shapeStr(shape)} dtype=${dtype}, got ${got}`);
      }
      dev.h2d(ptr, h.data, nbytes);
    }
    return t;
  }

  /**
   * Releases a DeviceTensor. Twice, or after close(), is a no-op. A tensor that async
   * launches in flight still use is released when the last of them completes (the tensor
   * is unusable from now on; its memory cannot be handed out again before then).
   */
  freeTensor(t: DeviceTensor): void {
    if (!(t instanceof DeviceTensor)) throw rtErr("E_ARG", `freeTensor: expected a DeviceTensor, got ${describe(t)}`);
    if (t.owner !== this.#owner) throw rtErr("E_FOREIGN", "freeTensor: the DeviceTensor belongs to another ChipWorker", "free it with the worker that allocated it");
    if (t.base) {
      throw rtErr("E_VIEW", `freeTensor: ${t.toString()} is a view of a ${shapeStr(t.base.shape)} DeviceTensor (t.view / t.narrow); a view shares its allocation's memory and lifetime and is never freed on its own`,
        "free the tensor it was made from (freeing it ends every view of it), or simply drop the view");
    }
    if (this.#closed || !t.live) return;
    t.live = false;
    this.#tensors.delete(t.dataPtr);
    if (this.#holds.has(t)) { this.#pendingFree.add(t); return; }
    this.#device!.free(t.dataPtr);
  }

  #checkDevicePtr(devPtr: bigint | DeviceTensor, nbytes: number, what: string): bigint {
    if (!Number.isSafeInteger(nbytes) || nbytes < 0) throw rtErr("E_ARG", `${what}: nbytes must be a non-negative integer, got ${describe(nbytes)}`);
    if (devPtr instanceof DeviceTensor) {
      if (devPtr.owner !== this.#owner) throw rtErr("E_FOREIGN", `${what}: DeviceTensor belongs to another ChipWorker`, "copy with the worker that allocated it");
      if (!devPtr.live) throw rtErr("E_FREED", `${what}: DeviceTensor is not a live allocation owned by this ChipWorker`, "it was freed (freeTensor) or its worker was closed; allocate it again");
      if (nbytes > devPtr.nbytes) throw rtErr("E_RANGE", `${what}: ${nbytes} bytes exceed the DeviceTensor's ${devPtr.nbytes} bytes`);
      return devPtr.dataPtr;
    }
    if (typeof devPtr !== "bigint") throw rtErr("E_ARG", `${what}: devPtr must be a bigint device address or a DeviceTensor, got ${typeof devPtr}`);
    return devPtr;
  }

  #hostView(host: ArrayBufferView | HostTensor, nbytes: number, what: string): ArrayBufferView {
    const view = host instanceof HostTensor ? host.data : host;
    if (!ArrayBuffer.isView(view)) throw rtErr("E_ARG", `${what}: host must be a TypedArray or HostTensor`);
    if (view.byteLength < nbytes) throw rtErr("E_RANGE", `${what}: host buffer has ${view.byteLength} bytes, ${nbytes} requested`);
    return view;
  }

  /** Explicit D2H: device [devPtr, devPtr+nbytes) -> host. */
  copyFrom(host: ArrayBufferView | HostTensor, devPtr: bigint | DeviceTensor, nbytes: number): void {
    const dev = this.#dev();
    const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyFrom");
    dev.d2h(this.#hostView(host, nbytes, "copyFrom"), ptr, nbytes);
  }

  /** Explicit H2D: host -> device [devPtr, devPtr+nbytes). */
  copyTo(devPtr: bigint | DeviceTensor, host: ArrayBufferView | HostTensor, nbytes: number): void {
    const dev = this.#dev();
    const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyTo");
    dev.h2d(ptr, this.#hostView(host, nbytes, "copyTo"), nbytes);
  }

  /**
   * D2H as a Promise, ordered after the launches queued before it (on webgpu, where reading device
   * memory has to wait for the GPU, the only form).
   */
  copyFromAsync(host: ArrayBufferView | HostTensor, devPtr: bigint | DeviceTensor, nbytes: number): Promise<void> {
    return this.#async(async () => {
      const dev = this.#dev();
      const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyFromAsync");
      const view = this.#hostView(host, nbytes, "copyFromAsync");
      if (dev.d2hAsync) return dev.d2hAsync(view, ptr, nbytes);
      await this.#tail;
      this.#dev().d2h(view, ptr, nbytes);
    });
  }

  /** H2D as a Promise, ordered after the launches queued before it. */
  copyToAsync(devPtr: bigint | DeviceTensor, host: ArrayBufferView | HostTensor, nbytes: number): Promise<void> {
    return this.#async(async () => {
      const dev = this.#dev();
      const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyToAsync");
      const view = this.#hostView(host, nbytes, "copyToAsync");
      if (dev.h2dAsync) return dev.h2dAsync(ptr, view, nbytes);
      // the host data as of the call (the launches before it run first)
      const data = new Uint8Array(view.buffer, view.byteOffset, nbytes).slice();
      await this.#tail;
      this.#dev().h2d(ptr, data, nbytes);
    });
  }

  /** Device-to-device copy between this worker's allocations (no host transfer). */
  copyDevice(dst: bigint | DeviceTensor, src: bigint | DeviceTensor, nbytes: number): void {
    const dev = this.#dev();
    dev.d2d(this.#checkDevicePtr(dst, nbytes, "copyDevice"), this.#checkDevicePtr(src, nbytes, "copyDevice"), nbytes);
  }

  // ------------------------------------------------------------------ registration
  /** The registration of `compiled` on this worker (loaded on first use, then reused). */
  registration(compiled: ProgramHandle): Registration {
    if (!(compiled instanceof ProgramHandle)) throw rtErr("E_ARG", `expected a CompiledProgram, got ${describe(compiled)}`, "compile with ir.compile(...) or f.compile(...)");
    const dev = this.#dev();
    const cached = this.#regs.get(compiled);
    if (cached && !cached.closed) return cached;
    if (compiled.platform !== this.platform) {
      throw rtErr("E_PLATFORM", `CompiledProgram.platform='${compiled.platform}' does not match ChipWorker.platform='${this.platform}'. Compile for the matching platform, or construct ChipWorker(new RunConfig({ platform: '${compiled.platform}' })).`);
    }
    const capacity = this.target.description.scratchBytes;
    if (compiled.meta.scratchBytes > capacity) {
      throw rtErr("E_SCRATCH", `program needs ${compiled.meta.scratchBytes} bytes of per-core scratch; this device has ${capacity}`);
    }
    const reg = new Registration(compiled, new Binder(compiled.meta, this.#owner), dev.load(compiled));
    this.#regs.set(compiled, reg);
    return reg;
  }

  #unregister(reg: Registration): void {
    if (reg.closed) return;
    reg.closed = true;
    if (this.#regs.get(reg.compiled) === reg) this.#regs.delete(reg.compiled);
    if (reg.inflight > 0) reg.unloadPending = true; // unloaded when its last async launch settles
    else if (this.#device && !this.#closed) this.#device.unload(reg.module);
  }

  #settled(reg: Registration, held: readonly DeviceTensor[]): void {
    this.#release(held);
    if (--reg.inflight === 0 && reg.unloadPending) {
      reg.unloadPending = false;
      if (this.#device && !this.#closed) this.#device.unload(reg.module);
    }
  }

  register(compiled: ProgramHandle): RegistrationHandle {
    const reg = this.registration(compiled);
    if (reg.handle) return reg.handle;
    const handle = ((...args: unknown[]) => this.launch(reg, this.#bind(reg, args))) as RegistrationHandle;
    Object.defineProperties(handle, {
      compiled: { value: compiled, enumerable: true },
      closed: { get: () => reg.closed || this.#closed, enumerable: true },
      unregister: { value: () => this.#unregister(reg) },
      callAsync: { value: (...args: unknown[]) => this.#async(() => this.launch(reg, this.#bind(reg, args), true)) },
    });
    reg.handle = handle;
    return handle;
  }

  // ------------------------------------------------------------------ launches
  run(compiled: ProgramHandle, ...args: unknown[]): unknown {
    const reg = this.registration(compiled);
    return this.launch(reg, this.#bind(reg, args));
  }

  runAsync(compiled: ProgramHandle, ...args: unknown[]): Promise<unknown> {
    return this.#async(() => {
      const reg = this.registration(compiled);
      return this.launch(reg, this.#bind(reg, args), true);
    });
  }

  #async<T>(f: () => Promise<T>): Promise<T> {
    try { return f(); } catch (e) { return Promise.reject(e); }
  }

  /** Validates and packs a call's arguments with the registration's binder. */
  #bind(reg: Registration, args: readonly unknown[]): Packed {
    if (reg.closed || this.#closed) {
      throw rtErr("E_HANDLE_CLOSED", `registration of '${reg.name}' is closed (its worker was closed or it was unregistered)`, "register the program again: worker.register(compiled)");
    }
    return reg.binder.pack(args);
  }

  /**
   * The one launch: every call form (a jit call, run, a registration handle, runAsync and
   * callAsync) ends here with arguments its registration's binder packed. Runs under the
   * packed RunConfig (else the worker's), with DFX recording when it asks for it, and returns
   * the program's result — or, with `async`, a Promise of it from a launch off the JS thread
   * that holds the DeviceTensors it uses until it completes.
   */
  launch(reg: Registration, packed: Packed): unknown;
  launch(reg: Registration, packed: Packed, async: true): Promise<unknown>;
  launch(reg: Registration, packed: Packed, async = false): unknown {
    if (reg.closed || this.#closed) {
      throw rtErr("E_HANDLE_CLOSED", `registration of '${reg.name}' is closed (its worker was closed or it was unregistered)`, "register the program again: worker.register(compiled)");
    }
    const dev = this.#device!;
    const cfg = packed.config ?? this.config;
    const rec = packed.config ? recordingOf(cfg) : this.#cfgRec;
    if (rec.mask !== 0 && !dev.records) this.#warnNoDfx();
    const recording = rec.mask !== 0 && dev.records;
    const listening = this.#taskListeners.size > 0 || globalTaskListeners.size > 0;
    const mask = (recording ? rec.mask : 0) | (listening && dev.records ? TRACE_TASKS : 0);
    if (mask !== 0 || this.#devMask !== 0) this.#setRecording(mask, recording ? rec.dumpBytes : 0);
    if (!async) {
      this.lastDeviceNs = dev.launch(reg.module, packed.args, packed.kinds, packed.slots);
      if (recording || listening) this.#takeTrace(reg, cfg, recording, listening, packed.source);
      return this.#result(reg, packed.source);
    }
    // Launches of one device run in order: the recording mask set now applies to this launch.
    const args = [...packed.args], kinds = packed.kinds.slice(), slots = packed.slots.slice(), source = packed.source;
    const held = this.#hold(reg, source);
    reg.inflight++;
    let p: Promise<number>;
    try { p = dev.launchAsync(reg.module, args, kinds, slots, cfg.launchTimeoutS); } catch (e) { this.#settled(reg, held); throw e; }
    this.#tail = p.then(() => undefined, () => undefined);
    return p.then((ns) => {
      this.#settled(reg, held);
      this.lastDeviceNs = ns;
      if (recording || listening) this.#takeTrace(reg, cfg, recording, listening, source);
      return this.#result(reg, source);
    }, (e: unknown) => {
      this.#settled(reg, held);
      throw e;
    });
  }

  /** Holds the allocations of the call's DeviceTensor arguments (a view holds the allocation it is a view of; the binder checked them). */
  #hold(reg: Registration, source: readonly unknown[]): DeviceTensor[] {
    const held: DeviceTensor[] = [];
    const sig = reg.binder.sig;
    for (let i = 0; i < sig.length; i++) {
      const a = source[i];
      if (!(a instanceof DeviceTensor)) continue;
      const t = a.base ?? a;
      held.push(t);
      this.#holds.set(t, (this.#holds.get(t) ?? 0) + 1);
    }
    return held;
  }

  #release(held: readonly DeviceTensor[]): void {
    for (const t of held) {
      const n = (this.#holds.get(t) ?? 1) - 1;
      if (n > 0) { this.#holds.set(t, n); continue; }
      this.#holds.delete(t);
      if (this.#pendingFree.delete(t) && this.#device && !this.#closed) this.#device.free(t.dataPtr);
    }
  }

  /** What the program returns: the caller's arguments at the returned parameters' positions. */
  #result(reg: Registration, args: readonly unknown[]): unknown {
    const meta = reg.compiled.meta;
    const r = meta.returns;
    if (!meta.hasReturn || r.length === 0) return undefined;
    // the returned parameters are the caller's arguments (tensors), not the packed views
    return r.length === 1 ? args[r[0]] : r.map((i) => args[i]);
  }

  #setRecording(mask: number, dumpBytes: number): void {
    if (mask === this.#devMask && dumpBytes === this.#devDump) return;
    this.#device!.setRecording(mask, dumpBytes);
    this.#devMask = mask;
    this.#devDump = dumpBytes;
  }

  #takeTrace(reg: Registration, cfg: RunConfig, write: boolean, listen: boolean, args: readonly unknown[]): void {
    const trace = this.#device!.records ? this.#device!.takeTrace() : null;
    if (write && trace) writeDfx(reg.compiled.outputDir, reg.compiled.meta, cfg, trace, this.#cores, this.config.deviceId, this.#dfxSubdir);
    if (listen) for (const l of [...this.#taskListeners, ...globalTaskListeners]) l(this, reg, trace, args);
  }

  #warnNoDfx(): void {
    if (noDfxWarned) return;
    noDfxWarned = true;
    process.emitWarning(`DFX outputs (enableChipSwimlane, enableDepGen, enablePmu, enableDumpArgs, enableScopeStats) are not recorded by the '${this.platform}' platform's device; it writes no dfx_outputs`, { code: "TSPTO_DFX_UNSUPPORTED" });
  }

  // ------------------------------------------------------------------ lifecycle, stats
  get stats(): WorkerStats {
    if (this.#finalStats) return { ...this.#finalStats, released: { ...this.#finalStats.released! } };
    if (!this.#device) return { launches: 0, h2dBytes: 0, d2hBytes: 0, deviceBytesInUse: 0, liveTensors: 0 };
    const s = this.#device.stats();
    return { launches: s.launches, h2dBytes: s.h2dBytes, d2hBytes: s.d2hBytes, deviceBytesInUse: s.bytesInUse, liveTensors: this.#tensors.size };
  }

  /** Device counters (module loads, tasks) for tests and tools; null after close(). */
  get deviceStats() {
    return this.#device && !this.#closed ? this.#device.stats() : null;
  }

  close(): void {
    if (this.#closed) return;
    const before = this.#device ? this.stats : null;
    const registrations = this.#regs.size;
    // the device's close releases every module (after the launch that runs now); queued async
    // launches then fail with E_CLOSED rather than finding their module gone
    for (const reg of [...this.#regs.values()]) { reg.inflight = Math.max(reg.inflight, 1); this.#unregister(reg); }
    const tensors = this.#tensors.size;
    for (const t of this.#tensors.values()) t.live = false;
    this.#tensors.clear();
    this.#pendingFree.clear();
    this.#holds.clear();
    this.#closed = true;
    if (this.#device && before) {
      this.#finalStats = {
        launches: before.launches, h2dBytes: before.h2dBytes, d2hBytes: before.d2hBytes, deviceBytesInUse: 0, liveTensors: 0,
        released: { deviceBytes: before.deviceBytesInUse, tensors, registrations },
      };
      this.#device.close();
    }
    this.#device = null;
    releaseDefaultWorker(this);
  }

  [Symbol.dispose](): void {
    this.close();
  }
  get initialized(): boolean { return this.#everInit && !this.#closed; }
}

const shapeStr = (s: readonly number[]) => `[${s.join(", ")}]`;

// ------------------------------------------------------------------ default workers
const defaultWorkers = new Map<string, ChipWorker>();

/** The worker implicit dispatch uses for (platform, deviceId): opened once, reused. */
export function defaultWorker(config: RunConfig): ChipWorker {
  const key = `${config.platform}:${config.deviceId}`;
  let w = defaultWorkers.get(key);
  if (!w || w.closed) {
    w = new ChipWorker(new RunConfig({ platform: config.platform, deviceId: config.deviceId }));
    defaultWorkers.set(key, w);
  }
  return w;
}

function releaseDefaultWorker(w: ChipWorker): void {
  for (const [k, x] of defaultWorkers) if (x === w) defaultWorkers.delete(k);
}

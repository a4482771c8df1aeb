// ChipWorker: one open device. Launches compiled programs (explicitly with run/register, or
// implicitly through the default worker of a platform), owns DeviceTensors, counts transfers.
import { availableParallelism } from "node:os";
import { TsptoArgumentError, TsptoConfigError, TsptoRuntimeError, formatValue, type Value, type TensorValue } from "../ir/index.js";
import { DEFAULT_SCRATCH_CAPACITY } from "../passes/index.js";
import { RunConfig } from "./config.js";
import { CompiledProgram, setDefaultDispatch } from "./compiled.js";
import { DeviceTensor, type DeviceTensorOwner } from "./device_tensor.js";
import { asTensorLike, HostTensor } from "./host.js";
import { isDType, dtypeBytes, typedArrayFor, type DType } from "./dtype.js";
import { loadNative, ArgKind, type NativeDevice } from "./native.js";
import { interpret } from "./interp.js";
import { callerSpan } from "./caller.js";
import type { CompiledMeta } from "../codegen/index.js";
import { recordingOf, writeDfx } from "./dfx.js";
import { guardNative, translatingDevice } from "./native_errors.js";
import { checkHostView, checkScalar } from "./args.js";

let interpDfxWarned = false;

export interface WorkerStats {
  launches: number;
  h2dBytes: number;
  d2hBytes: number;
  deviceBytesInUse: number;
  liveTensors: number;
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
      throw new TsptoConfigError("E_CONFIG", `TSPTO_CORE_THREADS must be an integer in [1, 1024], got ${JSON.stringify(env)}`, undefined, undefined, { argument: "TSPTO_CORE_THREADS" });
    }
    return n;
  }
  return Math.max(1, availableParallelism());
}

/** Default device memory reservation (virtual; pages are committed on use). */
const DEFAULT_MEMORY_BYTES = Number(process.env.TSPTO_DEVICE_MEMORY ?? 16 * 2 ** 30);

const rtErr = (code: string, msg: string, hint?: string) => new TsptoRuntimeError(code, msg, callerSpan(), hint);

interface ParamSig {
  readonly name: string;
  readonly tensor: boolean;
  readonly dir: "in" | "out" | "inout";
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly nbytes: number;
  readonly hostKind: number;
  readonly scalarKind: number;
  /** A scalar the program was specialized on (its uses were folded at compile time). */
  readonly value?: number | boolean;
}

/** A program loaded on one worker. */
interface Registration {
  readonly compiled: CompiledProgram;
  readonly sig: readonly ParamSig[];
  readonly moduleId: number; // -1 for interp
  readonly args: unknown[];
  readonly kinds: Uint8Array;
  closed: boolean;
  handle?: RegistrationHandle;
}

export interface RegistrationHandle {
  (...args: unknown[]): unknown;
  readonly compiled: CompiledProgram;
  readonly closed: boolean;
  unregister(): void;
  callAsync(...args: unknown[]): Promise<unknown>;
}

let nextWorkerId = 1;

function signatureOf(meta: CompiledMeta): ParamSig[] {
  return meta.params.map((p) => {
    const tensor = p.kind === "tensor";
    const shape = tensor ? (p.shape ?? []).map(Number) : [];
    return {
      name: p.name, tensor, dir: p.direction, dtype: p.dtype as DType, shape,
      nbytes: tensor ? shape.reduce((a, b) => a * b, 1) * dtypeBytes(p.dtype as DType) : 0,
      hostKind: p.direction === "in" ? ArgKind.HostIn : p.direction === "out" ? ArgKind.HostOut : ArgKind.HostInOut,
      value: p.value,
      scalarKind: p.dtype === "bool" ? ArgKind.Bool : p.dtype === "float32" || p.dtype === "float16" || p.dtype === "bfloat16" ? ArgKind.Float : ArgKind.Int,
    };
  });
}

const shapeStr = (s: readonly number[]) => `[${s.join(", ")}]`;

/** Set by ChipWorker's static block (it reaches the private registration methods). */
let trustedLaunch: (w: ChipWorker, compiled: CompiledProgram) => (args: readonly unknown[]) => unknown;

export class ChipWorker implements Disposable {
  readonly config: RunConfig;
  readonly #owner: DeviceTensorOwner = { workerId: nextWorkerId++ };
  #device: NativeDevice | null = null;
  #closed = false;
  #everInit = false;
  readonly #tensors = new Set<DeviceTensor>();
  readonly #regs = new Map<CompiledProgram, Registration>();
  #ts = { launches: 0, h2dBytes: 0, d2hBytes: 0 };
  #finalStats: WorkerStats | null = null;
  /** Device time of the last launch (ns). */
  lastDeviceNs = 0;
  /** Recording mask set on the device (DFX), and the worker config's own. */
  #devMask = 0;
  #devDump = 0;
  #cfgRec = { mask: 0, dumpBytes: 0 };
  #cores = 1;

  constructor(config: RunConfig = new RunConfig()) {
    if (!(config instanceof RunConfig)) {
      throw new TsptoArgumentError("E_ARG", `ChipWorker: config must be a RunConfig, got ${typeof config}`, callerSpan(), "construct it with new RunConfig({...})", { argument: "config", position: 1 });
    }
    this.config = config;
    this.#cfgRec = recordingOf(config);
    this.init();
  }

  get platform(): string { return this.config.platform; }
  get closed(): boolean { return this.#closed; }

  /** Opens the device (idempotent). A closed worker cannot be re-opened. */
  init(): this {
    if (this.#device) return this;
    if (this.#closed) throw rtErr("E_CLOSED", "ChipWorker is closed", "construct a new ChipWorker");
    if (this.config.platform === "cuda") {
      throw rtErr("E_PLATFORM", "platform 'cuda' is not available in this build (no CUDA device or runtime found)", "use platform 'cpu' or 'interp'");
    }
    const Native = loadNative();
    this.#cores = coreThreadCount();
    const opts = {
      deviceId: this.config.deviceId, coreThreads: this.#cores, schedThreads: this.config.aicpuThreadNum,
      scratchBytes: DEFAULT_SCRATCH_CAPACITY, memoryBytes: DEFAULT_MEMORY_BYTES,
      ringTaskWindow: this.config.ringTaskWindowFor(0), ringHeap: this.config.ringHeapFor(0), ringDepPool: this.config.ringDepPoolFor(0),
    };
    // Every native failure reaches the caller as a TsptoError (native_errors.ts).
    this.#device = translatingDevice(guardNative(() => new Native.Device(opts)));
    this.#everInit = true;
    return this;
  }

  #dev(): NativeDevice {
    if (this.#closed || !this.#device) throw rtErr("E_CLOSED", "ChipWorker is closed", "construct a new ChipWorker (close() releases its device)");
    return this.#device;
  }

  // ------------------------------------------------------------------ device memory
  allocTensor(shape: readonly number[], dtype: DType = "float32", opts: { init?: unknown } = {}): DeviceTensor {
    const dev = this.#dev();
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw rtErr("E_SHAPE", `allocTensor: shape must be a non-empty list of positive integers, got ${fmtShape(shape)}`);
    }
    if (!isDType(dtype)) throw rtErr("E_DTYPE", `allocTensor: unknown dtype ${JSON.stringify(dtype)}`, "use float32, float16, bfloat16, int8, int16, int32, int64, uint8 or bool");
    const nbytes = shape.reduce((a, b) => a * b, 1) * dtypeBytes(dtype);
    const ptr = dev.alloc(nbytes);
    const t = new DeviceTensor(ptr, shape, dtype, nbytes, this.#owner);
    this.#tensors.add(t);
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

  freeTensor(t: DeviceTensor): void {
    if (!(t instanceof DeviceTensor)) throw rtErr("E_ARG", `freeTensor: expected a DeviceTensor, got ${typeof t}`);
    if (t.owner !== this.#owner) throw rtErr("E_FOREIGN", "freeTensor: the DeviceTensor belongs to another ChipWorker", "free it with the worker that allocated it");
    if (this.#closed || !t.live) return; // twice, or after close: a no-op
    t.live = false;
    this.#tensors.delete(t);
    this.#device!.free(t.dataPtr);
  }

  #checkDevicePtr(devPtr: bigint | DeviceTensor, nbytes: number, what: string): bigint {
    if (devPtr instanceof DeviceTensor) {
      this.#checkTensor(devPtr, what);
      if (nbytes > devPtr.nbytes) throw rtErr("E_RANGE", `${what}: ${nbytes} bytes exceed the DeviceTensor's ${devPtr.nbytes} bytes`);
      return devPtr.dataPtr;
    }
    if (typeof devPtr !== "bigint") throw rtErr("E_ARG", `${what}: devPtr must be a bigint device address or a DeviceTensor, got ${typeof devPtr}`);
    return devPtr;
  }

  /** Explicit D2H: device [devPtr, devPtr+nbytes) -> host. */
  copyFrom(host: ArrayBufferView | HostTensor, devPtr: bigint | DeviceTensor, nbytes: number): void {
    const dev = this.#dev();
    const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyFrom");
    const view = host instanceof HostTensor ? host.data : host;
    if (!ArrayBuffer.isView(view)) throw rtErr("E_ARG", "copyFrom: host must be a TypedArray or HostTensor");
    if (view.byteLength < nbytes) throw rtErr("E_RANGE", `copyFrom: host buffer has ${view.byteLength} bytes, ${nbytes} requested`);
    dev.d2h(view, ptr, nbytes);
  }

  /** Explicit H2D: host -> device [devPtr, devPtr+nbytes). */
  copyTo(devPtr: bigint | DeviceTensor, host: ArrayBufferView | HostTensor, nbytes: number): void {
    const dev = this.#dev();
    const ptr = this.#checkDevicePtr(devPtr, nbytes, "copyTo");
    const view = host instanceof HostTensor ? host.data : host;
    if (!ArrayBuffer.isView(view)) throw rtErr("E_ARG", "copyTo: host must be a TypedArray or HostTensor");
    if (view.byteLength < nbytes) throw rtErr("E_RANGE", `copyTo: host buffer has ${view.byteLength} bytes, ${nbytes} requested`);
    dev.h2d(ptr, view, nbytes);
  }

  #checkTensor(t: DeviceTensor, what: string): void {
    if (t.owner !== this.#owner) {
      throw rtErr("E_FOREIGN", `${what}: DeviceTensor belongs to another ChipWorker`, "a DeviceTensor is bound to the worker that allocated it: allocate it on this worker, or run on its own worker");
    }
    if (!t.live || this.#closed) {
      throw rtErr("E_FREED", `${what}: DeviceTensor is not a live allocation owned by this ChipWorker`, "it was freed (freeTensor) or its worker was closed; allocate it again");
    }
  }

  // ------------------------------------------------------------------ registration
  #register(compiled: CompiledProgram): Registration {
    if (!(compiled instanceof CompiledProgram)) throw rtErr("E_ARG", `expected a CompiledProgram, got ${compiled === null ? "null" : typeof compiled}`, "compile with ir.compile(...) or f.compile(...)");
    const dev = this.#dev();
    const cached = this.#regs.get(compiled);
    if (cached && !cached.closed) return cached;
    if (compiled.platform !== this.platform) {
      throw rtErr("E_PLATFORM", `CompiledProgram.platform='${compiled.platform}' does not match ChipWorker.platform='${this.platform}'. Compile for the matching platform, or construct ChipWorker(new RunConfig({ platform: '${compiled.platform}' })).`);
    }
    if (compiled.meta.scratchBytes > DEFAULT_SCRATCH_CAPACITY) {
      throw rtErr("E_SCRATCH", `program needs ${compiled.meta.scratchBytes} bytes of per-core scratch; this device has ${DEFAULT_SCRATCH_CAPACITY}`);
    }
    const callable = compiled.chipCallable;
    const sig = signatureOf(compiled.meta);
    // argBytes: the native launch checks each host view's live length against these and stages only them.
    const moduleId = callable.kind === "library" ? dev.loadModule(callable.path, sig.map((p) => (p.tensor ? p.nbytes : -1))) : -1;
    const reg: Registration = { compiled, sig, moduleId, args: new Array(sig.length), kinds: new Uint8Array(sig.length), closed: false };
    this.#regs.set(compiled, reg);
    return reg;
  }

  #unregister(reg: Registration): void {
    if (reg.closed) return;
    reg.closed = true;
    if (this.#regs.get(reg.compiled) === reg) this.#regs.delete(reg.compiled);
    if (reg.moduleId >= 0 && this.#device && !this.#closed) this.#device.unloadModule(reg.moduleId);
  }

  register(compiled: CompiledProgram): RegistrationHandle {
    const reg = this.#register(compiled);
    if (reg.handle) return reg.handle;
    const worker = this;
    const handle = function (...args: unknown[]) { return worker.#launch(reg, args); } as RegistrationHandle;
    Object.defineProperties(handle, {
      compiled: { value: compiled, enumerable: true },
      closed: { get: () => reg.closed || worker.#closed, enumerable: true },
      unregister: { value: () => worker.#unregister(reg) },
      callAsync: { value: (...args: unknown[]) => worker.#launchAsync(reg, args) },
    });
    reg.handle = handle;
    return handle;
  }

  // ------------------------------------------------------------------ launches
  run(compiled: CompiledProgram, ...args: unknown[]): unknown {
    return this.#launch(this.#register(compiled), args);
  }

  runAsync(compiled: CompiledProgram, ...args: unknown[]): Promise<unknown> {
    try {
      return this.#launchAsync(this.#register(compiled), args);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Validates args against the signature and fills reg.args/reg.kinds. Returns the arg count. */
  #pack(reg: Registration, args: unknown[]): RunConfig | undefined {
    if (reg.closed || this.#closed) {
      throw rtErr("E_HANDLE_CLOSED", `registration of '${reg.compiled.meta.name}' is closed (its worker was closed or it was unregistered)`, "register the program again: worker.register(compiled)");
    }
    let n = args.length;
    let cfg: RunConfig | undefined;
    if (n > 0 && args[n - 1] instanceof RunConfig) { cfg = args[n - 1] as RunConfig; n--; }
    if (cfg && cfg.platform !== this.platform) {
      throw rtErr("E_PLATFORM", `RunConfig.platform='${cfg.platform}' does not match ChipWorker.platform='${this.platform}'`, "a per-launch RunConfig can change DFX flags, not the platform; use a worker of that platform");
    }
    const sig = reg.sig;
    if (n !== sig.length) {
      throw rtErr("E_ARITY", `'${reg.compiled.meta.name}' takes ${sig.length} arguments (${sig.map((p) => p.name).join(", ")}), got ${n}`, "pass one argument per kernel parameter (optionally followed by a RunConfig)");
    }
    for (let i = 0; i < n; i++) {
      const p = sig[i];
      const a = args[i];
      if (!p.tensor) {
        if (typeof a !== "number" && typeof a !== "boolean" && typeof a !== "bigint") {
          throw rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${reg.compiled.meta.name}' must be a ${p.dtype} scalar, got ${describe(a)}`);
        }
        if (p.value === undefined) checkScalar(p.dtype, a, p.name, i); // 1.5 / NaN / true for an int never reach the device
        if (p.value !== undefined && a !== p.value && !(typeof a === "bigint" && BigInt(p.value as number) === a)) {
          throw rtErr("E_SPECIALIZED", `argument '${p.name}' (#${i + 1}) of '${reg.compiled.meta.name}' is ${String(a)}, but the program was compiled for ${p.name}=${String(p.value)}`,
            `scalar parameters annotated number/boolean are specialized on their value: compile again for this value (jit calls do it automatically), or annotate the parameter pl.Scalar<pl.INT64> to keep it dynamic`);
        }
        reg.args[i] = a;
        reg.kinds[i] = p.scalarKind;
        continue;
      }
      if (a instanceof DeviceTensor) {
        this.#checkTensor(a, `argument '${p.name}' (#${i + 1})`);
        if (a.dtype !== p.dtype || !sameShape(a.shape, p.shape)) throw mismatch(reg, p, i, a.shape, a.dtype);
        reg.args[i] = a.dataPtr;
        reg.kinds[i] = ArgKind.Device;
        continue;
      }
      const h = a instanceof HostTensor ? a : asTensorLike(a);
      if (!h) throw rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${reg.compiled.meta.name}' must be a tensor (HostTensor, DeviceTensor or {data, shape}), got ${describe(a)}`);
      if (h.dtype !== p.dtype || !sameShape(h.shape, p.shape)) throw mismatch(reg, p, i, h.shape, h.dtype);
      checkHostView(h.data, p.nbytes, p.name, i); // detached / shrunk since the tensor was made
      reg.args[i] = h.data;
      reg.kinds[i] = p.hostKind;
    }
    return cfg;
  }

  #result(reg: Registration, args: unknown[]): unknown {
    const r = reg.compiled.meta.returns;
    if (!reg.compiled.meta.hasReturn || r.length === 0) return undefined;
    return r.length === 1 ? args[r[0]] : r.map((i) => args[i]);
  }

  static {
    trustedLaunch = (w, compiled) => {
      const reg = w.#register(compiled);
      return (args) => w.#launchTrusted(reg, args);
    };
  }

  /**
   * A launch whose arguments the caller already matched against the program's signature
   * (the jit's fast path compared shapes, dtypes and specialized values): HostTensor and
   * scalar arguments are packed without validating them again.
   */
  #launchTrusted(reg: Registration, args: readonly unknown[]): unknown {
    if (reg.closed || this.#closed) return this.#launch(reg, args as unknown[]); // throws the closed error
    const sig = reg.sig;
    for (let i = 0; i < sig.length; i++) {
      const p = sig[i];
      if (p.tensor) {
        reg.args[i] = (args[i] as HostTensor).data;
        reg.kinds[i] = p.hostKind;
      } else {
        reg.args[i] = args[i];
        reg.kinds[i] = p.scalarKind;
      }
    }
    if (this.#cfgRec.mask !== 0) return this.#launchRecorded(reg, this.config, args as unknown[]);
    if (reg.moduleId >= 0) {
      if (this.#devMask !== 0) this.#setRecording(0, 0);
      this.lastDeviceNs = this.#device!.launch(reg.moduleId, reg.args, reg.kinds);
    } else {
      this.lastDeviceNs = this.#interpLaunch(reg);
    }
    return this.#result(reg, args as unknown[]);
  }

  #setRecording(mask: number, dumpBytes: number): void {
    if (mask === this.#devMask && dumpBytes === this.#devDump) return;
    this.#device!.setRecording(mask, dumpBytes);
    this.#devMask = mask;
    this.#devDump = dumpBytes;
  }

  /** The RunConfig a launch runs under: the trailing one, else the worker's. */
  #recordingFor(cfg: RunConfig | undefined): { cfg: RunConfig; mask: number; dumpBytes: number } {
    if (!cfg) return { cfg: this.config, ...this.#cfgRec };
    return { cfg, ...recordingOf(cfg) };
  }

  /** A launch with DFX recording on (cpu: native trace -> files; interp: nothing, said once). */
  #launchRecorded(reg: Registration, cfg: RunConfig, args: unknown[]): unknown {
    const rec = recordingOf(cfg);
    if (reg.moduleId < 0) {
      this.#warnInterpDfx();
      this.lastDeviceNs = this.#interpLaunch(reg);
      return this.#result(reg, args);
    }
    this.#setRecording(rec.mask, rec.dumpBytes);
    this.lastDeviceNs = this.#device!.launch(reg.moduleId, reg.args, reg.kinds);
    this.#writeTrace(reg, cfg);
    return this.#result(reg, args);
  }

  #writeTrace(reg: Registration, cfg: RunConfig): void {
    const trace = this.#device!.takeTrace();
    if (trace) writeDfx(reg.compiled.outputDir, reg.compiled.meta, cfg, trace, this.#cores, this.config.deviceId);
  }

  #warnInterpDfx(): void {
    if (interpDfxWarned) return;
    interpDfxWarned = true;
    process.emitWarning("DFX outputs (enableChipSwimlane, enableDepGen, enablePmu, enableDumpArgs, enableScopeStats) are recorded on the cpu platform only; the interp platform writes no dfx_outputs", { code: "TSPTO_DFX_INTERP" });
  }

  #launch(reg: Registration, args: unknown[]): unknown {
    const rec = this.#recordingFor(this.#pack(reg, args));
    if (rec.mask !== 0) return this.#launchRecorded(reg, rec.cfg, args);
    if (reg.moduleId >= 0) {
      if (this.#devMask !== 0) this.#setRecording(0, 0);
      this.lastDeviceNs = this.#device!.launch(reg.moduleId, reg.args, reg.kinds);
    } else {
      this.lastDeviceNs = this.#interpLaunch(reg);
    }
    return this.#result(reg, args);
  }

  async #launchAsync(reg: Registration, args: unknown[]): Promise<unknown> {
    const rec = this.#recordingFor(this.#pack(reg, args));
    if (reg.moduleId >= 0) {
      const a = [...reg.args], k = reg.kinds.slice();
      // Launches of one device run in order: the mask set now applies to this launch.
      this.#setRecording(rec.mask, rec.dumpBytes);
      this.lastDeviceNs = await this.#device!.launchAsync(reg.moduleId, a, k);
      if (rec.mask !== 0) this.#writeTrace(reg, rec.cfg);
    } else {
      if (rec.mask !== 0) this.#warnInterpDfx();
      this.lastDeviceNs = this.#interpLaunch(reg);
    }
    return this.#result(reg, args);
  }

  /** interp platform: stage host arguments like the device does, then evaluate the IR. */
  #interpLaunch(reg: Registration): number {
    const callable = reg.compiled.chipCallable;
    if (callable.kind !== "ir") throw new Error("internal: interp launch of a library");
    const dev = this.#device!;
    const values: Value[] = [];
    // Out/InOut host tensors are copied back after the launch; DeviceTensors are read and
    // written in place (uncounted internal accesses: they never cross host/device).
    const writeBack: { tv: TensorValue; host?: ArrayBufferView; ptr?: bigint; nbytes: number }[] = [];
    reg.sig.forEach((p, i) => {
      const a = reg.args[i];
      const kind = reg.kinds[i];
      if (!p.tensor) { values.push(kind === ArgKind.Bool ? Boolean(a) : Number(a)); return; }
      const Ctor = typedArrayFor(p.dtype) as unknown as new (n: number) => TensorValue["data"];
      const data = new Ctor(p.nbytes / dtypeBytes(p.dtype));
      const tv: TensorValue = { kind: "tensor", shape: p.shape, dtype: p.dtype, data };
      const bytes = new Uint8Array(data.buffer, data.byteOffset, p.nbytes);
      if (kind === ArgKind.Device) {
        dev.readDevice(bytes, a as bigint, p.nbytes);
        writeBack.push({ tv, ptr: a as bigint, nbytes: p.nbytes });
      } else {
        const src = a as ArrayBufferView;
        checkHostView(src, p.nbytes, p.name, i);
        if (kind !== ArgKind.HostOut) { bytes.set(new Uint8Array(src.buffer, src.byteOffset, p.nbytes)); this.#ts.h2dBytes += p.nbytes; }
        if (kind !== ArgKind.HostIn) writeBack.push({ tv, host: src, nbytes: p.nbytes });
      }
      values.push(tv);
    });
    const t0 = process.hrtime.bigint();
    interpret(callable.program, values);
    const ns = Number(process.hrtime.bigint() - t0);
    for (const w of writeBack) {
      const bytes = new Uint8Array(w.tv.data.buffer, w.tv.data.byteOffset, w.nbytes);
      if (w.ptr !== undefined) { dev.writeDevice(w.ptr, bytes, w.nbytes); continue; }
      new Uint8Array(w.host!.buffer, w.host!.byteOffset, w.nbytes).set(bytes);
      this.#ts.d2hBytes += w.nbytes;
    }
    this.#ts.launches++;
    return ns;
  }

  // ------------------------------------------------------------------ lifecycle, stats
  get stats(): WorkerStats {
    if (this.#finalStats) return { ...this.#finalStats };
    if (!this.#device) return { launches: 0, h2dBytes: 0, d2hBytes: 0, deviceBytesInUse: 0, liveTensors: 0 };
    const s = this.#device.stats();
    return {
      launches: s.launches + this.#ts.launches,
      h2dBytes: s.h2dBytes + this.#ts.h2dBytes,
      d2hBytes: s.d2hBytes + this.#ts.d2hBytes,
      deviceBytesInUse: s.bytesInUse,
      liveTensors: this.#tensors.size,
    };
  }

  /** Native counters (module loads, tasks) for tests and tools. */
  get deviceStats() {
    return this.#device && !this.#closed ? this.#device.stats() : null;
  }

  close(): void {
    if (this.#closed) return;
    const before = this.#device ? this.stats : null;
    for (const reg of [...this.#regs.values()]) this.#unregister(reg);
    for (const t of this.#tensors) t.live = false;
    this.#tensors.clear();
    this.#closed = true;
    if (this.#device) {
      const s = this.#device.stats();
      this.#finalStats = { launches: before!.launches, h2dBytes: before!.h2dBytes, d2hBytes: before!.d2hBytes, deviceBytesInUse: 0, liveTensors: 0 };
      void s;
      this.#device.close();
    }
    this.#device = null;
    for (const [k, w] of defaultWorkers) if (w === this) defaultWorkers.delete(k);
  }

  [Symbol.dispose](): void {
    this.close();
  }
  get initialized(): boolean { return this.#everInit && !this.#closed; }
}

/** JSON-like text of a user's shape that never throws (BigInt entries print as `4n`). */
function fmtShape(shape: unknown): string {
  if (!Array.isArray(shape)) return formatValue(shape);
  return `[${shape.map((d: unknown) => (typeof d === "bigint" ? `${d}n` : typeof d === "number" ? JSON.stringify(d) : formatValue(d))).join(",")}]`;
}
function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
function describe(a: unknown): string {
  if (a === null) return "null";
  if (a instanceof DeviceTensor) return a.toString();
  if (ArrayBuffer.isView(a)) return `${a.constructor.name}(${(a as unknown as { length: number }).length}) without a shape`;
  return typeof a === "object" ? (a as object).constructor?.name ?? "object" : `${typeof a} ${String(a)}`;
}
function mismatch(reg: Registration, p: ParamSig, i: number, shape: readonly number[], dtype: string): TsptoRuntimeError {
  return rtErr("E_ARG", `argument '${p.name}' (#${i + 1}) of '${reg.compiled.meta.name}': expected a ${p.dtype} tensor of shape ${shapeStr(p.shape)}, got ${dtype} of shape ${shapeStr(shape)}`,
    "the program was compiled for the shapes and dtypes of its sample arguments: compile it again for these (jit calls specialize automatically)");
}

/**
 * @internal For the jit's fast path: a launcher of `compiled` on `w` that skips argument
 * validation (HostTensor and scalar arguments already matched against the signature).
 */
export function trustedLauncher(w: ChipWorker, compiled: CompiledProgram): (args: readonly unknown[]) => unknown {
  return trustedLaunch(w, compiled);
}
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

setDefaultDispatch((compiled, args) => {
  const last = args[args.length - 1];
  const cfg = last instanceof RunConfig ? last : new RunConfig({ platform: compiled.platform as "cpu" });
  return defaultWorker(cfg).run(compiled, ...args);
});

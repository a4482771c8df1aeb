// The interp platform's device: device memory is TypeScript memory (one ArrayBuffer per
// allocation, at a virtual 64-byte-aligned address that is never handed out twice), modules
// are lowered programs (program.json), and a launch evaluates the entry with the reference
// interpreter. Host arguments are staged like a real device does (In copied in, Out copied
// back, counted); DeviceTensor arguments are read and written in place.
import { readProgram, type ArtifactRef } from "../../artifact/index.js";
import { constants as bufferConstants } from "node:buffer";
import {
  dimSymbolsOf,
  TsptoOutOfMemoryError, TsptoRuntimeError, interpret, newTensor, type InterpStats, type Program, type TensorType, type TensorValue, type Value,
} from "../../ir/index.js";
import { ArgKind, oomHint, type Device, type DeviceOptions, type DeviceStats, type DeviceTrace } from "../target.js";

const ALIGN = 64n;
const hex = (a: bigint) => `0x${a.toString(16)}`;
const err = (code: string, msg: string, hint?: string) => new TsptoRuntimeError(code, msg, undefined, hint);

interface Allocation { readonly base: bigint; readonly size: number; readonly bytes: Uint8Array }
/** A launch whose arguments are bound: host inputs already copied, result views remembered. */
interface Staged {
  readonly program: Program;
  readonly values: readonly Value[];
  readonly writeBack: readonly { tv: TensorValue; host: ArrayBufferView; nbytes: number }[];
}

export class InterpDevice implements Device {
  readonly records = false;
  readonly #capacity: number;
  readonly #allocs = new Map<bigint, Allocation>();
  #next = 1n << 32n;
  #inUse = 0;
  readonly #modules = new Map<number, Program>();
  #nextModule = 1;
  #closed = false;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #s = { launches: 0, h2dBytes: 0, d2hBytes: 0, moduleLoads: 0, tasksRun: 0 };

  constructor(opts: DeviceOptions) {
    this.#capacity = Math.floor(opts.memoryBytes / 64) * 64;
  }

  #open(op: string): void {
    if (this.#closed) throw err("E_CLOSED", `${op}: device is closed`, "construct a new ChipWorker");
  }

  #size(op: string, nbytes: number): void {
    if (!Number.isSafeInteger(nbytes) || nbytes < 0) throw err("E_ARG", `${op}: nbytes must be a non-negative integer, got ${String(nbytes)}`);
  }

  alloc(nbytes: number): bigint {
    this.#open("alloc");
    this.#size("alloc", nbytes);
    const reserved = Math.max(64, Math.ceil(nbytes / 64) * 64);
    const oom = (why: string) => new TsptoOutOfMemoryError("E_DEVICE_OOM", `device out of memory: requested ${nbytes} bytes${why}`, undefined,
      oomHint("set TSPTO_DEVICE_MEMORY to reserve more device memory"));
    if (this.#inUse + reserved > this.#capacity) throw oom(`, ${this.#inUse} bytes in use of ${this.#capacity} bytes capacity`);
    // each allocation is one ArrayBuffer: the host's limit on one buffer, and the host's memory, bound it
    if (reserved > bufferConstants.MAX_LENGTH) {
      throw oom(`: the interp platform holds each allocation in one host buffer, of at most ${bufferConstants.MAX_LENGTH} bytes`);
    }
    let bytes: Uint8Array;
    try { bytes = new Uint8Array(reserved); } catch (e) {
      throw oom(`: the host could not allocate them (${(e as Error).message})`);
    }
    const base = this.#next;
    this.#next += BigInt(reserved) + ALIGN;
    this.#allocs.set(base, { base, size: nbytes, bytes });
    this.#inUse += reserved;
    return base;
  }

  free(addr: bigint): void {
    this.#open("free");
    const a = this.#allocs.get(addr);
    if (!a) throw err("E_ADDRESS", `free: ${this.#describe(addr)}`);
    this.#allocs.delete(addr);
    this.#inUse -= a.bytes.byteLength;
  }

  isLive(addr: bigint): boolean {
    return this.#allocs.has(addr);
  }

  #describe(addr: bigint): string {
    for (const a of this.#allocs.values()) {
      if (addr > a.base && addr < a.base + BigInt(a.bytes.byteLength)) {
        return `${hex(addr)} is an interior pointer (offset ${addr - a.base} into the allocation at ${hex(a.base)} of ${a.size} bytes), not the start of an allocation`;
      }
    }
    return `${hex(addr)} is not a live allocation (already freed or never allocated)`;
  }

  /** The bytes [addr, addr+nbytes) inside one live allocation. */
  #range(op: string, addr: bigint, nbytes: number): Uint8Array {
    this.#size(op, nbytes);
    if (typeof addr !== "bigint") throw err("E_ARG", `${op}: address must be a bigint, got ${typeof addr}`);
    for (const a of this.#allocs.values()) {
      if (addr >= a.base && (addr < a.base + BigInt(a.size) || (addr === a.base && nbytes === 0))) {
        const off = Number(addr - a.base);
        if (nbytes > a.size - off) {
          throw err("E_ADDRESS", `${op}: range [${hex(addr)}, ${hex(addr)} + ${nbytes}) leaves the allocation at ${hex(a.base)} of ${a.size} bytes (${a.size - off} bytes available from ${hex(addr)})`);
        }
        return a.bytes.subarray(off, off + nbytes);
      }
    }
    throw err("E_ADDRESS", `${op}: ${hex(addr)} is not inside a live allocation (freed, never allocated, or past the end of one)`);
  }

  #view(op: string, v: ArrayBufferView, nbytes: number): Uint8Array {
    if (!ArrayBuffer.isView(v)) throw err("E_ARG", `${op}: host must be a TypedArray`);
    if (v.byteLength < nbytes) throw err("E_HOST_VIEW", `${op}: host buffer has ${v.byteLength} bytes, ${nbytes} requested`);
    return new Uint8Array(v.buffer, v.byteOffset, nbytes);
  }

  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void {
    this.#open("h2d");
    this.#range("h2d", addr, nbytes).set(this.#view("h2d", src, nbytes));
    this.#s.h2dBytes += nbytes;
  }

  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void {
    this.#open("d2h");
    const src = this.#range("d2h", addr, nbytes);
    this.#view("d2h", dst, nbytes).set(src);
    this.#s.d2hBytes += nbytes;
  }

  d2d(dst: bigint, src: bigint, nbytes: number): void {
    this.#open("d2d");
    this.#range("d2d", dst, nbytes).set(this.#range("d2d", src, nbytes));
  }

  load(artifact: ArtifactRef): number {
    this.#open("load");
    const program = readProgram(artifact);
    const id = this.#nextModule++;
    this.#modules.set(id, program);
    this.#s.moduleLoads++;
    return id;
  }

  unload(module: number): void {
    this.#modules.delete(module);
  }

  launch(module: number, args: readonly unknown[], kinds: Uint8Array): number {
    return this.#run(this.#stage(this.#program("launch", module), args, kinds));
  }

  #program(op: string, module: number): Program {
    this.#open(op);
    const program = this.#modules.get(module);
    if (!program) throw err("E_MODULE", `${op}: unknown module id ${module} (never loaded or already unloaded)`);
    return program;
  }

  /**
   * Binds a launch's arguments to interpreter values: host inputs are copied into the
   * device-side buffers now (`In`/`InOut`, counted as H2D), DeviceTensors are viewed in place,
   * and the host views that receive results are remembered for the write-back.
   */
  #stage(program: Program, args: readonly unknown[], kinds: Uint8Array): Staged {
    const entry = program.entryFunction;
    const values: Value[] = [];
    const writeBack: { tv: TensorValue; host: ArrayBufferView; nbytes: number }[] = [];
    // dynamic dimensions: their extents follow the parameters, in order of first appearance
    const symbols = dimSymbolsOf(entry.params.map((p) => (p.var.type.kind === "tensor" ? p.var.type.shape : null)));
    const extent = new Map(symbols.map((s, k) => [s, Number(args[entry.params.length + k])]));
    for (const [s, n] of extent) if (!Number.isSafeInteger(n) || n < 1) throw err("E_ARG", `launch: dynamic dimension '${s}' is ${String(n)}; it must be an integer >= 1`);
    entry.params.forEach((p, i) => {
      const a = args[i];
      const kind = kinds[i];
      if (p.var.type.kind !== "tensor") {
        values.push(kind === ArgKind.Bool ? Boolean(a) : Number(a));
        return;
      }
      const t = p.var.type as TensorType;
      const shape = t.shape.map((d) => (typeof d === "number" ? d : extent.get(d)!));
      if (kind === ArgKind.Device) {
        // in place: a typed view of the allocation's bytes
        const empty = newTensor([0], t.dtype);
        const Ctor = empty.data.constructor as (new (b: ArrayBufferLike, off: number, n: number) => TensorValue["data"]) & { BYTES_PER_ELEMENT: number };
        const n = shape.reduce((x, y) => x * y, 1);
        const bytes = this.#range(`launch argument #${i + 1}`, a as bigint, n * Ctor.BYTES_PER_ELEMENT);
        values.push({ ...empty, shape, data: new Ctor(bytes.buffer, bytes.byteOffset, n) });
        return;
      }
      const tv = newTensor(shape, t.dtype);
      const nbytes = tv.data.byteLength;
      const host = a as ArrayBufferView;
      if (!ArrayBuffer.isView(host) || host.byteLength < nbytes) {
        throw err("E_HOST_VIEW", `launch: argument #${i + 1} host buffer has ${ArrayBuffer.isView(host) ? host.byteLength : 0} bytes, ${nbytes} needed (detached or shrunk?)`);
      }
      if (kind !== ArgKind.HostOut) {
        new Uint8Array(tv.data.buffer, tv.data.byteOffset, nbytes).set(new Uint8Array(host.buffer, host.byteOffset, nbytes));
        this.#s.h2dBytes += nbytes;
      }
      if (kind !== ArgKind.HostIn) writeBack.push({ tv, host, nbytes });
      values.push(tv);
    });
    return { program, values, writeBack };
  }

  #run({ program, values, writeBack }: Staged): number {
    const stats: InterpStats = { tasks: 0 };
    this.#s.launches++;
    const t0 = process.hrtime.bigint();
    interpret(program, values, stats);
    const ns = Number(process.hrtime.bigint() - t0);
    this.#s.tasksRun += stats.tasks;
    for (const w of writeBack) {
      if (w.host.byteLength < w.nbytes) throw err("E_HOST_VIEW", `launch: an output host buffer shrank to ${w.host.byteLength} bytes during the launch`);
      new Uint8Array(w.host.buffer, w.host.byteOffset, w.nbytes).set(new Uint8Array(w.tv.data.buffer, w.tv.data.byteOffset, w.nbytes));
      this.#s.d2hBytes += w.nbytes;
    }
    return ns;
  }

  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array): Promise<number> {
    // The module is resolved now (as the native device does): unloading it while this launch
    // is queued does not pull it away; a device closed meanwhile rejects with E_CLOSED.
    // Its host inputs are staged now too (SEMANTICS.md: an async launch copies its inputs when
    // called), so changing an input buffer while the launch is queued never changes its result.
    let staged: Staged;
    try { staged = this.#stage(this.#program("launchAsync", module), args, kinds); } catch (e) { return Promise.reject(e); }
    const run = this.#queue.then(() => { this.#open("launch"); return this.#run(staged); });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  stats(): DeviceStats {
    return {
      ...this.#s, bytesInUse: this.#inUse, liveAllocations: this.#allocs.size, capacity: this.#capacity,
      modulesLoaded: this.#modules.size,
    };
  }

  setRecording(): void { /* interp records nothing (Device.records = false) */ }
  takeTrace(): DeviceTrace | null { return null; }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#allocs.clear();
    this.#modules.clear();
    this.#inUse = 0;
  }

  get closed(): boolean { return this.#closed; }
}

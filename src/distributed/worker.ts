// DistributedWorker (PyPTO's L3 DistributedWorker): one per process, a ChipWorker per local
// device, and — when the process was started by mpirun — a rank in an MPI world. Sharded
// tensors hold one DeviceTensor per device across all ranks; collectives combine the devices
// of this process through the runtime (copyFrom/copyTo) and the ranks through MPI (Open MPI's
// libmpi, loaded at run time by the native addon).
//
// Device numbering: the world has N = size * devices devices; device g = rank * devices + d
// is local device d of rank g / devices. Every rank must use the same `devices`.
//
// Agreement: every collective is numbered (1, 2, ... in call order) and described (kind,
// shape, dtype, op, root); across ranks, its first MPI call first checks that every rank passed
// the same description (native/src/mpi.cc, "Agreement"), so ranks that disagree, or one whose
// own arguments fail, make every rank fail with a named error instead of mixing data or
// waiting forever.
import { TsptoRuntimeError } from "../ir/index.js";
import { ChipWorker } from "../runtime/worker.js";
import { RunConfig } from "../runtime/config.js";
import { DeviceTensor } from "../runtime/device_tensor.js";
import { HostTensor, asTensorLike } from "../runtime/host/index.js";
import { loadNative } from "../targets/native.js";
import { callerSpan } from "../runtime/caller.js";
import { hostname } from "node:os";
import { dtypeBytes, isDType, typedArrayFor, type DType } from "../runtime/dtype.js";
import { benchmark, type BenchmarkStats } from "../runtime/benchmark.js";
import {
  callMpi, Disagreement, MISMATCH_HINT, MpiType, launchEnv, reportLostRankOnSigterm, moveTypeOf, nativeMpi, REDUCE_OPS, reduceTypeOf,
  type MpiBuffer, type MpiCheck, type ReduceOp,
} from "./mpi.js";
import { axisFromStacked, bytesOf, chunkOffsets, layoutOf, prod, reduceInto, splitExtent, stackedFromAxis, type Layout } from "./layout.js";

const err = (code: string, msg: string, hint?: string) => new TsptoRuntimeError(code, msg, callerSpan(), hint);
const shapeStr = (s: readonly number[]) => `[${s.join(", ")}]`;
const INT_MAX = 2 ** 31 - 1;
/** Default of `timeoutS` (TSPTO_MPI_TIMEOUT): long enough for a rank that compiles or checkpoints while the others wait. */
export const DEFAULT_MPI_TIMEOUT_S = 300;
/** Default of `heartbeatS` (TSPTO_MPI_HEARTBEAT). */
export const DEFAULT_HEARTBEAT_S = 3;

export interface DistributedOptions {
  /** Local devices of this process (cpu: simulated chips sharing the machine's cores). Default: $TSPTO_DEVICES, else 1. */
  devices?: number;
  /** The RunConfig of every local ChipWorker (platform, DFX, rings); local device d gets deviceId = config.deviceId + localRank * devices + d. */
  config?: RunConfig;
  /**
   * "auto" (default): join the MPI world when started by mpirun; "required": fail unless
   * started by mpirun with MPI available; "off": this process alone (rank 0 of 1).
   */
  mpi?: "auto" | "required" | "off";
  /** Seconds a collective may wait for the other ranks before it fails (0 = forever). Default: $TSPTO_MPI_TIMEOUT, else 300. */
  timeoutS?: number;
  /**
   * Seconds without a heartbeat after which a peer rank counts as lost (its host or link is
   * down, or it is stopped); 0 turns that rule off (a peer whose process exits is still found
   * at once). Default: $TSPTO_MPI_HEARTBEAT, else 3.
   */
  heartbeatS?: number;
  /**
   * Check before each collective that every rank passed the same collective, shape, dtype, op
   * and root (one 16-byte MPI_Allreduce), and let a rank whose own arguments fail make every
   * rank fail. Default: true ($TSPTO_MPI_CHECKS=0 turns it off).
   */
  checks?: boolean;
}

/**
 * One tensor split along `axis` over every device of the world (PyPTO's StackedDeviceTensor).
 * The shards' extents along the axis differ by at most one: with E rows over N devices the
 * first E % N shards have one more (numpy.array_split's rule).
 */
export class ShardedTensor {
  /** The whole tensor's shape (shards concatenated along `axis`). */
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly axis: number;
  /** The shape of world shard g (`shape` with its extent along `axis`), for every device of the world. */
  readonly shardShapes: readonly (readonly number[])[];
  /** The shape of each shard when they are equal; else the largest (shard 0's). */
  readonly shardShape: readonly number[];
  /** This process's shards, one per local device, in device order. */
  readonly shards: readonly DeviceTensor[];
  /** Shards across all ranks (= devices of the world). */
  readonly numShards: number;
  /** World index of `shards[0]` (rank * devices). */
  readonly firstShard: number;
  /** @internal each world shard's extent along the axis */ readonly extents: readonly number[];
  /** @internal */ readonly owner: object;
  /** @internal */
  constructor(shape: readonly number[], dtype: DType, axis: number, shards: DeviceTensor[], extents: readonly number[], firstShard: number, owner: object) {
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.axis = axis;
    this.extents = Object.freeze([...extents]);
    this.shardShapes = Object.freeze(extents.map((e) => Object.freeze(shape.map((v, i) => (i === axis ? e : v)))));
    this.shardShape = this.shardShapes[0];
    this.shards = Object.freeze(shards);
    this.numShards = extents.length;
    this.firstShard = firstShard;
    this.owner = owner;
  }
  /** True when every shard has the same shape. */
  get even(): boolean {
    return this.extents.every((e) => e === this.extents[0]);
  }
  /** False once freed (DistributedWorker.free or close). */
  get live(): boolean {
    return this.shards.every((s) => s.live);
  }
  toString(): string {
    const last = this.shardShapes[this.numShards - 1];
    const of = this.even ? shapeStr(this.shardShape) : `${shapeStr(this.shardShape)} or ${shapeStr(last)}`;
    return `ShardedTensor(shape=${shapeStr(this.shape)}, dtype=${this.dtype}, axis=${this.axis}, shards=${this.numShards} of ${of}${this.live ? "" : ", freed"})`;
  }
}

/** Per-rank, per-device medians of `DistributedWorker.benchmark` (the same table on every rank). */
export class DistributedBenchmark {
  constructor(
    /** One row per device of the world, in (rank, device) order. */
    readonly rows: readonly { rank: number; device: number; deviceUsMedian: number; hostUsMedian: number }[],
    /** This process's full statistics, one per local device. */
    readonly local: readonly BenchmarkStats[],
  ) {}
  toString(): string {
    const f = (x: number) => x.toFixed(2).padStart(12);
    return ["rank  device   device us    host us  (medians)", ...this.rows.map((r) => `${String(r.rank).padStart(4)}  ${String(r.device).padStart(6)}${f(r.deviceUsMedian)}${f(r.hostUsMedian)}`)].join("\n");
  }
}

/** The participants of a collective in this process: one DeviceTensor per local device (or one). */
interface Operand {
  tensors: DeviceTensor[];
  workers: ChipWorker[];
  shape: readonly number[]; // each participant's (a sharded operand's: the first shard's)
  dtype: DType;
  axis: number;
  sharded: ShardedTensor | null;
}

/** A collective after its local checks: what it asks for (agreed by every rank), and the work. */
interface Plan<R> {
  desc: string;
  /** Moves the data; `check` goes with its first MPI call. */
  execute(check: MpiCheck): R;
  /** Releases what the plan allocated, when execute fails. */
  undo?(): void;
}

/** The record of one rank in the exchange that explains a disagreement. */
const DESC_BYTES = 512;
const FAILED = "failed: ";

/** A 64-bit hash of a description (two 32-bit FNV-style lanes). */
function hash64(s: string): bigint {
  let h1 = 0x811c9dc5, h2 = 0x9747b28c;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    h2 ^= h2 >>> 15;
  }
  return BigInt.asIntN(64, (BigInt(h1 >>> 0) << 32n) | BigInt(h2 >>> 0));
}

let openWorker: DistributedWorker | null = null;
let exitHooked = false;

export class DistributedWorker implements Disposable {
  /** One ChipWorker per local device. */
  readonly workers: readonly ChipWorker[];
  /** This process's rank in the MPI world (0 without mpirun). */
  readonly rank: number;
  /** Processes in the world (1 without mpirun). */
  readonly size: number;
  /** Rank among the processes on this host (OMPI_COMM_WORLD_LOCAL_RANK). */
  readonly localRank: number;
  /** True when collectives cross processes through MPI. */
  readonly usesMpi: boolean;
  /** Host name of each rank (this process's alone without MPI). */
  readonly hosts: readonly string[];
  /** The MPI library loaded (path and version string), when usesMpi. */
  readonly mpiLibrary: string | undefined;
  /** Seconds a collective waits for the other ranks before E_MPI_TIMEOUT (0 = forever). */
  readonly timeoutS: number;
  /** Seconds of silence after which the watch counts a peer as lost (0 = that rule off). */
  readonly heartbeatS: number;
  /** Whether collectives check that every rank passed the same arguments. */
  readonly checks: boolean;
  readonly #token = {};
  #closed = false;
  #seq = 0; // collectives so far (the same count on every rank)
  readonly #sharded = new Set<ShardedTensor>();

  constructor(opts: DistributedOptions | RunConfig = {}) {
    const o: DistributedOptions = opts instanceof RunConfig ? { config: opts } : opts;
    if (typeof o !== "object" || o === null) throw err("E_ARG", `DistributedWorker: options must be an object or a RunConfig, got ${String(o)}`);
    const known = ["devices", "config", "mpi", "timeoutS", "heartbeatS", "checks"];
    for (const k of Object.keys(o)) {
      if (!known.includes(k)) throw err("E_ARG", `DistributedWorker: unknown option '${k}'`, `known options: ${known.join(", ")}`);
    }
    const devices = o.devices ?? envInt("TSPTO_DEVICES") ?? 1;
    if (!Number.isInteger(devices) || devices < 1 || devices > 1024) {
      throw err("E_ARG", `DistributedWorker: devices must be an integer in [1, 1024], got ${String(devices)}`);
    }
    const config = o.config ?? new RunConfig();
    if (!(config instanceof RunConfig)) throw err("E_ARG", "DistributedWorker: config must be a RunConfig");
    const mode = o.mpi ?? "auto";
    if (!["auto", "required", "off"].includes(mode)) throw err("E_ARG", `DistributedWorker: mpi must be "auto", "required" or "off", got ${JSON.stringify(mode)}`);
    const timeoutS = o.timeoutS ?? envNumber("TSPTO_MPI_TIMEOUT") ?? DEFAULT_MPI_TIMEOUT_S;
    if (typeof timeoutS !== "number" || !(timeoutS >= 0)) {
      throw err("E_ARG", `DistributedWorker: timeoutS must be a number >= 0, got ${String(timeoutS)}${o.timeoutS === undefined ? " (from TSPTO_MPI_TIMEOUT)" : ""}`);
    }
    const heartbeatS = o.heartbeatS ?? envNumber("TSPTO_MPI_HEARTBEAT") ?? DEFAULT_HEARTBEAT_S;
    if (typeof heartbeatS !== "number" || !(heartbeatS >= 0)) {
      throw err("E_ARG", `DistributedWorker: heartbeatS must be a number >= 0, got ${String(heartbeatS)}${o.heartbeatS === undefined ? " (from TSPTO_MPI_HEARTBEAT)" : ""}`);
    }
    const checks = o.checks ?? process.env.TSPTO_MPI_CHECKS !== "0";
    if (typeof checks !== "boolean") throw err("E_ARG", `DistributedWorker: checks must be a boolean, got ${String(checks)}`);
    if (openWorker && !openWorker.#closed) {
      throw err("E_DIST_OPEN", "a DistributedWorker is already open in this process", "use one DistributedWorker per process (close() the other first)");
    }

    const env = mode === "off" ? null : launchEnv();
    if (mode === "required" && !env) {
      throw err("E_MPI_REQUIRED", "DistributedWorker({ mpi: \"required\" }): this process was not started by mpirun (no OMPI_COMM_WORLD_SIZE)", "start it with: mpirun -np <ranks> node --import tsx <script>");
    }
    if (env && env.launcher !== "openmpi") {
      throw err("E_MPI_MISSING", "this process was started by an MPI launcher other than Open MPI's mpirun (PMI variables, no OMPI_COMM_WORLD_*)", "tspto's distributed runtime uses Open MPI 4.x: install openmpi-bin and start with its mpirun");
    }
    let rank = 0, size = 1, hosts: string[] = [hostname()], library: string | undefined;
    if (env) {
      const mpi = nativeMpi();
      const info = callMpi(() => mpi.init({ heartbeatS, watch: true }));
      rank = info.rank;
      size = info.size;
      hosts = info.hosts;
      library = info.version ? `${info.library}, ${info.version.split(",")[0].trim()}` : info.library;
      callMpi(() => mpi.setTimeout(timeoutS));
      if (!exitHooked) {
        exitHooked = true;
        // A failing process must not wait in MPI_Finalize for ranks that wait for it; and the
        // peers' watches hear why it goes (an uncaught error's message, or its exit code).
        process.on("uncaughtExceptionMonitor", (e) => mpi.sayFailing(`uncaught ${describeError(e)}`));
        process.on("exit", (code) => mpi.setExitCode(code));
      }
      reportLostRankOnSigterm(rank);
      // Every rank must have the same number of devices.
      const mine = new Int32Array([devices]);
      const all = new Int32Array(size);
      callMpi(() => mpi.allgather(mine, all, 1, 4));
      const bad = [...all].findIndex((d) => d !== devices);
      if (bad >= 0) {
        throw err("E_DEVICES", `DistributedWorker: rank ${bad} has ${all[bad]} devices, rank ${rank} has ${devices}`, "give every rank the same devices (option devices or TSPTO_DEVICES)");
      }
    }
    this.rank = rank;
    this.size = size;
    this.localRank = env?.localRank ?? 0;
    this.usesMpi = env !== null;
    this.hosts = Object.freeze(hosts);
    this.mpiLibrary = library;
    this.timeoutS = timeoutS;
    this.heartbeatS = heartbeatS;
    this.checks = checks;
    const workers: ChipWorker[] = [];
    try {
      // Ranks on one host take consecutive device ids (a GPU each, once the cuda target exists).
      const firstId = config.deviceId + (env?.localRank ?? 0) * devices;
      for (let d = 0; d < devices; d++) {
        const w = new ChipWorker(config.with({ deviceId: firstId + d }), { dfxSubdir: `rank_${rank}/device_${d}` });
        workers.push(w);
      }
    } catch (e) {
      for (const w of workers) w.close();
      throw e;
    }
    this.workers = Object.freeze(workers);
    openWorker = this;
  }

  /** Local devices of this process. */
  get devices(): number {
    return this.workers.length;
  }
  /** Devices of the whole world (size * devices). */
  get worldDevices(): number {
    return this.size * this.workers.length;
  }
  get closed(): boolean {
    return this.#closed;
  }

  #check(what: string): void {
    if (this.#closed) throw err("E_CLOSED", `${what}: DistributedWorker is closed`, "construct a new DistributedWorker (without mpirun; MPI cannot restart in one process)");
  }

  // ------------------------------------------------------------------ sharded tensors
  /**
   * A tensor of `shape` split along `axis` (default 0) into one shard per device of the world;
   * an extent the device count does not divide gives shards that differ by one (the first
   * `shape[axis] % worldDevices` have one more). `init` (a host tensor of the whole shape)
   * fills this rank's shards from its own copy (every rank passes the same values: no
   * communication).
   */
  allocSharded(shape: readonly number[], dtype: DType = "float32", opts: { axis?: number; init?: unknown } = {}): ShardedTensor {
    this.#check("allocSharded");
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
      throw err("E_SHAPE", `allocSharded: shape must be a non-empty list of positive integers, got ${JSON.stringify(shape)}`);
    }
    if (!isDType(dtype)) throw err("E_DTYPE", `allocSharded: unknown dtype ${JSON.stringify(dtype)}`);
    const axis = opts.axis ?? 0;
    if (!Number.isInteger(axis) || axis < 0 || axis >= shape.length) {
      throw err("E_AXIS", `allocSharded: axis must be an integer in [0, ${shape.length - 1}] for shape ${shapeStr(shape)}, got ${String(axis)}`);
    }
    const n = this.worldDevices;
    if (shape[axis] < n) {
      throw err("E_SHARD", `allocSharded: shape ${shapeStr(shape)} cannot be split into ${n} shards along axis ${axis} (${shape[axis]} < ${n} = ${this.size} ranks x ${this.devices} devices: every device needs at least one)`,
        "make the tensor at least as long as the number of devices along the axis, or shard another axis");
    }
    const extents = splitExtent(shape[axis], n);
    let init: HostTensor | null = null;
    if (opts.init !== undefined) {
      init = asTensorLike(opts.init);
      if (!init || init.dtype !== dtype || !sameShape(init.shape, shape)) {
        throw err("E_INIT", `allocSharded: init must have shape=${shapeStr(shape)} dtype=${dtype}, got ${init ? `shape=${shapeStr(init.shape)} dtype=${init.dtype}` : `a ${typeof opts.init}`}`);
      }
    }
    const first = this.rank * this.devices;
    const shards: DeviceTensor[] = [];
    try {
      this.workers.forEach((w, d) => shards.push(w.allocTensor(shape.map((v, i) => (i === axis ? extents[first + d] : v)), dtype)));
    } catch (e) {
      shards.forEach((sh, d) => this.workers[d].freeTensor(sh));
      throw e;
    }
    const t = new ShardedTensor(shape, dtype, axis, shards, extents, first, this.#token);
    this.#sharded.add(t);
    if (init) this.#fillLocal(t, bytesOf(init.data));
    return t;
  }

  /** Writes this rank's shards from the bytes of a whole tensor. */
  #fillLocal(t: ShardedTensor, whole: Uint8Array): void {
    const l = layoutOf(t.shape, t.axis, t.extents, dtypeBytes(t.dtype));
    const stacked = stackedFromAxis(whole, l);
    const off = chunkOffsets(l);
    t.shards.forEach((s, d) => {
      const at = off[t.firstShard + d];
      this.workers[d].copyTo(s, stacked.subarray(at, at + s.nbytes), s.nbytes);
    });
  }

  /** Releases a sharded tensor's shards (or a DeviceTensor of one of the local workers). */
  free(t: ShardedTensor | DeviceTensor): void {
    if (t instanceof ShardedTensor) {
      this.#own(t, "free");
      t.shards.forEach((s, d) => this.workers[d].freeTensor(s));
      this.#sharded.delete(t);
      return;
    }
    if (t instanceof DeviceTensor) {
      this.#workerOf(t, "free").freeTensor(t);
      return;
    }
    throw err("E_ARG", `free: expected a ShardedTensor or DeviceTensor, got ${describe(t)}`);
  }

  /** The whole tensor as a HostTensor, on every rank (an all-gather to the host). */
  gather(t: ShardedTensor): HostTensor {
    return this.#collective("gather", () => {
      this.#live(t, "gather");
      const esize = dtypeBytes(t.dtype);
      const l = layoutOf(t.shape, t.axis, t.extents, esize);
      const split = this.#rankSplit(l, this.devices, esize, "gather");
      return {
        desc: `gather(${describeSharded(t)})`,
        execute: (check) => {
          const local = new Uint8Array(split.bytes[this.rank]);
          let at = 0;
          t.shards.forEach((s, d) => {
            this.workers[d].copyFrom(local.subarray(at, at + s.nbytes), s, s.nbytes);
            at += s.nbytes;
          });
          let stacked = local;
          if (this.size > 1) {
            stacked = new Uint8Array(split.total);
            this.#allgather(local, stacked, split, moveTypeOf(esize), check);
          }
          return hostTensorOf(axisFromStacked(stacked, l), t.shape, t.dtype);
        },
      };
    });
  }

  /** Splits rank 0's `host` (the whole tensor) over every device of `t` (other ranks' `host` is not read). */
  scatter(host: unknown, t: ShardedTensor): void {
    this.#collective("scatter", () => {
      this.#live(t, "scatter");
      const h = asTensorLike(host);
      if (!h || h.dtype !== t.dtype || !sameShape(h.shape, t.shape)) {
        throw err("E_ARG", `scatter: host must have shape=${shapeStr(t.shape)} dtype=${t.dtype} (the ShardedTensor's), got ${h ? `shape=${shapeStr(h.shape)} dtype=${h.dtype}` : describe(host)}`);
      }
      const esize = dtypeBytes(t.dtype);
      const count = countOf(prod(t.shape) * esize, esize, "scatter");
      return {
        desc: `scatter(${describeSharded(t)})`,
        execute: (check) => {
          let whole = bytesOf(h.data);
          if (this.size > 1) {
            const buf = this.rank === 0 ? whole : new Uint8Array(whole.length);
            callMpi(() => nativeMpi().bcast(buf, count, moveTypeOf(esize), 0, ...check));
            whole = buf;
          }
          this.#fillLocal(t, whole);
        },
      };
    });
  }

  // ------------------------------------------------------------------ launches
  /**
   * Runs `compiled` on every local device (SPMD): a ShardedTensor argument becomes that
   * device's shard; host tensors and scalars go to every device as they are (so a host Out
   * argument ends up with the last device's result). Returns each device's result. Uneven
   * shards need a program compiled for a dynamic extent along the axis (a name in the shape).
   */
  run(compiled: Parameters<ChipWorker["run"]>[0], ...args: unknown[]): unknown[] {
    this.#check("run");
    const per = this.#argsPerDevice(args);
    return this.workers.map((w, d) => w.run(compiled, ...per[d]));
  }

  /** `run` with the devices' launches in flight together (each off the JS thread). */
  async runAsync(compiled: Parameters<ChipWorker["run"]>[0], ...args: unknown[]): Promise<unknown[]> {
    this.#check("runAsync");
    const per = this.#argsPerDevice(args);
    return Promise.all(this.workers.map((w, d) => w.runAsync(compiled, ...per[d])));
  }

  #argsPerDevice(args: unknown[]): unknown[][] {
    for (const a of args) if (a instanceof ShardedTensor) this.#live(a, "run");
    return this.workers.map((_, d) => args.map((a) => (a instanceof ShardedTensor ? a.shards[d] : a)));
  }

  /**
   * `benchmark` on every device with its shard (a barrier first, then each local device in
   * turn), and every rank's and device's medians gathered to every rank: per-rank device and
   * host times of the same program.
   */
  benchmark(compiled: Parameters<typeof benchmark>[0], args: readonly unknown[], opts: { rounds?: number; warmup?: number } = {}): DistributedBenchmark {
    this.#check("benchmark");
    const per = this.#argsPerDevice([...args]);
    this.barrier();
    let local: BenchmarkStats[] = [];
    const all = this.#collective("benchmark", () => {
      // Measured before the gather: a rank whose launch fails makes the others fail with it.
      local = this.workers.map((w, d) => benchmark(compiled, per[d], { ...opts, worker: w }));
      const mine = new Float64Array(local.flatMap((b) => [b.deviceUsMedian, b.hostUsMedian]));
      return {
        desc: `benchmark(${this.devices} devices)`,
        execute: (check) => {
          if (this.size === 1) return mine;
          const out = new Float64Array(mine.length * this.size);
          callMpi(() => nativeMpi().allgather(mine, out, mine.length, MpiType.float64, ...check));
          return out;
        },
      };
    });
    const rows: { rank: number; device: number; deviceUsMedian: number; hostUsMedian: number }[] = [];
    for (let r = 0; r < this.size; r++) {
      for (let d = 0; d < this.devices; d++) {
        const i = (r * this.devices + d) * 2;
        rows.push({ rank: r, device: d, deviceUsMedian: all[i], hostUsMedian: all[i + 1] });
      }
    }
    return new DistributedBenchmark(rows, local);
  }

  // ------------------------------------------------------------------ collectives
  /**
   * Elementwise reduction over every device's tensor, in place: each shard of a
   * ShardedTensor (or each rank's DeviceTensor) ends up holding the reduction of all of them.
   */
  allReduce<T extends ShardedTensor | DeviceTensor>(t: T, op: ReduceOp = "sum"): T {
    return this.#collective("allReduce", () => {
      const x = this.#operand(t, "allReduce");
      const type = this.#reduceType(x, op, "allReduce");
      this.#evenShards(x, "allReduce");
      const count = countOf(x.tensors[0].nbytes, dtypeBytes(x.dtype), "allReduce");
      const opIndex = REDUCE_OPS.indexOf(op);
      return {
        desc: `allReduce(${describeOperand(x)}, op ${op})`,
        execute: (check) => {
          if (x.tensors.length === 1) {
            if (this.size > 1) this.#single(x, (buf) => nativeMpi().allreduce(buf, count, type, opIndex, ...check), true);
            return t;
          }
          const acc = this.#read(x, 0);
          for (let d = 1; d < x.tensors.length; d++) reduceInto(acc, this.#read(x, d), x.dtype, op);
          if (this.size > 1) callMpi(() => nativeMpi().allreduce(acc, count, type, opIndex, ...check));
          x.tensors.forEach((_, d) => this.#write(x, d, acc));
          return t;
        },
      };
    });
  }

  /**
   * Every device gets the concatenation, along the axis (a ShardedTensor's; axis 0 for a
   * DeviceTensor), of all devices' tensors in world order. Returns a new ShardedTensor whose
   * shards are the whole gathered tensor (or a new DeviceTensor on the same worker). Uneven
   * shards are gathered as they are.
   */
  allGather<T extends ShardedTensor | DeviceTensor>(t: T): T {
    return this.#collective("allGather", () => {
      const x = this.#operand(t, "allGather");
      const esize = dtypeBytes(x.dtype);
      const k = x.tensors.length;
      const n = this.size * k;
      // The chunks along the axis: a sharded tensor's shards, or one DeviceTensor per rank.
      const extents = x.sharded ? x.sharded.extents : Array<number>(n).fill(x.shape[x.axis]);
      const outShape = x.sharded ? x.sharded.shape : x.shape.map((v, i) => (i === x.axis ? v * n : v));
      const l = layoutOf(outShape, x.axis, extents, esize);
      const split = this.#rankSplit(l, k, esize, "allGather");
      const outs = this.#alloc(x.workers, () => outShape, x.dtype);
      return {
        desc: `allGather(${describeOperand(x)})`,
        undo: () => outs.forEach((o, d) => x.workers[d].freeTensor(o)),
        execute: (check) => {
          const type = moveTypeOf(esize);
          const direct = k === 1 && l.outer === 1 && this.size > 1 ? this.#nativeBuffers(x.workers[0], [x.tensors[0], outs[0]]) : null;
          if (direct) {
            this.#allgather(direct[0], direct[1], split, type, check);
          } else {
            const local = new Uint8Array(split.bytes[this.rank]);
            let at = 0;
            x.tensors.forEach((tt, d) => {
              local.set(this.#read(x, d), at);
              at += tt.nbytes;
            });
            let stacked = local;
            if (this.size > 1) {
              stacked = new Uint8Array(split.total);
              this.#allgather(local, stacked, split, type, check);
            }
            const whole = axisFromStacked(stacked, l);
            outs.forEach((o, d) => x.workers[d].copyTo(o, whole, whole.length));
          }
          return this.#result(x, outs, outShape.map((v, i) => (i === x.axis ? v * n : v)), Array<number>(n).fill(outShape[x.axis])) as T;
        },
      };
    });
  }

  /**
   * Reduces every device's tensor elementwise and leaves device g with chunk g of the result
   * (split along the axis into one chunk per device of the world; chunks differ by at most one
   * row when the device count does not divide the extent). Returns a new ShardedTensor (or
   * DeviceTensor) of the chunks.
   */
  reduceScatter<T extends ShardedTensor | DeviceTensor>(t: T, op: ReduceOp = "sum"): T {
    return this.#collective("reduceScatter", () => {
      const x = this.#operand(t, "reduceScatter");
      const type = this.#reduceType(x, op, "reduceScatter");
      this.#evenShards(x, "reduceScatter");
      const esize = dtypeBytes(x.dtype);
      const k = x.tensors.length;
      const n = this.size * k;
      const extent = x.shape[x.axis];
      if (extent < n) {
        throw err("E_SHARD", `reduceScatter: shape ${shapeStr(x.shape)} cannot be split into ${n} chunks along axis ${x.axis} (${extent} < ${n}: every device of the world needs at least one)`,
          "reduce a tensor at least as long as the number of devices along the axis");
      }
      const extents = splitExtent(extent, n);
      const l = layoutOf(x.shape, x.axis, extents, esize);
      const split = this.#rankSplit(l, k, esize, "reduceScatter");
      const off = chunkOffsets(l);
      const first = this.rank * k;
      const opIndex = REDUCE_OPS.indexOf(op);
      const outs = this.#alloc(x.workers, (d) => x.shape.map((v, i) => (i === x.axis ? extents[first + d] : v)), x.dtype);
      return {
        desc: `reduceScatter(${describeOperand(x)}, op ${op})`,
        undo: () => outs.forEach((o, d) => x.workers[d].freeTensor(o)),
        execute: (check) => {
          const mpi = nativeMpi();
          const scatter = (send: MpiBuffer, recv: MpiBuffer) => callMpi(() => (split.even
            ? mpi.reduceScatter(send, recv, split.counts[0], type, opIndex, ...check)
            : mpi.reduceScatterv(send, recv, split.counts, type, opIndex, ...check)));
          const direct = k === 1 && l.outer === 1 && this.size > 1 ? this.#nativeBuffers(x.workers[0], [x.tensors[0], outs[0]]) : null;
          if (direct) {
            scatter(direct[0], direct[1]);
          } else {
            const acc = this.#read(x, 0);
            for (let d = 1; d < k; d++) reduceInto(acc, this.#read(x, d), x.dtype, op);
            const stacked = stackedFromAxis(acc, l);
            let mine = stacked.subarray(off[first], off[first + k]);
            if (this.size > 1) {
              mine = new Uint8Array(split.bytes[this.rank]);
              scatter(stacked, mine);
            }
            outs.forEach((o, d) => {
              const at = off[first + d] - off[first];
              x.workers[d].copyTo(o, mine.subarray(at, at + o.nbytes), o.nbytes);
            });
          }
          return this.#result(x, outs, x.shape, extents) as T;
        },
      };
    });
  }

  /**
   * Copies device `root`'s tensor to every device, in place. For a ShardedTensor `root` is a
   * world device index (rank * devices + d); for a DeviceTensor it is a rank.
   */
  broadcast<T extends ShardedTensor | DeviceTensor>(t: T, root = 0): T {
    return this.#collective("broadcast", () => {
      const x = this.#operand(t, "broadcast");
      const k = x.tensors.length;
      const n = this.size * k;
      if (!Number.isInteger(root) || root < 0 || root >= n) {
        throw err("E_ROOT", `broadcast: root must be an integer in [0, ${n - 1}] (${x.sharded ? "a device of the world" : "a rank"}), got ${String(root)}`);
      }
      this.#evenShards(x, "broadcast");
      const rootRank = Math.floor(root / k), rootLocal = root % k;
      const esize = dtypeBytes(x.dtype);
      const nbytes = x.tensors[0].nbytes;
      const count = countOf(nbytes, esize, "broadcast");
      const type = moveTypeOf(esize);
      return {
        desc: `broadcast(${describeOperand(x)}, root ${root})`,
        execute: (check) => {
          if (k === 1) {
            if (this.size > 1) this.#single(x, (buf) => nativeMpi().bcast(buf, count, type, rootRank, ...check), this.rank !== rootRank);
            return t;
          }
          const buf = this.rank === rootRank ? this.#read(x, rootLocal) : new Uint8Array(nbytes);
          if (this.size > 1) callMpi(() => nativeMpi().bcast(buf, count, type, rootRank, ...check));
          x.tensors.forEach((_, d) => {
            if (!(this.rank === rootRank && d === rootLocal)) this.#write(x, d, buf);
          });
          return t;
        },
      };
    });
  }

  /** Waits until every rank arrives (local devices are synchronous: nothing to wait for). */
  barrier(): void {
    this.#collective("barrier", () => ({
      desc: "barrier()",
      execute: (check) => {
        if (this.size === 1) return;
        const [hash, seq] = check as readonly [bigint | null, number];
        if (hash === null) {
          callMpi(() => nativeMpi().barrier(null, seq));
        } else if (!callMpi(() => nativeMpi().agree(hash, seq, "barrier"))) {
          throw new Disagreement("barrier");
        }
      },
    }));
  }

  // ------------------------------------------------------------------ agreement
  /**
   * Runs one collective. `prepare` checks the arguments and allocates (it may throw: with
   * other ranks, this rank still takes part in the agreement, so they fail naming it instead
   * of waiting); then the first MPI call of `execute` checks that every rank described the
   * same collective.
   */
  #collective<R>(what: string, prepare: () => Plan<R>): R {
    this.#check(what);
    const seq = ++this.#seq;
    let plan: Plan<R>;
    try {
      plan = prepare();
    } catch (e) {
      if (this.size > 1 && this.checks) this.#failTogether(what, seq, e);
      throw e;
    }
    const text = `#${seq} ${plan.desc}`;
    const check: MpiCheck = this.size > 1 ? [this.checks ? hash64(text) : null, seq] : [];
    try {
      return plan.execute(check);
    } catch (e) {
      plan.undo?.();
      if (e instanceof Disagreement) throw this.#explain(what, seq, text);
      throw e;
    }
  }

  /** This rank's arguments failed: tell the others (in the agreement), then the caller throws its own error. */
  #failTogether(what: string, seq: number, e: unknown): void {
    const text = `#${seq} ${FAILED}${describeError(e)}`;
    try {
      if (!callMpi(() => nativeMpi().agree(hash64(text), seq, what))) this.#explain(what, seq, text);
    } catch {
      // The world is unusable (a lost rank, a timeout): this rank's own error is still the one to report.
    }
  }

  /** After a failed agreement: every rank's description, and the error that names who differs. */
  #explain(what: string, seq: number, text: string): TsptoRuntimeError {
    const mine = new Uint8Array(DESC_BYTES);
    mine.set(new TextEncoder().encode(text).subarray(0, DESC_BYTES));
    const all = new Uint8Array(DESC_BYTES * this.size);
    callMpi(() => nativeMpi().allgather(mine, all, DESC_BYTES, MpiType.byte, null, seq));
    const dec = new TextDecoder();
    const texts = Array.from({ length: this.size }, (_, r) => dec.decode(all.subarray(r * DESC_BYTES, (r + 1) * DESC_BYTES)).replace(/\0+$/, ""));
    const failedMark = /^#\d+ failed: /;
    const failed = texts.flatMap((t, r) => (failedMark.test(t) ? [r] : []));
    if (failed.length > 0) {
      const r = failed[0];
      const also = failed.length > 1 ? ` (also failed: rank${failed.length > 2 ? "s" : ""} ${failed.slice(1).join(", ")})` : "";
      return err("E_RANK_FAILED", `${what} (collective #${seq}): rank ${r} (host ${this.hosts[r]}) failed in it: ${texts[r].replace(failedMark, "")}; rank ${this.rank} stops here instead of waiting for it${also}`,
        `rank ${r}'s own error says what to fix; every rank then passes the same arguments`);
    }
    const groups = new Map<string, number[]>();
    texts.forEach((t, r) => groups.set(t, [...(groups.get(t) ?? []), r]));
    const parts = [...groups].map(([t, rs]) => `rank${rs.length > 1 ? "s" : ""} ${rs.join(", ")}: ${t}`);
    return err("E_MPI_MISMATCH", `${what} (collective #${seq}): the ranks passed different arguments: ${parts.join("; ")}`, MISMATCH_HINT);
  }

  // ------------------------------------------------------------------ helpers
  /** MPI counts of a layout's chunks per rank (each rank holds `k` consecutive chunks). */
  #rankSplit(l: Layout, k: number, esize: number, what: string): { counts: Int32Array; displs: Int32Array; bytes: number[]; total: number; even: boolean } {
    const off = chunkOffsets(l);
    const bytes = Array.from({ length: this.size }, (_, r) => off[(r + 1) * k] - off[r * k]);
    const counts = Int32Array.from(bytes, (b) => countOf(b, esize, what));
    const displs = Int32Array.from(bytes, (_, r) => countOf(off[r * k], esize, what));
    countOf(off[off.length - 1], esize, what);
    return { counts, displs, bytes, total: off[off.length - 1], even: bytes.every((b) => b === bytes[0]) };
  }

  /** MPI_Allgather, or MPI_Allgatherv when the ranks' parts differ. */
  #allgather(send: MpiBuffer, recv: MpiBuffer, split: { counts: Int32Array; displs: Int32Array; even: boolean }, type: number, check: MpiCheck): void {
    const mpi = nativeMpi();
    callMpi(() => (split.even ? mpi.allgather(send, recv, split.counts[0], type, ...check) : mpi.allgatherv(send, recv, split.counts, split.displs, type, ...check)));
  }

  #alloc(workers: ChipWorker[], shapeOf: (d: number) => readonly number[], dtype: DType): DeviceTensor[] {
    const outs: DeviceTensor[] = [];
    try {
      workers.forEach((w, d) => outs.push(w.allocTensor(shapeOf(d), dtype)));
    } catch (e) {
      outs.forEach((o, d) => workers[d].freeTensor(o));
      throw e;
    }
    return outs;
  }

  /** Runs an MPI call on a single device tensor: in place on device memory when the device is the native one, else through a host copy. */
  #single(x: Operand, call: (buf: MpiBuffer) => void, writeBack: boolean): void {
    const direct = this.#nativeBuffers(x.workers[0], [x.tensors[0]]);
    if (direct) {
      callMpi(() => call(direct[0]));
      return;
    }
    const host = this.#read(x, 0);
    callMpi(() => call(host));
    if (writeBack) this.#write(x, 0, host);
  }

  /** [native device, address] buffers of tensors of one worker, or null when its device is not the native one. */
  #nativeBuffers(w: ChipWorker, ts: DeviceTensor[]): MpiBuffer[] | null {
    // The cpu target's Device wraps the native one (CpuDevice.native); other devices (interp:
    // TypeScript memory) go through host copies.
    const NativeDevice = loadNative().Device as unknown as new (...a: never[]) => object;
    const dev = (w.device as { native?: unknown }).native;
    if (!(dev instanceof NativeDevice)) return null;
    return ts.map((t) => [dev, t.dataPtr] as const);
  }

  #read(x: Operand, d: number): Uint8Array {
    const t = x.tensors[d];
    const buf = new Uint8Array(t.nbytes);
    x.workers[d].copyFrom(buf, t, t.nbytes);
    return buf;
  }

  #write(x: Operand, d: number, bytes: Uint8Array): void {
    const t = x.tensors[d];
    x.workers[d].copyTo(t, bytes, t.nbytes);
  }

  #reduceType(x: Operand, op: ReduceOp, what: string): number {
    if (!(REDUCE_OPS as readonly string[]).includes(op)) {
      throw err("E_OP", `${what}: op must be one of ${REDUCE_OPS.map((o) => `"${o}"`).join(", ")}, got ${JSON.stringify(op)}`);
    }
    const type = reduceTypeOf(x.dtype);
    if (type === undefined) {
      throw err("E_DTYPE", `${what}: ${x.dtype} tensors cannot be reduced (MPI has no ${x.dtype} type)`, "reduce float32 or integer tensors: cast to float32 first (pl.cast)");
    }
    return type;
  }

  /** Collectives that combine shards elementwise need them equal. */
  #evenShards(x: Operand, what: string): void {
    const t = x.sharded;
    if (!t || t.even) return;
    throw err("E_SHARD", `${what}: ${t} has shards of different shapes (${shapeStr(t.shardShapes[0])} and ${shapeStr(t.shardShapes[t.numShards - 1])}); ${what} combines the shards elementwise, which needs equal shards`,
      "allocate an extent along the axis that the number of devices divides (gather, scatter and allGather take uneven shards)");
  }

  #operand(t: ShardedTensor | DeviceTensor, what: string): Operand {
    if (t instanceof ShardedTensor) {
      this.#live(t, what);
      return { tensors: [...t.shards], workers: [...this.workers], shape: t.shardShape, dtype: t.dtype, axis: t.axis, sharded: t };
    }
    if (t instanceof DeviceTensor) {
      const w = this.#workerOf(t, what);
      return { tensors: [t], workers: [w], shape: t.shape, dtype: t.dtype, axis: 0, sharded: null };
    }
    throw err("E_ARG", `${what}: expected a ShardedTensor or a DeviceTensor, got ${describe(t)}`);
  }

  /** A new ShardedTensor of `outs` (one per local device; the whole `shape`, world `extents`), or the one DeviceTensor. */
  #result(x: Operand, outs: DeviceTensor[], shape: readonly number[], extents: readonly number[]): ShardedTensor | DeviceTensor {
    if (!x.sharded) return outs[0];
    const r = new ShardedTensor(shape, x.dtype, x.axis, outs, extents, x.sharded.firstShard, this.#token);
    this.#sharded.add(r);
    return r;
  }

  #own(t: ShardedTensor, what: string): void {
    if (t.owner !== this.#token) throw err("E_FOREIGN", `${what}: the ShardedTensor belongs to another DistributedWorker`);
  }

  #live(t: ShardedTensor, what: string): void {
    if (!(t instanceof ShardedTensor)) throw err("E_ARG", `${what}: expected a ShardedTensor, got ${describe(t)}`);
    this.#own(t, what);
    if (!t.live) throw err("E_FREED", `${what}: the ShardedTensor was freed`, "allocate it again (allocSharded)");
  }

  /** The local worker that allocated `t` (each ChipWorker checks ownership itself: a zero-byte read is refused for a foreign tensor). */
  #workerOf(t: DeviceTensor, what: string): ChipWorker {
    let freed = false;
    for (const w of this.workers) {
      try {
        w.copyFrom(new Uint8Array(0), t, 0);
        return w;
      } catch (e) {
        if ((e as { code?: string }).code === "E_FREED") freed = true;
      }
    }
    if (freed) throw err("E_FREED", `${what}: the DeviceTensor was freed (or its worker closed)`, "allocate it again");
    throw err("E_FOREIGN", `${what}: the DeviceTensor belongs to none of this DistributedWorker's devices`, "allocate it with dw.workers[d].allocTensor(...)");
  }

  // ------------------------------------------------------------------ lifecycle
  /**
   * Releases every device, then leaves the MPI world (the peers' watches are told goodbye, then
   * MPI_Finalize: it waits for every rank to close too).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#sharded) t.shards.forEach((s) => (s.live = false));
    this.#sharded.clear();
    for (const w of this.workers) w.close();
    if (openWorker === this) openWorker = null;
    if (this.usesMpi) {
      const mpi = nativeMpi();
      if (mpi.state() === "initialized") callMpi(() => mpi.finalize());
    }
  }

  [Symbol.dispose](): void {
    this.close();
  }

  toString(): string {
    return `DistributedWorker(rank ${this.rank} of ${this.size}, ${this.devices} device${this.devices === 1 ? "" : "s"}, platform ${this.workers[0]?.platform})`;
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function describe(a: unknown): string {
  if (a === null) return "null";
  if (typeof a === "object") return (a as object).constructor?.name ?? "object";
  return `${typeof a} ${String(a)}`;
}

/** An error as one line: "[E_CODE] message" for tspto's (their message starts with the code), else "Name: message". */
function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const first = e.message.split("\n")[0];
  return (e as { code?: unknown }).code !== undefined && first.startsWith("[") ? first : `${e.name}: ${first}`;
}

function describeSharded(t: ShardedTensor): string {
  return `ShardedTensor ${t.dtype} ${shapeStr(t.shape)} axis ${t.axis} in ${t.numShards}`;
}

function describeOperand(x: Operand): string {
  return x.sharded ? describeSharded(x.sharded) : `DeviceTensor ${x.dtype} ${shapeStr(x.shape)}`;
}

function countOf(nbytes: number, esize: number, what: string): number {
  const count = nbytes / esize;
  if (count > INT_MAX) throw err("E_SIZE", `${what}: ${count} elements exceed MPI's count limit (2^31 - 1) for one call`, "split the tensor");
  return count;
}

function hostTensorOf(bytes: Uint8Array, shape: readonly number[], dtype: DType): HostTensor {
  const C = typedArrayFor(dtype) as unknown as new (b: ArrayBufferLike, o: number, n: number) => HostTensor["data"];
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
  return new HostTensor(new C(own.buffer, 0, prod(shape)), shape, dtype);
}

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === "") return undefined;
  return Number(v);
}
const envNumber = envInt;

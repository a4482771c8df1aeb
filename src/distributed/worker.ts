// DistributedWorker (PyPTO's L3 DistributedWorker): one per process, a ChipWorker per local
// device, and — when the process was started by mpirun — a rank in an MPI world. Sharded
// tensors hold one DeviceTensor per device across all ranks; collectives combine the devices
// of this process through the runtime (copyFrom/copyTo) and the ranks through MPI (Open MPI's
// libmpi, loaded at run time by the native addon).
//
// Device numbering: the world has N = size * devices devices; device g = rank * devices + d
// is local device d of rank g / devices. Every rank must use the same `devices`.
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
import { callMpi, MpiType, launchEnv, reportLostRankOnSigterm, moveTypeOf, nativeMpi, REDUCE_OPS, reduceTypeOf, type MpiBuffer, type ReduceOp } from "./mpi.js";
import { axisFromStacked, bytesOf, chunkGeometry, prod, reduceInto, stackedFromAxis } from "./layout.js";

const err = (code: string, msg: string, hint?: string) => new TsptoRuntimeError(code, msg, callerSpan(), hint);
const shapeStr = (s: readonly number[]) => `[${s.join(", ")}]`;
const INT_MAX = 2 ** 31 - 1;

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
  /** Seconds a collective may wait for the other ranks before it fails (0 = forever). Default: $TSPTO_MPI_TIMEOUT, else 0. */
  timeoutS?: number;
}

/** One tensor split along `axis` over every device of the world (PyPTO's StackedDeviceTensor). */
export class ShardedTensor {
  /** The whole tensor's shape (shards concatenated along `axis`). */
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly axis: number;
  /** The shape of each shard: `shape` with `shape[axis] / numShards` along `axis`. */
  readonly shardShape: readonly number[];
  /** This process's shards, one per local device, in device order. */
  readonly shards: readonly DeviceTensor[];
  /** Shards across all ranks (= devices of the world). */
  readonly numShards: number;
  /** World index of `shards[0]` (rank * devices). */
  readonly firstShard: number;
  /** @internal */ readonly owner: object;
  /** @internal */
  constructor(shape: readonly number[], dtype: DType, axis: number, shards: DeviceTensor[], numShards: number, firstShard: number, owner: object) {
    this.shape = Object.freeze([...shape]);
    this.dtype = dtype;
    this.axis = axis;
    this.shardShape = shards[0].shape;
    this.shards = Object.freeze(shards);
    this.numShards = numShards;
    this.firstShard = firstShard;
    this.owner = owner;
  }
  /** False once freed (DistributedWorker.free or close). */
  get live(): boolean {
    return this.shards.every((s) => s.live);
  }
  toString(): string {
    return `ShardedTensor(shape=${shapeStr(this.shape)}, dtype=${this.dtype}, axis=${this.axis}, shards=${this.numShards} of ${shapeStr(this.shardShape)}${this.live ? "" : ", freed"})`;
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
  shape: readonly number[]; // each participant's
  dtype: DType;
  axis: number;
  sharded: ShardedTensor | null;
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
  readonly #token = {};
  #closed = false;
  readonly #sharded = new Set<ShardedTensor>();

  constructor(opts: DistributedOptions | RunConfig = {}) {
    const o: DistributedOptions = opts instanceof RunConfig ? { config: opts } : opts;
    if (typeof o !== "object" || o === null) throw err("E_ARG", `DistributedWorker: options must be an object or a RunConfig, got ${String(o)}`);
    for (const k of Object.keys(o)) {
      if (!["devices", "config", "mpi", "timeoutS"].includes(k)) throw err("E_ARG", `DistributedWorker: unknown option '${k}'`, "known options: devices, config, mpi, timeoutS");
    }
    const devices = o.devices ?? envInt("TSPTO_DEVICES") ?? 1;
    if (!Number.isInteger(devices) || devices < 1 || devices > 1024) {
      throw err("E_ARG", `DistributedWorker: devices must be an integer in [1, 1024], got ${String(devices)}`);
    }
    const config = o.config ?? new RunConfig();
    if (!(config instanceof RunConfig)) throw err("E_ARG", "DistributedWorker: config must be a RunConfig");
    const mode = o.mpi ?? "auto";
    if (!["auto", "required", "off"].includes(mode)) throw err("E_ARG", `DistributedWorker: mpi must be "auto", "required" or "off", got ${JSON.stringify(mode)}`);
    const timeoutS = o.timeoutS ?? envNumber("TSPTO_MPI_TIMEOUT") ?? 0;
    if (typeof timeoutS !== "number" || !(timeoutS >= 0)) throw err("E_ARG", `DistributedWorker: timeoutS must be a number >= 0, got ${String(timeoutS)}`);
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
      const info = callMpi(() => mpi.init());
      rank = info.rank;
      size = info.size;
      hosts = info.hosts;
      library = info.version ? `${info.library}, ${info.version.split(",")[0].trim()}` : info.library;
      callMpi(() => mpi.setTimeout(timeoutS));
      if (!exitHooked) {
        exitHooked = true;
        // A failing process must not wait in MPI_Finalize for ranks that wait for it.
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
   * A tensor of `shape` split along `axis` (default 0) into one equal shard per device of the
   * world; `init` (a host tensor of the whole shape) fills this rank's shards from its own
   * copy (every rank passes the same values: no communication).
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
    if (shape[axis] % n !== 0) {
      throw err("E_SHARD", `allocSharded: shape ${shapeStr(shape)} cannot be split into ${n} equal shards along axis ${axis} (${shape[axis]} is not a multiple of ${n} = ${this.size} ranks x ${this.devices} devices)`,
        "choose a size along the axis that the number of devices divides");
    }
    const shardShape = shape.map((d, i) => (i === axis ? d / n : d));
    let init: HostTensor | null = null;
    if (opts.init !== undefined) {
      init = asTensorLike(opts.init);
      if (!init || init.dtype !== dtype || !sameShape(init.shape, shape)) {
        throw err("E_INIT", `allocSharded: init must have shape=${shapeStr(shape)} dtype=${dtype}, got ${init ? `shape=${shapeStr(init.shape)} dtype=${init.dtype}` : `a ${typeof opts.init}`}`);
      }
    }
    const shards = this.workers.map((w) => w.allocTensor(shardShape, dtype));
    const t = new ShardedTensor(shape, dtype, axis, shards, n, this.rank * this.devices, this.#token);
    this.#sharded.add(t);
    if (init) this.#fillLocal(t, bytesOf(init.data));
    return t;
  }

  /** Writes this rank's shards from the bytes of a whole tensor. */
  #fillLocal(t: ShardedTensor, whole: Uint8Array): void {
    const { outer, rowBytes } = chunkGeometry(t.shape, t.axis, t.numShards, dtypeBytes(t.dtype));
    const stacked = stackedFromAxis(whole, t.numShards, outer, rowBytes);
    const shardBytes = t.shards[0].nbytes;
    t.shards.forEach((s, d) => {
      const off = (t.firstShard + d) * shardBytes;
      this.workers[d].copyTo(s, stacked.subarray(off, off + shardBytes), shardBytes);
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
    this.#check("gather");
    this.#live(t, "gather");
    const shardBytes = t.shards[0].nbytes;
    const local = new Uint8Array(shardBytes * this.devices);
    t.shards.forEach((s, d) => this.workers[d].copyFrom(local.subarray(d * shardBytes, (d + 1) * shardBytes), s, shardBytes));
    let stacked = local;
    if (this.size > 1) {
      stacked = new Uint8Array(local.length * this.size);
      const type = moveTypeOf(dtypeBytes(t.dtype));
      const count = countOf(local.length, dtypeBytes(t.dtype), "gather");
      callMpi(() => nativeMpi().allgather(local, stacked, count, type));
    }
    const { outer, rowBytes } = chunkGeometry(t.shape, t.axis, t.numShards, dtypeBytes(t.dtype));
    const whole = axisFromStacked(stacked, t.numShards, outer, rowBytes);
    return hostTensorOf(whole, t.shape, t.dtype);
  }

  /** Splits rank 0's `host` (the whole tensor) over every device of `t` (other ranks' `host` is not read). */
  scatter(host: unknown, t: ShardedTensor): void {
    this.#check("scatter");
    this.#live(t, "scatter");
    const h = asTensorLike(host);
    if (!h || h.dtype !== t.dtype || !sameShape(h.shape, t.shape)) {
      throw err("E_ARG", `scatter: host must have shape=${shapeStr(t.shape)} dtype=${t.dtype} (the ShardedTensor's), got ${h ? `shape=${shapeStr(h.shape)} dtype=${h.dtype}` : describe(host)}`);
    }
    let whole = bytesOf(h.data);
    if (this.size > 1) {
      const buf = this.rank === 0 ? whole : new Uint8Array(whole.length);
      const count = countOf(buf.length, dtypeBytes(t.dtype), "scatter");
      callMpi(() => nativeMpi().bcast(buf, count, moveTypeOf(dtypeBytes(t.dtype)), 0));
      whole = buf;
    }
    this.#fillLocal(t, whole);
  }

  // ------------------------------------------------------------------ launches
  /**
   * Runs `compiled` on every local device (SPMD): a ShardedTensor argument becomes that
   * device's shard; host tensors and scalars go to every device as they are (so a host Out
   * argument ends up with the last device's result). Returns each device's result.
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
    const local = this.workers.map((w, d) => benchmark(compiled, per[d], { ...opts, worker: w }));
    const mine = new Float64Array(local.flatMap((b) => [b.deviceUsMedian, b.hostUsMedian]));
    let all = mine;
    if (this.size > 1) {
      all = new Float64Array(mine.length * this.size);
      callMpi(() => nativeMpi().allgather(mine, all, mine.length, MpiType.float64));
    }
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
    const x = this.#operand(t, "allReduce");
    const type = this.#reduceType(x, op, "allReduce");
    const esize = dtypeBytes(x.dtype);
    const nbytes = x.tensors[0].nbytes;
    const count = countOf(nbytes, esize, "allReduce");
    const opIndex = REDUCE_OPS.indexOf(op);
    if (x.tensors.length === 1) {
      if (this.size > 1) this.#collective(x, 0, (buf) => nativeMpi().allreduce(buf, count, type, opIndex), (host) => nativeMpi().allreduce(host, count, type, opIndex), true);
      return t;
    }
    const acc = this.#read(x, 0);
    for (let d = 1; d < x.tensors.length; d++) reduceInto(acc, this.#read(x, d), x.dtype, op);
    if (this.size > 1) callMpi(() => nativeMpi().allreduce(acc, count, type, opIndex));
    x.tensors.forEach((_, d) => this.#write(x, d, acc));
    return t;
  }

  /**
   * Every device gets the concatenation, along the axis (a ShardedTensor's; axis 0 for a
   * DeviceTensor), of all devices' tensors in world order. Returns a new ShardedTensor whose
   * shards are the whole gathered tensor (or a new DeviceTensor on the same worker).
   */
  allGather<T extends ShardedTensor | DeviceTensor>(t: T): T {
    const x = this.#operand(t, "allGather");
    const esize = dtypeBytes(x.dtype);
    const n = this.size * x.tensors.length;
    const outShape = x.shape.map((v, i) => (i === x.axis ? v * n : v));
    const nbytes = x.tensors[0].nbytes;
    const count = countOf(nbytes, esize, "allGather");
    const type = moveTypeOf(esize);
    const { outer, rowBytes } = chunkGeometry(outShape, x.axis, n, esize);
    const outs = x.workers.map((w) => w.allocTensor(outShape, x.dtype));
    try {
      const direct = x.tensors.length === 1 && outer === 1 && this.size > 1 ? this.#nativeBuffers(x.workers[0], [x.tensors[0], outs[0]]) : null;
      if (direct) {
        callMpi(() => nativeMpi().allgather(direct[0], direct[1], count, type));
      } else {
        const local = new Uint8Array(nbytes * x.tensors.length);
        x.tensors.forEach((_, d) => local.set(this.#read(x, d), d * nbytes));
        let stacked = local;
        if (this.size > 1) {
          stacked = new Uint8Array(local.length * this.size);
          callMpi(() => nativeMpi().allgather(local, stacked, count * x.tensors.length, type));
        }
        const whole = axisFromStacked(stacked, n, outer, rowBytes);
        outs.forEach((o, d) => x.workers[d].copyTo(o, whole, whole.length));
      }
    } catch (e) {
      outs.forEach((o, d) => x.workers[d].freeTensor(o));
      throw e;
    }
    return this.#result(x, outs) as T;
  }

  /**
   * Reduces every device's tensor elementwise and leaves device g with chunk g of the result
   * (split along the axis into one chunk per device of the world). Returns a new
   * ShardedTensor (or DeviceTensor) of the chunks.
   */
  reduceScatter<T extends ShardedTensor | DeviceTensor>(t: T, op: ReduceOp = "sum"): T {
    const x = this.#operand(t, "reduceScatter");
    const type = this.#reduceType(x, op, "reduceScatter");
    const esize = dtypeBytes(x.dtype);
    const k = x.tensors.length;
    const n = this.size * k;
    if (x.shape[x.axis] % n !== 0) {
      throw err("E_SHARD", `reduceScatter: shape ${shapeStr(x.shape)} cannot be split into ${n} equal chunks along axis ${x.axis}`, "choose a size along the axis that the number of devices of the world divides");
    }
    const outShape = x.shape.map((v, i) => (i === x.axis ? v / n : v));
    const { outer, rowBytes } = chunkGeometry(x.shape, x.axis, n, esize);
    const chunkBytes = outer * rowBytes;
    const count = countOf(chunkBytes, esize, "reduceScatter");
    const opIndex = REDUCE_OPS.indexOf(op);
    const outs = x.workers.map((w) => w.allocTensor(outShape, x.dtype));
    try {
      const direct = k === 1 && outer === 1 && this.size > 1 ? this.#nativeBuffers(x.workers[0], [x.tensors[0], outs[0]]) : null;
      if (direct) {
        callMpi(() => nativeMpi().reduceScatter(direct[0], direct[1], count, type, opIndex));
      } else {
        const acc = this.#read(x, 0);
        for (let d = 1; d < k; d++) reduceInto(acc, this.#read(x, d), x.dtype, op);
        const stacked = stackedFromAxis(acc, n, outer, rowBytes);
        let mine = stacked;
        if (this.size > 1) {
          mine = new Uint8Array(chunkBytes * k);
          callMpi(() => nativeMpi().reduceScatter(stacked, mine, count * k, type, opIndex));
        }
        outs.forEach((o, d) => x.workers[d].copyTo(o, mine.subarray(d * chunkBytes, (d + 1) * chunkBytes), chunkBytes));
      }
    } catch (e) {
      outs.forEach((o, d) => x.workers[d].freeTensor(o));
      throw e;
    }
    return this.#result(x, outs) as T;
  }

  /**
   * Copies device `root`'s tensor to every device, in place. For a ShardedTensor `root` is a
   * world device index (rank * devices + d); for a DeviceTensor it is a rank.
   */
  broadcast<T extends ShardedTensor | DeviceTensor>(t: T, root = 0): T {
    const x = this.#operand(t, "broadcast");
    const k = x.tensors.length;
    const n = this.size * k;
    if (!Number.isInteger(root) || root < 0 || root >= n) {
      throw err("E_ROOT", `broadcast: root must be an integer in [0, ${n - 1}] (${x.sharded ? "a device of the world" : "a rank"}), got ${String(root)}`);
    }
    const rootRank = Math.floor(root / k), rootLocal = root % k;
    const esize = dtypeBytes(x.dtype);
    const nbytes = x.tensors[0].nbytes;
    const count = countOf(nbytes, esize, "broadcast");
    const type = moveTypeOf(esize);
    if (k === 1) {
      if (this.size > 1) this.#collective(x, 0, (buf) => nativeMpi().bcast(buf, count, type, rootRank), (host) => nativeMpi().bcast(host, count, type, rootRank), this.rank !== rootRank);
      return t;
    }
    const buf = this.rank === rootRank ? this.#read(x, rootLocal) : new Uint8Array(nbytes);
    if (this.size > 1) callMpi(() => nativeMpi().bcast(buf, count, type, rootRank));
    x.tensors.forEach((_, d) => {
      if (!(this.rank === rootRank && d === rootLocal)) this.#write(x, d, buf);
    });
    return t;
  }

  /** Waits until every rank arrives (local devices are synchronous: nothing to wait for). */
  barrier(): void {
    this.#check("barrier");
    if (this.size > 1) callMpi(() => nativeMpi().barrier());
  }

  // ------------------------------------------------------------------ helpers
  /** Runs an MPI call on a single device tensor: in place on device memory when the device is the native one, else through a host copy. */
  #collective(x: Operand, d: number, onDevice: (buf: MpiBuffer) => void, onHost: (host: Uint8Array) => void, writeBack: boolean): void {
    const direct = this.#nativeBuffers(x.workers[d], [x.tensors[d]]);
    if (direct) {
      callMpi(() => onDevice(direct[0]));
      return;
    }
    const host = this.#read(x, d);
    callMpi(() => onHost(host));
    if (writeBack) this.#write(x, d, host);
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

  #operand(t: ShardedTensor | DeviceTensor, what: string): Operand {
    this.#check(what);
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

  /** A new ShardedTensor of `outs` (one per local device), or the one DeviceTensor. */
  #result(x: Operand, outs: DeviceTensor[]): ShardedTensor | DeviceTensor {
    if (!x.sharded) return outs[0];
    const n = x.sharded.numShards;
    const whole = outs[0].shape.map((v, i) => (i === x.axis ? v * n : v));
    const r = new ShardedTensor(whole, x.dtype, x.axis, outs, n, x.sharded.firstShard, this.#token);
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
  /** Releases every device, then leaves the MPI world (MPI_Finalize: waits for every rank to close too). */
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

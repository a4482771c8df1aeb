// DistributedWorker without MPI: several simulated chips in one process (SPMD launches,
// sharded tensors, every collective through the runtime), and every error path.
import { describe, it, expect, afterEach } from "vitest";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pl, ChipWorker, DistributedWorker, ShardedTensor, RunConfig, HostTensor, randn, zeros, assertClose, tensor } from "tspto";

const R = 16, C = 32;
const axpy = pl.jit(function axpy(x: pl.Tensor, y: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.add(pl.mul(pl.load(x, [0, 0], [R, C]), 2), pl.load(y, [0, 0], [R, C]));
    pl.store(t, [0, 0], y);
  });
  return y;
});

/** out = 2a + b over any number of rows (a dynamic dimension: one program for every shard). */
const biasRows = pl.jit(function biasRows(a: pl.Tensor<["M", 300], pl.FP32>, b: pl.Tensor<[1, 300], pl.FP32>, out: pl.Out<pl.Tensor<["M", 300], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(pl.mul(a, 2.0), b)); });
});

let dw: DistributedWorker | null = null;
afterEach(() => { dw?.close(); dw = null; });
const open = (opts: ConstructorParameters<typeof DistributedWorker>[0] = { devices: 3, mpi: "off" }) => (dw = new DistributedWorker(opts));
const codeOf = (f: () => unknown) => { try { f(); } catch (e) { return `${(e as { code?: string }).code}: ${(e as Error).message}`; } return "no error"; };

describe("DistributedWorker in one process", () => {
  it("runs every collective on 4 simulated chips against the single-process reference (child process)", async () => {
    const root = fileURLToPath(new URL("../../", import.meta.url));
    const r = await new Promise<{ status: number | null; out: string }>((resolve, reject) => {
      const p = spawn("node", ["--import", "tsx", fileURLToPath(new URL("./collectives_child.ts", import.meta.url)), "4", "off"], { cwd: root, env: { ...process.env, OMPI_COMM_WORLD_SIZE: "" } });
      let out = "";
      p.stdout.on("data", (b) => (out += b));
      p.stderr.on("data", (b) => (out += b));
      const timer = setTimeout(() => p.kill("SIGKILL"), 120_000);
      p.on("error", reject);
      p.on("close", (status) => { clearTimeout(timer); resolve({ status, out }); });
    });
    expect(r.status, r.out).toBe(0);
    expect(r.out.match(/^ok rank=0 /gm)?.length).toBe(14);
  });

  for (const platform of ["cpu", "interp"] as const) {
    it(`runs a program on every device with its shard (SPMD) on ${platform}, and gathers the result`, async () => {
      const w = open({ devices: 3, mpi: "off", config: new RunConfig({ platform }) });
      expect([w.rank, w.size, w.devices, w.worldDevices, w.usesMpi]).toEqual([0, 1, 3, 3, false]);
      expect(w.workers.map((c) => c.config.deviceId)).toEqual([0, 1, 2]);
      const X = randn([3 * R, C], { seed: 5 }), Y = randn([3 * R, C], { seed: 6 });
      const xs = w.allocSharded([3 * R, C], "float32", { init: X });
      const ys = w.allocSharded([3 * R, C], "float32", { init: Y });
      expect(xs.shardShape).toEqual([R, C]);
      expect(String(xs)).toBe("ShardedTensor(shape=[48, 32], dtype=float32, axis=0, shards=3 of [16, 32])");
      const compiled = axpy.compile(zeros([R, C]), zeros([R, C]), new RunConfig({ platform }));
      const results = w.run(compiled, xs, ys);
      expect(results).toEqual([ys.shards[0], ys.shards[1], ys.shards[2]]);
      const want = X.mul(tensor(Array(3 * R * C).fill(2), { shape: [3 * R, C] })).add(Y);
      assertClose(w.gather(ys), want, { rtol: 1e-6, atol: 1e-6 });
      await w.runAsync(compiled, xs, ys); // y = 2x + y once more, the devices' launches in flight together
      assertClose(w.gather(ys), want.add(X.mul(tensor(Array(3 * R * C).fill(2), { shape: [3 * R, C] }))), { rtol: 1e-5, atol: 1e-5 });
      expect(w.workers.every((c) => c.stats.launches === 2)).toBe(true);
    });
  }

  it("benchmark runs on every device and reports each device's median device and host times", () => {
    const w = open({ devices: 2, mpi: "off" });
    const xs = w.allocSharded([2 * R, C], "float32", { init: randn([2 * R, C], { seed: 1 }) });
    const ys = w.allocSharded([2 * R, C], "float32");
    const before = w.workers.map((c) => c.stats.launches);
    const b = w.benchmark(axpy.compile(zeros([R, C]), zeros([R, C])), [xs, ys], { rounds: 4, warmup: 1 });
    expect(w.workers.map((c, d) => c.stats.launches - before[d])).toEqual([5, 5]);
    expect(b.rows.map((r) => [r.rank, r.device])).toEqual([[0, 0], [0, 1]]);
    expect(b.rows.every((r) => r.deviceUsMedian > 0 && r.hostUsMedian >= r.deviceUsMedian)).toBe(true);
    expect(b.local.map((s) => s.rounds)).toEqual([4, 4]);
    expect(String(b)).toMatch(/^rank\s+device\s+device us\s+host us/);
  });

  it("shards along a later axis: gather and scatter are inverses, columns land on their devices", () => {
    const w = open({ devices: 2, mpi: "off" });
    const whole = new HostTensor(Int32Array.from({ length: 3 * 8 }, (_, i) => i * 7 - 40), [3, 8], "int32");
    const t = w.allocSharded([3, 8], "int32", { axis: 1 });
    w.scatter(whole, t);
    const shard1 = new Int32Array(12);
    w.workers[1].copyFrom(shard1, t.shards[1], 48);
    expect([...shard1]).toEqual([0, 1, 2].flatMap((r) => [4, 5, 6, 7].map((c) => whole.data[r * 8 + c])));
    expect([...w.gather(t).data]).toEqual([...whole.data]);
  });

  it("uneven shards: an extent the devices do not divide splits as numpy.array_split does; run takes them with a dynamic extent", () => {
    const w = open({ devices: 3, mpi: "off" });
    const X = randn([10, 300], { seed: 21 }), B = randn([1, 300], { seed: 22 });
    const xs = w.allocSharded([10, 300], "float32", { init: X });
    expect(xs.shardShapes).toEqual([[4, 300], [3, 300], [3, 300]]);
    expect([xs.shardShape, xs.even, xs.shards.map((s) => s.shape)]).toEqual([[4, 300], false, [[4, 300], [3, 300], [3, 300]]]);
    expect(String(xs)).toBe("ShardedTensor(shape=[10, 300], dtype=float32, axis=0, shards=3 of [4, 300] or [3, 300])");
    const ys = w.allocSharded([10, 300], "float32");
    // One compiled program for every shard: the row count is a dynamic dimension.
    const compiled = biasRows.compile(zeros([4, 300]), B, zeros([4, 300]));
    w.run(compiled, xs, B, ys);
    const want = X.mul(tensor(Array(10 * 300).fill(2), { shape: [10, 300] })).add(tensor([...Array(10)].flatMap(() => [...(B.data as Float32Array)]), { shape: [10, 300] }));
    assertClose(w.gather(ys), want, { rtol: 1e-6, atol: 1e-6 });
    // A static program refuses the shorter shards, naming the shape it was built for.
    const fixed = axpy.compile(zeros([R, C]), zeros([R, C]));
    const cols = w.allocSharded([R, 3 * C + 1], "float32", { axis: 1 });
    expect(cols.shardShapes).toEqual([[R, C + 1], [R, C], [R, C]]);
    expect(codeOf(() => w.run(fixed, cols, cols))).toMatch(/^E_ARG: .*expected a float32 tensor of shape \[16, 32\], got float32 of shape \[16, 33\]/);
    expect(codeOf(() => w.allReduce(xs))).toMatch(/^E_SHARD: .*allReduce: ShardedTensor\(shape=\[10, 300\].*\) has shards of different shapes \(\[4, 300\] and \[3, 300\]\); allReduce combines the shards elementwise[\s\S]*hint: allocate an extent along the axis that the number of devices divides/);
    expect(codeOf(() => w.broadcast(xs, 1))).toMatch(/^E_SHARD: .*broadcast: .* has shards of different shapes/);
  });

  it("collectives on a plain DeviceTensor without other ranks leave it as it is", () => {
    const w = open({ devices: 2, mpi: "off" });
    const v = randn([4, 4], { seed: 9 });
    const t = w.workers[1].allocTensor([4, 4], "float32", { init: v });
    expect(w.allReduce(t)).toBe(t);
    expect(w.broadcast(t, 0)).toBe(t);
    const g = w.allGather(t);
    const out = new Float32Array(16);
    w.workers[1].copyFrom(out, g, 64);
    expect([...out]).toEqual([...v.data]);
    w.barrier();
  });

  it("close() releases every device; the worker and its tensors refuse further use", () => {
    const w = open({ devices: 2, mpi: "off" });
    const t = w.allocSharded([4, 4], "float32");
    w.close();
    expect(w.workers.every((c) => c.closed)).toBe(true);
    expect(t.live).toBe(false);
    expect(codeOf(() => w.allReduce(t))).toMatch(/^E_CLOSED: \[E_CLOSED\] allReduce: DistributedWorker is closed/);
    expect(codeOf(() => w.allocSharded([4], "float32"))).toMatch(/^E_CLOSED: .*allocSharded: DistributedWorker is closed/);
    w.close(); // idempotent
  });
});

describe("DistributedWorker errors", () => {
  it("rejects bad options", () => {
    expect(codeOf(() => new DistributedWorker({ devices: 0, mpi: "off" }))).toMatch(/^E_ARG: .*devices must be an integer in \[1, 1024\], got 0/);
    expect(codeOf(() => new DistributedWorker({ mpi: "off", gpus: 2 } as never))).toMatch(/^E_ARG: .*unknown option 'gpus'/);
    expect(codeOf(() => new DistributedWorker({ mpi: "sometimes" as never }))).toMatch(/^E_ARG: .*mpi must be "auto", "required" or "off", got "sometimes"/);
    expect(codeOf(() => new DistributedWorker({ mpi: "off", timeoutS: -1 }))).toMatch(/^E_ARG: .*timeoutS must be a number >= 0, got -1/);
    expect(codeOf(() => new DistributedWorker({ mpi: "off", heartbeatS: -2 }))).toMatch(/^E_ARG: .*heartbeatS must be a number >= 0, got -2/);
    expect(codeOf(() => new DistributedWorker({ mpi: "off", checks: "yes" as never }))).toMatch(/^E_ARG: .*checks must be a boolean, got yes/);
    expect(codeOf(() => new DistributedWorker({ mpi: "off", gpus: 2 } as never))).toMatch(/hint: known options: devices, config, mpi, timeoutS, heartbeatS, checks/);
    const saved = process.env.TSPTO_MPI_TIMEOUT;
    process.env.TSPTO_MPI_TIMEOUT = "soon";
    try {
      expect(codeOf(() => new DistributedWorker({ mpi: "off" }))).toMatch(/^E_ARG: .*timeoutS must be a number >= 0, got NaN \(from TSPTO_MPI_TIMEOUT\)/);
    } finally {
      if (saved === undefined) delete process.env.TSPTO_MPI_TIMEOUT; else process.env.TSPTO_MPI_TIMEOUT = saved;
    }
  });

  it("the collective timeout is finite by default (300 s; TSPTO_MPI_TIMEOUT or timeoutS change it, 0 = forever); heartbeats every 3 s; checks on", () => {
    const saved = { t: process.env.TSPTO_MPI_TIMEOUT, h: process.env.TSPTO_MPI_HEARTBEAT, c: process.env.TSPTO_MPI_CHECKS };
    delete process.env.TSPTO_MPI_TIMEOUT; delete process.env.TSPTO_MPI_HEARTBEAT; delete process.env.TSPTO_MPI_CHECKS;
    try {
      let w = open({ mpi: "off" });
      expect([w.timeoutS, w.heartbeatS, w.checks]).toEqual([300, 3, true]);
      w.close();
      process.env.TSPTO_MPI_TIMEOUT = "0"; process.env.TSPTO_MPI_HEARTBEAT = "1.5"; process.env.TSPTO_MPI_CHECKS = "0";
      w = open({ mpi: "off" });
      expect([w.timeoutS, w.heartbeatS, w.checks]).toEqual([0, 1.5, false]);
      w.close();
      w = open({ mpi: "off", timeoutS: 20, heartbeatS: 0, checks: true });
      expect([w.timeoutS, w.heartbeatS, w.checks]).toEqual([20, 0, true]);
    } finally {
      for (const [k, v] of [["TSPTO_MPI_TIMEOUT", saved.t], ["TSPTO_MPI_HEARTBEAT", saved.h], ["TSPTO_MPI_CHECKS", saved.c]] as const) {
        if (v === undefined) delete process.env[k]; else process.env[k] = v;
      }
    }
  });

  it("mpi: 'required' outside mpirun says how to start the job", () => {
    const saved = process.env.OMPI_COMM_WORLD_SIZE;
    delete process.env.OMPI_COMM_WORLD_SIZE;
    try {
      expect(codeOf(() => new DistributedWorker({ mpi: "required" }))).toMatch(/^E_MPI_REQUIRED: .*not started by mpirun[\s\S]*hint: start it with: mpirun -np <ranks> node --import tsx <script>/);
    } finally {
      if (saved !== undefined) process.env.OMPI_COMM_WORLD_SIZE = saved;
    }
  });

  it("allows one open DistributedWorker per process", () => {
    open();
    expect(codeOf(() => new DistributedWorker({ mpi: "off" }))).toMatch(/^E_DIST_OPEN: .*a DistributedWorker is already open in this process/);
  });

  it("checks shapes, axes, dtypes, ops and roots", () => {
    const w = open();
    expect(codeOf(() => w.allocSharded([2, 4], "float32"))).toMatch(/^E_SHARD: .*shape \[2, 4\] cannot be split into 3 shards along axis 0 \(2 < 3 = 1 ranks x 3 devices: every device needs at least one\)/);
    expect(codeOf(() => w.allocSharded([3, 4], "float32", { axis: 2 }))).toMatch(/^E_AXIS: .*axis must be an integer in \[0, 1\] for shape \[3, 4\], got 2/);
    expect(codeOf(() => w.allocSharded([], "float32"))).toMatch(/^E_SHAPE: .*non-empty list of positive integers, got \[\]/);
    expect(codeOf(() => w.allocSharded([3], "float64" as never))).toMatch(/^E_DTYPE: .*unknown dtype "float64"/);
    expect(codeOf(() => w.allocSharded([3, 2], "float32", { init: zeros([3, 3]) }))).toMatch(/^E_INIT: .*init must have shape=\[3, 2\] dtype=float32, got shape=\[3, 3\] dtype=float32/);
    const h = w.allocSharded([3, 2], "float16");
    expect(codeOf(() => w.allReduce(h))).toMatch(/^E_DTYPE: .*allReduce: float16 tensors cannot be reduced \(MPI has no float16 type\)/);
    const t = w.allocSharded([6, 2], "float32");
    expect(codeOf(() => w.allReduce(t, "mean" as never))).toMatch(/^E_OP: .*op must be one of "sum", "max", "min", "prod", got "mean"/);
    expect(codeOf(() => w.broadcast(t, 3))).toMatch(/^E_ROOT: .*root must be an integer in \[0, 2\] \(a device of the world\), got 3/);
    expect(codeOf(() => w.reduceScatter(t))).toMatch(/^E_SHARD: .*reduceScatter: shape \[2, 2\] cannot be split into 3 chunks along axis 0 \(2 < 3: every device of the world needs at least one\)/);
    expect(codeOf(() => w.scatter(zeros([6, 3]), t))).toMatch(/^E_ARG: .*scatter: host must have shape=\[6, 2\] dtype=float32 .*got shape=\[6, 3\] dtype=float32/);
    expect(codeOf(() => w.allGather({} as never))).toMatch(/^E_ARG: .*allGather: expected a ShardedTensor or a DeviceTensor, got Object/);
  });

  it("refuses freed tensors and tensors of other workers", () => {
    const w = open();
    const t = w.allocSharded([3, 2], "float32");
    w.free(t);
    expect(t.live).toBe(false);
    expect(codeOf(() => w.allReduce(t))).toMatch(/^E_FREED: .*allReduce: the ShardedTensor was freed/);
    expect(codeOf(() => w.gather(t))).toMatch(/^E_FREED: .*gather: the ShardedTensor was freed/);
    const d = w.workers[0].allocTensor([2], "float32");
    w.free(d);
    expect(codeOf(() => w.broadcast(d))).toMatch(/^E_FREED: .*broadcast: the DeviceTensor was freed/);
    using other = new ChipWorker();
    const foreign = other.allocTensor([2], "float32");
    expect(codeOf(() => w.allReduce(foreign))).toMatch(/^E_FOREIGN: .*allReduce: the DeviceTensor belongs to none of this DistributedWorker's devices/);
    const s = w.allocSharded([3, 2], "float32");
    w.close();
    const w2 = open();
    expect(codeOf(() => w2.allReduce(s as ShardedTensor))).toMatch(/^E_FOREIGN: .*the ShardedTensor belongs to another DistributedWorker/);
  });
});

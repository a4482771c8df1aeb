// Run by test/distributed/mpi.test.ts under mpirun (node --import tsx): every collective on
// seeded random data, checked against a single-process reference that this rank computes
// itself from every rank's seeds. Prints "ok <check>" per check; a failed check throws
// (non-zero exit). argv: devices per rank, then "required" (under mpirun) or "off" (one
// process, its devices only), then the platform (default cpu; interp devices keep their
// memory in TypeScript, so MPI goes through host copies instead of device memory in place).
import { DistributedWorker, HostTensor, RunConfig, randn, type DType } from "tspto";

const devices = Number(process.argv[2] ?? 1);
const platform = (process.argv[4] ?? "cpu") as "cpu" | "interp";
const dw = new DistributedWorker({ devices, mpi: (process.argv[3] ?? "required") as "required" | "off", config: new RunConfig({ platform }) });
const N = dw.worldDevices, P = dw.size, k = dw.devices;
const ok = (name: string) => console.log(`ok rank=${dw.rank} ${name}`);
console.log(`rank ${dw.rank} on host ${dw.hosts[dw.rank]}; hosts ${dw.hosts.join(" ")}; checks ${dw.checks}`);

function data(shape: number[], dtype: DType, seed: number): HostTensor {
  const f = randn(shape, { seed });
  if (dtype === "float32") return f;
  const C = { int32: Int32Array, int64: BigInt64Array, int8: Int8Array, int16: Int16Array, uint8: Uint8Array }[dtype as "int32"]!;
  const out = new (C as unknown as new (n: number) => Int32Array)(f.data.length);
  for (let i = 0; i < out.length; i++) {
    const v = Math.round((f.data[i] as number) * 1000);
    (out as unknown as (number | bigint)[])[i] = dtype === "int64" ? BigInt(v) * 3000000007n : v;
  }
  return new HostTensor(out as never, shape, dtype);
}
function exact(got: HostTensor, want: ArrayLike<number | bigint>, name: string) {
  for (let i = 0; i < want.length; i++) {
    if (got.data[i] !== want[i]) throw new Error(`${name}: element ${i}: got ${got.data[i]}, want ${want[i]}`);
  }
}
function close(got: HostTensor, want: ArrayLike<number>, name: string) {
  for (let i = 0; i < want.length; i++) {
    const g = got.data[i] as number, w = want[i];
    if (!(Math.abs(g - w) <= 1e-5 + 1e-5 * Math.abs(w))) throw new Error(`${name}: element ${i}: got ${g}, want ${w}`);
  }
}
/** The reference reduction over shards, in the dtype's arithmetic (wrapping for integers). */
function reduceRef(parts: HostTensor[], op: string): ArrayLike<number | bigint> {
  const C = parts[0].data.constructor as new (n: number) => Int32Array;
  const out = new C(parts[0].data.length) as unknown as (number | bigint)[];
  for (let i = 0; i < out.length; i++) {
    let acc = parts[0].data[i] as number;
    for (let p = 1; p < parts.length; p++) {
      const v = parts[p].data[i] as number;
      if (parts[0].dtype === "float32") acc = op === "sum" ? Math.fround(acc + v) : op === "prod" ? Math.fround(acc * v) : op === "max" ? Math.max(acc, v) : Math.min(acc, v);
      else if (parts[0].dtype === "int64") acc = (op === "sum" ? BigInt.asIntN(64, (acc as unknown as bigint) + (v as unknown as bigint)) : op === "prod" ? BigInt.asIntN(64, (acc as unknown as bigint) * (v as unknown as bigint)) : op === "max" ? (acc > v ? acc : v) : (acc < v ? acc : v)) as never;
      else { const t = new C(1); t[0] = op === "sum" ? acc + v : op === "prod" ? (parts[0].dtype === "int32" ? Math.imul(acc, v) : acc * v) : op === "max" ? Math.max(acc, v) : Math.min(acc, v); acc = t[0]; }
    }
    out[i] = acc;
  }
  return out as unknown as ArrayLike<number | bigint>;
}

// allReduce on ShardedTensors, every op and dtype: shard g holds data(seed 100 + g).
for (const dtype of ["int32", "int64", "int8", "uint8", "int16", "float32"] as DType[]) {
  for (const op of ["sum", "max", "min", "prod"] as const) {
    const shard = [3, 5];
    const whole = [3 * N, 5];
    const parts = Array.from({ length: N }, (_, g) => data(shard, dtype, 100 + g));
    const init = new HostTensor(new (parts[0].data.constructor as new (n: number) => Int32Array)(parts[0].data.length * N) as never, whole, dtype);
    parts.forEach((p, g) => (init.data as Int32Array).set(p.data as Int32Array, g * p.data.length));
    const t = dw.allocSharded(whole, dtype, { axis: 0, init });
    dw.allReduce(t, op);
    const ref = reduceRef(parts, op);
    const got = dw.gather(t);
    const per = parts[0].data.length;
    for (let g = 0; g < N; g++) {
      const slice = new HostTensor((got.data as Int32Array).slice(g * per, (g + 1) * per) as never, shard, dtype);
      if (dtype === "float32") close(slice, ref as ArrayLike<number>, `allReduce ${op} ${dtype} shard ${g}`);
      else exact(slice, ref, `allReduce ${op} ${dtype} shard ${g}`);
    }
    dw.free(t);
  }
}
ok("allReduce sharded (4 ops x 6 dtypes)");

// allReduce / broadcast / allGather / reduceScatter of one DeviceTensor per rank.
{
  const w = dw.workers[0];
  const parts = Array.from({ length: P }, (_, r) => data([4, 8], "float32", 7 + r));
  const t = w.allocTensor([4, 8], "float32", { init: parts[dw.rank] });
  const before = w.stats;
  dw.allReduce(t);
  // cpu: MPI reads and writes the device memory in place (no host copy); interp: through one copy each way.
  const moved = [w.stats.d2hBytes - before.d2hBytes, w.stats.h2dBytes - before.h2dBytes].join();
  const wantMoved = platform === "cpu" || P === 1 ? "0,0" : "128,128";
  if (moved !== wantMoved) throw new Error(`allReduce DeviceTensor on ${platform} moved ${moved} bytes (d2h,h2d), expected ${wantMoved}`);
  const got = new Float32Array(32); w.copyFrom(got, t, 128);
  close(new HostTensor(got, [4, 8], "float32"), reduceRef(parts, "sum") as ArrayLike<number>, "allReduce DeviceTensor");
  ok("allReduce DeviceTensor");
  const b = w.allocTensor([4, 8], "float32", { init: parts[dw.rank] });
  dw.broadcast(b, P - 1);
  w.copyFrom(got, b, 128);
  exact(new HostTensor(got, [4, 8], "float32"), parts[P - 1].data as Float32Array, "broadcast DeviceTensor");
  ok("broadcast DeviceTensor");
  const ints = Array.from({ length: P }, (_, r) => data([2 * P, 3], "int32", 50 + r));
  const g = dw.allGather(w.allocTensor([2 * P, 3], "int32", { init: ints[dw.rank] }));
  if (g.shape.join() !== [2 * P * P, 3].join()) throw new Error(`allGather shape ${g.shape}`);
  const gathered = new Int32Array(2 * P * P * 3); w.copyFrom(gathered, g, gathered.byteLength);
  const want = new Int32Array(gathered.length); ints.forEach((p, r) => want.set(p.data as Int32Array, r * p.data.length));
  exact(new HostTensor(gathered, g.shape, "int32"), want, "allGather DeviceTensor");
  ok("allGather DeviceTensor");
  const rs = dw.reduceScatter(w.allocTensor([2 * P, 3], "int32", { init: ints[dw.rank] }), "sum");
  const sum = reduceRef(ints, "sum") as Int32Array;
  const mine = new Int32Array(6); w.copyFrom(mine, rs, 24);
  exact(new HostTensor(mine, [2, 3], "int32"), sum.slice(dw.rank * 6, dw.rank * 6 + 6), "reduceScatter DeviceTensor");
  ok("reduceScatter DeviceTensor");
}

// ShardedTensor allGather / reduceScatter / broadcast along axis 1 (columns), and scatter/gather.
{
  const whole = data([4, 2 * N], "int32", 999);
  const t = dw.allocSharded([4, 2 * N], "int32", { axis: 1, init: whole });
  const g = dw.allGather(t);
  for (let d = 0; d < k; d++) {
    const buf = new Int32Array(whole.data.length); dw.workers[d].copyFrom(buf, g.shards[d], buf.byteLength);
    exact(new HostTensor(buf, [4, 2 * N], "int32"), whole.data as Int32Array, `allGather axis 1 device ${d}`);
  }
  ok("allGather sharded axis 1");
  // reduceScatter of g (each device holds `whole`): device g gets N * its column block.
  const rs = dw.reduceScatter(g, "sum");
  const back = dw.gather(rs);
  const want = Int32Array.from(whole.data as Int32Array, (v) => v * N);
  exact(back, want, "reduceScatter sharded axis 1");
  ok("reduceScatter sharded axis 1");
  const src = data([4, 2 * N], "int32", dw.rank === 0 ? 5 : 6); // only rank 0's is read
  dw.scatter(src, t);
  exact(dw.gather(t), data([4, 2 * N], "int32", 5).data as Int32Array, "scatter/gather");
  ok("scatter/gather");
  const root = N - 1;
  dw.broadcast(t, root);
  const rootShard = new Int32Array(8);
  const ref = data([4, 2 * N], "int32", 5).data as Int32Array;
  for (let r = 0; r < 4; r++) for (let c = 0; c < 2; c++) rootShard[r * 2 + c] = ref[r * 2 * N + root * 2 + c];
  const after = dw.gather(t).data as Int32Array;
  for (let s = 0; s < N; s++) for (let r = 0; r < 4; r++) for (let c = 0; c < 2; c++) {
    if (after[r * 2 * N + s * 2 + c] !== rootShard[r * 2 + c]) throw new Error(`broadcast sharded: shard ${s} differs`);
  }
  ok("broadcast sharded");
}
// Uneven shards: an extent the N devices do not divide (2N + 1 rows, or columns): shards differ
// by one (the first ones longer), gather/scatter/allGather move them as they are, reduceScatter
// leaves uneven chunks, and the elementwise collectives refuse them by name.
{
  const E = 2 * N + 1;
  const extents = Array.from({ length: N }, (_, g) => Math.floor(E / N) + (g < E % N ? 1 : 0));
  for (const axis of [0, 1]) {
    const shape = axis === 0 ? [E, 3] : [3, E];
    const whole = data(shape, "int32", 300 + axis);
    const t = dw.allocSharded(shape, "int32", { axis, init: whole });
    const shapes = extents.map((e) => (axis === 0 ? [e, 3] : [3, e]).join());
    if (t.shardShapes.map((s) => s.join()).join(" ") !== shapes.join(" ")) throw new Error(`uneven axis ${axis}: shardShapes ${JSON.stringify(t.shardShapes)}, want ${shapes.join(" ")}`);
    // each local shard holds its slice of the whole tensor
    const start = extents.slice(0, t.firstShard).reduce((a, b) => a + b, 0);
    let at = start;
    t.shards.forEach((sh, d) => {
      const e = extents[t.firstShard + d];
      const got = new Int32Array(3 * e); dw.workers[d].copyFrom(got, sh, got.byteLength);
      for (let i = 0; i < 3; i++) for (let j = 0; j < e; j++) {
        const want = axis === 0 ? (whole.data as Int32Array)[(at + j) * 3 + i] : (whole.data as Int32Array)[i * E + at + j];
        const have = axis === 0 ? got[j * 3 + i] : got[i * e + j];
        if (have !== want) throw new Error(`uneven axis ${axis}: device ${t.firstShard + d} element (${i}, ${j}) = ${have}, want ${want}`);
      }
      at += e;
    });
    exact(dw.gather(t), whole.data as Int32Array, `uneven gather axis ${axis}`);
    const src = data(shape, "int32", dw.rank === 0 ? 400 : 401); // only rank 0's is read
    dw.scatter(src, t);
    exact(dw.gather(t), data(shape, "int32", 400).data as Int32Array, `uneven scatter axis ${axis}`);
    const g = dw.allGather(t);
    for (let d = 0; d < k; d++) {
      const buf = new Int32Array(3 * E); dw.workers[d].copyFrom(buf, g.shards[d], buf.byteLength);
      exact(new HostTensor(buf, shape, "int32"), data(shape, "int32", 400).data as Int32Array, `uneven allGather axis ${axis} device ${d}`);
    }
    for (const [name, f] of N === 1 ? [] : [["allReduce", () => dw.allReduce(t)], ["broadcast", () => dw.broadcast(t, 0)], ["reduceScatter", () => dw.reduceScatter(t)]] as const) {
      let code = "no error";
      try { f(); } catch (e) { code = `${(e as { code?: string }).code}: ${(e as Error).message}`; }
      if (!code.startsWith(`E_SHARD: [E_SHARD] ${name}: ShardedTensor(shape=[${shape.join(", ")}]`) || !code.includes("has shards of different shapes")) throw new Error(`uneven ${name}: ${code}`);
    }
    dw.free(t); dw.free(g);
  }
  ok("uneven shards: gather, scatter, allGather (axis 0 and 1), elementwise collectives refused");
  // reduceScatter into uneven chunks: every device holds rows (or columns) of length E.
  for (const axis of [0, 1]) {
    const shard = axis === 0 ? [E, 3] : [3, E];
    const parts = Array.from({ length: N }, (_, g) => data(shard, "int32", 500 + g));
    const wholeShape = axis === 0 ? [E * N, 3] : [3, E * N];
    const init = new HostTensor(new Int32Array(3 * E * N), wholeShape, "int32");
    for (let g = 0; g < N; g++) for (let i = 0; i < shard[0]; i++) for (let j = 0; j < shard[1]; j++) {
      const v = (parts[g].data as Int32Array)[i * shard[1] + j];
      if (axis === 0) (init.data as Int32Array)[(g * E + i) * 3 + j] = v; else (init.data as Int32Array)[i * E * N + g * E + j] = v;
    }
    const t = dw.allocSharded(wholeShape, "int32", { axis, init });
    const rs = dw.reduceScatter(t, "sum");
    const want = reduceRef(parts, "sum") as Int32Array;
    if (rs.shape.join() !== shard.join() || rs.shardShapes.map((s) => s[axis]).join() !== extents.join()) throw new Error(`uneven reduceScatter axis ${axis}: ${rs}`);
    exact(dw.gather(rs), want, `uneven reduceScatter axis ${axis}`);
    dw.free(t); dw.free(rs);
  }
  // ... and of one DeviceTensor per rank ([2P + 1, 3]: rank r keeps its rows of the sum)
  const rows = 2 * P + 1;
  const ints = Array.from({ length: P }, (_, r) => data([rows, 3], "int32", 600 + r));
  const w = dw.workers[0];
  const rs = dw.reduceScatter(w.allocTensor([rows, 3], "int32", { init: ints[dw.rank] }), "sum");
  const sum = reduceRef(ints, "sum") as Int32Array;
  const per = Array.from({ length: P }, (_, r) => Math.floor(rows / P) + (r < rows % P ? 1 : 0));
  const first = per.slice(0, dw.rank).reduce((a, b) => a + b, 0);
  if (rs.shape.join() !== [per[dw.rank], 3].join()) throw new Error(`uneven reduceScatter DeviceTensor shape ${rs.shape}`);
  const mine = new Int32Array(per[dw.rank] * 3); w.copyFrom(mine, rs, mine.byteLength);
  exact(new HostTensor(mine, rs.shape, "int32"), sum.slice(first * 3, (first + per[dw.rank]) * 3), "uneven reduceScatter DeviceTensor");
  ok("uneven shards: reduceScatter into uneven chunks (axis 0 and 1, and a DeviceTensor per rank)");
}
// A larger allReduce (1 MiB per rank): small integers, so the float32 sum is exact.
{
  const n = 1 << 18;
  const w = dw.workers[0];
  const init = Float32Array.from({ length: n }, (_, i) => (i % 7) + dw.rank);
  const t = w.allocTensor([n], "float32", { init: { data: init, shape: [n] } });
  dw.allReduce(t);
  const got = new Float32Array(n);
  w.copyFrom(got, t, got.byteLength);
  for (let i = 0; i < n; i++) {
    const want = P * (i % 7) + (P * (P - 1)) / 2;
    if (got[i] !== want) throw new Error(`allReduce 1 MiB: element ${i} = ${got[i]}, want ${want}`);
  }
  ok("allReduce 1 MiB");
}
dw.barrier();
ok("barrier");
dw.close();
ok("closed");

// Data parallelism and tensor parallelism over every device of an MPI world, each checked
// against one process doing all of the work on one device.
//
//   npx tsx examples/distributed/data_parallel.ts                     # one process, $TSPTO_DEVICES devices (default 2)
//   mpirun -np 4 node --import tsx examples/distributed/data_parallel.ts   # 4 ranks (add --allow-run-as-root as root, --oversubscribe on few cores)
//   mpirun -H a:2,b:2 -np 4 node --import tsx examples/distributed/data_parallel.ts  # the same over hosts a and b (README)
//
// 1. Data parallel linear layer, y = x @ w with loss 0.5 * |y - t|^2: every device holds a
//    replica of w and a shard of the batch (BS rows); it runs the forward matmul kernel, the
//    residual dy = y - t and its weight gradient dw = x_shard^T @ dy_shard (matmulAcc over
//    the batch), then allReduce(sum) makes every replica's gradient the whole batch's.
// 2. Tensor parallel matmul: w is split by columns over the devices; each computes its
//    column block of y = x @ w, and allGather along the columns assembles y on every device.
import { pl, DistributedWorker, HostTensor, RunConfig, ChipWorker, randn, zeros, assertClose } from "tspto";

const BS = 32, IN = 64, OUT = 32;

/** y[rowBlocks*BS, colBlocks*OUT] = x @ w, one matmul task per (row block, column block). */
const matmulBlocks = pl.jit(function matmulBlocks(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>, rowBlocks: number, colBlocks: number) {
  for (const i of pl.range(0, rowBlocks)) {
    for (const j of pl.range(0, colBlocks)) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const tx = pl.move(pl.load(x, [i * BS, 0], [BS, IN], { mem: pl.Mem.Mat }), pl.Mem.Left);
        const tw = pl.move(pl.load(w, [0, j * OUT], [IN, OUT], { mem: pl.Mem.Mat }), pl.Mem.Right);
        pl.store(pl.matmul(tx, tw), [i * BS, j * OUT], y);
      });
    }
  }
  return y;
});

/** dy = y - t (tensor level). */
const residual = pl.jit(function residual(y: pl.Tensor, t: pl.Tensor, dy: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(dy, pl.sub(y, t));
  });
  return dy;
});

/** g[IN, OUT] = xT[IN, rows] @ dy[rows, OUT], accumulated over BS-row chunks of the batch. */
const gradW = pl.jit(function gradW(xT: pl.Tensor, dy: pl.Tensor, g: pl.Out<pl.Tensor>, rows: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.createTile([IN, OUT], pl.FP32, pl.Mem.Acc);
    for (const k of pl.range(0, rows, BS)) {
      const a = pl.move(pl.load(xT, [0, k], [IN, BS], { mem: pl.Mem.Mat }), pl.Mem.Left);
      const b = pl.move(pl.load(dy, [k, 0], [BS, OUT], { mem: pl.Mem.Mat }), pl.Mem.Right);
      acc = pl.matmulAcc(acc, a, b);
    }
    pl.store(acc, [0, 0], g);
  });
  return g;
});

function transpose(x: HostTensor): HostTensor {
  const [r, c] = x.shape;
  const out = zeros([c, r]);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out.data[j * r + i] = x.data[i * c + j];
  return out;
}
function repeatRows(x: HostTensor, n: number): HostTensor {
  const out = zeros([x.shape[0] * n, x.shape[1]]);
  for (let k = 0; k < n; k++) (out.data as Float32Array).set(x.data as Float32Array, k * x.data.length);
  return out;
}
function slice(x: HostTensor, rows: number, k: number): HostTensor {
  const per = rows * x.shape[1];
  return new HostTensor((x.data as Float32Array).slice(k * per, (k + 1) * per), [rows, x.shape[1]], "float32");
}

export function main(): void {
  const dw = new DistributedWorker({ devices: Number(process.env.TSPTO_DEVICES ?? (process.env.OMPI_COMM_WORLD_SIZE ? 1 : 2)) });
  const N = dw.worldDevices, B = BS * N;
  const say = (s: string) => { if (dw.rank === 0) console.log(s); };
  say(`${dw}: ${N} devices in the world${dw.usesMpi ? ` over MPI (${dw.mpiLibrary})` : ""}`);
  const cfg = new RunConfig({ platform: dw.workers[0].platform });

  // Every rank makes the same seeded data; each device keeps its shard.
  const x = randn([B, IN], { seed: 1 }), w = randn([IN, OUT], { seed: 2 }), t = randn([B, OUT], { seed: 3 });

  // ---------------------------------------------------------------- 1. data parallel
  const fwd = matmulBlocks.compile(zeros([BS, IN]), w, zeros([BS, OUT]), 1, 1, cfg);
  const res = residual.compile(zeros([BS, OUT]), zeros([BS, OUT]), zeros([BS, OUT]), cfg);
  const grad = gradW.compile(zeros([IN, BS]), zeros([BS, OUT]), zeros([IN, OUT]), BS, cfg);
  const xs = dw.allocSharded([B, IN], "float32", { axis: 0, init: x });
  const xTs = dw.allocSharded([IN, B], "float32", { axis: 1, init: transpose(x) });
  const ts = dw.allocSharded([B, OUT], "float32", { axis: 0, init: t });
  const ws = dw.allocSharded([N * IN, OUT], "float32", { axis: 0, init: repeatRows(w, N) }); // a replica per device
  const ys = dw.allocSharded([B, OUT], "float32");
  const dys = dw.allocSharded([B, OUT], "float32");
  const gs = dw.allocSharded([N * IN, OUT], "float32"); // a gradient per device
  dw.run(fwd, xs, ws, ys, 1, 1);
  dw.run(res, ys, ts, dys);
  dw.run(grad, xTs, dys, gs, BS);
  dw.allReduce(gs, "sum");
  const y = dw.gather(ys);
  const g = dw.gather(gs); // N copies of the all-reduced gradient

  // ---------------------------------------------------------------- 2. tensor parallel
  const wt = randn([IN, OUT * N], { seed: 4 });
  const xb = slice(x, BS, 0);
  const tp = matmulBlocks.compile(xb, zeros([IN, OUT]), zeros([BS, OUT]), 1, 1, cfg);
  const xr = dw.allocSharded([BS * N, IN], "float32", { axis: 0, init: repeatRows(xb, N) }); // x on every device
  const wcols = dw.allocSharded([IN, OUT * N], "float32", { axis: 1, init: wt });
  const ycols = dw.allocSharded([BS, OUT * N], "float32", { axis: 1 });
  dw.run(tp, xr, wcols, ycols, 1, 1);
  const yfull = dw.allGather(ycols); // every device: the whole [BS, OUT * N]
  const ytp = new Float32Array(BS * OUT * N);
  dw.workers[0].copyFrom(ytp, yfull.shards[0], ytp.byteLength);

  // ---------------------------------------------------------------- one process does it all
  if (dw.rank === 0) {
    using one = new ChipWorker(cfg);
    const yRef = zeros([B, OUT]), dyRef = zeros([B, OUT]), gRef = zeros([IN, OUT]);
    one.run(matmulBlocks.compile(x, w, yRef, N, 1, cfg), x, w, yRef, N, 1);
    one.run(residual.compile(yRef, t, dyRef, cfg), yRef, t, dyRef);
    one.run(gradW.compile(transpose(x), dyRef, gRef, B, cfg), transpose(x), dyRef, gRef, B);
    assertClose(y, yRef, { rtol: 1e-5, atol: 1e-5 });
    for (let k = 0; k < N; k++) assertClose(slice(g, IN, k), gRef, { rtol: 1e-4, atol: 1e-3 });
    say(`data parallel: y [${B}, ${OUT}] and the all-reduced dW [${IN}, ${OUT}] on all ${N} devices match one process on the whole batch`);
    const tpRef = zeros([BS, OUT * N]);
    one.run(matmulBlocks.compile(xb, wt, tpRef, 1, N, cfg), xb, wt, tpRef, 1, N);
    assertClose(new HostTensor(ytp, [BS, OUT * N], "float32"), tpRef, { rtol: 1e-5, atol: 1e-5 });
    say(`tensor parallel: y [${BS}, ${OUT * N}] from ${N} column shards (allGather) matches one process`);
  }
  dw.barrier();
  dw.close();
}

main();

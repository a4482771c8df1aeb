// Run by bench/distributed.ts under mpirun: tspto's allReduce (sum, in place) of one float32
// DeviceTensor per rank, timed like the C peer (bench/allreduce_mpi.c): 2 warm-up calls, then
// per iteration a barrier and one timed allReduce. argv: bytes, iterations. Rank 0 prints JSON.
import { DistributedWorker } from "tspto";

const bytes = Number(process.argv[2] ?? 64 * 2 ** 20), iters = Number(process.argv[3] ?? 10);
const dw = new DistributedWorker({ mpi: "required" });
const n = bytes / 4;
const init = new Float32Array(n);
for (let i = 0; i < n; i++) init[i] = (((i * 2654435761) >>> 0) % 1000 + dw.rank) / 1000;
const w = dw.workers[0];
const t = w.allocTensor([n], "float32", { init: { data: init, shape: [n] } });
for (let i = 0; i < 2; i++) dw.allReduce(t);
const ms: number[] = [];
for (let i = 0; i < iters; i++) {
  dw.barrier();
  const t0 = process.hrtime.bigint();
  dw.allReduce(t);
  ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
ms.sort((a, b) => a - b);
if (dw.rank === 0) console.log(JSON.stringify({ ranks: dw.size, bytes, medianMs: ms[Math.floor(iters / 2)], minMs: ms[0] }));
dw.close();

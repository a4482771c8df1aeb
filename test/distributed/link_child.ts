// Run by test/distributed/multihost.test.ts under mpirun across network namespaces: every rank
// loops allReduce (64 KiB) until one fails; the test takes a host's link down meanwhile. Each
// rank prints "rank R: looping" once it has done 50, then, when a collective fails,
// "rank R: caught <code> lostRank=<r> <message>" and exits with 2.
import { DistributedWorker, type TsptoError } from "tspto";

const dw = new DistributedWorker({ mpi: "required" });
const t = dw.workers[0].allocTensor([1 << 14], "float32");
for (let i = 0; ; i++) {
  try {
    dw.allReduce(t);
  } catch (e) {
    const err = e as TsptoError & { lostRank?: number };
    console.log(`rank ${dw.rank}: caught ${err.code} lostRank=${err.lostRank} ${err.detail}`);
    process.exit(2);
  }
  if (i === 50) console.log(`rank ${dw.rank}: looping`);
}

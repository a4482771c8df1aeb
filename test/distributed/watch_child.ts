// Run by test/distributed/mpi.test.ts and multihost.test.ts under mpirun, with
// TSPTO_MPI_WATCH_PORTS set: each rank prints where its watch listens, from the kernel's table
// ("rank R: watch listens on 127.0.0.1:47001": this process's listening TCP sockets on a port of
// that range), or "rank R: constructor failed: <code> <message>". Then argv[2] "ok": one
// allReduce, "rank R: done"; "throw": rank 1 fails with an uncaught error after it, and the
// others print "rank R: caught <code> lostRank=<r> <message>" from the next one.
import { DistributedWorker, type TsptoError } from "tspto";
import { listeningSockets, watchPorts } from "./sockets.js";

const mode = process.argv[2] ?? "ok";
const myRank = Number(process.env.OMPI_COMM_WORLD_RANK);
let dw: DistributedWorker;
try {
  dw = new DistributedWorker({ mpi: "required", timeoutS: 60 });
} catch (e) {
  console.log(`rank ${myRank}: constructor failed: ${(e as TsptoError).code} ${(e as TsptoError).detail}`);
  process.exit(2);
}
const ports = watchPorts();
if (!ports) throw new Error("watch_child.ts needs TSPTO_MPI_WATCH_PORTS");
console.log(`rank ${dw.rank}: watch listens on ${listeningSockets(ports).join(", ") || "nothing"}`);
const t = dw.workers[0].allocTensor([256], "float32");
dw.allReduce(t);
if (mode === "throw") {
  if (dw.rank === 1) throw new Error("rank 1 fails on purpose");
  try {
    dw.allReduce(t);
    console.log(`rank ${dw.rank}: second allReduce completed (unexpected)`);
  } catch (e) {
    const err = e as TsptoError & { lostRank?: number };
    console.log(`rank ${dw.rank}: caught ${err.code} lostRank=${err.lostRank} ${err.detail}`);
    process.exit(2);
  }
}
dw.close();
console.log(`rank ${dw.rank}: done`);

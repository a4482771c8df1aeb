// Run by bench/distributed.ts (row 7c) under mpirun over 3 namespace hosts. argv[2]:
//   "kill"  rank 1 prints "fault at <ms>" and SIGKILLs itself while the others wait in allReduce;
//   "link"  every rank loops allReduce ("looping" after 50); the bench takes h2's link down;
//   "fail"  rank 1 passes a float16 tensor to allReduce (its own error), the others float32.
// A surviving rank prints "rank R: named at <ms> <code> <message>" when its collective fails.
import { DistributedWorker, type TsptoError } from "tspto";

const mode = process.argv[2];
const dw = new DistributedWorker({ mpi: "required" });
const w = dw.workers[0];
const t = w.allocTensor([1 << 14], "float32");
const named = (e: unknown) => {
  const err = e as TsptoError;
  console.log(`rank ${dw.rank}: named at ${Date.now()} ${err.code} ${err.detail}`);
  process.exit(2);
};
dw.allReduce(t);
if (mode === "kill") {
  if (dw.rank === 1) {
    console.log(`fault at ${Date.now()}`);
    process.kill(process.pid, "SIGKILL");
  }
  try { dw.allReduce(t); } catch (e) { named(e); }
} else if (mode === "link") {
  for (let i = 0; ; i++) {
    try { dw.allReduce(t); } catch (e) { named(e); }
    if (i === 50) console.log(`rank ${dw.rank}: looping`);
  }
} else if (mode === "fail") {
  dw.barrier();
  const x = w.allocTensor([4, 8], dw.rank === 1 ? "float16" : "float32");
  if (dw.rank === 1) console.log(`fault at ${Date.now()}`);
  try { dw.allReduce(x); } catch (e) { if (dw.rank !== 1) named(e); }
  dw.close();
} else {
  throw new Error(`fault_child: unknown mode ${mode}`);
}

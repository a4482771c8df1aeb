// Run by test/distributed/mpi.test.ts (and multihost.test.ts) under mpirun with 3 ranks: ranks
// that pass different arguments to a collective, or one whose own arguments fail, must make
// every rank fail at once with an error naming who differs, and leave the world usable.
// argv[2]:
//   "all"  every scenario in turn; each rank prints "rank R: <scenario>: <code> <message>" (or
//          "completed"); the last one, where all agree, checks the values.
//   "left" rank 1 takes part in one allReduce fewer and closes; the others wait in that last
//          allReduce and must fail naming rank 1 instead of waiting forever.
import { DistributedWorker, type DeviceTensor, type TsptoError } from "tspto";

const mode = process.argv[2] ?? "all";
const dw = new DistributedWorker({ mpi: "required", timeoutS: 60 });
const rank = dw.rank;
const w = dw.workers[0];
const say = (s: string) => console.log(`rank ${rank}: ${s}`);
if (dw.size !== 3) throw new Error(`agreement_child needs 3 ranks, got ${dw.size}`);

function attempt(name: string, f: () => unknown): void {
  try {
    f();
    say(`${name}: completed`);
  } catch (e) {
    const err = e as TsptoError;
    say(`${name}: ${err.code} ${err.detail ?? err.message}`);
  }
}
const ones = (shape: number[], dtype: "float32" | "int32" | "float16" = "float32"): DeviceTensor => w.allocTensor(shape, dtype);

if (mode === "left") {
  const t = ones([4, 8]);
  dw.allReduce(t);
  say("first allReduce done");
  if (rank === 1) {
    dw.close();
    say("closed after one collective");
  } else {
    attempt("left", () => dw.allReduce(t));
    process.exit(2);
  }
} else {
  attempt("shape", () => dw.allReduce(ones(rank === 1 ? [4, 6] : [4, 8])));
  attempt("dtype", () => dw.allReduce(ones([4, 8], rank === 1 ? "int32" : "float32")));
  attempt("op", () => dw.allReduce(ones([4, 8]), rank === 2 ? "max" : "sum"));
  attempt("root", () => dw.broadcast(ones([4, 8]), rank === 0 ? 0 : 1));
  attempt("kind", () => (rank === 1 ? dw.broadcast(ones([4, 8])) : dw.allReduce(ones([4, 8]))));
  attempt("axis", () => dw.allGather(dw.allocSharded([6, 6], "float32", { axis: rank === 1 ? 1 : 0 })));
  attempt("barrier", () => (rank === 0 ? dw.barrier() : dw.allReduce(ones([2]))));
  // A rank whose own arguments fail: it throws its own error, the others name it.
  attempt("local dtype", () => dw.allReduce(ones([4, 8], rank === 1 ? "float16" : "float32")));
  const s = dw.allocSharded([6, 4], "float32");
  if (rank === 2) dw.free(s);
  attempt("local freed", () => dw.gather(s));
  // After all that the world still works: every rank agrees, the values are right.
  const t = w.allocTensor([3], "float32", { init: { data: new Float32Array([rank + 1, 10 * (rank + 1), 0.5]), shape: [3] } });
  dw.allReduce(t);
  const got = new Float32Array(3);
  w.copyFrom(got, t, 12);
  say(`after: allReduce gives ${[...got].join(", ")}`);
  dw.close();
}

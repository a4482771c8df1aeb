// Run by test/distributed/mpi.test.ts under mpirun: rank 1 goes away mid-run (argv[2]:
// "kill" = SIGKILL itself, "throw" = an uncaught error) while the other ranks wait for it in
// a collective ("idle": while they sleep between collectives); they must fail with an error
// naming rank 1 instead of hanging.
import { DistributedWorker, randn, TsptoError } from "tspto";

const mode = process.argv[2] ?? "kill";
const dw = new DistributedWorker({ mpi: "required" });
const t = dw.allocSharded([4 * dw.worldDevices, 16], "float32", { init: randn([4 * dw.worldDevices, 16], { seed: 1 }) });
dw.allReduce(t);
console.log(`rank ${dw.rank}: first allReduce done`);
if (dw.rank === 1) {
  if (mode === "kill" || mode === "idle") process.kill(process.pid, "SIGKILL");
  throw new Error("rank 1 fails on purpose");
}
if (mode === "idle") await new Promise((r) => setTimeout(r, 60_000));
try {
  dw.allReduce(t);
  console.log(`rank ${dw.rank}: second allReduce completed (unexpected)`);
} catch (e) {
  const err = e as TsptoError & { lostRank?: number };
  console.log(`rank ${dw.rank}: caught ${err.code} lostRank=${err.lostRank} ${err.detail}`);
  process.exit(2);
}

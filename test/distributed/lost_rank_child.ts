// Run by test/distributed/mpi.test.ts under mpirun: rank 1 goes away mid-run (argv[2]:
// "kill" = SIGKILL itself, "throw" = an uncaught error) while the other ranks wait for it in
// a collective ("idle": while they sleep between collectives); they must fail with an error
// naming rank 1 instead of hanging. "stall": rank 1 stays alive but never joins; the others
// give up after their timeout (2 s). "mismatch": ranks ask for different numbers of devices.
import { DistributedWorker, randn, TsptoError } from "tspto";

const mode = process.argv[2] ?? "kill";
const myRank = Number(process.env.OMPI_COMM_WORLD_RANK);
let dw: DistributedWorker;
try {
  dw = new DistributedWorker({ mpi: "required", timeoutS: mode === "stall" && myRank !== 1 ? 2 : 0, devices: mode === "mismatch" && myRank === 1 ? 2 : 1 });
} catch (e) {
  console.log(`rank ${myRank}: constructor failed: ${(e as TsptoError).code} ${(e as TsptoError).detail}`);
  process.exit(2);
}
const t = dw.allocSharded([4 * dw.worldDevices, 16], "float32", { init: randn([4 * dw.worldDevices, 16], { seed: 1 }) });
dw.allReduce(t);
console.log(`rank ${dw.rank}: first allReduce done`);
if (dw.rank === 1) {
  if (mode === "stall") await new Promise((r) => setTimeout(r, 60_000));
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

// Bench row 7: allReduce (sum) of 64 MiB float32 over 4 ranks on this machine, tspto
// (DistributedWorker.allReduce on a DeviceTensor: MPI in place on device memory, from
// bench/allreduce_child.ts) against MPI_Allreduce called directly from C (bench/allreduce_mpi.c,
// built here with mpicc), alternating the two jobs round by round. Skips without Open MPI.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface AllreduceBench {
  skipped?: string;
  ranks: number;
  bytes: number;
  tsptoMs: number[]; // per job: the median of its timed calls (rank 0)
  peerMs: number[];
}

function job(cmd: string[], env: NodeJS.ProcessEnv): { medianMs: number } {
  const r = spawnSync("mpirun", ["--allow-run-as-root", "--oversubscribe", ...cmd], { cwd: ROOT, encoding: "utf8", env, timeout: 600_000 });
  if (r.status !== 0) throw new Error(`mpirun ${cmd.join(" ")} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as { medianMs: number };
}

export function allreduceBench(work: string, rounds: number, log: (s: string) => void, ranks = 4, bytes = 64 * 2 ** 20, iters = 10): AllreduceBench {
  const none = (why: string): AllreduceBench => ({ skipped: why, ranks, bytes, tsptoMs: [], peerMs: [] });
  if (spawnSync("mpirun", ["--version"]).status !== 0) return none("no mpirun (apt-get install openmpi-bin libopenmpi-dev)");
  const exe = join(work, "allreduce_mpi");
  const cc = spawnSync("mpicc", ["-O2", "-o", exe, join(ROOT, "bench", "allreduce_mpi.c")], { encoding: "utf8" });
  if (cc.status !== 0) return none(`mpicc failed or is missing (libopenmpi-dev): ${cc.stderr ?? cc.error}`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("OMPI_")) delete env[k];
  const out: AllreduceBench = { ranks, bytes, tsptoMs: [], peerMs: [] };
  const args = [String(bytes), String(iters)];
  for (let r = 0; r < rounds; r++) {
    const peer = job(["-np", String(ranks), exe, ...args], env).medianMs;
    const ts = job(["-np", String(ranks), "node", "--import", "tsx", join(ROOT, "bench", "allreduce_child.ts"), ...args], env).medianMs;
    out.peerMs.push(peer);
    out.tsptoMs.push(ts);
    log(`  round ${r + 1}/${rounds}: tspto ${ts.toFixed(1)} ms, MPI_Allreduce ${peer.toFixed(1)} ms`);
  }
  return out;
}

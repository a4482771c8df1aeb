// Bench rows 15 (BENCH_ONLY=gpt2tp): tensor-parallel GPT-2 small decode (examples/gpt2's
// GPT2Model with a DistributedWorker, bench/gpt2/tp_child.ts) at tp = 1 (one process), 2 and 4
// (mpirun on this host, shared memory), the jobs alternating round by round; each row is the
// median over rounds of each job's median ms per token, and the share of a step spent in its
// 26 collectives (25 allReduces of [1, 768] float32 and the gather of the [1, 50257] logits,
// each with its agreement check, and the wait for the slowest rank). With fewer cores than ranks the ranks share cores: the row then measures how the
// split work and the communication compete for them, not a speed-up.
import { spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

export interface TpRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null; limit?: string }
interface Job { tp: number; msPerToken: number; commMs: number }

function job(tp: number, steps: number): Job {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("OMPI_") || k.startsWith("PMIX_")) delete env[k];
  const cmd = ["node", "--import", "tsx", "bench/gpt2/tp_child.ts", String(steps)];
  const r = tp === 1
    ? spawnSync(cmd[0], cmd.slice(1), { cwd: ROOT, encoding: "utf8", env, timeout: 600_000 })
    : spawnSync("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", String(tp), ...cmd], { cwd: ROOT, encoding: "utf8", env, timeout: 600_000 });
  const line = r.stdout?.split("\n").find((l) => l.startsWith("{"));
  if (r.status !== 0 || !line) throw new Error(`gpt2 tp ${tp} job failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line) as Job;
}

export function gpt2TpBench(rounds: number, log: (s: string) => void, steps = 16): TpRow[] {
  if (spawnSync("mpirun", ["--version"]).status !== 0) return [{ id: "15", what: "tensor-parallel GPT-2 decode", tspto: "—", peer: "—", result: "skipped: no mpirun (apt-get install openmpi-bin libopenmpi-dev)", goal: "—", met: null }];
  const tps = [1, 2, 4];
  const got = new Map<number, Job[]>(tps.map((t) => [t, []]));
  for (let i = 0; i < rounds; i++) {
    for (const tp of tps) {
      const j = job(tp, steps);
      got.get(tp)!.push(j);
      log(`  gpt2 tp ${tp} round ${i + 1}: ${j.msPerToken.toFixed(1)} ms/token, collectives ${j.commMs.toFixed(1)} ms of it`);
    }
  }
  const cores = availableParallelism();
  const base = median(got.get(1)!.map((j) => j.msPerToken));
  return tps.map((tp, i) => {
    const ms = median(got.get(tp)!.map((j) => j.msPerToken));
    const comm = median(got.get(tp)!.map((j) => j.commMs));
    return {
      id: `15${"abc"[i]}`,
      what: `GPT-2 small decode, tensor parallel tp = ${tp}${tp === 1 ? " (one process)" : ` (mpirun -np ${tp}, one host)`}, ms/token at position ~40`,
      tspto: `${ms.toFixed(1)} ms`, peer: tp === 1 ? "—" : `tp 1: ${base.toFixed(1)} ms`,
      result: tp === 1 ? `${ms.toFixed(1)} ms/token` : `${(base / ms).toFixed(2)}x of tp 1; collectives ${comm.toFixed(1)} ms (${((100 * comm) / ms).toFixed(0)}% of a step)`,
      goal: "—", met: null,
      limit: tp > cores ? `${tp} ranks on ${cores} cores: each rank's kernels run on the cores the other ranks also use, and a rank waiting in allReduce spins; the speed-up is bounded by the cores, not by the split` : undefined,
    };
  });
}

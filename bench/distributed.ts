// Bench rows 7: the distributed runtime.
//  7a/7b: allReduce (sum) of 64 MiB float32 over 4 ranks, tspto (DistributedWorker.allReduce on
//    a DeviceTensor: MPI in place on device memory, bench/allreduce_child.ts) against
//    MPI_Allreduce called directly from C (bench/allreduce_mpi.c, built here with mpicc), the
//    two jobs alternating round by round; 7a on one host over shared memory, 7b across two
//    network-namespace hosts (scripts/netns_hosts.sh) over TCP only (2 ranks per host; shared
//    memory off, so the ranks of one host use TCP too). The row is the median over rounds of
//    each job's median call.
//  7c: faults across namespace hosts, from the fault to the first surviving rank's named error
//    (bench/fault_child.ts): a rank killed, a host's link taken down mid-collective, a rank
//    whose own arguments fail.
// Skips without Open MPI (7b, 7c: without network namespaces, e.g. not root).
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const NETNS = join(ROOT, "scripts", "netns_hosts.sh");

export type Transport = "shm" | "tcp";

export interface AllreduceBench {
  skipped?: string;
  transport: Transport;
  ranks: number;
  bytes: number;
  iters: number;
  tsptoMs: number[]; // per job: the median of its timed calls (rank 0)
  peerMs: number[];
}

const cleanEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("OMPI_") || k.startsWith("PMIX_")) delete env[k];
  return env;
};

/** Why network-namespace hosts cannot be made here, or null. */
export function netnsProblem(): string | null {
  const r = spawnSync(NETNS, ["check"], { encoding: "utf8" });
  return r.status === 0 ? null : `${r.stdout}${r.stderr}`.trim() || `netns_hosts.sh check exited ${r.status}`;
}

/** One mpirun job (over namespace hosts for tcp); its last stdout line is JSON. */
function job(transport: Transport, ranks: number, cmd: string[], env: NodeJS.ProcessEnv): { medianMs: number } {
  const r = transport === "shm"
    ? spawnSync("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", String(ranks), ...cmd], { cwd: ROOT, encoding: "utf8", env, timeout: 600_000 })
    : spawnSync(NETNS, ["mpirun", "-p", `tmh${process.pid}_bench`, "-n", "2", "--slots", String(ranks / 2), "--", "-np", String(ranks), ...cmd], { cwd: ROOT, encoding: "utf8", env, timeout: 600_000 });
  if (r.status !== 0) throw new Error(`mpirun ${cmd.join(" ")} (${transport}) failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  const line = r.stdout.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`mpirun ${cmd.join(" ")} printed no result:\n${r.stdout}`);
  return JSON.parse(line) as { medianMs: number };
}

export function allreduceBench(work: string, rounds: number, log: (s: string) => void, opts: { transport?: Transport; ranks?: number; bytes?: number; iters?: number } = {}): AllreduceBench {
  const { transport = "shm", ranks = 4, bytes = 64 * 2 ** 20, iters = 15 } = opts;
  const out: AllreduceBench = { transport, ranks, bytes, iters, tsptoMs: [], peerMs: [] };
  const none = (why: string): AllreduceBench => ({ ...out, skipped: why });
  if (spawnSync("mpirun", ["--version"]).status !== 0) return none("no mpirun (apt-get install openmpi-bin libopenmpi-dev)");
  if (transport === "tcp") {
    const why = netnsProblem();
    if (why) return none(`network namespaces cannot be made here (${why})`);
  }
  const exe = join(work, "allreduce_mpi");
  const cc = spawnSync("mpicc", ["-O2", "-o", exe, join(ROOT, "bench", "allreduce_mpi.c")], { encoding: "utf8" });
  if (cc.status !== 0) return none(`mpicc failed or is missing (libopenmpi-dev): ${cc.stderr ?? cc.error}`);
  const env = cleanEnv();
  const args = [String(bytes), String(iters)];
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first, so a drift of the machine's load favours neither.
    const first = r % 2 === 0 ? "peer" : "tspto";
    const runPeer = () => job(transport, ranks, [exe, ...args], env).medianMs;
    const runTspto = () => job(transport, ranks, ["node", "--import", "tsx", join(ROOT, "bench", "allreduce_child.ts"), ...args], env).medianMs;
    const [a, b] = first === "peer" ? [runPeer(), runTspto()] : [runTspto(), runPeer()];
    const [peer, ts] = first === "peer" ? [a, b] : [b, a];
    out.peerMs.push(peer);
    out.tsptoMs.push(ts);
    log(`  ${transport} round ${r + 1}/${rounds}: tspto ${ts.toFixed(1)} ms, MPI_Allreduce ${peer.toFixed(1)} ms`);
  }
  return out;
}

export interface FaultBench {
  skipped?: string;
  /** Milliseconds from the fault to the first surviving rank's named error (one per repeat). */
  ms: { kill: number[]; link: number[]; fail: number[] };
  codes: string[];
}

/** Runs bench/fault_child.ts over 3 namespace hosts; resolves with the fault-to-first-named-error time and the error seen. */
function faultJob(mode: "kill" | "link" | "fail", prefix: string): Promise<{ ms: number; code: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(NETNS, ["mpirun", "-p", prefix, "-n", "3", "--slots", "1", ...(mode === "link" ? ["--heal"] : []), "--",
      "-np", "3", "node", "--import", "tsx", join(ROOT, "bench", "fault_child.ts"), mode], { cwd: ROOT, env: { ...cleanEnv(), TSPTO_MPI_TIMEOUT: "60" }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", faultAt = 0, named = 0, code = "";
    const take = (b: Buffer) => {
      out += b.toString();
      if (mode === "link" && !faultAt && (out.match(/: looping/g)?.length ?? 0) === 3) {
        spawnSync(NETNS, ["link", prefix, "2", "down"]);
        faultAt = Date.now();
      }
      const f = /fault at (\d+)/.exec(out);
      if (f) faultAt = Number(f[1]);
      const n = /rank [0-9]: named at (\d+) (\S+)/.exec(out);
      if (n && !named) {
        named = Number(n[1]);
        code = n[2];
      }
    };
    p.stdout.on("data", take);
    p.stderr.on("data", take);
    const timer = setTimeout(() => p.kill("SIGTERM"), 150_000);
    p.on("error", reject);
    p.on("close", () => {
      clearTimeout(timer);
      if (!faultAt || !named) reject(new Error(`fault bench ${mode}: no named error after the fault:\n${out}`));
      else resolve({ ms: named - faultAt, code });
    });
  });
}

export async function faultBench(log: (s: string) => void, repeats = 3): Promise<FaultBench> {
  const res: FaultBench = { ms: { kill: [], link: [], fail: [] }, codes: [] };
  if (spawnSync("mpirun", ["--version"]).status !== 0) return { ...res, skipped: "no mpirun" };
  const why = netnsProblem();
  if (why) return { ...res, skipped: `network namespaces cannot be made here (${why})` };
  for (let i = 0; i < repeats; i++) {
    for (const mode of ["kill", "link", "fail"] as const) {
      const r = await faultJob(mode, `tmh${process.pid}_f${mode}${i}`);
      res.ms[mode].push(r.ms);
      res.codes.push(`${mode}: ${r.code}`);
      log(`  fault ${mode} ${i + 1}/${repeats}: named error (${r.code}) ${r.ms} ms after the fault`);
    }
  }
  return res;
}

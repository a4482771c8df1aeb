// Helpers of the tests that start MPI jobs (mpi.test.ts, multihost.test.ts): running a command
// without blocking vitest's event loop, the environment of a child, and the checks that
// collectives_child.ts prints.
import { expect } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const root = fileURLToPath(new URL("../../", import.meta.url));
export const child = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));
export const hasMpirun = spawnSync("mpirun", ["--version"], { encoding: "utf8" }).status === 0;

/** Environment of a child: the test runner's, without variables of an enclosing MPI job. */
export const childEnv = (extra: Record<string, string> = {}) => {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  for (const k of Object.keys(env)) if (k.startsWith("OMPI_") || k.startsWith("PMIX_")) delete env[k];
  return { ...env, ...extra };
};

export interface JobResult {
  status: number | null;
  signal: string | null;
  out: string;
}

/**
 * Runs a command to its end without blocking the test worker's event loop (spawnSync would
 * starve vitest's own messages for as long as the job runs); a hang is ended by the timeout
 * (`killWith`, then SIGKILL 10 s later: then `signal` is set). `onOutput` sees the output as
 * it arrives (with the time it arrived).
 */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number,
  opts: { killWith?: NodeJS.Signals; onOutput?: (chunk: string, atMs: number) => void } = {}): Promise<JobResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const take = (b: Buffer) => {
      const s = b.toString();
      out += s;
      opts.onOutput?.(s, Date.now());
    };
    p.stdout.on("data", take);
    p.stderr.on("data", take);
    let hard: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      p.kill(opts.killWith ?? "SIGKILL");
      hard = setTimeout(() => p.kill("SIGKILL"), 10_000);
    }, timeoutMs);
    p.on("error", reject);
    let done = false, linger: NodeJS.Timeout | undefined;
    const finish = (status: number | null, signal: string | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(hard);
      clearTimeout(linger);
      resolve({ status, signal, out });
    };
    // 'close' waits for every holder of the pipes: a grandchild left alive (a daemon on a host
    // cut off) would keep the test waiting past its own timeout; 15 s after the exit, stop reading
    p.on("exit", (status, signal) => {
      linger = setTimeout(() => { p.stdout.destroy(); p.stderr.destroy(); finish(status, signal); }, 15_000);
      linger.unref();
    });
    p.on("close", (status, signal) => finish(status, signal));
  });
}

/** What collectives_child.ts prints per rank when every check passed. */
export const CHECKS = ["allReduce sharded (4 ops x 6 dtypes)", "allReduce DeviceTensor", "broadcast DeviceTensor", "allGather DeviceTensor",
  "reduceScatter DeviceTensor", "allGather sharded axis 1", "reduceScatter sharded axis 1", "scatter/gather", "broadcast sharded",
  "uneven shards: gather, scatter, allGather (axis 0 and 1), elementwise collectives refused", "uneven shards: reduceScatter into uneven chunks (axis 0 and 1, and a DeviceTensor per rank)",
  "allReduce 1 MiB", "barrier", "closed"];

export function expectAllChecks(out: string, ranks: number): void {
  for (let r = 0; r < ranks; r++) for (const c of CHECKS) expect(out, `rank ${r}: ${c}`).toContain(`ok rank=${r} ${c}`);
}

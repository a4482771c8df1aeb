// A build written once, run two ways. A target's build is a generator that yields each child
// process it needs (the C++ compiler, the linker, nvcc) and receives its result: runSteps runs
// them with spawnSync (`target.build`, the synchronous compile), runStepsAsync with spawn, so
// the event loop keeps running while they do (`target.buildAsync`: compileAsync, callAsync on
// a cache miss). Everything between two processes (writing sources, hashing the library) is the
// same code either way.
import { spawn, spawnSync, type SpawnSyncReturns } from "node:child_process";

/** One child process of a build. */
export interface SpawnRequest {
  readonly argv: readonly string[];
  readonly cwd?: string;
  /** Stopped (killSignal, default SIGTERM) after this long: the result's error is ETIMEDOUT, as spawnSync's. */
  readonly timeoutMs: number;
  readonly killSignal?: NodeJS.Signals;
  /** Written to its standard input (then closed); absent: no input. */
  readonly input?: string;
}
/** What a step gets back: the fields of spawnSync's result the builds read. */
export type SpawnResult = Pick<SpawnSyncReturns<string>, "status" | "signal" | "error" | "stdout" | "stderr">;
/** A build: yields the processes to run, returns its result. */
export type Steps<T> = Generator<SpawnRequest, T, SpawnResult>;

const MAX_OUTPUT = 64 << 20;

/** Runs `steps` to the end, each process with spawnSync. */
export function runSteps<T>(steps: Steps<T>): T {
  let r = steps.next();
  while (!r.done) {
    const q = r.value;
    let res: SpawnResult;
    try {
      res = spawnSync(q.argv[0], q.argv.slice(1), { cwd: q.cwd, encoding: "utf8", timeout: q.timeoutMs, killSignal: q.killSignal, maxBuffer: MAX_OUTPUT,
        ...(q.input !== undefined ? { input: q.input } : {}) });
    } catch (e) {
      res = { status: null, signal: null, error: e as Error, stdout: "", stderr: "" };
    }
    r = steps.next(res);
  }
  return r.value;
}

/** Process groups of the builds running now: stopped if this process exits first. */
const running = new Set<number>();
let exitHook = false;
const stopGroup = (pid: number, signal: NodeJS.Signals) => {
  try { process.kill(-pid, signal); } catch { try { process.kill(pid, signal); } catch { /* gone */ } }
};

/**
 * One process with spawn: resolves (never rejects) with what spawnSync would have returned. It
 * runs in a process group of its own, so the time limit stops what it started too (g++'s
 * cc1plus and as), and so does this process's exit.
 */
export function spawnAsync(q: SpawnRequest): Promise<SpawnResult> {
  return new Promise((done) => {
    let out = "", err = "", timedOut = false, settled = false;
    let error: Error | undefined;
    const finish = (status: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      if (timedOut) error = Object.assign(new Error(`spawn ${q.argv[0]} ETIMEDOUT`), { code: "ETIMEDOUT" });
      done({ status, signal, error, stdout: out, stderr: err });
    };
    let child;
    try {
      child = spawn(q.argv[0], q.argv.slice(1), { cwd: q.cwd, stdio: [q.input !== undefined ? "pipe" : "ignore", "pipe", "pipe"], detached: true });
    } catch (e) {
      done({ status: null, signal: null, error: e as Error, stdout: "", stderr: "" });
      return;
    }
    const pid = child.pid;
    if (pid !== undefined) {
      running.add(pid);
      if (!exitHook) { exitHook = true; process.on("exit", () => { for (const p of running) stopGroup(p, "SIGKILL"); }); }
    }
    const timer = setTimeout(() => { timedOut = true; if (pid !== undefined) stopGroup(pid, q.killSignal ?? "SIGTERM"); }, q.timeoutMs);
    child.stdout!.setEncoding("utf8").on("data", (d: string) => { if (out.length < MAX_OUTPUT) out += d; });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => { if (err.length < MAX_OUTPUT) err += d; });
    if (q.input !== undefined && child.stdin) {
      child.stdin.on("error", () => { /* it exited before reading it all (EPIPE): its status says why */ });
      child.stdin.end(q.input);
    }
    child.on("error", (e) => { error = e; finish(null, null); });
    child.on("close", (status, signal) => finish(status, signal));
  });
}

/** Runs `steps` to the end, each process with spawn (the event loop runs meanwhile). */
export async function runStepsAsync<T>(steps: Steps<T>): Promise<T> {
  let r = steps.next();
  while (!r.done) r = steps.next(await spawnAsync(r.value));
  return r.value;
}

// A child process run to its end without blocking the test worker's event loop (a spawnSync of a
// compile or a whole application starves vitest's worker messages and trips the stall watchdog).
import { spawn } from "node:child_process";

export interface ChildResult { status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** Runs `cmd args` (stdin: `input`, else closed) and resolves with its status and output; stopped with SIGKILL after `timeout` ms. */
export function runChild(cmd: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number; input?: string } = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (opts.input !== undefined) { p.stdin!.on("error", () => { /* it exited first: its status says why */ }); p.stdin!.end(opts.input); }
    let stdout = "", stderr = "";
    p.stdout!.setEncoding("utf8").on("data", (d: string) => { stdout += d; });
    p.stderr!.setEncoding("utf8").on("data", (d: string) => { stderr += d; });
    const timer = opts.timeout ? setTimeout(() => p.kill("SIGKILL"), opts.timeout) : undefined;
    p.on("error", (e) => { clearTimeout(timer); reject(e); });
    p.on("close", (status, signal) => { clearTimeout(timer); resolve({ status, signal, stdout, stderr }); });
  });
}

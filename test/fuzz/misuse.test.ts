// The API-misuse fuzzer in CI: a bounded seeded sequence in a child process (a crash or hang
// fails the test). `npm run fuzz` runs a long one.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { MisuseReport } from "./misuse.js";

const MAIN = fileURLToPath(new URL("./misuse_main.ts", import.meta.url));
const CALLS = Number(process.env.TSPTO_FUZZ_MISUSE_CALLS ?? 6000);

/**
 * Runs the fuzzer in a child process, asynchronously: a synchronous spawn would block this
 * test worker's event loop for the whole run, and vitest's worker RPC times out after 60 s.
 */
export function runChild(seed: number, calls: number, timeoutMs: number): Promise<{ report: MisuseReport | null; status: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN, String(seed), String(calls)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => { stdout += d; });
    child.stderr.setEncoding("utf8").on("data", (d: string) => { stderr = (stderr + d).slice(-8000); });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      const line = stdout.split("\n").find((l) => l.startsWith("MISUSE_REPORT "));
      resolve({ report: line ? (JSON.parse(line.slice("MISUSE_REPORT ".length)) as MisuseReport) : null, status, signal, stderr: stderr.slice(-4000) });
    });
  });
}

describe("API-misuse fuzzer", () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed}: ${CALLS} calls, every error a TsptoError, valid calls right, no crash/hang/leak`, async () => {
      const { report, status, signal, stderr } = await runChild(seed, CALLS, 240_000);
      expect({ status, signal, stderr: report ? "" : stderr }).toEqual({ status: 0, signal: null, stderr: "" });
      expect(report!.findings).toEqual([]);
      expect(report!.calls).toBeGreaterThanOrEqual(CALLS);
      expect(report!.ok).toBeGreaterThan(CALLS / 5);
      const errors = Object.values(report!.errors).reduce((a, b) => a + b, 0);
      expect(errors).toBeGreaterThan(CALLS / 10);
      for (const code of ["E_ARG", "E_SHAPE", "E_CONFIG", "E_HOST_VIEW", "E_SCALAR"]) expect(report!.errors[code] ?? 0).toBeGreaterThan(0);
      expect(report!.asyncLaunches).toBeGreaterThan(0);
    }, 300_000);
  }
});

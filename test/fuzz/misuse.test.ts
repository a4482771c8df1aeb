// The API-misuse fuzzer in CI: a bounded seeded sequence in a child process (a crash or hang
// fails the test). `npm run fuzz` runs a long one.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { MisuseReport } from "./misuse.js";

const MAIN = fileURLToPath(new URL("./misuse_main.ts", import.meta.url));
const CALLS = Number(process.env.TSPTO_FUZZ_MISUSE_CALLS ?? 6000);

export function runChild(seed: number, calls: number, timeoutMs: number): { report: MisuseReport | null; status: number | null; signal: string | null; stderr: string } {
  const r = spawnSync(process.execPath, ["--import", "tsx", MAIN, String(seed), String(calls)], { encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 << 20 });
  const line = (r.stdout ?? "").split("\n").find((l) => l.startsWith("MISUSE_REPORT "));
  return { report: line ? (JSON.parse(line.slice("MISUSE_REPORT ".length)) as MisuseReport) : null, status: r.status, signal: r.signal, stderr: (r.stderr ?? "").slice(-4000) };
}

describe("API-misuse fuzzer", () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed}: ${CALLS} calls, every error a TsptoError, valid calls right, no crash/hang/leak`, () => {
      const { report, status, signal, stderr } = runChild(seed, CALLS, 240_000);
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

// Test-wide self-checks: verify the IR between passes, and round-trip every program the
// tests build (and its form after every pass) through asText() -> parse -> structural equality.
process.env.TSPTO_VERIFY = "1";
process.env.TSPTO_ROUNDTRIP = "1";
// The jit's disk cache: a per-user directory under the OS temp dir, shared by test runs
// (entries are keyed by the compiler's own source fingerprint), never the user's ~/.cache.
import { tmpdir } from "node:os";
import { join } from "node:path";
process.env.TSPTO_CACHE_DIR ??= join(tmpdir(), `tspto-test-cache-${process.getuid?.() ?? "user"}`);

// vitest's worker RPC ("onTaskUpdate") times out after 60 s, and a worker answers it only when
// its event loop turns. vitest 3 runs a file's synchronous tests back to back in microtasks,
// never turning the loop: a file of synchronous tests (each pl.jit call compiles with g++
// synchronously) held a worker for its whole 88 s and failed a CI run with an unhandled
// "Timeout calling onTaskUpdate" that named no test. Each test starts on a fresh turn of the
// event loop (setImmediate: after the pending I/O, the RPC answers included).
import { beforeEach, expect } from "vitest";
beforeEach(() => new Promise<void>((resolve) => setImmediate(resolve)));
// A stall watchdog for what is left: one test that keeps the loop busy over 10 s is named
// (a heartbeat every second notices the gap; such a step belongs in a child process).
// TSPTO_TEST_STALL_MS lowers the limit to find the next offenders on a fast machine.
const g = globalThis as { __tsptoStallWatch?: boolean };
if (!g.__tsptoStallWatch) {
  g.__tsptoStallWatch = true;
  const STALL_MS = Number(process.env.TSPTO_TEST_STALL_MS) || 10_000;
  let last = Date.now();
  setInterval(() => {
    const now = Date.now();
    const gap = now - last;
    last = now;
    if (gap > STALL_MS) {
      const s = expect.getState();
      process.stderr.write(`[stall] the event loop was blocked ${(gap / 1000).toFixed(1)} s in ${s.testPath ?? "?"} > ${s.currentTestName ?? "(hook or collection)"}\n`);
    }
  }, 1000).unref();
}

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
// A stall watchdog for what is left: a loop kept busy over 10 s is reported with the test that
// did it (a heartbeat every second notices the gap; such a step belongs in a child process, or
// off the loop with compileAsync). The heartbeat fires only when the loop turns, which is at the
// next test's start (below): the culprit is the test that started before that one, so the tests
// started since the last heartbeat are recorded and all but the newest named.
// TSPTO_TEST_STALL_MS lowers the limit to find the next offenders on a fast machine.
const g = globalThis as { __tsptoStallWatch?: { started: string[] } };
const watch = (g.__tsptoStallWatch ??= (() => {
  const w = { started: [] as string[] };
  const STALL_MS = Number(process.env.TSPTO_TEST_STALL_MS) || 10_000;
  let last = Date.now();
  setInterval(() => {
    const now = Date.now();
    const gap = now - last;
    last = now;
    if (gap > STALL_MS) {
      const s = expect.getState();
      const culprits = w.started.length > 1 ? w.started.slice(0, -1) : w.started.length ? w.started : [`${s.testPath ?? "?"} > (hook or collection)`];
      process.stderr.write(`[stall] the event loop was blocked ${(gap / 1000).toFixed(1)} s by ${culprits.join(", or ")}\n`);
    }
    w.started = w.started.slice(-1);
  }, 1000).unref();
  return w;
})());
beforeEach(() => {
  const s = expect.getState();
  watch.started.push(`${s.testPath ?? "?"} > ${s.currentTestName ?? "?"}`);
  return new Promise<void>((resolve) => setImmediate(resolve));
});

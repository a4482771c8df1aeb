// The scheduler's pool and ring: a task that can never fit the ring fails with a message that
// names the knob to raise; many small tasks run on all core threads; a full ring makes the
// submitter wait (no error). No timing assertions.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNative, type NativeDevice } from "../../src/targets/native.js";
import { coreThreadCount } from "../../src/runtime/worker.js";

const INCLUDE_DIR = fileURLToPath(new URL("../../native/include", import.meta.url));
const LIB = `
#include "tspto_abi.h"
#include <atomic>
static std::atomic<long> g_count{0};
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
extern "C" void k_empty(const int64_t*) {}
extern "C" void k_count(const int64_t* args) { (void)args; g_count.fetch_add(1); }
// args: [mode, n, buf]
//   mode 0: n empty tasks without accesses
//   mode 1: one task with n accesses of the same buffer (needs 24 * n bytes of ring heap)
//   mode 2: n tasks each writing the same 4 bytes (a chain: every one waits for the last)
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t mode = args[0], n = args[1], buf = args[2];
  if (mode == 0) {
    for (int64_t i = 0; i < n; ++i) if (rt->submit(rt->ctx, k_empty, "k_empty", 0, nullptr, 0, nullptr, 0) != 0) return 1;
  } else if (mode == 1) {
    static TsptoAccess acc[4096];
    for (int64_t i = 0; i < n; ++i) { acc[i].base = buf; acc[i].nbytes = 4; acc[i].mode = TSPTO_ACCESS_READ; acc[i].reserved = 0; }
    if (rt->submit(rt->ctx, k_empty, "k_wide", 7, nullptr, 0, acc, (int32_t)n) != 0) return 1;
  } else {
    TsptoAccess a; a.base = buf; a.nbytes = 4; a.mode = TSPTO_ACCESS_WRITE; a.reserved = 0;
    for (int64_t i = 0; i < n; ++i) if (rt->submit(rt->ctx, k_count, "k_count", 0, nullptr, 0, &a, 1) != 0) return 1;
  }
  return rt->wait_all(rt->ctx);
}
`;

let dir = "";
let lib = "";
const devices: NativeDevice[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tspto-sched-"));
  writeFileSync(join(dir, "lib.cc"), LIB);
  lib = join(dir, "lib.so");
  execFileSync(process.env.CXX ?? "c++", ["-std=c++17", "-O2", "-fPIC", "-shared", "-I", INCLUDE_DIR, "-o", lib, join(dir, "lib.cc")]);
});
afterAll(() => {
  for (const d of devices) d.close();
  rmSync(dir, { recursive: true, force: true });
});

function device(opts: { coreThreads?: number; ringTaskWindow?: number; ringHeap?: number; ringDepPool?: number } = {}): NativeDevice {
  const { Device } = loadNative();
  const d = new Device({
    deviceId: 0, coreThreads: opts.coreThreads ?? 2, schedThreads: 1, scratchBytes: 4096, memoryBytes: 1 << 24,
    ringTaskWindow: opts.ringTaskWindow ?? 1024, ringHeap: opts.ringHeap ?? 1 << 20, ringDepPool: opts.ringDepPool ?? 1024,
  });
  devices.push(d);
  return d;
}
const K = Uint8Array.from([4, 4, 3]);

describe("scheduler", () => {
  it("a task larger than the whole ring heap fails at once, naming RunConfig.ringHeap", () => {
    const d = device({ ringHeap: 1024 });
    const id = d.loadModule(lib);
    const buf = d.alloc(64);
    let err: Error | undefined;
    try { d.launch(id, [1, 100, buf], K); } catch (e) { err = e as Error; }
    expect(err?.message).toMatch(/deadlock: task 'k_wide' needs 2416 bytes of ring heap .* but the whole ring heap is 1024 bytes.*raise RunConfig\.ringHeap/);
    // the device stays usable, and the same task fits a larger heap
    const d2 = device({ ringHeap: 4096 });
    const id2 = d2.loadModule(lib);
    d2.launch(id2, [1, 100, d2.alloc(64)], K);
    d.launch(id, [0, 10, 0], Uint8Array.from([4, 4, 4]));
  });

  it("runs many empty tasks on every core thread; a full ring only makes the submitter wait", () => {
    for (const cores of [1, 2, 4]) {
      const d = device({ coreThreads: cores, ringTaskWindow: 16 });
      const id = d.loadModule(lib);
      const before = d.stats().tasksRun;
      d.launch(id, [0, 20000, 0], Uint8Array.from([4, 4, 4]));
      expect(d.stats().tasksRun - before).toBe(20000);
    }
  });

  it("a chain of conflicting tasks wider than the ring and the dependency pool completes", () => {
    const d = device({ coreThreads: 3, ringTaskWindow: 4, ringDepPool: 4 });
    const id = d.loadModule(lib);
    const before = d.stats().tasksRun;
    d.launch(id, [2, 5000, d.alloc(64)], K);
    expect(d.stats().tasksRun - before).toBe(5000);
  });

  it("core threads default to the machine's parallelism; TSPTO_CORE_THREADS overrides", () => {
    const saved = process.env.TSPTO_CORE_THREADS;
    try {
      process.env.TSPTO_CORE_THREADS = "3";
      expect(coreThreadCount()).toBe(3);
      process.env.TSPTO_CORE_THREADS = "0";
      expect(() => coreThreadCount()).toThrow(/TSPTO_CORE_THREADS must be an integer in \[1, 1024\], got "0"/);
      delete process.env.TSPTO_CORE_THREADS;
      expect(coreThreadCount()).toBeGreaterThanOrEqual(1);
    } finally {
      if (saved === undefined) delete process.env.TSPTO_CORE_THREADS; else process.env.TSPTO_CORE_THREADS = saved;
    }
  });
});

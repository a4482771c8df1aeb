// The scheduler's pool and ring: a task that can never fit the ring fails with a message that
// names the knob to raise; many small tasks run on all core threads; a full ring makes the
// submitter wait (no error); tensor windows (TsptoAccess rank > 0) order tasks only when their
// boxes overlap. No timing assertions.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNative, unpackTrace, type NativeDevice } from "../../src/targets/native.js";
import { coreThreadCount } from "../../src/runtime/worker.js";

const INCLUDE_DIR = fileURLToPath(new URL("../../native/include", import.meta.url));
const LIB = `
#include "tspto_abi.h"
#include <atomic>
#include <chrono>
#include <thread>
static std::atomic<long> g_count{0};
static std::atomic<int> g_release{0};
static long g_cell = 0;  // incremented without atomics by tasks the scheduler must order
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
extern "C" void k_empty(const int64_t*) {}
extern "C" void k_count(const int64_t* args) { (void)args; g_count.fetch_add(1); }
// waits until the orchestration releases it (so that later submissions see it unfinished)
extern "C" void k_hold(const int64_t*) { while (g_release.load() == 0) {} }
// a slow non-atomic increment: lost updates unless the scheduler orders the tasks
extern "C" void k_bump(const int64_t*) {
  const long v = g_cell;
  for (volatile int i = 0; i < 2000; ++i) {}
  g_cell = v + 1;
}
// tracks how many tasks run at once (mode 6)
static std::atomic<int> g_running{0}, g_peak{0};
extern "C" void k_conc(const int64_t*) {
  const int now = ++g_running;
  int p = g_peak.load();
  while (now > p && !g_peak.compare_exchange_weak(p, now)) {}
  for (volatile int i = 0; i < 200000; ++i) {}
  --g_running;
}
// mode 7: two tasks that each wait (up to 1 s) for the other to start: they finish together
// only when the scheduler runs them on two threads at once
static std::atomic<int> g_arrived{0}, g_alone{0};
extern "C" void k_meet(const int64_t*) {
  ++g_arrived;
  const auto t0 = std::chrono::steady_clock::now();
  while (g_arrived.load() < 2) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(1)) { ++g_alone; return; }
  }
}
static TsptoAccess win(int64_t tensor, int32_t mode, int64_t r0, int64_t nr, int64_t c0, int64_t nc) {
  TsptoAccess a = {};
  a.mode = mode; a.rank = 2; a.tensor = tensor; a.elem_bytes = 4;
  a.dims[0] = 64; a.dims[1] = 64;
  a.offsets[0] = r0; a.extents[0] = nr; a.offsets[1] = c0; a.extents[1] = nc;
  return a;
}
// args: [mode, n, buf]
//   mode 0: n empty tasks without accesses
//   mode 1: one task with n accesses of the same buffer (needs 24 * n bytes of ring heap)
//   mode 2: n tasks each writing the same 4 bytes (a chain: every one waits for the last)
//   mode 3: windows of a [64, 64] float tensor at buf: a held task writing columns 0..31,
//           then a reader of rows 0..62 x columns 32..63 (disjoint: no edge), a reader of rows 10..11 x
//           columns 31..32 (overlaps: an edge), a writer of row 63 (disjoint), a reader of the
//           whole tensor as bytes (overlaps everything written before)
//   mode 4: n k_bump tasks on alternating overlapping windows (rows 0..1 / rows 1..2)
//   mode 5: one task with an invalid window (rank n)
//   mode 6: n independent k_conc tasks; then the most that ran at once is written to buf (int32)
//   mode 7: n rounds of two empty tasks then two k_meet tasks, each after a pause; the k_meet
//           tasks that waited for their partner in vain are counted into buf (int32)
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t mode = args[0], n = args[1], buf = args[2];
  if (mode == 0) {
    for (int64_t i = 0; i < n; ++i) if (rt->submit(rt->ctx, k_empty, "k_empty", 0, nullptr, 0, nullptr, 0) != 0) return 1;
  } else if (mode == 1) {
    static TsptoAccess acc[4096];
    for (int64_t i = 0; i < n; ++i) { acc[i].base = buf; acc[i].nbytes = 4; acc[i].mode = TSPTO_ACCESS_READ; acc[i].rank = 0; }
    if (rt->submit(rt->ctx, k_empty, "k_wide", 7, nullptr, 0, acc, (int32_t)n) != 0) return 1;
  } else if (mode == 3) {
    g_release = 0;
    const TsptoAccess w0 = win(buf, TSPTO_ACCESS_WRITE, 0, 64, 0, 32);
    if (rt->submit(rt->ctx, k_hold, "hold", 0, nullptr, 0, &w0, 1) != 0) return 1;
    const TsptoAccess w1 = win(buf, TSPTO_ACCESS_READ, 0, 63, 32, 32);
    if (rt->submit(rt->ctx, k_empty, "right", 1, nullptr, 0, &w1, 1) != 0) return 1;
    const TsptoAccess w2 = win(buf, TSPTO_ACCESS_READ, 10, 2, 31, 2);
    if (rt->submit(rt->ctx, k_empty, "straddle", 2, nullptr, 0, &w2, 1) != 0) return 1;
    const TsptoAccess w3 = win(buf, TSPTO_ACCESS_WRITE, 63, 1, 40, 100);  // clamped to columns 40..63
    if (rt->submit(rt->ctx, k_empty, "lastrow", 3, nullptr, 0, &w3, 1) != 0) return 1;
    TsptoAccess all = {}; all.base = buf; all.nbytes = 64 * 64 * 4; all.mode = TSPTO_ACCESS_READ;
    if (rt->submit(rt->ctx, k_empty, "bytes", 4, nullptr, 0, &all, 1) != 0) return 1;
    g_release = 1;
  } else if (mode == 4) {
    g_cell = 0;
    for (int64_t i = 0; i < n; ++i) {
      const TsptoAccess w = win(buf, TSPTO_ACCESS_READWRITE, i % 2, 2, 5, 3);
      if (rt->submit(rt->ctx, k_bump, "bump", 0, nullptr, 0, &w, 1) != 0) return 1;
    }
    const int rc = rt->wait_all(rt->ctx);
    int32_t* out = (int32_t*)(intptr_t)buf;
    out[0] = (int32_t)g_cell;
    return rc;
  } else if (mode == 5) {
    TsptoAccess w = win(buf, TSPTO_ACCESS_READ, 0, 1, 0, 1);
    w.rank = (int32_t)n;
    if (n == 2) w.elem_bytes = 0;
    if (rt->submit(rt->ctx, k_empty, "badwin", 0, nullptr, 0, &w, 1) != 0) return 1;
  } else if (mode == 6) {
    g_peak = 0;
    for (int64_t i = 0; i < n; ++i) if (rt->submit(rt->ctx, k_conc, "conc", 0, nullptr, 0, nullptr, 0) != 0) return 1;
    const int rc = rt->wait_all(rt->ctx);
    *reinterpret_cast<int32_t*>(buf) = g_peak.load();  // cpu device memory is host memory
    return rc;
  } else if (mode == 7) {
    // n pairs, each after a pause that lets the core threads park (their spin is 50 us)
    g_alone = 0;
    for (int64_t i = 0; i < n; ++i) {
      // first two empty tasks: the orchestration thread often runs both before a woken core
      // gets to the first (the core then parks again)
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      if (rt->submit(rt->ctx, k_empty, "empty", 0, nullptr, 0, nullptr, 0) != 0) return 1;
      if (rt->submit(rt->ctx, k_empty, "empty", 0, nullptr, 0, nullptr, 0) != 0) return 1;
      if (rt->wait_all(rt->ctx) != 0) return 1;
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      g_arrived = 0;
      if (rt->submit(rt->ctx, k_meet, "meet", 0, nullptr, 0, nullptr, 0) != 0) return 1;
      if (rt->submit(rt->ctx, k_meet, "meet", 0, nullptr, 0, nullptr, 0) != 0) return 1;
      if (rt->wait_all(rt->ctx) != 0) return 1;
    }
    *reinterpret_cast<int32_t*>(buf) = g_alone.load();
    return 0;
  } else {
    TsptoAccess a = {}; a.base = buf; a.nbytes = 4; a.mode = TSPTO_ACCESS_WRITE;
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
    // 2 runtime slots + 100 accesses of sizeof(TsptoAccess) = 136 bytes
    expect(err?.message).toMatch(/deadlock: task 'k_wide' needs 13616 bytes of ring heap .* but the whole ring heap is 1024 bytes.*raise RunConfig\.ringHeap/);
    // the device stays usable, and the same task fits a larger heap
    const d2 = device({ ringHeap: 16384 });
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

  it("tensor windows: only tasks whose boxes overlap (or whose byte ranges meet a window's hull) are linked", () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(lib);
    const buf = d.alloc(64 * 64 * 4);
    d.setRecording(1, 0);
    d.launch(id, [3, 0, buf], K);
    const trace = unpackTrace(d.takeTrace()!);
    d.setRecording(0, 0);
    expect(trace.tasks.map((t) => t.kernel)).toEqual(["hold", "right", "straddle", "lastrow", "bytes"]);
    // the held writer of columns 0..31 is unfinished while the others are submitted; whether
    // the row-63 writer (3) is still running when the byte reader (4) comes depends on timing
    const edges = trace.edges.map((e) => `${e.from}>${e.to}`).sort();
    expect(edges).toEqual(["0>2", "0>4"].concat(trace.edges.some((e) => e.from === 3) ? ["3>4"] : []).sort());
    // the runtime clamped the last-row window to the tensor and set its byte hull
    const last = trace.tasks[3].accesses[0];
    expect(last.window).toEqual({ tensor: buf, elemBytes: 4, dims: [64, 64], offsets: [63, 40], extents: [1, 24] });
    expect(last.base).toBe(buf + BigInt((63 * 64 + 40) * 4));
    expect(last.nbytes).toBe(24 * 4);
    // a 2-row window over columns 31..32: the hull spans from (10, 31) to (11, 32)
    const st = trace.tasks[2].accesses[0];
    expect(st.nbytes).toBe((64 + 2) * 4);
  });

  it("two independent tasks after the core threads parked run at the same time (a woken core that loses a task is woken again)", () => {
    // Each pair's tasks wait for each other (up to 1 s): run one after the other on one thread,
    // the first gives up. A core notified but beaten to its task once stayed counted as "being
    // woken", and later launches woke no core: both tasks ran on the orchestration thread.
    // (one core thread: one task at a time, the orchestration thread's included, by design)
    for (const cores of [2, 3]) {
      const d = device({ coreThreads: cores });
      const id = d.loadModule(lib);
      const buf = d.alloc(64);
      d.launch(id, [7, 40, buf], K);
      const out = new Int32Array(1);
      d.d2h(out, buf, 4);
      expect(out[0], `${cores} core threads: pairs that did not run together`).toBe(0);
    }
  });

  it("tasks on overlapping windows of one tensor never run at the same time", () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(lib);
    const buf = d.alloc(64 * 64 * 4);
    d.launch(id, [4, 400, buf], K);
    const out = new Int32Array(1);
    d.d2h(out, buf, 4);
    expect(out[0]).toBe(400);
  });

  it("never more than core_threads tasks at once, the orchestration thread running the last one included", () => {
    for (const cores of [1, 2, 3]) {
      const d = device({ coreThreads: cores });
      const id = d.loadModule(lib);
      const buf = d.alloc(64);
      for (const n of [1, cores, cores + 1, 12]) {
        d.launch(id, [6, n, buf], K);
        const peak = new Int32Array(1);
        d.d2h(peak, buf, 4);
        expect(peak[0], `${n} tasks on ${cores} core threads`).toBeGreaterThanOrEqual(1);
        expect(peak[0], `${n} tasks on ${cores} core threads`).toBeLessThanOrEqual(cores);
      }
    }
  });

  it("the orchestration thread runs the last task itself while it waits (one hand-off less), and a chain without any", () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(lib);
    d.setRecording(1, 0);
    d.launch(id, [6, 2, d.alloc(64)], K);
    const two = unpackTrace(d.takeTrace()!);
    d.launch(id, [6, 5, d.alloc(64)], K);
    const five = unpackTrace(d.takeTrace()!);
    // a chain (each task waits for the one before) needs no core thread: the orchestration
    // thread runs every task. A core thread still polling after the launch before may take
    // some, so one of a few launches must show it.
    const chains: number[][] = [];
    for (let r = 0; r < 5; r++) {
      d.launch(id, [2, 6, d.alloc(64)], K);
      chains.push(unpackTrace(d.takeTrace()!).tasks.map((t) => t.core));
    }
    d.setRecording(0, 0);
    // core 2 (= core_threads) is the orchestration thread's row
    expect(two.tasks[1].core).toBe(2);
    expect(two.tasks[0].core).toBeLessThanOrEqual(2); // a woken core thread, or this thread when it is done first
    // more tasks than core threads: the core threads and the orchestration share them
    expect(five.tasks.every((t) => t.core >= 0 && t.core <= 2)).toBe(true);
    expect(chains.map((c) => c.join(","))).toContain("2,2,2,2,2,2");
  });

  it("an invalid window is rejected with a message", () => {
    const d = device();
    const id = d.loadModule(lib);
    const buf = d.alloc(64 * 64 * 4);
    expect(() => d.launch(id, [5, 7, buf], K)).toThrow(/access 0 of task 'badwin' has invalid window \(rank 7, element size 4; rank must be 0\.\.4/);
    expect(() => d.launch(id, [5, 2, buf], K)).toThrow(/has invalid window \(rank 2, element size 0; .*a window needs a positive element size\)/);
    expect(() => d.launch(id, [5, -1, buf], K)).toThrow(/invalid window \(rank -1/);
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

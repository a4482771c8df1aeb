// Tests of the native runtime addon (native/), used directly through src/runtime/native.ts:
// memory arena, copies, module loading, launches (sync and async) of small program
// libraries compiled here with the system C++ compiler, the scheduler with several core
// threads, and the device lifecycle (process exit without close(), worker_threads).
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ArgKind,
  loadNative,
  type DeviceOptions,
  type NativeAddon,
  type NativeDevice,
} from "../../src/targets/native.js";

const execFileAsync = promisify(execFile);
const INCLUDE_DIR = fileURLToPath(new URL("../../native/include", import.meta.url));
const ADDON_PATH = fileURLToPath(
  new URL("../../native/build/Release/tspto_native.node", import.meta.url),
);
const CXX = process.env.CXX ?? "c++";

// ----------------------------------------------------------------------------------------
// Program libraries (C++), written against native/include/tspto_abi.h like generated code:
// the entry gets one slot per parameter and submits kernel tasks with their accesses; each
// kernel finds [scratch address, runtime api] after its own slots.

const PRELUDE = `
#include "tspto_abi.h"
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#define RT(args, nargs) (reinterpret_cast<const TsptoRuntimeApi*>((args)[(nargs) + 1]))
#define SCRATCH(args, nargs) ((args)[(nargs)])
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
static inline TsptoAccess acc(int64_t base, int64_t nbytes, int32_t mode) {
  TsptoAccess a = {}; a.base = base; a.nbytes = nbytes; a.mode = mode; return a;
}
static void spin_ms(int ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {}
}
`;

/**
 * Entry (a, b, out: float32[rows, cols], rows, cols, chunkRows: int, alpha: float,
 * negate: bool): out = (a + alpha * b) * (negate ? -1 : 1), one k_add task per row chunk.
 * The kernel stages its result tile in the core's scratch arena.
 */
const ADD_LIB =
  PRELUDE +
  `
extern "C" void k_add(const int64_t* args) {
  const float* a = reinterpret_cast<const float*>(args[0]);
  const float* b = reinterpret_cast<const float*>(args[1]);
  float* out = reinterpret_cast<float*>(args[2]);
  const int64_t row0 = args[3], nrows = args[4], cols = args[5];
  double alpha; std::memcpy(&alpha, &args[6], sizeof alpha);
  const bool negate = args[7] != 0;
  const TsptoRuntimeApi* rt = RT(args, 8);
  float* tile = reinterpret_cast<float*>(SCRATCH(args, 8));
  const int64_t n = nrows * cols;
  if (SCRATCH(args, 8) % 64 != 0) { rt->fail(rt->ctx, "scratch arena is not 64-byte aligned"); return; }
  if (n * 4 > rt->scratch_bytes) { rt->fail(rt->ctx, "tile does not fit the scratch arena"); return; }
  const int64_t off = row0 * cols;
  for (int64_t i = 0; i < n; ++i) tile[i] = a[off + i] + static_cast<float>(alpha) * b[off + i];
  for (int64_t i = 0; i < n; ++i) out[off + i] = negate ? -tile[i] : tile[i];
}
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t a = args[0], b = args[1], out = args[2];
  const int64_t rows = args[3], cols = args[4], chunk = args[5];
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t nr = rows - r0 < chunk ? rows - r0 : chunk;
    const int64_t slots[8] = {a, b, out, r0, nr, cols, args[6], args[7]};
    const int64_t off = r0 * cols * 4, len = nr * cols * 4;
    const TsptoAccess accesses[3] = {acc(a + off, len, TSPTO_ACCESS_READ),
                                     acc(b + off, len, TSPTO_ACCESS_READ),
                                     acc(out + off, len, TSPTO_ACCESS_WRITE)};
    if (rt->submit(rt->ctx, k_add, "k_add", 0, slots, 8, accesses, 3) != 0) return 1;
  }
  return rt->wait_all(rt->ctx);
}
`;

/**
 * Entry (x: float32[n], n, failAt: int): one k_check task per element adds 1; the task at
 * index failAt calls rt->fail. failAt = -2: the entry returns 5 without a message;
 * failAt = -3: the orchestration itself calls rt->fail.
 */
const FAIL_LIB =
  PRELUDE +
  `
extern "C" void k_check(const int64_t* args) {
  float* x = reinterpret_cast<float*>(args[0]);
  const int64_t i = args[1], fail_at = args[2];
  const TsptoRuntimeApi* rt = RT(args, 3);
  if (i == fail_at) { rt->fail(rt->ctx, "dynamic window out of bounds: row 7 + 4 > 8"); return; }
  x[i] += 1.0f;
}
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t x = args[0], n = args[1], fail_at = args[2];
  if (fail_at == -2) return 5;
  if (fail_at == -3) { rt->fail(rt->ctx, "orchestration gave up"); return 1; }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slots[3] = {x, i, fail_at};
    const TsptoAccess a = acc(x + i * 4, 4, TSPTO_ACCESS_READWRITE);
    if (rt->submit(rt->ctx, k_check, "k_check", 3, slots, 3, &a, 1) != 0) return 1;
  }
  return rt->wait_all(rt->ctx);
}
`;

/**
 * Entry (buf: uint32[n], aux: uint32[...], n, steps, mode, chunk, timeoutMs):
 *  mode 0  chained read-modify-write: for each step s and chunk c, buf[c] = buf[c] * 3 + s
 *          (order-sensitive; chunks are independent of each other); the task of chunk 0
 *          first spins timeoutMs microseconds
 *  mode 1  rendezvous: two independent tasks that each wait (up to timeoutMs) until both
 *          have started; fails "tasks did not run concurrently" otherwise. aux[0] is the
 *          counter (not declared as an access on purpose); the tasks write buf[0] / buf[1].
 *  mode 2  write-after-read: a slow task copies buf -> aux, then a task overwrites buf with
 *          999; the copy must see the original values.
 *  mode 3  orchestration buffer: tmp = rt->alloc; copy buf -> tmp; buf = tmp * 3.
 *          steps == 1: rt->free(tmp) explicitly; otherwise left to the runtime.
 *  mode 4  buf[i] += 1 (one task).
 *  mode 7  tmp = rt->alloc (read before written); buf = tmp + 1; then tmp = 99.
 */
const SCHED_LIB =
  PRELUDE +
  `
extern "C" void k_step(const int64_t* args) {
  uint32_t* buf = reinterpret_cast<uint32_t*>(args[0]);
  const int64_t lo = args[1], hi = args[2]; const uint32_t s = static_cast<uint32_t>(args[3]);
  // The first chunk is slow, so a missing dependency lets its next step overtake it.
  if (lo == 0 && args[4] > 0) {
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(args[4]);
    while (std::chrono::steady_clock::now() < until) {}
  }
  for (int64_t i = lo; i < hi; ++i) buf[i] = buf[i] * 3u + s;
}
extern "C" void k_meet(const int64_t* args) {
  uint32_t* buf = reinterpret_cast<uint32_t*>(args[0]);
  uint32_t* counter = reinterpret_cast<uint32_t*>(args[1]);
  const int64_t idx = args[2], timeout_ms = args[3];
  const TsptoRuntimeApi* rt = RT(args, 4);
  __atomic_fetch_add(counter, 1u, __ATOMIC_SEQ_CST);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < 2u) {
    if (std::chrono::steady_clock::now() > until) {
      rt->fail(rt->ctx, "tasks did not run concurrently");
      return;
    }
  }
  buf[idx] = 1u;
}
extern "C" void k_copy_slow(const int64_t* args) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(args[0]);
  uint32_t* dst = reinterpret_cast<uint32_t*>(args[1]);
  spin_ms(static_cast<int>(args[3]));
  for (int64_t i = 0; i < args[2]; ++i) dst[i] = src[i];
}
extern "C" void k_fill(const int64_t* args) {
  uint32_t* dst = reinterpret_cast<uint32_t*>(args[0]);
  for (int64_t i = 0; i < args[1]; ++i) dst[i] = static_cast<uint32_t>(args[2]);
}
extern "C" void k_scale3(const int64_t* args) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(args[0]);
  uint32_t* dst = reinterpret_cast<uint32_t*>(args[1]);
  for (int64_t i = 0; i < args[2]; ++i) dst[i] = src[i] * 3u;
}
extern "C" void k_inc(const int64_t* args) {
  uint32_t* buf = reinterpret_cast<uint32_t*>(args[0]);
  for (int64_t i = 0; i < args[1]; ++i) buf[i] += 1u;
}
#define SUBMIT(fn, slots, n, accs, na) \\
  if (rt->submit(rt->ctx, fn, #fn, 0, slots, n, accs, na) != 0) return 1
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t buf = args[0], aux = args[1], n = args[2], steps = args[3], mode = args[4];
  const int64_t chunk = args[5], timeout_ms = args[6];
  if (mode == 0) {
    for (int64_t s = 0; s < steps; ++s) {
      for (int64_t lo = 0; lo < n; lo += chunk) {
        const int64_t hi = lo + chunk < n ? lo + chunk : n;
        const int64_t slots[5] = {buf, lo, hi, s, timeout_ms};
        const TsptoAccess a = acc(buf + lo * 4, (hi - lo) * 4, TSPTO_ACCESS_READWRITE);
        SUBMIT(k_step, slots, 5, &a, 1);
      }
    }
  } else if (mode == 1) {
    for (int64_t idx = 0; idx < 2; ++idx) {
      const int64_t slots[4] = {buf, aux, idx, timeout_ms};
      const TsptoAccess a = acc(buf + idx * 4, 4, TSPTO_ACCESS_WRITE);
      SUBMIT(k_meet, slots, 4, &a, 1);
    }
  } else if (mode == 2) {
    const int64_t copy[4] = {buf, aux, n, 20};
    const TsptoAccess ca[2] = {acc(buf, n * 4, TSPTO_ACCESS_READ), acc(aux, n * 4, TSPTO_ACCESS_WRITE)};
    SUBMIT(k_copy_slow, copy, 4, ca, 2);
    const int64_t fill[3] = {buf, n, 999};
    const TsptoAccess fa = acc(buf, n * 4, TSPTO_ACCESS_WRITE);
    SUBMIT(k_fill, fill, 3, &fa, 1);
  } else if (mode == 3) {
    const int64_t tmp = rt->alloc(rt->ctx, n * 4);
    if (tmp == 0) return 1;
    const int64_t copy[4] = {buf, tmp, n, 0};
    const TsptoAccess ca[2] = {acc(buf, n * 4, TSPTO_ACCESS_READ), acc(tmp, n * 4, TSPTO_ACCESS_WRITE)};
    SUBMIT(k_copy_slow, copy, 4, ca, 2);
    const int64_t scale[3] = {tmp, buf, n};
    const TsptoAccess sa[2] = {acc(tmp, n * 4, TSPTO_ACCESS_READ), acc(buf, n * 4, TSPTO_ACCESS_WRITE)};
    SUBMIT(k_scale3, scale, 3, sa, 2);
    if (steps == 1) {
      if (rt->wait_all(rt->ctx) != 0) return 1;
      rt->free(rt->ctx, tmp);
    }
  } else if (mode == 4) {
    const int64_t slots[2] = {buf, n};
    const TsptoAccess a = acc(buf, n * 4, TSPTO_ACCESS_READWRITE);
    SUBMIT(k_inc, slots, 2, &a, 1);
  } else if (mode == 7) {
    const int64_t tmp = rt->alloc(rt->ctx, n * 4);
    if (tmp == 0) return 1;
    const int64_t copy[4] = {tmp, buf, n, 0};
    const TsptoAccess ca[2] = {acc(tmp, n * 4, TSPTO_ACCESS_READ), acc(buf, n * 4, TSPTO_ACCESS_WRITE)};
    SUBMIT(k_copy_slow, copy, 4, ca, 2);
    const int64_t inc[2] = {buf, n};
    const TsptoAccess ia = acc(buf, n * 4, TSPTO_ACCESS_READWRITE);
    SUBMIT(k_inc, inc, 2, &ia, 1);
    const int64_t fill[3] = {tmp, n, 99};
    const TsptoAccess fa = acc(tmp, n * 4, TSPTO_ACCESS_WRITE);
    SUBMIT(k_fill, fill, 3, &fa, 1);
  } else {
    rt->fail(rt->ctx, "unknown mode");
    return 1;
  }
  return rt->wait_all(rt->ctx);
}
`;

/** A library built for another ABI version. */
const BAD_ABI_LIB = `
#include "tspto_abi.h"
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION + 98; }
extern "C" int tspto_entry(const TsptoRuntimeApi*, const int64_t*) { return 0; }
`;

/** A shared library that is not a tspto program (no ABI symbols). */
const NOT_A_PROGRAM_LIB = `
extern "C" int something_else(void) { return 1; }
`;

// ----------------------------------------------------------------------------------------
// Helpers

/** Deterministic PRNG (mulberry32) so failures reproduce. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomFloats(n: number, seed: number): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = r() * 200 - 100;
  return out;
}

function randomU32(n: number, seed: number): Uint32Array {
  const r = rng(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 4294967296) >>> 0;
  return out;
}

const K = ArgKind;
const kinds = (...k: number[]): Uint8Array => Uint8Array.from(k);

function options(over: Partial<DeviceOptions> = {}): DeviceOptions {
  return {
    deviceId: 0,
    coreThreads: 1,
    schedThreads: 1,
    scratchBytes: 1 << 20,
    memoryBytes: 8 * 1024 ** 3,
    ringTaskWindow: 64,
    ringHeap: 1 << 20,
    ringDepPool: 1 << 16,
    ...over,
  };
}

let tempDir = "";
const libs: Record<string, string> = {};

async function buildLib(name: string, source: string): Promise<void> {
  const cc = join(tempDir, `${name}.cc`);
  const so = join(tempDir, `${name}.so`);
  writeFileSync(cc, source);
  await execFileAsync(CXX, ["-O2", "-shared", "-fPIC", "-std=c++17", "-I", INCLUDE_DIR, "-o", so, cc]);
  libs[name] = so;
}

let addon: NativeAddon;
const openDevices: NativeDevice[] = [];
function device(over: Partial<DeviceOptions> = {}): NativeDevice {
  const d = new addon.Device(options(over));
  openDevices.push(d);
  return d;
}

beforeAll(async () => {
  addon = loadNative();
  tempDir = mkdtempSync(join(tmpdir(), "tspto-native-test-"));
  await Promise.all([
    buildLib("add", ADD_LIB),
    buildLib("fail", FAIL_LIB),
    buildLib("sched", SCHED_LIB),
    buildLib("badabi", BAD_ABI_LIB),
    buildLib("notprogram", NOT_A_PROGRAM_LIB),
  ]);
}, 120_000);

afterAll(() => {
  for (const d of openDevices) d.close();
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
});

/** JS reference of ADD_LIB. */
function addRef(a: Float32Array, b: Float32Array, alpha: number, negate: boolean): Float32Array {
  const out = new Float32Array(a.length);
  const fa = Math.fround(alpha);
  for (let i = 0; i < a.length; i++) {
    const t = Math.fround(a[i] + Math.fround(fa * b[i]));
    out[i] = negate ? -t : t;
  }
  return out;
}

/** JS reference of SCHED_LIB mode 0. */
function chainRef(x: Uint32Array, steps: number): Uint32Array {
  const out = Uint32Array.from(x);
  for (let s = 0; s < steps; s++) {
    for (let i = 0; i < out.length; i++) out[i] = (Math.imul(out[i], 3) + s) >>> 0;
  }
  return out;
}

// sched entry: (buf, aux, n, steps, mode, chunk, timeoutMs)
const SCHED_KINDS_DEVICE = kinds(K.Device, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int);

// ----------------------------------------------------------------------------------------

describe("native addon: loading", () => {
  it("exposes Device and the ABI version of tspto_abi.h", () => {
    expect(addon.abiVersion).toBe(2);
    expect(typeof addon.Device).toBe("function");
    expect(loadNative()).toBe(addon); // cached
  });

  it("validates device options, naming the field", () => {
    expect(() => new addon.Device(options({ coreThreads: 0 }))).toThrow(
      /option 'coreThreads' must be an integer in \[1, 1024\], got 0/,
    );
    expect(() => new addon.Device({ ...options(), memoryBytes: undefined } as never)).toThrow(
      /option 'memoryBytes'.*got undefined/,
    );
  });
});

describe("native device: memory arena", () => {
  it("allocates zero-filled, 64-byte-aligned buffers and tracks liveness", () => {
    const d = device();
    const a = d.alloc(100);
    const b = d.alloc(64);
    expect(typeof a).toBe("bigint");
    expect(a % 64n).toBe(0n);
    expect(b % 64n).toBe(0n);
    expect(a).not.toBe(b);
    expect(d.isLive(a)).toBe(true);
    expect(d.isLive(a + 4n)).toBe(false);
    let s = d.stats();
    expect(s.liveAllocations).toBe(2);
    expect(s.bytesInUse).toBe(128 + 64); // rounded up to 64 bytes each
    expect(s.capacity).toBe(8 * 1024 ** 3);

    // Dirty the block, free it, allocate again: the reused memory is zeroed.
    d.h2d(a, new Uint8Array(100).fill(0xab), 100);
    d.free(a);
    expect(d.isLive(a)).toBe(false);
    const c = d.alloc(100);
    expect(c).toBe(a); // best fit reuses the freed block
    const back = new Uint8Array(100).fill(7);
    d.d2h(back, c, 100);
    expect(back.every((v) => v === 0)).toBe(true);

    d.free(b);
    d.free(c);
    s = d.stats();
    expect(s.liveAllocations).toBe(0);
    expect(s.bytesInUse).toBe(0);
  });

  // (Linux with transparent huge pages: the arena asks for them, so a first write faults once per 2 MiB)
  const thp = process.platform === "linux" && existsSync("/sys/kernel/mm/transparent_hugepage/enabled") && existsSync("/proc/self/smaps");
  it.skipIf(!thp)("asks the kernel for transparent huge pages over its whole mapping (smaps: VmFlags hg)", () => {
    const d = device({ memoryBytes: 3 * 2 ** 30 });
    const a = d.alloc(64);
    // the mapping that holds a: its VmFlags line carries 'hg' (MADV_HUGEPAGE)
    const blocks = readFileSync("/proc/self/smaps", "utf8").split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
    const mine = blocks.find((b) => {
      const [lo, hi] = b.slice(0, b.indexOf(" ")).split("-").map((x) => BigInt(`0x${x}`));
      return a >= lo && a < hi;
    });
    expect(mine, "a mapping holds the allocation").toBeDefined();
    expect(mine!.match(/^VmFlags:(.*)$/m)?.[1].trim().split(/\s+/)).toContain("hg");
    d.free(a);
  });

  it("rejects interior, foreign and double frees with clear messages", () => {
    const d = device();
    const a = d.alloc(256);
    expect(() => d.free(a + 64n)).toThrow(
      `free: 0x${(a + 64n).toString(16)} is an interior pointer (offset 64 into the allocation at 0x${a.toString(16)} of 256 bytes)`,
    );
    expect(() => d.free(0x1000n)).toThrow("free: 0x1000 is not an address of this device's memory (foreign pointer)");
    // An address of another device is foreign too.
    const other = device({ memoryBytes: 1 << 20 });
    const o = other.alloc(64);
    expect(() => d.free(o)).toThrow(/foreign pointer/);
    expect(d.isLive(o)).toBe(false);
    d.free(a);
    expect(() => d.free(a)).toThrow(
      `free: 0x${a.toString(16)} is not a live allocation (already freed or never allocated)`,
    );
    expect(() => d.free(-1n)).toThrow(/address must be a non-negative bigint/);
    expect(d.stats().liveAllocations).toBe(0);
  });

  it("coalesces freed neighbours so a large block fits again", () => {
    const d = device({ memoryBytes: 4096 });
    const blocks = Array.from({ length: 4 }, () => d.alloc(1024));
    expect(() => d.alloc(64)).toThrow(/device out of memory/);
    // Free in an order that needs coalescing on both sides.
    d.free(blocks[1]);
    d.free(blocks[3]);
    d.free(blocks[2]);
    d.free(blocks[0]);
    const big = d.alloc(4096);
    expect(d.isLive(big)).toBe(true);
    d.free(big);
  });

  it("round-trips seeded random data through h2d/d2h and counts the bytes", () => {
    const d = device();
    const n = 10_000;
    const src = randomFloats(n, 1234);
    const addr = d.alloc(n * 4);
    const before = d.stats();
    d.h2d(addr, src, n * 4);
    const dst = new Float32Array(n);
    d.d2h(dst, addr, n * 4);
    expect(dst).toEqual(src);
    const after = d.stats();
    expect(after.h2dBytes - before.h2dBytes).toBe(n * 4);
    expect(after.d2hBytes - before.d2hBytes).toBe(n * 4);

    // Interior starts are fine for copies; views with an offset (DataView too) are honoured.
    const part = new Float32Array(16);
    d.d2h(part, addr + 40n, 64);
    expect(part).toEqual(src.subarray(10, 26));
    const raw = new Uint8Array(32).map((_, i) => i);
    d.h2d(addr + 8n, new DataView(raw.buffer, 16, 8), 8);
    const got = new Uint8Array(8);
    d.d2h(got, addr + 8n, 8);
    expect(Array.from(got)).toEqual([16, 17, 18, 19, 20, 21, 22, 23]);
    d.free(addr);
  });

  it("rejects copies that leave an allocation or exceed the host view", () => {
    const d = device();
    const addr = d.alloc(64);
    const hex = `0x${addr.toString(16)}`;
    expect(() => d.h2d(addr + 32n, new Uint8Array(64), 64)).toThrow(
      `h2d: range [0x${(addr + 32n).toString(16)}, 0x${(addr + 32n).toString(16)} + 64) leaves the allocation at ${hex} of 64 bytes`,
    );
    expect(() => d.d2h(new Uint8Array(8), addr, 16)).toThrow(
      `d2h: destination view has 8 bytes, fewer than nbytes=16 (device address ${hex})`,
    );
    d.free(addr);
    expect(() => d.h2d(addr, new Uint8Array(8), 8)).toThrow(`h2d: ${hex} is not inside a live allocation`);
    expect(() => d.d2h(new Uint8Array(8), 0x10n, 8)).toThrow(/d2h: 0x10 is not an address of this device's memory/);
    expect(() => d.h2d(addr, [1, 2] as never, 2)).toThrow(/h2d: source view must be an ArrayBufferView/);
  });

  it("reports out of memory with requested, in-use and capacity, and keeps working", () => {
    const d = device({ memoryBytes: 1 << 20 });
    const keep = d.alloc(1000); // 1024 bytes in use
    let err: Error & { code?: string } = new Error("no throw");
    try {
      d.alloc(2 << 20);
    } catch (e) {
      err = e as Error;
    }
    expect(err.message).toBe(
      "device out of memory: requested 2097152 bytes, 1024 bytes in use of 1048576 bytes capacity; " +
        "free DeviceTensors you no longer need (ChipWorker.freeTensor)",
    );
    expect(err.code).toBe("TSPTO_DEVICE_OOM");
    // Still usable: the rest of the capacity can be allocated and used.
    const rest = d.alloc((1 << 20) - 1024);
    d.h2d(rest, new Uint8Array([1, 2, 3]), 3);
    const back = new Uint8Array(3);
    d.d2h(back, rest, 3);
    expect(Array.from(back)).toEqual([1, 2, 3]);
    d.free(rest);
    d.free(keep);
    expect(d.stats().bytesInUse).toBe(0);
  });

  it("throws 'device is closed' after close(), which is idempotent", async () => {
    const d = new addon.Device(options());
    const a = d.alloc(64);
    expect(d.closed).toBe(false);
    d.close();
    d.close();
    expect(d.closed).toBe(true);
    expect(() => d.alloc(64)).toThrow("device is closed");
    expect(() => d.free(a)).toThrow("device is closed");
    expect(() => d.stats()).toThrow("device is closed");
    expect(() => d.loadModule(libs.add)).toThrow("device is closed");
    expect(() => d.launch(1, [], kinds())).toThrow("device is closed");
    await expect(d.launchAsync(1, [], kinds())).rejects.toThrow("device is closed");
  });
});

describe("native device: modules", () => {
  it("loads a library once per call, counts loads and unloads", () => {
    const d = device();
    const id1 = d.loadModule(libs.add);
    const id2 = d.loadModule(libs.add);
    expect(id1).not.toBe(id2);
    let s = d.stats();
    expect(s.moduleLoads).toBe(2);
    expect(s.modulesLoaded).toBe(2);
    d.unloadModule(id1);
    s = d.stats();
    expect(s.moduleLoads).toBe(2);
    expect(s.modulesLoaded).toBe(1);
    expect(() => d.unloadModule(id1)).toThrow(`unloadModule: unknown module id ${id1}`);
    expect(() => d.launch(id1, [], kinds())).toThrow(`launch: unknown module id ${id1}`);
  });

  it("reports a bad path with dlopen's message", () => {
    const d = device();
    const path = join(tempDir, "does-not-exist.so");
    expect(() => d.loadModule(path)).toThrow(
      new RegExp(`loadModule: cannot load program library '${path}': .*No such file or directory`),
    );
    expect(d.stats().moduleLoads).toBe(0);
  });

  it("rejects libraries that are not tspto programs or have another ABI version", () => {
    const d = device();
    expect(() => d.loadModule(libs.notprogram)).toThrow(/is not a tspto program library \(no tspto_abi_version symbol\)/);
    expect(() => d.loadModule(libs.badabi)).toThrow(
      /was built for tspto ABI version 100 but this runtime implements version 2; rebuild the program/,
    );
    expect(d.stats().modulesLoaded).toBe(0);
  });
});

describe("native device: launch", () => {
  const rows = 37;
  const cols = 19;
  const n = rows * cols;
  const addKinds = (a: number, b: number, out: number) =>
    kinds(a, b, out, K.Int, K.Int, K.Int, K.Float, K.Bool);

  it("runs k_add over row chunks with host In/In/Out arguments", () => {
    const d = device();
    const id = d.loadModule(libs.add);
    const a = randomFloats(n, 1);
    const b = randomFloats(n, 2);
    const out = new Float32Array(n).fill(Number.NaN);
    const before = d.stats();
    const ns = d.launch(id, [a, b, out, rows, cols, 5, 1.0, false], addKinds(K.HostIn, K.HostIn, K.HostOut));
    expect(out).toEqual(addRef(a, b, 1.0, false));
    expect(typeof ns).toBe("number");
    expect(ns).toBeGreaterThan(0);
    const s = d.stats();
    expect(s.launches - before.launches).toBe(1);
    expect(s.tasksRun - before.tasksRun).toBe(Math.ceil(rows / 5));
    expect(s.bytesInUse).toBe(before.bytesInUse); // staging freed

    // Float and bool scalars reach the kernel (alpha = 0.5, negate) — bigint ints too.
    const out2 = new Float32Array(n);
    d.launch(id, [a, b, out2, BigInt(rows), cols, 8n, 0.5, true], addKinds(K.HostIn, K.HostIn, K.HostOut));
    expect(out2).toEqual(addRef(a, b, 0.5, true));
  });

  it("runs k_add on device tensors without any transfer", () => {
    const d = device();
    const id = d.loadModule(libs.add);
    const a = randomFloats(n, 3);
    const b = randomFloats(n, 4);
    const da = d.alloc(n * 4);
    const db = d.alloc(n * 4);
    const dout = d.alloc(n * 4);
    d.h2d(da, a, n * 4);
    d.h2d(db, b, n * 4);
    const before = d.stats();
    d.launch(id, [da, db, dout, rows, cols, 4, 1.0, false], addKinds(K.Device, K.Device, K.Device));
    const mid = d.stats();
    expect(mid.h2dBytes).toBe(before.h2dBytes);
    expect(mid.d2hBytes).toBe(before.d2hBytes);
    expect(mid.liveAllocations).toBe(before.liveAllocations);
    const out = new Float32Array(n);
    d.d2h(out, dout, n * 4);
    expect(out).toEqual(addRef(a, b, 1.0, false));
    // The device data stays resident: a second launch reads it again.
    d.launch(id, [da, dout, dout, rows, cols, rows, 1.0, false], addKinds(K.Device, K.Device, K.Device));
    const out2 = new Float32Array(n);
    d.d2h(out2, dout, n * 4);
    expect(out2).toEqual(addRef(a, addRef(a, b, 1.0, false), 1.0, false));
  });

  it("counts transfers per argument kind", () => {
    const d = device();
    const id = d.loadModule(libs.add);
    const bytes = n * 4;
    const a = randomFloats(n, 5);
    const b = randomFloats(n, 6);
    const da = d.alloc(bytes);
    const db = d.alloc(bytes);
    const dout = d.alloc(bytes);
    d.h2d(da, a, bytes);
    d.h2d(db, b, bytes);
    const expected = addRef(a, b, 1.0, false);
    const cases: Array<[string, number[], number, number]> = [
      // [label, kinds of (a, b, out), h2d bytes, d2h bytes]
      ["device", [K.Device, K.Device, K.Device], 0, 0],
      ["In", [K.HostIn, K.HostIn, K.Device], 2 * bytes, 0],
      ["Out", [K.Device, K.Device, K.HostOut], 0, bytes],
      ["InOut", [K.Device, K.Device, K.HostInOut], bytes, bytes],
      ["mixed", [K.HostIn, K.Device, K.HostInOut], 2 * bytes, bytes],
    ];
    for (const [label, [ka, kb, ko], h2d, d2h] of cases) {
      const out = new Float32Array(n).fill(-1);
      const args = [ka === K.Device ? da : a, kb === K.Device ? db : b, ko === K.Device ? dout : out];
      const before = d.stats();
      d.launch(id, [...args, rows, cols, 6, 1.0, false], addKinds(ka, kb, ko));
      const after = d.stats();
      expect({ label, h2d: after.h2dBytes - before.h2dBytes, d2h: after.d2hBytes - before.d2hBytes }).toEqual({
        label,
        h2d,
        d2h,
      });
      expect(after.bytesInUse).toBe(before.bytesInUse);
      if (ko !== K.Device) expect(out).toEqual(expected);
    }
  });

  it("starts a host Out buffer zeroed and uploads InOut", () => {
    const d = device();
    const id = d.loadModule(libs.sched);
    const m = 100;
    const aux = d.alloc(4);
    // Dirty the arena with an In staging buffer first, so a reused block must be re-zeroed.
    d.launch(id, [new Uint32Array(m).fill(0xdeadbeef), aux, m, 0, 4, 1, 0], kinds(K.HostIn, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int));
    const out = new Uint32Array(m).fill(100);
    d.launch(id, [out, aux, m, 0, 4, 1, 0], kinds(K.HostOut, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int));
    expect(out.every((v) => v === 1)).toBe(true);
    const io = new Uint32Array(m).fill(100);
    d.launch(id, [io, aux, m, 0, 4, 1, 0], kinds(K.HostInOut, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int));
    expect(io.every((v) => v === 101)).toBe(true);
  });

  it("keeps a module's orchestration buffers for its next launch (zero-filled again) and frees them at unload", () => {
    const d = device();
    const id = d.loadModule(libs.sched);
    const m = 257;
    const x = randomU32(m, 9);
    const buf = d.alloc(m * 4);
    const aux = d.alloc(4);
    const baseline = d.stats();
    const kept = Math.ceil((m * 4) / 64) * 64; // the one rt->alloc buffer, rounded to 64 bytes
    for (const explicitFree of [1, 0, 1, 0]) {
      d.h2d(buf, x, m * 4);
      d.launch(id, [buf, aux, m, explicitFree, 3, 1, 0], SCHED_KINDS_DEVICE);
      const got = new Uint32Array(m);
      d.d2h(got, buf, m * 4);
      expect(got).toEqual(x.map((v) => Math.imul(v, 3) >>> 0));
      // one buffer kept by the module, the same one at every launch (explicit rt->free or not)
      expect(d.stats().bytesInUse).toBe(baseline.bytesInUse + kept);
      expect(d.stats().liveAllocations).toBe(baseline.liveAllocations + 1);
    }
    d.unloadModule(id);
    expect(d.stats().bytesInUse).toBe(baseline.bytesInUse);
    expect(d.stats().liveAllocations).toBe(baseline.liveAllocations);
  });

  it("a kept orchestration buffer is zero-filled again at every launch", () => {
    const d = device();
    const id = d.loadModule(libs.sched);
    const m = 64;
    const aux = d.alloc(4);
    // mode 7 (see SCHED_LIB): out[i] = tmp[i] (a fresh rt->alloc buffer, read before written) + 1, then tmp[i] = 99
    for (let r = 0; r < 3; r++) {
      const out = d.alloc(m * 4);
      d.launch(id, [out, aux, m, 0, 7, 1, 0], SCHED_KINDS_DEVICE);
      const got = new Uint32Array(m);
      d.d2h(got, out, m * 4);
      expect(Array.from(got), `launch ${r + 1}`).toEqual(new Array(m).fill(1));
    }
  });

  it("rejects bad launch arguments before running anything", () => {
    const d = device();
    const id = d.loadModule(libs.add);
    const a = new Float32Array(n);
    const freed = d.alloc(n * 4);
    d.free(freed);
    const before = d.stats();
    expect(() =>
      d.launch(id, [freed, a, a, rows, cols, 4, 1.0, false], addKinds(K.Device, K.HostIn, K.HostOut)),
    ).toThrow(`launch: argument 0 (device tensor): 0x${freed.toString(16)} is not a live allocation`);
    expect(() => d.launch(id, [a, a, a], kinds(K.HostIn, K.HostIn))).toThrow(
      "launch: kinds has 2 entries but args has 3",
    );
    expect(() => d.launch(id, [1.5], kinds(K.Int))).toThrow(
      "launch: argument 0 (int scalar) must be an integer in the int64 range, got 1.5",
    );
    expect(() => d.launch(id, [5], kinds(K.HostIn))).toThrow(
      "launch: argument 0 (host In) must be an ArrayBufferView, got 5",
    );
    expect(() => d.launch(id, [1], kinds(9))).toThrow("launch: kinds[0] = 9 is not an argument kind (0..6)");
    const s = d.stats();
    expect(s.launches).toBe(before.launches);
    expect(s.bytesInUse).toBe(before.bytesInUse);
  });

  it("out of memory while staging frees what was staged and keeps the device usable", () => {
    const d = device({ memoryBytes: 1 << 20 });
    const id = d.loadModule(libs.sched);
    const aux = d.alloc(4);
    const small = new Uint32Array(1000);
    const huge = new Uint32Array(300_000); // 1.2 MB > capacity
    const k7 = kinds(K.HostIn, K.HostIn, K.Int, K.Int, K.Int, K.Int, K.Int);
    expect(() => d.launch(id, [small, huge, 1000, 0, 4, 1, 0], k7)).toThrow(
      /device out of memory: requested 1200000 bytes, \d+ bytes in use of 1048576 bytes capacity/,
    );
    expect(d.stats().bytesInUse).toBe(64); // only aux
    const io = new Uint32Array(1000).fill(41);
    d.launch(id, [io, aux, 1000, 0, 4, 1, 0], kinds(K.HostInOut, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int));
    expect(io.every((v) => v === 42)).toBe(true);
  });

  it("throws the kernel's rt->fail message and stays usable", () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(libs.fail);
    const m = 16;
    const x = new Float32Array(m).fill(5);
    const fk = kinds(K.HostInOut, K.Int, K.Int);
    let err: Error & { code?: string } = new Error("no throw");
    try {
      d.launch(id, [x, m, 7], fk);
    } catch (e) {
      err = e as Error;
    }
    expect(err.message).toBe(
      "kernel failure: dynamic window out of bounds: row 7 + 4 > 8 (in task 'k_check', scope 3)",
    );
    expect(err.code).toBe("TSPTO_KERNEL_FAILURE");
    // A failed launch does not copy results back.
    expect(x.every((v) => v === 5)).toBe(true);
    const afterFail = d.stats();
    expect(afterFail.bytesInUse).toBe(0);
    // The next launch works.
    d.launch(id, [x, m, -1], fk);
    expect(x.every((v) => v === 6)).toBe(true);
    // A failure raised by the orchestration, and a non-zero return without a message.
    expect(() => d.launch(id, [x, m, -3], fk)).toThrow(/^kernel failure: orchestration gave up$/);
    expect(() => d.launch(id, [x, m, -2], fk)).toThrow(
      "kernel failure: tspto_entry returned 5 without recording a failure message",
    );
    d.launch(id, [x, m, -1], fk);
    expect(x.every((v) => v === 7)).toBe(true);
    expect(d.stats().launches).toBe(5);
  });

  it("launchAsync resolves with the same results and rejects with the same errors", async () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(libs.add);
    const a = randomFloats(n, 11);
    const b = randomFloats(n, 12);
    const syncOut = new Float32Array(n);
    const asyncOut = new Float32Array(n);
    const k = addKinds(K.HostIn, K.HostIn, K.HostOut);
    d.launch(id, [a, b, syncOut, rows, cols, 3, 0.25, false], k);
    const before = d.stats();
    const promise = d.launchAsync(id, [a, b, asyncOut, rows, cols, 3, 0.25, false], k);
    expect(promise).toBeInstanceOf(Promise);
    const ns = await promise;
    expect(ns).toBeGreaterThan(0);
    expect(asyncOut).toEqual(syncOut);
    expect(asyncOut).toEqual(addRef(a, b, 0.25, false));
    const after = d.stats();
    expect(after.launches - before.launches).toBe(1);
    expect(after.h2dBytes - before.h2dBytes).toBe(2 * n * 4);
    expect(after.d2hBytes - before.d2hBytes).toBe(n * 4);

    const failId = d.loadModule(libs.fail);
    await expect(d.launchAsync(failId, [new Float32Array(4), 4, 2], kinds(K.HostInOut, K.Int, K.Int))).rejects.toThrow(
      "kernel failure: dynamic window out of bounds: row 7 + 4 > 8 (in task 'k_check', scope 3)",
    );
    await expect(d.launchAsync(id, [1.5], kinds(K.Int))).rejects.toThrow(/must be an integer/);
    const again = new Float32Array(n);
    await d.launchAsync(id, [a, b, again, rows, cols, 3, 0.25, false], k);
    expect(again).toEqual(syncOut);
  });

  it("serializes a sync launch behind a running async launch", async () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(libs.sched);
    const m = 4096;
    const x = randomU32(m, 21);
    const y = randomU32(m, 22);
    const aux = d.alloc(4);
    const bx = d.alloc(m * 4);
    const by = d.alloc(m * 4);
    d.h2d(bx, x, m * 4);
    d.h2d(by, y, m * 4);
    const pending = d.launchAsync(id, [bx, aux, m, 64, 0, 512, 0], SCHED_KINDS_DEVICE);
    d.launch(id, [by, aux, m, 16, 0, 512, 0], SCHED_KINDS_DEVICE);
    await pending;
    const gx = new Uint32Array(m);
    const gy = new Uint32Array(m);
    d.d2h(gx, bx, m * 4);
    d.d2h(gy, by, m * 4);
    expect(gx).toEqual(chainRef(x, 64));
    expect(gy).toEqual(chainRef(y, 16));
  });
});

describe("native device: close during an async launch", () => {
  it("close() waits for the running launch; a queued one rejects with 'device is closed'", async () => {
    const d = new addon.Device(options({ coreThreads: 2 }));
    const id = d.loadModule(libs.sched);
    const m = 2048;
    const x = randomU32(m, 61);
    const out = Uint32Array.from(x);
    const k = kinds(K.HostInOut, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int);
    const aux = d.alloc(4);
    const first = d.launchAsync(id, [out, aux, m, 30, 0, 256, 200], k);
    const second = d.launchAsync(id, [new Uint32Array(m), aux, m, 1, 0, 256, 0], k);
    d.close();
    expect(d.closed).toBe(true);
    const settled = await Promise.allSettled([first, second]);
    for (const r of settled) {
      if (r.status === "rejected") expect(String(r.reason)).toMatch(/device is closed/);
    }
    if (settled[0].status === "fulfilled") expect(out).toEqual(chainRef(x, 30));
    else expect(out).toEqual(x); // never ran: host data untouched
  });
});

describe("native device: scheduler with several core threads", () => {
  it("runs independent tasks in parallel (rendezvous) and fails it on one core", () => {
    const two = device({ coreThreads: 2 });
    const id2 = two.loadModule(libs.sched);
    const buf = two.alloc(8);
    const aux = two.alloc(4);
    two.launch(id2, [buf, aux, 2, 0, 1, 1, 10_000], SCHED_KINDS_DEVICE);
    const got = new Uint32Array(2);
    two.d2h(got, buf, 8);
    expect(Array.from(got)).toEqual([1, 1]);

    // With a single core the two tasks cannot meet: the test kernel itself detects it.
    const one = device({ coreThreads: 1 });
    const id1 = one.loadModule(libs.sched);
    const buf1 = one.alloc(8);
    const aux1 = one.alloc(4);
    expect(() => one.launch(id1, [buf1, aux1, 2, 0, 1, 1, 100], SCHED_KINDS_DEVICE)).toThrow(
      "kernel failure: tasks did not run concurrently (in task 'k_meet', scope 0)",
    );
  });

  it("keeps read-modify-write chains in order while chunks run in parallel", () => {
    const d = device({ coreThreads: 4 });
    const id = d.loadModule(libs.sched);
    const m = 10_000;
    const x = randomU32(m, 31);
    const buf = d.alloc(m * 4);
    const aux = d.alloc(4);
    d.h2d(buf, x, m * 4);
    const before = d.stats().tasksRun;
    const steps = 40;
    const chunk = 700; // 15 chunks, the last one partial
    d.launch(id, [buf, aux, m, steps, 0, chunk, 300], SCHED_KINDS_DEVICE);
    const got = new Uint32Array(m);
    d.d2h(got, buf, m * 4);
    expect(got).toEqual(chainRef(x, steps));
    expect(d.stats().tasksRun - before).toBe(steps * Math.ceil(m / chunk));
  });

  it("orders a write after a read of the same region (WAR)", () => {
    const d = device({ coreThreads: 2 });
    const id = d.loadModule(libs.sched);
    const m = 512;
    const x = randomU32(m, 41);
    const buf = d.alloc(m * 4);
    const aux = d.alloc(m * 4);
    d.h2d(buf, x, m * 4);
    d.launch(id, [buf, aux, m, 0, 2, 1, 0], SCHED_KINDS_DEVICE);
    const copy = new Uint32Array(m);
    const after = new Uint32Array(m);
    d.d2h(copy, aux, m * 4);
    d.d2h(after, buf, m * 4);
    expect(copy).toEqual(x); // the slow copy saw the original data
    expect(after.every((v) => v === 999)).toBe(true);
  });

  it("idle core threads park instead of spinning", async () => {
    const d = device({ coreThreads: 4 });
    const id = d.loadModule(libs.sched);
    const buf = d.alloc(4096);
    const aux = d.alloc(4);
    d.launch(id, [buf, aux, 1024, 8, 0, 64, 0], SCHED_KINDS_DEVICE);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = process.cpuUsage();
    const w0 = Date.now();
    await new Promise((r) => setTimeout(r, 400));
    const used = process.cpuUsage(t0);
    const wallMs = Date.now() - w0;
    // Four spinning threads would burn ~4x the wall time.
    expect((used.user + used.system) / 1000).toBeLessThan(wallMs * 0.5);
  });

  it("applies back-pressure with a tiny ring, heap and dependency pool", () => {
    const d = device({ coreThreads: 3, ringTaskWindow: 4, ringHeap: 1024, ringDepPool: 4 });
    const id = d.loadModule(libs.sched);
    const m = 3000;
    const x = randomU32(m, 51);
    const out = Uint32Array.from(x);
    const aux = d.alloc(4);
    const before = d.stats().tasksRun;
    d.launch(id, [out, aux, m, 25, 0, 250, 100], kinds(K.HostInOut, K.Device, K.Int, K.Int, K.Int, K.Int, K.Int));
    expect(out).toEqual(chainRef(x, 25));
    expect(d.stats().tasksRun - before).toBe(25 * 12);
  });
});

describe("native device: lifecycle", () => {
  function runNode(script: string, env: Record<string, string>): Promise<{ code: number | null; out: string; ms: number }> {
    return new Promise((resolve, reject) => {
      const t0 = Date.now();
      const child = spawn(process.execPath, ["-e", script], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (c) => (out += c));
      child.stderr.on("data", (c) => (out += c));
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("error", reject);
      child.on("exit", (code) => {
        clearTimeout(timer);
        resolve({ code, out, ms: Date.now() - t0 });
      });
    });
  }

  const OPEN_DEVICE_SCRIPT = `
    const { createRequire } = require("node:module");
    const req = createRequire(process.env.TSPTO_ADDON);
    const { Device } = req(process.env.TSPTO_ADDON);
    const d = new Device({ deviceId: 0, coreThreads: 2, schedThreads: 1, scratchBytes: 65536,
      memoryBytes: 2 ** 33, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 });
    const buf = d.alloc(4096);
    const aux = d.alloc(4);
    const id = d.loadModule(process.env.TSPTO_LIB);
    const k = Uint8Array.from([3, 3, 4, 4, 4, 4, 4]);
    d.launch(id, [buf, aux, 1024, 3, 0, 100, 0], k);
    d.launchAsync(id, [buf, aux, 1024, 3, 0, 100, 0], k).then(() => console.log("async done"));
    console.log("leaving without close");
  `;

  it("a process that never calls close() exits promptly with code 0", async () => {
    const r = await runNode(OPEN_DEVICE_SCRIPT, { TSPTO_ADDON: ADDON_PATH, TSPTO_LIB: libs.sched });
    expect(r.out).toContain("leaving without close");
    expect(r.out).toContain("async done");
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(20_000);
  }, 40_000);

  it("each worker_thread can load the addon and use its own device", async () => {
    const workerScript = `
      const { parentPort, workerData } = require("node:worker_threads");
      const { createRequire } = require("node:module");
      const { Device } = createRequire(workerData.addon)(workerData.addon);
      const d = new Device({ deviceId: workerData.index, coreThreads: 2, schedThreads: 1,
        scratchBytes: 65536, memoryBytes: 2 ** 32, ringTaskWindow: 16, ringHeap: 1 << 20,
        ringDepPool: 1024 });
      const a = d.alloc(1024);
      const src = new Uint32Array(256).map((_, i) => i * (workerData.index + 1));
      d.h2d(a, src, 1024);
      const aux = d.alloc(4);
      const id = d.loadModule(workerData.lib);
      d.launch(id, [a, aux, 256, 0, 4, 1, 0], Uint8Array.from([3, 3, 4, 4, 4, 4, 4])); // += 1
      const back = new Uint32Array(256);
      d.d2h(back, a, 1024);
      const ok = back.every((v, i) => v === i * (workerData.index + 1) + 1);
      if (workerData.close) d.close();
      parentPort.postMessage({ ok, closed: d.closed });
    `;
    const runWorker = (index: number, close: boolean) =>
      new Promise<{ msg: { ok: boolean; closed: boolean }; code: number }>((resolve, reject) => {
        const w = new Worker(workerScript, {
          eval: true,
          workerData: { addon: ADDON_PATH, lib: libs.sched, index, close },
        });
        let msg: { ok: boolean; closed: boolean } = { ok: false, closed: false };
        w.on("message", (m) => (msg = m));
        w.on("error", reject);
        w.on("exit", (code) => resolve({ msg, code }));
      });
    const results = await Promise.all([runWorker(1, true), runWorker(2, true), runWorker(3, false)]);
    expect(results).toEqual([
      { msg: { ok: true, closed: true }, code: 0 },
      { msg: { ok: true, closed: true }, code: 0 },
      { msg: { ok: true, closed: false }, code: 0 },
    ]);
    // The main thread's addon instance is unaffected.
    const d = device();
    expect(d.isLive(d.alloc(64))).toBe(true);
  }, 40_000);
});

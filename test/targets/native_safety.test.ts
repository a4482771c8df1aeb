// Memory and data safety of the native runtime under misuse (issue 9): host views that
// changed under a launch (detached, transferred, shrunk, too short), allocations freed
// while launches are in flight, large allocations (no zero-fill of fresh pages, pages given
// back on free, impossible requests refused), and the codes every native error carries.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ArgKind as K, loadNative, type DeviceOptions, type NativeAddon, type NativeDevice } from "../../src/targets/native.js";

const execFileAsync = promisify(execFile);
const INCLUDE_DIR = fileURLToPath(new URL("../../native/include", import.meta.url));
const CXX = process.env.CXX ?? "c++";

/**
 * Entry (x: float32[n], y: float32[n], n, spinUs): one task computes y[i] = 2 * x[i] + 1,
 * after spinning spinUs microseconds (to keep a launch in flight).
 */
const TWICE_LIB = `
#include "tspto_abi.h"
#include <chrono>
#include <cstdint>
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
extern "C" void k_twice(const int64_t* args) {
  const float* x = reinterpret_cast<const float*>(args[0]);
  float* y = reinterpret_cast<float*>(args[1]);
  const int64_t n = args[2], spin = args[3];
  if (spin > 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(spin);
    while (std::chrono::steady_clock::now() < end) {}
  }
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  const int64_t slots[4] = {args[0], args[1], args[2], args[3]};
  TsptoAccess acc[2] = {};
  acc[0].base = args[0]; acc[0].nbytes = args[2] * 4; acc[0].mode = TSPTO_ACCESS_READ; acc[0].rank = 0;
  acc[1].base = args[1]; acc[1].nbytes = args[2] * 4; acc[1].mode = TSPTO_ACCESS_WRITE; acc[1].rank = 0;
  if (rt->submit(rt->ctx, k_twice, "k_twice", 0, slots, 4, acc, 2) != 0) return 1;
  return rt->wait_all(rt->ctx);
}
`;

let addon: NativeAddon;
let tempDir = "";
let lib = "";
const open: NativeDevice[] = [];

function device(over: Partial<DeviceOptions> = {}): NativeDevice {
  const d = new addon.Device({
    deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 16, memoryBytes: 1 << 30,
    ringTaskWindow: 64, ringHeap: 1 << 20, ringDepPool: 1 << 16, ...over,
  });
  open.push(d);
  return d;
}

beforeAll(async () => {
  addon = loadNative();
  tempDir = mkdtempSync(join(tmpdir(), "tspto-native-safety-"));
  const cc = join(tempDir, "twice.cc");
  lib = join(tempDir, "twice.so");
  writeFileSync(cc, TWICE_LIB);
  await execFileAsync(CXX, ["-O2", "-shared", "-fPIC", "-std=c++17", "-I", INCLUDE_DIR, "-o", lib, cc]);
}, 120_000);

afterAll(() => {
  for (const d of open) d.close();
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
});

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
  return Float32Array.from({ length: n }, () => Math.round(r() * 2000 - 1000) / 8);
}
const twice = (x: Float32Array) => x.map((v) => Math.fround(2 * v + 1));
const kinds = (...k: number[]) => Uint8Array.from(k);
/** Detaches `buf` (as postMessage/structuredClone with transfer does) and returns the new owner. */
const detach = (buf: ArrayBufferLike): ArrayBuffer => structuredClone(buf as ArrayBuffer, { transfer: [buf as ArrayBuffer] });
/** A resizable ArrayBuffer (ES2024; typed loosely for the ES2022 lib). */
type Resizable = ArrayBuffer & { resize(n: number): void };
const resizable = (n: number, max: number): Resizable =>
  new (ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => Resizable)(n, { maxByteLength: max });

function thrown(f: () => unknown): Error & { code?: string; argIndex?: number } {
  try {
    f();
  } catch (e) {
    return e as Error & { code?: string; argIndex?: number };
  }
  throw new Error("expected a throw");
}
async function rejected(p: Promise<unknown>): Promise<Error & { code?: string; argIndex?: number }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string; argIndex?: number };
  }
  throw new Error("expected a rejection");
}

const n = 1024;
const NB = n * 4;
const ARG_BYTES = [NB, NB, -1, -1];

describe("launch: host views are checked at their live length", () => {
  it("a detached Out view is rejected and no other allocation changes", () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    // A resident tensor right after where staging buffers go: it must survive untouched.
    const victim = d.alloc(NB);
    const victimData = randomFloats(n, 7);
    d.h2d(victim, victimData, NB);
    const x = randomFloats(n, 1);
    const y = new Float32Array(n);
    detach(y.buffer);
    expect(y.byteLength).toBe(0);
    const before = d.stats();
    const e = thrown(() => d.launch(id, [x, y, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    expect(e.message).toBe(
      `launch: argument 1 (host Out) is a host view of 0 bytes, but the program uses ${NB} bytes ` +
        "(a detached, transferred or shrunk ArrayBuffer, or a view that is too short)",
    );
    expect(e.code).toBe("TSPTO_HOST_VIEW");
    expect(e.argIndex).toBe(1);
    const back = new Float32Array(n);
    d.d2h(back, victim, NB);
    expect(back).toEqual(victimData);
    const after = d.stats();
    expect(after.bytesInUse).toBe(before.bytesInUse); // nothing staged, nothing leaked
    expect(after.launches).toBe(before.launches); // the entry never ran
  });

  it("a detached In view, a shrunk resizable buffer and a short view are rejected", async () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    const x = randomFloats(n, 2);
    detach(x.buffer);
    expect(() => d.launch(id, [x, new Float32Array(n), n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int))).toThrow(
      `launch: argument 0 (host In) is a host view of 0 bytes, but the program reads ${NB} bytes`,
    );
    const rab = resizable(NB, NB);
    const tracking = new Float32Array(rab); // length-tracking view
    rab.resize(NB / 2);
    expect(() => d.launch(id, [randomFloats(n, 3), tracking, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int))).toThrow(
      `launch: argument 1 (host Out) is a host view of ${NB / 2} bytes, but the program uses ${NB} bytes`,
    );
    rab.resize(0);
    await expect(d.launchAsync(id, [randomFloats(n, 3), tracking, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int))).rejects.toThrow(
      `launchAsync: argument 1 (host Out) is a host view of 0 bytes`,
    );
    const short = new Float32Array(n - 1);
    expect(() => d.launch(id, [short, new Float32Array(n), n, 0], kinds(K.HostInOut, K.HostOut, K.Int, K.Int))).toThrow(
      `launch: argument 0 (host InOut) is a host view of ${NB - 4} bytes, but the program uses ${NB} bytes`,
    );
    expect(d.stats().bytesInUse).toBe(0);
  });

  it("stages and writes back only the validated bytes of a longer view", async () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    const x = randomFloats(n, 4);
    const y = new Float32Array(n + 16).fill(-7);
    d.launch(id, [x, y, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int));
    expect(y.subarray(0, n)).toEqual(twice(x));
    expect(Array.from(y.subarray(n))).toEqual(new Array(16).fill(-7));
    const y2 = new Float32Array(n + 16).fill(-9);
    await d.launchAsync(id, [x, y2, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int));
    expect(y2.subarray(0, n)).toEqual(twice(x));
    expect(Array.from(y2.subarray(n))).toEqual(new Array(16).fill(-9));
    const s = d.stats();
    expect(s.h2dBytes).toBe(2 * NB);
    expect(s.d2hBytes).toBe(2 * NB);
  });

  it("async: inputs are taken when the launch is queued; a result view detached meanwhile is an error, not a write", async () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    const x = randomFloats(n, 5);
    const expected = twice(x);
    const y = new Float32Array(n);
    const p = d.launchAsync(id, [x, y, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int));
    x.fill(123); // changing (or detaching) an input after the call does not change the launch
    detach(x.buffer);
    await p;
    expect(y).toEqual(expected);

    const y2 = new Float32Array(n).fill(5);
    const p2 = d.launchAsync(id, [randomFloats(n, 6), y2, n, 100_000], kinds(K.HostIn, K.HostOut, K.Int, K.Int));
    const moved = new Float32Array(detach(y2.buffer)); // transferred while the launch runs
    const e = await rejected(p2);
    expect(e.message).toBe(
      `launchAsync: argument 1 (host Out) is a host view of 0 bytes when the launch completed, fewer than the ${NB} ` +
        "bytes of its result (its ArrayBuffer was detached, transferred or shrunk while the launch ran); no result was written",
    );
    expect(e.code).toBe("TSPTO_HOST_VIEW");
    expect(e.argIndex).toBe(1);
    expect(Array.from(moved)).toEqual(new Array(n).fill(5)); // the new owner's bytes are untouched
    expect(d.stats().bytesInUse).toBe(0); // staging released on the error path
  });
});

describe("launch holds the allocations it uses", () => {
  it("3000 queued launches of a DeviceTensor, then free + a new allocation: every result is from the original data", async () => {
    const d = device();
    const id = d.loadModule(lib, [256 * 4, 256 * 4, -1, -1]);
    const m = 256;
    const dataB = randomFloats(m, 11);
    const dB = d.alloc(m * 4);
    d.h2d(dB, dataB, m * 4);
    const outs: Float32Array[] = [];
    const pending: Promise<number>[] = [];
    for (let i = 0; i < 3000; i++) {
      const out = new Float32Array(m);
      outs.push(out);
      pending.push(d.launchAsync(id, [dB, out, m, 0], kinds(K.Device, K.HostOut, K.Int, K.Int)));
    }
    expect(d.free(dB)).toBe(true); // deferred: launches in flight hold it
    expect(d.isLive(dB)).toBe(false); // but the address is dead at once
    expect(() => d.free(dB)).toThrow(/is not a live allocation \(freed; its memory is released when the \d+ launch\(es\) in flight that use it finish\)/);
    expect(() => d.h2d(dB, new Float32Array(m), m * 4)).toThrow(/h2d: .* is not inside a live allocation/);
    const dataC = randomFloats(m, 12);
    const dC = d.alloc(m * 4);
    d.h2d(dC, dataC, m * 4);
    const late = await rejected(d.launchAsync(id, [dB, new Float32Array(m), m, 0], kinds(K.Device, K.HostOut, K.Int, K.Int)));
    expect(late.message).toMatch(/^launchAsync: argument 0 \(device tensor\): 0x[0-9a-f]+ is not a live allocation/);
    expect(late.code).toBe("TSPTO_BAD_ADDRESS");
    expect(late.argIndex).toBe(0);
    const mid = d.stats();
    expect(mid.pendingFrees === 1 || mid.pendingFrees === 0).toBe(true);
    await Promise.all(pending);
    const want = twice(dataB);
    let wrong = 0;
    for (const o of outs) if (!o.every((v, i) => v === want[i])) wrong++;
    expect(wrong).toBe(0);
    const end = d.stats();
    expect(end.pendingFrees).toBe(0);
    expect(end.liveAllocations).toBe(1); // dC only
    expect(end.bytesInUse).toBe(m * 4);
    // The released block is reusable; dC kept its data.
    const check = new Float32Array(m);
    d.d2h(check, dC, m * 4);
    expect(check).toEqual(dataC);
    d.free(dC);
    expect(d.stats().bytesInUse).toBe(0);
  });

  it("unloading a module with launches queued lets them finish", async () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    const x = randomFloats(n, 21);
    const ys = Array.from({ length: 20 }, () => new Float32Array(n));
    const ps = ys.map((y) => d.launchAsync(id, [x, y, n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    d.unloadModule(id);
    expect(d.stats().modulesLoaded).toBe(0);
    await Promise.all(ps);
    for (const y of ys) expect(y).toEqual(twice(x));
    const e = thrown(() => d.launch(id, [x, ys[0], n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    expect(e.message).toBe(`launch: unknown module id ${id} (never loaded or already unloaded)`);
    expect(e.code).toBe("TSPTO_MODULE");
  });

  it("closing a device with launches queued rejects them as closed and releases everything", async () => {
    const d = device();
    const id = d.loadModule(lib, ARG_BYTES);
    const dx = d.alloc(NB);
    const ps = Array.from({ length: 50 }, () =>
      d.launchAsync(id, [dx, new Float32Array(n), n, 2000], kinds(K.Device, K.HostOut, K.Int, K.Int)).then(
        () => "ok",
        (e: Error & { code?: string }) => e.code,
      ),
    );
    d.free(dx);
    d.close();
    const results = await Promise.all(ps);
    for (const r of results) expect(["ok", "TSPTO_DEVICE_CLOSED"]).toContain(r);
    expect(results).toContain("TSPTO_DEVICE_CLOSED");
  });
});

const PAGE = 4096;
const rss = () => Number(readFileSync("/proc/self/statm", "utf8").split(" ")[1]) * PAGE;
const MiB = 1 << 20;

describe("large allocations", () => {
  it("fresh pages are not zero-filled, freed pages go back to the OS, a reallocation reads zeros", () => {
    const d = device({ memoryBytes: 2 ** 30 });
    const size = 256 * MiB;
    const base = rss();
    const a = d.alloc(size);
    expect(rss() - base).toBeLessThan(32 * MiB); // allocation touched no pages
    const chunk = new Uint8Array(4 * MiB).fill(0xab);
    for (let off = 0; off < size; off += chunk.length) d.h2d(a + BigInt(off), chunk, chunk.length);
    expect(rss() - base).toBeGreaterThan(size - 32 * MiB); // now resident
    d.free(a);
    expect(rss() - base).toBeLessThan(32 * MiB); // given back
    const b = d.alloc(size);
    expect(b).toBe(a); // the same region again
    expect(rss() - base).toBeLessThan(32 * MiB); // zeroing did not touch the pages
    const probe = new Uint8Array(chunk.length);
    for (const off of [0, size / 2, size - chunk.length]) {
      d.d2h(probe, b + BigInt(off), probe.length);
      expect(probe.every((v) => v === 0)).toBe(true);
    }
    d.free(b);
  });

  it("a large block made of dirty small ones is zeroed on reallocation", () => {
    const d = device({ memoryBytes: 64 * MiB });
    const small = 100 * 1024; // below the madvise threshold: freed without giving pages back
    const blocks = Array.from({ length: 10 }, () => d.alloc(small));
    const dirty = new Uint8Array(small).fill(0x5a);
    for (const blk of blocks) d.h2d(blk, dirty, small);
    for (const blk of blocks) d.free(blk);
    const big = d.alloc(10 * small);
    expect(big).toBe(blocks[0]);
    const back = new Uint8Array(10 * small);
    d.d2h(back, big, back.length);
    expect(back.every((v) => v === 0)).toBe(true);
    d.free(big);
  });

  it("refuses an allocation the machine cannot back with the device-OOM error", () => {
    const phys = totalmem();
    const d = device({ memoryBytes: Math.floor((phys * 4) / 64) * 64 });
    const request = Math.floor(phys * 1.5);
    const e = thrown(() => d.alloc(request));
    expect(e.message).toMatch(
      new RegExp(`^device out of memory: requested ${request} bytes, 0 bytes in use of \\d+ bytes capacity, but this machine cannot back it \\(\\d+ bytes of physical memory\\)`),
    );
    expect(e.code).toBe("TSPTO_DEVICE_OOM");
    const avail = Number(/MemAvailable:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))![1]) * 1024;
    if (avail + 2 ** 30 < phys) {
      const e2 = thrown(() => d.alloc(avail + 2 ** 29));
      expect(e2.message).toMatch(/but this machine cannot back it \(\d+ bytes of memory available now\)/);
    }
    expect(d.stats().bytesInUse).toBe(0);
    const ok = d.alloc(MiB); // still usable
    d.free(ok);
  });
});

describe("launch: dynamic dimensions in the argument layout", () => {
  it("a tensor's bytes are staticBytes times its dynamic extents, read from their slots at every launch", () => {
    const d = device();
    // x and y: 4 bytes times slot 2 (the element count n, as a dynamic dimension's extent)
    const id = d.loadModule(lib, [[4, 2], [4, 2], -1, -1]);
    for (const m of [512, 1024]) {
      const x = randomFloats(m, m), y = new Float32Array(m);
      d.launch(id, [x, y, m, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int));
      expect(Array.from(y)).toEqual(Array.from(twice(x)));
    }
    // a view shorter than its extent says: no launch, named argument
    const e1 = thrown(() => d.launch(id, [new Float32Array(1000), new Float32Array(1024), 1024, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    expect(e1.code).toBe("TSPTO_HOST_VIEW");
    expect(e1.argIndex).toBe(0);
    expect(e1.message).toContain("is a host view of 4000 bytes, but the program reads 4096 bytes");
    // an extent below 1 is a bad argument naming the slot
    const e2 = thrown(() => d.launch(id, [new Float32Array(4), new Float32Array(4), 0, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    expect(e2.code).toBe("TSPTO_BAD_ARGUMENT");
    expect(e2.argIndex).toBe(2);
    expect(e2.message).toBe("launch: argument 2 (a dynamic dimension of argument 0) must be an integer >= 1 whose tensor fits in memory, got 0");
    // a layout entry naming a slot that does not exist is rejected at load
    const e3 = thrown(() => d.loadModule(lib, [[4, 7], NB, -1, -1]));
    expect(e3.message).toBe("loadModule: argBytes[0][1] must be an integer in [0, 3], got 7");
  });
});

describe("native errors carry codes", () => {
  it("argument, address, module and closed errors", () => {
    const d = device();
    const e1 = thrown(() => d.h2d(1n, new Uint8Array(4), -1));
    expect(e1.message).toBe("h2d: nbytes must be a non-negative integer, got -1");
    expect(e1.code).toBe("TSPTO_BAD_ARGUMENT");
    const e2 = thrown(() => d.free(0x1000n));
    expect(e2.code).toBe("TSPTO_BAD_ADDRESS");
    const e3 = thrown(() => d.loadModule(join(tempDir, "missing.so")));
    expect(e3.message).toMatch(/^loadModule: cannot load program library '.*missing\.so'/);
    expect(e3.code).toBe("TSPTO_MODULE");
    const e4 = thrown(() => d.launch(0, [1.5], kinds(K.Int)));
    expect(e4.message).toMatch(/^launch: argument 0 \(int scalar\) must be an integer in the int64 range, got 1\.5/);
    expect(e4.code).toBe("TSPTO_BAD_ARGUMENT");
    expect(e4.argIndex).toBe(0);
    const a = d.alloc(64);
    const e5 = thrown(() => d.d2h(new Uint8Array(8), a, 16));
    expect(e5.code).toBe("TSPTO_HOST_VIEW");
    const e6 = thrown(() => d.loadModule(lib, [1, "x"] as never));
    expect(e6.message).toBe("loadModule: argBytes[1] must be an integer in [-1, 9007199254740991], got a string");
    const id = d.loadModule(lib, [NB, NB]);
    const e7 = thrown(() => d.launch(id, [new Float32Array(n), new Float32Array(n), n, 0], kinds(K.HostIn, K.HostOut, K.Int, K.Int)));
    expect(e7.message).toBe("launch: the program takes 2 arguments, got 4");
    d.close();
    const e8 = thrown(() => d.alloc(64));
    expect(e8.message).toBe("device is closed");
    expect(e8.code).toBe("TSPTO_DEVICE_CLOSED");
  });
});

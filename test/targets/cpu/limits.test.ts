// The machine's limits (src/targets/cpu/limits.ts): the measuring programs' op counts match the
// instructions they run (the compiled FMA loop holds exactly 24 vector FMAs per iteration, the
// dot loops 24 vdpbf16ps / vpdpbusd: none merged or folded away; these programs are also the
// bench's denominators, BENCHMARKS.md rows 3b, 14a, 14c, 11c), each answers a rate, and the
// limits are measured once per machine: a second call reads the cache file (measures nothing),
// another thread count or ISA path is another key, a corrupt file is measured again, and a dot
// unit is there only where the CPU (and the ISA path) has one.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import {
  DOT_PEAK, DotPeak, FMA_PEAK, FmaPeak, NativeRead, cpuLimits, cpuLimitsAsync, forgetLimitsMemo, limitsCacheFile, limitsMeasurements, peakFlags,
} from "../../../src/targets/cpu/index.js";
import { runOnce } from "../../../src/targets/cpu/limits.js";
import { getTarget } from "../../../src/targets/index.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-limits-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const info = (() => { try { return readFileSync("/proc/cpuinfo", "utf8"); } catch { return ""; } })();
const has = (f: string) => new RegExp(`\\bflags\\s*:.*\\b${f}\\b`).test(info);
const saved = { cache: process.env.TSPTO_CACHE_DIR, isa: process.env.TSPTO_CPU_ISA, cxx: process.env.CXX };
afterEach(() => {
  for (const [k, v] of [["TSPTO_CACHE_DIR", saved.cache], ["TSPTO_CPU_ISA", saved.isa], ["CXX", saved.cxx]] as const) {
    if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
  forgetLimitsMemo();
});

/** Per loop (label ... backward jump to it): how many instructions match `re`. */
function perLoop(asm: string, re: RegExp): number[] {
  const lines = asm.split("\n").map((l) => l.trim());
  const loops: number[] = [];
  lines.forEach((l, i) => {
    const m = /^j\w+\s+(\.L\w+)$/.exec(l);
    if (!m) return;
    const start = lines.lastIndexOf(`${m[1]}:`, i);
    if (start >= 0) loops.push(lines.slice(start, i).filter((x) => re.test(x)).length);
  });
  return loops.filter((n) => n > 0);
}
function assembly(name: string, source: string): string {
  const src = join(dir, `${name}.cc`), out = join(dir, `${name}.s`);
  writeFileSync(src, source);
  const r = spawnSync("c++", [...peakFlags(), "-S", "-o", out, src], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(out, "utf8");
}

describe("the measuring programs", () => {
  it.skipIf(!has("fma"))("the FMA loop holds 24 distinct FMA chains (the count the rate assumes)", () => {
    expect(perLoop(assembly("fma_peak", FMA_PEAK), /^vfmadd\d*ps\s/)).toEqual([24]);
  });

  it.skipIf(!has("avx512_bf16") || !has("avx512_vnni"))("the dot loops hold 24 distinct vdpbf16ps / vpdpbusd chains", () => {
    const asm = assembly("dot_peak", DOT_PEAK);
    // (the compiler may emit a loop more than once, e.g. inlined at two call sites: each copy must hold 24)
    for (const re of [/^vdpbf16ps\s/, /^vpdpbusd\s/]) {
      const loops = perLoop(asm, re);
      expect(loops.length, String(re)).toBeGreaterThan(0);
      expect(loops.every((n) => n === 24), `${re}: ${loops.join(", ")}`).toBe(true);
    }
  });

  it.skipIf(!has("fma"))("FmaPeak answers a rate in GFLOP/s, the lane count and the clock", async () => {
    const p = new FmaPeak(join(dir, "run"), 2);
    try {
      expect(await p.measure()).toBeGreaterThan(0);
      expect([8, 16]).toContain(p.lanes);
      const ghz = await p.clockGHz();
      expect(ghz).toBeGreaterThan(0.2);
      expect(ghz).toBeLessThan(10);
    } finally { p.close(); }
  });

  it.skipIf(!has("avx512_bf16"))("DotPeak answers a rate and the instruction (bf16 and int8)", async () => {
    for (const kind of ["bf16", "int8"] as const) {
      const p = new DotPeak(join(dir, "run"), 2, kind, 200_000);
      try {
        expect(await p.measure()).toBeGreaterThan(0);
        expect(p.instruction).toBe(has("amx_bf16") ? (kind === "bf16" ? "tdpbf16ps" : "tdpbssd") : kind === "bf16" ? "vdpbf16ps" : "vpdpbusd");
      } finally { p.close(); }
    }
  });

  it("NativeRead answers the GB/s of a pass", async () => {
    const p = new NativeRead(join(dir, "run"), 64 << 20, 1);
    try { expect(await p.measure()).toBeGreaterThan(0); } finally { p.close(); }
  });
});

describe("cpuLimits: measured once per machine, cached", () => {
  it("the first call measures (off the event loop; two at once share it) and writes the cache file; the next ones (and a new process's memo) read it", async () => {
    process.env.TSPTO_CACHE_DIR = mkdtempSync(join(dir, "cache-"));
    const before = limitsMeasurements();
    const [a, twin] = await Promise.all([cpuLimitsAsync(2), cpuLimitsAsync(2)]);
    expect(twin).toBe(a);
    expect(limitsMeasurements()).toBe(before + 1);
    const file = limitsCacheFile(2);
    expect(file.startsWith(join(process.env.TSPTO_CACHE_DIR, "limits"))).toBe(true);
    expect(statSync(file).mode & 0o077).toBe(0);
    const onDisk = JSON.parse(readFileSync(file, "utf8"));
    expect(onDisk.key).toMatchObject({ threads: 2 });
    expect(onDisk.key.cpu).toBe(a.cpu);
    expect(onDisk.limits).toEqual(a);
    expect(a.readGBs).toBeGreaterThan(0);
    expect(a.fmaGflops).toBeGreaterThan(0);
    expect(a.threads).toBe(2);
    const mtime = statSync(file).mtimeMs;

    expect(cpuLimits(2)).toBe(a); // the memo
    forgetLimitsMemo();           // as a new process: the file
    const b = cpuLimits(2);
    forgetLimitsMemo();
    expect(await cpuLimitsAsync(2)).toEqual(a);
    expect(b).toEqual(a);
    expect(limitsMeasurements()).toBe(before + 1);
    expect(statSync(file).mtimeMs).toBe(mtime);
    // the target hands out the same
    expect(getTarget("cpu").limits!(2)).toEqual(a);
    expect(limitsMeasurements()).toBe(before + 1);
  });

  it("a dot unit is reported only where the CPU has it (detected, never assumed), and the ISA path and thread count are part of the key", async () => {
    process.env.TSPTO_CACHE_DIR = mkdtempSync(join(dir, "cache-"));
    const before = limitsMeasurements();
    const best = await cpuLimitsAsync(1);
    if (has("avx512_bf16") || has("amx_bf16")) {
      expect(best.dotGflops).toBeGreaterThan(0);
      expect(best.dotInstruction).toMatch(/^(vdpbf16ps|tdpbf16ps)$/);
    } else {
      expect(best.dotGflops).toBeUndefined();
    }
    if (has("avx512_vnni") || has("amx_int8")) expect(best.dotInt8Gops).toBeGreaterThan(0);
    else expect(best.dotInt8Gops).toBeUndefined();
    expect(limitsMeasurements()).toBe(before + 1);
    if (has("avx512_vnni") && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq")) {
      // the avx512 path has VNNI but no bf16 dot instruction: its kernels cannot use one, nor can the roof
      process.env.TSPTO_CPU_ISA = "avx512";
      expect(limitsCacheFile(1)).not.toBe(limitsCacheFile(2));
      const p = await cpuLimitsAsync(1);
      expect(limitsMeasurements()).toBe(before + 2);
      expect(p.isa).toBe("avx512");
      expect(p.dotGflops).toBeUndefined();
      expect(p.dotInt8Gops).toBeGreaterThan(0);
    }
  });

  it("a corrupt cache file is measured again and replaced", async () => {
    process.env.TSPTO_CACHE_DIR = mkdtempSync(join(dir, "cache-"));
    const file = limitsCacheFile(1);
    writeFileSync(file, `{"format":"tspto-limits-1","key":{},"limits":{"readGBs":-1}}`);
    const before = limitsMeasurements();
    const l = await cpuLimitsAsync(1);
    expect(limitsMeasurements()).toBe(before + 1);
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, "utf8")).limits).toEqual(l);
  });

  it("errors: no compiler to build the measuring programs, a measuring program that fails", async () => {
    process.env.TSPTO_CACHE_DIR = mkdtempSync(join(dir, "cache-"));
    process.env.CXX = join(dir, "no-such-cxx");
    expect(() => cpuLimits(1)).toThrow(`[E_CXX] C++ compiler '${process.env.CXX}' could not be run (ENOENT)`);
    await expect(cpuLimitsAsync(1)).rejects.toThrow(`[E_CXX] C++ compiler '${process.env.CXX}' could not be run (ENOENT)`);
    expect(existsSync(limitsCacheFile(1))).toBe(false);
    expect(() => runOnce("/bin/false", [], ["go", "go"], "streaming read")).toThrow(
      "[E_LIMITS] measuring the machine's streaming read failed (exit 1, 0 of 2 answers)");
  });
});

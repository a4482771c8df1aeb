// The bench's FMA-peak program (bench/peers.ts) is the denominator of BENCHMARKS.md row 3b, so
// its flop count must match the instructions it runs: the compiled loop holds exactly 24
// vector FMAs per iteration (no chain merged or folded away by the compiler), and a run on
// 2 threads answers a rate and the lane count of the FMAs it used.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FMA_PEAK, FmaPeak } from "../../bench/peers.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-fma-peak-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const cpuFlags = (() => { try { return readFileSync("/proc/cpuinfo", "utf8"); } catch { return ""; } })();
const hasFma = /\bflags\s*:.*\bfma\b/.test(cpuFlags);

/** The vector FMA instructions of each loop of `run` (label ... backward jump to it). */
function fmaPerLoop(asm: string): number[] {
  const lines = asm.split("\n").map((l) => l.trim());
  const loops: number[] = [];
  lines.forEach((l, i) => {
    const m = /^j\w+\s+(\.L\w+)$/.exec(l);
    if (!m) return;
    const start = lines.lastIndexOf(`${m[1]}:`, i);
    if (start < 0) return;
    loops.push(lines.slice(start, i).filter((x) => /^vfmadd\d*ps\s/.test(x)).length);
  });
  return loops.filter((n) => n > 0);
}

describe("bench FMA peak", () => {
  it.skipIf(!hasFma)("the hot loop holds 24 distinct FMA chains (the count the rate assumes)", () => {
    const src = join(dir, "fma_peak.cc"), out = join(dir, "fma_peak.s");
    writeFileSync(src, FMA_PEAK);
    const r = spawnSync("c++", ["-std=c++17", "-O2", "-march=native", "-S", "-o", out, src], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const loops = fmaPerLoop(readFileSync(out, "utf8"));
    expect(loops).toEqual([24]);
  });

  it.skipIf(!hasFma)("answers a rate in GFLOP/s, the lane count and the clock", async () => {
    const p = new FmaPeak(join(dir, "run"), 2);
    try {
      const g = await p.measure();
      expect(g).toBeGreaterThan(0);
      expect([8, 16]).toContain(p.lanes);
      const ghz = await p.clockGHz();
      expect(ghz).toBeGreaterThan(0.2);
      expect(ghz).toBeLessThan(10);
    } finally { p.close(); }
  });
});

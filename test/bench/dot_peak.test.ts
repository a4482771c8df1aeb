// The bench's dot-product peak program (bench/isa.ts) is the denominator of BENCHMARKS.md rows
// 14a / 14c, so its op count must match the instructions it runs: the compiled bf16 loop holds
// exactly 24 vdpbf16ps and the int8 loop 24 vpdpbusd per iteration (none merged or folded away),
// and a run answers a rate and the instruction it used.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DOT_PEAK, DotPeak } from "../../bench/isa.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-dot-peak-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const info = (() => { try { return readFileSync("/proc/cpuinfo", "utf8"); } catch { return ""; } })();
const has = (f: string) => new RegExp(`\\bflags\\s*:.*\\b${f}\\b`).test(info);

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

describe("bench dot-product peak", () => {
  it.skipIf(!has("avx512_bf16") || !has("avx512_vnni"))("the hot loops hold 24 distinct vdpbf16ps / vpdpbusd chains (the count the rate assumes)", () => {
    const src = join(dir, "dot_peak.cc"), out = join(dir, "dot_peak.s");
    writeFileSync(src, DOT_PEAK);
    const r = spawnSync("c++", ["-std=c++17", "-O2", "-march=native", "-S", "-o", out, src], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const asm = readFileSync(out, "utf8");
    // (the compiler may emit a loop more than once, e.g. inlined at two call sites: each copy must hold 24)
    for (const re of [/^vdpbf16ps\s/, /^vpdpbusd\s/]) {
      const loops = perLoop(asm, re);
      expect(loops.length, String(re)).toBeGreaterThan(0);
      expect(loops.every((n) => n === 24), `${re}: ${loops.join(", ")}`).toBe(true);
    }
  });

  it.skipIf(!has("avx512_bf16"))("answers a rate and the instruction (bf16 and int8)", async () => {
    for (const kind of ["bf16", "int8"] as const) {
      const p = new DotPeak(join(dir, "run"), 2, kind, 200_000);
      try {
        expect(await p.measure()).toBeGreaterThan(0);
        expect(p.instruction).toBe(has("amx_bf16") ? (kind === "bf16" ? "tdpbf16ps" : "tdpbssd") : kind === "bf16" ? "vdpbf16ps" : "vpdpbusd");
      } finally { p.close(); }
    }
  });
});

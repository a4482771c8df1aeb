// The vectorizable fp32 exp of the C++ prelude (tspto_expf, used by tile.exp on float tiles)
// against Math.exp rounded to fp32: within 2 ulp over a sweep of all float bit patterns (every
// 997th), dense windows where the result overflows or turns subnormal, and the specials.
// Also checks that the compiler vectorizes a loop over it (-fopt-info-vec).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CXX_FLAGS } from "../../src/targets/cpu/index.js";
import { CPP_PRELUDE } from "../../src/codegen/cpp/prelude.js";
import { INCLUDE_DIR, cleanup, execAsync, tmpDir } from "./helpers.js";

afterAll(cleanup);

const MAIN = String.raw`
#include <cstdio>
#include <vector>
extern "C" __attribute__((noinline)) void tspto_test_vexp(const float* __restrict a, float* __restrict o, long n) {
  for (long i = 0; i < n; ++i) o[i] = tspto_expf(a[i]);
}
int main(int argc, char** argv) {
  FILE* f = std::fopen(argv[1], "rb");
  std::fseek(f, 0, SEEK_END); const long n = std::ftell(f) / 4; std::fseek(f, 0, SEEK_SET);
  std::vector<float> a(n), o(n);
  if (std::fread(a.data(), 4, n, f) != (size_t)n) return 2;
  std::fclose(f);
  tspto_test_vexp(a.data(), o.data(), n);
  FILE* g = std::fopen(argv[2], "wb");
  std::fwrite(o.data(), 4, n, g);
  std::fclose(g);
  return 0;
}
`;

/** The float's position on the number line (adjacent floats differ by 1; +0 and -0 both 0). */
const ord = (bits: number): number => (bits & 0x80000000 ? -(bits & 0x7fffffff) : bits);

describe("tspto_expf (C++ prelude)", () => {
  // the build's flags (AVX-512 and fused multiply-add on this machine), AVX2 + FMA (vectorized
  // with blends instead of masks), and neither (the multiply-then-add form: accuracy only)
  const configs = [["the build's flags", [], true], ["AVX2 + FMA", ["-mno-avx512f"], true], ["without FMA", ["-mno-avx512f", "-mno-fma"], false]] as const;
  for (const [what, extra, vectorizes] of configs) it(`is within 2 ulp of Math.exp (fp32-rounded)${vectorizes ? " and vectorizes" : ""} (${what})`, async () => {
    const dir = tmpDir("exp");
    const src = join(dir, "exp.cpp"), exe = join(dir, "exp");
    writeFileSync(src, CPP_PRELUDE + MAIN);
    const cxx = (process.env.CXX ?? "g++").split(/\s+/);
    const flags = CXX_FLAGS.filter((f) => f !== "-shared" && f !== "-fPIC");
    const r = await execAsync(cxx[0], [...cxx.slice(1), ...flags, ...extra, "-fopt-info-vec-optimized", "-I", INCLUDE_DIR, "-o", exe, src]);
    expect(r.status, r.stderr).toBe(0);
    if (vectorizes && /g\+\+|gcc|^c\+\+$/.test(cxx[0]) && !/clang/i.test(r.stderr)) {
      const line = MAIN.split("\n").findIndex((l) => l.includes("o[i] = tspto_expf")) + CPP_PRELUDE.split("\n").length;
      expect(r.stderr).toMatch(new RegExp(`exp\\.cpp:${line}:\\d+: optimized: loop vectorized`));
    }

    const xs: number[] = [];
    for (let b = 0; b < 0x80000000; b += 997) { xs.push(b, (b | 0x80000000) >>> 0); }
    const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
    const bitsOf = (x: number) => { f32[0] = x; return u32[0]; };
    for (const [lo, hi] of [[-104.5, -86.5], [88.5, 89.5], [-0.5, -0.375], [0.25, 0.3125]]) {
      for (let b = bitsOf(lo); ; b = lo < 0 ? b - 1 : b + 1) { // all floats of the window
        u32[0] = b; const x = f32[0];
        if (x > hi) break;
        xs.push(b);
        if (lo < 0 && (b & 0x7fffffff) === 0) break;
      }
    }
    xs.push(bitsOf(Infinity), bitsOf(-Infinity), 0x7fc00000, 0xffc00000, 0x7f800001, 0, 0x80000000, 1, 0x80000001);
    const inBits = Uint32Array.from(xs);
    const inF = new Float32Array(inBits.buffer);
    const fin = join(dir, "in.bin"), fout = join(dir, "out.bin");
    writeFileSync(fin, inBits);
    const run = await execAsync(exe, [fin, fout]);
    expect(run.status, run.stderr).toBe(0);
    const out = new Float32Array(readFileSync(fout).buffer.slice(0));
    expect(out.length).toBe(inF.length);
    const outBits = new Uint32Array(out.buffer), refF = new Float32Array(1), refBits = new Uint32Array(refF.buffer);
    let worst = 0, worstX = 0, bad = 0;
    for (let i = 0; i < inF.length; i++) {
      const x = inF[i];
      refF[0] = Math.exp(x);
      if (Number.isNaN(x)) { if (!Number.isNaN(out[i])) bad++; continue; }
      const d = Math.abs(ord(outBits[i]) - ord(refBits[0]));
      if (!(d <= 2)) bad++;
      if (d > worst) { worst = d; worstX = x; }
    }
    expect({ bad, worst, worstX }).toEqual({ bad: 0, worst: expect.any(Number), worstX: expect.any(Number) });
    expect(worst).toBeLessThanOrEqual(2);
    expect(inF.length).toBeGreaterThan(8_000_000);
    // the specials exactly
    const at = (b: number) => out[xs.lastIndexOf(b)];
    expect(at(bitsOf(Infinity))).toBe(Infinity);
    expect(at(bitsOf(-Infinity))).toBe(0);
    expect(at(0)).toBe(1);
    expect(Number.isNaN(at(0x7fc00000))).toBe(true);
  }, 120_000);
});

// The vectorizable fp32 tanh / sigmoid / erf / log / sin / cos / pow of the C++ prelude (used by
// the cpu formulas of those ops) against a float64 reference rounded to fp32 — the interp's own
// (Math.*, and interp's erf): each within its stated ulp bound (ACCURACY below, the table of
// docs/semantics.md) over a sweep of all float bit patterns (every 997th, both signs), dense
// windows around each function's branch points, pairs for pow (random bit patterns, integers,
// |a| near 1 with large b), and where the result is +-0, +-inf, NaN or +-1 exactly (the sign of a
// zero included). Built three ways, as the exp test: the build's flags (AVX-512 + FMA
// here), AVX2 + FMA, and without FMA; the first two must vectorize every loop (-fopt-info-vec).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CXX_FLAGS } from "../../src/targets/cpu/index.js";
import { CPP_PRELUDE } from "../../src/codegen/cpp/prelude.js";
import { erf as erfReference } from "../../src/ir/ops/math.js";
import { INCLUDE_DIR, cleanup, execAsync, mulberry32, tmpDir } from "./helpers.js";

afterAll(cleanup);

/** Max distance (in fp32 ulps, adjacent floats = 1) from the reference rounded to fp32. */
const ACCURACY = { tanh: 1, sigmoid: 1, erf: 1, log: 1, sin: 1, cos: 1, pow: 1 } as const;
const UNARY: { name: keyof typeof ACCURACY; fn: string; ref: (x: number) => number }[] = [
  { name: "tanh", fn: "tspto_tanhf", ref: Math.tanh },
  { name: "sigmoid", fn: "tspto_sigmoidf", ref: (x) => 1 / (1 + Math.exp(-x)) },
  { name: "erf", fn: "tspto_erff", ref: erfReference },
  { name: "log", fn: "tspto_logf", ref: Math.log },
  { name: "sin", fn: "tspto_sinf", ref: Math.sin },
  { name: "cos", fn: "tspto_cosf", ref: Math.cos },
];

// one loop per function, each on its own line (the vectorizer's report names the line)
const LOOPS = [
  ...UNARY.map((u, k) => `extern "C" __attribute__((noinline)) void tspto_test_${u.name}(const float* __restrict a, float* __restrict o, long n) { for (long i = 0; i < n; ++i) o[i] = ${u.fn}(a[i]); }  // loop ${k}`),
  `extern "C" __attribute__((noinline)) void tspto_test_pow(const float* __restrict a, const float* __restrict b, float* __restrict o, long n) { for (long i = 0; i < n; ++i) o[i] = (float)tspto_pow_d((double)a[i], (double)b[i]); }`,
  `extern "C" __attribute__((noinline)) void tspto_test_pows(const float* __restrict a, double b, float* __restrict o, long n) { for (long i = 0; i < n; ++i) o[i] = (float)tspto_pow_d((double)a[i], b); }`,
];
const MAIN = String.raw`
#include <cstdio>
#include <vector>
${LOOPS.join("\n")}
static std::vector<float> slurp(const char* path) {
  FILE* f = std::fopen(path, "rb");
  std::fseek(f, 0, SEEK_END); const long n = std::ftell(f) / 4; std::fseek(f, 0, SEEK_SET);
  std::vector<float> v(n);
  if (std::fread(v.data(), 4, n, f) != (size_t)n) std::exit(2);
  std::fclose(f);
  return v;
}
static void spill(const char* path, const std::vector<float>& v) { FILE* g = std::fopen(path, "wb"); std::fwrite(v.data(), 4, v.size(), g); std::fclose(g); }
// argv: unary inputs, unary outputs (${UNARY.length} x n), pow inputs (a[m] then b[m]), pow outputs (m, then m with b = 0.75 as a scalar)
int main(int argc, char** argv) {
  const std::vector<float> x = slurp(argv[1]);
  const long n = (long)x.size();
  std::vector<float> o(${UNARY.length} * n);
${UNARY.map((u, k) => `  tspto_test_${u.name}(x.data(), o.data() + ${k} * n, n);`).join("\n")}
  spill(argv[2], o);
  const std::vector<float> ab = slurp(argv[3]);
  const long m = (long)ab.size() / 2;
  std::vector<float> p(2 * m);
  tspto_test_pow(ab.data(), ab.data() + m, p.data(), m);
  tspto_test_pows(ab.data(), 0.75, p.data() + m, m);
  spill(argv[4], p);
  return 0;
}
`;

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
const bitsOf = (x: number) => { f32[0] = x; return u32[0]; };
const floatOf = (b: number) => { u32[0] = b; return f32[0]; };
/** The float's position on the number line (adjacent floats differ by 1; +0 and -0 both 0). */
const ord = (bits: number): number => (bits & 0x80000000 ? -(bits & 0x7fffffff) : bits);
/** ulps between a result and the reference (rounded to fp32); NaN must meet NaN. */
function dist(got: number, want: number): number {
  const w = Math.fround(want);
  if (Number.isNaN(w) || Number.isNaN(got)) return Number.isNaN(w) && Number.isNaN(got) ? 0 : Infinity;
  return Math.abs(ord(bitsOf(got)) - ord(bitsOf(w)));
}

/** A result that must come out exactly: +-0, +-inf, NaN, +-1. */
const exactValue = (w: number) => w === 0 || !Number.isFinite(w) || Math.abs(w) === 1;
const show = (x: number) => (Object.is(x, -0) ? "-0" : String(x));
const sameValue = (a: number, b: number) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
/** Every float between lo and hi (same sign), as bit patterns. */
function window(lo: number, hi: number): number[] {
  const out: number[] = [];
  const neg = lo < 0;
  for (let b = bitsOf(neg ? hi : lo); ; b++) {
    const x = floatOf(b);
    if (neg ? x < lo : x > hi) break;
    out.push(b);
  }
  return out;
}
const SPECIALS = [0, -0, Infinity, -Infinity, NaN, 1.4e-45, -1.4e-45, 1.1754942e-38, -1.1754942e-38, 1.17549435e-38, -1.17549435e-38, 3.4028234663852886e38, -3.4028234663852886e38, 1, -1, 0.5, -0.5];

function unaryInputs(): Uint32Array {
  const xs: number[] = [];
  for (let b = 0; b < 0x80000000; b += 997) xs.push(b, (b | 0x80000000) >>> 0);
  // the branch points of each function, every float around them
  for (const [lo, hi] of [[0.62, 0.63], [-0.63, -0.62], [0.999, 1.001], [-1.001, -0.999], [3.9, 4.1], [0.7, 0.7143], [1.41, 1.4175], [0.9999, 1.0001],
    [524000, 525000], [-525000, -524000], [0.785, 0.786], [1.5707, 1.5709], [3.1415, 3.1417], [-1e-3, -9.99e-4]] as const) for (const b of window(lo, hi)) xs.push(b);
  for (let b = 0x00700000; b < 0x00900000; b += 7) xs.push(b);     // across the subnormal boundary
  for (const s of SPECIALS) xs.push(bitsOf(s));
  return Uint32Array.from(xs);
}

function powInputs(): { a: Float32Array; b: Float32Array; grid: number } {
  const A = [0, -0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 10, -10, Infinity, -Infinity, NaN, 1.4e-45, -1.4e-45, 3.4028234663852886e38, -3.4028234663852886e38, 1.0000001, 0.99999994];
  const B = [0, -0, 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.5, -1.5, Infinity, -Infinity, NaN, 16777216, 16777218, -16777218, 8388609, -8388609, 1e-10, 1e10, 0.3, 127.5, -149.5, 128, -150];
  const a: number[] = [], b: number[] = [];
  for (const x of A) for (const y of B) { a.push(x); b.push(y); }
  const grid = a.length;
  const rnd = mulberry32(2024);
  for (let i = 0; i < 1_500_000; i++) {
    const kind = i % 4;
    if (kind === 0) { a.push(floatOf(Math.floor(rnd() * 2 ** 32))); b.push(floatOf(Math.floor(rnd() * 2 ** 32))); }
    else if (kind === 1) { a.push(floatOf(Math.floor(rnd() * 2 ** 32))); b.push(Math.floor(rnd() * 41) - 20); }
    else if (kind === 2) { a.push(floatOf(Math.floor(rnd() * 2 ** 31))); b.push((rnd() - 0.5) * 8); }
    else { a.push(1 + (rnd() - 0.5) * 1e-3); b.push((rnd() - 0.5) * 2e5); }
  }
  return { a: Float32Array.from(a), b: Float32Array.from(b), grid };
}

describe("vectorizable tanh / sigmoid / erf / log / sin / cos / pow (C++ prelude)", () => {
  const xs = unaryInputs();
  const xf = new Float32Array(xs.buffer);
  const pw = powInputs();
  // the references, computed once for the three builds (rounded to fp32)
  // (one function's at a time, each on a turn of its own: all six at once held the event loop 15 s on a slow machine)
  const refs: (Float32Array | undefined)[] = [];
  let powRefs: [Float32Array, Float32Array] | null = null;
  const unaryRef = (k: number) => (refs[k] ??= Float32Array.from(xf, (x) => UNARY[k].ref(x)));
  const powRef = () => (powRefs ??= [Float32Array.from(pw.a, (a, i) => Math.pow(a, pw.b[i])), Float32Array.from(pw.a, (a) => Math.pow(a, 0.75))]);
  const configs = [["the build's flags", [], true], ["AVX2 + FMA", ["-mno-avx512f"], true], ["without FMA", ["-mno-avx512f", "-mno-fma"], false]] as const;
  for (const [what, extra, vectorizes] of configs) {
    it(`each within its ulp bound of the float64 reference${vectorizes ? ", vectorized" : ""} (${what})`, async () => {
      const dir = tmpDir("math");
      const src = join(dir, "math.cpp"), exe = join(dir, "math");
      writeFileSync(src, CPP_PRELUDE + MAIN);
      const cxx = (process.env.CXX ?? "g++").split(/\s+/);
      const flags = CXX_FLAGS.filter((f) => f !== "-shared" && f !== "-fPIC");
      const r = await execAsync(cxx[0], [...cxx.slice(1), ...flags, ...extra, "-fopt-info-vec-optimized", "-I", INCLUDE_DIR, "-o", exe, src]);
      expect(r.status, r.stderr).toBe(0);
      if (vectorizes && /g\+\+|gcc|^c\+\+$/.test(cxx[0]) && !/clang/i.test(r.stderr)) {
        const lines = (CPP_PRELUDE + MAIN).split("\n");
        for (const loop of LOOPS) {
          const name = /tspto_test_(\w+)/.exec(loop)![1], line = lines.indexOf(loop) + 1;
          expect(r.stderr, `the ${name} loop (line ${line})`).toMatch(new RegExp(`math\\.cpp:${line}:\\d+: optimized: loop vectorized`));
        }
      }
      const files = ["x.bin", "y.bin", "ab.bin", "p.bin"].map((f) => join(dir, f));
      writeFileSync(files[0], xs);
      const ab = new Float32Array(2 * pw.a.length);
      ab.set(pw.a); ab.set(pw.b, pw.a.length);
      writeFileSync(files[2], ab);
      const run = await execAsync(exe, files);
      expect(run.status, run.stderr).toBe(0);
      const out = new Float32Array(readFileSync(files[1]).buffer.slice(0));
      expect(out.length).toBe(UNARY.length * xf.length);
      const n = xf.length;
      for (const [k, u] of UNARY.entries()) {
        await tick(); // long synchronous loops: let the worker answer vitest in between
        const ref = unaryRef(k);
        await tick();
        let worst = 0, worstX = 0, bad = 0;
        for (let i = 0; i < n; i++) {
          const d = dist(out[k * n + i], ref[i]);
          if (d > ACCURACY[u.name]) bad++;
          if (d > worst) { worst = d; worstX = xf[i]; }
        }
        expect({ fn: u.name, bad, worst, worstX }).toEqual({ fn: u.name, bad: 0, worst: expect.any(Number), worstX: expect.any(Number) });
        // zeros, infinities and NaN exactly (the sign of a zero included); the others of SPECIALS are in the sweep
        for (const s of SPECIALS) {
          const got = out[k * n + xs.lastIndexOf(bitsOf(s))], want = Math.fround(u.ref(s));
          if (exactValue(want) && !sameValue(got, want)) expect.fail(`${u.name}(${show(s)}): got ${show(got)}, want ${show(want)}`);
        }
      }
      expect(n).toBeGreaterThan(5_500_000);
      await tick();
      // pow: the grid of special operands exactly, the rest within the bound; and with a scalar exponent
      const p = new Float32Array(readFileSync(files[3]).buffer.slice(0));
      const m = pw.a.length;
      let bad = 0, worst = 0;
      for (let i = 0; i < m; i++) {
        const want = powRef()[0][i];
        if (i < pw.grid && exactValue(want) && !sameValue(p[i], want)) expect.fail(`pow(${show(pw.a[i])}, ${show(pw.b[i])}): got ${show(p[i])}, want ${show(want)}`);
        const d = Math.max(dist(p[i], want), dist(p[m + i], powRef()[1][i]));
        if (d > ACCURACY.pow) bad++;
        worst = Math.max(worst, d);
      }
      expect({ bad, worst }).toEqual({ bad: 0, worst: expect.any(Number) });
    }, 300_000);
  }
});

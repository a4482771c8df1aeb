// Section 14 ("amx") of the bench: the CPU's dot-product / matrix units (issue 21). The peak of
// the best bf16 and int8 dot instruction this machine has (a register-only loop on all cores:
// tdpbf16ps / tdpbssd where AMX is usable, else vdpbf16ps / vpdpbusd), bf16 matmul at 2048³ and
// 4096³ as a fraction of the bf16 peak and against onnxruntime-node's fp32 MatMul on the same
// shapes, int8 matmul as a fraction of the int8 peak; contenders alternate within each round.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { pl, ChipWorker, RunConfig, randn, tensor, zeros } from "../src/index.js";
import { build, onnxModel, type Ort } from "./peers.js";
import { cpuFlags, cpuIsa } from "../src/targets/cpu/toolchain.js";

// A register-only loop of independent dot instructions on `threads` threads: 24 accumulators
// (vdpbf16ps / vpdpbusd: 24 zmm chains, their inputs opaque to the compiler every iteration) or,
// with AMX, 4 tile accumulators fed by 4 operand tiles loaded once (tdpbf16ps / tdpbssd: 16 x 16
// outputs x 32 bf16 pairs... each). Answers GOPS (bf16: flops; int8: integer multiply-adds x 2).
// test/bench/dot_peak.test.ts counts the instructions of the compiled loop.
export const DOT_PEAK = String.raw`
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
static const int CHAINS = 24;
static volatile int seeds[CHAINS + 2];
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#if defined(__AVX512BF16__)
static double run_bf16(long iters) {
  __m512i x = _mm512_set1_epi32(seeds[CHAINS]), y = _mm512_set1_epi32(seeds[CHAINS + 1]);
#define D(i) __m512 a##i = _mm512_set1_ps((float)seeds[3 * i]), b##i = _mm512_set1_ps((float)seeds[3 * i + 1]), c##i = _mm512_set1_ps((float)seeds[3 * i + 2]);
  R8(D)
#undef D
  for (long it = 0; it < iters; ++it) {
#define F(i) a##i = _mm512_dpbf16_ps(a##i, (__m512bh)x, (__m512bh)y); b##i = _mm512_dpbf16_ps(b##i, (__m512bh)x, (__m512bh)y); c##i = _mm512_dpbf16_ps(c##i, (__m512bh)x, (__m512bh)y);
    R8(F)
#undef F
    __asm__ volatile("" : "+v"(x), "+v"(y));
  }
  float s = 0;
#define S(i) s += _mm512_cvtss_f32(a##i) + _mm512_cvtss_f32(b##i) + _mm512_cvtss_f32(c##i);
  R8(S)
#undef S
  return s;
}
#endif
#if defined(__AVX512VNNI__)
static double run_int8(long iters) {
  __m512i x = _mm512_set1_epi32(seeds[CHAINS]), y = _mm512_set1_epi32(seeds[CHAINS + 1]);
#define D(i) __m512i a##i = _mm512_set1_epi32(seeds[3 * i]), b##i = _mm512_set1_epi32(seeds[3 * i + 1]), c##i = _mm512_set1_epi32(seeds[3 * i + 2]);
  R8(D)
#undef D
  for (long it = 0; it < iters; ++it) {
#define F(i) a##i = _mm512_dpbusd_epi32(a##i, x, y); b##i = _mm512_dpbusd_epi32(b##i, x, y); c##i = _mm512_dpbusd_epi32(c##i, x, y);
    R8(F)
#undef F
    __asm__ volatile("" : "+v"(x), "+v"(y));
  }
  long s = 0;
#define S(i) s += _mm512_cvtsi512_si32(a##i) + _mm512_cvtsi512_si32(b##i) + _mm512_cvtsi512_si32(c##i);
  R8(S)
#undef S
  return (double)s;
}
#endif
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AMX_INT8__)
struct alignas(64) Cfg { unsigned char palette, start; unsigned char res[14]; unsigned short colsb[16]; unsigned char rows[16]; };
static bool amx_ok() {
#if defined(__linux__)
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
  return false;
#endif
}
// 4 accumulator tiles (0-3) x 4 independent products per iteration from operand tiles 4-7;
// iters / 8 iterations (~10 ms on one core: long enough that the unit is at its full rate,
// which a 1 ms burst was not: bursts of that length measured anywhere from 1/3 to all of it)
static double run_amx(long iters, bool bf16) {
  Cfg c; std::memset(&c, 0, sizeof c); c.palette = 1;
  for (int t = 0; t < 8; ++t) { c.colsb[t] = 64; c.rows[t] = 16; }
  __asm__ volatile("" : : "m"(c) : "memory");  // g++ 12 may drop stores ldtilecfg reads (prelude_dot.ts)
  _tile_loadconfig(&c);
  alignas(64) static thread_local unsigned char buf[1024];
  for (int i = 0; i < 1024; ++i) buf[i] = (unsigned char)(seeds[i % CHAINS] & 0x3f);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, buf, 64); _tile_loadd(5, buf, 64); _tile_loadd(6, buf, 64); _tile_loadd(7, buf, 64);
  if (bf16) for (long it = 0; it < iters; ++it) { _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7); }
  else for (long it = 0; it < iters; ++it) { _tile_dpbssd(0, 4, 6); _tile_dpbssd(1, 4, 7); _tile_dpbssd(2, 5, 6); _tile_dpbssd(3, 5, 7); }
  _tile_stored(0, buf, 64);
  _tile_release();
  return buf[0];
}
#endif
int main(int argc, char** argv) {
  const int threads = std::atoi(argv[1]);
  const long iters = std::atol(argv[2]);
  const bool bf16 = std::strcmp(argv[3], "bf16") == 0;
  for (int i = 0; i < CHAINS + 2; ++i) seeds[i] = 0x3f803f80 + i;  // bf16 pairs (1.0, 1.0 + i ulp) / int8 quads
  bool amx = false;
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AMX_INT8__)
  amx = amx_ok();
#endif
  std::string line;
  volatile double sink = 0;
  while (std::getline(std::cin, line)) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    std::vector<double> out(threads);
    // ops per instruction: vdpbf16ps 16 lanes x 2 pairs x 2; vpdpbusd 16 x 4 x 2;
    // tdpbf16ps 16 x 16 x 32 x 2 (16 rows x 16 cols x 16 pairs x 2 products x 2); tdpbssd 16 x 16 x 64 x 2
    double per = 0; long n = iters; int ins = CHAINS;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AMX_INT8__)
      if (amx) { out[t] = run_amx(iters / 8, bf16); return; }
#endif
#if defined(__AVX512BF16__)
      if (bf16) { out[t] = run_bf16(iters); return; }
#endif
#if defined(__AVX512VNNI__)
      if (!bf16) { out[t] = run_int8(iters); return; }
#endif
    });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (double v : out) sink = sink + v;
    if (amx) { per = bf16 ? 16.0 * 16 * 32 * 2 : 16.0 * 16 * 64 * 2; n = iters / 8; ins = 4; }
    else per = bf16 ? 16.0 * 2 * 2 : 16.0 * 4 * 2;
    std::printf("%.3f %s\n", per * ins * (double)n * threads / s / 1e9, amx ? (bf16 ? "tdpbf16ps" : "tdpbssd") : (bf16 ? "vdpbf16ps" : "vpdpbusd"));
    std::fflush(stdout);
  }
  return 0;
}
`;

/** Flags of the peak program: -march=native, plus AMX where the CPU has it. */
function peakFlags(): string[] {
  const amx = /\bamx_tile\b/.test(cpuFlags()) && /\bamx_bf16\b/.test(cpuFlags()) && /\bamx_int8\b/.test(cpuFlags());
  return ["-std=c++17", "-O2", "-march=native", ...(amx ? ["-mamx-tile", "-mamx-bf16", "-mamx-int8"] : [])];
}

/** The dot peak on `threads` threads (`kind`: bf16 or int8): `measure()` gives GOPS of one burst and the instruction. */
export class DotPeak {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: ((l: string) => void)[] = [];
  instruction = "";
  constructor(dir: string, threads: number, kind: "bf16" | "int8", iters = 2_000_000) {
    const exe = build(dir, `dot_peak_${kind}`, DOT_PEAK, peakFlags());
    this.child = spawn(exe, [String(threads), String(iters), kind]);
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on("line", (l) => this.waiting.shift()?.(l));
  }
  async measure(): Promise<number> {
    const l = await new Promise<string>((resolve) => { this.waiting.push(resolve); this.child.stdin.write("go\n"); });
    const [g, ins] = l.split(" ");
    this.instruction = ins;
    return Number(g);
  }
  close(): void { this.child.stdin.end(); this.child.kill(); }
}

/** A [n, n] @ [n, n] matmul of `dtype` inputs: one task per [TM, TN] output tile, K in KT steps. */
function matmulN(n: number, dtype: "bfloat16" | "int8") {
  const N = n, TMS = 256, TNS = 256, KS = dtype === "int8" ? 256 : 128;
  void dtype;
  return pl.jit(function dotMatmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
    for (const i of pl.range(0, N, TMS)) {
      for (const j of pl.range(0, N, TNS)) {
        pl.at(pl.Level.CORE_GROUP, () => {
          let acc = pl.matmul(pl.load(a, [i, 0], [TMS, KS]), pl.load(b, [0, j], [KS, TNS]));
          for (const k of pl.range(KS, N, KS)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [TMS, KS]), pl.load(b, [k, j], [KS, TNS]));
          pl.store(acc, [i, j], c);
        });
      }
    }
    return c;
  }, { scope: { N, TMS, TNS, KS } });
}

export interface IsaRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null; limit?: string }

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const k = s.length; return k % 2 ? s[(k - 1) / 2] : (s[k / 2 - 1] + s[k / 2]) / 2; };
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

/** Section 14: rows and notes. */
export async function isaBench(work: string, ort: Ort | null, rounds: number, log: (s: string) => void, ortOpts: unknown): Promise<{ rows: IsaRow[]; notes: string[] }> {
  log("14. amx: the dot-product / matrix units");
  const rows: IsaRow[] = [], notes: string[] = [];
  const isa = cpuIsa();
  const flags = cpuFlags().split(/\s+/);
  const amxHere = ["amx_tile", "amx_bf16", "amx_int8"].every((f) => flags.includes(f));
  const threads = availableParallelism();
  const [l0] = loadavg();
  if (isa !== "amx" && isa !== "avx512bf16") {
    rows.push({ id: "14", what: "bf16 / int8 dot-product units", tspto: "", peer: `ISA path ${isa ?? "none"}`, result: "skipped", goal: "—", met: null });
    return { rows, notes };
  }
  const bfPeak = new DotPeak(join(work, "dotpeak"), threads, "bf16");
  const i8Peak = new DotPeak(join(work, "dotpeak"), threads, "int8");
  const w = new ChipWorker(new RunConfig());
  const res: Record<string, { ms: number[]; peak: number[]; ort: number[] }> = {};
  const gops = (n: number, ms: number) => (2 * n ** 3) / (ms / 1e3) / 1e9;
  let maxErr = 0;
  for (const [n, dtype] of [[2048, "bfloat16"], [4096, "bfloat16"], [2048, "int8"], [4096, "int8"]] as const) {
    const shape = [n, n];
    const f = matmulN(n, dtype);
    let A, B, C;
    if (dtype === "bfloat16") { A = randn(shape, { seed: 1, dtype }); B = randn(shape, { seed: 2, dtype }); C = zeros(shape); }
    else {
      const a = new Int8Array(n * n), b = new Int8Array(n * n);
      for (let i = 0; i < n * n; i++) { a[i] = ((i * 7919) % 255) - 127; b[i] = ((i * 104729) % 255) - 127; }
      A = tensor(a, { shape, dtype }); B = tensor(b, { shape, dtype }); C = zeros(shape, "int32");
    }
    const h = w.register(f.compile(A, B, C));
    const ra = w.allocTensor(shape, dtype, { init: A }), rb = w.allocTensor(shape, dtype, { init: B }), rc = w.allocTensor(shape, dtype === "int8" ? "int32" : "float32");
    let sess: Ort = null, feeds: Ort = null;
    if (ort && dtype === "bfloat16") {
      // onnxruntime's fp32 MatMul on the same values (bf16 widened to fp32)
      const fa = new Float32Array(n * n), fb = new Float32Array(n * n);
      const u = new Uint32Array(fa.buffer), v = new Uint32Array(fb.buffer);
      (A.data as Uint16Array).forEach((x, i) => { u[i] = x << 16; });
      (B.data as Uint16Array).forEach((x, i) => { v[i] = x << 16; });
      sess = await ort.InferenceSession.create(onnxModel("MatMul", [{ name: "a", shape }, { name: "b", shape }], shape), ortOpts);
      feeds = { a: new ort.Tensor("float32", fa, shape), b: new ort.Tensor("float32", fb, shape) };
      h(ra, rb, rc);
      w.copyFrom(C, rc, rc.nbytes);
      const ref = (await sess.run(feeds)).y.data as Float32Array;
      const got = C.data as Float32Array;
      for (let i = 0; i < n * n; i += 997) maxErr = Math.max(maxErr, Math.abs(got[i] - ref[i]) / (1 + Math.abs(ref[i])));
    }
    const key = `${dtype}${n}`;
    res[key] = { ms: [], peak: [], ort: [] };
    const peak = dtype === "int8" ? i8Peak : bfPeak;
    const R = n >= 4096 ? Math.max(3, Math.min(rounds, 5)) : rounds;
    for (let r = -1; r < R; r++) {
      let s = nowMs(); h(ra, rb, rc); const t = nowMs() - s;
      let o = NaN;
      if (sess) { s = nowMs(); await sess.run(feeds); o = nowMs() - s; }
      const pk = await peak.measure();
      if (r >= 0) { res[key].ms.push(t); res[key].peak.push(pk); if (sess) res[key].ort.push(o); }
    }
    if (sess) await sess.release();
    w.freeTensor(ra); w.freeTensor(rb); w.freeTensor(rc);
    const m = median(res[key].ms), pk = median(res[key].peak), label = dtype === "int8" ? "int8" : "bf16";
    const goal = dtype === "int8" ? 0.5 : 0.6, frac = gops(n, m) / pk;
    const unit = dtype === "int8" ? "GOPS" : "GFLOP/s";
    rows.push({ id: `14${dtype === "int8" ? "c" : "a"}${n}`, what: `${label} matmul ${n}³ (${dtype === "int8" ? "int32 out" : "fp32 accumulation"}) as a fraction of the ${peak.instruction} peak (${threads} threads)`,
      tspto: `${fmt(gops(n, m), 1)} ${unit} (${fmt(m, 1)} ms)`, peer: `${fmt(pk, 1)} ${unit}`, result: fmt(frac), goal: n === 4096 ? `≥ ${goal}` : "—", met: n === 4096 ? frac >= goal : null });
    if (sess) {
      const mo = median(res[key].ort);
      rows.push({ id: `14b${n}`, what: `bf16 matmul ${n}³ vs onnxruntime-node fp32 MatMul (same values)`, tspto: `${fmt(gops(n, m), 1)} GFLOP/s (${fmt(m, 1)} ms)`, peer: `${fmt(gops(n, mo), 1)} GFLOP/s (${fmt(mo, 1)} ms)`, result: `${fmt(mo / m)}×`, goal: "—", met: null });
    }
    log(`  ${key}: ${fmt(gops(n, m), 1)} ${unit}, peak ${fmt(pk, 1)}`);
  }
  w.close();
  bfPeak.close(); i8Peak.close();
  let mhz = NaN;
  try { mhz = Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1]); } catch { /* not linux */ }
  const [l1] = loadavg();
  const amxPeak = bfPeak.instruction === "tdpbf16ps";
  const peakText = amxPeak
    ? `a register-only loop of 4 independent tile accumulators fed by 4 operand tiles (tdpbf16ps / tdpbssd, after arch_prctl(ARCH_REQ_XCOMP_PERM)) on ${threads} threads, ops = 16 rows × 16 columns × 32 (bf16) or 64 (int8) products × 2 per instruction; the cross-check bound at the ${fmt(mhz, 0)} MHz /proc/cpuinfo reports, one tdpbf16ps per 16 cycles per core (Intel's figure): bf16 ${fmt(threads * 1024 * mhz / 1e3, 1)} GFLOP/s, int8 ${fmt(threads * 2048 * mhz / 1e3, 1)} GOPS`
    : `a register-only loop of 24 independent ${bfPeak.instruction} / ${i8Peak.instruction} chains on ${threads} threads (test/bench/dot_peak.test.ts counts 24 in the compiled loop), ops = 16 lanes × 2 pairs × 2 (bf16) or × 4 × 2 (int8) per instruction; the cross-check bound at the ${fmt(mhz, 0)} MHz /proc/cpuinfo reports, one 512-bit dot instruction per cycle per core: bf16 ${fmt(threads * 64 * mhz / 1e3, 1)} GFLOP/s, int8 ${fmt(threads * 128 * mhz / 1e3, 1)} GOPS`;
  const kernels = amxPeak
    ? "packed per step (vectorized) into AMX tiles, 2 × 2 accumulator tiles per 32 × 32 block, whole blocks loading and storing their accumulators straight from the output (prelude_dot.ts)"
    : "packed per step into the pair / quad layout of the instruction (prelude_dot.ts)";
  notes.push(`14. ISA path ${isa}${amxHere ? "" : "; this CPU has no AMX (amx_tile / amx_bf16 / amx_int8 absent from its flags), so the AMX rows (tdpbf16ps / tdpbssd peaks, AMX matmuls) are unmeasured here: the peaks are those of vdpbf16ps and vpdpbusd"}. Peaks: ${peakText}; measured in the same rounds as the matmuls. Matmuls: one task per [256, 256] output tile, K in steps of 128 (bf16) / 256 (int8) accumulating in place; the tiles are loaded into scratch as fp32 (bf16) or int8 and ${kernels}. bf16 vs onnxruntime: max relative difference ${maxErr.toExponential(2)} (${amxPeak ? "AMX sums each instruction's 32 products in its own order" : "bf16 sums in k order"}, denormals flushed; onnxruntime's fp32 blocked sums in its own order). Load average ${fmt(l0)} at the start of the section, ${fmt(l1)} at its end.`);
  return { rows, notes };
}

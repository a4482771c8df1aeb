// The machine's limits for the roofline (src/runtime/roofline.ts): the streaming read bandwidth,
// the fp32 FMA peak and, where the CPU has them, the bf16 and int8 dot-product peaks, each
// measured by a small native program on every core thread of a device, once per machine:
// cached under the user's tspto cache root (<cache root>/limits/<key>.json), keyed by the CPU
// model, its flags, the ISA path, the thread count and the measuring programs' text. The bench
// (bench/peers.ts, isa.ts, gpt2/bench.ts) runs the same programs, long-lived, to measure the
// peaks in the same rounds as what it compares with them.
//
// Each program is built with the flags of this process's ISA path (isa.ts: $TSPTO_CPU_ISA, else
// the best the machine has), so a roof is what tspto's own kernels can reach on the path they are
// built for. A dot-product unit is detected, never assumed: the program is built with the path's
// flags and says which instruction it ran, or "none" (then the limit is absent).
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { TsptoCompileError, TsptoRuntimeError } from "../../ir/index.js";
import { privateDir, readTextInside, sha256, writeAtomic } from "../../artifact/index.js";
import type { MachineLimits } from "../target.js";
import { isaFlags } from "./isa.js";
import { CXX_FLAGS, abiIncludeDir, cpuFlags, cpuIsa, toolchain } from "./toolchain.js";
import { runSteps, runStepsAsync, type Steps } from "../steps.js";

// ------------------------------------------------------------------ the FMA peak
// A register-only loop of independent fused multiply-adds (24 vector accumulators, no memory
// traffic) on `threads` threads at once: the arithmetic peak matmul is measured against.
// Widest FMA the build flags allow: AVX-512 (16 lanes), else AVX2 FMA (8), else scalar fmaf.
// The flop count is lanes x 2 x 24 accumulators x iterations x threads, so the 24 chains must
// really be 24 FMAs per iteration: their start values come from a volatile array (distinct and
// unknown to the compiler: an earlier version started them at 1e-3*i, 2e-3*i, 3e-3*i, and the
// compiler merged the chains with equal start values, 16 FMAs per iteration counted as 24, a
// peak 1.5x too high), and an empty asm statement makes x and y opaque every iteration.
// test/targets/cpu/limits.test.ts compiles this source and counts the FMAs in the loop.
// "clock" answers the core clock in GHz: a chain of dependent 64-bit imuls (3 cycles each on
// x86-64 cores since Sandy Bridge / Zen) on one thread, for the analytic bound in the notes.
export const FMA_PEAK = String.raw`
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
typedef __m512 V; static const int LANES = 16;
static inline V fma_(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
static inline V set1(float x) { return _mm512_set1_ps(x); }
static inline float first(V v) { return _mm512_cvtss_f32(v); }
#elif defined(__FMA__)
typedef __m256 V; static const int LANES = 8;
static inline V fma_(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
static inline V set1(float x) { return _mm256_set1_ps(x); }
static inline float first(V v) { return _mm256_cvtss_f32(v); }
#else
typedef float V; static const int LANES = 1;
static inline V fma_(V a, V b, V c) { return std::fma(a, b, c); }
static inline V set1(float x) { return x; }
static inline float first(V v) { return v; }
#endif
static const int CHAINS = 24;
static volatile float seeds[CHAINS + 2];
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
static float run(long iters) {
  V x = set1(seeds[CHAINS]), y = set1(seeds[CHAINS + 1]);
#define D(i) V a##i = set1(seeds[3 * i]), b##i = set1(seeds[3 * i + 1]), c##i = set1(seeds[3 * i + 2]);
  R8(D)
  for (long it = 0; it < iters; ++it) {
#define F(i) a##i = fma_(a##i, x, y); b##i = fma_(b##i, x, y); c##i = fma_(c##i, x, y);
    R8(F)
    __asm__ volatile("" : "+x"(x), "+x"(y));
  }
  float s = 0;
#define S(i) s += first(a##i) + first(b##i) + first(c##i);
  R8(S)
  return s;
}
// thread CPU time, not wall time: time the thread spent preempted by other processes is not
// counted; the best of 5 runs of 60M imuls
static double thread_seconds() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double clock_ghz() {
  const long n = 60000000L;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    long x = 3, y = 1;
    const double t0 = thread_seconds();
    for (long i = 0; i < n; i += 8) {
      __asm__ volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                       "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0" : "+r"(x) : "r"(y));
    }
    const double s = thread_seconds() - t0;
    if (s < best) best = s;
  }
  return 3.0 * n / best / 1e9;
}
int main(int argc, char** argv) {
  const int threads = std::atoi(argv[1]);
  const long iters = std::atol(argv[2]);
  for (int i = 0; i < CHAINS; ++i) seeds[i] = 1e-3f * (float)(i + 1);
  seeds[CHAINS] = 0.999f; seeds[CHAINS + 1] = 1e-4f;
  std::string line;
  volatile float sink = 0;
  while (std::getline(std::cin, line)) {
    if (line == "clock") { std::printf("%.3f\n", clock_ghz()); std::fflush(stdout); continue; }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    std::vector<float> out(threads);
    std::vector<double> cpu(threads);
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { const double c0 = thread_seconds(); out[t] = run(iters); cpu[t] = thread_seconds() - c0; });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : out) sink = sink + v;
    // the rate by wall time, the lanes, and the rate by each thread's CPU time (what the cores
    // do while they run it: time other processes took from a thread is not counted)
    double by_cpu = 0;
    for (double c : cpu) by_cpu += 2.0 * LANES * CHAINS * iters / c / 1e9;
    std::printf("%.3f %d %.3f\n", 2.0 * LANES * CHAINS * iters * threads / s / 1e9, LANES, by_cpu);
    std::fflush(stdout);
  }
  return 0;
}
`;

// ------------------------------------------------------------------ the dot-product peaks
// A register-only loop of independent dot instructions on `threads` threads: 24 accumulators
// (vdpbf16ps / vpdpbusd: 24 zmm chains, their inputs opaque to the compiler every iteration) or,
// with AMX, 4 tile accumulators fed by 4 operand tiles loaded once (tdpbf16ps / tdpbssd: 16 x 16
// outputs x 32 bf16 pairs... each). Answers GOPS (bf16: flops; int8: integer multiply-adds x 2)
// and the instruction, or "0 none" where this build has no unit for the kind.
// test/targets/cpu/limits.test.ts counts the instructions of the compiled loop.
export const DOT_PEAK = String.raw`
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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
static double thread_seconds() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
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
  // what this build can run for the kind (detected: the compiler's flags for this CPU, AMX's permission)
  bool have = amx;
#if defined(__AVX512BF16__)
  if (bf16) have = true;
#endif
#if defined(__AVX512VNNI__)
  if (!bf16) have = true;
#endif
  std::string line;
  volatile double sink = 0;
  while (std::getline(std::cin, line)) {
    if (!have) { std::printf("0 none\n"); std::fflush(stdout); continue; }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    std::vector<double> out(threads), cpu(threads);
    // ops per instruction: vdpbf16ps 16 lanes x 2 pairs x 2; vpdpbusd 16 x 4 x 2;
    // tdpbf16ps 16 x 16 x 32 x 2 (16 rows x 16 cols x 16 pairs x 2 products x 2); tdpbssd 16 x 16 x 64 x 2
    double per = 0; long n = iters; int ins = CHAINS;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
      const double c0 = thread_seconds();
      [&] {
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AMX_INT8__)
        if (amx) { out[t] = run_amx(iters / 8, bf16); return; }
#endif
#if defined(__AVX512BF16__)
        if (bf16) { out[t] = run_bf16(iters); return; }
#endif
#if defined(__AVX512VNNI__)
        if (!bf16) { out[t] = run_int8(iters); return; }
#endif
      }();
      cpu[t] = thread_seconds() - c0;
    });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (double v : out) sink = sink + v;
    if (amx) { per = bf16 ? 16.0 * 16 * 32 * 2 : 16.0 * 16 * 64 * 2; n = iters / 8; ins = 4; }
    else per = bf16 ? 16.0 * 2 * 2 : 16.0 * 4 * 2;
    // the rate by wall time, the instruction, the rate by each thread's CPU time (as the FMA peak's)
    double by_cpu = 0;
    for (double c : cpu) by_cpu += per * ins * (double)n / c / 1e9;
    std::printf("%.3f %s %.3f\n", per * ins * (double)n * threads / s / 1e9, amx ? (bf16 ? "tdpbf16ps" : "tdpbssd") : (bf16 ? "vdpbf16ps" : "vpdpbusd"), by_cpu);
    std::fflush(stdout);
  }
  return 0;
}
`;

// ------------------------------------------------------------------ the streaming read
// A streaming read of a buffer (argv[1] bytes, larger than the caches) on N threads, each its
// contiguous share, four vector accumulators: the memory bandwidth a memory-bound kernel has.
// Answers the milliseconds of one pass (and the sum, so the loads are not dropped).
export const NATIVE_READ = String.raw`
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>
#include <immintrin.h>
int main(int argc, char** argv) {
  const size_t n = std::strtoull(argv[1], nullptr, 10) / sizeof(float);
  const int threads = std::atoi(argv[2]);
  float* buf = (float*)std::aligned_alloc(64, n * sizeof(float));
  for (size_t i = 0; i < n; ++i) buf[i] = (float)(i & 1023);
  std::vector<double> sums(threads * 8);
  std::string line;
  while (std::getline(std::cin, line)) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] {
      const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
#if defined(__AVX512F__)
      __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
      size_t i = lo;
      for (; i + 64 <= hi; i += 64) {
        a = _mm512_add_ps(a, _mm512_load_ps(buf + i)); b = _mm512_add_ps(b, _mm512_load_ps(buf + i + 16));
        c = _mm512_add_ps(c, _mm512_load_ps(buf + i + 32)); d = _mm512_add_ps(d, _mm512_load_ps(buf + i + 48));
      }
      float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
      for (; i < hi; ++i) s += buf[i];
#else
      float s = 0; for (size_t i = lo; i < hi; ++i) s += buf[i];
#endif
      sums[t * 8] = s;
    });
    for (auto& t : ts) t.join();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    double s = 0; for (int t = 0; t < threads; ++t) s += sums[t * 8];
    std::printf("%.4f %g\n", ms, s);
    std::fflush(stdout);
  }
  return 0;
}
`;

/** The compiler command of the measuring programs: $CXX / c++ as tspto's builds use it. */
export function buildProgram(dir: string, name: string, source: string, flags: readonly string[]): string {
  return runSteps(buildProgramSteps(dir, name, source, flags));
}
function* buildProgramSteps(dir: string, name: string, source: string, flags: readonly string[]): Steps<string> {
  mkdirSync(dir, { recursive: true });
  const src = join(dir, `${name}.cc`), out = join(dir, name);
  writeFileSync(src, source);
  const tc = toolchain();
  const r = yield { argv: [...tc.argv, ...flags, "-I", abiIncludeDir(), "-o", out, src, "-pthread"], timeoutMs: 180_000 };
  if (r.status !== 0) {
    throw new TsptoCompileError("E_CXX", `building the measuring program ${name} failed${r.error ? ` (${r.error.message})` : ""}:\n${(r.stderr ?? "").trim().split("\n").slice(0, 20).join("\n")}`, undefined,
      "set $CXX to a working C++17 compiler");
  }
  return out;
}

/** -march=native and the flags of this process's ISA path (AMX's where the path is amx). */
function pathFlags(): string[] {
  const isa = cpuIsa();
  return ["-march=native", ...isaFlags(isa), ...(isa === "amx" ? ["-mamx-tile", "-mamx-bf16", "-mamx-int8"] : [])];
}
/** Flags of the peak programs (FMA, dot). */
export const peakFlags = (): string[] => ["-std=c++17", "-O2", ...pathFlags()];
/** Flags of the read program: tspto's own production flags (a program, not a library). */
export const readFlags = (): string[] => CXX_FLAGS.filter((f) => f !== "-shared" && f !== "-fPIC").flatMap((f) => (f === "-march=native" ? pathFlags() : [f]));

/** A long-lived measuring process answering one line per request. */
class LineProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: ((l: string) => void)[] = [];
  constructor(exe: string, args: string[]) {
    this.child = spawn(exe, args);
    createInterface({ input: this.child.stdout }).on("line", (l) => this.waiting.shift()?.(l));
  }
  request(what = "go"): Promise<string> {
    return new Promise((resolve) => { this.waiting.push(resolve); this.child.stdin.write(`${what}\n`); });
  }
  close(): void { this.child.stdin.end(); this.child.kill(); }
}

/** The FMA peak on `threads` threads, long-lived (the bench): `measure()` gives GFLOP/s of one burst (~50-100 ms). */
export class FmaPeak {
  private readonly p: LineProcess;
  lanes = 0;
  constructor(dir: string, threads: number, iters = 4_000_000) {
    this.p = new LineProcess(buildProgram(dir, "fma_peak", FMA_PEAK, peakFlags()), [String(threads), String(iters)]);
  }
  async measure(): Promise<number> {
    const [g, lanes] = (await this.p.request()).split(" ").map(Number);
    this.lanes = lanes;
    return g;
  }
  /** The core clock in GHz (one thread, a dependent imul chain; ~0.3 s). */
  async clockGHz(): Promise<number> { return Number(await this.p.request("clock")); }
  close(): void { this.p.close(); }
}

/** The dot peak on `threads` threads (`kind`: bf16 or int8), long-lived: `measure()` gives GOPS of one burst and the instruction ("none": no unit). */
export class DotPeak {
  private readonly p: LineProcess;
  instruction = "";
  constructor(dir: string, threads: number, kind: "bf16" | "int8", iters = 2_000_000) {
    this.p = new LineProcess(buildProgram(dir, `dot_peak_${kind}`, DOT_PEAK, peakFlags()), [String(threads), String(iters), kind]);
  }
  async measure(): Promise<number> {
    const [g, ins] = (await this.p.request()).split(" ");
    this.instruction = ins;
    return Number(g);
  }
  close(): void { this.p.close(); }
}

/** A streaming read of `bytes` on `threads` threads, long-lived: `measure()` gives GB/s of one pass. */
export class NativeRead {
  private readonly p: LineProcess;
  constructor(dir: string, readonly bytes: number, threads: number) {
    this.p = new LineProcess(buildProgram(dir, "native_read", NATIVE_READ, readFlags()), [String(bytes), String(threads)]);
  }
  async measure(): Promise<number> {
    return this.bytes / 1e6 / Number((await this.p.request()).split(" ")[0]);
  }
  close(): void { this.p.close(); }
}

// ------------------------------------------------------------------ measured once per machine

/**
 * Bursts per limit; the limit is the best of them (a peak: other processes only ever slow a
 * burst). The compute peaks are rated by each thread's CPU time (a core's FMA or dot units are
 * its own: time another process took from the thread is not the unit's), the read by wall time
 * (the memory bus is shared by all cores at once), with more passes to find a quiet moment.
 */
const BURSTS = 5, READ_PASSES = 9;
/** Buffer of the read: at least 512 MiB and four times the machine's last-level caches. */
function readBytes(): number {
  let l3 = 0;
  try {
    const seen = new Set<string>();
    for (const cpu of readdirSync("/sys/devices/system/cpu").filter((d) => /^cpu\d+$/.test(d))) {
      const base = `/sys/devices/system/cpu/${cpu}/cache/index3`;
      try {
        const shared = readFileSync(`${base}/shared_cpu_list`, "utf8").trim();
        if (seen.has(shared)) continue;
        seen.add(shared);
        const m = /^(\d+)([KMG]?)/.exec(readFileSync(`${base}/size`, "utf8").trim());
        if (m) l3 += Number(m[1]) * (m[2] === "G" ? 2 ** 30 : m[2] === "M" ? 2 ** 20 : m[2] === "K" ? 2 ** 10 : 1);
      } catch { /* no L3 here */ }
    }
  } catch { /* no /sys: the default */ }
  return Math.min(4 * 2 ** 30, Math.max(512 * 2 ** 20, 4 * l3));
}

/** The CPU's model name (/proc/cpuinfo, else os.cpus()). */
function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (m) return m[1].trim();
  } catch { /* not Linux */ }
  return cpus()[0]?.model ?? "unknown";
}

/** The answers of a measuring program run once (its stdin: one request per line); E_LIMITS when it fails or answers fewer. */
export function runOnce(exe: string, args: string[], requests: string[], what: string): string[] {
  return runSteps(runOnceSteps(exe, args, requests, what));
}
function* runOnceSteps(exe: string, args: string[], requests: string[], what: string): Steps<string[]> {
  const r = yield { argv: [exe, ...args], input: requests.map((q) => `${q}\n`).join(""), timeoutMs: 300_000 };
  const lines = (r.stdout ?? "").split("\n").filter(Boolean);
  if (r.status !== 0 || lines.length !== requests.length) {
    // a program that exited (status set) is described by its status even when writing its
    // requests failed with EPIPE because it had already gone (a race with its exit)
    const why = typeof r.status === "number" && r.status !== 0 ? `exit ${r.status}` : r.signal ? `killed by ${r.signal}` : r.error ? r.error.message : `exit ${r.status}`;
    throw new TsptoRuntimeError("E_LIMITS", `measuring the machine's ${what} failed (${why}, ${lines.length} of ${requests.length} answers)${r.stderr ? `: ${r.stderr.trim().split("\n")[0]}` : ""}`,
      undefined, "the roofline needs the machine's limits: check that the C++ compiler builds programs that run here");
  }
  return lines;
}

let measurements = 0;
/** How many times this process measured the limits (not read them from the cache): tests check the cache with it. */
export function limitsMeasurements(): number { return measurements; }

/** Measures the limits now on `threads` threads (a few seconds: builds and runs three small programs). */
export function measureLimits(threads: number): MachineLimits {
  return runSteps(measureLimitsSteps(threads));
}
function* measureLimitsSteps(threads: number): Steps<MachineLimits> {
  measurements++;
  const dir = mkdtempSync(join(tmpdir(), "tspto-limits-"));
  try {
    const t = String(threads);
    const best = (xs: number[]) => Math.max(...xs.filter((x) => Number.isFinite(x) && x > 0), 0);
    const bytes = readBytes();
    const readExe = yield* buildProgramSteps(dir, "native_read", NATIVE_READ, readFlags());
    const read = (yield* runOnceSteps(readExe, [String(bytes), t], Array(READ_PASSES).fill("go"), "streaming read"))
      .map((l) => bytes / 1e6 / Number(l.split(" ")[0]));
    const fmaExe = yield* buildProgramSteps(dir, "fma_peak", FMA_PEAK, peakFlags());
    const fmaLines = yield* runOnceSteps(fmaExe, [t, "4000000"], Array(BURSTS).fill("go"), "FMA peak");
    const dotExe = yield* buildProgramSteps(dir, "dot_peak", DOT_PEAK, peakFlags());
    const dot = function* (kind: "bf16" | "int8"): Steps<{ rate: number; instruction: string } | null> {
      const ls = (yield* runOnceSteps(dotExe, [t, "2000000", kind], Array(BURSTS).fill("go"), `${kind} dot peak`)).map((l) => l.split(" "));
      const ins = ls[0][1];
      return ins === "none" ? null : { rate: best(ls.map((x) => Number(x[2]))), instruction: ins };
    };
    const bf16 = yield* dot("bf16"), int8 = yield* dot("int8");
    const limits: MachineLimits = {
      readGBs: best(read),
      fmaGflops: best(fmaLines.map((l) => Number(l.split(" ")[2]))),
      ...(bf16 && bf16.rate > 0 ? { dotGflops: bf16.rate, dotInstruction: bf16.instruction } : {}),
      ...(int8 && int8.rate > 0 ? { dotInt8Gops: int8.rate, dotInt8Instruction: int8.instruction } : {}),
      fmaLanes: Number(fmaLines[0].split(" ")[1]),
      threads, cpu: cpuModel(), isa: cpuIsa(), readBufferBytes: bytes, measuredAt: new Date().toISOString(),
    };
    if (!(limits.readGBs > 0) || !(limits.fmaGflops > 0)) {
      throw new TsptoRuntimeError("E_LIMITS", `measuring the machine's limits gave no rate (read ${limits.readGBs} GB/s, FMA ${limits.fmaGflops} GFLOP/s)`);
    }
    return limits;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const LIMITS_FORMAT = "tspto-limits-1";
/** What the cached limits are keyed by (and record): the machine, the ISA path, the threads, the programs. */
function limitsKey(threads: number): Record<string, string | number> {
  return { cpu: cpuModel(), flags: cpuFlags(), isa: cpuIsa() ?? "native", threads, programs: sha256(`${NATIVE_READ}\0${FMA_PEAK}\0${DOT_PEAK}\0${readFlags().join(" ")}\0${peakFlags().join(" ")}`).slice(0, 16) };
}
const memo = new Map<string, MachineLimits>();

/** The cache file of the limits for `threads` threads on this machine. */
export function limitsCacheFile(threads: number): string {
  return join(privateDir("limits"), `${sha256(JSON.stringify(limitsKey(threads))).slice(0, 32)}.json`);
}

const validLimits = (l: unknown): l is MachineLimits => {
  const x = l as Partial<MachineLimits> | null;
  const pos = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v > 0;
  return !!x && pos(x.readGBs) && pos(x.fmaGflops) && (x.dotGflops === undefined || pos(x.dotGflops)) && (x.dotInt8Gops === undefined || pos(x.dotInt8Gops));
};

/**
 * The limits of this machine for `threads` core threads: from this process's memo, else the
 * cache file, else measured (and written to the cache file). A cache file that does not hold
 * limits for this key (corrupt, another key, a hand edit gone wrong) is measured again.
 */
export function cpuLimits(threads: number): MachineLimits {
  return runSteps(cpuLimitsSteps(threads));
}

const inFlight = new Map<string, Promise<MachineLimits>>();
/** cpuLimits with its measuring programs run off the event loop (concurrent calls for one key share one measurement). */
export function cpuLimitsAsync(threads: number): Promise<MachineLimits> {
  const keyText = JSON.stringify(limitsKey(threads));
  const hit = memo.get(keyText);
  if (hit) return Promise.resolve(hit);
  let p = inFlight.get(keyText);
  if (!p) {
    p = runStepsAsync(cpuLimitsSteps(threads)).finally(() => inFlight.delete(keyText));
    inFlight.set(keyText, p);
  }
  return p;
}

function* cpuLimitsSteps(threads: number): Steps<MachineLimits> {
  const key = limitsKey(threads), keyText = JSON.stringify(key);
  const hit = memo.get(keyText);
  if (hit) return hit;
  const file = limitsCacheFile(threads);
  const dir = join(file, ".."), name = file.slice(dir.length + 1);
  try {
    const j = JSON.parse(readTextInside(dir, name, { maxBytes: 1 << 16 })) as { format?: string; key?: unknown; limits?: unknown };
    if (j.format === LIMITS_FORMAT && JSON.stringify(j.key) === keyText && validLimits(j.limits)) {
      memo.set(keyText, j.limits);
      return j.limits;
    }
  } catch { /* not cached yet (or unreadable): measure */ }
  const limits = yield* measureLimitsSteps(threads);
  try { writeAtomic(file, `${JSON.stringify({ format: LIMITS_FORMAT, key, limits }, null, 1)}\n`, 0o600); } catch { /* best effort: measured again next time */ }
  memo.set(keyText, limits);
  return limits;
}

/** Forgets this process's memo (tests: the next cpuLimits reads the cache file). */
export function forgetLimitsMemo(): void { memo.clear(); }

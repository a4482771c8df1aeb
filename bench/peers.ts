// Peers of the benchmark suite: a native C++ loop on all cores (built here with the flags
// tspto uses), a plain JS loop, onnxruntime-node sessions built from hand-encoded ONNX
// models, and a C++ program library of empty tasks for the scheduler.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { CXX_FLAGS, abiIncludeDir } from "../src/targets/cpu/index.js";

const CXX = (process.env.CXX ?? "c++").split(/\s+/);

export function build(dir: string, name: string, source: string, extra: string[]): string {
  mkdirSync(dir, { recursive: true });
  const src = join(dir, `${name}.cc`), out = join(dir, name);
  writeFileSync(src, source);
  const r = spawnSync(CXX[0], [...CXX.slice(1), ...extra, "-I", abiIncludeDir(), "-o", out, src, "-pthread"], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`building ${name} failed:\n${r.stderr}`);
  return out;
}

// ------------------------------------------------------------------ native add on all threads
const NATIVE_ADD = String.raw`
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>
// out = a + b over n floats, split into one contiguous range per thread (threads = argv[2]).
// Reads a line per measurement from stdin and answers the milliseconds of one pass.
static void add(const float* __restrict a, const float* __restrict b, float* __restrict o, long n) {
  for (long i = 0; i < n; ++i) o[i] = a[i] + b[i];
}
int main(int argc, char** argv) {
  const long n = std::atol(argv[1]);
  const int threads = std::atoi(argv[2]);
  float* a = (float*)std::aligned_alloc(64, n * 4);
  float* b = (float*)std::aligned_alloc(64, n * 4);
  float* o = (float*)std::aligned_alloc(64, n * 4);
  for (long i = 0; i < n; ++i) { a[i] = (float)(i % 1000) * 0.5f; b[i] = (float)(i % 777); o[i] = 0; }
  auto pass = [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      const long lo = n * t / threads, hi = n * (t + 1) / threads;
      ts.emplace_back([=] { add(a + lo, b + lo, o + lo, hi - lo); });
    }
    for (auto& t : ts) t.join();
  };
  pass();
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.6f %.1f\n", ms, (double)o[n / 3]);
    std::fflush(stdout);
  }
  return 0;
}
`;

/** A long-lived native add process: `measure()` runs one pass and returns its ms. */
export class NativeAdd {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: ((l: string) => void)[] = [];
  constructor(dir: string, n: number, threads: number) {
    const exe = build(dir, "native_add", NATIVE_ADD, CXX_FLAGS.filter((f) => f !== "-shared" && f !== "-fPIC"));
    this.child = spawn(exe, [String(n), String(threads)]);
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on("line", (l) => this.waiting.shift()?.(l));
  }
  measure(): Promise<number> {
    return new Promise((resolve) => {
      this.waiting.push((l) => resolve(Number(l.split(" ")[0])));
      this.child.stdin.write("go\n");
    });
  }
  close(): void { this.child.stdin.end(); this.child.kill(); }
}

// ------------------------------------------------------------------ the machine's FMA peak
// A register-only loop of independent fused multiply-adds (24 vector accumulators, no memory
// traffic) on `threads` threads at once: the arithmetic peak matmul is measured against.
// Widest FMA the build flags allow: AVX-512 (16 lanes), else AVX2 FMA (8), else scalar fmaf.
// The flop count is lanes x 2 x 24 accumulators x iterations x threads, so the 24 chains must
// really be 24 FMAs per iteration: their start values come from a volatile array (distinct and
// unknown to the compiler: an earlier version started them at 1e-3*i, 2e-3*i, 3e-3*i, and the
// compiler merged the chains with equal start values, 16 FMAs per iteration counted as 24, a
// peak 1.5x too high), and an empty asm statement makes x and y opaque every iteration.
// test/bench/fma_peak.test.ts compiles this source and counts the FMAs in the loop.
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
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { out[t] = run(iters); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : out) sink = sink + v;
    std::printf("%.3f %d\n", 2.0 * LANES * CHAINS * iters * threads / s / 1e9, LANES);
    std::fflush(stdout);
  }
  return 0;
}
`;

/** A long-lived process answering one line per request (`measure()` -> the first number). */
class LineProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly lines: Interface;
  private readonly waiting: ((l: string) => void)[] = [];
  constructor(exe: string, args: string[]) {
    this.child = spawn(exe, args);
    this.lines = createInterface({ input: this.child.stdout });
    this.lines.on("line", (l) => this.waiting.shift()?.(l));
  }
  request(what = "go"): Promise<string> {
    return new Promise((resolve) => { this.waiting.push(resolve); this.child.stdin.write(`${what}\n`); });
  }
  close(): void { this.child.stdin.end(); this.child.kill(); }
}

/** The FMA peak on `threads` threads: `measure()` gives GFLOP/s of one burst (~50-100 ms). */
export class FmaPeak {
  private readonly p: LineProcess;
  lanes = 0;
  constructor(dir: string, threads: number) {
    const exe = build(dir, "fma_peak", FMA_PEAK, ["-std=c++17", "-O2", "-march=native"]);
    this.p = new LineProcess(exe, [String(threads), "4000000"]);
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

// ------------------------------------------------------------------ plain JS softmax / matmul
export function jsSoftmax(a: Float32Array, o: Float32Array, cols: number): void {
  for (let r = 0; r < a.length; r += cols) {
    let m = -Infinity;
    for (let j = 0; j < cols; j++) m = Math.max(m, a[r + j]);
    let s = 0;
    for (let j = 0; j < cols; j++) { const e = Math.exp(a[r + j] - m); o[r + j] = e; s += e; }
    for (let j = 0; j < cols; j++) o[r + j] /= s;
  }
}
export function jsMatmul(a: Float32Array, b: Float32Array, c: Float32Array, n: number): void {
  c.fill(0);
  for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) {
    const x = a[i * n + k];
    for (let j = 0; j < n; j++) c[i * n + j] += x * b[k * n + j];
  }
}

// ------------------------------------------------------------------ scheduler: empty tasks
const EMPTY_TASKS = String.raw`
#include "tspto_abi.h"
extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
extern "C" void k_empty(const int64_t*) {}
extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {
  for (int64_t i = 0; i < args[0]; ++i)
    if (rt->submit(rt->ctx, k_empty, "k_empty", 0, nullptr, 0, nullptr, 0) != 0) return 1;
  return rt->wait_all(rt->ctx);
}
`;
export function buildEmptyTasksLib(dir: string): string {
  return build(dir, "empty_tasks.so", EMPTY_TASKS, ["-std=c++17", "-O2", "-fPIC", "-shared"]);
}

// ------------------------------------------------------------------ plain JS
export function jsAdd(a: Float32Array, b: Float32Array, o: Float32Array): void {
  for (let i = 0; i < o.length; i++) o[i] = a[i] + b[i];
}

// ------------------------------------------------------------------ onnxruntime-node
// A minimal protobuf writer for ModelProto (onnx.proto3): enough for one-node models.
type Field = [number, "varint", number] | [number, "bytes", Uint8Array | string];
function varint(n: number): number[] {
  const out: number[] = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  do { let b = Number(v & 0x7fn); v >>= 7n; if (v) b |= 0x80; out.push(b); } while (v);
  return out;
}
function msg(fields: Field[]): Uint8Array {
  const bytes: number[] = [];
  for (const [num, kind, value] of fields) {
    if (kind === "varint") { bytes.push(...varint((num << 3) | 0), ...varint(value)); continue; }
    const data = typeof value === "string" ? new TextEncoder().encode(value) : value;
    bytes.push(...varint((num << 3) | 2), ...varint(data.length), ...data);
  }
  return Uint8Array.from(bytes);
}
const FLOAT = 1;
function valueInfo(name: string, shape: readonly number[]): Uint8Array {
  const dims = shape.map((d) => [1, "bytes", msg([[1, "varint", d]])] as Field);
  const tensorType = msg([[1, "varint", FLOAT], [2, "bytes", msg(dims)]]);
  return msg([[1, "bytes", name], [2, "bytes", msg([[1, "bytes", tensorType]])]]);
}
/** A model of one node `op(inputs...) -> y`. */
export function onnxModel(op: string, inputs: { name: string; shape: readonly number[] }[], outShape: readonly number[]): Uint8Array {
  const node = msg([...inputs.map((i) => [1, "bytes", i.name] as Field), [2, "bytes", "y"], [3, "bytes", `${op}_0`], [4, "bytes", op]]);
  const graph = msg([[1, "bytes", node], [2, "bytes", "g"], ...inputs.map((i) => [11, "bytes", valueInfo(i.name, i.shape)] as Field), [12, "bytes", valueInfo("y", outShape)]]);
  return msg([[1, "varint", 8], [8, "bytes", msg([[1, "bytes", ""], [2, "varint", 17]])], [7, "bytes", graph]]);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Ort = any;
export function loadOrt(): Ort | null {
  try {
    return createRequire(import.meta.url)("onnxruntime-node");
  } catch {
    return null;
  }
}

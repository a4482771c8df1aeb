// Peers of the benchmark suite: a native C++ loop on all cores (built here with the flags
// tspto uses), a plain JS loop, onnxruntime-node sessions built from hand-encoded ONNX
// models, and a C++ program library of empty tasks for the scheduler.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { CXX_FLAGS, abiIncludeDir } from "../src/targets/cpu/index.js";
import { FMA_PEAK, FmaPeak } from "../src/targets/cpu/index.js";

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
// The measuring program lives with the cpu target (src/targets/cpu/limits.ts), which measures
// the roofline's limits with it; the bench runs it long-lived, in the same rounds as matmul.
export { FMA_PEAK, FmaPeak };

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

// GPU benchmark: `npm run bench -- --gpu` (bench/run.ts hands over to gpuBench) or the GPU
// pack's runner. Every tspto time is the median device time of CUDA events (benchmark());
// the peers run in the same session: a device-to-device copy of the same bytes (the native
// cuda device's d2d), and PyTorch (python3 bench/gpu_peers.py; CUDA events too).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { ChipWorker, RunConfig, benchmark, randn, zeros, assertClose, type HostTensor } from "tspto";
import { CudaDevice } from "../src/targets/cuda/index.js";
import { ADD_COLS, ADD_ROWS, GMM, GV_K, GV_N, GV_ROWS, SMX_COLS, SMX_ROWS, gpuAdd, gpuGemv, gpuMatmul, gpuSoftmax, tinyAdd } from "./gpu_kernels.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");
const log = (s: string) => process.stderr.write(`${s}\n`);
const DEV_OPTS = { deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 20, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 };

interface Row { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null }

/** A host tensor of the shape and dtype, for specialization (its data is not used). */
const spec = (shape: number[], dtype: "float32" | "bfloat16" = "float32"): HostTensor => zeros(shape, dtype);

function torchPeers(): Record<string, number | string> {
  const script = fileURLToPath(new URL("./gpu_peers.py", import.meta.url));
  const r = spawnSync(process.env.PYTHON ?? "python3", [script, String(ROUNDS)], { encoding: "utf8", timeout: 300_000 });
  if (r.error || r.status !== 0) return { error: `python3 failed: ${r.error?.message ?? r.stderr?.split("\n").slice(-3).join(" ")}` };
  try { return JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}"); } catch { return { error: `unreadable output: ${r.stdout.slice(0, 200)}` }; }
}

export async function gpuBench(): Promise<Row[]> {
  const rows: Row[] = [];
  const add = (r: Row) => { rows.push(r); log(`${r.id} ${r.what}: ${r.result} (goal ${r.goal})`); };
  const cfg = new RunConfig({ platform: "cuda" });
  const torch = torchPeers();
  const tms = (k: string) => (typeof torch[k] === "number" ? (torch[k] as number) : NaN);
  if (torch.error) log(`torch peers unavailable: ${String(torch.error)}`);

  // G1: add 2^28 f32 vs a device-to-device copy of the same bytes, and vs torch.add
  try {
    const shape = [ADD_ROWS, ADD_COLS];
    const w = new ChipWorker(cfg);
    const c = gpuAdd.compile(spec(shape), spec(shape), spec(shape), cfg);
    const ra = w.allocTensor(shape, "float32"), rb = w.allocTensor(shape, "float32"), ro = w.allocTensor(shape, "float32");
    const st = benchmark(c, [ra, rb, ro], { rounds: ROUNDS, warmup: 3, worker: w });
    w.close();
    const ms = st.deviceUsMedian / 1e3;
    const d = new CudaDevice(DEV_OPTS);
    const bytes = ADD_ROWS * ADD_COLS * 4;
    const x = d.alloc(bytes), y = d.alloc(bytes);
    const cp: number[] = [];
    for (let i = -3; i < ROUNDS; i++) { const t0 = performance.now(); d.d2d(y, x, bytes); if (i >= 0) cp.push(performance.now() - t0); }
    d.close();
    const copyMs = median(cp);
    const gbs = (b: number, m: number) => b / (m / 1e3) / 1e9;
    const bwAdd = gbs(3 * bytes, ms), bwCopy = gbs(2 * bytes, copyMs);
    add({ id: "G1a", what: "add 2^28 f32: bandwidth vs a device-to-device copy (same run)", tspto: `${fmt(ms, 3)} ms, ${fmt(bwAdd, 0)} GB/s`, peer: `copy ${fmt(copyMs, 3)} ms, ${fmt(bwCopy, 0)} GB/s`, result: `${fmt(bwAdd / bwCopy)}×`, goal: "≥ 1.0×", met: bwAdd / bwCopy >= 1.0 });
    const t = tms("add_ms");
    add({ id: "G1b", what: "add 2^28 f32 vs torch.add", tspto: `${fmt(ms, 3)} ms`, peer: Number.isFinite(t) ? `${fmt(t, 3)} ms` : "n/a", result: `${fmt(t / ms)}×`, goal: "—", met: null });
  } catch (e) { add({ id: "G1", what: "add 2^28 f32", tspto: "failed", peer: "", result: (e as Error).message.split("\n")[0], goal: "", met: false }); }

  // G2: softmax [16384, 4096] vs torch.softmax
  try {
    const shape = [SMX_ROWS, SMX_COLS];
    const w = new ChipWorker(cfg);
    const c = gpuSoftmax.compile(spec(shape), spec(shape), cfg);
    const A = randn(shape, { seed: 3 });
    const ra = w.allocTensor(shape, "float32", { init: A }), ro = w.allocTensor(shape, "float32");
    const st = benchmark(c, [ra, ro], { rounds: ROUNDS, warmup: 3, worker: w });
    // agreement on the first rows with a JS softmax
    const O = zeros(shape);
    w.copyFrom(O, ro, ro.nbytes);
    const a = A.data as Float32Array, o = O.data as Float32Array;
    let err = 0;
    for (let r = 0; r < 8; r++) {
      let mx = -Infinity, s = 0;
      for (let j = 0; j < SMX_COLS; j++) mx = Math.max(mx, a[r * SMX_COLS + j]);
      for (let j = 0; j < SMX_COLS; j++) s += Math.exp(a[r * SMX_COLS + j] - mx);
      for (let j = 0; j < SMX_COLS; j++) err = Math.max(err, Math.abs(o[r * SMX_COLS + j] - Math.exp(a[r * SMX_COLS + j] - mx) / s));
    }
    w.close();
    const ms = st.deviceUsMedian / 1e3, t = tms("softmax_only_ms");
    add({ id: "G2", what: `softmax [${SMX_ROWS}, ${SMX_COLS}] f32 vs torch.softmax (max err ${err.toExponential(1)})`, tspto: `${fmt(ms, 3)} ms`, peer: Number.isFinite(t) ? `${fmt(t, 3)} ms` : "n/a", result: `${fmt(t / ms)}×`, goal: "≥ 1×", met: Number.isFinite(t) ? t / ms >= 1 : null });
  } catch (e) { add({ id: "G2", what: "softmax", tspto: "failed", peer: "", result: (e as Error).message.split("\n")[0], goal: "≥ 1×", met: false }); }

  // G3: bf16 matmul 8192^3 vs torch.matmul (cuBLAS)
  try {
    const shape = [GMM, GMM];
    const w = new ChipWorker(cfg);
    const c = gpuMatmul.compile(spec(shape, "bfloat16"), spec(shape, "bfloat16"), spec(shape), cfg);
    const ra = w.allocTensor(shape, "bfloat16", { init: randn(shape, { seed: 4, dtype: "bfloat16" }) });
    const rb = w.allocTensor(shape, "bfloat16", { init: randn(shape, { seed: 5, dtype: "bfloat16" }) });
    const rc = w.allocTensor(shape, "float32");
    const st = benchmark(c, [ra, rb, rc], { rounds: Math.max(3, Math.floor(ROUNDS / 4)), warmup: 1, worker: w });
    w.close();
    const ms = st.deviceUsMedian / 1e3, t = tms("matmul_ms");
    const tf = (m: number) => (2 * GMM ** 3) / (m / 1e3) / 1e12;
    add({ id: "G3", what: `matmul ${GMM}³ bf16 (fp32 accumulation) vs torch.matmul`, tspto: `${fmt(tf(ms), 1)} TFLOP/s (${fmt(ms, 1)} ms)`, peer: Number.isFinite(t) ? `${fmt(tf(t), 1)} TFLOP/s (${fmt(t, 2)} ms)` : "n/a", result: `${fmt(t / ms, 3)}×`, goal: "≥ 0.5×", met: Number.isFinite(t) ? t / ms >= 0.5 : null });
  } catch (e) { add({ id: "G3", what: "matmul bf16", tspto: "failed", peer: "", result: (e as Error).message.split("\n")[0], goal: "≥ 0.5×", met: false }); }

  // G5: decode GEMV, x [1, 8192] @ W [8192, 8192] bf16 (128 MiB of weights): weight bytes / time vs a D2D copy, and vs torch
  try {
    const w = new ChipWorker(cfg);
    const c = gpuGemv.compile(spec([GV_ROWS, GV_K], "bfloat16"), spec([GV_K, GV_N], "bfloat16"), spec([GV_ROWS, GV_N]), cfg);
    const X = randn([GV_ROWS, GV_K], { seed: 6, dtype: "bfloat16" }), W = randn([GV_K, GV_N], { seed: 7, dtype: "bfloat16" });
    const rx = w.allocTensor([GV_ROWS, GV_K], "bfloat16", { init: X }), rw = w.allocTensor([GV_K, GV_N], "bfloat16", { init: W });
    const ry = w.allocTensor([GV_ROWS, GV_N], "float32");
    const st = benchmark(c, [rx, rw, ry], { rounds: ROUNDS, warmup: 3, worker: w });
    // agreement on 16 outputs with a JS dot product (fp64)
    const Y = zeros([GV_ROWS, GV_N]);
    w.copyFrom(Y, ry, ry.nbytes);
    const xv = X.toArray(), yv = Y.data as Float32Array;
    let err = 0;
    for (let j = 0; j < GV_N; j += GV_N / 16) {
      let s = 0;
      for (let k = 0; k < GV_K; k++) s += xv[k] * W.get(k, j);
      err = Math.max(err, Math.abs(yv[j] - s) / (1 + Math.abs(s)));
    }
    w.close();
    const bytes = GV_K * GV_N * 2;
    const d = new CudaDevice(DEV_OPTS);
    const x = d.alloc(bytes), y = d.alloc(bytes);
    const cp: number[] = [];
    for (let i = -3; i < ROUNDS; i++) { const t0 = performance.now(); d.d2d(y, x, bytes); if (i >= 0) cp.push(performance.now() - t0); }
    d.close();
    const ms = st.deviceUsMedian / 1e3, copyMs = median(cp);
    const bw = bytes / (ms / 1e3) / 1e9, bwCopy = (2 * bytes) / (copyMs / 1e3) / 1e9;
    add({ id: "G5a", what: `GEMV [${GV_ROWS}, ${GV_K}] @ [${GV_K}, ${GV_N}] bf16: weight bandwidth vs a D2D copy (max rel err ${err.toExponential(1)})`, tspto: `${fmt(ms, 3)} ms, ${fmt(bw, 0)} GB/s`, peer: `copy ${fmt(bwCopy, 0)} GB/s`, result: `${fmt(bw / bwCopy)}×`, goal: "≥ 0.85×", met: bw / bwCopy >= 0.85 });
    const t = tms("gemv_ms");
    add({ id: "G5b", what: "GEMV bf16 vs torch.matmul (then .float())", tspto: `${fmt(ms, 3)} ms`, peer: Number.isFinite(t) ? `${fmt(t, 3)} ms` : "n/a", result: `${fmt(t / ms)}×`, goal: "—", met: null });
  } catch (e) { add({ id: "G5", what: "GEMV bf16", tspto: "failed", peer: "", result: (e as Error).message.split("\n")[0], goal: "≥ 0.85×", met: false }); }

  // G4: registered-handle dispatch of a tiny kernel (host time per call, DeviceTensor args)
  try {
    const w = new ChipWorker(cfg);
    const A = randn([8, 8], { seed: 1 }), B = randn([8, 8], { seed: 2 });
    const h = w.register(tinyAdd.compile(A, B, zeros([8, 8]), cfg));
    const ra = w.allocTensor([8, 8], "float32", { init: A }), rb = w.allocTensor([8, 8], "float32", { init: B }), ro = w.allocTensor([8, 8], "float32");
    h(ra, rb, ro);
    const O = zeros([8, 8]);
    w.copyFrom(O, ro, ro.nbytes);
    assertClose(O, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    const per: number[] = [];
    const ds0 = w.deviceStats;
    let calls = 0;
    for (let r = 0; r < 10; r++) {
      const n = 500, t0 = performance.now();
      for (let i = 0; i < n; i++) h(ra, rb, ro);
      per.push(((performance.now() - t0) * 1e3) / n);
      calls += n;
    }
    const ds1 = w.deviceStats;
    w.close();
    const us = median(per);
    add({ id: "G4a", what: "registered-handle dispatch of a tiny kernel (launch + sync)", tspto: `${fmt(us, 1)} µs/call`, peer: "", result: `${fmt(us, 1)} µs`, goal: "≤ 5 µs", met: us <= 5 });
    // the device's split of the same calls: the orchestration up to its wait (enqueue) and the wait (sync)
    const enq = ds0?.enqueueNs !== undefined && ds1?.enqueueNs !== undefined ? (ds1.enqueueNs - ds0.enqueueNs) / calls / 1e3 : NaN;
    const syn = ds0?.syncNs !== undefined && ds1?.syncNs !== undefined ? (ds1.syncNs - ds0.syncNs) / calls / 1e3 : NaN;
    add({ id: "G4b", what: `the same calls, enqueue (entry up to its wait)${process.env.TSPTO_CUDA_GRAPH === "1" ? ", CUDA graph" : ""}`, tspto: `${fmt(enq, 2)} µs/call`, peer: "", result: `${fmt(enq, 2)} µs`, goal: "≤ 3 µs", met: Number.isFinite(enq) ? enq <= 3 : null });
    add({ id: "G4c", what: "the same calls, sync (the wait)", tspto: `${fmt(syn, 2)} µs/call`, peer: "", result: `${fmt(syn, 2)} µs`, goal: "—", met: null });
  } catch (e) { add({ id: "G4", what: "dispatch", tspto: "failed", peer: "", result: (e as Error).message.split("\n")[0], goal: "≤ 5 µs", met: false }); }

  const table = [
    `GPU: ${String(torch.gpu ?? "?")}; torch ${String(torch.torch ?? "n/a")}${torch.error ? ` (${String(torch.error)})` : ""}; rounds ${ROUNDS}`,
    "| # | benchmark | tspto | peer | result | goal | met |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.id} | ${r.what} | ${r.tspto} | ${r.peer} | ${r.result} | ${r.goal} | ${r.met === null ? "—" : r.met ? "yes" : "**no**"} |`),
  ].join("\n");
  process.stdout.write(`${table}\n`);
  return rows;
}

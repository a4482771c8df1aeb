// Launch-overhead measurements (bench section 4, rows 4c-4e; each also runs alone as
// `npx tsx bench/launch.ts`): the host cost of a launch shaped like a transformer layer
// (bench/gpt2_shaped.ts's layer at tiny dimensions: 16 tensors + a scalar, 5 launch buffers,
// 8 scopes whose kernels take a few microseconds, so what is left is host cost), how long a
// parked core thread takes to start a task it is handed, and the tiny-kernel dispatch as the
// issue measures it (best of 9 x 2000 calls).
import { fileURLToPath } from "node:url";
import { ChipWorker, RunConfig, randn, tensor, zeros, type DeviceTensor, type HostTensor } from "tspto";
import { add8 } from "./kernels.js";
import { gpt2Programs, GPT2_TINY } from "./gpt2_shaped.js";
import { pl } from "tspto";
import { coreThreadCount } from "../src/runtime/worker.js";

const nowUs = () => Number(process.hrtime.bigint()) / 1e3;
const median = (xs: readonly number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** µs per call of `f`: the best (min) and the median of `rounds` rounds of `n` calls, after two warm-up rounds. */
export function perCall(f: () => void, n = 2000, rounds = 9): { best: number; median: number } {
  const xs: number[] = [];
  for (let r = -2; r < rounds; r++) {
    const s = nowUs();
    for (let i = 0; i < n; i++) f();
    if (r >= 0) xs.push((nowUs() - s) / n);
  }
  return { best: Math.min(...xs), median: median(xs) };
}

/** 4a as the issue measures it: a registered handle, [8, 8] add, resident tensors; best of 9 x 2000 calls. */
export function tinyDispatch(): { best: number; median: number } {
  const A = randn([8, 8], { seed: 6 }), B = randn([8, 8], { seed: 7 }), O = zeros([8, 8]);
  const w = new ChipWorker(new RunConfig());
  try {
    const h = w.register(add8.compile(A, B, O));
    const ra = w.allocTensor([8, 8], "float32", { init: A }), rb = w.allocTensor([8, 8], "float32", { init: B }), ro = w.allocTensor([8, 8], "float32");
    return perCall(() => h(ra, rb, ro));
  } finally {
    w.close();
  }
}

export interface LayerLaunch {
  /** wall µs per call: best / median of 9 rounds of 2000 calls (each round's mean) */
  wall: { best: number; median: number };
  /** wall µs of single calls: the median of 5000 calls timed one by one (robust to a busy machine's preemptions) */
  callUs: number;
  /** device µs of a call (orchestration start -> last task end), median of the single calls */
  deviceUs: number;
  /** the kernels' own µs per call (sum of the 8 tasks' start -> end, from recorded launches), median */
  kernelsUs: number;
  /** callUs - kernelsUs: what a launch costs besides running its kernels */
  hostUs: number;
  args: number; buffers: number; scopes: number;
}

/** The tiny GPT-2-shaped layer registered on `worker` with every tensor resident: its call. */
export function layerCall(worker: ChipWorker) {
  const P = gpt2Programs(GPT2_TINY);
  const { D, F, C, S, D3 } = P.dims;
  let seed = 100;
  const w = (shape: number[], scale = 0.1) => tensor(randn(shape, { seed: seed++ }).toArray().map((v) => v * scale), { shape });
  const mask = tensor(Array.from({ length: S * C }, (_, n) => ((n % C) <= 3 ? 0 : -1e30)), { shape: [S, C] });
  const host: (HostTensor | number)[] = [w([S, D], 1), w([1, D]).add(1), w([1, D]), w([D, D3]), w([1, D3]), w([D, D]), w([1, D]), w([1, D]).add(1), w([1, D]),
    w([D, F]), w([1, F]), w([F, D]), w([1, D]), w([C, D]), w([C, D]), mask, 3, zeros([S, D])];
  const compiled = P.layer.compile(...host);
  const h = worker.register(compiled);
  const dev = host.map((a) => (typeof a === "number" ? a : worker.allocTensor(a.shape, a.dtype, { init: a })));
  return { compiled, dev, call: () => h(...dev) };
}

/** The tiny GPT-2-shaped layer through a registered handle, every tensor resident. */
export function layerLaunch(): LayerLaunch {
  const worker = new ChipWorker(new RunConfig());
  try {
    const { compiled, dev, call } = layerCall(worker);
    const wall = perCall(call, 2000, 9);
    const one: number[] = [], devNs: number[] = [];
    for (let i = 0; i < 5000; i++) {
      const t0 = process.hrtime.bigint();
      call();
      one.push(Number(process.hrtime.bigint() - t0) / 1e3);
      devNs.push(worker.lastDeviceNs);
    }
    // the kernels' own time: recorded launches (tasks only), after the timed ones
    const kernels: number[] = [];
    for (let r = 0; r < 51; r++) {
      worker.device.setRecording(1, 0);
      call();
      const tr = worker.device.takeTrace();
      worker.device.setRecording(0, 0);
      if (tr) kernels.push(tr.tasks.reduce((t, k) => t + (k.endNs - k.startNs), 0) / 1e3);
    }
    const kernelsUs = median(kernels), callUs = median(one);
    for (const t of dev) if (typeof t !== "number") worker.freeTensor(t as DeviceTensor);
    const meta = compiled.meta;
    return { wall, callUs, deviceUs: median(devNs) / 1e3, kernelsUs, hostUs: callUs - kernelsUs, args: meta.params.length, buffers: 5, scopes: meta.kernels.length };
  } finally {
    worker.close();
  }
}

const WK_ROWS = 256, WK_COLS = 1024;
/** Two independent tasks of a few hundred microseconds: the orchestration runs one, a core thread (woken for it) the other. */
const twoTasks = pl.jit(function twoTasks(a: pl.Tensor, b: pl.Out<pl.Tensor>, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.exp(pl.load(a, [0, 0], [WK_ROWS, WK_COLS])), [0, 0], b); });
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.tanh(pl.load(a, [0, 0], [WK_ROWS, WK_COLS])), [0, 0], c); });
  return c;
});

export interface Wakeup {
  /** µs from a task's submission to its start on a core thread that had parked (idle 20 ms before the launch; the task is one of two independent ones, the orchestration thread runs the other): median, samples */
  parkedUs: number; parked: number[];
  /** wall µs of one layer-shaped launch (layerLaunch's program) after 20 ms idle, and right after another launch: medians */
  layerAfterIdleUs: number; layerBackToBackUs: number;
}

/** Wake-up latency of a parked core thread (recorded launches: submit -> start of the task a core thread ran), and whether a layer launch pays it. */
export async function wakeup(samples = 25): Promise<Wakeup> {
  const a = randn([WK_ROWS, WK_COLS], { seed: 1 });
  const worker = new ChipWorker(new RunConfig());
  try {
    const h = worker.register(twoTasks.compile(a, zeros([WK_ROWS, WK_COLS]), zeros([WK_ROWS, WK_COLS])));
    const ra = worker.allocTensor([WK_ROWS, WK_COLS], "float32", { init: a }), rb = worker.allocTensor([WK_ROWS, WK_COLS]), rc = worker.allocTensor([WK_ROWS, WK_COLS]);
    const parked: number[] = [];
    worker.device.setRecording(1, 0);
    for (let i = 0; i < samples; i++) {
      await sleep(20); // longer than any spin window: the core threads park
      h(ra, rb, rc);
      const tr = worker.device.takeTrace();
      // the orchestration thread records its tasks with core = the number of core threads
      const t = tr?.tasks.find((x) => x.core >= 0 && x.core < coreThreadCount());
      if (t) parked.push((t.startNs - t.submitNs) / 1e3);
    }
    worker.device.setRecording(0, 0);
    const { call } = layerCall(worker);
    const idle: number[] = [], b2b: number[] = [];
    for (let i = 0; i < samples; i++) {
      await sleep(20);
      let s = nowUs(); call(); idle.push(nowUs() - s);
      s = nowUs(); call(); b2b.push(nowUs() - s);
    }
    return { parkedUs: median(parked), parked, layerAfterIdleUs: median(idle), layerBackToBackUs: median(b2b) };
  } finally {
    worker.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const f = (x: number) => x.toFixed(2);
  const t = tinyDispatch();
  console.log(`4a' tiny dispatch (registered handle, [8, 8] add, resident): best ${f(t.best)} µs, median ${f(t.median)} µs (9 x 2000 calls)`);
  const l = layerLaunch();
  console.log(`4c layer-shaped launch (${l.args} args, ${l.buffers} launch buffers, ${l.scopes} scopes): one call ${f(l.callUs)} µs (median of 5000), device ${f(l.deviceUs)} µs, kernels ${f(l.kernelsUs)} µs -> host ${f(l.hostUs)} µs; 9 x 2000 calls: best ${f(l.wall.best)} µs, median ${f(l.wall.median)} µs`);
  const wk = await wakeup();
  console.log(`4d wake-up of a parked core thread ${f(wk.parkedUs)} µs (samples ${wk.parked.map((x) => x.toFixed(0)).join(" ")}); the layer-shaped launch after 20 ms idle ${f(wk.layerAfterIdleUs)} µs, back-to-back ${f(wk.layerBackToBackUs)} µs`);
}

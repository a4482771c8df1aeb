// Ordering between tasks (PyPTO examples/intermediate/07_task_graph.py). The runtime does
// not run the orchestration statement by statement: every pl.at scope (and every sub-kernel
// call) is a task, and edges come from the buffers each task reads and writes (the
// directions of its parameters, derived by the compiler). Stage 2 reads `scratch`, which
// stage 1 writes: a read-after-write edge, inferred. Added: an orchestration loop around
// pl.at — each iteration is a task writing its own rows (independent of each other) — and a
// last scope that reads them all (it waits for every one).
//
//   npx tsx examples/task_graph.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const inferredEdge = pl.jit(function inferredEdge(x: pl.Tensor, scratch: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(scratch, pl.add(x, x), [0, 0]); // writes scratch
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(out, pl.add(scratch, scratch), [0, 0]); // reads scratch: waits for stage 1
  });
  return out;
});

const BLOCKS = 4, ROWS = 32, COLS = 64;
const fanOutFanIn = pl.jit(function fanOutFanIn(x: pl.Tensor, parts: pl.Out<pl.Tensor>, total: pl.Out<pl.Tensor>) {
  for (const i of pl.range(BLOCKS)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(x, [i * ROWS, 0], [ROWS, COLS]);
      pl.store(pl.mul(t, i + 1), [i * ROWS, 0], parts); // one task per block
    });
  }
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.full([ROWS, COLS], pl.FP32, 0.0);
    for (const i of pl.range(BLOCKS)) acc = pl.add(acc, pl.load(parts, [i * ROWS, 0], [ROWS, COLS]));
    pl.store(acc, [0, 0], total);
  });
  return total;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`task_graph on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([128, 128], { seed: 0 }), xv = x.toArray();
  const scratch = zeros([128, 128]), out = zeros([128, 128]);
  inferredEdge(x, scratch, out, cfg);
  check("inferredEdge: scratch = x + x", scratch, ref(xv.map((v) => v + v), [128, 128]), 1e-5);
  check("inferredEdge: out = scratch + scratch", out, ref(xv.map((v) => 4 * v), [128, 128]), 1e-5);
  // the edge, as the compiler recorded it on the two task launches
  const lowered = inferredEdge.lower(x, scratch, out);
  for (const line of lowered.asText().split("\n").filter((l) => l.includes("pl.withAttrs"))) say(`    task: ${line.trim()}`);

  const y = randn([BLOCKS * ROWS, COLS], { seed: 1 }), yv = y.toArray();
  const parts = zeros([BLOCKS * ROWS, COLS]), total = zeros([ROWS, COLS]);
  fanOutFanIn(y, parts, total, cfg);
  check(`fanOutFanIn: ${BLOCKS} independent tasks`, parts, ref(yv.map((v, i) => v * (Math.floor(i / (ROWS * COLS)) + 1)), [BLOCKS * ROWS, COLS]), 1e-5);
  const want = Array.from({ length: ROWS * COLS }, (_, e) => {
    let s = 0;
    for (let i = 0; i < BLOCKS; i++) s = Math.fround(s + Math.fround(yv[i * ROWS * COLS + e] * (i + 1)));
    return s;
  });
  check("fanOutFanIn: the last task sums them all", total, ref(want, [ROWS, COLS]), 1e-5);
}
runIfMain(import.meta.url, main);

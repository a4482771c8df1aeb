// Multi-core execution: every program gives the interpreter's results with one core thread
// and with several (TSPTO_CORE_THREADS), bit-identical for integers and within tolerance for
// floats (bit-identical in practice: each element is computed the same way); whole-tensor
// kernels are split into row-band tasks (SPMD) that the scheduler spreads over the cores.
import { afterAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { pl, ir, ChipWorker, RunConfig, randn, zeros, tensor, assertClose, type HostTensor } from "tspto";
import { forEachStmt } from "../../src/ir/index.js";

const add = pl.jit(function add(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

const fused = pl.jit(function fused(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(pl.mul(pl.sub(a, b), a), 3)); });
  return out;
});

const inplace = pl.jit(function inplace(x: pl.InOut<pl.Tensor>, y: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(x, pl.add(x, y)); });
  return x;
});

const ROWS = 512, COLS = 256, TR = 32;
/** A hand-written row loop over tiles inside one pl.at, then a second kernel that reads the first's output. */
const rowLoop = pl.jit(function rowLoop(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const r of pl.range(0, ROWS, TR)) {
      const t = pl.load(a, [r, 0], [TR, COLS]);
      pl.store(pl.mul(pl.add(t, 1), 2), [r, 0], mid);
    }
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const r of pl.range(0, ROWS, TR)) {
      const t = pl.load(mid, [r, 0], [TR, COLS]);
      pl.store(pl.sub(t, 5), [r, 0], out);
    }
  });
  return out;
});

/** A load of the store's window (forwarded into the store) next to a shifted one (staged). */
const shifted = pl.jit(function shifted(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const r of pl.range(0, ROWS - TR, TR)) {
      const next = pl.load(a, [r + TR, 0], [TR, COLS]);
      const here = pl.load(a, [r, 0], [TR, COLS]);
      pl.store(pl.sub(next, here), [r, 0], out);
    }
  });
  return out;
});

/** Orchestration loop: one task per tile (already many tasks without the split). */
const tiles = pl.jit(function tiles(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, ROWS, TR)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [TR, COLS]);
      pl.store(pl.mul(t, t), [r, 0], out);
    });
  }
  return out;
});

const ALL = Math.max(2, availableParallelism());
const saved = process.env.TSPTO_CORE_THREADS;
const workers: ChipWorker[] = [];
afterAll(() => {
  for (const w of workers) w.close();
  if (saved === undefined) delete process.env.TSPTO_CORE_THREADS; else process.env.TSPTO_CORE_THREADS = saved;
});

/** A worker with `n` core threads. */
function workerWith(n: number, platform: "cpu" | "interp" = "cpu"): ChipWorker {
  process.env.TSPTO_CORE_THREADS = String(n);
  const w = new ChipWorker(new RunConfig({ platform }));
  workers.push(w);
  return w;
}

const clone = (t: HostTensor) => tensor(t.data.slice() as never, { shape: t.shape, dtype: t.dtype });

/**
 * The first element where `got` and `want` differ (Object.is: -0 is not 0, NaN is NaN), or null;
 * a loop, where toEqual on arrays of a million numbers held the event loop for seconds.
 */
function firstDifference(got: ArrayLike<number>, want: ArrayLike<number>): string | null {
  if (got.length !== want.length) return `length ${got.length}, want ${want.length}`;
  for (let i = 0; i < got.length; i++) if (!Object.is(got[i], want[i])) return `element ${i}: ${got[i]}, want ${want[i]}`;
  return null;
}

/** Runs `f` on interp, then on cpu with 1 and `ALL` core threads; outputs must match exactly. */
function agree(f: { compile(...a: unknown[]): ReturnType<typeof ir.compile> }, make: () => HostTensor[], exact = true) {
  const ref = make();
  const interp = ir.compile((f as never as { lower(...a: unknown[]): never }).lower(...ref), { platform: "interp" });
  workerWith(1, "interp").run(interp, ...ref);
  const compiled = f.compile(...make());
  const tasks: number[] = [];
  for (const n of [1, ALL]) {
    const args = make();
    const w = workerWith(n);
    const before = w.deviceStats!.tasksRun;
    w.run(compiled, ...args);
    tasks.push(w.deviceStats!.tasksRun - before);
    args.forEach((t, i) => {
      if (exact) expect(firstDifference(t.data as ArrayLike<number>, ref[i].data as ArrayLike<number>), `argument ${i} on ${n} core threads`).toBeNull();
      else assertClose(t, ref[i], { rtol: 1e-6, atol: 1e-6 });
    });
  }
  return { compiled, tasks };
}

describe("results with 1 and with all core threads agree with the interpreter", () => {
  it("pl.assign over a large float32 tensor (split into row bands)", () => {
    const a = randn([1024, 512], { seed: 1 }), b = randn([1024, 512], { seed: 2 });
    const { tasks } = agree(add, () => [clone(a), clone(b), zeros([1024, 512])]);
    expect(tasks[0]).toBe(1);
    expect(tasks[1]).toBe(Math.min(ALL, 16));
  });

  it("a static row count that is not a multiple of the tile: one loop (the last trip a partial tile), still split into bands", () => {
    const a = randn([1021, 509], { seed: 3 }), b = randn([1021, 509], { seed: 4 });
    const { tasks } = agree(add, () => [clone(a), clone(b), zeros([1021, 509])]);
    expect(tasks[0]).toBe(1);
    expect(tasks[1]).toBeGreaterThan(1);
    const big = add.lower(zeros([1021, 509]), zeros([1021, 509]), zeros([1021, 509]));
    let spmd: unknown;
    forEachStmt(big.entryFunction.body, (s) => { if (s.kind === "eval" && s.expr.kind === "call") spmd = s.expr.attrs.spmd; });
    expect(spmd).toMatchObject({ start: 0 });
    expect((spmd as { stop: number }).stop).toBeGreaterThanOrEqual(1021);
  });

  it("a fused chain on int32 is bit-identical", () => {
    const mk = (seed: number) => tensor(Int32Array.from({ length: 768 * 384 }, (_, i) => ((i * 2654435761 + seed) >>> 0) % 2001 - 1000), { shape: [768, 384], dtype: "int32" });
    const a = mk(1), b = mk(7);
    const { tasks } = agree(fused, () => [clone(a), clone(b), zeros([768, 384], "int32")]);
    expect(tasks[1]).toBeGreaterThan(1);
  });

  it("an InOut kernel (x += y) split into bands", () => {
    const x = randn([1024, 256], { seed: 3 }), y = randn([1024, 256], { seed: 4 });
    const { tasks } = agree(inplace, () => [clone(x), clone(y)]);
    expect(tasks[1]).toBeGreaterThan(1);
  });

  it("hand-written row loops in two kernels, the second reading the first's output", () => {
    const a = randn([ROWS, COLS], { seed: 5 });
    const { tasks } = agree(rowLoop, () => [clone(a), zeros([ROWS, COLS]), zeros([ROWS, COLS])]);
    // each kernel: 16 iterations over 1 MiB of banded data -> up to 8 bands, one per core
    expect(tasks).toEqual([2, 2 * Math.min(ALL, 8)]);
  });

  it("an orchestration loop of tile tasks", () => {
    const a = randn([ROWS, COLS], { seed: 6 });
    const { tasks } = agree(tiles, () => [clone(a), zeros([ROWS, COLS])]);
    expect(tasks).toEqual([ROWS / TR, ROWS / TR]);
  });

  it("the same aliased buffer passed as input and output keeps the sequential result", () => {
    // add(x, y, x): out aliases a; bands touch disjoint rows, so the result is x + y
    const x = randn([1024, 512], { seed: 8 }), y = randn([1024, 512], { seed: 9 });
    const compiled = add.compile(x, y, zeros([1024, 512]));
    const w = workerWith(ALL);
    const dx = w.allocTensor([1024, 512], "float32", { init: x });
    const dy = w.allocTensor([1024, 512], "float32", { init: y });
    w.run(compiled, dx, dy, dx);
    const got = zeros([1024, 512]);
    w.copyFrom(got, dx, dx.nbytes);
    expect(Array.from(got.data as Float32Array)).toEqual(Array.from(x.add(y).data as Float32Array));
  });
});

describe("load forwarding", () => {
  it("reads a load of the store's window straight from the tensor, and stages a shifted one", () => {
    const a = randn([ROWS, COLS], { seed: 10 });
    const { compiled } = agree(shifted, () => [clone(a), zeros([ROWS, COLS])]);
    const src = readFileSync(join(compiled.outputDir, "kernels", "program.cpp"), "utf8");
    expect(src).toMatch(/here \(forwarded load\)/);
    expect(src).not.toMatch(/next \(forwarded load\)/);
    const big = add.compile(zeros([1024, 512]), zeros([1024, 512]), zeros([1024, 512]));
    expect(readFileSync(join(big.outputDir, "kernels", "program.cpp"), "utf8").match(/\(forwarded load\)/g)).toHaveLength(2);
  });
});

describe("SPMD split", () => {
  it("adds loop-bound parameters and an spmd attribute; small kernels stay one task", () => {
    const big = add.lower(zeros([1024, 512]), zeros([1024, 512]), zeros([1024, 512]));
    const k = big.functions.find((f) => f.fnKind === "incore")!;
    expect(k.params.map((p) => p.var.name).slice(-2)).toEqual(["spmd_lo", "spmd_hi"]);
    let spmd: unknown;
    forEachStmt(big.entryFunction.body, (s) => { if (s.kind === "eval" && s.expr.kind === "call") spmd = s.expr.attrs.spmd; });
    expect(spmd).toMatchObject({ lo: 3, hi: 4, start: 0, stop: 1024 });
    const small = add.lower(zeros([64, 64]), zeros([64, 64]), zeros([64, 64]));
    expect(small.functions.find((f) => f.fnKind === "incore")!.params.length).toBe(3);
  });
});

// benchmark(compiled, args, { roofline: true }) (src/runtime/roofline.ts): one row per task
// kernel with the IR's counts, the measured time of its tasks and the roof that applies; the
// rows' numbers agree with each other and with the machine's limits (no absolute timing
// thresholds); of two forms of one computation, the slow one loses more time against its roof;
// the report is written for the DFX HTML; a platform without per-task times or limits says so
// in the report instead of showing numbers it does not have; a bad option is an error.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pl, benchmark, benchmarkAsync, ChipWorker, RunConfig, randn, zeros, type RooflineRow } from "tspto";
import { readMarker } from "../../src/artifact/index.js";
import { forgetLimitsMemo, limitsMeasurements } from "../../src/targets/cpu/index.js";
import { webgpuUnavailable } from "../targets/webgpu/helpers.js";
import { getTarget } from "../../src/targets/index.js";

const ROWS = 128, COLS = 128;
const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});
const matmul = pl.jit(function matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.matmul(a, b)); });
  return c;
});
/** Two kernels: a matmul, then a row softmax of its result. */
const twoKernels = pl.jit(function twoKernels(a: pl.Tensor, b: pl.Tensor, t: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(t, pl.matmul(a, b)); });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.exp(pl.rowExpandSub(t, pl.rowMax(t)))); });
  return out;
});

const N = 1024;
/** out = a + b row by row: each load reads a contiguous row. */
const addRows = pl.jit(function addRows(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, N)) pl.store(pl.add(pl.load(a, [i, 0], [1, N]), pl.load(b, [i, 0], [1, N])), [i, 0], out);
  });
  return out;
});
/** The same sum column by column: the same bytes and flops, each element from another cache line. */
const addCols = pl.jit(function addCols(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const j of pl.range(0, N)) pl.store(pl.add(pl.load(a, [0, j], [N, 1]), pl.load(b, [0, j], [N, 1])), [0, j], out);
  });
  return out;
});

const workers: ChipWorker[] = [];
afterAll(() => { for (const w of workers) w.close(); });
const cpuWorker = () => { const w = new ChipWorker(new RunConfig({ platform: "cpu" })); workers.push(w); return w; };

// the machine's limits (measured once per machine: seconds of programs) and the cpu programs
// built off the event loop first, so that no test holds it for long on a slow machine
beforeAll(async () => {
  await getTarget("cpu").limitsAsync!(cpuWorker().coreThreads);
  const z = (r: number, c: number) => zeros([r, c]);
  await Promise.all([
    addKernel.compileAsync(z(ROWS, COLS), z(ROWS, COLS), z(ROWS, COLS)), matmul.compileAsync(z(256, 256), z(256, 256), z(256, 256)),
    twoKernels.compileAsync(z(128, 256), z(256, 512), z(128, 512), z(128, 512)),
    addRows.compileAsync(z(N, N), z(N, N), z(N, N)), addCols.compileAsync(z(N, N), z(N, N), z(N, N)),
  ]);
});

/** The row's derived numbers from its counts, its time and the limits (what the report promises). */
function checkRow(r: RooflineRow, l: { readGBs: number; fmaGflops: number }): void {
  expect(r.us).toBeGreaterThan(0);
  expect(r.gbps).toBeCloseTo(r.bytes! / (r.us! * 1e3), 6);
  expect(r.gflops).toBeCloseTo(r.flops! / (r.us! * 1e3), 6);
  expect(r.intensity).toBeCloseTo(r.flops! / r.bytes!, 9);
  expect(r.fraction).toBeGreaterThan(0);
  expect(r.fraction).toBeLessThanOrEqual(1);
  expect(r.lostUs).toBeGreaterThanOrEqual(0);
  expect(r.lostUs).toBeCloseTo(Math.max(0, r.us! - r.roofUs!), 6);
  expect(r.fraction).toBeCloseTo(Math.min(1, r.roofUs! / r.us!), 9);
  expect(r.aboveRoof).toBe(r.roofUs! > r.us!);
  // which roof applies: the arithmetic intensity against the ridge point (flops all on the FMA pipes here)
  const ridge = l.fmaGflops / l.readGBs;
  expect(r.bound).toBe(r.intensity! > ridge ? "compute" : "memory");
  const memUs = r.bytes! / (l.readGBs * 1e3), computeUs = r.flops! / (l.fmaGflops * 1e3);
  expect(r.roofUs).toBeCloseTo(Math.max(memUs, computeUs), 9);
}

describe("benchmark(..., { roofline: true }) on cpu", () => {
  it("the quickstart add: one row with the IR's counts, the measured time and the memory roof; stats.limits; toString prints the table", () => {
    const A = randn([ROWS, COLS], { seed: 0 }), B = randn([ROWS, COLS], { seed: 1 }), O = zeros([ROWS, COLS]);
    const compiled = addKernel.compile(A, B, O);
    const s = benchmark(compiled, [A, B, O], { roofline: true, rounds: 20, worker: cpuWorker() });
    const l = s.limits!;
    expect(l.readGBs).toBeGreaterThan(0);
    expect(l.fmaGflops).toBeGreaterThan(0);
    const report = s.roofline!;
    expect(report.program).toBe("addKernel");
    expect(report.platform).toBe("cpu");
    expect(report.launches).toBe(20);
    expect(report.per).toBe("launch");
    expect(report.notes).toEqual([]);
    expect(report.rows).toHaveLength(1);
    const r = report.rows[0];
    expect(r).toMatchObject({ kernel: "addKernel_incore_0", tasks: 1, calls: 1, bytes: 3 * ROWS * COLS * 4, readBytes: 2 * ROWS * COLS * 4, writeBytes: ROWS * COLS * 4, flops: ROWS * COLS, flopsByUnit: { vector: ROWS * COLS, dotBf16: 0, dotInt8: 0 }, note: null });
    checkRow(r, l);
    expect(r.bound).toBe("memory");
    const text = s.toString();
    expect(text).toContain("roofline of addKernel on cpu, per launch (times: the median of 20 launches), sorted by time lost against the roof");
    expect(text).toMatch(/\n {2}addKernel_incore_0 +1 +192\.0 KiB +16\.4 K +\d+\.\d\d /);
    expect(String(report)).toBe(text.slice(text.indexOf("roofline of")));
  });

  it("a [256,256]x[256,256] matmul: 2·M·N·K flops, operands and result at least once, its roof by intensity; the limits are not measured again", () => {
    const before = limitsMeasurements();
    const M = randn([256, 256], { seed: 2 }), K = randn([256, 256], { seed: 3 }), C = zeros([256, 256]);
    const s = benchmark(matmul.compile(M, K, C), [M, K, C], { roofline: true, rounds: 10, worker: cpuWorker() });
    expect(limitsMeasurements()).toBe(before);
    const [r] = s.roofline!.rows;
    expect(r.kernel).toBe("matmul_incore_0");
    expect(r.flops).toBe(2 * 256 ** 3);
    expect(r.bytes).toBeGreaterThanOrEqual(3 * 256 * 256 * 4);
    expect(r.tasks).toBeGreaterThanOrEqual(1);
    checkRow(r, s.limits!);
  });

  it("rows are sorted by time lost, one per kernel of the launch", () => {
    const a = randn([128, 256], { seed: 4 }), b = randn([256, 512], { seed: 5 }), t = zeros([128, 512]), o = zeros([128, 512]);
    const s = benchmark(twoKernels.compile(a, b, t, o), [a, b, t, o], { roofline: true, rounds: 10, worker: cpuWorker() });
    const rows = s.roofline!.rows;
    expect(rows.map((r) => r.kernel).sort()).toEqual(["twoKernels_incore_0", "twoKernels_incore_1"]);
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1].lostUs!).toBeGreaterThanOrEqual(rows[i].lostUs!);
    for (const r of rows) checkRow(r, s.limits!);
    const mm = rows.find((r) => r.kernel === "twoKernels_incore_0")!;
    expect(mm.flops).toBe(2 * 128 * 256 * 512);
  });

  it("flags the slow form of one computation: the same bytes and flops column by column lose more time and reach less of the roof than row by row", () => {
    const a = randn([N, N], { seed: 6 }), b = randn([N, N], { seed: 7 }), o = zeros([N, N]);
    const w = cpuWorker();
    const fast = benchmark(addRows.compile(a, b, o), [a, b, o], { roofline: true, rounds: 10, worker: w }).roofline!.rows[0];
    const slow = benchmark(addCols.compile(a, b, o), [a, b, o], { roofline: true, rounds: 10, worker: w }).roofline!.rows[0];
    expect(slow.bytes).toBe(fast.bytes);
    expect(slow.flops).toBe(fast.flops);
    expect(slow.bytes).toBe(3 * N * N * 4);
    expect(slow.bound).toBe("memory");
    expect(slow.lostUs!).toBeGreaterThan(fast.lostUs!);
    expect(slow.fraction!).toBeLessThan(fast.fraction!);
  });

  it("writes the report to <outputDir>/dfx_outputs/roofline.json, recorded in the artifact's marker", () => {
    const A = randn([ROWS, COLS], { seed: 8 }), B = randn([ROWS, COLS], { seed: 9 }), O = zeros([ROWS, COLS]);
    const compiled = addKernel.compile(A, B, O);
    const s = benchmark(compiled, [A, B, O], { roofline: true, rounds: 5, worker: cpuWorker() });
    const file = join(compiled.outputDir, "dfx_outputs", "roofline.json");
    expect(existsSync(file)).toBe(true);
    const doc = JSON.parse(readFileSync(file, "utf8"));
    expect(doc.format).toBe("tspto-roofline-1");
    expect(doc.rows).toEqual(JSON.parse(JSON.stringify(s.roofline!.rows)));
    expect(doc.limits).toEqual(JSON.parse(JSON.stringify(s.limits)));
    const marker = readMarker(compiled.outputDir);
    expect(marker && marker !== "invalid" && marker.files).toContain("dfx_outputs/roofline.json");
  });

  it("without roofline: no report, no limits, and the launches record nothing", () => {
    const A = randn([ROWS, COLS]), B = randn([ROWS, COLS]), O = zeros([ROWS, COLS]);
    const w = cpuWorker();
    const s = benchmark(addKernel.compile(A, B, O), [A, B, O], { rounds: 3, worker: w });
    expect(s.roofline).toBeUndefined();
    expect(s.limits).toBeUndefined();
    expect(w.tracingTasks).toBe(false);
    expect(s.toString()).not.toContain("roofline");
  });
});

describe("the report degrades clearly where times or limits are missing, and bad options are errors", () => {
  it("roofline must be a boolean", () => {
    const A = randn([ROWS, COLS]), B = randn([ROWS, COLS]), O = zeros([ROWS, COLS]);
    const compiled = addKernel.compile(A, B, O);
    expect(() => benchmark(compiled, [A, B, O], { roofline: "yes" as unknown as boolean })).toThrow(
      "[E_ARG] benchmark: roofline must be true or false, got \"yes\"");
  });

  it("limits that cannot be measured: the times and rates, no roofs, and a note with the reason", () => {
    const A = randn([ROWS, COLS]), B = randn([ROWS, COLS]), O = zeros([ROWS, COLS]);
    const compiled = addKernel.compile(A, B, O);
    const saved = { cxx: process.env.CXX, cache: process.env.TSPTO_CACHE_DIR };
    const cache = mkdtempSync(join(tmpdir(), "tspto-rf-nolimits-"));
    process.env.CXX = join(cache, "no-such-cxx");
    process.env.TSPTO_CACHE_DIR = cache;
    forgetLimitsMemo();
    try {
      const s = benchmark(compiled, [A, B, O], { roofline: true, rounds: 3, worker: cpuWorker() });
      expect(s.limits).toBeNull();
      expect(s.roofline!.notes).toEqual([`no roofs: measuring the machine's limits failed: [E_CXX] C++ compiler '${process.env.CXX}' could not be run (ENOENT)`]);
      const r = s.roofline!.rows[0];
      expect(r.us).toBeGreaterThan(0);
      expect(r.gbps).toBeCloseTo(r.bytes! / (r.us! * 1e3), 6);
      expect(r).toMatchObject({ bound: null, fraction: null, lostUs: null, roofUs: null });
    } finally {
      for (const [k, v] of [["CXX", saved.cxx], ["TSPTO_CACHE_DIR", saved.cache]] as const) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
      forgetLimitsMemo();
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it("interp (no per-task times, no limits): the counts, no times, no roofs, and notes that say why", () => {
    const cfg = new RunConfig({ platform: "interp" });
    const A = randn([ROWS, COLS]), B = randn([ROWS, COLS]), O = zeros([ROWS, COLS]);
    const compiled = addKernel.compile(A, B, O, cfg);
    const w = new ChipWorker(cfg);
    workers.push(w);
    const s = benchmark(compiled, [A, B, O], { roofline: true, rounds: 2, worker: w });
    expect(s.limits).toBeNull();
    const r = s.roofline!.rows[0];
    expect(r).toMatchObject({ kernel: "addKernel_incore_0", tasks: null, bytes: 3 * ROWS * COLS * 4, flops: ROWS * COLS, us: null, gbps: null, gflops: null, bound: null, fraction: null, lostUs: null });
    expect(s.roofline!.notes).toEqual([
      "no per-task times: the 'interp' platform's device records no DFX trace, so no row has a time, a rate or a fraction of its roof; the bytes and flops are the program's",
      "no roofs: the 'interp' platform measures no machine limits, so no row has a bound, a fraction or a lost time",
    ]);
    const text = s.toString();
    expect(text).toContain("  limits: none measured");
    expect(text).toMatch(/\n {2}addKernel_incore_0 +— +192\.0 KiB +16\.4 K +— +— +— +0\.0833 +— +— +—\n/);
    expect(text).toContain("  note: no per-task times: the 'interp' platform's device records no DFX trace");
  });

  it("webgpu (per-dispatch times, no limits): times and rates, no roofs, and a note", async () => {
    const why = await webgpuUnavailable();
    if (why) { console.warn(`webgpu roofline case skipped: ${why}`); return; }
    const cfg = new RunConfig({ platform: "webgpu" });
    const A = randn([256, 256]), B = randn([256, 256]), O = zeros([256, 256]);
    const addT = pl.jit(function addT(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
      return out;
    });
    const compiled = addT.compile(A, B, O, cfg);
    const w = new ChipWorker(cfg);
    workers.push(w);
    await w.initAsync();
    const s = await benchmarkAsync(compiled, [A, B, O], { roofline: true, rounds: 3, worker: w });
    expect(s.limits).toBeNull();
    const r = s.roofline!.rows[0];
    expect(r.kernel).toBe("addT_incore_0");
    expect(r.bytes).toBe(3 * 256 * 256 * 4);
    expect(r.bound).toBeNull();
    expect(r.lostUs).toBeNull();
    const notes = s.roofline!.notes;
    expect(notes).toContain("no roofs: the 'webgpu' platform measures no machine limits, so no row has a bound, a fraction or a lost time");
    if (r.us === null) expect(notes[0]).toMatch(/^no per-task times: the 'webgpu' device's trace has no timestamps/);
    else expect(r.gbps).toBeCloseTo(r.bytes! / (r.us * 1e3), 6);
  });
});

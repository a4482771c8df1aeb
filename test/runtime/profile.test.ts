// The process-wide profile behind `tspto profile` (src/runtime/profile.ts): every launch of every
// worker is counted with its own arguments (a dynamic program's bytes follow each launch's
// extents) and timed from its tasks, summed per program and kernel; a launch without per-task
// times leaves the rows without times (never a partial sum), and the report says so.
import { afterAll, describe, expect, it } from "vitest";
import { pl, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { Profiler } from "../../src/runtime/profile.js";

const dyn = pl.jit(function dynAdd(a: pl.Tensor<["M", 64], pl.FP32>, b: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 64], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

const workers: ChipWorker[] = [];
afterAll(() => { for (const w of workers) w.close(); });

describe("Profiler", () => {
  it("sums each launch's counts (with its own extents) and its tasks' times per program and kernel", () => {
    const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
    workers.push(w);
    const compiled = dyn.compile(randn([64, 64]), randn([64, 64]), zeros([64, 64]));
    const p = new Profiler().start();
    let tasks = 0;
    const off = w.addTaskListener((_w, _r, trace) => { tasks += trace!.tasks.length; });
    try {
      for (const m of [64, 200, 1000]) w.run(compiled, randn([m, 64]), randn([m, 64]), zeros([m, 64]));
    } finally { p.stop(); off(); }
    w.run(compiled, randn([8, 64]), randn([8, 64]), zeros([8, 64])); // after stop: not counted
    const [report, ...more] = p.reports();
    expect(more).toEqual([]);
    expect(report).toMatchObject({ program: "dynAdd", platform: "cpu", launches: 3, per: "total", notes: [] });
    const [row] = report.rows;
    expect(row.kernel).toBe("dynAdd_incore_0");
    expect(row.calls).toBe(3);
    expect(row.tasks).toBe(tasks);
    expect(row.bytes).toBe(3 * (64 + 200 + 1000) * 64 * 4);
    expect(row.flops).toBe((64 + 200 + 1000) * 64);
    expect(row.us).toBeGreaterThan(0);
    expect(row.gbps).toBeCloseTo(row.bytes! / (row.us! * 1e3), 6);
    expect(row.lostUs).toBeCloseTo(Math.max(0, row.us! - row.roofUs!), 6);
  });

  it("a launch without per-task times: no row gets a time (not a partial sum), and the report says how many had them", () => {
    const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
    workers.push(w);
    const args = [randn([64, 64]), randn([64, 64]), zeros([64, 64])];
    const compiled = dyn.compile(...args);
    const p = new Profiler().start();
    try {
      for (let i = 0; i < 3; i++) w.run(compiled, ...args);
    } finally { p.stop(); }
    p.launch(w, w.registration(compiled), null, args); // as a device without a trace
    const [report] = p.reports();
    expect(report.launches).toBe(4);
    expect(report.rows[0]).toMatchObject({ calls: 4, bytes: 4 * 3 * 64 * 64 * 4, us: null, tasks: null, fraction: null, lostUs: null });
    expect(report.notes).toEqual(["only 3 of the 4 launches had per-task times: no row has a time"]);
  });
});

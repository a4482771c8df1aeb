// DFX outputs (issue 5): a 4-task program run with every RunConfig DFX flag on writes
// swimlane.json, deps.json, pmu.csv, args_dump/ and scope_stats.jsonl under
// <outputDir>/dfx_outputs/, one record per task; with every flag off nothing is written.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ir, pl, ChipWorker, RunConfig, randn, zeros, assertClose, type HostTensor } from "tspto";
import { readArgsDump, derivedEdges } from "../../src/runtime/dfx.js";
import { BenchmarkStats } from "../../src/runtime/benchmark.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "bin", "tspto.mjs");
const TR = 16, COLS = 32, BANDS = 4;

/** Four tasks, one per row band; band i reads c's band i and writes band i+1: a chain. */
const chain = pl.jit(function chain(a: pl.Tensor, c: pl.InOut<pl.Tensor>) {
  for (const i of pl.range(BANDS)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(c, [i * TR, 0], [TR, COLS]);
      const u = pl.load(a, [i * TR, 0], [TR, COLS]);
      pl.store(pl.add(t, u), [i * TR + TR, 0], c);
    });
  }
  return c;
});

const dirs: string[] = [];
const workers: ChipWorker[] = [];
afterAll(() => {
  for (const w of workers) w.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function build(): { compiled: ReturnType<typeof ir.compile>; a: HostTensor; c: HostTensor } {
  const dir = mkdtempSync(join(tmpdir(), "tspto-dfx-"));
  dirs.push(dir);
  const a = randn([BANDS * TR + TR, COLS], { seed: 3 });
  const c = randn([BANDS * TR + TR, COLS], { seed: 4 });
  const compiled = ir.compile(chain.lower(a, c), { platform: "cpu", outputDir: dir });
  return { compiled, a, c };
}

function expected(a: HostTensor, c: HostTensor): Float32Array {
  const x = Float32Array.from(c.data as Float32Array);
  const ad = a.data as Float32Array;
  for (let i = 0; i < BANDS; i++) {
    for (let r = 0; r < TR; r++) for (let k = 0; k < COLS; k++) {
      x[((i + 1) * TR + r) * COLS + k] = x[(i * TR + r) * COLS + k] + ad[(i * TR + r) * COLS + k];
    }
  }
  return x;
}

const ALL_ON = { enableChipSwimlane: 4, enableDepGen: true, enablePmu: true, enableDumpArgs: 2, enableScopeStats: true } as const;

describe("DFX outputs (cpu)", () => {
  it("every flag on: one record per task in each file, and inspect --trace renders them", () => {
    const { compiled, a, c } = build();
    const w = new ChipWorker(new RunConfig({ platform: "cpu", ...ALL_ON }));
    workers.push(w);
    const want = expected(a, c);
    w.run(compiled, a, c);
    assertClose(c, { data: want, shape: c.shape, dtype: "float32" } as never);
    const dfx = join(compiled.outputDir, "dfx_outputs");
    expect(readdirSync(dfx).sort()).toEqual(["args_dump", "deps.json", "pmu.csv", "scope_stats.jsonl", "swimlane.json"]);

    const trace = JSON.parse(readFileSync(join(dfx, "swimlane.json"), "utf8"));
    const xs = trace.traceEvents.filter((e: { ph: string; cat?: string }) => e.ph === "X" && e.cat === "task");
    expect(xs).toHaveLength(BANDS);
    for (const e of xs) expect(compiled.meta.kernels.map((k) => k.name)).toContain(e.name);
    expect(xs.map((e: { args: { task: number } }) => e.args.task).sort()).toEqual([0, 1, 2, 3]);
    expect(trace.traceEvents.some((e: { ph: string; name: string }) => e.ph === "M" && e.name === "thread_name")).toBe(true);

    const deps = JSON.parse(readFileSync(join(dfx, "deps.json"), "utf8"));
    expect(deps.tasks).toHaveLength(BANDS);
    // The graph from the recorded accesses, independent of timing: every task writes c (its
    // accesses name the whole tensor), so each depends on the one before; a is only read.
    expect(deps.edges).toEqual([{ from: 0, to: 1, tensor: "c" }, { from: 1, to: 2, tensor: "c" }, { from: 2, to: 3, tensor: "c" }]);

    const pmu = readFileSync(join(dfx, "pmu.csv"), "utf8").trim().split("\n").filter((l) => !l.startsWith("#"));
    expect(pmu[0]).toBe("task,kernel,core,scope,start_ns,wall_ns,cycles,instructions");
    expect(pmu.slice(1)).toHaveLength(BANDS);

    const dump = readArgsDump(dfx);
    expect(dump.level).toBe(2);
    expect(dump.tasks).toHaveLength(BANDS);
    // Task 1 writes band 2 of c: its "after" snapshot of c holds the result there.
    const t1 = dump.tasks.find((t) => t.task === 1)!;
    const wrote = t1.args.find((x) => x.tensor === "c" && x.mode !== "read")!;
    expect(wrote).toBeDefined();
    const ab = wrote.afterBytes!;
    const after = new Float32Array(ab.buffer.slice(ab.byteOffset, ab.byteOffset + ab.byteLength));
    const band2 = (2 * TR * COLS * 4 - wrote.offset) / 4;
    expect(Array.from(after.subarray(band2, band2 + 16))).toEqual(Array.from(want.subarray(2 * TR * COLS, 2 * TR * COLS + 16)));
    expect(wrote.after).toHaveLength(16);

    const scopes = readFileSync(join(dfx, "scope_stats.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(scopes.length).toBeGreaterThanOrEqual(1);
    expect(scopes.reduce((n: number, s: { tasks: number }) => n + s.tasks, 0)).toBe(BANDS);

    const r = spawnSync(process.execPath, [BIN, "inspect", compiled.outputDir, "--trace", "--graph"], { cwd: tmpdir(), encoding: "utf8", timeout: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const html = readFileSync(join(dfx, "swimlane.html"), "utf8");
    // One bar per task; level 4 adds the orchestration and drain phases as two spans on their
    // own row (not tasks: drawn apart, clipped to the tasks' span, not in the task count)
    const kernel = compiled.meta.kernels[0].name;
    expect(html.split(`<g data-kernel="${kernel}"><rect class="task"`).length - 1).toBe(BANDS);
    expect(html.match(/<rect class="task"/g)).toHaveLength(BANDS);
    expect(html).toContain(`${BANDS} tasks on `);
    expect(html).toContain("+ orchestration (2 spans)");
  }, 120_000);

  it("level-1 args dump: metadata and the first 16 values, no .bin files", () => {
    const { compiled, a, c } = build();
    const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
    workers.push(w);
    w.run(compiled, a, c, new RunConfig({ platform: "cpu", enableDumpArgs: 1 }));
    const dfx = join(compiled.outputDir, "dfx_outputs");
    expect(readdirSync(dfx)).toEqual(["args_dump"]);
    expect(readdirSync(join(dfx, "args_dump"))).toEqual(["index.json"]);
    const dump = readArgsDump(join(dfx, "args_dump"));
    expect(dump.tasks).toHaveLength(BANDS);
    for (const t of dump.tasks) for (const x of t.args) expect(x.before.length).toBeLessThanOrEqual(16);
  }, 120_000);

  it("all flags off: no dfx_outputs directory; a trailing RunConfig turns recording on for one launch only", () => {
    const { compiled, a, c } = build();
    const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
    workers.push(w);
    w.run(compiled, a, c);
    w.register(compiled)(a, c);
    expect(existsSync(join(compiled.outputDir, "dfx_outputs"))).toBe(false);
    w.run(compiled, a, c, new RunConfig({ platform: "cpu", enableChipSwimlane: true }));
    const file = join(compiled.outputDir, "dfx_outputs", "swimlane.json");
    expect(existsSync(file)).toBe(true);
    rmSync(join(compiled.outputDir, "dfx_outputs"), { recursive: true });
    w.run(compiled, a, c);
    expect(existsSync(join(compiled.outputDir, "dfx_outputs"))).toBe(false);
  }, 120_000);

  it("interp platform: writes nothing (its device records no DFX) and says so once", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-dfx-interp-"));
    dirs.push(dir);
    const a = randn([BANDS * TR + TR, COLS], { seed: 3 });
    const c = zeros([BANDS * TR + TR, COLS]);
    const compiled = ir.compile(chain.lower(a, c), { platform: "interp", outputDir: dir });
    const w = new ChipWorker(new RunConfig({ platform: "interp", ...ALL_ON }));
    workers.push(w);
    const warnings: string[] = [];
    const onWarn = (e: Error) => warnings.push(e.message);
    process.on("warning", onWarn);
    try {
      w.run(compiled, a, c);
      w.run(compiled, a, c);
      return new Promise<void>((resolve, reject) => setImmediate(() => {
        process.off("warning", onWarn);
        try {
          expect(warnings.filter((m) => m.includes("are not recorded by the 'interp' platform's device"))).toHaveLength(1);
          expect(existsSync(join(dir, "dfx_outputs"))).toBe(false);
          resolve();
        } catch (e) { reject(e); }
      }));
    } catch (e) {
      process.off("warning", onWarn);
      throw e;
    }
  }, 120_000);
});

describe("BenchmarkStats.printTree", () => {
  it("splits the mean host call into the device launch and the rest on the host", () => {
    const s = new BenchmarkStats([10, 20], [30, 50], 2, 1);
    const text = s.printTree(false);
    expect(text).toContain("host call            40.00 us");
    expect(text).toContain("device launch     15.00 us (37.5%)");
    expect(text).toContain("host other        25.00 us (62.5%)");
  });
});

describe("deps.json edges from recorded accesses", () => {
  const R = 1, W = 2;
  const task = (id: number, ...acc: [number, number, number][]) =>
    ({ id, kernel: "k", scope: 0, core: 0, submitNs: 0, startNs: 0, endNs: 0, cycles: -1, instructions: -1,
      accesses: acc.map(([base, nbytes, mode]) => ({ base: BigInt(base), nbytes, mode })) });
  it("disjoint band writes are independent; a reader of the whole depends on every band; WAR and WAW are edges", () => {
    const tasks = [
      task(0, [0, 100, R], [1000, 50, W]),     // band 0 of out
      task(1, [0, 100, R], [1050, 50, W]),     // band 1 of out
      task(2, [1000, 100, R], [2000, 100, W]), // reads both bands
      task(3, [1000, 100, W]),                 // overwrites out: WAR on 2, WAW on 0 and 1 (covered by nothing newer)
      task(4, [1000, 100, R]),                 // reads out: only the newest covering writer, 3
    ];
    const edges = derivedEdges(tasks).map((e) => `${e.from}->${e.to}`).sort();
    expect(edges).toEqual(["0->2", "0->3", "1->2", "1->3", "2->3", "3->4"]);
  });
});

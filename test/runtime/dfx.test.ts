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
import { readArgsDump, derivedEdges, accessesOverlap, idleReason, type NativeTraceTask } from "../../src/runtime/dfx.js";
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

describe("deps.json edges: the region index gives the task-by-task scan's edges (issue 19 item 6)", () => {
  type Acc = NativeTraceTask["accesses"][number];
  /** The definition: scan back from each access of task j, link every conflicting overlap, stop at a covering write. */
  function scanEdges(tasks: readonly NativeTraceTask[]) {
    const out: { from: number; to: number; access: Acc }[] = [];
    const seen = new Set<string>();
    for (let j = 0; j < tasks.length; j++) {
      for (const aj of tasks[j].accesses) {
        scan: for (let i = j - 1; i >= 0; i--) {
          for (const ai of tasks[i].accesses) {
            if (!((ai.mode | aj.mode) & 2) || !accessesOverlap(ai, aj)) continue;
            const key = `${tasks[i].id}>${tasks[j].id}`;
            if (!seen.has(key)) { seen.add(key); out.push({ from: tasks[i].id, to: tasks[j].id, access: aj }); }
            if (ai.mode & 2 && coversRef(ai, aj)) break scan;
          }
        }
      }
    }
    return out;
  }
  function coversRef(a: Acc, b: Acc): boolean {
    const x = a.window, y = b.window;
    if (x && y && x.tensor === y.tensor && x.elemBytes === y.elemBytes && x.dims.join() === y.dims.join()) {
      return x.offsets.every((o, k) => o <= y.offsets[k] && y.offsets[k] + y.extents[k] <= o + x.extents[k]);
    }
    return !a.window && a.base <= b.base && b.base + BigInt(b.nbytes) <= a.base + BigInt(a.nbytes);
  }
  /** Seeded random traces: byte ranges and 2-d windows (hull = first to last element) of two tensors, repeats, empty ranges. */
  function randomTrace(seed: number, n: number): NativeTraceTask[] {
    let s = seed >>> 0;
    const rnd = (k: number) => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s % k; };
    const T = [{ base: 4096n, dims: [8, 16] }, { base: 8192n, dims: [16, 8] }];
    const pool: Acc[] = [];
    const fresh = (): Acc => {
      const mode = 1 + rnd(3);
      if (rnd(3) === 0) return { base: BigInt(4096 + rnd(1200)), nbytes: rnd(8) === 0 ? 0 : 1 + rnd(400), mode };
      const t = T[rnd(2)];
      const off = [rnd(t.dims[0]), rnd(t.dims[1])];
      const ext = [1 + rnd(t.dims[0] - off[0]), 1 + rnd(t.dims[1] - off[1])];
      const first = off[0] * t.dims[1] + off[1], last = (off[0] + ext[0] - 1) * t.dims[1] + off[1] + ext[1] - 1;
      return { base: t.base + BigInt(first * 4), nbytes: (last - first + 1) * 4, mode,
        window: { tensor: t.base, elemBytes: 4, dims: t.dims, offsets: off, extents: ext } };
    };
    const tasks: NativeTraceTask[] = [];
    for (let id = 0; id < n; id++) {
      const accesses: Acc[] = [];
      for (let k = 1 + rnd(3); k > 0; k--) {
        const a = pool.length && rnd(2) ? { ...pool[rnd(pool.length)], mode: 1 + rnd(3) } : fresh();
        pool.push(a);
        accesses.push(a);
      }
      tasks.push({ id: 100 + id, kernel: "k", scope: 0, core: 0, submitNs: 0, startNs: 0, endNs: 0, cycles: -1, instructions: -1, accesses });
    }
    return tasks;
  }

  it("random traces: the same edges, in the same order, each naming the same access", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const tasks = randomTrace(seed, 5 + (seed % 40));
      const got = derivedEdges(tasks), want = scanEdges(tasks);
      expect(got.map((e) => `${e.from}>${e.to}`), `seed ${seed}`).toEqual(want.map((e) => `${e.from}>${e.to}`));
      got.forEach((e, k) => expect(e.access, `seed ${seed} edge ${k}`).toBe(want[k].access));
    }
  });

  it("100,000 independent tasks (each reads a row of a, writes a row of out): linear, not a scan of every earlier task", () => {
    // The task-by-task scan visits ~5e9 access pairs here (an hour); the region index a few per access.
    const N = 100_000, ROW = 32;
    const tasks: NativeTraceTask[] = [];
    for (let i = 0; i < N; i++) {
      tasks.push({ id: i, kernel: "k", scope: 0, core: i % 2, submitNs: 0, startNs: i, endNs: i + 1, cycles: -1, instructions: -1,
        accesses: [{ base: BigInt(1 << 20) + BigInt(i * ROW), nbytes: ROW, mode: 1 }, { base: BigInt(1 << 30) + BigInt(i * ROW), nbytes: ROW, mode: 2 }] });
    }
    // ... then one task reads all of out: it depends on every writer
    tasks.push({ id: N, kernel: "sum", scope: 0, core: 0, submitNs: 0, startNs: N, endNs: N + 1, cycles: -1, instructions: -1,
      accesses: [{ base: BigInt(1 << 30), nbytes: N * ROW, mode: 1 }] });
    const edges = derivedEdges(tasks);
    expect(edges).toHaveLength(N);
    expect(edges[0]).toMatchObject({ from: N - 1, to: N });
    expect(edges[N - 1]).toMatchObject({ from: 0, to: N });
    expect(idleReason(tasks, 2)).toMatch(/^independent tasks existed \(widest layer 100000\)/);
  });
});

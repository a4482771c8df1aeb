// The timeline tells the truth (issue 12): orchestration spans get their own row, drawn apart
// and clipped to the tasks (the axis zooms to the tasks: a launch-long orchestration span no
// longer squeezes them); a core that ran no task says why (thread_name args.idle, written by
// the runtime from the recorded tasks); and `tspto inspect` prints the same summary line as the
// swimlane page, on a real recorded launch.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { pl, ir, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { parseTrace, renderTraceHtml, traceSummary } from "../../src/tools/trace.js";
import { idleReason, type NativeTraceTask } from "../../src/runtime/dfx.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

const task = (id: number, core: number, start: number, end: number, acc: NativeTraceTask["accesses"]): NativeTraceTask =>
  ({ id, kernel: "k", scope: 0, core, submitNs: 0, startNs: start * 1000, endNs: end * 1000, cycles: -1, instructions: -1, accesses: acc });
const rw = (base: bigint, nbytes: number, mode: number) => ({ base, nbytes, mode });

describe("idle cores say why", () => {
  it("no task, a single task, fewer tasks than cores", () => {
    expect(idleReason([], 2)).toBe("the launch submitted no task");
    expect(idleReason([task(0, 0, 0, 1, [])], 2)).toBe("the launch had a single task");
    expect(idleReason([task(0, 0, 0, 1, []), task(1, 0, 1, 2, [])], 3)).toBe("only 2 tasks for 3 cores");
  });

  it("as many tasks as cores, the last on the orchestration thread (core == cores)", () => {
    expect(idleReason([task(0, 0, 0, 1, []), task(1, 2, 0, 1, [])], 2)).toBe("2 tasks for 2 cores: the orchestration thread ran the last one itself (one hand-off less)");
  });

  it("a chain of dependent tasks: no independent task", () => {
    const chain = [0, 1, 2, 3].map((i) => task(i, 0, i, i + 1, [rw(4096n, 64, 3)]));
    expect(idleReason(chain, 2)).toBe("no independent task: each of the 4 tasks depends on the one before (widest layer of deps.json: 1)");
  });

  it("independent tasks that one core took: names the width and the task length", () => {
    const free = [0, 1, 2, 3].map((i) => task(i, 0, i, i + 1, [rw(BigInt(4096 + 64 * i), 64, 2)]));
    expect(idleReason(free, 2)).toBe("independent tasks existed (widest layer 4) but the other threads took each one first (mean task 1.0 µs, shorter than a core's wake-up)");
  });
});

describe("swimlane page", () => {
  const trace = {
    traceEvents: [
      { ph: "M", name: "thread_name", pid: 0, tid: 0, args: { name: "core 0" } },
      { ph: "M", name: "thread_name", pid: 0, tid: 1, args: { name: "core 1", idle: "no independent task: each of the 2 tasks depends on the one before (widest layer of deps.json: 1)" } },
      { ph: "M", name: "thread_name", pid: 0, tid: 3, args: { name: "orchestration" } },
      { ph: "X", name: "k_a", cat: "task", pid: 0, tid: 0, ts: 5000, dur: 10, args: { task: 0 } },
      { ph: "X", name: "k_b", cat: "task", pid: 0, tid: 0, ts: 5012, dur: 8, args: { task: 1 } },
      { ph: "X", name: "orchestration", cat: "orchestration", pid: 0, tid: 3, ts: 0, dur: 5015, args: { tasks: 2 } },
      { ph: "X", name: "drain", cat: "orchestration", pid: 0, tid: 3, ts: 5015, dur: 6, args: {} },
    ],
  };

  it("orchestration spans are their own row, not tasks; the axis zooms to the tasks", () => {
    const m = parseTrace(trace);
    expect(m.taskCount).toBe(2);
    expect(m.coreTracks).toBe(2);
    expect(m.orchestrationCount).toBe(2);
    expect([m.t0, m.t1]).toEqual([5000, 5020]);
    expect(m.tracks.map((t) => t.label)).toEqual(["core 0", "core 1", "orchestration"]);
    expect(traceSummary(m)).toBe("2 tasks on 2 tracks (1 idle) + orchestration (2 spans)");
    const html = renderTraceHtml(m);
    expect(html.match(/<rect class="task"/g)).toHaveLength(2);
    expect(html.match(/<rect class="orchestration"/g)).toHaveLength(2);
    // the launch-long span is clipped to the 20 µs of tasks and says it continues
    expect(html).toContain("orchestration (continues)");
    expect(html).toContain("2 tasks on 2 tracks (1 idle) + orchestration (2 spans)");
    // the legend and the kernel table list kernels only
    expect(html).not.toMatch(/<td>[^<]*<\/span>orchestration<\/td>/);
  });

  it("an idle core shows its reason in its row and in the track table", () => {
    const html = renderTraceHtml(parseTrace(trace));
    expect(html).toContain('class="idle"');
    expect(html).toContain("no task: no independent task: each of the 2 tasks depends on the one before (widest layer of deps.json: 1)");
    expect(html).toMatch(/<td>core 1<\/td><td>0<\/td><td colspan="2" class="idle">no independent task/);
  });

  it("a non-string idle reason is a format error naming the field", () => {
    const bad = { traceEvents: [{ ph: "M", name: "thread_name", pid: 0, tid: 1, args: { name: "core 1", idle: 3 } }] };
    expect(() => parseTrace(bad)).toThrow(/traceEvents\[0\]: 'args\.idle' must be a string \(why the track ran no task\), got 3/);
  });
});

const R = 256, C = 64;
const pair = pl.jit(function pair(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, R, 32)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [32, C]);
      pl.store(pl.mul(t, 2), [r, 0], out);
    });
  }
  return out;
});

describe("inspect and the page agree on a recorded launch", () => {
  it("the same summary line; every core has a thread_name (idle ones with a reason)", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-timeline-"));
    dirs.push(dir);
    const a = randn([R, C], { seed: 1 });
    const compiled = ir.compile(pair.lower(a, zeros([R, C])), { platform: "cpu", outputDir: dir });
    const w = new ChipWorker(new RunConfig({ enableChipSwimlane: 4, enableDepGen: true }));
    w.run(compiled, a, zeros([R, C]));
    w.close();
    const json = JSON.parse(readFileSync(join(dir, "dfx_outputs", "swimlane.json"), "utf8"));
    const names = json.traceEvents.filter((e: { ph: string; name: string }) => e.ph === "M" && e.name === "thread_name");
    const coreNames = names.filter((e: { args: { name: string } }) => /^core \d+$/.test(e.args.name));
    expect(coreNames.length).toBeGreaterThanOrEqual(1);
    const model = parseTrace(json);
    for (const t of model.tracks) if (!t.orchestration && t.tasks.length === 0) expect(t.idle).toMatch(/./);
    const line = traceSummary(model);
    expect(line).toMatch(new RegExp(`^${R / 32} tasks on \\d+ tracks?`));
    const bin = join(ROOT, "bin", "tspto.mjs");
    const s = spawnSync(process.execPath, [bin, "inspect", dir], { encoding: "utf8" });
    expect(s.status).toBe(0);
    expect(s.stdout).toContain(line);
    const t = spawnSync(process.execPath, [bin, "inspect", dir, "--trace"], { encoding: "utf8" });
    expect(t.status).toBe(0);
    expect(readFileSync(join(dir, "dfx_outputs", "swimlane.html"), "utf8")).toContain(line);
  });
});

// The swimlane view: Chrome trace -> self-contained HTML with one SVG bar per task.
import { describe, expect, it } from "vitest";
import { DfxFormatError } from "../../src/tools/dfx.js";
import { fmtUs } from "../../src/tools/html.js";
import { parseTrace, renderTraceHtml } from "../../src/tools/trace.js";
import { synthesize, traceJson } from "./synthetic.js";
import { attrs, svgBlocks, unescape, wellFormedProblems } from "./wellformed.js";

interface Bar { attrs: Record<string, string>; title: string }

/** Every task bar of a page: its rect attributes and its tooltip text. */
function bars(html: string): Bar[] {
  return [...html.matchAll(/<rect class="task"([^>]*)><title>([^<]*)<\/title><\/rect>/g)].map((m) => ({ attrs: attrs(m[1]), title: unescape(m[2]) }));
}

function selfContained(html: string): void {
  expect(html).not.toMatch(/<link\b|<script[^>]+src=|<img\b|@import|url\(\s*["']?https?:|href="https?:/i);
}

describe("swimlane view", () => {
  const tasks = synthesize({ cores: 4, tiles: 4, stages: ["load_tile", "matmul_tile", "store_tile"], seed: 3 });
  const trace = traceJson(tasks, 4);

  it("draws exactly one bar per task of a 4-core, 12-task trace, with correct tooltips", () => {
    expect(tasks).toHaveLength(12);
    const html = renderTraceHtml(parseTrace(trace), { title: "Swimlane: tiled" });
    const bs = bars(html);
    expect(html.match(/<rect class="task"/g)).toHaveLength(12);
    expect(bs).toHaveLength(12);
    const t0 = Math.min(...tasks.map((t) => t.ts));
    for (const t of tasks) {
      const matching = bs.filter((b) => b.title.includes(`task: ${t.id}\n`) || b.title.endsWith(`task: ${t.id}`));
      expect(matching, `bar of task ${t.id}`).toHaveLength(1);
      const b = matching[0];
      const lines = b.title.split("\n");
      expect(lines[0]).toBe(t.kernel);
      expect(lines).toContain(`track: core ${t.core}`);
      expect(lines).toContain(`start: +${fmtUs(t.ts - t0)} (ts ${t.ts} µs)`);
      expect(lines).toContain(`duration: ${fmtUs(t.dur)}`);
      expect(lines).toContain(`  scope: ${t.scope}`);
      expect(lines).toContain(`  core: ${t.core}`);
      expect(Number(b.attrs["data-ts"])).toBe(t.ts);
      expect(Number(b.attrs["data-dur"])).toBe(t.dur);
    }
  });

  it("puts each core on its own row, places bars by time and colours them by kernel", () => {
    const html = renderTraceHtml(parseTrace(trace));
    const bs = bars(html);
    const byTask = new Map(bs.map((b) => [Number(/task: (\d+)/.exec(b.title)![1]), b]));
    // one row per core, in core order
    const rowY = new Map<number, number>();
    for (const t of tasks) {
      const y = Number(byTask.get(t.id)!.attrs.y);
      if (rowY.has(t.core)) expect(y).toBe(rowY.get(t.core));
      else rowY.set(t.core, y);
    }
    expect([...rowY.keys()].sort()).toEqual([0, 1, 2, 3]);
    const ys = [0, 1, 2, 3].map((c) => rowY.get(c)!);
    expect([...ys].sort((a, b) => a - b)).toEqual(ys);
    expect([...html.matchAll(/<text class="track"[^>]*>([^<]*)</g)].map((m) => m[1])).toEqual(["core 0", "core 1", "core 2", "core 3"]);
    // x is affine in ts, width proportional to dur
    const sorted = [...tasks].sort((a, b) => a.ts - b.ts);
    const first = sorted[0], lastT = sorted[sorted.length - 1];
    const x = (id: number) => Number(byTask.get(id)!.attrs.x);
    const scale = (x(lastT.id) - x(first.id)) / (lastT.ts - first.ts);
    expect(scale).toBeGreaterThan(0);
    for (const t of tasks) {
      expect(x(t.id)).toBeCloseTo(x(first.id) + (t.ts - first.ts) * scale, 1);
      expect(Number(byTask.get(t.id)!.attrs.width)).toBeCloseTo(Math.max(1, t.dur * scale), 1);
    }
    // one colour per kernel, different kernels differ
    const fill = new Map<string, string>();
    for (const t of tasks) {
      const f = byTask.get(t.id)!.attrs.fill;
      if (fill.has(t.kernel)) expect(f).toBe(fill.get(t.kernel));
      else fill.set(t.kernel, f);
    }
    expect(new Set(fill.values()).size).toBe(3);
    // a legend item per kernel, with its colour; an axis with ticks
    for (const [k, c] of fill) expect(html).toContain(`data-kernel="${k}" title="click to highlight ${k}"><span class="sw" style="background:${c}">`);
    expect((html.match(/class="tick"/g) ?? []).length).toBeGreaterThanOrEqual(4);
  });

  it("writes a well-formed, self-contained page", () => {
    const html = renderTraceHtml(parseTrace(trace), { title: "Swimlane <&> \"x\"", source: "/tmp/a&b/swimlane.json" });
    expect(wellFormedProblems(html)).toEqual([]);
    expect(html.startsWith("<!DOCTYPE html>")).toBe(true);
    const svgs = svgBlocks(html);
    expect(svgs).toHaveLength(1);
    expect((html.match(/<svg\b/g) ?? []).length).toBe((html.match(/<\/svg>/g) ?? []).length);
    selfContained(html);
    expect(html).toContain("<title>Swimlane &lt;&amp;&gt; &quot;x&quot;</title>");
  });

  it("escapes kernel names and argument values", () => {
    const html = renderTraceHtml(parseTrace([
      { ph: "X", name: "k<b>&\"q\"", ts: 0, dur: 10, pid: 0, tid: 0, args: { note: "</title><script>alert(1)</script>" } },
    ]));
    expect(wellFormedProblems(html)).toEqual([]);
    expect(html).not.toContain("<script>alert");
    const [b] = bars(html);
    expect(b.title.split("\n")[0]).toBe("k<b>&\"q\"");
    expect(b.title).toContain("note: </title><script>alert(1)</script>");
  });

  it("reads a bare array, B/E pairs, process and thread names, and stacks overlapping tasks", () => {
    const m = parseTrace([
      { ph: "M", name: "thread_name", pid: 1, tid: 7, args: { name: "AIC 0" } },
      { ph: "X", name: "a", ts: 100, dur: 50, pid: 1, tid: 7 },
      { ph: "X", name: "b", ts: 120, dur: 10, pid: 1, tid: 7 },           // overlaps a: second sub-row
      { ph: "B", name: "c", ts: 200, pid: 1, tid: 8, args: { x: 1 } },
      { ph: "E", ts: 230, pid: 1, tid: 8, args: { y: 2 } },
      { ph: "i", name: "mark", ts: 150, pid: 1, tid: 7, s: "t" },
      { ph: "C", name: "mem", ts: 150, pid: 1, args: { v: 3 } },
    ]);
    expect(m.taskCount).toBe(3);
    expect(m.tracks.map((t) => t.label)).toEqual(["AIC 0", "tid 8"]);
    expect(m.tracks[0].lanes).toBe(2);
    expect(m.tracks[0].tasks.map((t) => [t.name, t.lane])).toEqual([["a", 0], ["b", 1]]);
    expect(m.tracks[1].tasks[0]).toMatchObject({ name: "c", ts: 200, dur: 30, args: { x: 1, y: 2 } });
    expect(m.ignored).toEqual({ i: 1, C: 1 });
    expect([m.t0, m.t1]).toEqual([100, 230]);
    const html = renderTraceHtml(m);
    expect(bars(html)).toHaveLength(3);
    expect(html).toContain('not drawn: 1 "i" event, 1 "C" event');
    expect(wellFormedProblems(html)).toEqual([]);
  });

  it("shows idle cores named by metadata as empty rows", () => {
    const m = parseTrace({ traceEvents: [
      { ph: "M", name: "thread_name", pid: 0, tid: 0, args: { name: "core 0" } },
      { ph: "M", name: "thread_name", pid: 0, tid: 1, args: { name: "core 1" } },
      { ph: "X", name: "k", ts: 5, dur: 1, pid: 0, tid: 0 },
    ] });
    expect(m.tracks.map((t) => [t.label, t.tasks.length])).toEqual([["core 0", 1], ["core 1", 0]]);
  });

  it("renders empty traces gracefully", () => {
    for (const input of [[], { traceEvents: [] }, { traceEvents: [{ ph: "M", name: "thread_name", pid: 0, tid: 0, args: { name: "core 0" } }] }]) {
      const html = renderTraceHtml(parseTrace(input));
      expect(wellFormedProblems(html)).toEqual([]);
      expect(html).toContain("No tasks in this trace");
      expect(bars(html)).toHaveLength(0);
      expect(svgBlocks(html)).toHaveLength(1);
    }
  });

  it("rejects malformed traces, naming the file, the event and the field", () => {
    const err = (j: unknown) => {
      try {
        parseTrace(j, "/x/swimlane.json");
      } catch (e) {
        expect(e).toBeInstanceOf(DfxFormatError);
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(err({ events: [] })).toMatch(/^\/x\/swimlane\.json: expected a Chrome trace: an object with a "traceEvents" array, or an array of events/);
    expect(err([{ ph: "X", name: "k", ts: 0, dur: 1 }, { ph: "X", name: "k", ts: "3", dur: 1 }])).toBe(
      `/x/swimlane.json: traceEvents[1]: 'ts' must be a finite number (µs), got "3"`);
    expect(err([{ ph: "X", name: "k", ts: 0, dur: -1 }])).toBe("/x/swimlane.json: traceEvents[0]: 'dur' must be >= 0, got -1");
    expect(err([{ ph: "X", ts: 0, dur: 1 }])).toBe("/x/swimlane.json: traceEvents[0]: 'name' must be a non-empty string, got undefined");
    expect(err([{ name: "k", ts: 0 }])).toMatch(/traceEvents\[0\]: 'ph' must be a string/);
    expect(err([7])).toMatch(/traceEvents\[0\]: 'event' must be an object, got 7/);
    expect(err([{ ph: "X", name: "k", ts: 0, args: [1] }])).toMatch(/traceEvents\[0\]: 'args' must be an object/);
  });

  it("handles hundreds of tasks", () => {
    const many = synthesize({ cores: 4, tiles: 150, seed: 11, reduce: true });
    expect(many.length).toBeGreaterThan(500);
    const t = performance.now();
    const html = renderTraceHtml(parseTrace(traceJson(many, 4)));
    expect(performance.now() - t).toBeLessThan(3000);
    expect(bars(html)).toHaveLength(many.length);
    expect(wellFormedProblems(html)).toEqual([]);
    // dense traces get a wider, scrollable axis
    const w = Number(/<svg[^>]*class="timeline" width="(\d+)"/.exec(html)![1]);
    expect(w).toBeGreaterThan(1200);
  });
});

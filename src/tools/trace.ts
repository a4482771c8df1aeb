// The swimlane view: a Chrome trace (dfx_outputs/swimlane.json) -> a self-contained HTML
// page with an SVG timeline, one row per core track, one bar per task.
// Format: docs/dfx-formats.md.
import { DfxFormatError, maxOf, minOf, show } from "./dfx.js";
import { esc, fitText, fmtInt, fmtUs, kernelColours, legendHtml, niceStep, page, textOn } from "./html.js";
import { rooflineSection, type RooflineModel } from "./roofline.js";

export interface TraceTask {
  /** Kernel (event) name; the colour key. */
  name: string;
  /** Start, µs, as in the file (absolute). */
  ts: number;
  /** Duration, µs (>= 0). */
  dur: number;
  args: Record<string, unknown>;
  cat?: string;
  /** Index of the (first) event in traceEvents. */
  index: number;
  /** Sub-row within its track (0 unless tasks of the track overlap). */
  lane: number;
}

export interface TraceTrack {
  pid: number | string;
  tid: number | string;
  /** thread_name metadata, else "tid <tid>" (with the process name when there are several processes). */
  label: string;
  tasks: TraceTask[];
  /** Number of sub-rows (>= 1). */
  lanes: number;
  sortIndex?: number;
  /** Why this track ran no task (thread_name `args.idle`, written by tspto for an idle core). */
  idle?: string;
  /** Every event of the track is an orchestration span (cat "orchestration"): drawn apart, not counted as tasks. */
  orchestration?: boolean;
}

export interface TraceModel {
  tracks: TraceTrack[];
  /** Number of tasks over all tracks (orchestration spans are not tasks). */
  taskCount: number;
  /** Tracks that run tasks (all but orchestration tracks), including idle ones. */
  coreTracks: number;
  /** Orchestration spans (cat "orchestration", on their own track). */
  orchestrationCount: number;
  /** Earliest start / latest end of the tasks, µs: the timeline zooms to them (0/0 when there is no event). */
  t0: number;
  t1: number;
  /** Events skipped because their phase is not drawn: ph -> count. */
  ignored: Record<string, number>;
  /** Oddities that did not stop rendering (unmatched B/E events...). */
  warnings: string[];
  /** displayTimeUnit or other top-level fields are kept as given. */
  metadata: Record<string, unknown>;
}

type Id = number | string;
const trackKey = (pid: Id, tid: Id) => `${typeof pid}:${pid}\u0000${typeof tid}:${tid}`;
const cmpId = (a: Id, b: Id): number =>
  typeof a === "number" && typeof b === "number" ? a - b : typeof a === "number" ? -1 : typeof b === "number" ? 1 : a < b ? -1 : a > b ? 1 : 0;

/**
 * Parse a Chrome trace: `{ "traceEvents": [...] }` or a bare array. Draws complete events
 * (`ph: "X"`) and matched `B`/`E` pairs; reads `M` events `thread_name`, `process_name` and
 * `thread_sort_index`; counts every other phase in `ignored`. Throws DfxFormatError (naming
 * the event index and field) on a malformed event.
 */
export function parseTrace(json: unknown, file = "swimlane.json"): TraceModel {
  let events: unknown[];
  const metadata: Record<string, unknown> = {};
  if (Array.isArray(json)) events = json;
  else if (json && typeof json === "object" && Array.isArray((json as { traceEvents?: unknown }).traceEvents)) {
    events = (json as { traceEvents: unknown[] }).traceEvents;
    for (const [k, v] of Object.entries(json)) if (k !== "traceEvents") metadata[k] = v;
  } else {
    throw new DfxFormatError(file, `expected a Chrome trace: an object with a "traceEvents" array, or an array of events; got ${show(json)}`);
  }

  const tracks = new Map<string, TraceTrack>();
  const processNames = new Map<string, string>();
  const ignored: Record<string, number> = {};
  const warnings: string[] = [];
  const open = new Map<string, { name: string; ts: number; args: Record<string, unknown>; cat?: string; index: number; pid: Id; tid: Id }[]>();

  const track = (pid: Id, tid: Id): TraceTrack => {
    const k = trackKey(pid, tid);
    let t = tracks.get(k);
    if (!t) {
      t = { pid, tid, label: "", tasks: [], lanes: 1 };
      tracks.set(k, t);
    }
    return t;
  };

  events.forEach((ev, i) => {
    const where = `traceEvents[${i}]`;
    const bad = (field: string, rule: string, got: unknown): never => {
      throw new DfxFormatError(file, `${where}: '${field}' ${rule}, got ${show(got)}`);
    };
    if (!ev || typeof ev !== "object" || Array.isArray(ev)) bad("event", "must be an object", ev);
    const e = ev as Record<string, unknown>;
    const ph = e.ph;
    if (typeof ph !== "string") bad("ph", "must be a string (\"X\", \"M\", ...)", ph);
    const id = (field: "pid" | "tid"): Id => {
      const v = e[field];
      if (v === undefined) return 0;
      if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "string") return v;
      return bad(field, "must be a number or a string", v);
    };
    const num = (field: string, required: boolean): number => {
      const v = e[field];
      if (v === undefined && !required) return 0;
      if (typeof v !== "number" || !Number.isFinite(v)) bad(field, "must be a finite number (µs)", v);
      return v as number;
    };
    const args = (): Record<string, unknown> => {
      const a = e.args;
      if (a === undefined) return {};
      if (!a || typeof a !== "object" || Array.isArray(a)) bad("args", "must be an object", a);
      return a as Record<string, unknown>;
    };
    const name = (): string => {
      const n = e.name;
      if (typeof n !== "string" || !n) bad("name", "must be a non-empty string", n);
      return n as string;
    };
    const cat = typeof e.cat === "string" ? e.cat : undefined;

    switch (ph) {
      case "X": {
        const pid = id("pid"), tid = id("tid");
        const dur = num("dur", false);
        if (dur < 0) bad("dur", "must be >= 0", dur);
        track(pid, tid).tasks.push({ name: name(), ts: num("ts", true), dur, args: args(), cat, index: i, lane: 0 });
        break;
      }
      case "B": {
        const pid = id("pid"), tid = id("tid");
        track(pid, tid);
        const k = trackKey(pid, tid);
        const stack = open.get(k) ?? [];
        stack.push({ name: name(), ts: num("ts", true), args: args(), cat, index: i, pid, tid });
        open.set(k, stack);
        break;
      }
      case "E": {
        const pid = id("pid"), tid = id("tid");
        const ts = num("ts", true);
        const b = open.get(trackKey(pid, tid))?.pop();
        if (!b) {
          warnings.push(`${where}: an "E" event with no open "B" event on pid ${pid} tid ${tid}; skipped`);
          break;
        }
        if (ts < b.ts) bad("ts", `must not be before its "B" event (traceEvents[${b.index}], ts ${b.ts})`, ts);
        track(pid, tid).tasks.push({ name: b.name, ts: b.ts, dur: ts - b.ts, args: { ...b.args, ...args() }, cat: b.cat, index: b.index, lane: 0 });
        break;
      }
      case "M": {
        const pid = id("pid"), tid = id("tid");
        const a = args();
        const n = name();
        if (n === "thread_name") {
          if (typeof a.name !== "string") bad("args.name", "must be a string for thread_name metadata", a.name);
          track(pid, tid).label = a.name as string;
          if (a.idle !== undefined) {
            if (typeof a.idle !== "string") bad("args.idle", "must be a string (why the track ran no task)", a.idle);
            track(pid, tid).idle = a.idle as string;
          }
        } else if (n === "process_name") {
          if (typeof a.name !== "string") bad("args.name", "must be a string for process_name metadata", a.name);
          processNames.set(`${typeof pid}:${pid}`, a.name as string);
        } else if (n === "thread_sort_index") {
          if (typeof a.sort_index === "number") track(pid, tid).sortIndex = a.sort_index;
        } else {
          ignored[`M:${n}`] = (ignored[`M:${n}`] ?? 0) + 1;
        }
        break;
      }
      default:
        ignored[ph as string] = (ignored[ph as string] ?? 0) + 1;
    }
  });
  for (const stack of open.values()) {
    for (const b of stack) warnings.push(`traceEvents[${b.index}]: a "B" event ('${b.name}') with no matching "E" on pid ${b.pid} tid ${b.tid}; skipped`);
  }

  const list = [...tracks.values()];
  const pids = new Set(list.map((t) => `${typeof t.pid}:${t.pid}`));
  for (const t of list) {
    if (!t.label) {
      const pname = processNames.get(`${typeof t.pid}:${t.pid}`) ?? `pid ${t.pid}`;
      t.label = pids.size > 1 ? `${pname} / tid ${t.tid}` : `tid ${t.tid}`;
    }
    t.tasks.sort((a, b) => a.ts - b.ts || b.dur - a.dur || a.index - b.index);
    // sub-rows: a task goes to the first row whose last task has ended
    const ends: number[] = [];
    for (const task of t.tasks) {
      let lane = ends.findIndex((end) => end <= task.ts);
      if (lane < 0) {
        lane = ends.length;
        ends.push(0);
      }
      task.lane = lane;
      ends[lane] = task.ts + task.dur;
    }
    t.lanes = Math.max(1, ends.length);
  }
  for (const t of list) t.orchestration = t.tasks.length > 0 && t.tasks.every((k) => k.cat === "orchestration");
  // orchestration rows go last: they span the whole launch and are not tasks
  list.sort((a, b) => Number(!!a.orchestration) - Number(!!b.orchestration) || cmpId(a.pid, b.pid) || (a.sortIndex ?? 0) - (b.sortIndex ?? 0) || cmpId(a.tid, b.tid));
  const tasks = list.filter((t) => !t.orchestration).flatMap((t) => t.tasks);
  const all = tasks.length ? tasks : list.flatMap((t) => t.tasks);
  const t0 = minOf(all, (t) => t.ts, 0);
  const t1 = maxOf(all, (t) => t.ts + t.dur, 0);
  const orch = list.filter((t) => t.orchestration);
  return {
    tracks: list, taskCount: tasks.length, coreTracks: list.length - orch.length, orchestrationCount: orch.reduce((n, t) => n + t.tasks.length, 0),
    t0, t1, ignored, warnings, metadata,
  };
}

/**
 * The one-line summary of a trace, the same in `tspto inspect` and on the swimlane page:
 * "<n> tasks on <k> tracks[ (<i> idle)][ + orchestration (<m> spans)]".
 */
export function traceSummary(m: TraceModel): string {
  const idle = m.tracks.filter((t) => !t.orchestration && t.tasks.length === 0).length;
  return `${fmtInt(m.taskCount)} task${m.taskCount === 1 ? "" : "s"} on ${m.coreTracks} track${m.coreTracks === 1 ? "" : "s"}` +
    (idle ? ` (${idle} idle)` : "") +
    (m.orchestrationCount ? ` + orchestration (${m.orchestrationCount} span${m.orchestrationCount === 1 ? "" : "s"})` : "");
}

export interface TraceHtmlOptions {
  /** Page heading (default "Swimlane"). */
  title?: string;
  /** Where the trace came from (shown under the heading). */
  source?: string;
  /** Width of the time axis in px (default: 1000, shrinking to fit the window; wider and scrolling for dense traces). */
  plotWidth?: number;
  /** The roofline report of the same program (dfx_outputs/roofline.json): its plot goes under the swimlane. */
  roofline?: RooflineModel;
  /** Why the roofline report next to the trace could not be drawn (a malformed or refused file). */
  rooflineProblem?: string;
}

const DEFAULT_PLOT_W = 1000;
const LABEL_W = 132;
const ROW_H = 30;
const BAR_H = 22;
const AXIS_H = 26;
const PAD_R = 24;
const FONT = 11;

function argText(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** The tooltip of one task bar (SVG <title> text). */
export function taskTooltip(task: TraceTask, track: TraceTrack, t0: number): string {
  const lines = [
    task.name,
    `track: ${track.label}`,
    `start: +${fmtUs(task.ts - t0)} (ts ${task.ts} µs)`,
    `duration: ${fmtUs(task.dur)}`,
    `end: +${fmtUs(task.ts + task.dur - t0)}`,
  ];
  if (task.cat) lines.push(`category: ${task.cat}`);
  const keys = Object.keys(task.args);
  if (keys.length) lines.push("args:", ...keys.map((k) => `  ${k}: ${argText(task.args[k])}`));
  return lines.join("\n");
}

/** Render a parsed trace as a self-contained HTML page. */
export function renderTraceHtml(model: TraceModel, opts: TraceHtmlOptions = {}): string {
  const title = opts.title ?? "Swimlane";
  const span = model.t1 - model.t0;
  const maxPerTrack = Math.max(0, maxOf(model.tracks.filter((t) => !t.orchestration), (t) => t.tasks.length, 0));
  const plotW = opts.plotWidth ?? Math.min(16000, Math.max(DEFAULT_PLOT_W, maxPerTrack * 12));
  const scale = span > 0 ? plotW / span : 0;
  const x = (ts: number) => LABEL_W + (ts - model.t0) * scale;

  const names = model.tracks.filter((t) => !t.orchestration).flatMap((t) => t.tasks.map((k) => k.name));
  const colours = kernelColours(names);
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);

  // rows
  const rowTop: number[] = [];
  let y = AXIS_H;
  for (const t of model.tracks) {
    rowTop.push(y);
    y += t.lanes * ROW_H;
  }
  const height = y + 6;
  const width = LABEL_W + plotW + PAD_R;

  const svg: string[] = [];
  // a default-width timeline shrinks to fit a narrower window; a dense (wider) one scrolls
  const fit = opts.plotWidth === undefined && plotW <= DEFAULT_PLOT_W ? ` style="max-width:100%;height:auto"` : "";
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"${fit} role="img" aria-label="${esc(title)}">`);
  // row backgrounds and labels
  model.tracks.forEach((t, i) => {
    const h = t.lanes * ROW_H;
    svg.push(`<rect class="row" x="0" y="${rowTop[i]}" width="${width}" height="${h}" fill="${i % 2 ? "#ffffff" : "#f4f6f8"}"/>`);
    svg.push(`<text class="track" x="8" y="${rowTop[i] + ROW_H / 2 + 4}" font-size="12" font-weight="600" fill="#333">${esc(fitText(t.label, LABEL_W - 14, 12))}<title>${esc(`${t.label} (pid ${t.pid}, tid ${t.tid}): ${t.tasks.length} task${t.tasks.length === 1 ? "" : "s"}`)}</title></text>`);
  });
  svg.push(`<line x1="${LABEL_W - 0.5}" y1="${AXIS_H}" x2="${LABEL_W - 0.5}" y2="${height}" stroke="#bbb"/>`);
  // axis
  svg.push(`<g class="axis">`);
  svg.push(`<text x="8" y="${AXIS_H - 9}" font-size="10.5" fill="#777">time from first task</text>`);
  svg.push(`<line x1="${LABEL_W}" y1="${AXIS_H - 0.5}" x2="${LABEL_W + plotW}" y2="${AXIS_H - 0.5}" stroke="#888"/>`);
  if (span > 0) {
    const step = niceStep(span, Math.max(4, Math.round(plotW / 110)));
    for (let k = 0; k * step <= span * (1 + 1e-9); k++) {
      const tx = x(model.t0 + k * step);
      svg.push(`<line class="tick" x1="${tx.toFixed(1)}" y1="${AXIS_H - 5}" x2="${tx.toFixed(1)}" y2="${height}" stroke="#888" stroke-opacity="0.25"/>`);
      svg.push(`<text x="${tx.toFixed(1)}" y="${AXIS_H - 9}" font-size="10.5" fill="#444" text-anchor="${k === 0 ? "start" : "middle"}">${esc(k === 0 ? "0" : fmtUs(k * step))}</text>`);
    }
  } else {
    svg.push(`<text x="${LABEL_W}" y="${AXIS_H - 9}" font-size="10.5" fill="#444">0</text>`);
  }
  svg.push(`</g>`);
  // idle tracks say why
  model.tracks.forEach((t, i) => {
    if (t.orchestration || t.tasks.length) return;
    const why = t.idle ?? "no task ran on this track";
    svg.push(`<text class="idle" x="${LABEL_W + 8}" y="${rowTop[i] + ROW_H / 2 + 4}" font-size="11.5" font-style="italic" fill="#8a5a00">${esc(`no task: ${why}`)}</text>`);
  });
  // orchestration spans: their own row, grey, clipped to the tasks' span (the timeline is zoomed to the tasks)
  model.tracks.forEach((t, i) => {
    if (!t.orchestration) return;
    for (const task of t.tasks) {
      const s0 = Math.max(task.ts, model.t0), s1 = Math.min(task.ts + task.dur, model.t1);
      if (s1 < s0 && !(task.dur === 0 && task.ts >= model.t0 && task.ts <= model.t1)) continue;
      const bx = x(s0), bw = Math.max(1, (s1 - s0) * scale);
      const by = rowTop[i] + task.lane * ROW_H + (ROW_H - BAR_H) / 2;
      const clipped = task.ts < model.t0 || task.ts + task.dur > model.t1;
      const label = bw > 14 ? fitText(`${task.name}${clipped ? " (continues)" : ""}`, bw - 6, FONT) : "";
      svg.push(`<g data-orchestration="${esc(task.name)}">` +
        `<rect class="orchestration" x="${bx.toFixed(2)}" y="${by + 4}" width="${bw.toFixed(2)}" height="${BAR_H - 8}" rx="2" fill="#c8cdd3" stroke="#9aa3ad" stroke-width="0.75" data-ts="${task.ts}" data-dur="${task.dur}">` +
        `<title>${esc(taskTooltip(task, t, model.t0))}</title></rect>` +
        (label ? `<text x="${(bx + 3).toFixed(2)}" y="${by + BAR_H / 2 + 4}" font-size="${FONT}" fill="#333" pointer-events="none">${esc(label)}</text>` : "") +
        `</g>`);
    }
  });
  // bars
  model.tracks.forEach((t, i) => {
    if (t.orchestration) return;
    for (const task of t.tasks) {
      const bx = x(task.ts);
      const bw = Math.max(1, task.dur * scale);
      const by = rowTop[i] + task.lane * ROW_H + (ROW_H - BAR_H) / 2;
      const fill = colours.get(task.name)!;
      const label = bw > 14 ? fitText(task.name, bw - 6, FONT) : "";
      svg.push(`<g data-kernel="${esc(task.name)}">` +
        `<rect class="task" x="${bx.toFixed(2)}" y="${by}" width="${bw.toFixed(2)}" height="${BAR_H}" rx="2" fill="${fill}" stroke="#fff" stroke-width="0.75" data-ts="${task.ts}" data-dur="${task.dur}">` +
        `<title>${esc(taskTooltip(task, t, model.t0))}</title></rect>` +
        (label ? `<text x="${(bx + 3).toFixed(2)}" y="${by + BAR_H / 2 + 4}" font-size="${FONT}" fill="${textOn(fill)}" pointer-events="none">${esc(label)}</text>` : "") +
        `</g>`);
    }
  });
  svg.push(`</svg>`);

  // summary
  const subtitle = [
    traceSummary(model),
    model.taskCount ? `span ${fmtUs(span)}` : "",
    opts.source ? `from ${opts.source}` : "",
  ].filter(Boolean).join(" · ");
  const notes: string[] = [];
  const ign = Object.entries(model.ignored);
  if (ign.length) notes.push(`not drawn: ${ign.map(([ph, n]) => `${n} "${ph}" event${n === 1 ? "" : "s"}`).join(", ")}`);
  for (const w of model.warnings.slice(0, 20)) notes.push(`<span class="warn">${esc(w)}</span>`);
  if (model.warnings.length > 20) notes.push(`<span class="warn">… ${model.warnings.length - 20} more warnings</span>`);

  const body: string[] = [`<h1>${esc(title)}</h1>`, `<p class="sub">${esc(subtitle)}</p>`];
  if (!model.taskCount) body.push(`<p class="empty">No tasks in this trace (no complete "X" events).</p>`);
  body.push(legendHtml(colours, counts));
  body.push(`<div class="scroll">${svg.join("\n")}</div>`);
  if (model.taskCount) body.push(statsTables(model, colours));
  if (notes.length) body.push(`<p class="sub">${notes.join("<br>")}</p>`);
  if (opts.roofline) body.push(rooflineSection(opts.roofline, kernelColours([...colours.keys(), ...opts.roofline.rows.map((r) => r.kernel)])));
  if (opts.rooflineProblem) body.push(`<p class="sub warn">roofline not drawn: ${esc(opts.rooflineProblem)}</p>`);
  return page(title, body.join("\n"));
}

function statsTables(model: TraceModel, colours: Map<string, string>): string {
  const span = model.t1 - model.t0;
  const per = new Map<string, { n: number; total: number; min: number; max: number }>();
  for (const t of model.tracks) for (const k of (t.orchestration ? [] : t.tasks)) {
    const s = per.get(k.name) ?? { n: 0, total: 0, min: Infinity, max: -Infinity };
    s.n++;
    s.total += k.dur;
    s.min = Math.min(s.min, k.dur);
    s.max = Math.max(s.max, k.dur);
    per.set(k.name, s);
  }
  const kernelRows = [...colours.keys()].map((n) => {
    const s = per.get(n)!;
    return `<tr><td><span class="sw" style="display:inline-block;width:10px;height:10px;background:${colours.get(n)};margin-right:5px"></span>${esc(n)}</td><td>${s.n}</td><td>${fmtUs(s.total)}</td><td>${fmtUs(s.total / s.n)}</td><td>${fmtUs(s.min)}</td><td>${fmtUs(s.max)}</td></tr>`;
  });
  const trackRows = model.tracks.map((t) => {
    // busy time = union of the track's intervals
    let busy = 0, curS = -Infinity, curE = -Infinity;
    for (const k of t.tasks) {
      if (k.ts > curE) {
        if (curE > curS) busy += curE - curS;
        curS = k.ts;
        curE = k.ts + k.dur;
      } else curE = Math.max(curE, k.ts + k.dur);
    }
    if (curE > curS) busy += curE - curS;
    if (t.orchestration) return `<tr><td>${esc(t.label)}</td><td>— (${t.tasks.length} span${t.tasks.length === 1 ? "" : "s"})</td><td>${fmtUs(busy)}</td><td>(whole launch)</td></tr>`;
    if (!t.tasks.length) return `<tr><td>${esc(t.label)}</td><td>0</td><td colspan="2" class="idle">${esc(t.idle ?? "no task")}</td></tr>`;
    return `<tr><td>${esc(t.label)}</td><td>${t.tasks.length}</td><td>${fmtUs(busy)}</td><td>${span > 0 ? ((100 * busy) / span).toFixed(1) : "0.0"}%</td></tr>`;
  });
  return `<div style="display:flex;gap:32px;flex-wrap:wrap;align-items:flex-start">
<table class="stats"><thead><tr><th>kernel</th><th>tasks</th><th>total</th><th>mean</th><th>min</th><th>max</th></tr></thead><tbody>${kernelRows.join("")}</tbody></table>
<table class="stats"><thead><tr><th>track</th><th>tasks</th><th>busy</th><th>of span</th></tr></thead><tbody>${trackRows.join("")}</tbody></table>
</div>`;
}

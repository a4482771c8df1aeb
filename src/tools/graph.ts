// The dependency-graph view: dfx_outputs/deps.json -> a self-contained HTML page with an SVG
// DAG (layered left to right by longest path, nodes ordered within layers by barycenter
// sweeps, one arrow per dependency labelled with its tensor). Format: docs/dfx-formats.md.
import { DfxFormatError, maxOf, show } from "./dfx.js";
import { esc, fitText, fmtInt, kernelColours, legendHtml, page, textOn } from "./html.js";

export interface DepTask {
  id: number;
  kernel: string;
  scope?: number;
  /** Other fields of the task object, shown in its tooltip. */
  extra: Record<string, unknown>;
}

export interface DepEdge {
  from: number;
  to: number;
  tensor?: string;
  /** Index in the file's "edges" array. */
  index: number;
}

export interface DepsModel {
  tasks: DepTask[];
  /** Drawable edges (self-loops are dropped with a warning). */
  edges: DepEdge[];
  warnings: string[];
}

/**
 * Parse `{ "tasks": [{ id, kernel, scope? }], "edges": [{ from, to, tensor? }] }`. Throws a
 * DfxFormatError naming the entry and the field when the file does not follow the format
 * (duplicate ids, an edge to an unknown task...).
 */
export function parseDeps(json: unknown, file = "deps.json"): DepsModel {
  const isObj = (x: unknown): x is Record<string, unknown> => !!x && typeof x === "object" && !Array.isArray(x);
  if (!isObj(json)) throw new DfxFormatError(file, `expected an object { "tasks": [...], "edges": [...] }, got ${show(json)}`);
  if (!Array.isArray(json.tasks)) throw new DfxFormatError(file, `field 'tasks' must be an array, got ${show(json.tasks)}`);
  if (!Array.isArray(json.edges)) throw new DfxFormatError(file, `field 'edges' must be an array, got ${show(json.edges)}`);
  const bad = (where: string, field: string, rule: string, got: unknown): never => {
    throw new DfxFormatError(file, `${where}: '${field}' ${rule}, got ${show(got)}`);
  };
  const ids = new Map<number, number>();
  const tasks: DepTask[] = json.tasks.map((t, i) => {
    const where = `tasks[${i}]`;
    if (!isObj(t)) return bad(where, "task", "must be an object", t);
    if (typeof t.id !== "number" || !Number.isInteger(t.id)) bad(where, "id", "must be an integer", t.id);
    const id = t.id as number;
    if (ids.has(id)) bad(where, "id", `must be unique (tasks[${ids.get(id)}] has the same id)`, id);
    ids.set(id, i);
    if (typeof t.kernel !== "string" || !t.kernel) bad(where, "kernel", "must be a non-empty string", t.kernel);
    if (t.scope !== undefined && (typeof t.scope !== "number" || !Number.isInteger(t.scope))) bad(where, "scope", "must be an integer when given", t.scope);
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(t)) if (k !== "id" && k !== "kernel" && k !== "scope") extra[k] = v;
    return { id, kernel: t.kernel as string, ...(t.scope !== undefined ? { scope: t.scope as number } : {}), extra };
  });
  const warnings: string[] = [];
  const edges: DepEdge[] = [];
  json.edges.forEach((e, i) => {
    const where = `edges[${i}]`;
    if (!isObj(e)) return bad(where, "edge", "must be an object", e);
    for (const f of ["from", "to"] as const) {
      if (typeof e[f] !== "number" || !Number.isInteger(e[f])) bad(where, f, "must be an integer task id", e[f]);
      if (!ids.has(e[f] as number)) bad(where, f, "must be the id of a task in 'tasks'", e[f]);
    }
    if (e.tensor !== undefined && typeof e.tensor !== "string") bad(where, "tensor", "must be a string when given", e.tensor);
    if (e.from === e.to) {
      warnings.push(`${where}: task ${e.from} depends on itself; not drawn`);
      return;
    }
    edges.push({ from: e.from as number, to: e.to as number, ...(e.tensor !== undefined ? { tensor: e.tensor as string } : {}), index: i });
  });
  return { tasks, edges, warnings };
}

export interface NodeBox { id: number; layer: number; order: number; x: number; y: number }

export interface DepsLayout {
  nodes: Map<number, NodeBox>;
  /** Task ids per layer, in drawing order (top to bottom). */
  layers: number[][];
  /** Indices (into model.edges) of edges that close a cycle (drawn backwards, in red). */
  cycleEdges: Set<number>;
  /** Indices (into model.edges) on one longest path. */
  criticalEdges: Set<number>;
  /** Number of tasks on the longest path. */
  criticalLength: number;
  width: number;
  height: number;
}

const NODE_W = 168;
const NODE_H = 36;
const GAP_X = 96;
const GAP_Y = 14;
const PAD = 20;

/** Layered layout (longest-path layering, barycenter ordering, columns centred). */
export function layoutDeps(model: DepsModel): DepsLayout {
  const ids = model.tasks.map((t) => t.id);
  const byId = new Map(model.tasks.map((t) => [t.id, t]));
  const out = new Map<number, { to: number; e: number }[]>(ids.map((i) => [i, []]));
  model.edges.forEach((e, k) => out.get(e.from)!.push({ to: e.to, e: k }));

  // 1. cycle removal: iterative DFS in id order; an edge to a node on the stack closes a cycle
  const cycleEdges = new Set<number>();
  const state = new Map<number, 0 | 1 | 2>(ids.map((i) => [i, 0]));
  for (const root of [...ids].sort((a, b) => a - b)) {
    if (state.get(root) !== 0) continue;
    const stack: { v: number; next: number }[] = [{ v: root, next: 0 }];
    state.set(root, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const succ = out.get(top.v)!;
      if (top.next >= succ.length) {
        state.set(top.v, 2);
        stack.pop();
        continue;
      }
      const { to, e } = succ[top.next++];
      const s = state.get(to);
      if (s === 1) cycleEdges.add(e);
      else if (s === 0) {
        state.set(to, 1);
        stack.push({ v: to, next: 0 });
      }
    }
  }
  // the acyclic graph: cycle edges reversed
  const dag = model.edges.map((e, k) => (cycleEdges.has(k) ? { from: e.to, to: e.from, k } : { from: e.from, to: e.to, k }));
  const preds = new Map<number, { from: number; k: number }[]>(ids.map((i) => [i, []]));
  const succs = new Map<number, number[]>(ids.map((i) => [i, []]));
  for (const e of dag) {
    preds.get(e.to)!.push({ from: e.from, k: e.k });
    succs.get(e.from)!.push(e.to);
  }

  // 2. longest-path layering (Kahn order)
  const indeg = new Map<number, number>(ids.map((i) => [i, preds.get(i)!.length]));
  const layer = new Map<number, number>(ids.map((i) => [i, 0]));
  const queue = ids.filter((i) => indeg.get(i) === 0).sort((a, b) => a - b);
  const topo: number[] = [];
  while (queue.length) {
    const v = queue.shift()!;
    topo.push(v);
    for (const w of succs.get(v)!) {
      layer.set(w, Math.max(layer.get(w)!, layer.get(v)! + 1));
      indeg.set(w, indeg.get(w)! - 1);
      if (indeg.get(w) === 0) queue.push(w);
    }
  }
  const nLayers = ids.length ? maxOf(ids, (i) => layer.get(i)!) + 1 : 0;
  const layers: number[][] = Array.from({ length: nLayers }, () => []);
  for (const t of model.tasks) layers[layer.get(t.id)!].push(t.id);
  // 3. ordering: start from (scope, id), then barycenter sweeps over all neighbours
  const scopeOf = (i: number) => byId.get(i)!.scope ?? 0;
  for (const l of layers) l.sort((a, b) => scopeOf(a) - scopeOf(b) || a - b);
  const pos = new Map<number, number>();
  const setPos = () => layers.forEach((l) => l.forEach((v, i) => pos.set(v, (i + 0.5) / l.length)));
  setPos();
  const undirected = new Map<number, number[]>(ids.map((i) => [i, []]));
  for (const e of dag) {
    undirected.get(e.from)!.push(e.to);
    undirected.get(e.to)!.push(e.from);
  }
  const sweep = (order: number[], useSide: (v: number, w: number) => boolean) => {
    for (const li of order) {
      const l = layers[li];
      const key = new Map<number, number>();
      for (const v of l) {
        const ns = undirected.get(v)!.filter((w) => useSide(v, w));
        key.set(v, ns.length ? ns.reduce((s, w) => s + pos.get(w)!, 0) / ns.length : pos.get(v)!);
      }
      l.sort((a, b) => key.get(a)! - key.get(b)!); // stable: ties keep the current order
      l.forEach((v, i) => pos.set(v, (i + 0.5) / l.length));
    }
  };
  const down = [...Array(nLayers).keys()];
  const up = [...down].reverse();
  if (model.edges.length && ids.length <= 5000) {
    for (let it = 0; it < 4; it++) {
      sweep(down.slice(1), (v, w) => layer.get(w)! < layer.get(v)!);
      sweep(up.slice(1), (v, w) => layer.get(w)! > layer.get(v)!);
    }
  }
  setPos();

  // 4. coordinates: one column per layer, columns centred vertically
  const maxRows = maxOf(layers, (l) => l.length, 0);
  const pitchY = NODE_H + GAP_Y;
  const colH = maxRows * pitchY - GAP_Y;
  const nodes = new Map<number, NodeBox>();
  layers.forEach((l, li) => {
    const off = (colH - (l.length * pitchY - GAP_Y)) / 2;
    l.forEach((v, i) => nodes.set(v, { id: v, layer: li, order: i, x: PAD + li * (NODE_W + GAP_X), y: PAD + off + i * pitchY }));
  });

  // 5. one longest path (critical path in task count)
  const criticalEdges = new Set<number>();
  let criticalLength = 0;
  if (topo.length) {
    let v = topo.reduce((best, i) => (layer.get(i)! > layer.get(best)! ? i : best), topo[0]);
    criticalLength = layer.get(v)! + 1;
    while (layer.get(v)! > 0) {
      const p = preds.get(v)!.find((q) => layer.get(q.from)! === layer.get(v)! - 1)!;
      criticalEdges.add(p.k);
      v = p.from;
    }
  }
  const width = nLayers ? PAD * 2 + nLayers * NODE_W + (nLayers - 1) * GAP_X : PAD * 2;
  const height = (maxRows ? PAD * 2 + colH : PAD * 2) + (cycleEdges.size ? 60 : 0); // room for the loops of cycle edges
  return { nodes, layers, cycleEdges, criticalEdges, criticalLength, width, height };
}

export interface DepsHtmlOptions {
  title?: string;
  source?: string;
}

function listCut(items: string[], max = 12): string[] {
  return items.length > max ? [...items.slice(0, max), `  … ${items.length - max} more`] : items;
}

/** Render a parsed dependency graph as a self-contained HTML page. */
export function renderDepsHtml(model: DepsModel, opts: DepsHtmlOptions = {}): string {
  const title = opts.title ?? "Task dependencies";
  const L = layoutDeps(model);
  const byId = new Map(model.tasks.map((t) => [t.id, t]));
  const colours = kernelColours(model.tasks.map((t) => t.kernel));
  const counts = new Map<string, number>();
  for (const t of model.tasks) counts.set(t.kernel, (counts.get(t.kernel) ?? 0) + 1);
  const label = (id: number) => `#${id} ${byId.get(id)!.kernel}`;

  const svg: string[] = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="${L.width}" height="${L.height}" viewBox="0 0 ${L.width} ${L.height}" role="img" aria-label="${esc(title)}">`);
  svg.push(`<defs>` +
    `<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker>` +
    `<marker id="arrow-critical" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#222"/></marker>` +
    `<marker id="arrow-cycle" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#d62728"/></marker>` +
    `</defs>`);
  // edges first (under the nodes). Each node spreads its incoming edges over its left side and
  // its outgoing edges over its right side, ordered by the other end's height.
  const inPort = new Map<number, number>(), outPort = new Map<number, number>();
  const spread = (ends: Map<number, number[]>, other: (k: number) => number, into: Map<number, number>) => {
    for (const ks of ends.values()) {
      ks.sort((p, q) => other(p) - other(q) || p - q);
      ks.forEach((k, i) => into.set(k, ((i + 1) / (ks.length + 1) - 0.5) * (NODE_H - 8)));
    }
  };
  const ins = new Map<number, number[]>(), outs = new Map<number, number[]>();
  model.edges.forEach((e, k) => {
    if (L.cycleEdges.has(k)) return;
    (ins.get(e.to) ?? ins.set(e.to, []).get(e.to)!).push(k);
    (outs.get(e.from) ?? outs.set(e.from, []).get(e.from)!).push(k);
  });
  spread(ins, (k) => L.nodes.get(model.edges[k].from)!.y, inPort);
  spread(outs, (k) => L.nodes.get(model.edges[k].to)!.y, outPort);
  const pairSeen = new Map<string, number>();
  const labels: string[] = [];
  svg.push(`<g class="edges">`);
  model.edges.forEach((e, k) => {
    const a = L.nodes.get(e.from)!, b = L.nodes.get(e.to)!;
    const cyc = L.cycleEdges.has(k);
    const crit = L.criticalEdges.has(k);
    let d: string, mx: number, my: number;
    if (!cyc) {
      const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2 + outPort.get(k)!, x2 = b.x, y2 = b.y + NODE_H / 2 + inPort.get(k)!;
      const c = Math.max(30, (x2 - x1) / 2);
      d = `M${x1},${y1.toFixed(1)} C${x1 + c},${y1.toFixed(1)} ${x2 - c},${y2.toFixed(1)} ${x2},${y2.toFixed(1)}`;
      // label near the source end, where edges of one node are still apart
      const t = b.layer - a.layer > 1 ? 0.5 / (b.layer - a.layer) : 0.5;
      const bez = (p0: number, p1: number, p2: number, p3: number) => (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2 + t ** 3 * p3;
      mx = bez(x1, x1 + c, x2 - c, x2);
      my = bez(y1, y1, y2, y2);
    } else {
      // backwards: leave from the bottom of the source, loop under, enter the target's bottom
      const pk = `${e.from}>${e.to}`;
      const nth = pairSeen.get(pk) ?? 0;
      pairSeen.set(pk, nth + 1);
      const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y + NODE_H;
      const low = Math.max(y1, y2) + 40 + Math.min(nth, 2) * 8;
      d = `M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}`;
      mx = (x1 + x2) / 2;
      my = low - 10;
    }
    const cls = `edge${crit ? " critical" : ""}${cyc ? " cycle" : ""}`;
    const stroke = cyc ? "#d62728" : crit ? "#222" : "#888";
    const tip = `${label(e.from)} → ${label(e.to)}${e.tensor !== undefined ? `\ntensor: ${e.tensor}` : ""}${cyc ? "\n(closes a cycle: a dependency graph should be acyclic)" : ""}${crit ? "\n(on a longest path)" : ""}`;
    svg.push(`<path class="${cls}" d="${d}" fill="none" stroke="${stroke}" stroke-width="${crit ? 1.8 : 1.1}"${cyc ? ` stroke-dasharray="5 3"` : ""} marker-end="url(#${cyc ? "arrow-cycle" : crit ? "arrow-critical" : "arrow"})" data-from="${e.from}" data-to="${e.to}"><title>${esc(tip)}</title></path>`);
    if (e.tensor) {
      labels.push(`<text class="edge-label" x="${mx.toFixed(1)}" y="${(my - 4).toFixed(1)}" font-size="10" text-anchor="middle" fill="${cyc ? "#d62728" : "#444"}" stroke="#fff" stroke-width="3" paint-order="stroke" pointer-events="none">${esc(fitText(e.tensor, GAP_X + 40, 10))}</text>`);
    }
  });
  svg.push(`</g>`);
  svg.push(`<g class="edge-labels">${labels.join("")}</g>`);

  // nodes
  const inEdges = new Map<number, DepEdge[]>(), outEdges = new Map<number, DepEdge[]>();
  for (const e of model.edges) {
    (inEdges.get(e.to) ?? inEdges.set(e.to, []).get(e.to)!).push(e);
    (outEdges.get(e.from) ?? outEdges.set(e.from, []).get(e.from)!).push(e);
  }
  const critNodes = new Set<number>();
  for (const k of L.criticalEdges) {
    critNodes.add(model.edges[k].from);
    critNodes.add(model.edges[k].to);
  }
  svg.push(`<g class="nodes">`);
  for (const t of model.tasks) {
    const n = L.nodes.get(t.id)!;
    const fill = colours.get(t.kernel)!;
    const fg = textOn(fill);
    const ins = (inEdges.get(t.id) ?? []).map((e) => `  ${e.tensor ?? "(no tensor)"} from #${e.from} ${byId.get(e.from)!.kernel}`);
    const outs = (outEdges.get(t.id) ?? []).map((e) => `  ${e.tensor ?? "(no tensor)"} to #${e.to} ${byId.get(e.to)!.kernel}`);
    const tip = [
      `task #${t.id}: ${t.kernel}`,
      ...(t.scope !== undefined ? [`scope: ${t.scope}`] : []),
      `layer: ${n.layer}`,
      ...Object.entries(t.extra).map(([k, v]) => `${k}: ${typeof v === "string" ? v : show(v)}`),
      `depends on (${ins.length}):`, ...listCut(ins),
      `needed by (${outs.length}):`, ...listCut(outs),
    ].join("\n");
    const sub = `#${t.id}${t.scope !== undefined ? ` · scope ${t.scope}` : ""}`;
    svg.push(`<g class="node" data-kernel="${esc(t.kernel)}" data-id="${t.id}">` +
      `<rect class="task" x="${n.x}" y="${n.y.toFixed(1)}" width="${NODE_W}" height="${NODE_H}" rx="5" fill="${fill}" stroke="${critNodes.has(t.id) ? "#222" : "#fff"}" stroke-width="${critNodes.has(t.id) ? 2 : 1}"><title>${esc(tip)}</title></rect>` +
      `<text x="${n.x + 8}" y="${(n.y + 15).toFixed(1)}" font-size="11.5" font-weight="600" fill="${fg}" pointer-events="none">${esc(fitText(t.kernel, NODE_W - 14, 11.5))}</text>` +
      `<text x="${n.x + 8}" y="${(n.y + 29).toFixed(1)}" font-size="10" fill="${fg}" fill-opacity="0.85" pointer-events="none">${esc(sub)}</text>` +
      `</g>`);
  }
  svg.push(`</g>`);
  svg.push(`</svg>`);

  const maxWidth = Math.max(0, ...L.layers.map((l) => l.length));
  const subtitle = [
    `${fmtInt(model.tasks.length)} task${model.tasks.length === 1 ? "" : "s"}`,
    `${fmtInt(model.edges.length)} dependenc${model.edges.length === 1 ? "y" : "ies"}`,
    `${L.layers.length} layer${L.layers.length === 1 ? "" : "s"}`,
    model.tasks.length ? `longest path ${L.criticalLength} task${L.criticalLength === 1 ? "" : "s"} (bold)` : "",
    model.tasks.length ? `widest layer ${maxWidth}` : "",
    opts.source ? `from ${opts.source}` : "",
  ].filter(Boolean).join(" · ");
  const warnings = [...model.warnings];
  if (L.cycleEdges.size) warnings.unshift(`${L.cycleEdges.size} edge${L.cycleEdges.size === 1 ? "" : "s"} close${L.cycleEdges.size === 1 ? "s" : ""} a cycle (red, dashed): a task dependency graph should be acyclic`);
  const body = [
    `<h1>${esc(title)}</h1>`,
    `<p class="sub">${esc(subtitle)}</p>`,
    ...(model.tasks.length ? [] : [`<p class="empty">No tasks in this graph.</p>`]),
    ...(warnings.length ? [`<p class="warn">${warnings.slice(0, 20).map(esc).join("<br>")}${warnings.length > 20 ? `<br>… ${warnings.length - 20} more` : ""}</p>`] : []),
    legendHtml(colours, counts),
    `<div class="scroll">${svg.join("\n")}</div>`,
  ];
  return page(title, body.join("\n"));
}

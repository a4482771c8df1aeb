// The dependency-graph view: deps.json -> a self-contained HTML page with a layered SVG DAG.
import { describe, expect, it } from "vitest";
import { DfxFormatError } from "../../src/tools/dfx.js";
import { layoutDeps, parseDeps, renderDepsHtml, type DepsModel } from "../../src/tools/graph.js";
import { depsJson, synthesize } from "./synthetic.js";
import { attrs, svgBlocks, unescape, wellFormedProblems } from "./wellformed.js";

const nodesOf = (html: string) =>
  [...html.matchAll(/<g class="node"([^>]*)><rect class="task"([^>]*)><title>([^<]*)<\/title><\/rect>/g)].map((m) => ({ g: attrs(m[1]), rect: attrs(m[2]), title: unescape(m[3]) }));
const edgesOf = (html: string) =>
  [...html.matchAll(/<path class="(edge[^"]*)"([^>]*)><title>([^<]*)<\/title><\/path>/g)].map((m) => ({ cls: m[1], a: attrs(m[2]), title: unescape(m[3]) }));

/** Longest path (in edges) from any source to each node, computed independently. */
function longestFromSources(m: DepsModel): Map<number, number> {
  const preds = new Map<number, number[]>(m.tasks.map((t) => [t.id, []]));
  for (const e of m.edges) preds.get(e.to)!.push(e.from);
  const memo = new Map<number, number>();
  const depth = (v: number): number => {
    if (!memo.has(v)) memo.set(v, Math.max(0, ...preds.get(v)!.map((p) => depth(p) + 1)));
    return memo.get(v)!;
  };
  for (const t of m.tasks) depth(t.id);
  return memo;
}

describe("dependency graph view", () => {
  const tasks = synthesize({ cores: 4, tiles: 4, reduce: true });
  const deps = depsJson(tasks);

  it("draws one node per task and one labelled edge per dependency", () => {
    expect(deps.tasks).toHaveLength(15);
    expect(deps.edges).toHaveLength(14);
    const html = renderDepsHtml(parseDeps(deps), { title: "deps" });
    const nodes = nodesOf(html);
    expect(html.match(/<rect class="task"/g)).toHaveLength(deps.tasks.length);
    expect(nodes.map((n) => Number(n.g["data-id"])).sort((a, b) => a - b)).toEqual(deps.tasks.map((t) => t.id));
    for (const t of deps.tasks) {
      const n = nodes.find((x) => Number(x.g["data-id"]) === t.id)!;
      expect(n.g["data-kernel"]).toBe(t.kernel);
      expect(n.title.split("\n")[0]).toBe(`task #${t.id}: ${t.kernel}`);
      expect(n.title).toContain(`scope: ${t.scope}`);
      const ins = deps.edges.filter((e) => e.to === t.id);
      expect(n.title).toContain(`depends on (${ins.length}):`);
      for (const e of ins) expect(n.title).toContain(`  ${e.tensor} from #${e.from} `);
    }
    const edges = edgesOf(html);
    expect(html.match(/<path class="edge/g)).toHaveLength(deps.edges.length);
    expect(edges.map((e) => `${e.a["data-from"]}>${e.a["data-to"]}`).sort()).toEqual(deps.edges.map((e) => `${e.from}>${e.to}`).sort());
    for (const e of edges) {
      expect(e.a["marker-end"]).toMatch(/^url\(#arrow(-critical|-cycle)?\)$/);
      const d = deps.edges.find((x) => x.from === Number(e.a["data-from"]) && x.to === Number(e.a["data-to"]))!;
      expect(e.title).toContain(`tensor: ${d.tensor}`);
    }
    const labels = [...html.matchAll(/<text class="edge-label"[^>]*>([^<]*)<\/text>/g)].map((m) => unescape(m[1]));
    expect(labels.sort()).toEqual(deps.edges.map((e) => e.tensor).sort());
    expect(html).toContain(`<marker id="arrow"`);
  });

  it("layers by longest path, left to right, and orders nodes within layers", () => {
    const m = parseDeps(deps);
    const L = layoutDeps(m);
    const depth = longestFromSources(m);
    for (const t of m.tasks) expect(L.nodes.get(t.id)!.layer, `layer of task ${t.id}`).toBe(depth.get(t.id));
    for (const e of m.edges) expect(L.nodes.get(e.from)!.x).toBeLessThan(L.nodes.get(e.to)!.x);
    // nodes of a layer do not overlap and keep the drawing order
    for (const layer of L.layers) {
      const ys = layer.map((id) => L.nodes.get(id)!.y);
      for (let i = 1; i < ys.length; i++) expect(ys[i] - ys[i - 1]).toBeGreaterThanOrEqual(36);
    }
    // 4 tiles x 3 stages, then a 2-level reduction tree: 5 layers, longest path of 5 tasks
    expect(L.layers.map((l) => l.length)).toEqual([4, 4, 4, 2, 1]);
    expect(L.criticalLength).toBe(5);
    expect(L.criticalEdges.size).toBe(4);
    expect(L.cycleEdges.size).toBe(0);
    // the chains stay straight: each tile's stages share a row
    for (let tile = 0; tile < 4; tile++) {
      const ys = tasks.filter((t) => t.scope === tile).map((t) => L.nodes.get(t.id)!.y);
      expect(new Set(ys).size).toBe(1);
    }
  });

  it("writes a well-formed, self-contained page", () => {
    const html = renderDepsHtml(parseDeps({ tasks: [{ id: 0, kernel: "a<&>" }, { id: 1, kernel: "b\"'" }], edges: [{ from: 0, to: 1, tensor: "x<y>&z" }] }), { source: "/t/a&b" });
    expect(wellFormedProblems(html)).toEqual([]);
    expect(svgBlocks(html)).toHaveLength(1);
    expect(html).not.toMatch(/<link\b|<script[^>]+src=|<img\b|@import|href="https?:/i);
    expect(html).toContain(">x&lt;y&gt;&amp;z</text>");
  });

  it("the well-formedness check itself catches broken markup", () => {
    expect(wellFormedProblems("<div><svg><rect></svg></div>")).toEqual(["</svg> at offset 16 closes <rect>"]);
    expect(wellFormedProblems("<p>a < b</p>")[0]).toMatch(/raw '<' in text/);
    expect(wellFormedProblems("<p>a & b</p>")[0]).toMatch(/bare '&'/);
    expect(wellFormedProblems("<div><svg></svg>")).toEqual(["unclosed: <div>"]);
  });

  it("draws a cycle (a producer bug) in red instead of failing, and drops self-loops with a warning", () => {
    const m = parseDeps({
      tasks: [{ id: 1, kernel: "a" }, { id: 2, kernel: "b" }, { id: 3, kernel: "c" }],
      edges: [{ from: 1, to: 2, tensor: "x" }, { from: 2, to: 3, tensor: "y" }, { from: 3, to: 1, tensor: "z" }, { from: 2, to: 2 }],
    });
    expect(m.edges).toHaveLength(3);
    expect(m.warnings).toEqual(["edges[3]: task 2 depends on itself; not drawn"]);
    const L = layoutDeps(m);
    expect(L.cycleEdges.size).toBe(1);
    const html = renderDepsHtml(m);
    expect(edgesOf(html)).toHaveLength(3);
    expect(edgesOf(html).filter((e) => e.cls.includes("cycle"))).toHaveLength(1);
    expect(html).toContain("1 edge closes a cycle");
    expect(html).toContain("task 2 depends on itself");
    expect(wellFormedProblems(html)).toEqual([]);
  });

  it("draws parallel dependencies (two tensors between the same tasks) as separate edges", () => {
    const html = renderDepsHtml(parseDeps({ tasks: [{ id: 0, kernel: "a" }, { id: 1, kernel: "b" }], edges: [{ from: 0, to: 1, tensor: "p" }, { from: 0, to: 1, tensor: "q" }] }));
    const es = edgesOf(html);
    expect(es).toHaveLength(2);
    expect(es[0].a.d).not.toBe(es[1].a.d);
  });

  it("renders an empty graph gracefully", () => {
    const html = renderDepsHtml(parseDeps({ tasks: [], edges: [] }));
    expect(wellFormedProblems(html)).toEqual([]);
    expect(html).toContain("No tasks in this graph");
    expect(nodesOf(html)).toHaveLength(0);
    expect(svgBlocks(html)).toHaveLength(1);
  });

  it("rejects malformed graphs, naming the file, the entry and the field", () => {
    const err = (j: unknown) => {
      try {
        parseDeps(j, "/x/deps.json");
      } catch (e) {
        expect(e).toBeInstanceOf(DfxFormatError);
        return (e as Error).message;
      }
      throw new Error("no error");
    };
    expect(err([])).toMatch(/^\/x\/deps\.json: expected an object \{ "tasks": \[\.\.\.\], "edges": \[\.\.\.\] \}, got \[\]/);
    expect(err({ tasks: [] })).toBe("/x/deps.json: field 'edges' must be an array, got undefined");
    expect(err({ tasks: [{ id: 0, kernel: "a" }, { id: 0, kernel: "b" }], edges: [] })).toBe(
      "/x/deps.json: tasks[1]: 'id' must be unique (tasks[0] has the same id), got 0");
    expect(err({ tasks: [{ id: 0, kernel: "a" }], edges: [{ from: 0, to: 99, tensor: "t" }] })).toBe(
      "/x/deps.json: edges[0]: 'to' must be the id of a task in 'tasks', got 99");
    expect(err({ tasks: [{ id: "0", kernel: "a" }], edges: [] })).toMatch(/tasks\[0\]: 'id' must be an integer, got "0"/);
    expect(err({ tasks: [{ id: 0 }], edges: [] })).toMatch(/tasks\[0\]: 'kernel' must be a non-empty string/);
    expect(err({ tasks: [{ id: 0, kernel: "a" }], edges: [{ from: 0, to: 0, tensor: 5 }] })).toMatch(/edges\[0\]: 'tensor' must be a string when given, got 5/);
  });

  it("handles hundreds of tasks", () => {
    const many = synthesize({ cores: 8, tiles: 100, reduce: true });
    const d = depsJson(many);
    expect(d.tasks.length).toBeGreaterThan(350);
    const t = performance.now();
    const html = renderDepsHtml(parseDeps(d));
    expect(performance.now() - t).toBeLessThan(5000);
    expect(nodesOf(html)).toHaveLength(d.tasks.length);
    expect(edgesOf(html)).toHaveLength(d.edges.length);
    expect(wellFormedProblems(html)).toEqual([]);
    const L = layoutDeps(parseDeps(d));
    const depth = longestFromSources(parseDeps(d));
    for (const task of d.tasks) expect(L.nodes.get(task.id)!.layer).toBe(depth.get(task.id));
  });
});

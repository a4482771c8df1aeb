// Synthetic DFX outputs of a tiled program, in the formats of docs/dfx-formats.md: a task
// graph (per tile a chain of kernels, then a pairwise reduction tree) list-scheduled on N
// cores, written as the swimlane trace and the dependency graph the runtime would record.

export interface SynthTask { id: number; kernel: string; scope: number; core: number; ts: number; dur: number; deps: { from: number; tensor: string }[] }

export interface SynthOptions {
  cores: number;
  tiles: number;
  /** Kernels each tile runs in sequence. */
  stages?: string[];
  /** Add a pairwise reduction tree ("reduce_add") over the tiles' last results. */
  reduce?: boolean;
  seed?: number;
  /** Start of the trace, µs. */
  t0?: number;
}

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BASE_US: Record<string, number> = { matmul_tile: 14, bias_relu: 4, row_sum: 3, reduce_add: 2.5 };

/** Tasks of a tiled program, list-scheduled (ready tasks in id order, earliest-free core). */
export function synthesize(o: SynthOptions): SynthTask[] {
  const stages = o.stages ?? ["matmul_tile", "bias_relu", "row_sum"];
  const r = rng(o.seed ?? 7);
  const tasks: SynthTask[] = [];
  const add = (kernel: string, scope: number, deps: SynthTask["deps"]) => {
    const base = BASE_US[kernel] ?? 5;
    const t: SynthTask = { id: tasks.length, kernel, scope, core: -1, ts: 0, dur: Math.round(base * (0.8 + 0.4 * r()) * 100) / 100, deps };
    tasks.push(t);
    return t;
  };
  let last: { id: number; tensor: string }[] = [];
  for (let tile = 0; tile < o.tiles; tile++) {
    let prev: SynthTask | null = null;
    stages.forEach((k, s) => {
      prev = add(k, tile, prev ? [{ from: prev.id, tensor: `t${tile}_${stages[s - 1]}` }] : []);
    });
    if (prev) last.push({ id: (prev as SynthTask).id, tensor: `part${tile}` });
  }
  let round = 0;
  while (o.reduce && last.length > 1) {
    const next: typeof last = [];
    for (let i = 0; i < last.length; i += 2) {
      if (i + 1 === last.length) { next.push(last[i]); continue; }
      const t = add("reduce_add", o.tiles + round, [{ from: last[i].id, tensor: last[i].tensor }, { from: last[i + 1].id, tensor: last[i + 1].tensor }]);
      next.push({ id: t.id, tensor: `sum${round}_${i / 2}` });
    }
    last = next;
    round++;
  }
  // event-driven list scheduling: a core that becomes free takes the ready task with the lowest id
  const t0 = o.t0 ?? 1000;
  const coreFree = Array.from({ length: o.cores }, () => t0);
  const finished = new Map<number, number>();
  const pending = new Set(tasks.map((t) => t.id));
  while (pending.size) {
    let core = 0;
    for (let c = 1; c < o.cores; c++) if (coreFree[c] < coreFree[core]) core = c;
    const now = coreFree[core];
    const ready = [...pending].filter((id) => tasks[id].deps.every((d) => (finished.get(d.from) ?? Infinity) <= now));
    if (!ready.length) {
      // idle until the next task this core could run becomes ready
      const next = Math.min(...[...pending].map((id) => Math.max(...tasks[id].deps.map((d) => finished.get(d.from) ?? Infinity), now)).filter(Number.isFinite));
      coreFree[core] = Number.isFinite(next) && next > now ? next : Math.min(...coreFree.filter((f) => f > now));
      continue;
    }
    const t = tasks[Math.min(...ready)];
    t.core = core;
    t.ts = Math.round((now + 0.3) * 100) / 100; // 0.3 µs dispatch gap
    coreFree[core] = t.ts + t.dur;
    finished.set(t.id, t.ts + t.dur);
    pending.delete(t.id);
  }
  return tasks;
}

/** The swimlane file (Chrome trace) of scheduled tasks. */
export function traceJson(tasks: SynthTask[], cores: number): { traceEvents: Record<string, unknown>[]; displayTimeUnit: string } {
  const ev: Record<string, unknown>[] = [{ ph: "M", name: "process_name", pid: 0, args: { name: "tspto-cpu-sim device 0" } }];
  for (let c = 0; c < cores; c++) ev.push({ ph: "M", name: "thread_name", pid: 0, tid: c, args: { name: `core ${c}` } });
  for (const t of tasks) {
    ev.push({ ph: "X", name: t.kernel, cat: "task", pid: 0, tid: t.core, ts: t.ts, dur: t.dur, args: { task: t.id, scope: t.scope, core: t.core } });
  }
  return { traceEvents: ev, displayTimeUnit: "ns" };
}

/** The dependency-graph file of tasks. */
export function depsJson(tasks: SynthTask[]): { tasks: { id: number; kernel: string; scope: number }[]; edges: { from: number; to: number; tensor: string }[] } {
  return {
    tasks: tasks.map((t) => ({ id: t.id, kernel: t.kernel, scope: t.scope })),
    edges: tasks.flatMap((t) => t.deps.map((d) => ({ from: d.from, to: t.id, tensor: d.tensor }))),
  };
}

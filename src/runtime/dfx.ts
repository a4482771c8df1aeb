// DFX ("design for X") outputs of the cpu platform: after a launch that recorded (RunConfig
// enableChipSwimlane / enableDepGen / enablePmu / enableDumpArgs / enableScopeStats), the
// native trace (tasks, edges, argument snapshots, counters) is written under
// <CompiledProgram.outputDir>/dfx_outputs/ in the formats of docs/dfx-formats.md. Each file
// describes the latest launch that recorded it and is written atomically (temp + rename).
// The interp platform records nothing (see ChipWorker: it says so once).
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync, renameSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import type { RunConfig } from "./config.js";
import { DFX_DIR, checkDirInside, readMarker, recordFiles, removeWritten, type CompiledMeta } from "../artifact/index.js";
import type { DeviceTrace as NativeTrace, DeviceTraceAccess as NativeTraceAccess, DeviceTraceTask as NativeTraceTask } from "../targets/index.js";
import { dtypeBytes, typedArrayFor, type DType } from "./dtype.js";

export { DFX_DIR };

/** Native TraceFlags (native/src/scheduler.h). */
export const TRACE_TASKS = 1;
const TRACE_DUMP = 2, TRACE_PMU = 4;
/** Bytes of each access snapshotted at enableDumpArgs level 1 (16 values of up to 8 bytes). */
const DUMP_L1_BYTES = 128;

export type { NativeTrace, NativeTraceAccess, NativeTraceTask };

/** The recording mask and snapshot byte cap a RunConfig asks for (0: record nothing). */
export function recordingOf(cfg: RunConfig): { mask: number; dumpBytes: number } {
  let mask = 0;
  if (cfg.enableChipSwimlane > 0 || cfg.enableDepGen || cfg.enableScopeStats || cfg.enablePmu > 0 || cfg.enableDumpArgs > 0) mask |= TRACE_TASKS;
  if (cfg.enableDumpArgs > 0) mask |= TRACE_DUMP;
  if (cfg.enablePmu > 0) mask |= TRACE_PMU;
  return { mask, dumpBytes: cfg.enableDumpArgs === 1 ? DUMP_L1_BYTES : 0 };
}

function writeFile(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * A file written in pieces, then renamed into place (atomic like writeFile): a launch of
 * 200k tasks makes a swimlane of ~100 MB, which is never one string or one object tree.
 */
class StreamFile {
  readonly #tmp: string;
  readonly #fd: number;
  #parts: string[] = [];
  #len = 0;
  constructor(readonly path: string) {
    this.#tmp = `${path}.tmp-${process.pid}`;
    this.#fd = openSync(this.#tmp, "w");
  }
  write(s: string): void {
    this.#parts.push(s);
    this.#len += s.length;
    if (this.#len >= 1 << 20) this.#flush();
  }
  #flush(): void {
    if (this.#parts.length) writeSync(this.#fd, this.#parts.join(""));
    this.#parts = [];
    this.#len = 0;
  }
  close(): void {
    this.#flush();
    closeSync(this.#fd);
    renameSync(this.#tmp, this.path);
  }
}
/** `[` items `]` as JSON, one item per line. */
function jsonArray(f: StreamFile, n: number, item: (i: number) => string): void {
  f.write("[");
  for (let i = 0; i < n; i++) f.write(`${i ? ",\n" : "\n"}${item(i)}`);
  f.write("\n]");
}

interface Region { name: string; base: bigint; nbytes: number; dtype: DType | null }

/** Names the tensor an access lies in: a launch argument (by param name) or tmp<n> (orchestration buffer). */
function regionsOf(meta: CompiledMeta, trace: NativeTrace): Region[] {
  const regions: Region[] = [];
  meta.params.forEach((p, i) => {
    if (p.kind !== "tensor" || i >= trace.argSlots.length) return;
    const n = (p.shape ?? []).reduce((a, b) => a * b, 1) * dtypeBytes(p.dtype);
    regions.push({ name: p.name, base: trace.argSlots[i], nbytes: n, dtype: p.dtype });
  });
  trace.orchBuffers.forEach((b, i) => regions.push({ name: `tmp${i}`, base: b.base, nbytes: b.nbytes, dtype: null }));
  return regions;
}

function locate(regions: Region[], a: NativeTraceAccess): { name: string; offset: number; dtype: DType | null } {
  for (const r of regions) {
    if (a.base >= r.base && a.base < r.base + BigInt(r.nbytes)) return { name: r.name, offset: Number(a.base - r.base), dtype: r.dtype };
  }
  return { name: `0x${a.base.toString(16)}`, offset: 0, dtype: null };
}

const MODE = ["", "read", "write", "readwrite"];

/**
 * Writes the DFX files `cfg` asks for from one launch's trace. Returns the directory:
 * `<outputDir>/dfx_outputs/`, or `<outputDir>/dfx_outputs/<subdir>/` for a device of a
 * DistributedWorker (`rank_<r>/device_<d>`).
 */
export function writeDfx(outputDir: string, meta: CompiledMeta, cfg: RunConfig, trace: NativeTrace, coreCount: number, deviceId: number, subdir = ""): string {
  const rel = subdir ? `${DFX_DIR}/${subdir}` : DFX_DIR;
  const dir = join(outputDir, rel);
  checkDirInside(outputDir, rel); // (never written through a link planted in the artifact)
  mkdirSync(dir, { recursive: true });
  // every file written is recorded in the artifact's marker: tspto deletes only what it wrote
  const written: string[] = [];
  const writeAtomic = (path: string, data: string | Uint8Array) => { writeFile(path, data); written.push(`${rel}/${path.slice(dir.length + 1)}`); };
  const stream = (path: string) => { written.push(`${rel}/${path.slice(dir.length + 1)}`); return new StreamFile(path); };
  const t0 = trace.launchStartNs;
  const us = (ns: number) => (ns - t0) / 1000;
  const regions = regionsOf(meta, trace);
  const tasks = trace.tasks;

  // the dependency graph (swimlane's idle reasons and deps.json), derived once
  let edges: ReturnType<typeof derivedEdges> | null = null;
  const graph = () => (edges ??= derivedEdges(tasks));

  if (cfg.enableChipSwimlane > 0) {
    const level = cfg.enableChipSwimlane;
    const head: object[] = [{ ph: "M", name: "process_name", pid: deviceId, args: { name: `${meta.runtimeName} device ${deviceId}` } }];
    const usedCores = new Set(tasks.map((t) => t.core));
    const why = idleReason(tasks, coreCount, graph);
    for (let c = 0; c < coreCount; c++) {
      head.push({ ph: "M", name: "thread_name", pid: deviceId, tid: c, args: usedCores.has(c) ? { name: `core ${c}` } : { name: `core ${c}`, idle: why } });
    }
    // Tasks the orchestration thread ran itself (a launch's last task, when no more tasks than cores were in flight) have core == coreCount.
    if (usedCores.has(coreCount)) head.push({ ph: "M", name: "thread_name", pid: deviceId, tid: coreCount, args: { name: `core ${coreCount} (orchestration thread)` } });
    const orchTid = coreCount + 1;
    if (level >= 3) head.push({ ph: "M", name: "thread_name", pid: deviceId, tid: orchTid, args: { name: "orchestration" } });
    const tail: object[] = [];
    if (level >= 3) {
      tail.push({ ph: "X", name: "orchestration", cat: "orchestration", pid: deviceId, tid: orchTid, ts: 0, dur: (trace.entryEndNs - t0) / 1000, args: { tasks: tasks.length } });
      tail.push({ ph: "X", name: "drain", cat: "orchestration", pid: deviceId, tid: orchTid, ts: us(trace.entryEndNs), dur: Math.max(0, trace.launchEndNs - trace.entryEndNs) / 1000, args: {} });
    }
    // The launch's start on the wall clock (µs since the epoch), so that traces of several
    // processes (ranks) can be put on one timeline: the trace clock is CLOCK_MONOTONIC, as
    // process.hrtime is, so the offset between the two clocks is measured now.
    const startUnixUs = Math.round((performance.timeOrigin + performance.now()) * 1000 - Number(process.hrtime.bigint() - BigInt(t0)) / 1000);
    // streamed: one line per event, the task events written as text (kernel names quoted once)
    const quoted = new Map<string, string>();
    const q = (k: string) => { let v = quoted.get(k); if (v === undefined) { v = JSON.stringify(k); quoted.set(k, v); } return v; };
    const qs = new Map<string, string>();
    const qk = (prefix: string, k: string) => { const key = `${prefix}${k}`; let v = qs.get(key); if (v === undefined) { v = JSON.stringify(key); qs.set(key, v); } return v; };
    const f = stream(join(dir, "swimlane.json"));
    f.write('{"traceEvents":[');
    let first = true;
    const put = (line: string) => { f.write(first ? `\n${line}` : `,\n${line}`); first = false; };
    for (const e of head) put(JSON.stringify(e));
    for (const t of tasks) {
      put(`{"ph":"X","name":${q(t.kernel)},"cat":"task","pid":${deviceId},"tid":${t.core},"ts":${us(t.startNs)},"dur":${(t.endNs - t.startNs) / 1000},"args":{"task":${t.id},"core":${t.core},"scope":${t.scope}}}`);
      if (level >= 2) {
        put(`{"ph":"i","name":${qk("submit ", t.kernel)},"cat":"dispatch","s":"t","pid":${deviceId},"tid":${orchTid},"ts":${us(t.submitNs)},"args":{"task":${t.id}}}`);
        put(`{"ph":"i","name":${qk("finish ", t.kernel)},"cat":"finish","s":"t","pid":${deviceId},"tid":${t.core},"ts":${us(t.endNs)},"args":{"task":${t.id}}}`);
      }
    }
    for (const e of tail) put(JSON.stringify(e));
    f.write(`\n],"displayTimeUnit":"ns","launchUs":${(trace.launchEndNs - t0) / 1000},"startUnixUs":${startUnixUs}}`);
    f.close();
  }

  if (cfg.enableDepGen) {
    const es = graph();
    const f = stream(join(dir, "deps.json"));
    f.write('{"tasks":');
    jsonArray(f, tasks.length, (i) => { const t = tasks[i]; return `{"id":${t.id},"kernel":${JSON.stringify(t.kernel)},"scope":${t.scope},"core":${t.core}}`; });
    f.write(',"edges":');
    jsonArray(f, es.length, (i) => { const e = es[i]; return `{"from":${e.from},"to":${e.to},"tensor":${JSON.stringify(locate(regions, e.access).name)}}`; });
    f.write("}\n");
    f.close();
  }

  if (cfg.enablePmu > 0) {
    const lines: string[] = [];
    const have = tasks.some((t) => t.cycles >= 0);
    if (!have) lines.push(`# counters unavailable: ${trace.pmuError || "perf_event_open gave no counts"}`);
    lines.push("task,kernel,core,scope,start_ns,wall_ns,cycles,instructions");
    const cell = (v: number) => (v >= 0 ? String(v) : "");
    for (const t of tasks) lines.push([t.id, t.kernel, t.core, t.scope, t.startNs - t0, t.endNs - t.startNs, cell(t.cycles), cell(t.instructions)].join(","));
    writeAtomic(join(dir, "pmu.csv"), lines.join("\n") + "\n");
  }

  if (cfg.enableDumpArgs > 0) {
    const full = cfg.enableDumpArgs >= 2;
    const adir = join(dir, "args_dump");
    // the previous launch's dump goes (the files tspto recorded writing; anything else stays)
    const marker = readMarker(outputDir);
    if (marker && marker !== "invalid") removeWritten(outputDir, marker, `${rel}/args_dump`);
    mkdirSync(adir, { recursive: true });
    const f = stream(join(adir, "index.json"));
    f.write(`{"level":${cfg.enableDumpArgs},"tasks":`);
    jsonArray(f, tasks.length, (ti) => {
      const t = tasks[ti];
      return JSON.stringify({
        task: t.id, kernel: t.kernel, scope: t.scope, core: t.core,
        args: t.accesses.map((a, k) => {
          const loc = locate(regions, a);
          const dtype: DType = loc.dtype ?? "float32";
          const entry: Record<string, unknown> = { tensor: loc.name, offset: loc.offset, nbytes: a.nbytes, mode: MODE[a.mode] ?? a.mode, dtype, dtypeKnown: loc.dtype !== null };
          // a tensor window: the snapshot is its byte hull (whole rows between the first and last)
          if (a.window) entry.window = { offsets: a.window.offsets, extents: a.window.extents };
          for (const when of ["before", "after"] as const) {
            const bytes = a[when] ?? new Uint8Array(0);
            if (full) {
              const file = `task${t.id}_arg${k}_${when}.bin`;
              writeFileSync(join(adir, file), bytes);
              written.push(`${rel}/args_dump/${file}`);
              entry[`${when}File`] = file;
            }
            entry[when] = firstValues(bytes, dtype, 16);
          }
          return entry;
        }),
      });
    });
    f.write("}\n");
    f.close();
  }

  if (cfg.enableScopeStats) {
    const by = new Map<number, { count: number; total: number; kernels: Set<string> }>();
    for (const t of tasks) {
      const s = by.get(t.scope) ?? { count: 0, total: 0, kernels: new Set<string>() };
      s.count++; s.total += t.endNs - t.startNs; s.kernels.add(t.kernel);
      by.set(t.scope, s);
    }
    const lines = [...by.entries()].sort((a, b) => a[0] - b[0]).map(([scope, s]) =>
      JSON.stringify({ scope, tasks: s.count, totalNs: s.total, meanNs: s.total / s.count, kernels: [...s.kernels] }));
    writeAtomic(join(dir, "scope_stats.jsonl"), lines.join("\n") + (lines.length ? "\n" : ""));
  }
  recordFiles(outputDir, written);
  return dir;
}

/** The roofline report of the latest benchmark with `roofline: true` (the DFX HTML's roofline plot reads it). */
export const ROOFLINE_FILE = "roofline.json";

/** Writes `<outputDir>/dfx_outputs/roofline.json` (atomically, recorded in the artifact's marker); returns its path. */
export function writeRooflineFile(outputDir: string, report: object, subdir = ""): string {
  const rel = subdir ? `${DFX_DIR}/${subdir}` : DFX_DIR;
  const dir = join(outputDir, rel);
  checkDirInside(outputDir, rel);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, ROOFLINE_FILE);
  writeFile(file, `${JSON.stringify({ format: "tspto-roofline-1", ...report }, null, 1)}\n`);
  recordFiles(outputDir, [`${rel}/${ROOFLINE_FILE}`]);
  return file;
}

function firstValues(bytes: Uint8Array, dtype: DType, n: number): (number | string)[] {
  const w = dtypeBytes(dtype);
  const count = Math.min(n, Math.floor(bytes.byteLength / w));
  if (count === 0) return [];
  const copy = new Uint8Array(bytes.subarray(0, count * w)); // a copy (a Buffer's slice is a view)
  if (dtype === "float16" || dtype === "bfloat16") {
    const u = new Uint16Array(copy.buffer);
    return [...u].map((h) => dtype === "bfloat16" ? new Float32Array(new Uint32Array([h << 16]).buffer)[0] : halfToFloat(h));
  }
  const Ctor = typedArrayFor(dtype) as unknown as new (b: ArrayBufferLike) => ArrayLike<number | bigint>;
  return Array.from(new Ctor(copy.buffer), (v) => (typeof v === "bigint" ? v.toString() : Number(v)));
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? NaN : s * Infinity;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

export interface ArgsDumpEntry {
  tensor: string; offset: number; nbytes: number; mode: string; dtype: DType;
  before: (number | string)[]; after: (number | string)[];
  /** Level 2 only: full contents. */
  beforeBytes?: Uint8Array; afterBytes?: Uint8Array;
}
export interface ArgsDumpTask { task: number; kernel: string; scope: number; core: number; args: ArgsDumpEntry[] }

/** Reads an args_dump directory (dfx_outputs/args_dump, or an artifact/dfx_outputs dir) back. */
export function readArgsDump(dir: string): { level: number; tasks: ArgsDumpTask[] } {
  let d = dir;
  if (!existsSync(join(d, "index.json"))) {
    for (const c of [join(dir, "args_dump"), join(dir, DFX_DIR, "args_dump")]) if (existsSync(join(c, "index.json"))) d = c;
  }
  const raw = JSON.parse(readFileSync(join(d, "index.json"), "utf8")) as { level: number; tasks: (ArgsDumpTask & { args: (ArgsDumpEntry & { beforeFile?: string; afterFile?: string })[] })[] };
  for (const t of raw.tasks) {
    for (const a of t.args) {
      if (a.beforeFile) a.beforeBytes = new Uint8Array(readFileSync(join(d, a.beforeFile)));
      if (a.afterFile) a.afterBytes = new Uint8Array(readFileSync(join(d, a.afterFile)));
    }
  }
  return { level: raw.level, tasks: raw.tasks };
}

/**
 * Why a core ran no task in this launch (the swimlane's thread_name `args.idle`): no task at
 * all; fewer tasks than cores; as many tasks as cores, the last run by the orchestration thread
 * itself; no two tasks independent (every task waits for the one before: the widest layer of
 * the dependency graph is 1); or independent tasks existed but the other cores (and the
 * orchestration thread) took each one before this core woke up.
 */
export function idleReason(tasks: readonly NativeTraceTask[], coreCount: number, edges: () => ReturnType<typeof derivedEdges> = () => derivedEdges(tasks)): string {
  if (tasks.length === 0) return "the launch submitted no task";
  if (tasks.length === 1) return "the launch had a single task";
  if (tasks.length < coreCount) return `only ${tasks.length} tasks for ${coreCount} cores`;
  if (tasks.length === coreCount && tasks.some((t) => t.core === coreCount)) {
    return `${tasks.length} tasks for ${coreCount} cores: the orchestration thread ran the last one itself (one hand-off less)`;
  }
  const layer = new Map<number, number>();
  for (const t of tasks) layer.set(t.id, 0);
  for (const e of [...edges()].sort((a, b) => a.to - b.to)) layer.set(e.to, Math.max(layer.get(e.to)!, layer.get(e.from)! + 1));
  const width = new Map<number, number>();
  for (const l of layer.values()) width.set(l, (width.get(l) ?? 0) + 1);
  const widest = Math.max(...width.values());
  if (widest <= 1) return `no independent task: each of the ${tasks.length} tasks depends on the one before (widest layer of deps.json: 1)`;
  const mean = tasks.reduce((s, t) => s + (t.endNs - t.startNs), 0) / tasks.length / 1000;
  return `independent tasks existed (widest layer ${widest}) but the other threads took each one first (mean task ${mean.toFixed(1)} µs, shorter than a core's wake-up)`;
}

/**
 * The launch's dependency graph from the recorded accesses, independent of timing (the
 * scheduler itself only links a task to earlier tasks still unfinished when it is
 * submitted): task j depends on an earlier task i when an access of each overlaps and one
 * writes. Scanning back from j, a write that covers j's access is the newest producer of that
 * region; older tasks are ordered before it already, so the scan stops there.
 *
 * The scan is not done task by task (that was quadratic: 16k independent tasks took 16–30 s,
 * each access scanned every earlier task). Accesses are grouped by the region they touch
 * (byte hull and window: what overlap and coverage depend on), the regions sorted by address
 * with a max-end tree over them, so each access visits only the regions its hull overlaps;
 * in a region, the accesses of one kind are in task order, so the ones between the stop (the
 * newest covering write) and j are a suffix found by binary search. The edges, their order
 * and the access each names are those of the task-by-task scan.
 */
export function derivedEdges(tasks: readonly NativeTraceTask[]): { from: number; to: number; access: NativeTraceAccess }[] {
  const W = 2;
  // ---- regions: one per distinct (hull, window); each holds its accesses' task indices in order
  interface Region { rep: NativeTraceAccess; lo: number; hi: number; all: number[]; writes: number[]; near?: Region[] }
  const byKey = new Map<string, Region>();
  const regionOf: (Region | undefined)[][] = tasks.map((t, j) => t.accesses.map((a) => {
    if (!(a.nbytes > 0)) return undefined; // touches nothing: overlaps no access
    const w = a.window;
    const key = `${a.base}:${a.nbytes}${w ? `:${w.tensor}:${w.elemBytes}:${w.dims.join(",")}:${w.offsets.join(",")}:${w.extents.join(",")}` : ""}`;
    let r = byKey.get(key);
    if (!r) { r = { rep: a, lo: Number(a.base), hi: Number(a.base) + a.nbytes, all: [], writes: [] }; byKey.set(key, r); }
    if (r.all[r.all.length - 1] !== j) r.all.push(j);
    if (a.mode & W && r.writes[r.writes.length - 1] !== j) r.writes.push(j);
    return r;
  }));
  const sorted = [...byKey.values()].sort((x, y) => x.lo - y.lo);
  const n = sorted.length;
  // maxHi[node] over sorted[node's range], an implicit segment tree (node 1 = whole array)
  const size = 1 << Math.ceil(Math.log2(Math.max(1, n)));
  const maxHi = new Float64Array(2 * size).fill(-Infinity);
  sorted.forEach((r, k) => { maxHi[size + k] = r.hi; });
  for (let k = size - 1; k >= 1; k--) maxHi[k] = Math.max(maxHi[2 * k], maxHi[2 * k + 1]);
  /** The regions that touch a common element with `r` (an overlap independent of mode and time). */
  const near = (r: Region): Region[] => {
    if (r.near) return r.near;
    const out: Region[] = [];
    // the regions that start before r ends: a prefix of `sorted`
    let a = 0, b = n;
    while (a < b) { const m = (a + b) >> 1; if (sorted[m].lo < r.hi) a = m + 1; else b = m; }
    const limit = a;
    const walk = (node: number, from: number, to: number): void => {
      if (from >= limit || maxHi[node] <= r.lo) return;
      if (to - from === 1) { const q = sorted[from]; if (accessesOverlap(q.rep, r.rep)) out.push(q); return; }
      const mid = (from + to) >> 1;
      walk(2 * node, from, mid);
      walk(2 * node + 1, mid, to);
    };
    walk(1, 0, size);
    return (r.near = out);
  };
  /** Index of the first entry of `xs` (ascending) that is >= v. */
  const lowerBound = (xs: number[], v: number): number => {
    let a = 0, b = xs.length;
    while (a < b) { const m = (a + b) >> 1; if (xs[m] < v) a = m + 1; else b = m; }
    return a;
  };

  const out: { from: number; to: number; access: NativeTraceAccess }[] = [];
  for (let j = 0; j < tasks.length; j++) {
    const linked = new Set<number>();
    tasks[j].accesses.forEach((aj, k) => {
      const r = regionOf[j][k];
      if (!r) return;
      const cand = near(r);
      // the stop: the newest earlier task with a write covering aj
      let stop = -1;
      for (const q of cand) {
        if (!covers(q.rep, aj)) continue;
        const at = lowerBound(q.writes, j) - 1;
        if (at >= 0) stop = Math.max(stop, q.writes[at]);
      }
      // tasks in [stop, j) with a conflicting access in an overlapping region, newest first
      const found = new Set<number>();
      for (const q of cand) {
        const xs = aj.mode & W ? q.all : q.writes;
        for (let at = lowerBound(xs, j) - 1; at >= 0 && xs[at] >= stop; at--) found.add(xs[at]);
      }
      for (const i of [...found].sort((x, y) => y - x)) {
        if (linked.has(i)) continue;
        linked.add(i);
        out.push({ from: tasks[i].id, to: tasks[j].id, access: aj });
      }
    });
  }
  return out;
}

/** Two windows of one tensor (same address, dims and element size): compared box by box. */
function sameTensor(a: NativeTraceAccess, b: NativeTraceAccess): boolean {
  const x = a.window, y = b.window;
  return !!x && !!y && x.tensor === y.tensor && x.elemBytes === y.elemBytes && x.dims.length === y.dims.length && x.dims.every((d, k) => d === y.dims[k]);
}

/** Do two accesses touch a common element (the scheduler's rule, native/src/scheduler.cc)? An empty one touches none. */
export function accessesOverlap(a: NativeTraceAccess, b: NativeTraceAccess): boolean {
  if (!(a.nbytes > 0 && b.nbytes > 0)) return false;
  if (!(a.base < b.base + BigInt(b.nbytes) && b.base < a.base + BigInt(a.nbytes))) return false;
  if (!sameTensor(a, b)) return true;
  const x = a.window!, y = b.window!;
  return x.offsets.every((o, k) => o < y.offsets[k] + y.extents[k] && y.offsets[k] < o + x.extents[k]);
}

/** Does `a` touch every element `b` touches? */
function covers(a: NativeTraceAccess, b: NativeTraceAccess): boolean {
  if (sameTensor(a, b)) {
    const x = a.window!, y = b.window!;
    return x.offsets.every((o, k) => o <= y.offsets[k] && y.offsets[k] + y.extents[k] <= o + x.extents[k]);
  }
  // a window covers only its own elements, not its whole byte hull
  return !a.window && a.base <= b.base && b.base + BigInt(b.nbytes) <= a.base + BigInt(a.nbytes);
}

// The roofline report: what each task kernel of a launch costs against the machine. The runtime
// joins three things here, each from its own room: the counts (bytes, flops) of the lowered
// program, from its artifact's program.json through src/ir/cost.ts; the machine's limits, which
// the target measures once and caches (Target.limits: src/targets/cpu/limits.ts); and the
// measured time of each kernel's tasks, from the DFX trace of measured launches. tools/ renders
// the report (the terminal table: src/tools/roofline.ts, wired in by the package root; the
// roofline plot of the DFX HTML).
//
// Per kernel: `us` is the time its tasks kept the launch busy (the union of their intervals on
// the device clock: tasks on several cores at once count once), `gbps` / `gflops` its bytes and
// flops over that time; the roofs are those of the whole device (all core threads): the memory
// roof `bytes / readGBs`, the compute roof the flops of each unit over its peak (bf16 and int8
// matmul flops on the dot-product peaks where the machine has them, else on the FMA peak), the
// kernel's roof the larger of the two (`bound`: which one), `fraction` the roof's share of the
// measured time (capped at 1: a kernel whose data sat in the caches can beat the streaming-read
// roof, `aboveRoof` says so) and `lostUs` the time above the roof. Rows sort by `lostUs`.
import { programCost, totalBytes, totalFlops, type CostArg, type KernelCost, type Program } from "../ir/index.js";
import { readProgram, type CompiledMeta } from "../artifact/index.js";
import type { DeviceTrace, MachineLimits } from "../targets/index.js";
import { DeviceTensor } from "./device_tensor.js";
import { asTensorLike, HostTensor } from "./host/index.js";
import type { ProgramHandle } from "./program_handle.js";

export type { MachineLimits };

/** One task kernel of a launch (or of every launch of a program, in a profile). */
export interface RooflineRow {
  /** The InCore function (the kernel name its tasks carry). */
  readonly kernel: string;
  /** Tasks that ran (an SPMD call runs as several band tasks); null without per-task times. */
  readonly tasks: number | null;
  /** Calls the orchestration made (the IR's view: an SPMD call is one). */
  readonly calls: number;
  /** Bytes read from and written to tensors (global memory), counted from the IR; null when unknown (see note). */
  readonly bytes: number | null;
  readonly readBytes: number | null;
  readonly writeBytes: number | null;
  /** Arithmetic ops counted from the IR; null when unknown. */
  readonly flops: number | null;
  /** The flops by the unit that can do them: the vector (FMA) pipes, a bf16 / int8 dot-product unit; null when unknown. */
  readonly flopsByUnit: { readonly vector: number; readonly dotBf16: number; readonly dotInt8: number } | null;
  /** Measured busy time of its tasks (µs); null without per-task times. */
  readonly us: number | null;
  readonly gbps: number | null;
  readonly gflops: number | null;
  /** flops per byte. */
  readonly intensity: number | null;
  /** The time at the roof (µs): the larger of the memory and compute roofs; null without limits or counts. */
  readonly roofUs: number | null;
  readonly bound: "memory" | "compute" | null;
  /** Of the roof that applies, the share reached: roofUs / us, at most 1. */
  readonly fraction: number | null;
  /** Measured faster than the streaming-read roof (its data came from the caches): fraction was capped at 1. */
  readonly aboveRoof: boolean;
  /** Time above the roof (µs): us − roofUs, at least 0. */
  readonly lostUs: number | null;
  /** Why a field is null, when one is. */
  readonly note: string | null;
}

export interface RooflineData {
  readonly program: string;
  /** The program's artifact directory (CompiledProgram.outputDir). */
  readonly outputDir?: string;
  readonly platform: string;
  /** Launches the times come from. */
  readonly launches: number;
  /** "launch": per launch (counts of one launch, times the median over the launches); "total": summed over every launch. */
  readonly per: "launch" | "total";
  readonly rows: readonly RooflineRow[];
  readonly limits: MachineLimits | null;
  /** What the report lacks and why (no per-task times, no limits). */
  readonly notes: readonly string[];
}

/** Renders a report as the terminal table (the package root sets it: src/tools/roofline.ts). */
let tableRenderer: ((r: RooflineData) => string) | null = null;
export function setRooflineRenderer(f: (r: RooflineData) => string): void { tableRenderer = f; }

export class RooflineReport implements RooflineData {
  readonly program: string;
  readonly outputDir?: string;
  readonly platform: string;
  readonly launches: number;
  readonly per: "launch" | "total";
  readonly rows: readonly RooflineRow[];
  readonly limits: MachineLimits | null;
  readonly notes: readonly string[];
  constructor(d: RooflineData) {
    this.program = d.program;
    if (d.outputDir !== undefined) this.outputDir = d.outputDir;
    this.platform = d.platform;
    this.launches = d.launches;
    this.per = d.per;
    this.rows = Object.freeze([...d.rows]);
    this.limits = d.limits;
    this.notes = Object.freeze([...d.notes]);
  }
  /** The table, sorted by time lost. */
  toString(): string {
    return tableRenderer ? tableRenderer(this) : `RooflineReport(${this.program}: ${this.rows.length} kernels; import "tspto" to render the table)`;
  }
  toJSON(): RooflineData {
    return { program: this.program, ...(this.outputDir !== undefined ? { outputDir: this.outputDir } : {}), platform: this.platform, launches: this.launches, per: this.per, rows: this.rows, limits: this.limits, notes: this.notes };
  }
}

// ------------------------------------------------------------------ counts

/** A launch argument as the count needs it: a tensor's shape, a scalar's value. */
export function costArgs(args: readonly unknown[]): CostArg[] {
  return args.map((a) => {
    if (typeof a === "number" || typeof a === "boolean") return a;
    if (a instanceof HostTensor || a instanceof DeviceTensor) return a.shape;
    if (a !== null && typeof a === "object") return asTensorLike(a)?.shape ?? null;
    return null;
  });
}

const programs = new WeakMap<ProgramHandle, { program: Program | null; error: string | null; costs: Map<string, readonly KernelCost[] | string> }>();

/** The counts of one launch of `compiled` with these arguments (cached per program and argument shapes), or why there are none. */
export function launchCounts(compiled: ProgramHandle, args: readonly CostArg[]): readonly KernelCost[] | string {
  let e = programs.get(compiled);
  if (!e) {
    let program: Program | null = null, error: string | null = null;
    try { program = readProgram(compiled); } catch (err) { error = `the program's lowered IR cannot be read (${(err as Error).message.split("\n")[0]})`; }
    e = { program, error, costs: new Map() };
    programs.set(compiled, e);
  }
  if (!e.program) return e.error!;
  const key = JSON.stringify(args);
  let c = e.costs.get(key);
  if (c === undefined) {
    const pc = programCost(e.program, args);
    c = pc.unknown ? `counts unknown: ${pc.unknown}` : pc.kernels;
    if (e.costs.size > 64) e.costs.clear();
    e.costs.set(key, c);
  }
  return c;
}

// ------------------------------------------------------------------ times

export interface KernelTime { tasks: number; us: number }

/** Per kernel of a launch's trace: its tasks and their busy time (µs, the union of their intervals); null when the trace has no times. */
export function kernelTimes(trace: DeviceTrace, meta: CompiledMeta): Map<string, KernelTime> | null {
  if (trace.tasks.length > 0 && trace.tasks.every((t) => t.startNs === 0 && t.endNs === 0)) return null; // dispatches without timestamps
  const bySymbol = new Map(meta.kernels.map((k) => [k.symbol, k.name]));
  const spans = new Map<string, [number, number][]>();
  for (const t of trace.tasks) {
    const k = bySymbol.get(t.kernel) ?? t.kernel;
    let s = spans.get(k);
    if (!s) spans.set(k, (s = []));
    s.push([t.startNs, t.endNs]);
  }
  const out = new Map<string, KernelTime>();
  for (const [k, s] of spans) {
    s.sort((a, b) => a[0] - b[0]);
    let busy = 0, lo = s[0][0], hi = s[0][1];
    for (const [a, b] of s.slice(1)) {
      if (a > hi) { busy += hi - lo; lo = a; hi = b; } else if (b > hi) hi = b;
    }
    busy += hi - lo;
    out.set(k, { tasks: s.length, us: busy / 1000 });
  }
  return out;
}

// ------------------------------------------------------------------ the join

/** Counts of one kernel (summed over launches in a profile). */
export interface KernelCounts { calls: number; cost: KernelCost | null; unknown: string | null }

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export { median as medianOf };

/** The roof (µs) of `bytes` and of flops per unit on `limits`, and which one binds. */
export function roofOf(c: KernelCost, limits: MachineLimits): { roofUs: number; bound: "memory" | "compute"; memUs: number; computeUs: number } {
  const per = (ops: number, g: number | undefined) => (ops > 0 ? ops / ((g ?? limits.fmaGflops) * 1e3) : 0);
  const memUs = totalBytes(c) / (limits.readGBs * 1e3);
  const computeUs = per(c.vectorFlops, limits.fmaGflops) + per(c.dotBf16Flops, limits.dotGflops) + per(c.dotInt8Flops, limits.dotInt8Gops);
  return computeUs > memUs ? { roofUs: computeUs, bound: "compute", memUs, computeUs } : { roofUs: memUs, bound: "memory", memUs, computeUs };
}

/**
 * Rows from per-kernel counts and times. `counts`: by kernel (null: the program has no counts, `why`);
 * `times`: by kernel (null: no per-task times); `limits`: null without roofs.
 */
export function rooflineRows(counts: ReadonlyMap<string, KernelCounts> | null, why: string | null, times: ReadonlyMap<string, KernelTime> | null,
  limits: MachineLimits | null): RooflineRow[] {
  const names = [...new Set([...(counts?.keys() ?? []), ...(times?.keys() ?? [])])];
  const rows = names.map((kernel): RooflineRow => {
    const n = counts?.get(kernel) ?? null, t = times?.get(kernel) ?? null;
    const notes: string[] = [];
    const cost = n && !n.unknown ? n.cost : null;
    if (!counts) notes.push(why ?? "no counts");
    else if (!n) notes.push("no counts: not a kernel of the program's IR");
    else if (n.unknown) notes.push(`counts unknown: ${n.unknown}`);
    if (times && !t) notes.push("no task of it ran in the measured launches");
    const us = t ? t.us : null;
    const bytes = cost ? totalBytes(cost) : null, flops = cost ? totalFlops(cost) : null;
    const roof = cost && limits ? roofOf(cost, limits) : null;
    const ratio = roof && us !== null && us > 0 ? roof.roofUs / us : null;
    return {
      kernel, tasks: t ? t.tasks : null, calls: n?.calls ?? 0,
      bytes, readBytes: cost?.readBytes ?? null, writeBytes: cost?.writeBytes ?? null,
      flops, flopsByUnit: cost ? { vector: cost.vectorFlops, dotBf16: cost.dotBf16Flops, dotInt8: cost.dotInt8Flops } : null,
      us, gbps: bytes !== null && us ? bytes / (us * 1e3) : null, gflops: flops !== null && us ? flops / (us * 1e3) : null,
      intensity: bytes !== null && flops !== null && bytes > 0 ? flops / bytes : null,
      roofUs: roof ? roof.roofUs : null, bound: roof ? roof.bound : null,
      fraction: ratio === null ? null : Math.min(1, ratio), aboveRoof: ratio !== null && ratio > 1,
      lostUs: roof && us !== null ? Math.max(0, us - roof.roofUs) : null,
      note: notes.length ? notes.join("; ") : null,
    };
  });
  return sortRows(rows);
}

/** By time lost (most first); rows without a lost time after those with one, by time, then by name. */
export function sortRows(rows: RooflineRow[]): RooflineRow[] {
  return rows.sort((a, b) => {
    if ((a.lostUs === null) !== (b.lostUs === null)) return a.lostUs === null ? 1 : -1;
    if (a.lostUs !== null && b.lostUs !== null && a.lostUs !== b.lostUs) return b.lostUs - a.lostUs;
    if ((a.us ?? -1) !== (b.us ?? -1)) return (b.us ?? -1) - (a.us ?? -1);
    return a.kernel < b.kernel ? -1 : a.kernel > b.kernel ? 1 : 0;
  });
}

/** Counts by kernel from one launch's program cost. */
export function countsByKernel(kernels: readonly KernelCost[]): Map<string, KernelCounts> {
  return new Map(kernels.map((k) => [k.kernel, { calls: k.calls, cost: k, unknown: k.unknown }]));
}

/** Notes of a report that lacks times (`timesNote`: why) or limits (`limitsError`: why measuring them failed). */
export function reportNotes(platform: string, timesNote: string | null, limits: MachineLimits | null, limitsError: string | null): string[] {
  const notes: string[] = [];
  if (timesNote) notes.push(timesNote);
  if (!limits) notes.push(limitsError ?? `no roofs: the '${platform}' platform measures no machine limits, so no row has a bound, a fraction or a lost time`);
  return notes;
}

/** Why a report of `platform` has no per-task times: its device records no trace, or the trace has no timestamps. */
export function noTimesNote(platform: string, records: boolean): string {
  return records
    ? `no per-task times: the '${platform}' device's trace has no timestamps for its tasks (the adapter lacks timestamp queries), so no row has a time, a rate or a fraction of its roof; the bytes and flops are the program's`
    : `no per-task times: the '${platform}' platform's device records no DFX trace, so no row has a time, a rate or a fraction of its roof; the bytes and flops are the program's`;
}

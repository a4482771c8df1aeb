// benchmark(): repeated launches of a compiled program on a registered handle, with the
// device time measured natively (orchestration start -> last task end) and the host time
// around the whole call (argument packing, copies, launch). With `roofline: true` the launches
// also record their tasks (DFX) and the stats carry the roofline report (src/runtime/roofline.ts)
// and the machine's limits.
import type { CompiledProgram } from "./compiled.js";
import { RunConfig } from "./config.js";
import { ChipWorker, defaultWorker, type Registration } from "./worker.js";
import { rtErr, show } from "./binder.js";
import type { DeviceTrace } from "../targets/index.js";
import { writeRooflineFile } from "./dfx.js";
import {
  RooflineReport, costArgs, countsByKernel, kernelTimes, launchCounts, medianOf, noTimesNote, reportNotes, rooflineRows,
  type KernelTime, type MachineLimits,
} from "./roofline.js";

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export class BenchmarkStats {
  readonly deviceWallUs: readonly number[];
  readonly hostWallUs: readonly number[];
  readonly rounds: number;
  readonly warmup: number;
  /** With `roofline: true`: one row per task kernel of the launch, sorted by time lost against its roof. */
  readonly roofline?: RooflineReport;
  /** With `roofline: true`: the machine's measured limits (null where the platform measures none). */
  readonly limits?: MachineLimits | null;
  constructor(deviceWallUs: number[], hostWallUs: number[], rounds: number, warmup: number, roofline?: RooflineReport) {
    this.deviceWallUs = Object.freeze(deviceWallUs);
    this.hostWallUs = Object.freeze(hostWallUs);
    this.rounds = rounds;
    this.warmup = warmup;
    if (roofline) { this.roofline = roofline; this.limits = roofline.limits; }
  }
  get deviceUsMedian() { return median(this.deviceWallUs); }
  get deviceUsMin() { return Math.min(...this.deviceWallUs); }
  get deviceUsMean() { return mean(this.deviceWallUs); }
  get deviceUsMax() { return Math.max(...this.deviceWallUs); }
  get hostUsMedian() { return median(this.hostWallUs); }
  get hostUsMin() { return Math.min(...this.hostWallUs); }
  get hostUsMean() { return mean(this.hostWallUs); }
  get hostUsMax() { return Math.max(...this.hostWallUs); }
  /**
   * The mean launch as a tree of what was measured: host wall time (the whole call) split into
   * the device time (orchestration start -> last task end, timed natively) and the rest on
   * the host (argument packing, staging copies in and out, the Node-API crossing). Device
   * phases per task are in the swimlane (RunConfig.enableChipSwimlane), not here. Returns the
   * text and prints it unless `print` is false.
   */
  printTree(print = true): string {
    const f = (x: number) => `${x.toFixed(2)} us`;
    const host = this.hostUsMean, dev = this.deviceUsMean;
    const pct = (x: number) => host > 0 ? ` (${((100 * x) / host).toFixed(1)}%)` : "";
    const text = [
      `mean launch of ${this.rounds} rounds (warmup ${this.warmup})`,
      `└─ host call            ${f(host)}`,
      `   ├─ device launch     ${f(dev)}${pct(dev)}  orchestration + tasks`,
      `   └─ host other        ${f(Math.max(0, host - dev))}${pct(Math.max(0, host - dev))}  argument packing, staging copies, Node-API crossing`,
    ].join("\n");
    if (print) console.log(text);
    return text;
  }
  toString(): string {
    const f = (x: number) => x.toFixed(2);
    return `BenchmarkStats(rounds=${this.rounds}, warmup=${this.warmup})\n` +
      `  device us: median ${f(this.deviceUsMedian)}  min ${f(this.deviceUsMin)}  mean ${f(this.deviceUsMean)}  max ${f(this.deviceUsMax)}\n` +
      `  host   us: median ${f(this.hostUsMedian)}  min ${f(this.hostUsMin)}  mean ${f(this.hostUsMean)}  max ${f(this.hostUsMax)}` +
      (this.roofline ? `\n${this.roofline.toString()}` : "");
  }
}

export interface BenchmarkOptions {
  rounds?: number; warmup?: number; config?: RunConfig; worker?: ChipWorker;
  /**
   * Also report each task kernel against the machine's roofs (stats.roofline, stats.limits): the
   * launches record their tasks (DFX), and the report is written to
   * `<outputDir>/dfx_outputs/roofline.json` for the DFX HTML's roofline plot.
   */
  roofline?: boolean;
}

function roundsOf(opts: BenchmarkOptions, what: string): { rounds: number; warmup: number; roofline: boolean } {
  const rounds = opts.rounds ?? 100, warmup = opts.warmup ?? 3, roofline = opts.roofline ?? false;
  if (!Number.isInteger(rounds) || rounds < 1) throw rtErr("E_ARG", `${what}: rounds must be an integer >= 1, got ${show(rounds)}`);
  if (!Number.isInteger(warmup) || warmup < 0) throw rtErr("E_ARG", `${what}: warmup must be an integer >= 0, got ${show(warmup)}`);
  if (typeof roofline !== "boolean") throw rtErr("E_ARG", `${what}: roofline must be true or false, got ${show(roofline)}`, "pass { roofline: true } for the roofline report");
  return { rounds, warmup, roofline };
}

/** Collects the per-kernel times of the measured launches while benchmark runs (the roofline). */
class RooflineRecorder {
  readonly perLaunch: Map<string, KernelTime>[] = [];
  measuring = false;
  readonly #off: () => void;
  constructor(readonly worker: ChipWorker, readonly reg: Registration) {
    this.#off = worker.addTaskListener((_w, r, trace: DeviceTrace | null) => {
      if (r !== reg || !this.measuring || !trace) return;
      const t = kernelTimes(trace, reg.compiled.meta);
      if (t) this.perLaunch.push(t);
    });
  }
  close(): void { this.#off(); }

  /** The report: counts of one launch with `args`, the median time of each kernel over the measured launches, the limits. */
  report(compiled: CompiledProgram, args: readonly unknown[]): RooflineReport {
    const platform = this.worker.platform;
    const counts = launchCounts(compiled, costArgs(args));
    const byKernel = typeof counts === "string" ? null : countsByKernel(counts);
    let times: Map<string, KernelTime> | null = null;
    if (this.perLaunch.length > 0) {
      times = new Map();
      for (const k of new Set(this.perLaunch.flatMap((m) => [...m.keys()]))) {
        const runs = this.perLaunch.map((m) => m.get(k)).filter((x): x is KernelTime => !!x);
        times.set(k, { tasks: medianOf(runs.map((x) => x.tasks)), us: medianOf(runs.map((x) => x.us)) });
      }
    }
    const target = this.worker.target;
    let limits: MachineLimits | null = null, limitsError: string | null = null;
    if (target.limits) {
      try { limits = target.limits(this.worker.coreThreads); } catch (e) { limitsError = `no roofs: measuring the machine's limits failed: ${(e as Error).message.split("\n")[0]}`; }
    }
    const notes = reportNotes(platform, times ? null : noTimesNote(platform, this.worker.device.records), limits, limitsError);
    return new RooflineReport({
      program: compiled.meta.name, outputDir: compiled.outputDir, platform, launches: this.perLaunch.length, per: "launch",
      rows: rooflineRows(byKernel, typeof counts === "string" ? counts : null, times, limits), limits, notes,
    });
  }
}

/** Writes the report next to the DFX files (the roofline plot of the DFX HTML reads it); a failure to write is not the benchmark's. */
function keepReport(compiled: CompiledProgram, report: RooflineReport): void {
  try { writeRooflineFile(compiled.outputDir, report.toJSON()); } catch (e) {
    process.emitWarning(`the roofline report was not written to ${compiled.outputDir}: ${(e as Error).message.split("\n")[0]}`, { code: "TSPTO_ROOFLINE_FILE" });
  }
}

export function benchmark(compiled: CompiledProgram, args: readonly unknown[], opts: BenchmarkOptions = {}): BenchmarkStats {
  const { rounds, warmup, roofline } = roundsOf(opts, "benchmark");
  const worker = opts.worker ?? defaultWorker(opts.config ?? new RunConfig({ platform: compiled.platform }));
  if (worker.device.asynchronous) {
    throw rtErr("E_ASYNC", `benchmark on the '${worker.platform}' platform has to wait for each launch, so it has no synchronous form`,
      "use await benchmarkAsync(compiled, args, opts)");
  }
  const handle = worker.register(compiled);
  const rec = roofline ? new RooflineRecorder(worker, worker.registration(compiled)) : null;
  const dev: number[] = [], host: number[] = [];
  try {
    for (let i = 0; i < warmup + rounds; i++) {
      if (rec) rec.measuring = i >= warmup;
      const t0 = performance.now();
      handle(...args);
      const t1 = performance.now();
      if (i >= warmup) { host.push((t1 - t0) * 1000); dev.push(worker.lastDeviceNs / 1000); }
    }
  } finally {
    rec?.close();
  }
  const report = rec?.report(compiled, args);
  if (report) keepReport(compiled, report);
  return new BenchmarkStats(dev, host, rounds, warmup, report);
}

/**
 * benchmark with awaited launches (handle.callAsync): every platform, and the only form on
 * webgpu, where `deviceWallUs` comes from timestamp queries around the launch's compute pass
 * (the host clock from submit to read back where the adapter has no timestamp-query).
 */
export async function benchmarkAsync(compiled: CompiledProgram, args: readonly unknown[], opts: BenchmarkOptions = {}): Promise<BenchmarkStats> {
  const { rounds, warmup, roofline } = roundsOf(opts, "benchmarkAsync");
  const worker = opts.worker ?? defaultWorker(opts.config ?? new RunConfig({ platform: compiled.platform }));
  await worker.initAsync();
  const handle = worker.register(compiled);
  const rec = roofline ? new RooflineRecorder(worker, worker.registration(compiled)) : null;
  const dev: number[] = [], host: number[] = [];
  try {
    for (let i = 0; i < warmup + rounds; i++) {
      if (rec) rec.measuring = i >= warmup;
      const t0 = performance.now();
      await handle.callAsync(...args);
      const t1 = performance.now();
      if (i >= warmup) { host.push((t1 - t0) * 1000); dev.push(worker.lastDeviceNs / 1000); }
    }
  } finally {
    rec?.close();
  }
  // the machine's limits measured (once per machine) off the event loop; report() then finds them (or fails the same way and says so)
  if (rec && worker.target.limitsAsync) await worker.target.limitsAsync(worker.coreThreads).catch(() => undefined);
  const report = rec?.report(compiled, args);
  if (report) keepReport(compiled, report);
  return new BenchmarkStats(dev, host, rounds, warmup, report);
}

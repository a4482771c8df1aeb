// `tspto profile <script>`: the CLI (src/tools/cli.ts) runs the script with $TSPTO_PROFILE naming a
// directory; in every process (and worker thread) that loads the runtime there, every launch of
// every worker records its tasks (a process-wide task listener, src/runtime/task_listeners.ts),
// and each launch's counts (from the program's IR, with that launch's argument shapes) and
// per-kernel times are summed per compiled program and kernel. At exit the roofline of each
// program, totals over its launches, is written to a file of its own in that directory
// (format "tspto-profile-1": docs/dfx-formats.md) for the CLI to merge and print.
import { randomBytes } from "node:crypto";
import { writeFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { KernelCost } from "../ir/index.js";
import type { MachineLimits } from "../targets/index.js";
import { addGlobalTaskListener } from "./task_listeners.js";
import { costArgs, kernelTimes, launchCounts, noTimesNote, reportNotes, rooflineRows, type KernelCounts, type KernelTime, type RooflineData } from "./roofline.js";
import type { ChipWorker, Registration } from "./worker.js";

interface KernelSum { calls: number; cost: KernelCost | null; unknown: string | null }
interface ProgramSum {
  readonly program: string;
  readonly outputDir: string;
  readonly worker: ChipWorker;
  /** Whether its device records task traces at all. */
  readonly records: boolean;
  launches: number;
  /** Launches whose trace had per-task times. */
  timed: number;
  /** Why some launch had no counts (the program's IR unreadable, its orchestration needs run-time values). */
  countsError: string | null;
  readonly counts: Map<string, KernelSum>;
  readonly times: Map<string, KernelTime>;
}

const add = (a: KernelCost, b: KernelCost): KernelCost => ({
  ...a, calls: a.calls + b.calls, readBytes: a.readBytes + b.readBytes, writeBytes: a.writeBytes + b.writeBytes,
  vectorFlops: a.vectorFlops + b.vectorFlops, dotBf16Flops: a.dotBf16Flops + b.dotBf16Flops, dotInt8Flops: a.dotInt8Flops + b.dotInt8Flops,
});

/** Sums of every launch this process made, by program (artifact directory and platform). */
export class Profiler {
  readonly programs = new Map<string, ProgramSum>();
  #off: (() => void) | null = null;

  start(): this {
    this.#off ??= addGlobalTaskListener((worker, reg, trace, args) => this.launch(worker, reg, trace, args));
    return this;
  }
  stop(): void { this.#off?.(); this.#off = null; }

  launch(worker: ChipWorker, reg: Registration, trace: Parameters<typeof kernelTimes>[0] | null, args: readonly unknown[]): void {
    const compiled = reg.compiled;
    const key = `${worker.platform}\0${compiled.outputDir}`;
    let p = this.programs.get(key);
    if (!p) {
      p = { program: compiled.meta.name, outputDir: compiled.outputDir, worker, records: worker.device.records, launches: 0, timed: 0, countsError: null, counts: new Map(), times: new Map() };
      this.programs.set(key, p);
    }
    p.launches++;
    const counts = launchCounts(compiled, costArgs(args));
    if (typeof counts === "string") p.countsError ??= counts;
    else {
      for (const k of counts) {
        const s = p.counts.get(k.kernel);
        if (!s) p.counts.set(k.kernel, { calls: k.calls, cost: k.unknown ? null : k, unknown: k.unknown });
        else {
          s.calls += k.calls;
          s.unknown ??= k.unknown;
          s.cost = s.unknown || !s.cost ? null : add(s.cost, k);
        }
      }
    }
    const t = trace ? kernelTimes(trace, compiled.meta) : null;
    if (t) {
      p.timed++;
      for (const [k, v] of t) {
        const s = p.times.get(k) ?? { tasks: 0, us: 0 };
        s.tasks += v.tasks;
        s.us += v.us;
        p.times.set(k, s);
      }
    }
  }

  /** The roofline of each program, totals over its launches (limits measured or read from the cache now). */
  reports(): RooflineData[] {
    const limitsOf = new Map<string, { limits: MachineLimits | null; error: string | null }>();
    const out: RooflineData[] = [];
    for (const p of this.programs.values()) {
      const platform = p.worker.platform, target = p.worker.target;
      const lkey = `${platform}\0${p.worker.coreThreads}`;
      let l = limitsOf.get(lkey);
      if (!l) {
        l = { limits: null, error: null };
        if (target.limits) {
          try { l.limits = target.limits(p.worker.coreThreads); } catch (e) { l.error = `no roofs: measuring the machine's limits failed: ${(e as Error).message.split("\n")[0]}`; }
        }
        limitsOf.set(lkey, l);
      }
      const counts: Map<string, KernelCounts> | null = p.countsError ? null : p.counts;
      const timed = p.timed === p.launches && p.launches > 0;
      const notes = reportNotes(platform, timed ? null : p.timed > 0 ? `only ${p.timed} of the ${p.launches} launches had per-task times: no row has a time` : noTimesNote(platform, p.records), l.limits, l.error);
      out.push({
        program: p.program, outputDir: p.outputDir, platform, launches: p.launches, per: "total",
        rows: rooflineRows(counts, p.countsError, timed ? p.times : null, l.limits), limits: l.limits, notes,
      });
    }
    return out;
  }
}

let active: Profiler | null = null;

/** Starts the process-wide profile when $TSPTO_PROFILE names a directory (once); it is written there at exit. */
export function profileFromEnv(): void {
  const dir = process.env.TSPTO_PROFILE;
  if (!dir || active) return;
  // one file per process or worker thread (they share a pid): children of the script are profiled too
  const file = join(dir, `profile-${process.pid}-${randomBytes(4).toString("hex")}.json`);
  active = new Profiler().start();
  const profiler = active;
  process.on("exit", () => {
    let doc: object;
    try {
      doc = { format: "tspto-profile-1", pid: process.pid, programs: profiler.reports() };
    } catch (e) {
      doc = { format: "tspto-profile-1", pid: process.pid, programs: [], error: (e as Error).message.split("\n")[0] };
    }
    const tmp = `${file}.tmp-${process.pid}`;
    try {
      writeFileSync(tmp, `${JSON.stringify(doc, null, 1)}\n`);
      renameSync(tmp, file);
    } catch (e) {
      process.stderr.write(`tspto profile: cannot write ${file}: ${(e as Error).message}\n`);
    }
  });
}

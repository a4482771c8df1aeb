// benchmark(): repeated launches of a compiled program on a registered handle, with the
// device time measured natively (orchestration start -> last task end) and the host time
// around the whole call (argument packing, copies, launch).
import type { CompiledProgram } from "./compiled.js";
import { RunConfig } from "./config.js";
import { ChipWorker, defaultWorker } from "./worker.js";
import { rtErr, show } from "./binder.js";

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
  constructor(deviceWallUs: number[], hostWallUs: number[], rounds: number, warmup: number) {
    this.deviceWallUs = Object.freeze(deviceWallUs);
    this.hostWallUs = Object.freeze(hostWallUs);
    this.rounds = rounds;
    this.warmup = warmup;
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
      `  host   us: median ${f(this.hostUsMedian)}  min ${f(this.hostUsMin)}  mean ${f(this.hostUsMean)}  max ${f(this.hostUsMax)}`;
  }
}

export interface BenchmarkOptions { rounds?: number; warmup?: number; config?: RunConfig; worker?: ChipWorker }

function roundsOf(opts: BenchmarkOptions, what: string): { rounds: number; warmup: number } {
  const rounds = opts.rounds ?? 100, warmup = opts.warmup ?? 3;
  if (!Number.isInteger(rounds) || rounds < 1) throw rtErr("E_ARG", `${what}: rounds must be an integer >= 1, got ${show(rounds)}`);
  if (!Number.isInteger(warmup) || warmup < 0) throw rtErr("E_ARG", `${what}: warmup must be an integer >= 0, got ${show(warmup)}`);
  return { rounds, warmup };
}

export function benchmark(compiled: CompiledProgram, args: readonly unknown[], opts: BenchmarkOptions = {}): BenchmarkStats {
  const { rounds, warmup } = roundsOf(opts, "benchmark");
  const worker = opts.worker ?? defaultWorker(opts.config ?? new RunConfig({ platform: compiled.platform }));
  if (worker.device.asynchronous) {
    throw rtErr("E_ASYNC", `benchmark on the '${worker.platform}' platform has to wait for each launch, so it has no synchronous form`,
      "use await benchmarkAsync(compiled, args, opts)");
  }
  const handle = worker.register(compiled);
  const dev: number[] = [], host: number[] = [];
  for (let i = 0; i < warmup + rounds; i++) {
    const t0 = performance.now();
    handle(...args);
    const t1 = performance.now();
    if (i >= warmup) { host.push((t1 - t0) * 1000); dev.push(worker.lastDeviceNs / 1000); }
  }
  return new BenchmarkStats(dev, host, rounds, warmup);
}

/**
 * benchmark with awaited launches (handle.callAsync): every platform, and the only form on
 * webgpu, where `deviceWallUs` comes from timestamp queries around the launch's compute pass
 * (the host clock from submit to read back where the adapter has no timestamp-query).
 */
export async function benchmarkAsync(compiled: CompiledProgram, args: readonly unknown[], opts: BenchmarkOptions = {}): Promise<BenchmarkStats> {
  const { rounds, warmup } = roundsOf(opts, "benchmarkAsync");
  const worker = opts.worker ?? defaultWorker(opts.config ?? new RunConfig({ platform: compiled.platform }));
  await worker.initAsync();
  const handle = worker.register(compiled);
  const dev: number[] = [], host: number[] = [];
  for (let i = 0; i < warmup + rounds; i++) {
    const t0 = performance.now();
    await handle.callAsync(...args);
    const t1 = performance.now();
    if (i >= warmup) { host.push((t1 - t0) * 1000); dev.push(worker.lastDeviceNs / 1000); }
  }
  return new BenchmarkStats(dev, host, rounds, warmup);
}

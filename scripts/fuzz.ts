// `npm run fuzz`: long runs of both fuzzers, printing counts.
//   npm run fuzz                      1M misuse calls (in child processes of 50k calls) + 400 differential batches
//                                     (every 5th also built at -O0 and compared bit for bit with -O3)
//   npm run fuzz -- --calls 200000 --batches 50 --seed 7 --o0-every 2
// Exit status 1 when either fuzzer found something (each finding is printed with its seed).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { cleanupFuzz, closeFuzzWorkers, runBatch } from "../test/fuzz/differential.js";
import type { MisuseReport } from "../test/fuzz/misuse.js";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
const CALLS = arg("calls", 1_000_000);
const BATCHES = arg("batches", 400);
const O0_EVERY = arg("o0-every", 5);
const BATCH_SIZE = arg("batch-size", 14);
const SEED = arg("seed", Date.now() % 100_000);
const CHUNK = 50_000;
const MAIN = fileURLToPath(new URL("../test/fuzz/misuse_main.ts", import.meta.url));

let failed = false;
const t0 = Date.now();

// ---- API misuse: chunks in child processes (a crash or hang is a finding)
const totals = { calls: 0, ok: 0, asyncLaunches: 0, errors: {} as Record<string, number>, processes: 0 };
for (let done = 0, k = 0; done < CALLS; k++) {
  const n = Math.min(CHUNK, CALLS - done);
  const seed = SEED * 1000 + k;
  const r = spawnSync(process.execPath, ["--import", "tsx", MAIN, String(seed), String(n)], { encoding: "utf8", timeout: 30 * 60_000, maxBuffer: 64 << 20 });
  totals.processes++;
  const line = (r.stdout ?? "").split("\n").find((l) => l.startsWith("MISUSE_REPORT "));
  if (r.status !== 0 || !line) {
    failed = true;
    console.log(`misuse seed ${seed}: child ${r.signal ? `killed by ${r.signal}` : `exited ${r.status}`} (crash or hang)\n${(r.stderr ?? "").slice(-3000)}`);
    done += n;
    continue;
  }
  const rep = JSON.parse(line.slice("MISUSE_REPORT ".length)) as MisuseReport;
  totals.calls += rep.calls;
  totals.ok += rep.ok;
  totals.asyncLaunches += rep.asyncLaunches;
  for (const [c, v] of Object.entries(rep.errors)) totals.errors[c] = (totals.errors[c] ?? 0) + v;
  for (const f of rep.findings) { failed = true; console.log(`misuse seed ${seed}: ${f}`); }
  done += n;
  process.stdout.write(`\rmisuse: ${totals.calls} calls ...`);
}
const errCount = Object.values(totals.errors).reduce((a, b) => a + b, 0);
console.log(`\rmisuse: ${totals.calls} calls in ${totals.processes} processes: ${totals.ok} succeeded (checked), ${errCount} TsptoErrors, ${totals.asyncLaunches} async launches`);
console.log(`  errors by code: ${Object.entries(totals.errors).sort((a, b) => b[1] - a[1]).map(([c, v]) => `${c} ${v}`).join(", ")}`);

// ---- differential
let cases = 0, mismatches = 0, o0Batches = 0;
const opsSeen = new Set<string>();
for (let b = 0; b < BATCHES; b++) {
  const seed = SEED * 1000 + b;
  try {
    const o0 = O0_EVERY > 0 && b % O0_EVERY === 0;
    const r = await runBatch(seed, BATCH_SIZE, ["cpu", "interp"], { o0 });
    if (o0) o0Batches++;
    for (const o of r.ops) opsSeen.add(o);
    cases += r.cases;
    for (const m of r.mismatches) {
      mismatches++;
      failed = true;
      console.log(`differential seed ${m.seed} ${m.platform} ${m.what}: element ${m.index} got ${m.got}, want ${m.want}`);
    }
  } catch (e) {
    failed = true;
    console.log(`differential seed ${seed}: the batch failed to build or run: ${(e as Error).message.split("\n").slice(0, 6).join("\n")}`);
  }
  process.stdout.write(`\rdifferential: ${b + 1}/${BATCHES} batches ...`);
}
closeFuzzWorkers();
cleanupFuzz();
console.log(`\rdifferential: ${BATCHES} batches, ${cases} random kernels on cpu and interp (${o0Batches} batches also at -O0), ${opsSeen.size} registry ops, ${mismatches} mismatches`);
console.log(`seed ${SEED}, ${((Date.now() - t0) / 1000).toFixed(0)} s: ${failed ? "FOUND PROBLEMS" : "nothing found"}`);
process.exit(failed ? 1 : 0);

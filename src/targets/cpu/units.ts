// A large program's library built as several objects compiled at the same time: the generated
// source has one part per kernel and one for the orchestration (CppUnit, src/codegen/cpp/
// generate.ts), each compiled when -DTSPTO_UNITS -DTSPTO_UNIT_<i> says so. The parts are
// grouped into at most $TSPTO_CXX_JOBS (default: the machine's idle cores) objects of about
// equal size, the objects are compiled by one shell that runs the compilers in parallel (one
// synchronous call, like the single compile), then linked. A group lighter than
// MIN_GROUP_WEIGHT is not worth a compiler process of its own (its start and the precompiled
// header's load cost about as much as it saves), so small programs stay one compile.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { join } from "node:path";
import { TsptoConfigError } from "../../ir/index.js";
import type { CppUnit } from "../../codegen/index.js";
import type { SpawnResult, Steps } from "../steps.js";

/** Source bytes a group of units must reach to be compiled on its own (about 0.1 s of -O3 work). */
export const MIN_GROUP_WEIGHT = 12_000;

/**
 * Parallel compiles of one library: $TSPTO_CXX_JOBS (an integer >= 1), else the cores the
 * machine has idle (its parallelism minus the 1-minute load average, at least 1; like make's
 * --max-load: on a busy machine parallel compilers only compete with each other and the rest).
 */
export function cxxJobs(): number {
  const env = process.env.TSPTO_CXX_JOBS;
  if (env === undefined || env === "") return Math.max(1, Math.round(availableParallelism() - loadavg()[0]));
  const n = Number(env);
  if (!Number.isInteger(n) || n < 1 || n > 256) {
    throw new TsptoConfigError("E_CONFIG", `TSPTO_CXX_JOBS must be an integer in [1, 256], got ${JSON.stringify(env)}`,
      undefined, "the number of C++ compilers a program's build may run at once (1: one compile per program)", { argument: "TSPTO_CXX_JOBS" });
  }
  return n;
}

/**
 * The units grouped for `jobs` parallel compiles (heaviest first, each into the lightest group;
 * groups below MIN_GROUP_WEIGHT merged), as lists of unit indices; [] when one compile is best.
 */
export function unitGroups(units: readonly CppUnit[], jobs: number): number[][] {
  if (jobs < 2 || units.length < 2) return [];
  const groups = Array.from({ length: Math.min(jobs, units.length) }, () => ({ weight: 0, units: [] as number[] }));
  for (const u of [...units].sort((a, b) => b.weight - a.weight || a.index - b.index)) {
    const g = groups.reduce((m, x) => (x.weight < m.weight ? x : m));
    g.units.push(u.index);
    g.weight += u.weight;
  }
  groups.sort((a, b) => a.weight - b.weight);
  while (groups.length > 1 && groups[0].weight < MIN_GROUP_WEIGHT) {
    const light = groups.shift()!;
    groups[0].units.push(...light.units);
    groups[0].weight += light.weight;
    groups.sort((a, b) => a.weight - b.weight);
  }
  return groups.length > 1 ? groups.map((g) => g.units.sort((a, b) => a - b)) : [];
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Compiles `groups` of the source's units into objects with `compile` (the command line of one
 * group's object, without the output file) at the same time, then links them with `link`
 * (without the objects) into the library, in `dir` (steps of a build, src/targets/steps.ts).
 * Returns what spawnSync would for one compile: status 0 on success, else the failing step's status or signal and its output.
 * `timeoutMs` bounds the whole build (the compiles to within a second, the link with what is
 * left); a compile still running then is stopped with every process it started (error
 * ETIMEDOUT, as spawnSync's).
 */
export function* compileUnits(dir: string, groups: readonly number[][], compile: (units: readonly number[], obj: string) => string[],
  link: (objs: readonly string[]) => string[], timeoutMs: number): Steps<SpawnResult> {
  const objs = groups.map((_, g) => `build/unit${g}.o`);
  const logs = groups.map((_, g) => `build/unit${g}.log`);
  const timedOutMark = "build/units.timeout";
  // One compiler per group in the background, each in a session (and so a process group) of
  // its own where setsid(1) is there, so that stopping it stops the processes it started too
  // (g++'s cc1plus and as). A watchdog polls them every 0.1 s: it ends when none is left, and
  // at the time limit it marks the run timed out and stops them (no signal to the watchdog,
  // whose trap could race with its own wait). A signal to the shell (Ctrl-C, spawnSync's own
  // limit) stops them as well. The exit status of each, in order, on stdout.
  const lines = [
    "S=''; command -v setsid >/dev/null 2>&1 && S=setsid",
    "pids=''",
    "stop() { for p in $pids; do kill -9 -$p 2>/dev/null || kill -9 $p 2>/dev/null; done; }",
    "trap 'stop; exit 143' INT TERM HUP",
  ];
  groups.forEach((units, g) => {
    lines.push(`$S ${compile(units, objs[g]).map(quote).join(" ")} >${quote(logs[g])} 2>&1 &`, `p${g}=$!`, `pids="$pids $p${g}"`);
  });
  lines.push(
    // (whole seconds: one more, so that the limit is never cut short; it may run up to 1 s over)
    `end=$(( $(date +%s) + ${Math.ceil(timeoutMs / 1000) + 1} ))`,
    "( trap - INT TERM HUP",
    "  while :; do",
    "    alive=''; for p in $pids; do kill -0 $p 2>/dev/null && alive=1; done",
    "    [ -z \"$alive\" ] && exit 0",
    `    [ "$(date +%s)" -ge "$end" ] && { : >${quote(timedOutMark)}; stop; exit 0; }`,
    "    sleep 0.1",
    "  done ) >/dev/null 2>&1 </dev/null &",
    "w=$!",
    ...groups.map((_, g) => `wait $p${g}; r${g}=$?`),
    "wait $w",
    `echo ${groups.map((_, g) => `$r${g}`).join(" ")}`,
  );
  const t0 = performance.now();
  mkdirSync(join(dir, "build"), { recursive: true });
  const r = yield { argv: ["/bin/sh", "-c", lines.join("\n")], cwd: dir, timeoutMs: timeoutMs + 30_000 };
  const read = (f: string) => { try { return readFileSync(join(dir, f), "utf8"); } catch { return ""; } };
  const cleanup = () => { for (const f of [...objs, ...logs, timedOutMark]) rmSync(join(dir, f), { force: true }); };
  try {
    if (r.error || r.status !== 0) return r;
    const codes = r.stdout.trim().split(/\s+/).map(Number);
    const failed = codes.findIndex((c) => c !== 0);
    if (existsSync(join(dir, timedOutMark))) {
      const e = Object.assign(new Error(`spawnSync ${compile([], "")[0]} ETIMEDOUT`), { code: "ETIMEDOUT" });
      return { status: null, signal: "SIGTERM", error: e, stderr: logs.map(read).join(""), stdout: "" };
    }
    if (failed >= 0 || codes.length !== groups.length) {
      return { status: codes[failed] ?? 1, signal: null, error: undefined, stderr: read(logs[Math.max(0, failed)]), stdout: "" };
    }
    // the link gets what is left of the limit
    const argv = link(objs);
    const left = Math.max(1, Math.round(timeoutMs - (performance.now() - t0)));
    return yield { argv, cwd: dir, timeoutMs: left };
  } finally {
    cleanup();
  }
}

// A large program's library built as several objects compiled at the same time: the generated
// source has one part per kernel and one for the orchestration (CppUnit, src/codegen/cpp/
// generate.ts), each compiled when -DTSPTO_UNITS -DTSPTO_UNIT_<i> says so. A heavy part
// (SOLO_WEIGHT) is an object of its own, kept in the object cache (objects.ts) and linked as
// it is by any later build that has the same part; the others are grouped into at most
// $TSPTO_CXX_JOBS (default: the machine's idle cores) objects of about equal size. One shell
// runs the compilers in parallel, at most one per job (one step of the build, like the single
// compile), then the objects are linked. A group lighter than MIN_GROUP_WEIGHT is not worth a
// compiler process of its own (its start and the precompiled header's load cost about as much
// as it saves), so small programs stay one compile.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/**
 * Source bytes from which a unit compiles into an object of its own, kept in the object cache
 * (objects.ts): its compile (about 0.5 s of -O3 and up) outweighs a compiler process's start
 * and the precompiled header's load, and a later program sharing it links it as it is.
 */
export const SOLO_WEIGHT = 64_000;

/** How a program's units become objects (planUnits). */
export interface UnitPlan {
  /** The objects to compile: the units of each. */
  readonly build: number[][];
  /** Per object of `build`: the object-cache key of the one unit it holds, or null (a group of light units, not cached). */
  readonly keys: (string | null)[];
  /** The objects each compiler runs in turn (indices into `build`), at most `jobs` at once. */
  readonly slots: number[][];
  /** The units whose objects came from the cache (nothing to compile for them). */
  readonly cached: number[];
}

/**
 * The objects of a library built in parts: each unit of at least SOLO_WEIGHT that has a key
 * (`keys`, unit index -> object-cache key) is an object of its own, taken from the cache when
 * `hits` has it and else compiled and kept there (even on one job: such a unit's compile
 * outweighs the extra compiler's start, and a later program may share it); the other units
 * are grouped as unitGroups groups them; the objects to build are spread over `jobs`
 * compilers, heaviest first. null when one compile is best (no such unit, and unitGroups
 * finds no parallel split).
 */
export function planUnits(units: readonly CppUnit[], jobs: number, keys: ReadonlyMap<number, string> = new Map(),
  hits: ReadonlySet<number> = new Set()): UnitPlan | null {
  if (units.length < 2) return null;
  const solo = units.filter((u) => u.weight >= SOLO_WEIGHT && keys.has(u.index));
  const cached = solo.filter((u) => hits.has(u.index)).map((u) => u.index);
  if (solo.length === 0 && unitGroups(units, jobs).length === 0) return null;
  const soloSet = new Set(solo.map((u) => u.index));
  const rest = units.filter((u) => !soloSet.has(u.index));
  const restGroups = rest.length === 0 ? [] : unitGroups(rest, jobs);
  const build = [...solo.filter((u) => !hits.has(u.index)).map((u) => [u.index]),
    ...(restGroups.length ? restGroups : rest.length ? [rest.map((u) => u.index).sort((a, b) => a - b)] : [])];
  const keyList = build.map((g) => (g.length === 1 && soloSet.has(g[0]) ? keys.get(g[0])! : null));
  const weightOf = new Map(units.map((u) => [u.index, u.weight]));
  const weight = (g: readonly number[]) => g.reduce((s, i) => s + (weightOf.get(i) ?? 0), 0);
  const slots = Array.from({ length: Math.max(1, Math.min(jobs, build.length)) }, () => ({ weight: 0, objects: [] as number[] }));
  for (const o of build.map((g, i) => i).sort((a, b) => weight(build[b]) - weight(build[a]) || a - b)) {
    const s = slots.reduce((m, x) => (x.weight < m.weight ? x : m));
    s.objects.push(o);
    s.weight += weight(build[o]);
  }
  return { build, keys: keyList, slots: build.length ? slots.map((s) => s.objects) : [], cached: cached.sort((a, b) => a - b) };
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Options of compileUnits. */
export interface CompileUnitsOptions {
  /** The objects each compiler runs in turn (indices into the groups); default: every group at once. */
  readonly slots?: readonly (readonly number[])[];
  /** Objects to link besides the compiled ones (paths relative to `dir`, e.g. taken from the object cache). */
  readonly extraObjects?: readonly string[];
  /** Called for each compiled object (its group index and absolute path) before the link, e.g. to cache it. */
  readonly built?: (group: number, obj: string) => void;
}

/**
 * Compiles `groups` of the source's units into objects with `compile` (the command line of one
 * group's object, without the output file) at the same time (at most one per slot, the
 * slot's objects in turn), then links them with `link` (without the objects) into the
 * library, in `dir` (steps of a build, src/targets/steps.ts). Returns what spawnSync would for
 * one compile: status 0 on success, else the failing step's status or signal and its output.
 * `timeoutMs` bounds the whole build (the compiles to within a second, the link with what is
 * left); a compile still running then is stopped with every process it started (error
 * ETIMEDOUT, as spawnSync's).
 */
export function* compileUnits(dir: string, groups: readonly number[][], compile: (units: readonly number[], obj: string) => string[],
  link: (objs: readonly string[]) => string[], timeoutMs: number, opts: CompileUnitsOptions = {}): Steps<SpawnResult> {
  const objs = groups.map((_, g) => `build/unit${g}.o`);
  const logs = groups.map((_, g) => `build/unit${g}.log`);
  const codes = groups.map((_, g) => `build/unit${g}.rc`);
  const slots = opts.slots ?? groups.map((_, g) => [g]);
  const scripts = slots.map((_, s) => `build/slot${s}.sh`);
  const timedOutMark = "build/units.timeout";
  // One shell per slot in the background, each in a session (and so a process group) of its
  // own where setsid(1) is there, so that stopping it stops the processes it started too
  // (g++'s cc1plus and as); it runs its compiles in turn, writes the exit status of each and
  // stops at the first failure. A watchdog polls them every 0.1 s: it ends when none is left,
  // and at the time limit it marks the run timed out and stops them (no signal to the
  // watchdog, whose trap could race with its own wait). A signal to the shell (Ctrl-C,
  // spawnSync's own limit) stops them as well.
  const lines = [
    "S=''; command -v setsid >/dev/null 2>&1 && S=setsid",
    "pids=''",
    "stop() { for p in $pids; do kill -9 -$p 2>/dev/null || kill -9 $p 2>/dev/null; done; }",
    "trap 'stop; exit 143' INT TERM HUP",
  ];
  const t0 = performance.now();
  mkdirSync(join(dir, "build"), { recursive: true });
  slots.forEach((members, s) => {
    writeFileSync(join(dir, scripts[s]), members.map((g) =>
      `${compile(groups[g], objs[g]).map(quote).join(" ")} >${quote(logs[g])} 2>&1; r=$?; echo $r >${quote(codes[g])}; [ $r -eq 0 ] || exit $r`).join("\n") + "\n");
    lines.push(`$S /bin/sh ${quote(scripts[s])} </dev/null &`, `p${s}=$!`, `pids="$pids $p${s}"`);
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
    ...slots.map((_, s) => `wait $p${s}`),
    "wait $w",
  );
  const read = (f: string) => { try { return readFileSync(join(dir, f), "utf8"); } catch { return ""; } };
  const cleanup = () => { for (const f of [...objs, ...logs, ...codes, ...scripts, timedOutMark]) rmSync(join(dir, f), { force: true }); };
  try {
    if (groups.length) {
      const r = yield { argv: ["/bin/sh", "-c", lines.join("\n")], cwd: dir, timeoutMs: timeoutMs + 30_000 };
      if (r.error || r.status !== 0) return r;
      if (existsSync(join(dir, timedOutMark))) {
        const e = Object.assign(new Error(`spawnSync ${compile([], "")[0]} ETIMEDOUT`), { code: "ETIMEDOUT" });
        return { status: null, signal: "SIGTERM", error: e, stderr: logs.map(read).join(""), stdout: "" };
      }
      // the first object that failed, else the first that did not finish (its compiler stopped some other way)
      const status = groups.map((_, g) => { const t = read(codes[g]).trim(); return t === "" ? null : Number(t); });
      const failed = status.findIndex((c) => c !== null && c !== 0);
      const bad = failed >= 0 ? failed : status.findIndex((c) => c === null);
      if (bad >= 0) return { status: status[bad] ?? 1, signal: null, error: undefined, stderr: read(logs[bad]), stdout: "" };
      if (opts.built) groups.forEach((_, g) => opts.built!(g, join(dir, objs[g])));
    }
    // the link gets what is left of the limit
    const argv = link([...objs, ...(opts.extraObjects ?? [])]);
    const left = Math.max(1, Math.round(timeoutMs - (performance.now() - t0)));
    return yield { argv, cwd: dir, timeoutMs: left };
  } finally {
    cleanup();
  }
}

// The cpu target's toolchain: the system C++ compiler ($CXX, else c++/g++/clang++), its
// identity (for artifact and cache keys), the precompiled header of the generated code's
// prelude, and the compile of one program library.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, type Stats } from "node:fs";
import { arch, cpus } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { TsptoCompileError, TsptoConfigError } from "../../ir/index.js";
import { commandWords, whichSync } from "../which.js";
import { packageRoot } from "../../ir/package_root.js";
import { PRELUDE_BASE, PRELUDE_BASE_HEADER, PRELUDE_SIMD, PRELUDE_SIMD_HEADER, type CppUnit } from "../../codegen/index.js";
import { SOLO_WEIGHT, compileUnits, cxxJobs, planUnits } from "./units.js";
import { fetchObject, objectCacheDir, storeObject, unitObjectKey } from "./objects.js";
import { runSteps, type Steps } from "../steps.js";
import { compilerFailure, processFailure } from "../compiler_failure.js";
import { fileKind, privateDir, readTextInside, sha256, unsafePathError, untrustedReason, writeAtomic } from "../../artifact/index.js";
import { type CpuIsa, isaFlags, selectIsa } from "./isa.js";

/** Flags of every cpu build (after `$CXX`). */
export const CXX_FLAGS: readonly string[] = ["-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off"];
/**
 * The instruction-set path of this process's cpu builds (isa.ts): $TSPTO_CPU_ISA, else the best
 * this machine has (null: none of them, -march=native alone). Throws E_CONFIG for a value that
 * is not a path or a path the machine lacks.
 */
export function cpuIsa(): CpuIsa | null {
  return selectIsa(cpuFlags());
}
/** CXX_FLAGS with the flags of the ISA path after its -march=native (isaFlags). */
function isaCxxFlags(): string[] {
  const extra = isaFlags(cpuIsa());
  return CXX_FLAGS.flatMap((f) => (f === "-march=native" ? [f, ...extra] : [f]));
}
/**
 * The flags of this process's cpu builds: CXX_FLAGS with the ISA path's (cpuIsa, isaFlags), or with its -O3 replaced by the level in
 * $TSPTO_CXX_OPT (internal, for tspto's own tests: the differential fuzzer builds a sample of
 * programs at -O0 and at the production flags and compares them, so a miscompile by the
 * optimizer shows up as a difference). Part of every cache and artifact key; builds with an
 * override use no precompiled header.
 */
export function cxxFlags(): readonly string[] {
  const opt = cxxOptOverride();
  const flags = isaCxxFlags();
  return opt ? flags.map((f) => (f === "-O3" ? opt : f)) : flags;
}
const CXX_OPT_LEVELS = ["-O0", "-O1", "-O2", "-O3", "-Os", "-Og"];
/** $TSPTO_CXX_OPT ("-O0" ... "-O3", "-Os", "-Og"), or null when unset. */
export function cxxOptOverride(): string | null {
  const env = process.env.TSPTO_CXX_OPT;
  if (env === undefined || env === "") return null;
  if (!CXX_OPT_LEVELS.includes(env)) {
    throw new TsptoConfigError("E_CONFIG", `TSPTO_CXX_OPT must be one of ${CXX_OPT_LEVELS.join(", ")} (an internal testing override of -O3), got ${JSON.stringify(env)}`,
      undefined, "unset it for normal builds", { argument: "TSPTO_CXX_OPT" });
  }
  return env;
}
/** Where the library goes inside the artifact directory, and the source it is built from. */
export const LIBRARY_PATH = "build/libprogram.so";
export const SOURCE_PATH = "kernels/program.cpp";
const rand = (): string => randomBytes(4).toString("hex");

// ------------------------------------------------------------------ toolchain
/** native/include of the tspto package (src/ir/package_root.ts finds it from src/, dist/ or a bundle). */
export function abiIncludeDir(): string {
  const cand = join(packageRoot(), "native", "include");
  if (existsSync(join(cand, "tspto_abi.h"))) return cand;
  throw new TsptoCompileError("E_CXX", `cannot find native/include/tspto_abi.h in ${packageRoot()}`, undefined,
    "the tspto package is incomplete: native/include must ship with it");
}

export interface Toolchain { command: string; argv: string[]; path: string | null; version: string }
const toolchains = new Map<string, Toolchain>();

export { whichSync };

let cpuFlagsMemo: string | undefined;
/** The CPU's feature flags (Linux /proc/cpuinfo; "" elsewhere): -march=native code depends on them. */
export function cpuFlags(): string {
  if (cpuFlagsMemo !== undefined) return cpuFlagsMemo;
  try {
    const m = /^(flags|Features)\s*:\s*(.*)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    cpuFlagsMemo = m ? m[2].trim() : "";
  } catch {
    cpuFlagsMemo = "";
  }
  return cpuFlagsMemo;
}

/**
 * `--version` of a compiler binary, remembered by the binary's path, size and mtime (so a
 * process does not spawn the compiler just to name it) in the user's private directory
 * (`<cache root>/toolchain/`): the memo file, and the version when it was recorded before.
 * A private directory another user made or can write is refused (E_UNSAFE_PATH).
 */
function versionMemo(command: string, exe: string): { file: string; path: string; version: string | null } | null {
  const path = whichSync(exe);
  if (!path) return null;
  let id: string;
  try { const st = statSync(path); id = `${command}\0${path}\0${st.size}\0${st.mtimeMs}`; } catch { return null; }
  let dir: string;
  try { dir = privateDir("toolchain"); } catch (e) {
    if ((e as { code?: string }).code === "E_UNSAFE_PATH") throw e;
    return null; // no private directory at all: no memo (the compiler is asked each time)
  }
  const name = `${sha256(id).slice(0, 24)}.txt`;
  let version: string | null = null;
  try { version = readTextInside(dir, name, { maxBytes: 4096 }).trim() || null; } catch { /* not recorded yet */ }
  return { file: join(dir, name), path, version };
}

const CXX_HINT = "set $CXX to a working C++17 compiler (g++ or clang++), or install one (e.g. `apt-get install g++`)";
/** The hint when the compiler itself crashed on the generated code (g++'s "internal compiler error"). */
const ICE_HINT = "the C++ compiler crashed on tspto's generated code (its own bug, which tspto's emitters must avoid): please report it with the generated source; "
  + "another compiler may build it meanwhile ($CXX=clang++ or another g++ version)";

/**
 * The compiler: $CXX (may hold extra words, e.g. "ccache g++"), else the first of c++, g++,
 * clang++ that runs; with its `--version` first line.
 */
export function toolchain(): Toolchain {
  const env = (process.env.CXX ?? "").trim();
  const candidates = env ? [env] : ["c++", "g++", "clang++"];
  let firstError = "";
  for (const command of candidates) {
    // a relative $CXX ("./cxx") names a program relative to the current directory, not to the artifact's
    const argv = commandWords(command);
    const cached = toolchains.get(argv.join("\0"));
    if (cached) return cached;
    const memo = versionMemo(command, argv[0]);
    if (memo?.version) {
      const tc = { command, argv, path: memo.path, version: memo.version };
      toolchains.set(argv.join("\0"), tc);
      return tc;
    }
    const r = spawnSync(argv[0], [...argv.slice(1), "--version"], { encoding: "utf8", timeout: 60_000 });
    if (r.error) {
      firstError ||= `C++ compiler '${command}' could not be run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`;
      continue;
    }
    const version = `${r.stdout ?? ""}\n${r.stderr ?? ""}`.split(/\r?\n/).map((l) => l.trim()).find((l) => l) ?? "unknown";
    const tc = { command, argv, path: whichSync(argv[0]), version };
    toolchains.set(argv.join("\0"), tc);
    if (memo) try { writeAtomic(memo.file, version, 0o600); } catch { /* best effort */ }
    return tc;
  }
  throw new TsptoCompileError("E_CXX", env ? firstError : `no C++ compiler found (tried ${candidates.join(", ")})`, undefined, CXX_HINT);
}

// ------------------------------------------------------------------ precompiled header
// The generated code's prelude (src/codegen/cpp/prelude.ts: its standard headers and helpers,
// in two parts, PRELUDE_BASE and PRELUDE_SIMD) is most of a small program's C++ compile time.
// Each part is precompiled once per toolchain + flags + text (at `npm install`, else on first
// use) into native/build/pch/<key>/ of the package, or (a read-only package) the user's private
// `<cache root>/pch/<key>/`, and force-included; a program's source then holds only its own
// code and an #include of the part (its artifact keeps a copy of the part next to it, so it
// builds the same without the PCH). gcc checks that the .gch matches the compilation
// (-Winvalid-pch) and otherwise reads the header as usual, so the generated code is the same
// either way. A header that gets force-included into every kernel is code run in the process:
// it is used only from a directory of the user's (or root's, or the package owner's) that no
// one else can write, else refused (E_UNSAFE_PATH). Its build counts against
// $TSPTO_CXX_TIMEOUT_MS like the compile it serves. TSPTO_PCH=0 disables it.
/** The flags the precompiled header is built with: the production flags of the ISA path, less -shared. */
export const pchFlags = (): string[] => isaCxxFlags().filter((f) => f !== "-shared");
const pchFailed = new Set<string>();

/** A part of the prelude: the file name a program includes and its text (GeneratedCpp.prelude). */
export interface PreludePart { readonly header: string; readonly text: string }
/** Both parts (what `npm install` precompiles). */
export const PRELUDE_PARTS: readonly PreludePart[] = [
  { header: PRELUDE_BASE_HEADER, text: PRELUDE_BASE },
  { header: PRELUDE_SIMD_HEADER, text: PRELUDE_SIMD },
];

/** The owner of tspto's package files (its precompiled header is as trusted as its code). */
function packageOwner(): number | undefined {
  try { return lstatSync(join(packageRoot(), "package.json")).uid; } catch { return undefined; }
}

const PCH_HINT = (dir: string) => `remove ${dir} (tspto builds it again in a directory of your own), or set TSPTO_PCH=0 to compile without a precompiled header`;

/**
 * Whether the precompiled header `name` in `dir` may be used: false when there is none; throws
 * E_UNSAFE_PATH when one is there but another user could have written it (the directory or
 * its parent not a real directory of the user / root / `owner`, writable by others; a file
 * not a regular one, or writable by others where others can reach it).
 */
function trustedPch(dir: string, name: string, owner: number | undefined): boolean {
  let st: Stats;
  try { st = lstatSync(join(dir, `${name}.gch`)); } catch { return false; }
  const refuse = (why: string) => unsafePathError(`the precompiled header ${join(dir, name)}: ${why}`, PCH_HINT(dir));
  let dirSt: Stats | undefined;
  for (const d of [dirname(dir), dir]) {
    const s = lstatSync(d);
    if (!s.isDirectory()) throw refuse(`${d} is ${fileKind(s)}, not a directory`);
    const why = untrustedReason(d, s, owner);
    if (why) throw refuse(why);
    dirSt = s;
  }
  const reachable = ((dirSt?.mode ?? 0) & 0o011) !== 0; // others can search the directory (else its files are out of their reach)
  for (const f of [name, `${name}.gch`]) {
    const p = join(dir, f);
    try { st = lstatSync(p); } catch { return false; }
    if (!st.isFile()) throw refuse(`${p} is ${fileKind(st)}, not a regular file`);
    const why = untrustedReason(p, st, owner);
    if (why && (reachable || !/can be written/.test(why))) throw refuse(why);
  }
  return true;
}

/** Where the PCH of `key` is looked for and built: the package's directory, then the user's private one. */
function pchDirs(key: string): { dir: () => string; owner: number | undefined }[] {
  return [
    { dir: () => join(dirname(abiIncludeDir()), "build", "pch", key), owner: packageOwner() },
    { dir: () => privateDir("pch", key), owner: undefined },
  ];
}

/** The PCH's key (its directory's name): the toolchain, the flags, the header's name and text, the ABI header. */
export function precompiledHeaderKey(tc: Toolchain, part: PreludePart = PRELUDE_PARTS[0], abi = readFileSync(join(abiIncludeDir(), "tspto_abi.h"), "utf8")): string {
  return sha256([tc.command, tc.path ?? "", tc.version, pchFlags().join(" "), part.header, part.text, abi].join("\0")).slice(0, 24);
}

/**
 * The header to force-include for the prelude `part` (its .gch next to it), building the PCH
 * when `build` and it is missing, within `timeoutMs`; null when unavailable (gcc only: clang
 * uses another PCH format). Throws E_CXX_TIMEOUT when its build did not finish in time,
 * E_UNSAFE_PATH for one another user could have written.
 */
export function precompiledHeader(tc: Toolchain, build = true, timeoutMs = cxxTimeoutMs(), part: PreludePart = PRELUDE_PARTS[0]): string | null {
  if (process.env.TSPTO_PCH === "0" || /clang|icpx|intel/i.test(`${tc.command} ${tc.version}`)) return null;
  let abi = "";
  try { abi = readFileSync(join(abiIncludeDir(), "tspto_abi.h"), "utf8"); } catch { return null; }
  const key = precompiledHeaderKey(tc, part, abi);
  const places = pchDirs(key);
  for (const p of places) {
    let d: string;
    try { d = p.dir(); } catch (e) { if ((e as { code?: string }).code === "E_UNSAFE_PATH") throw e; continue; }
    if (trustedPch(d, part.header, p.owner)) return join(d, part.header);
  }
  if (!build || pchFailed.has(key)) return null;
  const t0 = performance.now();
  for (const p of places) {
    let d: string;
    try {
      d = p.dir();
      mkdirSync(d, { recursive: true, mode: 0o700 });
    } catch (e) {
      if ((e as { code?: string }).code === "E_UNSAFE_PATH") throw e;
      continue;
    }
    const h = join(d, part.header);
    const tmp = join(d, `${part.header}.gch.tmp-${process.pid}-${rand()}`);
    try {
      writeAtomic(h, part.text, 0o644);
      const left = Math.max(1, Math.round(timeoutMs - (performance.now() - t0)));
      const r = spawnSync(tc.argv[0], [...tc.argv.slice(1), ...pchFlags(), "-I", abiIncludeDir(), "-x", "c++-header", h, "-o", tmp],
        { encoding: "utf8", timeout: left, killSignal: "SIGKILL" });
      if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT") {
        rmSync(tmp, { force: true });
        throw new TsptoCompileError("E_CXX_TIMEOUT",
          `building the precompiled header of the generated code's prelude: '${tc.command}' did not finish within ${timeoutMs} ms and was stopped (the limit is $TSPTO_CXX_TIMEOUT_MS, default ${DEFAULT_CXX_TIMEOUT_MS} ms, and covers this build too)`,
          undefined, "raise TSPTO_CXX_TIMEOUT_MS, or set TSPTO_PCH=0 to compile without a precompiled header");
      }
      if (r.error || r.status !== 0 || !existsSync(tmp)) { rmSync(tmp, { force: true }); continue; }
      chmodSync(tmp, 0o644); // (gcc creates it with the umask's mode: never writable by others)
      renameSync(tmp, join(d, `${part.header}.gch`));
      return h;
    } catch (e) {
      rmSync(tmp, { force: true });
      if (e instanceof TsptoCompileError) throw e;
      continue;
    }
  }
  pchFailed.add(key);
  return null;
}

/** Builds the PCH of both prelude parts for the default toolchain (the `npm install` step); never throws. */
export function installPrecompiledHeader(): string | null {
  let last: string | null = null;
  try { for (const part of PRELUDE_PARTS) last = precompiledHeader(toolchain(), true, cxxTimeoutMs(), part) ?? last; } catch { return last; }
  return last;
}

/** Default limit of one C++ compile of a program library (3 minutes). */
export const DEFAULT_CXX_TIMEOUT_MS = 180_000;

/** The C++ compile limit: $TSPTO_CXX_TIMEOUT_MS (an integer >= 1000) or the default. */
export function cxxTimeoutMs(): number {
  const env = process.env.TSPTO_CXX_TIMEOUT_MS;
  if (env === undefined || env === "") return DEFAULT_CXX_TIMEOUT_MS;
  const n = Number(env);
  if (!Number.isInteger(n) || n < 1000) {
    throw new TsptoConfigError("E_CONFIG", `TSPTO_CXX_TIMEOUT_MS must be an integer >= 1000 (milliseconds), got ${JSON.stringify(env)}`,
      undefined, undefined, { argument: "TSPTO_CXX_TIMEOUT_MS" });
  }
  return n;
}

/** What a library's build did: its flags, the compile time, the units of each object (none for one compile), and the units taken from the object cache. */
export interface LibraryBuild { flags: string[]; ms: number; groups: number[][]; cached: number[] }

/**
 * Compiles `dir`'s generated source into its library. With `units` (the source's separately
 * compilable parts, CppUnit) a large program is compiled as several objects at once and linked
 * (units.ts), and a heavy unit's object is kept in the object cache (objects.ts) and reused by
 * any later build with the same unit; `groups` in the result lists the units of each object
 * ([] for one compile), `cached` the units whose objects came from the cache.
 * `prelude` is the part of the prelude the source includes (a copy of it lies next to the
 * source); its precompiled header is force-included. One limit ($TSPTO_CXX_TIMEOUT_MS) covers
 * the precompiled header's build (on first use), the compiles and the link.
 */
export function compileLibrary(tc: Toolchain, dir: string, programName: string, reportSource: () => string,
  units: readonly CppUnit[] = [], prelude: PreludePart = PRELUDE_PARTS[1]): LibraryBuild {
  return runSteps(compileLibrarySteps(tc, dir, programName, reportSource, units, prelude));
}

/** compileLibrary as the steps of a build (src/targets/steps.ts): its compiles run synchronously or not. */
export function* compileLibrarySteps(tc: Toolchain, dir: string, programName: string, reportSource: () => string,
  units: readonly CppUnit[] = [], prelude: PreludePart = PRELUDE_PARTS[1]): Steps<LibraryBuild> {
  const timeoutMs = cxxTimeoutMs();
  const start = performance.now();
  const pch = cxxOptOverride() ? null : precompiledHeader(tc, true, timeoutMs, prelude); // the PCH is built with CXX_FLAGS
  const common = ["-I", abiIncludeDir(), ...(pch ? ["-include", pch] : [])];
  const flags = [...cxxFlags(), ...common, "-o", LIBRARY_PATH, SOURCE_PATH];
  const objFlags = cxxFlags().filter((f) => f !== "-shared");
  // the heavy units' objects the cache holds, copied into build/ (verified); the others' keys, to store them once built
  const cache = units.length > 1 ? objectCacheDir() : null;
  const keys = new Map<number, string>();
  const hits = new Set<number>();
  if (cache) {
    const identity = [tc.command, tc.path ?? "", tc.version, ...toolchainIdentity(), objFlags.join(" ")];
    const abi = readFileSync(join(abiIncludeDir(), "tspto_abi.h"), "utf8");
    mkdirSync(join(dir, "build"), { recursive: true });
    for (const u of units) {
      if (u.weight < SOLO_WEIGHT) continue;
      const key = unitObjectKey(identity, prelude, abi, pch !== null, u);
      if (!key) continue;
      keys.set(u.index, key);
      if (fetchObject(cache, key, join(dir, cachedObject(u.index)))) hits.add(u.index);
    }
  }
  const t0 = performance.now();
  const left = Math.max(1, Math.round(timeoutMs - (t0 - start)));
  const plan = planUnits(units, cxxJobs(), keys, hits);
  let r;
  try {
    r = plan
      ? yield* compileUnits(dir, plan.build,
        (g, obj) => [...tc.argv, ...objFlags, ...common, "-DTSPTO_UNITS", ...g.map((i) => `-DTSPTO_UNIT_${i}`), "-c", "-o", obj, SOURCE_PATH],
        (objs) => [...tc.argv, "-shared", "-fPIC", "-o", LIBRARY_PATH, ...objs], left,
        { slots: plan.slots, extraObjects: plan.cached.map(cachedObject), built: (g, obj) => { const k = plan.keys[g]; if (cache && k) storeObject(cache, k, obj); } })
      : yield { argv: [...tc.argv, ...flags], cwd: dir, timeoutMs: left };
  } finally {
    for (const i of hits) rmSync(join(dir, cachedObject(i)), { force: true });
  }
  const ms = performance.now() - t0;
  if (r.error || r.status !== 0 || !existsSync(join(dir, LIBRARY_PATH))) {
    const source = reportSource();
    const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT";
    const why = timedOut
      ? `'${tc.command}' did not finish within ${timeoutMs} ms and was stopped (the limit is $TSPTO_CXX_TIMEOUT_MS, default ${DEFAULT_CXX_TIMEOUT_MS} ms; raise it for very large programs)`
      : processFailure(tc.command, r);
    throw new TsptoCompileError(timedOut ? "E_CXX_TIMEOUT" : "E_CXX",
      compilerFailure(`C++ compilation of program '${programName}'`, why, `${r.stderr ?? ""}${r.stdout ? `\n${r.stdout}` : ""}`, source, `${tc.command} ${flags.join(" ")}`),
      undefined, !timedOut && /internal compiler error|Please submit a full bug report/i.test(r.stderr ?? "") ? ICE_HINT : CXX_HINT);
  }
  const groups = plan ? [...plan.build, ...plan.cached.map((i) => [i])] : [];
  return { flags, ms, groups, cached: plan?.cached ?? [] };
}

/** Where a unit's object taken from the object cache lies during the link. */
const cachedObject = (unit: number) => `build/cached${unit}.o`;


/**
 * What a built library's validity depends on besides its source, without the compiler that
 * built it: the flags, the ISA path, the architecture and the CPU (-march=native). The key of a
 * precompiled entry (Target.portableKeyParts), which a machine without a compiler can compute.
 */
export function portableIdentity(): string[] {
  return [cxxFlags().join(" "), `isa=${cpuIsa() ?? "native"}`, arch(), cpus()[0]?.model ?? "", cpuFlags()];
}

let identityMemo: { env: string; id: string[] } | undefined;

/**
 * Identity of the C++ toolchain and target without running the compiler (for the jit's disk
 * cache key): $CXX, the resolved compiler binary (path, size, mtime), the build flags, the
 * architecture and the CPU model and features (-march=native depends on them).
 */
export function toolchainIdentity(): string[] {
  const env = `${process.env.CXX ?? ""}\0${process.cwd()}\0${process.env.TSPTO_CXX_OPT ?? ""}\0${process.env.TSPTO_CPU_ISA ?? ""}`; // (a relative $CXX depends on the directory)
  if (identityMemo && identityMemo.env === env) return identityMemo.id;
  const cxx = (process.env.CXX ?? "").trim();
  const cmds = cxx ? [cxx] : ["c++", "g++", "clang++"];
  const parts: string[] = [];
  for (const cmd of cmds) {
    const exe = commandWords(cmd)[0];
    const path = whichSync(exe);
    if (!path) { parts.push(`${cmd}:missing`); continue; }
    try { const st = statSync(path); parts.push(`${cmd}:${path}:${st.size}:${st.mtimeMs}`); } catch { parts.push(`${cmd}:${path}`); }
    break;
  }
  parts.push(cxxFlags().join(" "), `isa=${cpuIsa() ?? "native"}`, arch(), cpus()[0]?.model ?? "", cpuFlags());
  identityMemo = { env, id: parts };
  return parts;
}

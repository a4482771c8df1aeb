// The cpu target's toolchain: the system C++ compiler ($CXX, else c++/g++/clang++), its
// identity (for artifact and cache keys), the precompiled header of the generated code's
// prelude, and the compile of one program library.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { arch, cpus, tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { TsptoCompileError, TsptoConfigError } from "../../ir/index.js";
import { whichSync } from "../which.js";
import { packageRoot } from "../../ir/package_root.js";
import { CPP_PRELUDE, type CppUnit } from "../../codegen/index.js";
import { compileUnits, cxxJobs, unitGroups } from "./units.js";
import { sha256, writeAtomic } from "../../artifact/index.js";

/** Flags of every cpu build (after `$CXX`). */
export const CXX_FLAGS: readonly string[] = ["-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off"];
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
 * process does not spawn the compiler just to name it): the memo file, and the version when
 * it was recorded before.
 */
function versionMemo(command: string, exe: string): { file: string; path: string; version: string | null } | null {
  const path = whichSync(exe);
  if (!path) return null;
  let id: string;
  try { const st = statSync(path); id = `${command}\0${path}\0${st.size}\0${st.mtimeMs}`; } catch { return null; }
  const file = join(tmpdir(), `tspto-toolchain-${process.getuid?.() ?? "user"}`, `${sha256(id).slice(0, 24)}.txt`);
  let version: string | null = null;
  try { version = readFileSync(file, "utf8").trim() || null; } catch { /* not recorded yet */ }
  return { file, path, version };
}

const CXX_HINT = "set $CXX to a working C++17 compiler (g++ or clang++), or install one (e.g. `apt-get install g++`)";

/**
 * The compiler: $CXX (may hold extra words, e.g. "ccache g++"), else the first of c++, g++,
 * clang++ that runs; with its `--version` first line.
 */
export function toolchain(): Toolchain {
  const env = (process.env.CXX ?? "").trim();
  const candidates = env ? [env] : ["c++", "g++", "clang++"];
  let firstError = "";
  for (const command of candidates) {
    const cached = toolchains.get(command);
    if (cached) return cached;
    const argv = command.split(/\s+/);
    const memo = versionMemo(command, argv[0]);
    if (memo?.version) {
      const tc = { command, argv, path: memo.path, version: memo.version };
      toolchains.set(command, tc);
      return tc;
    }
    const r = spawnSync(argv[0], [...argv.slice(1), "--version"], { encoding: "utf8", timeout: 60_000 });
    if (r.error) {
      firstError ||= `C++ compiler '${command}' could not be run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`;
      continue;
    }
    const version = `${r.stdout ?? ""}\n${r.stderr ?? ""}`.split(/\r?\n/).map((l) => l.trim()).find((l) => l) ?? "unknown";
    const tc = { command, argv, path: whichSync(argv[0]), version };
    toolchains.set(command, tc);
    if (memo) try { writeAtomic(memo.file, version); } catch { /* best effort */ }
    return tc;
  }
  throw new TsptoCompileError("E_CXX", env ? firstError : `no C++ compiler found (tried ${candidates.join(", ")})`, undefined, CXX_HINT);
}

// ------------------------------------------------------------------ precompiled header
// Parsing the prelude's standard headers (<cmath> above all) is most of a small program's
// C++ compile time. They are precompiled once per toolchain + flags + header text (at
// `npm install`, else on first use) into native/build/pch/<key>/ (or a per-user temp
// directory when the package is read-only) and force-included; gcc checks that the .gch
// matches the compilation (-Winvalid-pch) and otherwise reads the headers as usual, so
// the generated code is the same either way. TSPTO_PCH=0 disables it.
const PCH_FLAGS = CXX_FLAGS.filter((f) => f !== "-shared");
const pchFailed = new Set<string>();

/** The prelude's #include lines (what the PCH holds). */
function pchHeaderText(): string {
  return `${CPP_PRELUDE.split(/\r?\n/).filter((l) => l.startsWith("#include")).join("\n")}\n`;
}

function pchDirs(key: string): string[] {
  const pkg = join(dirname(abiIncludeDir()), "build", "pch", key);
  const uid = process.getuid?.() ?? "user";
  return [pkg, join(tmpdir(), `tspto-pch-${uid}`, key)];
}

/**
 * The header to force-include (its .gch next to it), building the PCH when `build` and it
 * is missing; null when unavailable (gcc only: clang uses another PCH format).
 */
export function precompiledHeader(tc: Toolchain, build = true): string | null {
  if (process.env.TSPTO_PCH === "0" || /clang|icpx|intel/i.test(`${tc.command} ${tc.version}`)) return null;
  const header = pchHeaderText();
  let abi = "";
  try { abi = readFileSync(join(abiIncludeDir(), "tspto_abi.h"), "utf8"); } catch { return null; }
  const key = sha256([tc.command, tc.path ?? "", tc.version, PCH_FLAGS.join(" "), header, abi].join("\0")).slice(0, 24);
  for (const d of pchDirs(key)) if (existsSync(join(d, "tspto_pch.h.gch"))) return join(d, "tspto_pch.h");
  if (!build || pchFailed.has(key)) return null;
  for (const d of pchDirs(key)) {
    try {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      const h = join(d, "tspto_pch.h");
      if (!existsSync(h)) writeAtomic(h, header);
      const tmp = join(d, `tspto_pch.h.gch.tmp-${process.pid}-${rand()}`);
      const r = spawnSync(tc.argv[0], [...tc.argv.slice(1), ...PCH_FLAGS, "-I", abiIncludeDir(), "-x", "c++-header", h, "-o", tmp],
        { encoding: "utf8", timeout: 600_000 });
      if (r.error || r.status !== 0 || !existsSync(tmp)) { rmSync(tmp, { force: true }); continue; }
      renameSync(tmp, join(d, "tspto_pch.h.gch"));
      return h;
    } catch {
      continue;
    }
  }
  pchFailed.add(key);
  return null;
}

/** Builds the PCH for the default toolchain (the `npm install` step); never throws. */
export function installPrecompiledHeader(): string | null {
  try { return precompiledHeader(toolchain()); } catch { return null; }
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

/**
 * Compiles `dir`'s generated source into its library. With `units` (the source's separately
 * compilable parts, CppUnit) a large program is compiled as several objects at once and linked
 * (units.ts); `groups` in the result lists the units of each object ([] for one compile).
 */
export function compileLibrary(tc: Toolchain, dir: string, programName: string, reportSource: () => string,
  units: readonly CppUnit[] = []): { flags: string[]; ms: number; groups: number[][] } {
  const pch = precompiledHeader(tc);
  const common = ["-I", abiIncludeDir(), ...(pch ? ["-include", pch] : [])];
  const flags = [...CXX_FLAGS, ...common, "-o", LIBRARY_PATH, SOURCE_PATH];
  const t0 = performance.now();
  const timeoutMs = cxxTimeoutMs();
  const groups = unitGroups(units, cxxJobs());
  const r = groups.length > 1
    ? compileUnits(dir, groups,
      (g, obj) => [...tc.argv, ...CXX_FLAGS.filter((f) => f !== "-shared"), ...common, "-DTSPTO_UNITS", ...g.map((i) => `-DTSPTO_UNIT_${i}`), "-c", "-o", obj, SOURCE_PATH],
      (objs) => [...tc.argv, "-shared", "-fPIC", "-o", LIBRARY_PATH, ...objs], timeoutMs)
    : spawnSync(tc.argv[0], [...tc.argv.slice(1), ...flags], { cwd: dir, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 << 20 });
  const ms = performance.now() - t0;
  if (r.error || r.status !== 0 || !existsSync(join(dir, LIBRARY_PATH))) {
    const source = reportSource();
    const timedOut = (r.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT";
    const why = timedOut
      ? `'${tc.command}' did not finish within ${timeoutMs} ms and was stopped (the limit is $TSPTO_CXX_TIMEOUT_MS, default ${DEFAULT_CXX_TIMEOUT_MS} ms; raise it for very large programs)`
      : r.error
      ? `could not run '${tc.command}' (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`
      : r.signal ? `'${tc.command}' was killed by ${r.signal}` : `'${tc.command}' exited with code ${r.status}`;
    const lines = `${r.stderr ?? ""}${r.stdout ? `\n${r.stdout}` : ""}`.trim().split(/\r?\n/);
    const shown = lines.length > 60 ? [...lines.slice(0, 60), `... (${lines.length - 60} more lines)`] : lines;
    throw new TsptoCompileError(timedOut ? "E_CXX_TIMEOUT" : "E_CXX",
      `C++ compilation of program '${programName}' failed: ${why}\n${shown.map((l) => `    ${l}`).join("\n")}\n  generated source: ${source}\n  command: ${tc.command} ${flags.join(" ")}`,
      undefined, CXX_HINT);
  }
  return { flags, ms, groups };
}


let identityMemo: { env: string; id: string[] } | undefined;

/**
 * Identity of the C++ toolchain and target without running the compiler (for the jit's disk
 * cache key): $CXX, the resolved compiler binary (path, size, mtime), the build flags, the
 * architecture and the CPU model and features (-march=native depends on them).
 */
export function toolchainIdentity(): string[] {
  const env = process.env.CXX ?? "";
  if (identityMemo && identityMemo.env === env) return identityMemo.id;
  const cmds = env.trim() ? [env.trim()] : ["c++", "g++", "clang++"];
  const parts: string[] = [];
  for (const cmd of cmds) {
    const exe = cmd.split(/\s+/)[0];
    const path = whichSync(exe);
    if (!path) { parts.push(`${cmd}:missing`); continue; }
    try { const st = statSync(path); parts.push(`${cmd}:${path}:${st.size}:${st.mtimeMs}`); } catch { parts.push(`${cmd}:${path}`); }
    break;
  }
  parts.push(CXX_FLAGS.join(" "), arch(), cpus()[0]?.model ?? "", cpuFlags());
  identityMemo = { env, id: parts };
  return parts;
}

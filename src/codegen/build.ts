// Artifacts on disk: lowered Program -> an artifact directory (compiled_meta.json,
// program.json, kernels/, orchestration/, build/, passes_dump/). Every directory is built
// under a temporary name and renamed into place, so concurrent processes never see half an
// artifact; a complete directory with the same content key is reused as is.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { arch, cpus, tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Program } from "../ir/index.js";
import { TsptoCompileError, TsptoConfigError } from "../ir/index.js";
import { ENTRY_BEGIN, ENTRY_END, generateCpp, kernelSymbols, type GeneratedCpp } from "./cpp/generate.js";
import { CPP_PRELUDE } from "./cpp/prelude.js";
import { COMPILER_FINGERPRINT } from "../version.js";
import { LIBRARY_PATH, META_FILE, META_SCHEMA, META_SCHEMA_VERSION, entrySignature, validateMeta, type CompiledMeta } from "./meta.js";

export interface ArtifactDump {
  /** Pass name ("Simplify") or a dump file stem ("03_after_Simplify"). */
  name: string;
  /** The program printed as kernel source (written as .ts). */
  text: string;
  /** Optional program JSON (written next to it as .json). */
  json?: string;
}

export interface CompileArtifactOptions {
  platform: "cpu" | "interp";
  /** Default: `<os tmpdir>/tspto/<program>-<content hash>`. */
  outputDir?: string;
  packageVersion: string;
  dumps?: readonly ArtifactDump[];
}

export interface CompiledArtifact { outputDir: string; meta: CompiledMeta }

/** Flags of every cpu build (after `$CXX`). */
export const CXX_FLAGS: readonly string[] = ["-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno", "-ffp-contract=off"];
/** Bump when generated code changes meaning (part of the artifact key). */
const CODEGEN_VERSION = "cpp-1";
const KEY_FILE = ".artifact_key";
const SOURCE_PATH = "kernels/program.cpp";

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");
const safeName = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64) || "program";
const rand = (): string => randomBytes(4).toString("hex");

// ------------------------------------------------------------------ toolchain
/** native/include, found relative to this source file (src/codegen or a built copy of it). */
export function abiIncludeDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const cand = join(dir, "native", "include");
    if (existsSync(join(cand, "tspto_abi.h"))) return cand;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new TsptoCompileError("E_CXX", `cannot find native/include/tspto_abi.h above ${dirname(fileURLToPath(import.meta.url))}`, undefined,
    "the tspto package is incomplete: native/include must ship with it");
}

interface Toolchain { command: string; argv: string[]; path: string | null; version: string }
const toolchains = new Map<string, Toolchain>();

/** The resolved path of a command on $PATH (or a path), or null. */
export function whichSync(cmd: string): string | null {
  if (cmd.includes("/")) return existsSync(cmd) ? resolve(cmd) : null;
  for (const d of (process.env.PATH ?? "").split(delimiter)) {
    if (!d) continue;
    const p = join(d, cmd);
    try { if (statSync(p).isFile()) return p; } catch { /* not here */ }
  }
  return null;
}

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
function toolchain(): Toolchain {
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

// ------------------------------------------------------------------ files
function writeAtomic(file: string, data: string | Buffer): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${rand()}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

function dumpStem(d: ArtifactDump, i: number): string {
  const n = d.name.replace(/\.(ts|json)$/, "");
  return /^\d+_after_/.test(n) ? safeName(n) : `${String(i).padStart(2, "0")}_after_${safeName(n)}`;
}

function writeDumps(dir: string, dumps: readonly ArtifactDump[] | undefined, atomic: boolean): void {
  if (!dumps || !dumps.length) return;
  mkdirSync(join(dir, "passes_dump"), { recursive: true });
  dumps.forEach((d, i) => {
    const stem = join(dir, "passes_dump", dumpStem(d, i));
    const w = atomic ? writeAtomic : (f: string, s: string) => writeFileSync(f, s);
    w(`${stem}.ts`, d.text);
    if (d.json !== undefined) w(`${stem}.json`, d.json);
  });
}

/** A complete artifact with this key at `dir` (its metadata), or null. */
function tryReuse(dir: string, key: string): CompiledMeta | null {
  try {
    if (readFileSync(join(dir, KEY_FILE), "utf8").trim() !== key) return null;
    const metaFile = join(dir, META_FILE);
    const meta = validateMeta(readFileSync(metaFile, "utf8"), metaFile);
    if (meta.library && sha256(readFileSync(join(dir, meta.library))) !== meta.libraryHash) return null;
    return meta;
  } catch {
    return null;
  }
}

const isComplete = (dir: string) => existsSync(join(dir, META_FILE));

/** Move `tmp` to `dir`, replacing what is there. */
function replaceDir(tmp: string, dir: string): void {
  try {
    renameSync(tmp, dir);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EPERM" && code !== "EISDIR") throw e;
  }
  const old = `${dir}.old-${process.pid}-${rand()}`;
  try {
    renameSync(dir, old);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  renameSync(tmp, dir);
  rmSync(old, { recursive: true, force: true });
}

/**
 * Program JSON with variable ids renumbered in order of appearance: the same program built
 * in another process (other global ids) gets the same artifact key.
 */
function canonicalJSON(json: unknown): string {
  const ids = new Map<number, number>();
  const id = (n: number) => { let k = ids.get(n); if (k === undefined) { k = ids.size; ids.set(n, k); } return k; };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) o[k] = (k === "var" || k === "ref") && typeof x === "number" ? id(x) : walk(x);
      return o;
    }
    return v;
  };
  return JSON.stringify(walk(json));
}

// ------------------------------------------------------------------ compile
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

function compileLibrary(tc: Toolchain, dir: string, programName: string, reportSource: () => string): { flags: string[]; ms: number } {
  const pch = precompiledHeader(tc);
  const flags = [...CXX_FLAGS, "-I", abiIncludeDir(), ...(pch ? ["-include", pch] : []), "-o", LIBRARY_PATH, SOURCE_PATH];
  const t0 = performance.now();
  const timeoutMs = cxxTimeoutMs();
  const r = spawnSync(tc.argv[0], [...tc.argv.slice(1), ...flags], { cwd: dir, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 << 20 });
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
  return { flags, ms };
}

/**
 * Write the artifact directory of a lowered program (and build its library on cpu). A
 * complete directory with the same key (program, platform, toolchain, package version) is
 * reused without rebuilding.
 */
export function compileArtifact(program: Program, opts: CompileArtifactOptions): CompiledArtifact {
  const platform = opts.platform;
  if (platform !== "cpu" && platform !== "interp") {
    throw new TsptoCompileError("E_PLATFORM", `compileArtifact: unknown platform ${JSON.stringify(platform)}`, undefined, `use "cpu" or "interp"`);
  }
  const programText = JSON.stringify(program.toJSON(), null, 1);
  const sig = entrySignature(program, platform);
  let gen: GeneratedCpp | null = null;
  let tc: Toolchain | null = null;
  const keyParts = [CODEGEN_VERSION, opts.packageVersion, COMPILER_FINGERPRINT, platform, canonicalJSON(program.toJSON())];
  if (platform === "cpu") {
    gen = generateCpp(program);
    tc = toolchain();
    keyParts.push(sha256(gen.source), tc.command, tc.path ?? "", tc.version, CXX_FLAGS.join(" "), arch(), cpus()[0]?.model ?? "", cpuFlags());
  }
  const key = sha256(keyParts.join("\0"));
  const outputDir = resolve(opts.outputDir ?? join(tmpdir(), "tspto", `${safeName(program.name)}-${key.slice(0, 16)}`));

  const reused = tryReuse(outputDir, key);
  if (reused) {
    writeDumps(outputDir, opts.dumps, true);
    return { outputDir, meta: reused };
  }

  mkdirSync(dirname(outputDir), { recursive: true });
  const tmp = `${outputDir}.tmp-${process.pid}-${rand()}`;
  mkdirSync(tmp, { recursive: true });
  let keepTmp = false;
  try {
    writeFileSync(join(tmp, "program.json"), `${programText}\n`);
    mkdirSync(join(tmp, "orchestration"), { recursive: true });
    let library: CompiledMeta["library"] = null;
    let libraryHash: string | null = null;
    if (gen && tc) {
      mkdirSync(join(tmp, "kernels"), { recursive: true });
      mkdirSync(join(tmp, "build"), { recursive: true });
      writeFileSync(join(tmp, SOURCE_PATH), gen.source);
      const b = gen.source.indexOf(ENTRY_BEGIN), e = gen.source.indexOf(ENTRY_END);
      writeFileSync(join(tmp, "orchestration", "entry.cpp"),
        `// Excerpt of ../${SOURCE_PATH}: the orchestration, compiled into ../${LIBRARY_PATH} as tspto_entry.\n${b >= 0 && e > b ? gen.source.slice(b, e + ENTRY_END.length) : ""}\n`);
      writeFileSync(join(tmp, "orchestration", "README.md"),
        `The orchestration of '${program.entry}' runs on the host as \`tspto_entry\` in ../${LIBRARY_PATH}; it submits one task per InCore call to the runtime.\nentry.cpp is the excerpt of ../${SOURCE_PATH} that defines it.\n`);
      const tcNow = tc;
      const { flags, ms } = compileLibrary(tcNow, tmp, program.name, () => {
        // leave the generated source where the user can read it
        if (!isComplete(outputDir)) {
          replaceDir(tmp, outputDir);
          return join(outputDir, SOURCE_PATH);
        }
        keepTmp = true;
        return join(tmp, SOURCE_PATH);
      });
      library = LIBRARY_PATH;
      libraryHash = sha256(readFileSync(join(tmp, LIBRARY_PATH)));
      writeFileSync(join(tmp, "build", "stamp.json"), `${JSON.stringify({
        compiler: tcNow.command, compilerPath: tcNow.path, version: tcNow.version, flags, compileMs: Math.round(ms),
        sourceSha256: sha256(gen.source), librarySha256: libraryHash, key,
      }, null, 2)}\n`);
    } else {
      writeFileSync(join(tmp, "orchestration", "README.md"),
        `Platform "interp": the runtime evaluates ../program.json (entry '${program.entry}') with the op registry's reference semantics; nothing is compiled.\n`);
    }
    writeDumps(tmp, opts.dumps, false);
    const symbols = kernelSymbols(program);
    const kernels = gen ? gen.kernels : program.functions.filter((f) => f.name !== program.entry).map((f) => ({
      name: f.name, symbol: symbols.get(f.name)!, scratchBytes: typeof f.attrs.scratchBytes === "number" ? f.attrs.scratchBytes : 0,
    }));
    const meta: CompiledMeta = {
      schema: META_SCHEMA, schemaVersion: META_SCHEMA_VERSION, name: program.name, entry: program.entry, platform,
      backendType: platform === "cpu" ? "cpp" : "interp", runtimeName: platform === "cpu" ? "tspto-cpu-sim" : "tspto-interp",
      ...sig,
      scratchBytes: kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0),
      kernels, library, libraryHash, tspto: opts.packageVersion, createdAt: new Date().toISOString(),
    };
    validateMeta(meta, join(outputDir, META_FILE)); // what we write must read back
    writeFileSync(join(tmp, KEY_FILE), `${key}\n`);
    writeFileSync(join(tmp, META_FILE), `${JSON.stringify(meta, null, 2)}\n`);
    // install: another process may have finished the same artifact first -> use theirs
    try {
      renameSync(tmp, outputDir);
    } catch (e) {
      const theirs = tryReuse(outputDir, key);
      if (theirs) {
        rmSync(tmp, { recursive: true, force: true });
        writeDumps(outputDir, opts.dumps, true);
        return { outputDir, meta: theirs };
      }
      replaceDir(tmp, outputDir);
    }
    return { outputDir, meta };
  } catch (e) {
    if (!keepTmp && existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

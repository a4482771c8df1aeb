// The `tspto` command line (bin/tspto.mjs loads this from dist/, or through tsx in a checkout that has not been built).
//   tspto inspect <outputDir> [--json] [--trace] [--graph] [--roofline] [--out <file>]
//   tspto profile [--json] <script> [args...]
//   tspto precompile <entry|dir>... [--out DIR] [--shapes FILE] [--platform P]
// Exit codes: 0 ok, 1 an error (missing directory, not an artifact, a malformed DFX file, a
// script that failed), 2 a usage error.
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, extname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { FILE_LIMITS, checkDirInside, readTextInside, recordFiles, writeFileNoFollow } from "../artifact/index.js";
import { TsptoError } from "../ir/errors.js";
import { DEPS_FILE, DEPS_HTML, DFX_DIR, DfxFormatError, ROOFLINE_FILE, ROOFLINE_HTML, SWIMLANE_FILE, SWIMLANE_HTML, readJsonFile } from "./dfx.js";
import { parseDeps, renderDepsHtml } from "./graph.js";
import { InspectError, META_FILE, escapeControls, formatReport, inspectArtifact, reportJson } from "./inspect.js";
import { parseTrace, renderTraceHtml } from "./trace.js";
import { MERGED_SWIMLANE_FILE, findRankTraces, mergeRankTraces } from "./ranks.js";
import { formatRooflineTable, parseRoofline, renderRooflineHtml, type RooflineModel } from "./roofline.js";

export const USAGE = `Usage: tspto inspect <outputDir> [options]
       tspto profile [--json] <script> [args...]
       tspto precompile <entry|dir>... [--out DIR] [--shapes FILE] [--platform P]

tspto inspect shows what is inside a compiled artifact directory
(CompiledProgram.outputDir): metadata (params, outputs, scratch, kernels), pass
dumps, generated code and library, and the DFX outputs recorded under
<outputDir>/${DFX_DIR}/.

Options of inspect:
  --json          print the summary as JSON
  --trace         render ${DFX_DIR}/${SWIMLANE_FILE} (Chrome trace) as a swimlane
                  HTML page, written to ${DFX_DIR}/${SWIMLANE_HTML}; prints its path.
                  A distributed run's ${DFX_DIR}/rank_<r>/device_<d>/ swimlanes are
                  merged into one timeline (a row per rank, device and core)
  --graph         render ${DFX_DIR}/${DEPS_FILE} (task dependency graph) as an HTML
                  page, written to ${DFX_DIR}/${DEPS_HTML}; prints its path
  --roofline      render ${DFX_DIR}/${ROOFLINE_FILE} (the report of benchmark(...,
                  { roofline: true })) as the roofline plot, written to
                  ${DFX_DIR}/${ROOFLINE_HTML}; prints its path (--trace adds the
                  plot under the swimlane when the file is there)
  --out <file>    write the page of --trace, --graph or --roofline there instead

tspto profile runs a script (.js/.mjs with node, .ts/.mts through tsx) and
prints the roofline of every program it launches: per task kernel, bytes and
flops counted from the IR, the measured time of its tasks, GB/s, GFLOP/s, the
roof that applies (memory or compute), the fraction of it reached and the time
lost, totals over the script's launches, sorted by time lost. Arguments after
<script> are the script's.

Options of profile:
  --json          print the profile document instead of the tables

tspto precompile imports the application's modules (files, or every script
under a folder) and compiles each pl.jit entry whose annotations fix its
parameters (pl.Tensor<[M, N], pl.FP32>; a named dimension serves every
extent), and the specializations a shapes file lists, into a cache folder.
With TSPTO_CACHE_DIR pointing there, a first call loads the build: no C++
compiler, no TypeScript parser. The folder holds code for this machine's CPU.

Options of precompile:
  --out DIR       the cache folder (default: $TSPTO_CACHE_DIR, else the
                  user's cache)
  --shapes FILE   a JSON list of { "kernel": name, "file"?: module,
                  "args": [{ "shape": [..], "dtype"?: "float32" } | number] }
  --platform P    the platform to build for (default cpu)

  -h, --help      show this help
  -v, --version   print the tspto version

Formats of the DFX files and of the profile: docs/dfx-formats.md.
Exit status: 0 ok, 1 error (missing or non-artifact directory, malformed file,
a script that failed), 2 usage.
`;

class UsageError extends Error {}

interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
}

const stdio: Io = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { version?: string };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

interface InspectArgs { dir: string; json: boolean; trace: boolean; graph: boolean; roofline: boolean; out?: string }

function parseInspectArgs(argv: string[]): InspectArgs | "help" {
  const a: Partial<InspectArgs> & { json: boolean; trace: boolean; graph: boolean; roofline: boolean } = { json: false, trace: false, graph: false, roofline: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === "-h" || x === "--help") return "help";
    else if (x === "--json") a.json = true;
    else if (x === "--trace") a.trace = true;
    else if (x === "--graph") a.graph = true;
    else if (x === "--roofline") a.roofline = true;
    else if (x === "--out" || x === "-o" || x.startsWith("--out=")) {
      const v = x.startsWith("--out=") ? x.slice(6) : argv[++i];
      if (!v) throw new UsageError(`${x} needs a file name`);
      a.out = v;
    } else if (x.startsWith("-") && x !== "-") throw new UsageError(`unknown option '${x}'`);
    else if (a.dir === undefined) a.dir = x;
    else throw new UsageError(`unexpected argument '${x}' (one <outputDir> only)`);
  }
  if (a.dir === undefined) throw new UsageError("missing <outputDir>");
  const pages = [a.trace, a.graph, a.roofline].filter(Boolean).length;
  if (a.out !== undefined && pages === 0) throw new UsageError("--out goes with --trace, --graph or --roofline");
  if (a.out !== undefined && pages > 1) throw new UsageError("--out names one page: give one of --trace, --graph, --roofline");
  if (a.json && pages > 0) throw new UsageError("--json prints the summary; it does not go with --trace/--graph/--roofline");
  return a as InspectArgs;
}

/** Program name for page titles: compiled_meta.json's name if readable, else the directory's name. */
function programName(dir: string): string {
  try {
    const m = JSON.parse(readTextInside(dir, META_FILE, { maxBytes: FILE_LIMITS.meta })) as { name?: unknown };
    if (typeof m.name === "string" && m.name) return escapeControls(m.name);
  } catch { /* not an artifact (or a file tspto refuses to read): fine for rendering */ }
  return escapeControls(basename(dir));
}

function requireDir(dir: string): void {
  let st;
  try { st = statSync(dir); } catch { throw new InspectError(`no such directory: ${dir}`); }
  if (!st.isDirectory()) throw new InspectError(`${dir} is not a directory (give the artifact directory, CompiledProgram.outputDir)`);
}

/** `dfx_outputs/<file>` of `dir`, relative: it must exist (a DfxFormatError for a file tspto refuses is raised by readJsonFile). */
function dfxInput(dir: string, file: string, flag: string): string {
  const rel = `${DFX_DIR}/${file}`;
  const p = join(dir, rel);
  let found = false;
  try { lstatSync(p); found = true; } catch { /* missing */ }
  if (!found) {
    const how = file === ROOFLINE_FILE ? "benchmark(compiled, args, { roofline: true })"
      : `the program with RunConfig({ ${file === SWIMLANE_FILE ? "enableChipSwimlane" : "enableDepGen"}: true })`;
    throw new InspectError(`${flag}: ${p} not found: ${existsSync(join(dir, DFX_DIR)) ? `${DFX_DIR}/ has no ${file}` : `${dir} has no ${DFX_DIR}/ directory`}.\n` +
      `  Run ${how} to record it (format: docs/dfx-formats.md).`);
  }
  return rel;
}

/**
 * Writes a page (or the merged trace) `rel` into the artifact directory `dir`: never through
 * a link planted there (dfx_outputs/ must be a real directory; the file is created under a
 * temporary name, exclusively, and renamed over whatever is at its name), and recorded in the
 * artifact's marker as a file tspto wrote.
 */
function writeInto(dir: string, rel: string, text: string): string {
  checkDirInside(dir, dirname(rel));
  writeFileNoFollow(join(dir, rel), text);
  recordFiles(dir, [rel]);
  return join(dir, rel);
}

/** Writes the page the user named with --out (its directory is created), never through a link there. */
function writeOut(file: string, text: string): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileNoFollow(file, text);
  return file;
}

/**
 * Render <dir>/dfx_outputs/swimlane.json; returns the page's path. A distributed run's
 * per-device swimlanes (dfx_outputs/rank_<r>/device_<d>/) are merged into one timeline with a
 * row per rank, device and core (also written as dfx_outputs/swimlane_ranks.json).
 */
export function renderTrace(dir: string, out?: string): string {
  const ranks = findRankTraces(dir);
  const page = (html: string) => (out !== undefined ? writeOut(resolve(out), html) : writeInto(dir, `${DFX_DIR}/${SWIMLANE_HTML}`, html));
  if (ranks.length > 0) {
    const merged = mergeRankTraces(dir, ranks);
    const input = writeInto(dir, `${DFX_DIR}/${MERGED_SWIMLANE_FILE}`, JSON.stringify(merged));
    const model = parseTrace(merged, input);
    return page(renderTraceHtml(model, { title: `Swimlane: ${programName(dir)}, ${merged.ranks.length} rank${merged.ranks.length === 1 ? "" : "s"}, ${ranks.length} device${ranks.length === 1 ? "" : "s"}`, source: input }));
  }
  const rel = dfxInput(dir, SWIMLANE_FILE, "--trace");
  const input = join(dir, rel);
  const model = parseTrace(readJsonFile(dir, rel), input);
  // the roofline of the latest benchmark with { roofline: true }, when there is one, under the swimlane
  const rf = `${DFX_DIR}/${ROOFLINE_FILE}`;
  let roofline: RooflineModel | undefined, rooflineProblem: string | undefined;
  let there = false;
  try { lstatSync(join(dir, rf)); there = true; } catch { /* no report: no plot */ }
  if (there) {
    // a report tspto cannot read does not keep the swimlane from being drawn: the page says why it is missing
    try { roofline = parseRoofline(readJsonFile(dir, rf), join(dir, rf)); } catch (e) { if (!(e instanceof DfxFormatError)) throw e; rooflineProblem = escapeControls(e.message); }
  }
  return page(renderTraceHtml(model, { title: `Swimlane: ${programName(dir)}`, source: input, roofline, rooflineProblem }));
}

/** Render <dir>/dfx_outputs/roofline.json; returns the page's path. */
export function renderRoofline(dir: string, out?: string): string {
  const rel = dfxInput(dir, ROOFLINE_FILE, "--roofline");
  const input = join(dir, rel);
  const model = parseRoofline(readJsonFile(dir, rel), input);
  const html = renderRooflineHtml(model, { title: `Roofline: ${programName(dir)}`, source: input });
  return out !== undefined ? writeOut(resolve(out), html) : writeInto(dir, `${DFX_DIR}/${ROOFLINE_HTML}`, html);
}

// ------------------------------------------------------------------ tspto precompile

interface PrecompileArgs { entries: string[]; out?: string; shapes?: string; platform?: string }

function parsePrecompileArgs(argv: string[]): PrecompileArgs | "help" {
  const a: PrecompileArgs = { entries: [] };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === "-h" || x === "--help") return "help";
    if (x === "--out" || x === "--shapes" || x === "--platform") {
      const v = argv[++i];
      if (v === undefined || v.startsWith("-")) throw new UsageError(`precompile: ${x} needs a value`);
      a[x.slice(2) as "out" | "shapes" | "platform"] = v;
      continue;
    }
    if (x.startsWith("-")) throw new UsageError(`unknown option '${x}' for precompile`);
    a.entries.push(x);
  }
  if (a.entries.length === 0) throw new UsageError("precompile: missing <entry|dir> (the application's modules)");
  return a;
}

/** Runs `tspto precompile` in a process of its own (it imports the application's modules); returns the exit status. */
function precompileCmd(a: PrecompileArgs, io: Io): number {
  const here = fileURLToPath(import.meta.url);
  const main = join(dirname(here), "..", `precompile_main${extname(here)}`);
  const entries = a.entries.map((e) => resolve(e));
  const pre: string[] = [];
  if (extname(main) === ".ts" || entries.some((e) => !existsSync(e) || statSync(e).isDirectory() || /^\.[cm]?tsx?$/.test(extname(e)))) {
    const loader = tsxLoader(entries[0]);
    if (loader) pre.push("--import", loader);
    else if (extname(main) === ".ts" || entries.some((e) => /^\.[cm]?tsx?$/.test(extname(e)))) throw new ProfileError(noTsxMessage(entries[0]));
  }
  // the tspto the application imports (its kernels register there), else this one
  let tspto: string | undefined;
  for (const e of entries) {
    try { tspto = pathToFileURL(createRequire(statSync(e).isDirectory() ? join(e, "noop.js") : e).resolve("tspto")).href; break; } catch { /* not resolvable from there */ }
  }
  const opts = { tspto, entries, out: a.out && resolve(a.out), shapes: a.shapes && resolve(a.shapes), platform: a.platform };
  const r = spawnSync(process.execPath, [...pre, main, JSON.stringify(opts)], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.error) throw new ProfileError(`cannot run ${main}: ${r.error.message}`);
  if (r.status !== 0) throw new ProfileError(`the precompile process ${r.signal ? `was killed by ${r.signal}` : `exited with status ${r.status}`} (its error is above)`);
  let recs: { kernel: string; file: string; line: number; outputDir?: string; skipped?: string }[];
  try { recs = JSON.parse(r.stdout.trim().split("\n").pop() ?? "[]"); } catch { throw new ProfileError(`the precompile process printed no result: ${r.stdout.slice(0, 200)}`); }
  const built = recs.filter((x) => x.outputDir), skipped = recs.filter((x) => x.skipped);
  const folder = opts.out ?? process.env.TSPTO_CACHE_DIR ?? "the user's cache";
  io.out(`tspto precompile: ${built.length} kernel specialization${built.length === 1 ? "" : "s"} in ${folder}${skipped.length ? `; ${skipped.length} skipped` : ""}\n`);
  for (const x of skipped) io.out(`  skipped ${x.kernel} (${x.file}:${x.line}): ${x.skipped}\n`);
  return 0;
}

// ------------------------------------------------------------------ tspto profile

/** A failure of `tspto profile` (the script, the profile it left): exit status 1. */
class ProfileError extends Error {}

interface ProfileArgs { json: boolean; script: string; args: string[] }

function parseProfileArgs(argv: string[]): ProfileArgs | "help" {
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === "-h" || x === "--help") return "help";
    if (x === "--json") { json = true; continue; }
    if (x === "--") { if (i + 1 >= argv.length) break; return { json, script: argv[i + 1], args: argv.slice(i + 2) }; }
    if (x.startsWith("-")) throw new UsageError(`unknown option '${x}' for profile (options go before the script; what follows the script is its own)`);
    return { json, script: x, args: argv.slice(i + 1) };
  }
  throw new UsageError("profile: missing <script>");
}

/** The tsx loader (for .ts scripts): the one the script's directory or the working directory resolves, else tspto's own (`from`: those places). */
export function tsxLoader(script: string, from: readonly string[] = [dirname(script), process.cwd(), dirname(fileURLToPath(import.meta.url))]): string | null {
  for (const dir of from) {
    try { return pathToFileURL(createRequire(join(dir, "noop.js")).resolve("tsx")).href; } catch { /* not there */ }
  }
  return null;
}
/** Why a TypeScript script cannot run (no tsx anywhere). */
export const noTsxMessage = (script: string): string =>
  `running ${basename(script)} (TypeScript) needs tsx, which neither its directory, the working directory nor tspto resolves: npm install --save-dev tsx, or give a .js / .mjs script`;

interface ProfileDoc { pid: number | null; programs: RooflineModel[]; raw: unknown[]; error?: string }

/** Reads a profile document a process of the script wrote at exit; a malformed one is a DfxFormatError naming the file. */
export function readProfile(file: string): ProfileDoc {
  let j: unknown;
  try { j = JSON.parse(readFileSync(file, "utf8")); } catch (e) { throw new DfxFormatError(file, `not a profile (${(e as Error).message})`); }
  const o = j as { format?: unknown; pid?: unknown; programs?: unknown; error?: unknown };
  if (o === null || typeof o !== "object" || o.format !== "tspto-profile-1" || !Array.isArray(o.programs)) throw new DfxFormatError(file, `not a "tspto-profile-1" document`);
  return {
    pid: typeof o.pid === "number" ? o.pid : null, raw: o.programs,
    programs: o.programs.map((p, i) => parseRoofline({ format: "tspto-roofline-1", ...(p as object) }, `${file} (programs[${i}])`)),
    error: typeof o.error === "string" ? o.error : undefined,
  };
}

/** Every profile document in `dir` (one per process or worker thread that loaded tspto), the script's own process first. */
function readProfiles(dir: string, pid: number | undefined): ProfileDoc[] {
  const docs = readdirSync(dir).filter((f) => /^profile-\d+-[0-9a-f]+\.json$/.test(f)).sort().map((f) => readProfile(join(dir, f)));
  return docs.sort((a, b) => Number(b.pid === pid) - Number(a.pid === pid));
}

/** Runs `tspto profile`; returns the exit status. */
function profile(a: ProfileArgs, io: Io): number {
  const script = resolve(a.script);
  let st;
  try { st = statSync(script); } catch { throw new ProfileError(`no such script: ${script}`); }
  if (!st.isFile()) throw new ProfileError(`${script} is not a file (give the script to run)`);
  const ts = /^\.[cm]?tsx?$/.test(extname(script));
  const pre: string[] = [];
  if (ts) {
    const loader = tsxLoader(script);
    if (!loader) throw new ProfileError(noTsxMessage(script));
    pre.push("--import", loader);
  }
  const work = mkdtempSync(join(tmpdir(), "tspto-profile-"));
  try {
    const r = spawnSync(process.execPath, [...pre, script, ...a.args], { stdio: "inherit", env: { ...process.env, TSPTO_PROFILE: work } });
    if (r.error) throw new ProfileError(`cannot run ${script}: ${r.error.message}`);
    const failed = r.status !== 0 ? `the script ${r.signal ? `was killed by ${r.signal}` : `exited with status ${r.status}`}` : null;
    const docs = readProfiles(work, r.pid);
    if (docs.length === 0) {
      // the profile is written by tspto's runtime at exit: a script that never loaded it launched nothing
      if (!failed) {
        io.out(`tspto profile: ${basename(script)} made no launch: nothing to profile (no tspto runtime was loaded, or one older than \`tspto profile\`)\n`);
        return 0;
      }
      throw new ProfileError(`${failed} without writing its profile (it loaded no tspto runtime, or left before exit handlers ran: process.abort, a fatal signal)`);
    }
    const programs = docs.flatMap((d) => d.programs);
    if (a.json) io.out(`${JSON.stringify({ format: "tspto-profile-1", processes: docs.map((d) => d.pid), programs: docs.flatMap((d) => d.raw) }, null, 1)}\n`);
    else if (programs.length === 0) io.out(`tspto profile: ${basename(script)} made no launch: nothing to profile\n`);
    else io.out(`${programs.map((p) => formatRooflineTable(p)).join("\n\n")}\n`);
    const error = docs.find((d) => d.error)?.error;
    if (error) throw new ProfileError(`the profile is incomplete: ${error}`);
    if (failed) throw new ProfileError(`${failed} (the profile above covers the launches it made)`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Render <dir>/dfx_outputs/deps.json; returns the page's path. */
export function renderGraph(dir: string, out?: string): string {
  const rel = dfxInput(dir, DEPS_FILE, "--graph");
  const input = join(dir, rel);
  const model = parseDeps(readJsonFile(dir, rel), input);
  const html = renderDepsHtml(model, { title: `Task dependencies: ${programName(dir)}`, source: input });
  return out !== undefined ? writeOut(resolve(out), html) : writeInto(dir, `${DFX_DIR}/${DEPS_HTML}`, html);
}

/** Run the command line; returns the exit status. */
export async function main(argv: string[], io: Io = stdio): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    if (cmd === undefined || cmd === "-h" || cmd === "--help" || cmd === "help") {
      (cmd === undefined ? io.err : io.out)(USAGE);
      return cmd === undefined ? 2 : 0;
    }
    if (cmd === "-v" || cmd === "--version") {
      io.out(`tspto ${packageVersion()}\n`);
      return 0;
    }
    if (cmd === "profile") {
      const p = parseProfileArgs(rest);
      if (p === "help") {
        io.out(USAGE);
        return 0;
      }
      return profile(p, io);
    }
    if (cmd === "precompile") {
      const p = parsePrecompileArgs(rest);
      if (p === "help") {
        io.out(USAGE);
        return 0;
      }
      return precompileCmd(p, io);
    }
    if (cmd !== "inspect") throw new UsageError(`unknown command '${cmd}' (the commands are 'inspect', 'profile' and 'precompile')`);
    const a = parseInspectArgs(rest);
    if (a === "help") {
      io.out(USAGE);
      return 0;
    }
    const dir = resolve(a.dir);
    if (a.trace || a.graph || a.roofline) {
      requireDir(dir);
      if (a.trace) io.out(`${renderTrace(dir, a.out)}\n`);
      if (a.graph) io.out(`${renderGraph(dir, a.out)}\n`);
      if (a.roofline) io.out(`${renderRoofline(dir, a.out)}\n`);
      return 0;
    }
    const report = inspectArtifact(dir);
    io.out(a.json ? `${reportJson(report)}\n` : formatReport(report));
    return 0;
  } catch (e) {
    // every failure is a message naming the file (its text escaped: it may come from the directory), never a stack trace
    const say = (s: string) => escapeControls(s).replace(/\\x0a/g, "\n");
    const who = cmd === "profile" ? "tspto profile" : cmd === "precompile" ? "tspto precompile" : "tspto inspect";
    if (e instanceof ProfileError) {
      io.err(`${who}: ${say(e.message)}\n`);
      return 1;
    }
    if (e instanceof UsageError) {
      io.err(`tspto: ${say(e.message)}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof InspectError || e instanceof DfxFormatError) {
      io.err(`${who}: ${say(e.message)}\n`);
      return 1;
    }
    if (e instanceof TsptoError) {
      io.err(`${who}: ${say(e.detail)}\n`);
      return 1;
    }
    const code = (e as NodeJS.ErrnoException)?.code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) {
      // a file system error while reading or writing (EACCES, ENOSPC, EROFS...)
      io.err(`${who}: ${say((e as Error).message)}\n`);
      return 1;
    }
    io.err(`${who}: internal error: ${say(String((e as Error)?.message ?? e).split("\n")[0])} (a bug in tspto: please report it${process.env.TSPTO_DEBUG ? "" : "; TSPTO_DEBUG=1 prints the stack"})\n`);
    if (process.env.TSPTO_DEBUG) io.err(`${(e as Error)?.stack ?? ""}\n`);
    return 1;
  }
}

// The `tspto` command line (bin/tspto.mjs loads this from dist/, or through tsx in a checkout that has not been built).
//   tspto inspect <outputDir> [--json] [--trace] [--graph] [--out <file>]
// Exit codes: 0 ok, 1 an error (missing directory, not an artifact, a malformed DFX file),
// 2 a usage error.
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { FILE_LIMITS, checkDirInside, readTextInside, recordFiles, writeFileNoFollow } from "../artifact/index.js";
import { TsptoError } from "../ir/errors.js";
import { DEPS_FILE, DEPS_HTML, DFX_DIR, DfxFormatError, SWIMLANE_FILE, SWIMLANE_HTML, readJsonFile } from "./dfx.js";
import { parseDeps, renderDepsHtml } from "./graph.js";
import { InspectError, META_FILE, escapeControls, formatReport, inspectArtifact, reportJson } from "./inspect.js";
import { parseTrace, renderTraceHtml } from "./trace.js";
import { MERGED_SWIMLANE_FILE, findRankTraces, mergeRankTraces } from "./ranks.js";

export const USAGE = `Usage: tspto inspect <outputDir> [options]

Show what is inside a compiled artifact directory (CompiledProgram.outputDir):
metadata (params, outputs, scratch, kernels), pass dumps, generated code and
library, and the DFX outputs recorded under <outputDir>/${DFX_DIR}/.

Options:
  --json          print the summary as JSON
  --trace         render ${DFX_DIR}/${SWIMLANE_FILE} (Chrome trace) as a swimlane
                  HTML page, written to ${DFX_DIR}/${SWIMLANE_HTML}; prints its path.
                  A distributed run's ${DFX_DIR}/rank_<r>/device_<d>/ swimlanes are
                  merged into one timeline (a row per rank, device and core)
  --graph         render ${DFX_DIR}/${DEPS_FILE} (task dependency graph) as an HTML
                  page, written to ${DFX_DIR}/${DEPS_HTML}; prints its path
  --out <file>    write the page of --trace or --graph there instead
  -h, --help      show this help
  -v, --version   print the tspto version

Formats of the DFX files: docs/dfx-formats.md.
Exit status: 0 ok, 1 error (missing or non-artifact directory, malformed file), 2 usage.
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

interface InspectArgs { dir: string; json: boolean; trace: boolean; graph: boolean; out?: string }

function parseInspectArgs(argv: string[]): InspectArgs | "help" {
  const a: Partial<InspectArgs> & { json: boolean; trace: boolean; graph: boolean } = { json: false, trace: false, graph: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === "-h" || x === "--help") return "help";
    else if (x === "--json") a.json = true;
    else if (x === "--trace") a.trace = true;
    else if (x === "--graph") a.graph = true;
    else if (x === "--out" || x === "-o" || x.startsWith("--out=")) {
      const v = x.startsWith("--out=") ? x.slice(6) : argv[++i];
      if (!v) throw new UsageError(`${x} needs a file name`);
      a.out = v;
    } else if (x.startsWith("-") && x !== "-") throw new UsageError(`unknown option '${x}'`);
    else if (a.dir === undefined) a.dir = x;
    else throw new UsageError(`unexpected argument '${x}' (one <outputDir> only)`);
  }
  if (a.dir === undefined) throw new UsageError("missing <outputDir>");
  if (a.out !== undefined && !a.trace && !a.graph) throw new UsageError("--out goes with --trace or --graph");
  if (a.out !== undefined && a.trace && a.graph) throw new UsageError("--out names one page: give --trace or --graph, not both");
  if (a.json && (a.trace || a.graph)) throw new UsageError("--json prints the summary; it does not go with --trace/--graph");
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
    const how = file === SWIMLANE_FILE ? "enableChipSwimlane" : "enableDepGen";
    throw new InspectError(`${flag}: ${p} not found: ${existsSync(join(dir, DFX_DIR)) ? `${DFX_DIR}/ has no ${file}` : `${dir} has no ${DFX_DIR}/ directory`}.\n` +
      `  Run the program with RunConfig({ ${how}: true }) to record it (format: docs/dfx-formats.md).`);
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
  return page(renderTraceHtml(model, { title: `Swimlane: ${programName(dir)}`, source: input }));
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
    if (cmd !== "inspect") throw new UsageError(`unknown command '${cmd}' (the command is 'inspect')`);
    const a = parseInspectArgs(rest);
    if (a === "help") {
      io.out(USAGE);
      return 0;
    }
    const dir = resolve(a.dir);
    if (a.trace || a.graph) {
      requireDir(dir);
      if (a.trace) io.out(`${renderTrace(dir, a.out)}\n`);
      if (a.graph) io.out(`${renderGraph(dir, a.out)}\n`);
      return 0;
    }
    const report = inspectArtifact(dir);
    io.out(a.json ? `${reportJson(report)}\n` : formatReport(report));
    return 0;
  } catch (e) {
    // every failure is a message naming the file (its text escaped: it may come from the directory), never a stack trace
    const say = (s: string) => escapeControls(s).replace(/\\x0a/g, "\n");
    if (e instanceof UsageError) {
      io.err(`tspto: ${say(e.message)}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof InspectError || e instanceof DfxFormatError) {
      io.err(`tspto inspect: ${say(e.message)}\n`);
      return 1;
    }
    if (e instanceof TsptoError) {
      io.err(`tspto inspect: ${say(e.detail)}\n`);
      return 1;
    }
    const code = (e as NodeJS.ErrnoException)?.code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code)) {
      // a file system error while reading or writing (EACCES, ENOSPC, EROFS...)
      io.err(`tspto inspect: ${say((e as Error).message)}\n`);
      return 1;
    }
    io.err(`tspto inspect: internal error: ${say(String((e as Error)?.message ?? e).split("\n")[0])} (a bug in tspto: please report it${process.env.TSPTO_DEBUG ? "" : "; TSPTO_DEBUG=1 prints the stack"})\n`);
    if (process.env.TSPTO_DEBUG) io.err(`${(e as Error)?.stack ?? ""}\n`);
    return 1;
  }
}

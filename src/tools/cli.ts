// The `tspto` command line (bin/tspto.mjs loads this from dist/, or through tsx in a checkout that has not been built).
//   tspto inspect <outputDir> [--json] [--trace] [--graph] [--out <file>]
// Exit codes: 0 ok, 1 an error (missing directory, not an artifact, a malformed DFX file),
// 2 a usage error.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DEPS_FILE, DEPS_HTML, DFX_DIR, DfxFormatError, SWIMLANE_FILE, SWIMLANE_HTML, readJsonFile } from "./dfx.js";
import { parseDeps, renderDepsHtml } from "./graph.js";
import { InspectError, META_FILE, formatReport, inspectArtifact } from "./inspect.js";
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
    const m = JSON.parse(readFileSync(join(dir, META_FILE), "utf8")) as { name?: unknown };
    if (typeof m.name === "string" && m.name) return m.name;
  } catch { /* not an artifact: fine for rendering */ }
  return basename(dir);
}

function requireDir(dir: string): void {
  if (!existsSync(dir)) throw new InspectError(`no such directory: ${dir}`);
  if (!statSync(dir).isDirectory()) throw new InspectError(`${dir} is not a directory (give the artifact directory, CompiledProgram.outputDir)`);
}

function dfxInput(dir: string, file: string, flag: string): string {
  const p = join(dir, DFX_DIR, file);
  if (!existsSync(p)) {
    const how = file === SWIMLANE_FILE ? "enableChipSwimlane" : "enableDepGen";
    throw new InspectError(`${flag}: ${p} not found: ${existsSync(join(dir, DFX_DIR)) ? `${DFX_DIR}/ has no ${file}` : `${dir} has no ${DFX_DIR}/ directory`}.\n` +
      `  Run the program with RunConfig({ ${how}: true }) to record it (format: docs/dfx-formats.md).`);
  }
  return p;
}

function write(file: string, html: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, html);
}

/**
 * Render <dir>/dfx_outputs/swimlane.json; returns the page's path. A distributed run's
 * per-device swimlanes (dfx_outputs/rank_<r>/device_<d>/) are merged into one timeline with a
 * row per rank, device and core (also written as dfx_outputs/swimlane_ranks.json).
 */
export function renderTrace(dir: string, out?: string): string {
  const ranks = findRankTraces(join(dir, DFX_DIR));
  if (ranks.length > 0) {
    const merged = mergeRankTraces(ranks);
    const input = join(dir, DFX_DIR, MERGED_SWIMLANE_FILE);
    write(input, JSON.stringify(merged));
    const model = parseTrace(merged, input);
    const file = resolve(out ?? join(dir, DFX_DIR, SWIMLANE_HTML));
    write(file, renderTraceHtml(model, { title: `Swimlane: ${programName(dir)}, ${merged.ranks.length} rank${merged.ranks.length === 1 ? "" : "s"}, ${ranks.length} device${ranks.length === 1 ? "" : "s"}`, source: input }));
    return file;
  }
  const input = dfxInput(dir, SWIMLANE_FILE, "--trace");
  const model = parseTrace(readJsonFile(input), input);
  const file = resolve(out ?? join(dir, DFX_DIR, SWIMLANE_HTML));
  write(file, renderTraceHtml(model, { title: `Swimlane: ${programName(dir)}`, source: input }));
  return file;
}

/** Render <dir>/dfx_outputs/deps.json; returns the page's path. */
export function renderGraph(dir: string, out?: string): string {
  const input = dfxInput(dir, DEPS_FILE, "--graph");
  const model = parseDeps(readJsonFile(input), input);
  const file = resolve(out ?? join(dir, DFX_DIR, DEPS_HTML));
  write(file, renderDepsHtml(model, { title: `Task dependencies: ${programName(dir)}`, source: input }));
  return file;
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
    io.out(a.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
    return 0;
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`tspto: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof InspectError || e instanceof DfxFormatError) {
      io.err(`tspto inspect: ${e.message}\n`);
      return 1;
    }
    io.err(`tspto: ${(e as Error)?.stack ?? String(e)}\n`);
    return 1;
  }
}

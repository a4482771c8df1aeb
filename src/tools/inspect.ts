// `tspto inspect <outputDir>`: what is inside an artifact directory (CompiledProgram.outputDir):
// metadata, pass dumps, generated code, build outputs, DFX outputs. Reads files only; never
// loads the library or imports the compiler.
import { parseTrace, traceSummary } from "./trace.js";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { KERNELS_DIR, META_FILE, PASSES_DUMP_DIR, PROGRAM_FILE, STAMP_FILE, type CompiledMeta, type CompiledParam } from "../artifact/index.js";
import { DEPS_FILE, DFX_DIR, SWIMLANE_FILE } from "./dfx.js";
import { fmtBytes, fmtInt } from "./html.js";

export { META_FILE };
const META_SCHEMA = "tspto-compiled-program";

/** The artifact directory is missing or is not one; `message` names the path and what is missing. */
export class InspectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InspectError";
  }
}

export interface FileInfo {
  /** Relative to the artifact directory. */
  path: string;
  bytes: number;
  /** Text files only. */
  lines?: number;
}

export interface PassDumpInfo {
  /** Position in the pipeline (the NN of NN_after_<Pass>). */
  index: number;
  pass: string;
  /** passes_dump/NN_after_<Pass>.ts */
  file: string;
  lines: number;
  bytes: number;
  /** A .json dump (for validateIr) sits next to it. */
  json: boolean;
  /** Same text as the previous dump: the pass changed nothing. */
  unchanged: boolean;
}

export interface DfxFileInfo extends FileInfo {
  /** A one-line description for the known formats (swimlane.json, deps.json). */
  summary?: string;
}

export interface InspectReport {
  dir: string;
  meta: CompiledMeta;
  /** Problems found while reading (e.g. a library hash that does not match); the report is still complete. */
  warnings: string[];
  passes: PassDumpInfo[];
  /** Files of kernels/ and orchestration/ (generated source). */
  code: FileInfo[];
  library: (FileInfo & { sha256: string; matchesMeta: boolean }) | null;
  stamp: { compiler?: string; version?: string; flags?: string[]; compileMs?: number } | null;
  programJson: FileInfo | null;
  report: FileInfo[];
  dfx: DfxFileInfo[];
}

const countLines = (text: string): number => (text.length === 0 ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));

function fileInfo(dir: string, rel: string): FileInfo {
  const full = join(dir, rel);
  const bytes = statSync(full).size;
  const info: FileInfo = { path: rel, bytes };
  if (/\.(cpp|cc|h|hpp|cu|ts|json|md|txt|csv|py|js|html)$/.test(rel) && bytes < 64 << 20) info.lines = countLines(readFileSync(full, "utf8"));
  return info;
}

/** Every plain file under dir/sub (relative paths, sorted). */
function listFiles(dir: string, sub: string): string[] {
  const root = join(dir, sub);
  if (!existsSync(root) || !statSync(root).isDirectory()) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(relative(dir, p));
    }
  };
  walk(root);
  return out;
}

/** compiled_meta.json, checked enough to report on (the full check is the runtime's job). */
function readMeta(dir: string): CompiledMeta {
  const file = join(dir, META_FILE);
  if (!existsSync(file)) {
    const present = readdirSync(dir).slice(0, 8);
    throw new InspectError(`${dir} is not a tspto artifact directory: ${META_FILE} is missing` +
      `${present.length ? ` (found: ${present.join(", ")}${readdirSync(dir).length > 8 ? ", ..." : ""})` : " (the directory is empty)"}.\n` +
      `  An artifact directory is CompiledProgram.outputDir (e.g. ir.compile(program, { outputDir })); it holds ${META_FILE}, program.json, kernels/, build/.`);
  }
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new InspectError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new InspectError(`${file}: expected a JSON object`);
  const o = v as Record<string, unknown>;
  if (o.schema !== META_SCHEMA) {
    throw new InspectError(`${file}: not tspto metadata: field 'schema' is ${o.schema === undefined ? "missing" : JSON.stringify(o.schema)} (expected "${META_SCHEMA}")`);
  }
  for (const k of ["name", "platform", "params", "kernels"]) {
    if (!(k in o)) throw new InspectError(`${file}: missing field '${k}'`);
  }
  if (!Array.isArray(o.params)) throw new InspectError(`${file}: field 'params' must be an array`);
  if (!Array.isArray(o.kernels)) throw new InspectError(`${file}: field 'kernels' must be an array`);
  return o as unknown as CompiledMeta;
}

/** A one-line description of a DFX file in a known format, or undefined. */
function dfxSummary(full: string, name: string): string | undefined {
  try {
    if (name === SWIMLANE_FILE) {
      const j = JSON.parse(readFileSync(full, "utf8")) as unknown;
      const evs = Array.isArray(j) ? j : (j as { traceEvents?: unknown[] })?.traceEvents;
      if (!Array.isArray(evs)) return "not a Chrome trace (no traceEvents array)";
      // the same model and summary line as the swimlane page (--trace)
      const m = parseTrace(j, full);
      const idle = m.tracks.filter((t) => !t.orchestration && !t.tasks.length && t.idle).map((t) => `${t.label}: ${t.idle}`);
      return traceSummary(m) + (idle.length ? `; ${idle.join("; ")}` : "");
    }
    if (name === DEPS_FILE) {
      const j = JSON.parse(readFileSync(full, "utf8")) as { tasks?: unknown[]; edges?: unknown[] };
      if (!Array.isArray(j?.tasks) || !Array.isArray(j?.edges)) return "not a dependency graph (needs 'tasks' and 'edges' arrays)";
      return `${fmtInt(j.tasks.length)} tasks, ${fmtInt(j.edges.length)} dependencies`;
    }
  } catch (e) {
    return `unreadable (${(e as Error).message.split("\n")[0]})`;
  }
  return undefined;
}

/** Read an artifact directory. Throws InspectError (naming the path and what is missing). */
export function inspectArtifact(dirArg: string): InspectReport {
  const dir = resolve(dirArg);
  if (!existsSync(dir)) throw new InspectError(`no such directory: ${dir}`);
  if (!statSync(dir).isDirectory()) throw new InspectError(`${dir} is not a directory (give the artifact directory, CompiledProgram.outputDir)`);
  const meta = readMeta(dir);
  const warnings: string[] = [];

  // passes
  const passes: PassDumpInfo[] = [];
  const dumpDir = join(dir, PASSES_DUMP_DIR);
  if (existsSync(dumpDir)) {
    const names = readdirSync(dumpDir);
    const stems = names.map((n) => /^(\d+)_after_(.+)\.ts$/.exec(n)).filter((m): m is RegExpExecArray => !!m)
      .sort((a, b) => Number(a[1]) - Number(b[1]) || (a[2] < b[2] ? -1 : 1));
    let prev: string | null = null;
    for (const m of stems) {
      const file = join(PASSES_DUMP_DIR, m[0]);
      const text = readFileSync(join(dir, file), "utf8");
      passes.push({
        index: Number(m[1]), pass: m[2], file, lines: countLines(text), bytes: Buffer.byteLength(text),
        json: names.includes(m[0].replace(/\.ts$/, ".json")), unchanged: prev !== null && prev === text,
      });
      prev = text;
    }
  }

  // generated code and build outputs
  const code = [...listFiles(dir, "kernels"), ...listFiles(dir, "orchestration")].map((p) => fileInfo(dir, p));
  let library: InspectReport["library"] = null;
  const libRel = meta.library;
  if (libRel) {
    const full = join(dir, libRel);
    if (existsSync(full)) {
      const data = readFileSync(full);
      const sha256 = createHash("sha256").update(data).digest("hex");
      const matchesMeta = !meta.libraryHash || meta.libraryHash === sha256;
      if (!matchesMeta) warnings.push(`${libRel}: sha256 ${sha256.slice(0, 12)}… does not match compiled_meta.json libraryHash ${String(meta.libraryHash).slice(0, 12)}…; the runtime will refuse to load it`);
      library = { path: libRel, bytes: data.length, sha256, matchesMeta };
    } else {
      warnings.push(`${libRel} is named by compiled_meta.json but missing`);
    }
  }
  let stamp: InspectReport["stamp"] = null;
  const stampFile = join(dir, STAMP_FILE);
  if (existsSync(stampFile)) {
    try {
      stamp = JSON.parse(readFileSync(stampFile, "utf8"));
    } catch {
      warnings.push("build/stamp.json is not valid JSON");
    }
  }
  if (meta.library && !code.some((f) => f.path.startsWith(`${KERNELS_DIR}/`))) warnings.push(`${KERNELS_DIR}/ holds no generated source for ${meta.library}`);
  const programJson = existsSync(join(dir, PROGRAM_FILE)) ? fileInfo(dir, PROGRAM_FILE) : null;
  if (!programJson) warnings.push("program.json is missing");
  const report = listFiles(dir, "report").map((p) => fileInfo(dir, p));
  const dfx: DfxFileInfo[] = listFiles(dir, DFX_DIR).map((p) => {
    const info: DfxFileInfo = fileInfo(dir, p);
    const name = relative(DFX_DIR, p);
    const summary = dfxSummary(join(dir, p), name);
    if (summary) info.summary = summary;
    return info;
  });
  return { dir, meta, warnings, passes, code, library, stamp, programJson, report, dfx };
}

function paramLine(p: CompiledParam, i: number, w: number): string {
  const type = p.kind === "tensor" ? `tensor [${(p.shape ?? []).map((d, k) => (d === -1 ? JSON.stringify(p.dimNames?.[k] ?? "?") : d)).join(", ")}] ${p.dtype}` : `scalar ${p.dtype}${p.value !== undefined ? ` = ${p.value} (specialized)` : ""}`;
  return `    ${String(i).padStart(2)}  ${p.name.padEnd(w)}  ${p.direction.padEnd(5)}  ${type}`;
}

const sizeText = (f: FileInfo) => `${fmtBytes(f.bytes)}${f.bytes >= 1024 ? ` (${fmtInt(f.bytes)} B)` : ""}${f.lines !== undefined ? `, ${fmtInt(f.lines)} line${f.lines === 1 ? "" : "s"}` : ""}`;

/** The human-readable summary printed by `tspto inspect`. */
export function formatReport(r: InspectReport): string {
  const m = r.meta;
  const out: string[] = [];
  out.push(`tspto artifact: ${r.dir}`);
  out.push(`  program    ${m.name}${m.entry && m.entry !== m.name ? ` (entry ${m.entry})` : ""}`);
  out.push(`  platform   ${m.platform}${m.backendType ? ` (backend ${m.backendType}, runtime ${m.runtimeName})` : ""}`);
  if (m.tspto || m.createdAt) out.push(`  built      ${[m.tspto ? `by tspto ${m.tspto}` : "", m.createdAt ? `at ${m.createdAt}` : ""].filter(Boolean).join(" ")}`);
  // params / outputs
  const w = Math.max(4, ...m.params.map((p) => p.name.length));
  out.push(`  params     ${m.params.length}`);
  m.params.forEach((p, i) => out.push(paramLine(p, i, w)));
  const outs = (m.outputIndices ?? []).map((i) => m.params[i]?.name ?? `#${i}`);
  out.push(`  outputs    ${outs.length ? outs.join(", ") : "(none)"}`);
  if (m.hasReturn !== undefined) out.push(`  returns    ${m.hasReturn ? (m.returns ?? []).map((i) => m.params[i]?.name ?? `#${i}`).join(", ") : "(nothing)"}`);
  out.push(`  scratch    ${fmtInt(m.scratchBytes ?? 0)} bytes per core (largest kernel)`);
  out.push(`  kernels    ${m.kernels.length}`);
  const kw = Math.max(4, ...m.kernels.map((k) => k.name.length));
  for (const k of m.kernels) out.push(`    ${k.name.padEnd(kw)}  symbol ${k.symbol}, scratch ${fmtInt(k.scratchBytes)} B`);
  // passes
  out.push("");
  if (r.passes.length) {
    out.push(`passes (${r.passes.length} dumps in ${join(r.dir, PASSES_DUMP_DIR)})`);
    const pw = Math.max(...r.passes.map((p) => p.pass.length));
    for (const p of r.passes) {
      out.push(`  ${String(p.index).padStart(2, "0")}  ${p.pass.padEnd(pw)}  ${String(p.lines).padStart(5)} lines${p.json ? "  +json" : ""}${p.unchanged ? "  (unchanged)" : ""}`);
    }
  } else {
    out.push("passes     no pass dumps (compile with ir.compile(program, { dumpPasses: true }))");
  }
  // code
  out.push("");
  out.push("generated code");
  if (!m.library) out.push(`  nothing compiled: platform ${m.platform} evaluates ${PROGRAM_FILE}`);
  else if (!r.code.length) out.push("  (none)");
  const cw = Math.max(24, ...r.code.map((f) => f.path.length), r.library?.path.length ?? 0, r.programJson?.path.length ?? 0);
  for (const f of r.code) out.push(`  ${f.path.padEnd(cw)}  ${sizeText(f)}`);
  if (r.programJson) out.push(`  ${r.programJson.path.padEnd(cw)}  ${sizeText(r.programJson)}`);
  if (r.library) {
    out.push(`  ${r.library.path.padEnd(cw)}  ${sizeText(r.library)}, sha256 ${r.library.sha256.slice(0, 16)}… ${r.library.matchesMeta ? "(matches compiled_meta.json)" : "(DOES NOT MATCH compiled_meta.json)"}`);
  }
  if (r.stamp) {
    const s = r.stamp;
    out.push(`  built with ${s.version ?? s.compiler ?? "?"}${s.compileMs !== undefined ? ` in ${fmtInt(s.compileMs)} ms` : ""}${s.flags ? `: ${s.flags.filter((f) => f.startsWith("-") && f !== "-I" && f !== "-o").join(" ")}` : ""}`);
  }
  if (r.report.length) {
    out.push("");
    out.push("report/");
    for (const f of r.report) out.push(`  ${f.path.padEnd(cw)}  ${sizeText(f)}`);
  }
  // dfx
  out.push("");
  if (r.dfx.length) {
    out.push(`dfx outputs (${join(r.dir, DFX_DIR)})`);
    const dw = Math.max(...r.dfx.map((f) => f.path.length));
    for (const f of r.dfx) out.push(`  ${f.path.padEnd(dw)}  ${fmtBytes(f.bytes)}${f.summary ? `  ${f.summary}` : ""}`);
    const names = new Set(r.dfx.map((f) => f.path));
    const hints: string[] = [];
    if (names.has(`${DFX_DIR}/${SWIMLANE_FILE}`)) hints.push("--trace (swimlane.html)");
    if (names.has(`${DFX_DIR}/${DEPS_FILE}`)) hints.push("--graph (deps.html)");
    if (hints.length) out.push(`  render: tspto inspect ${r.dir} ${hints.join(" | ")}`);
  } else {
    out.push(`dfx outputs  none (run with RunConfig({ enableChipSwimlane: true, enableDepGen: true }) to record ${DFX_DIR}/${SWIMLANE_FILE} and ${DFX_DIR}/${DEPS_FILE})`);
  }
  if (r.warnings.length) {
    out.push("");
    out.push("warnings");
    for (const w2 of r.warnings) out.push(`  ! ${w2}`);
  }
  return `${out.join("\n")}\n`;
}

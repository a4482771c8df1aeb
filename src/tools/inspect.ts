// `tspto inspect <outputDir>`: what is inside an artifact directory (CompiledProgram.outputDir):
// metadata, pass dumps, generated code, build outputs, DFX outputs. Reads files only; never
// loads the library or imports the compiler.
//
// The directory is treated as hostile (it may come from anyone): only regular files inside
// it are read (a link, FIFO or device is reported, never followed or opened for reading),
// each within a size limit (FILE_LIMITS); the library is hashed in chunks; names from the
// metadata are checked before they are used as paths; every problem with one file is one
// warning line naming it; and the text report escapes control characters (a program name
// holding terminal escapes prints as \x1b..., never raw).
import { parseTrace, traceSummary } from "./trace.js";
import { closeSync, lstatSync, readdirSync, statSync, type Stats } from "node:fs";
import { join, relative, resolve } from "node:path";
import {
  FILE_LIMITS, KERNELS_DIR, META_FILE, PASSES_DUMP_DIR, PROGRAM_FILE, STAMP_FILE, TsptoArtifactError, badRelativeName, fileKind, hashOpened,
  openInside, readTextInside, validateMeta, type CompiledMeta, type CompiledParam,
} from "../artifact/index.js";
import { DEPS_FILE, DFX_DIR, SWIMLANE_FILE, maxOf } from "./dfx.js";
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

/** The message of a refused read without the path prefix (the warning names the file itself). */
const refusal = (e: unknown, full: string): string => {
  const d = e instanceof TsptoArtifactError ? e.detail : (e as Error).message;
  return d.startsWith(`${full}: `) ? d.slice(full.length + 2) : d;
};

/** Size (and lines for text files) of a regular file; null (with a warning) when it cannot be read. */
function fileInfo(dir: string, rel: string, warnings: string[]): FileInfo | null {
  let st: Stats;
  try { st = lstatSync(join(dir, rel)); } catch (e) { warnings.push(`${rel}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`); return null; }
  if (!st.isFile()) { warnings.push(`${rel} is ${fileKind(st)}, not a regular file; not read`); return null; }
  const info: FileInfo = { path: rel, bytes: st.size };
  if (/\.(cpp|cc|h|hpp|cu|ts|json|md|txt|csv|py|js|html)$/.test(rel) && st.size <= FILE_LIMITS.text) {
    try { info.lines = countLines(readTextInside(dir, rel, { maxBytes: FILE_LIMITS.text })); } catch (e) { warnings.push(`${rel}: ${refusal(e, join(dir, rel))}`); }
  }
  return info;
}

/** Every regular file under dir/sub (relative paths, sorted); anything else found there is a warning, never followed. */
function listFiles(dir: string, sub: string, warnings: string[]): string[] {
  let st: Stats;
  try { st = lstatSync(join(dir, sub)); } catch { return []; }
  if (!st.isDirectory()) {
    warnings.push(`${sub} is ${fileKind(st)}, not a directory; not read`);
    return [];
  }
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    if (depth > 32) { warnings.push(`${rel}: directories nested more than 32 deep; not read further`); return; }
    let names: string[];
    try { names = readdirSync(join(dir, rel)).sort(); } catch (e) { warnings.push(`${rel}: cannot be listed (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`); return; }
    for (const name of names) {
      const r = `${rel}/${name}`;
      let s: Stats;
      try { s = lstatSync(join(dir, r)); } catch { continue; }
      if (s.isDirectory()) walk(r, depth + 1);
      else if (s.isFile()) out.push(r);
      else warnings.push(`${r} is ${fileKind(s)}, not a regular file; not read`);
    }
  };
  walk(sub, 0);
  return out;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * compiled_meta.json, checked enough to report on (every field the report prints has the
 * type it prints; the full check is the runtime's, and its verdict is a warning).
 */
function readMeta(dir: string, warnings: string[]): CompiledMeta {
  const file = join(dir, META_FILE);
  let st: Stats | null = null;
  try { st = lstatSync(file); } catch { /* missing */ }
  if (!st) {
    const all = readdirSync(dir);
    const present = all.slice(0, 8);
    throw new InspectError(`${dir} is not a tspto artifact directory: ${META_FILE} is missing` +
      `${present.length ? ` (found: ${present.join(", ")}${all.length > 8 ? ", ..." : ""})` : " (the directory is empty)"}.\n` +
      `  An artifact directory is CompiledProgram.outputDir (e.g. ir.compile(program, { outputDir })); it holds ${META_FILE}, program.json, kernels/, build/.`);
  }
  let text: string;
  try { text = readTextInside(dir, META_FILE, { maxBytes: FILE_LIMITS.meta }); } catch (e) {
    throw new InspectError(`${file}: ${refusal(e, file)}`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new InspectError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  if (!isObj(v)) throw new InspectError(`${file}: expected a JSON object`);
  const o = v;
  if (o.schema !== META_SCHEMA) {
    throw new InspectError(`${file}: not tspto metadata: field 'schema' is ${o.schema === undefined ? "missing" : JSON.stringify(o.schema)} (expected "${META_SCHEMA}")`);
  }
  for (const k of ["name", "platform", "params", "kernels"]) {
    if (!(k in o)) throw new InspectError(`${file}: missing field '${k}'`);
  }
  const bad = (field: string, rule: string, got: unknown): never => {
    let shown: string;
    try { shown = JSON.stringify(got) ?? String(got); } catch { shown = String(got); }
    throw new InspectError(`${file}: field '${field}' ${rule}, got ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown}`);
  };
  const str = (f: string, x: unknown, optional = false) => { if (!(optional && x === undefined) && typeof x !== "string") bad(f, "must be a string", x); };
  const num = (f: string, x: unknown, optional = false) => { if (!(optional && x === undefined) && (typeof x !== "number" || !Number.isFinite(x))) bad(f, "must be a number", x); };
  const arr = (f: string, x: unknown, optional = false): unknown[] => { if (optional && x === undefined) return []; if (!Array.isArray(x)) bad(f, "must be an array", x); return x as unknown[]; };
  str("name", o.name); str("platform", o.platform);
  for (const k of ["entry", "backendType", "runtimeName", "tspto", "createdAt"]) str(k, o[k], true);
  num("scratchBytes", o.scratchBytes, true);
  if (o.hasReturn !== undefined && typeof o.hasReturn !== "boolean") bad("hasReturn", "must be a boolean", o.hasReturn);
  arr("params", o.params).forEach((p, i) => {
    const f = `params[${i}]`;
    if (!isObj(p)) bad(f, "must be an object", p);
    const q = p as Record<string, unknown>;
    for (const k of ["name", "kind", "direction", "dtype"]) str(`${f}.${k}`, q[k]);
    if (q.kind === "tensor") arr(`${f}.shape`, q.shape, true).forEach((d, k) => num(`${f}.shape[${k}]`, d));
    arr(`${f}.dimNames`, q.dimNames, true).forEach((n, k) => { if (n !== null && typeof n !== "string") bad(`${f}.dimNames[${k}]`, "must be a string or null", n); });
    if (q.value !== undefined && typeof q.value !== "number" && typeof q.value !== "boolean") bad(`${f}.value`, "must be a number or a boolean", q.value);
  });
  for (const k of ["outputIndices", "returns"]) arr(k, o[k], true).forEach((x, i) => { if (!Number.isInteger(x)) bad(`${k}[${i}]`, "must be an integer", x); });
  arr("kernels", o.kernels).forEach((k, i) => {
    const f = `kernels[${i}]`;
    if (!isObj(k)) bad(f, "must be an object", k);
    str(`${f}.name`, (k as Record<string, unknown>).name); str(`${f}.symbol`, (k as Record<string, unknown>).symbol); num(`${f}.scratchBytes`, (k as Record<string, unknown>).scratchBytes);
  });
  if (o.library !== undefined && o.library !== null) str("library", o.library);
  if (o.libraryHash !== undefined && o.libraryHash !== null) str("libraryHash", o.libraryHash);
  try {
    validateMeta(o, file);
  } catch (e) {
    warnings.push(`${META_FILE}: ${refusal(e, file)}; the runtime will refuse this artifact`);
  }
  return o as unknown as CompiledMeta;
}

/** A one-line description of a DFX file in a known format, or undefined. */
function dfxSummary(dir: string, rel: string, name: string): string | undefined {
  if (name !== SWIMLANE_FILE && name !== DEPS_FILE) return undefined;
  const full = join(dir, rel);
  try {
    const j = JSON.parse(readTextInside(dir, rel, { maxBytes: FILE_LIMITS.dfx })) as unknown;
    if (name === SWIMLANE_FILE) {
      const evs = Array.isArray(j) ? j : (j as { traceEvents?: unknown[] })?.traceEvents;
      if (!Array.isArray(evs)) return "not a Chrome trace (no traceEvents array)";
      // the same model and summary line as the swimlane page (--trace)
      const m = parseTrace(j, full);
      const idle = m.tracks.filter((t) => !t.orchestration && !t.tasks.length && t.idle).map((t) => `${t.label}: ${t.idle}`);
      return traceSummary(m) + (idle.length ? `; ${idle.join("; ")}` : "");
    }
    const g = j as { tasks?: unknown[]; edges?: unknown[] };
    if (!Array.isArray(g?.tasks) || !Array.isArray(g?.edges)) return "not a dependency graph (needs 'tasks' and 'edges' arrays)";
    return `${fmtInt(g.tasks.length)} tasks, ${fmtInt(g.edges.length)} dependencies`;
  } catch (e) {
    return `unreadable (${refusal(e, full).split("\n")[0]})`;
  }
}

/** Read an artifact directory. Throws InspectError (naming the path and what is missing). */
export function inspectArtifact(dirArg: string): InspectReport {
  const dir = resolve(dirArg);
  let st: Stats;
  try { st = statSync(dir); } catch { throw new InspectError(`no such directory: ${dir}`); }
  if (!st.isDirectory()) throw new InspectError(`${dir} is not a directory (give the artifact directory, CompiledProgram.outputDir)`);
  const warnings: string[] = [];
  const meta = readMeta(dir, warnings);

  // passes
  const passes: PassDumpInfo[] = [];
  const dumpFiles = listFiles(dir, PASSES_DUMP_DIR, warnings);
  const names = new Set(dumpFiles.map((f) => f.slice(PASSES_DUMP_DIR.length + 1)));
  const stems = [...names].map((n) => /^(\d+)_after_(.+)\.ts$/.exec(n)).filter((m): m is RegExpExecArray => !!m)
    .sort((a, b) => Number(a[1]) - Number(b[1]) || (a[2] < b[2] ? -1 : 1));
  let prev: string | null = null;
  for (const m of stems) {
    const file = `${PASSES_DUMP_DIR}/${m[0]}`;
    let text: string;
    try { text = readTextInside(dir, file, { maxBytes: FILE_LIMITS.text }); } catch (e) { warnings.push(`${file}: ${refusal(e, join(dir, file))}`); continue; }
    passes.push({
      index: Number(m[1]), pass: m[2], file, lines: countLines(text), bytes: Buffer.byteLength(text),
      json: names.has(m[0].replace(/\.ts$/, ".json")), unchanged: prev !== null && prev === text,
    });
    prev = text;
  }

  // generated code and build outputs
  const infos = (files: string[]) => files.map((p) => fileInfo(dir, p, warnings)).filter((f): f is FileInfo => f !== null);
  const code = infos([...listFiles(dir, KERNELS_DIR, warnings), ...listFiles(dir, "orchestration", warnings)]);
  let library: InspectReport["library"] = null;
  const libRel = meta.library;
  if (libRel) {
    const why = badRelativeName(libRel);
    if (why) {
      warnings.push(`compiled_meta.json names the library ${JSON.stringify(libRel)}, which ${why}; not read (the runtime refuses it)`);
    } else {
      try {
        const f = openInside(dir, libRel, { maxBytes: FILE_LIMITS.library, what: "the library named by compiled_meta.json" });
        try {
          const { sha256, bytes } = hashOpened(f);
          const matchesMeta = !meta.libraryHash || meta.libraryHash === sha256;
          if (!matchesMeta) warnings.push(`${libRel}: sha256 ${sha256.slice(0, 12)}… does not match compiled_meta.json libraryHash ${String(meta.libraryHash).slice(0, 12)}…; the runtime will refuse to load it`);
          library = { path: libRel, bytes, sha256, matchesMeta };
        } finally {
          closeSync(f.fd);
        }
      } catch (e) {
        const full = join(dir, libRel);
        const d = refusal(e, full);
        warnings.push(/is missing$/.test(d) ? `${libRel} is named by compiled_meta.json but missing` : `${libRel}: ${d}`);
      }
    }
  }
  let stamp: InspectReport["stamp"] = null;
  let stampSt: Stats | null = null;
  try { stampSt = lstatSync(join(dir, STAMP_FILE)); } catch { /* none */ }
  if (stampSt) {
    try {
      const j = JSON.parse(readTextInside(dir, STAMP_FILE, { maxBytes: FILE_LIMITS.meta })) as unknown;
      if (!isObj(j)) throw new Error("not a JSON object");
      // only the fields the report prints, each of the type it prints
      stamp = {};
      if (typeof j.compiler === "string") stamp.compiler = j.compiler;
      if (typeof j.version === "string") stamp.version = j.version;
      if (Array.isArray(j.flags) && j.flags.every((f) => typeof f === "string")) stamp.flags = j.flags as string[];
      if (typeof j.compileMs === "number" && Number.isFinite(j.compileMs)) stamp.compileMs = j.compileMs;
    } catch (e) {
      warnings.push(e instanceof SyntaxError ? `${STAMP_FILE} is not valid JSON` : `${STAMP_FILE}: ${refusal(e, join(dir, STAMP_FILE))}`);
    }
  }
  if (meta.library && !code.some((f) => f.path.startsWith(`${KERNELS_DIR}/`))) warnings.push(`${KERNELS_DIR}/ holds no generated source for ${meta.library}`);
  let programJson: FileInfo | null = null;
  try { lstatSync(join(dir, PROGRAM_FILE)); programJson = fileInfo(dir, PROGRAM_FILE, warnings); } catch { warnings.push("program.json is missing"); }
  const report = infos(listFiles(dir, "report", warnings));
  const dfx: DfxFileInfo[] = infos(listFiles(dir, DFX_DIR, warnings)).map((f) => {
    const info: DfxFileInfo = f;
    const summary = dfxSummary(dir, f.path, relative(DFX_DIR, f.path));
    if (summary) info.summary = summary;
    return info;
  });
  return { dir, meta, warnings, passes, code, library, stamp, programJson, report, dfx };
}

/**
 * `s` with control characters (C0, DEL, C1) and bidirectional-override characters written
 * as escapes (\x1b, \u202e): text from an artifact directory never drives the terminal.
 */
export function escapeControls(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x100 ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
  });
}

/** A copy of `v` with every string escaped (escapeControls). */
function escapeDeep<T>(v: T): T {
  if (typeof v === "string") return escapeControls(v) as T;
  if (Array.isArray(v)) return v.map(escapeDeep) as T;
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, escapeDeep(x)])) as T;
  return v;
}

/** The report as JSON (`--json`): JSON escapes C0 controls itself; DEL, C1 and bidi controls are escaped too. */
export function reportJson(r: InspectReport): string {
  // eslint-disable-next-line no-control-regex
  return JSON.stringify(r, null, 2).replace(/[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function paramLine(p: CompiledParam, i: number, w: number): string {
  const type = p.kind === "tensor" ? `tensor [${(p.shape ?? []).map((d, k) => (d === -1 ? JSON.stringify(p.dimNames?.[k] ?? "?") : d)).join(", ")}] ${p.dtype}` : `scalar ${p.dtype}${p.value !== undefined ? ` = ${p.value} (specialized)` : ""}`;
  return `    ${String(i).padStart(2)}  ${p.name.padEnd(w)}  ${p.direction.padEnd(5)}  ${type}`;
}

const sizeText = (f: FileInfo) => `${fmtBytes(f.bytes)}${f.bytes >= 1024 ? ` (${fmtInt(f.bytes)} B)` : ""}${f.lines !== undefined ? `, ${fmtInt(f.lines)} line${f.lines === 1 ? "" : "s"}` : ""}`;

/** The human-readable summary printed by `tspto inspect`. */
export function formatReport(report: InspectReport): string {
  const r = escapeDeep(report);
  const m = r.meta;
  const out: string[] = [];
  out.push(`tspto artifact: ${r.dir}`);
  out.push(`  program    ${m.name}${m.entry && m.entry !== m.name ? ` (entry ${m.entry})` : ""}`);
  out.push(`  platform   ${m.platform}${m.backendType ? ` (backend ${m.backendType}, runtime ${m.runtimeName})` : ""}`);
  if (m.tspto || m.createdAt) out.push(`  built      ${[m.tspto ? `by tspto ${m.tspto}` : "", m.createdAt ? `at ${m.createdAt}` : ""].filter(Boolean).join(" ")}`);
  // params / outputs
  const w = Math.max(4, maxOf(m.params, (p) => p.name.length));
  out.push(`  params     ${m.params.length}`);
  m.params.forEach((p, i) => out.push(paramLine(p, i, w)));
  const outs = (m.outputIndices ?? []).map((i) => m.params[i]?.name ?? `#${i}`);
  out.push(`  outputs    ${outs.length ? outs.join(", ") : "(none)"}`);
  if (m.hasReturn !== undefined) out.push(`  returns    ${m.hasReturn ? (m.returns ?? []).map((i) => m.params[i]?.name ?? `#${i}`).join(", ") : "(nothing)"}`);
  out.push(`  scratch    ${fmtInt(m.scratchBytes ?? 0)} bytes per core (largest kernel)`);
  out.push(`  kernels    ${m.kernels.length}`);
  const kw = Math.max(4, maxOf(m.kernels, (k) => k.name.length));
  for (const k of m.kernels) out.push(`    ${k.name.padEnd(kw)}  symbol ${k.symbol}, scratch ${fmtInt(k.scratchBytes)} B`);
  // passes
  out.push("");
  if (r.passes.length) {
    out.push(`passes (${r.passes.length} dumps in ${join(r.dir, PASSES_DUMP_DIR)})`);
    const pw = maxOf(r.passes, (p) => p.pass.length);
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
  const cw = Math.max(24, maxOf(r.code, (f) => f.path.length), r.library?.path.length ?? 0, r.programJson?.path.length ?? 0);
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
    const dw = maxOf(r.dfx, (f) => f.path.length);
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

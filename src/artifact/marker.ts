// The artifact marker (`.artifact_key`): the proof that tspto wrote a directory, and the list
// of what it wrote there. tspto deletes only the files its marker lists, nothing else.
//
//   tspto-artifact 1
//   key <sha256 hex>            ("key incomplete" while the directory is being built)
//   file compiled_meta.json     one line per file tspto wrote, relative to the directory
//   file kernels/program.cpp
//   ...
//
// Files written later (DFX recordings of a launch, pass dumps of a reuse, pages of
// `tspto inspect`) are appended as further `file` lines (O_APPEND: concurrent writers do not
// clobber each other's lines). A marker holding only a key or "incomplete" was written by
// tspto up to 0.1 before it recorded files; the files it wrote then are the layout's
// (LEGACY_ARTIFACT_FILES). Anything else in `.artifact_key` (an empty file, other text) is
// not a marker: such a directory is not tspto's to replace.
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, rmdirSync, unlinkSync, writeSync, type Stats } from "node:fs";
import { join } from "node:path";
import { badRelativeName, readTextInside, FILE_LIMITS } from "./files.js";
import { KEY_FILE, LEGACY_ARTIFACT_FILES } from "./layout.js";

const HEADER = "tspto-artifact 1";
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

export interface Marker {
  /** The content key; null while the directory is incomplete. */
  readonly key: string | null;
  /** The files tspto wrote (relative paths); null for a marker of tspto up to 0.1 (the layout's files). */
  readonly files: ReadonlySet<string> | null;
}

/** The text of a marker. */
export function formatMarker(key: string | null, files: Iterable<string>): string {
  const lines = [HEADER, `key ${key ?? "incomplete"}`];
  for (const f of files) if (f !== KEY_FILE && !badRelativeName(f) && !/\s/.test(f)) lines.push(`file ${f}`);
  return `${lines.join("\n")}\n`;
}

/** Parses a marker's text: the marker, or null when the text is not one. */
export function parseMarker(text: string): Marker | null {
  const legacy = /^(incomplete|[0-9a-f]{64})\n?$/.exec(text);
  if (legacy) return { key: legacy[1] === "incomplete" ? null : legacy[1], files: null };
  const lines = text.split("\n");
  if (lines[0] !== HEADER) return null;
  let key: string | null | undefined;
  const files = new Set<string>();
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i];
    if (l === "") continue;
    const sp = l.indexOf(" ");
    const kind = sp < 0 ? l : l.slice(0, sp), arg = sp < 0 ? "" : l.slice(sp + 1);
    if (kind === "key" && key === undefined && /^([0-9a-f]{64}|incomplete)$/.test(arg)) key = arg === "incomplete" ? null : arg;
    else if (kind === "file" && !badRelativeName(arg)) files.add(arg);
    else return null;
  }
  if (key === undefined) return null;
  return { key, files };
}

/**
 * The marker of `dir`: the marker, `null` when there is no `.artifact_key`, or `"invalid"`
 * when there is one that is not a marker (or not a regular file).
 */
export function readMarker(dir: string): Marker | null | "invalid" {
  let st: Stats;
  try { st = lstatSync(join(dir, KEY_FILE)); } catch { return null; }
  if (!st.isFile()) return "invalid";
  try {
    return parseMarker(readTextInside(dir, KEY_FILE, { maxBytes: FILE_LIMITS.meta })) ?? "invalid";
  } catch {
    return "invalid";
  }
}

/** The key recorded in `dir`'s marker, or null (no marker, an incomplete one, not a marker). */
export function markerKey(dir: string): string | null {
  const m = readMarker(dir);
  return m && m !== "invalid" ? m.key : null;
}

/** Whether tspto wrote `rel` in a directory with this marker. */
export function wroteFile(m: Marker, rel: string): boolean {
  if (rel === KEY_FILE) return true;
  return m.files ? m.files.has(rel) : LEGACY_ARTIFACT_FILES.some((re) => re.test(rel));
}

/**
 * Records files tspto just wrote into `dir` (relative paths) in its marker, when `dir` holds
 * a marker of this format (best effort: a directory without one is not an artifact).
 */
export function recordFiles(dir: string, rels: readonly string[]): void {
  const lines = rels.filter((r) => !badRelativeName(r) && !/\s/.test(r)).map((r) => `file ${r}\n`).join("");
  if (!lines) return;
  let fd: number;
  try { fd = openSync(join(dir, KEY_FILE), constants.O_WRONLY | constants.O_APPEND | O_NOFOLLOW); } catch { return; }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return;
    const m = readMarker(dir);
    if (!m || m === "invalid" || m.files === null) return; // (a marker of 0.1 lists nothing: its layout covers these files)
    writeSync(fd, lines);
  } catch {
    /* best effort: an unrecorded file is only never deleted */
  } finally {
    closeSync(fd);
  }
}

export interface Tree {
  /** Every entry that is not a directory (files, links, FIFOs...), relative, in walk order. */
  readonly files: string[];
  /** Every directory, relative, parents before children. */
  readonly dirs: string[];
}

/** The entries under `dir` (links are entries, never followed). */
export function listTree(dir: string): Tree {
  const files: string[] = [], dirs: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(rel ? join(dir, rel) : dir).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) { dirs.push(r); walk(r); } else files.push(r);
    }
  };
  walk("");
  return { files, dirs };
}

/**
 * Deletes the files of `dir` that tspto wrote (per `m`; only under `prefix` when given), then
 * the directories that became empty, `dir` itself too when it is empty and no prefix is given.
 * Returns what was left (files tspto did not write).
 */
export function removeWritten(dir: string, m: Marker, prefix?: string): string[] {
  let tree: Tree;
  try { tree = listTree(dir); } catch { return []; }
  const under = (r: string) => prefix === undefined || r === prefix || r.startsWith(`${prefix}/`);
  const left: string[] = [];
  for (const f of tree.files) {
    if (!under(f)) continue;
    if (wroteFile(m, f) && f !== KEY_FILE) {
      try { unlinkSync(join(dir, f)); } catch { left.push(f); }
    } else if (f !== KEY_FILE) {
      left.push(f);
    }
  }
  for (const d of [...tree.dirs].reverse()) {
    if (!under(d)) continue;
    try { rmdirSync(join(dir, d)); } catch { /* not empty: holds what tspto did not write */ }
  }
  if (prefix === undefined) {
    if (left.length === 0) { try { unlinkSync(join(dir, KEY_FILE)); } catch { /* gone */ } }
    try { rmdirSync(dir); } catch { /* not empty */ }
  }
  return left;
}

// Writing artifact directories. Every directory is built under a temporary name next to its
// final place and renamed into place, so concurrent processes never see half an artifact; a
// complete directory with the same content key is reused as is. A directory is replaced only
// when it is empty or holds a tspto marker (marker.ts), and then only the files the marker
// lists are deleted: whatever else is there (a README, a src/ directory) is moved into the
// new artifact, and a name the new artifact needs that holds a file tspto did not write is an
// error before anything changes. Nothing a user put in an `outputDir` is ever deleted.
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { FILE_LIMITS, checkDirInside, hashOpened, openInside, readTextInside } from "./files.js";
import { KEY_FILE, META_FILE, PASSES_DUMP_DIR } from "./layout.js";
import { formatMarker, listTree, markerKey, readMarker, recordFiles, removeWritten, wroteFile, type Marker } from "./marker.js";
import { TsptoArtifactError, metaText, validateMeta, type CompiledMeta } from "./meta.js";
import { defaultArtifactRoot } from "./private_dir.js";

export interface ArtifactDump {
  /** Pass name ("Simplify") or a dump file stem ("03_after_Simplify"). */
  name: string;
  /** The program printed as kernel source (written as .ts). */
  text: string;
  /** Optional program JSON (written next to it as .json). */
  json?: string;
}

export const sha256 = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");
export const safeName = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64) || "program";
const rand = (): string => randomBytes(4).toString("hex");

/** Writes `file` through a temporary file and a rename (readers see the old or the new content). */
export function writeAtomic(file: string, data: string | Uint8Array, mode = 0o644): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${rand()}`;
  writeFileSync(tmp, data, { mode, flag: "wx" });
  renameSync(tmp, file);
}

function dumpStem(d: ArtifactDump, i: number): string {
  const n = d.name.replace(/\.(ts|json)$/, "");
  return /^\d+_after_/.test(n) ? safeName(n) : `${String(i).padStart(2, "0")}_after_${safeName(n)}`;
}

/**
 * passes_dump/NN_after_<Pass>.ts (+ .json). `atomic`: into a finished artifact directory (the
 * files are written through a rename and recorded in its marker).
 */
export function writeDumps(dir: string, dumps: readonly ArtifactDump[] | undefined, atomic: boolean): void {
  if (!dumps || !dumps.length) return;
  checkDirInside(dir, PASSES_DUMP_DIR);
  mkdirSync(join(dir, PASSES_DUMP_DIR), { recursive: true, mode: 0o755 });
  const written: string[] = [];
  dumps.forEach((d, i) => {
    const stem = `${PASSES_DUMP_DIR}/${dumpStem(d, i)}`;
    const w = atomic ? writeAtomic : (f: string, s: string) => writeFileSync(f, s);
    w(join(dir, `${stem}.ts`), d.text);
    written.push(`${stem}.ts`);
    if (d.json !== undefined) { w(join(dir, `${stem}.json`), d.json); written.push(`${stem}.json`); }
  });
  if (atomic) recordFiles(dir, written);
}

/**
 * The metadata of a complete artifact with this key at `dir` (its marker's key, valid
 * metadata, a library matching its hash), or null.
 */
export function reuseArtifact(dir: string, key: string): CompiledMeta | null {
  try {
    if (markerKey(dir) !== key) return null;
    const meta = validateMeta(readTextInside(dir, META_FILE, { maxBytes: FILE_LIMITS.meta }), join(dir, META_FILE));
    if (meta.library) {
      const f = openInside(dir, meta.library, { maxBytes: FILE_LIMITS.library });
      try { if (hashOpened(f).sha256 !== meta.libraryHash) return null; } finally { closeSync(f.fd); }
    }
    return meta;
  } catch {
    return null;
  }
}

const REPLACE_HINT = "choose a new or empty directory (or a directory that holds a tspto artifact) as outputDir / saveKernelsDir";

/**
 * Throws unless `dir` may be replaced by an artifact: it does not exist, is empty, or holds
 * a tspto marker (see marker.ts; only the files it lists are ever deleted).
 */
export function checkReplaceable(dir: string): void {
  let st;
  try { st = lstatSync(dir); } catch { return; }
  if (st.isSymbolicLink()) {
    throw new TsptoArtifactError(`outputDir ${dir} is a symbolic link; tspto does not replace a link`, "give the directory it points to as outputDir");
  }
  if (!st.isDirectory()) {
    throw new TsptoArtifactError(`outputDir ${dir} exists and is not a directory`, "choose a new or empty directory for the artifacts");
  }
  const entries = readdirSync(dir);
  if (entries.length === 0) return;
  const m = readMarker(dir);
  if (m && m !== "invalid") return;
  const shown = entries.slice(0, 5).join(", ") + (entries.length > 5 ? `, … (${entries.length} entries)` : "");
  if (m === "invalid") {
    throw new TsptoArtifactError(`outputDir ${dir} holds a ${KEY_FILE} that is not a tspto artifact marker, so tspto cannot tell which of its files (${shown}) it wrote; it changes nothing there`, REPLACE_HINT);
  }
  throw new TsptoArtifactError(`outputDir ${dir} holds files tspto did not write (${shown}); tspto never deletes them`, REPLACE_HINT);
}

/**
 * Ends the writing of a temporary artifact directory: group/other write bits off everything
 * in it (a directory tspto loads code from must not be writable by others, whatever the
 * umask), and the marker listing every file in it, with `key` (null: incomplete).
 */
export function sealArtifact(tmp: string, key: string | null): void {
  const tree = listTree(tmp);
  for (const r of [...tree.dirs, ...tree.files]) {
    const st = lstatSync(join(tmp, r));
    if (!st.isSymbolicLink() && (st.mode & 0o022) !== 0) chmodSync(join(tmp, r), st.mode & 0o7755);
  }
  writeFileSync(join(tmp, KEY_FILE), formatMarker(key, tree.files), { mode: 0o644 });
}

/** Creates the temporary directory an artifact for `outputDir` is written into (with an incomplete marker). */
export function startArtifact(outputDir: string): string {
  mkdirSync(dirname(outputDir), { recursive: true });
  const tmp = `${outputDir}.tmp-${process.pid}-${rand()}`;
  mkdirSync(tmp, { mode: 0o755 });
  // the marker first: even a partial directory (left for the user after a failed build) is ours to replace
  writeFileSync(join(tmp, KEY_FILE), formatMarker(null, []), { mode: 0o644 });
  return tmp;
}

const errno = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/**
 * Moves the sealed directory `tmp` to `dir`. A `dir` that exists must be replaceable
 * (checkReplaceable): the files its marker lists are deleted, every other entry is moved
 * into the new directory at the same place; a name both need is an error before anything
 * is changed.
 */
export function installArtifact(tmp: string, dir: string): void {
  try {
    renameSync(tmp, dir);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EPERM" && code !== "EISDIR" && code !== "ENOTDIR") throw e;
  }
  checkReplaceable(dir);
  const m = readMarker(dir);
  if (!m || m === "invalid") { renameSync(tmp, dir); return; } // (emptied meanwhile)
  const { theirs, clash } = entriesNotWritten(dir, m, tmp);
  if (clash.length) {
    throw new TsptoArtifactError(`outputDir ${dir}: ${clash.slice(0, 5).join(", ")}${clash.length > 5 ? `, … (${clash.length})` : ""} ${clash.length === 1 ? "was" : "were"} not written by tspto (not in its ${KEY_FILE}) and the new artifact needs ${clash.length === 1 ? "that name" : "those names"}; tspto never overwrites them, and changed nothing`,
      "move those files out of the directory, or choose another outputDir / saveKernelsDir");
  }
  const old = `${dir}.old-${process.pid}-${rand()}`;
  renameSync(dir, old);
  try {
    renameSync(tmp, dir);
  } catch (e) {
    renameSync(old, dir);
    throw e;
  }
  // the user's entries into the new directory, then the old artifact's own files away
  for (const r of theirs) {
    try {
      mkdirSync(dirname(join(dir, r)), { recursive: true, mode: 0o755 });
      renameSync(join(old, r), join(dir, r));
    } catch (e) {
      throw new TsptoArtifactError(`outputDir ${dir} was replaced, but moving ${r} back into it failed (${errno(e)}); it and the rest of the old directory are kept in ${old}`,
        `move them back by hand; tspto deleted nothing`);
    }
  }
  removeWritten(old, m);
}

/**
 * The entries of `dir` tspto did not write (per `m`), each the topmost one to move into the
 * new directory `tmp`: a directory holding no file tspto wrote, and absent from `tmp`, is one
 * entry (moved whole); one that `tmp` has too is entered. `clash`: those whose name `tmp`
 * already uses (or whose parent is a file there).
 */
function entriesNotWritten(dir: string, m: Marker, tmp: string): { theirs: string[]; clash: string[] } {
  const tree = listTree(dir);
  const holdsWritten = new Set<string>();
  for (const f of tree.files) {
    if (!wroteFile(m, f)) continue;
    for (let p = dirname(f); p !== "."; p = dirname(p)) holdsWritten.add(p);
  }
  const kindIn = (r: string): "dir" | "other" | null => {
    try { return lstatSync(join(tmp, r)).isDirectory() ? "dir" : "other"; } catch { return null; }
  };
  const theirs: string[] = [], clash: string[] = [];
  const walk = (rel: string, parentInTmp: boolean) => {
    for (const name of readdirSync(rel ? join(dir, rel) : dir).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const isDir = lstatSync(join(dir, r)).isDirectory();
      const there = parentInTmp ? kindIn(r) : null;
      if (isDir && (holdsWritten.has(r) || there === "dir")) { walk(r, there === "dir"); continue; }
      if (!isDir && wroteFile(m, r)) continue;
      (there !== null ? clash : theirs).push(r);
    }
  };
  walk("", true);
  return { theirs, clash };
}

/**
 * Deletes an artifact directory tspto wrote: the files its marker lists and the directories
 * that become empty; anything else stays (a directory without a valid marker is not touched).
 * Returns the entries left.
 */
export function removeArtifact(dir: string): string[] {
  const m = readMarker(dir);
  if (!m || m === "invalid") return existsSync(dir) ? ["(not a tspto artifact: nothing deleted)"] : [];
  return removeWritten(dir, m);
}

export interface WriteArtifactOptions {
  /** Program name (the default directory's name starts with it). */
  readonly name: string;
  /** Content key: the same key at the same place is reused without building. */
  readonly key: string;
  /** Default: `<private artifact root>/<name>-<key>`. */
  readonly outputDir?: string;
  readonly dumps?: readonly ArtifactDump[];
}

export interface ArtifactFill {
  /** The temporary directory to write into. */
  readonly dir: string;
  /**
   * Installs what was written so far at the final place (when nothing complete is there) so
   * that a user can read it after a failure; returns where it is.
   */
  publishPartial(): string;
}

/**
 * Installs the partial artifact `tmp` (a build that failed) at `outputDir` when no complete
 * artifact is there, so that the user can read its source; returns where it is (`outputDir`,
 * or `tmp` left in place).
 */
export function publishPartialArtifact(tmp: string, outputDir: string): string {
  sealArtifact(tmp, null);
  if (existsSync(join(outputDir, META_FILE))) return tmp;
  installArtifact(tmp, outputDir);
  return outputDir;
}

/**
 * Writes an artifact directory: `fill` writes the target's files into a temporary directory
 * and returns the metadata; the metadata, key and dumps are added and the directory is
 * renamed into place. Returns the final directory and the metadata.
 */
export function writeArtifact(opts: WriteArtifactOptions, fill: (f: ArtifactFill) => CompiledMeta): { outputDir: string; meta: CompiledMeta } {
  // (fill never yields: the steps run to their end in one next())
  const r = writeArtifactSteps<never, never>(opts, function* (f) { return fill(f); }).next();
  if (!r.done) throw new Error("tspto internal error: writeArtifact's fill yielded");
  return r.value;
}

/**
 * writeArtifact with a `fill` that is a generator (the steps of a build that run child
 * processes, src/targets/steps.ts): what it yields is passed through, so the build runs its
 * processes synchronously or not.
 */
export function* writeArtifactSteps<Y, R>(opts: WriteArtifactOptions, fill: (f: ArtifactFill) => Generator<Y, CompiledMeta, R>): Generator<Y, { outputDir: string; meta: CompiledMeta }, R> {
  const outputDir = resolve(opts.outputDir ?? join(defaultArtifactRoot(), `${safeName(opts.name)}-${opts.key.slice(0, 16)}`));
  const reused = reuseArtifact(outputDir, opts.key);
  if (reused) {
    writeDumps(outputDir, opts.dumps, true);
    return { outputDir, meta: reused };
  }
  checkReplaceable(outputDir);
  const tmp = startArtifact(outputDir);
  let keepTmp = false;
  try {
    const meta = yield* fill({
      dir: tmp,
      publishPartial: () => {
        const where = publishPartialArtifact(tmp, outputDir);
        keepTmp = where === tmp;
        return where;
      },
    });
    writeDumps(tmp, opts.dumps, false);
    validateMeta(meta, join(outputDir, META_FILE)); // what we write must read back
    writeFileSync(join(tmp, META_FILE), metaText(meta));
    sealArtifact(tmp, opts.key);
    // install: another process may have finished the same artifact first -> use theirs
    try {
      renameSync(tmp, outputDir);
    } catch {
      const theirs = reuseArtifact(outputDir, opts.key);
      if (theirs) {
        rmSync(tmp, { recursive: true, force: true });
        writeDumps(outputDir, opts.dumps, true);
        return { outputDir, meta: theirs };
      }
      installArtifact(tmp, outputDir);
    }
    return { outputDir, meta };
  } catch (e) {
    if (!keepTmp && existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Program JSON with variable ids renumbered in order of appearance: the same program built
 * in another process (other global ids) gets the same artifact key.
 */
export function canonicalJSON(json: unknown): string {
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

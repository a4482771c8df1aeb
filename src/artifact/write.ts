// Writing artifact directories. Every directory is built under a temporary name next to its
// final place and renamed into place, so concurrent processes never see half an artifact; a
// complete directory with the same content key is reused as is. A directory is replaced only
// when tspto wrote it (it holds the key marker) or it is empty: nothing a user put in an
// `outputDir` is ever deleted.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { KEY_FILE, META_FILE, PASSES_DUMP_DIR } from "./layout.js";
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
export function writeAtomic(file: string, data: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${rand()}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

function dumpStem(d: ArtifactDump, i: number): string {
  const n = d.name.replace(/\.(ts|json)$/, "");
  return /^\d+_after_/.test(n) ? safeName(n) : `${String(i).padStart(2, "0")}_after_${safeName(n)}`;
}

/** passes_dump/NN_after_<Pass>.ts (+ .json). */
export function writeDumps(dir: string, dumps: readonly ArtifactDump[] | undefined, atomic: boolean): void {
  if (!dumps || !dumps.length) return;
  mkdirSync(join(dir, PASSES_DUMP_DIR), { recursive: true });
  dumps.forEach((d, i) => {
    const stem = join(dir, PASSES_DUMP_DIR, dumpStem(d, i));
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

/**
 * Throws unless `dir` may be replaced by an artifact: it does not exist, is empty, or holds
 * an artifact tspto wrote (the key marker or compiled_meta.json).
 */
export function checkReplaceable(dir: string): void {
  let st;
  try { st = statSync(dir); } catch { return; }
  if (!st.isDirectory()) {
    throw new TsptoArtifactError(`outputDir ${dir} exists and is not a directory`, "choose a new or empty directory for the artifacts");
  }
  const entries = readdirSync(dir);
  if (entries.length === 0 || entries.includes(KEY_FILE) || entries.includes(META_FILE)) return;
  const shown = entries.slice(0, 5).join(", ") + (entries.length > 5 ? `, … (${entries.length} entries)` : "");
  throw new TsptoArtifactError(`outputDir ${dir} holds files tspto did not write (${shown}); tspto never deletes them`,
    "choose a new or empty directory (or a directory that holds a tspto artifact) as outputDir / saveKernelsDir");
}

/** Moves `tmp` to `dir`, replacing what is there (only a replaceable directory). */
function replaceDir(tmp: string, dir: string): void {
  try {
    renameSync(tmp, dir);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOTEMPTY" && code !== "EEXIST" && code !== "EPERM" && code !== "EISDIR") throw e;
  }
  checkReplaceable(dir);
  const old = `${dir}.old-${process.pid}-${rand()}`;
  try {
    renameSync(dir, old);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  renameSync(tmp, dir);
  rmSync(old, { recursive: true, force: true });
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
 * Writes an artifact directory: `fill` writes the target's files into a temporary directory
 * and returns the metadata; the metadata, key and dumps are added and the directory is
 * renamed into place. Returns the final directory and the metadata.
 */
export function writeArtifact(opts: WriteArtifactOptions, fill: (f: ArtifactFill) => CompiledMeta): { outputDir: string; meta: CompiledMeta } {
  const outputDir = resolve(opts.outputDir ?? join(defaultArtifactRoot(), `${safeName(opts.name)}-${opts.key.slice(0, 16)}`));
  const reused = tryReuse(outputDir, opts.key);
  if (reused) {
    writeDumps(outputDir, opts.dumps, true);
    return { outputDir, meta: reused };
  }
  checkReplaceable(outputDir);
  mkdirSync(dirname(outputDir), { recursive: true });
  const tmp = `${outputDir}.tmp-${process.pid}-${rand()}`;
  mkdirSync(tmp, { recursive: true });
  // the marker first: even a partial directory (left for the user after a failed build) is ours to replace
  writeFileSync(join(tmp, KEY_FILE), "incomplete\n");
  let keepTmp = false;
  try {
    const meta = fill({
      dir: tmp,
      publishPartial: () => {
        if (!existsSync(join(outputDir, META_FILE))) {
          replaceDir(tmp, outputDir);
          return outputDir;
        }
        keepTmp = true;
        return tmp;
      },
    });
    writeDumps(tmp, opts.dumps, false);
    validateMeta(meta, join(outputDir, META_FILE)); // what we write must read back
    writeFileSync(join(tmp, KEY_FILE), `${opts.key}\n`);
    writeFileSync(join(tmp, META_FILE), metaText(meta));
    // install: another process may have finished the same artifact first -> use theirs
    try {
      renameSync(tmp, outputDir);
    } catch {
      const theirs = tryReuse(outputDir, opts.key);
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

// Directories private to the user: the jit's disk cache and default artifact directories
// hold code that gets loaded into the process, so they are created 0700 and a directory
// owned by another user, or writable by others, is never used.
import { chmodSync, lstatSync, mkdirSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { TsptoArtifactError } from "./meta.js";

/** Why `dir` is not safe to load code from (owner, mode), or null when it is. */
export function unsafeReason(dir: string): string | null {
  let st;
  try { st = statSync(dir); } catch (e) { return `cannot stat ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`; }
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  if (st.uid !== uid && st.uid !== 0) return `${dir} belongs to another user (uid ${st.uid})`;
  if ((st.mode & 0o022) !== 0 && !(st.mode & 0o1000)) return `${dir} can be written by other users (mode ${(st.mode & 0o777).toString(8)})`;
  return null;
}

/**
 * Creates `dir` (0700) if needed and checks it is the user's own and not writable by others
 * (a group/other write bit on a directory we own is removed). Returns null when usable, else why not.
 */
export function ensurePrivateDir(dir: string): string | null {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory()) return `${dir} is not a directory`;
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) return `${dir} belongs to another user (uid ${st.uid})`;
    if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
    return null;
  } catch (e) {
    return `cannot create ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
}

/** The user's tspto cache root: $TSPTO_CACHE_DIR, else $XDG_CACHE_HOME/tspto, else ~/.cache/tspto; null when set to off. */
export function userCacheRoot(): string | null {
  const set = process.env.TSPTO_CACHE_DIR;
  if (set === "off" || set === "0" || set === "false") return null;
  if (set) return resolve(set);
  return join(process.env.XDG_CACHE_HOME ? resolve(process.env.XDG_CACHE_HOME) : join(homedir(), ".cache"), "tspto");
}

/**
 * Where artifacts without an `outputDir` go: `<cache root>/artifacts`, or (cache off or
 * unusable) a per-user private directory under the OS temp dir. Always private to the user.
 */
export function defaultArtifactRoot(): string {
  const root = userCacheRoot();
  if (root) {
    const dir = join(root, "artifacts");
    if (ensurePrivateDir(root) === null && ensurePrivateDir(dir) === null) return dir;
  }
  const dir = join(tmpdir(), `tspto-${process.getuid?.() ?? "user"}`, "artifacts");
  const why = ensurePrivateDir(join(tmpdir(), `tspto-${process.getuid?.() ?? "user"}`)) ?? ensurePrivateDir(dir);
  if (why) throw new TsptoArtifactError(`no private directory for artifacts: ${why}`, "set TSPTO_CACHE_DIR to a directory of your own, or pass outputDir");
  return dir;
}

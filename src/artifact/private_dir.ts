// Directories private to the user. Everything tspto loads, includes or compiles from disk
// lives in one (the jit's disk cache, default artifact directories, the precompiled header,
// the compiler-version memo): created 0700, and checked before every use to be the user's
// own, not writable by group or others, under parents no other user can swap. A directory
// that fails the check was made by someone else (or opened up since) and is refused with a
// TsptoArtifactError E_UNSAFE_PATH naming it; tspto never works around it silently.
import { lstatSync, mkdirSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ancestorsReason, fileKind, myUid, untrustedReason } from "./files.js";
import { TsptoArtifactError } from "./meta.js";

/** Why `dir` is not safe to load code from (owner, mode), or null when it is. */
export function unsafeReason(dir: string): string | null {
  let st;
  try { st = statSync(dir); } catch (e) { return `cannot stat ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`; }
  return untrustedReason(dir, st);
}

/** The error for a file or directory that another user could have written (E_UNSAFE_PATH). */
export function unsafePathError(why: string, hint: string): TsptoArtifactError {
  return new TsptoArtifactError(`refused: ${why}; tspto never loads, includes or compiles what another user can write`, hint, "E_UNSAFE_PATH");
}

/** What `ensurePrivateDir` found: a directory someone else made or opened (`unsafe`), or one that cannot be made (`unusable`). */
export interface PrivateDirProblem { readonly kind: "unsafe" | "unusable"; readonly why: string }

/**
 * Creates `dir` (0700) if needed and checks it is the user's own directory (not a link), not
 * writable by group or others, under parents no other user can swap. null when usable.
 */
export function checkPrivateDir(dir: string): PrivateDirProblem | null {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    return { kind: "unusable", why: `cannot create ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
  let st;
  try { st = lstatSync(dir); } catch (e) {
    return { kind: "unusable", why: `cannot stat ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
  if (!st.isDirectory()) return { kind: "unsafe", why: `${dir} is ${fileKind(st)}, not a directory` };
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) return { kind: "unsafe", why: `${dir} belongs to another user (uid ${st.uid})` };
  const why = untrustedReason(dir, st) ?? ancestorsReason(dir);
  return why ? { kind: "unsafe", why } : null;
}

/** `checkPrivateDir` as a message (null when usable). */
export function ensurePrivateDir(dir: string): string | null {
  return checkPrivateDir(dir)?.why ?? null;
}

/** The user's tspto cache root: $TSPTO_CACHE_DIR, else $XDG_CACHE_HOME/tspto, else ~/.cache/tspto; null when set to off. */
export function userCacheRoot(): string | null {
  const set = process.env.TSPTO_CACHE_DIR;
  if (set === "off" || set === "0" || set === "false") return null;
  if (set) return resolve(set);
  return join(process.env.XDG_CACHE_HOME ? resolve(process.env.XDG_CACHE_HOME) : join(homedir(), ".cache"), "tspto");
}

const PRIVATE_HINT = "remove it (it is not tspto's), or set TSPTO_CACHE_DIR to a directory of your own (mode 0700)";

/** The per-user directory under the OS temp dir used when the cache root is off or cannot be created. */
export const tempPrivateRoot = (): string => join(tmpdir(), `tspto-${myUid() ?? "user"}`);

/**
 * `<root>/<sub...>`, created private, where root is the user's cache root, or (cache off or
 * impossible to create) the per-user directory under the OS temp dir. Throws E_UNSAFE_PATH
 * for a directory another user made or can write.
 */
export function privateDir(...sub: string[]): string {
  const roots: string[] = [];
  const cache = userCacheRoot();
  if (cache) roots.push(cache);
  roots.push(tempPrivateRoot());
  let last = "";
  for (const root of roots) {
    let problem: PrivateDirProblem | null = null;
    let dir = root;
    for (const part of ["", ...sub]) {
      dir = part ? join(dir, part) : dir;
      problem = checkPrivateDir(dir);
      if (problem) break;
    }
    if (!problem) return dir;
    if (problem.kind === "unsafe") throw unsafePathError(problem.why, PRIVATE_HINT);
    last = problem.why;
  }
  throw new TsptoArtifactError(`no private directory for tspto's files: ${last}`, "set TSPTO_CACHE_DIR to a directory of your own, or pass outputDir");
}

/**
 * Where artifacts without an `outputDir` go: `<cache root>/artifacts`, or (cache off or
 * impossible to create) a per-user private directory under the OS temp dir.
 */
export function defaultArtifactRoot(): string {
  return privateDir("artifacts");
}

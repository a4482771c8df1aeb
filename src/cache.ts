// The jit's disk cache: built artifacts shared by every process of the user, keyed by the
// full specialization key (kernel source hash incl. sub-kernels and constants, argument
// shapes/dtypes/scalar values, platform) + package version + compiler fingerprint + C++
// toolchain identity and flags + CPU features. The key needs no parsing, so a process that
// finds an entry parses nothing and compiles nothing.
//
// Location: $TSPTO_CACHE_DIR, else $XDG_CACHE_HOME/tspto, else ~/.cache/tspto
// (TSPTO_CACHE_DIR=off disables it). The directory is created private to the user (0700); one
// that another user owns or can write to is refused with E_UNSAFE_PATH (a cached library is
// code that gets loaded). Entries are artifact directories, written under a temporary name
// and renamed into place (src/artifact/write.ts), so concurrent processes never see half an
// entry. An entry whose metadata does not validate or whose library does not match its
// recorded hash is removed (the files its marker lists) and rebuilt.
import { createHash, randomBytes } from "node:crypto";
import { renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { META_FILE, PROGRAM_FILE, TsptoArtifactError, checkPrivateDir, inMemoryVolume, removeArtifact, unsafePathError, userCacheRoot, verifiedLibrary } from "./artifact/index.js";
import type { Target } from "./targets/index.js";
import { CompiledProgram } from "./runtime/compiled.js";
import { COMPILER_FINGERPRINT, PACKAGE_VERSION } from "./version.js";

const ENTRY_FORMAT = "tspto-jit-cache-1";

/**
 * Is logging topic `t` on ($TSPTO_LOG: comma-separated topics, or "all")? Topics:
 * `recompiles` (one line per compile naming what changed), `compile` (one line per compile
 * phase with its time, and progress on a TTY while the C++ compiler runs), `phases` (the
 * phases on one line).
 */
export function logOn(t: "recompiles" | "phases" | "compile"): boolean {
  const v = process.env.TSPTO_LOG;
  if (!v) return false;
  return v.split(",").some((x) => { const s = x.trim(); return s === t || s === "all"; });
}
export function log(line: string): void {
  process.stderr.write(`tspto: ${line}\n`);
}

let resolved: { env: string; dir: string | null } | undefined;

/**
 * The cache directory (created, 0700), or null when disabled or impossible to create. A
 * directory another user owns or can write to is refused (TsptoArtifactError E_UNSAFE_PATH).
 */
export function cacheDir(): string | null {
  const env = `${process.env.TSPTO_CACHE_DIR ?? ""}\0${process.env.XDG_CACHE_HOME ?? ""}`;
  if (resolved && resolved.env === env) return resolved.dir;
  // a page's volume ends with the page: a disk cache there would only hold a second copy
  const base = inMemoryVolume() ? null : userCacheRoot();
  let dir: string | null = null;
  if (base) {
    const problem = checkPrivateDir(base);
    if (problem?.kind === "unsafe") {
      throw unsafePathError(`the disk cache ${base}: ${problem.why}`,
        "remove it (it is not tspto's) or make it yours and private (chmod 700), or set TSPTO_CACHE_DIR to a directory of your own (TSPTO_CACHE_DIR=off disables the cache)");
    }
    if (problem) log(`disk cache disabled: ${problem.why}`);
    else dir = base;
  }
  resolved = { env, dir };
  return dir;
}

/**
 * The disk key of one specialization on `target` (its machine-dependent parts included); with
 * `portable`, the key of a precompiled entry (tspto precompile): the toolchain left out
 * (Target.portableKeyParts), so a machine without a compiler finds it.
 */
export function diskKey(target: Target, sourceHash: string, specKey: string, portable = false): string {
  const parts = portable ? ["portable", ...(target.portableKeyParts?.() ?? target.cacheKeyParts())] : target.cacheKeyParts();
  return createHash("sha256")
    .update([ENTRY_FORMAT, PACKAGE_VERSION, COMPILER_FINGERPRINT, target.name, ...parts, sourceHash, specKey].join("\0"))
    .digest("hex");
}

export function entryDir(dir: string, name: string, key: string): string {
  return join(dir, `${name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48) || "kernel"}-${key.slice(0, 32)}`);
}

export type Lookup = { kind: "hit"; compiled: CompiledProgram } | { kind: "miss" } | { kind: "corrupt"; why: string };

/** Loads an entry, checking its metadata and its library's hash (before anything dlopens it). */
export function lookup(dir: string, platform: string): Lookup {
  let st;
  try { st = statSync(dir); } catch { return { kind: "miss" }; }
  if (!st.isDirectory()) return { kind: "corrupt", why: "the entry path is not a directory" };
  try { statSync(join(dir, META_FILE)); } catch { return { kind: "miss" }; }
  let c: CompiledProgram;
  try {
    c = CompiledProgram.fromDir(dir, { platform });
  } catch (e) {
    return { kind: "corrupt", why: (e as Error).message.split("\n")[0] };
  }
  const meta = c.meta;
  if (meta.library) {
    try {
      verifiedLibrary(c);
    } catch (e) {
      // a planted library is refused, not rebuilt over; a missing or modified one is rebuilt
      if (e instanceof TsptoArtifactError && e.code !== "E_UNSAFE_PATH") return { kind: "corrupt", why: e.detail };
      throw e;
    }
  } else {
    try { statSync(join(dir, PROGRAM_FILE)); } catch { return { kind: "corrupt", why: "program.json is missing" }; }
  }
  return { kind: "hit", compiled: c };
}

/**
 * Removes an entry (renamed away first, so no process sees it half deleted): the files its
 * marker says tspto wrote; anything else stays in the renamed directory.
 */
export function evict(dir: string): void {
  const away = `${dir}.corrupt-${process.pid}-${randomBytes(4).toString("hex")}`;
  try { renameSync(dir, away); } catch { return; }
  removeArtifact(away);
}

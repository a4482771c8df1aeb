// The jit's disk cache: built artifacts shared by every process of the user, keyed by the
// full specialization key (kernel source hash incl. sub-kernels and constants, argument
// shapes/dtypes/scalar values, platform) + package version + compiler fingerprint + C++
// toolchain identity and flags + CPU features. The key needs no parsing, so a process that
// finds an entry parses nothing and compiles nothing.
//
// Location: $TSPTO_CACHE_DIR, else $XDG_CACHE_HOME/tspto, else ~/.cache/tspto
// (TSPTO_CACHE_DIR=off disables it). The directory is created private to the user (0700); a
// directory that other users can write to is not used (a cached library is code that gets
// loaded). Entries are artifact directories, written under a temporary name and renamed
// into place (src/codegen/build.ts), so concurrent processes never see half an entry. An
// entry whose metadata does not validate or whose library does not match its recorded hash
// is removed and rebuilt.
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { arch, cpus, homedir } from "node:os";
import { join, resolve } from "node:path";
import { CXX_FLAGS, cpuFlags, whichSync } from "./codegen/build.js";
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

/** The cache directory (created, 0700), or null when disabled or unusable. */
export function cacheDir(): string | null {
  const env = `${process.env.TSPTO_CACHE_DIR ?? ""}\0${process.env.XDG_CACHE_HOME ?? ""}`;
  if (resolved && resolved.env === env) return resolved.dir;
  let dir: string | null = null;
  const set = process.env.TSPTO_CACHE_DIR;
  if (set === "off" || set === "0" || set === "false") dir = null;
  else {
    const base = set ? resolve(set) : join(process.env.XDG_CACHE_HOME ? resolve(process.env.XDG_CACHE_HOME) : join(homedir(), ".cache"), "tspto");
    try {
      mkdirSync(base, { recursive: true, mode: 0o700 });
      const st = statSync(base);
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid) {
        log(`disk cache disabled: ${base} belongs to another user (uid ${st.uid})`);
      } else {
        if ((st.mode & 0o077) !== 0) chmodSync(base, 0o700);
        dir = base;
      }
    } catch (e) {
      log(`disk cache disabled: cannot create ${base} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  resolved = { env, dir };
  return dir;
}

let toolchainMemo: { env: string; id: string } | undefined;

/**
 * Identity of the C++ toolchain and target without running it: $CXX, the resolved compiler
 * binary (path, size, mtime), the build flags, the architecture and the CPU model and
 * features (-march=native depends on them).
 */
export function toolchainId(): string {
  const env = process.env.CXX ?? "";
  if (toolchainMemo && toolchainMemo.env === env) return toolchainMemo.id;
  const cmds = env.trim() ? [env.trim()] : ["c++", "g++", "clang++"];
  const parts: string[] = [];
  for (const cmd of cmds) {
    const exe = cmd.split(/\s+/)[0];
    const path = whichSync(exe);
    if (!path) { parts.push(`${cmd}:missing`); continue; }
    try { const st = statSync(path); parts.push(`${cmd}:${path}:${st.size}:${st.mtimeMs}`); } catch { parts.push(`${cmd}:${path}`); }
    break;
  }
  parts.push(CXX_FLAGS.join(" "), arch(), cpus()[0]?.model ?? "", cpuFlags());
  const id = parts.join("\n");
  toolchainMemo = { env, id };
  return id;
}


/** The disk key of one specialization. */
export function diskKey(sourceHash: string, specKey: string): string {
  return createHash("sha256")
    .update([ENTRY_FORMAT, PACKAGE_VERSION, COMPILER_FINGERPRINT, toolchainId(), sourceHash, specKey].join("\0"))
    .digest("hex");
}

export function entryDir(dir: string, name: string, key: string): string {
  return join(dir, `${name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48) || "kernel"}-${key.slice(0, 32)}`);
}

export type Lookup = { kind: "hit"; compiled: CompiledProgram } | { kind: "miss" } | { kind: "corrupt"; why: string };

/** Loads an entry, checking its metadata and its library's hash (before anything dlopens it). */
export function lookup(dir: string, platform: string): Lookup {
  // An entry path held by something that is not a directory (a regular file, a dangling
  // link) would make every later build fail with ENOTDIR/EEXIST: corrupt, evicted like the rest.
  let isDir = false;
  try { isDir = lstatSync(dir).isDirectory(); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { kind: "miss" };
    return { kind: "corrupt", why: `the entry path cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
  if (!isDir) return { kind: "corrupt", why: "the entry path is not a directory" };
  if (!existsSync(join(dir, "compiled_meta.json"))) return { kind: "miss" };
  let c: CompiledProgram;
  try {
    c = CompiledProgram.fromDir(dir, { platform });
  } catch (e) {
    return { kind: "corrupt", why: (e as Error).message.split("\n")[0] };
  }
  const meta = c.meta;
  if (meta.library) {
    let bytes: Buffer;
    try { bytes = readFileSync(join(dir, meta.library)); } catch { return { kind: "corrupt", why: "the program library is missing" }; }
    if (!meta.libraryHash || createHash("sha256").update(bytes).digest("hex") !== meta.libraryHash) {
      return { kind: "corrupt", why: "the program library does not match its recorded hash" };
    }
  } else if (!existsSync(join(dir, "program.json"))) {
    return { kind: "corrupt", why: "program.json is missing" };
  }
  return { kind: "hit", compiled: c };
}

/** Removes an entry (renamed away first, so no process sees it half deleted). */
export function evict(dir: string): void {
  const away = `${dir}.corrupt-${process.pid}-${randomBytes(4).toString("hex")}`;
  try { renameSync(dir, away); } catch { return; }
  rmSync(away, { recursive: true, force: true });
}

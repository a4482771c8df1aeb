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
import { existsSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { arch, cpus } from "node:os";
import { join } from "node:path";
import { CXX_FLAGS, cpuFlags, whichSync } from "./codegen/build.js";
import { CompiledProgram } from "./runtime/compiled.js";
import { COMPILER_FINGERPRINT, PACKAGE_VERSION } from "./version.js";

const ENTRY_FORMAT = "tspto-jit-cache-1";

// The directory and the log switches live in ./cache_dir.ts (imports nothing of tspto), so
// that the front end's memo (src/dsl/memo.ts) can share the directory.
export { cacheDir, log, logOn } from "./cache_dir.js";

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

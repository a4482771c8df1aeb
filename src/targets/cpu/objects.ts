// The cpu build's object cache: the compiled object of one unit of a program's source (a
// kernel, or the orchestration; CppUnit in src/codegen/cpp/generate.ts), kept by what it is
// made of, so that a task two programs or two specializations share is compiled once. An
// object is a function of the unit's text, the prelude it includes, the ABI header, the
// compiler and the flags (with -march=native: the CPU); its key hashes all of them.
//
// Entries live in `<cache root>/obj/` (the user's private directory, like the jit's disk
// cache: a cached object is code that gets linked and loaded, so a directory another user can
// write is refused with E_UNSAFE_PATH; TSPTO_CACHE_DIR=off turns it off). Each entry is
// `<key>.o` and `<key>.sha256` (the object's hash), both written under a temporary name and
// renamed into place; an object whose hash does not match is ignored (rebuilt and replaced),
// so a torn or damaged entry costs one compile, never a wrong library.
import { lstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateDir, sha256, userCacheRoot, writeAtomic } from "../../artifact/index.js";
import type { CppUnit } from "../../codegen/index.js";

/** Bump when the way an object is compiled changes without its key's parts changing. */
const OBJECT_FORMAT = "tspto-obj-1";
/** The largest object the cache reads back (a kernel's object is tens to hundreds of KB). */
const MAX_OBJECT_BYTES = 256 * 1024 * 1024;

/** The object cache's directory (`<cache root>/obj`), or null when the cache is off or cannot be made. Throws E_UNSAFE_PATH. */
export function objectCacheDir(): string | null {
  if (!userCacheRoot()) return null;
  try {
    return privateDir("obj");
  } catch (e) {
    if ((e as { code?: string }).code === "E_UNSAFE_PATH") throw e;
    return null;
  }
}

/**
 * The key of `unit`'s object: everything it is compiled from (`identity`: the toolchain,
 * the flags and the CPU; the prelude part and the ABI header; whether a precompiled header
 * stands for the prelude) and the unit's own text.
 */
export function unitObjectKey(identity: readonly string[], prelude: { header: string; text: string }, abi: string, pch: boolean, unit: CppUnit): string | null {
  if (unit.text === undefined) return null;
  return sha256([OBJECT_FORMAT, ...identity, pch ? "pch" : "no-pch", prelude.header, sha256(prelude.text), sha256(abi), unit.text].join("\0")).slice(0, 40);
}

const regular = (p: string): boolean => { try { return lstatSync(p).isFile(); } catch { return false; } };

/**
 * Copies the cached object of `key` to `dest` when the cache holds one whose bytes match its
 * recorded hash (regular files only); false when it holds none (or a damaged one).
 */
export function fetchObject(dir: string, key: string, dest: string): boolean {
  const obj = join(dir, `${key}.o`), sum = join(dir, `${key}.sha256`);
  if (!regular(obj) || !regular(sum)) return false;
  try {
    if (lstatSync(obj).size > MAX_OBJECT_BYTES) return false;
    const want = readFileSync(sum, "utf8").trim();
    const bytes = readFileSync(obj);
    if (!/^[0-9a-f]{64}$/.test(want) || sha256(bytes) !== want) return false;
    writeFileSync(dest, bytes, { mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** Stores the object at `src` as the entry of `key` (best effort: a cache that cannot be written costs only a later compile). */
export function storeObject(dir: string, key: string, src: string): void {
  try {
    const bytes = readFileSync(src);
    writeAtomic(join(dir, `${key}.o`), bytes, 0o600);
    writeAtomic(join(dir, `${key}.sha256`), `${sha256(bytes)}\n`, 0o600);
  } catch { /* best effort */ }
}

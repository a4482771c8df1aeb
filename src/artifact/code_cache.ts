// A CommonJS module loaded with V8's code cache: its compiled bytecode is kept in the user's
// private cache directory (`<cache root>/v8/`), so a later process skips parsing and compiling
// it. The TypeScript compiler (9 MB of JavaScript) costs a first kernel parse ~170 ms to
// require and ~60 ms from the cache. The cached bytecode is code run in the process, so it is
// read only from a private directory (privateDir refuses one another user could write) and is
// keyed by the module file's path, size and mtime and by the Node version; V8 itself rejects
// data made by another V8 or with other flags (then the module is compiled as usual and the
// cache rewritten).
import { readFileSync, statSync } from "node:fs";
import { Module, createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Script } from "node:vm";
import { privateDir } from "./private_dir.js";
import { readInside } from "./files.js";
import { sha256, writeAtomic } from "./write.js";

/** Largest code cache read back (TypeScript's is ~2.5 MB warmed). */
const MAX_CACHE_BYTES = 64 << 20;

/** What the last requireWithCodeCache did (tests, the compile-latency bench). */
export let lastCodeCache: { file: string; hit: boolean; wrote: boolean } | null = null;

/**
 * Requires the CommonJS module `file` (an absolute path) through V8's code cache; `warm` runs
 * on its exports before the cache is written, so the functions it calls (compiled lazily) are
 * in the cache too. Registers the module in require's cache like `require(file)` would.
 * Returns null where no private directory can be had (then require it as usual).
 */
export function requireWithCodeCache(file: string, warm?: (exports: unknown) => void): unknown {
  let dir: string;
  try { dir = privateDir("v8"); } catch { return null; }
  const st = statSync(file);
  const name = `${sha256([file, st.size, st.mtimeMs, process.version, process.arch].join("\0")).slice(0, 32)}.bin`;
  let cached: Buffer | undefined;
  try { const b = readInside(dir, name, { maxBytes: MAX_CACHE_BYTES }); cached = Buffer.from(b.buffer, b.byteOffset, b.byteLength); } catch { /* none yet */ }
  const source = readFileSync(file, "utf8");
  const script = new Script(Module.wrap(source), { filename: file, cachedData: cached });
  const hit = cached !== undefined && script.cachedDataRejected === false;
  const M = Module as unknown as { new (id: string, parent?: unknown): NodeJS.Module; _nodeModulePaths(dir: string): string[] };
  const m = new M(file);
  m.filename = file;
  m.paths = M._nodeModulePaths(dirname(file));
  const req = createRequire(file);
  (script.runInThisContext() as (...a: unknown[]) => void).call(m.exports, m.exports, req, m, file, dirname(file));
  m.loaded = true;
  req.cache[file] = m;
  let wrote = false;
  if (!hit) {
    try { warm?.(m.exports); } catch { /* the warm-up only makes the cache fuller */ }
    try { writeAtomic(join(dir, name), script.createCachedData(), 0o600); wrote = true; } catch { /* costs only the compile next time */ }
  }
  lastCodeCache = { file, hit, wrote };
  return m.exports;
}

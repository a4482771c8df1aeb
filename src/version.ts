// The package version (part of every cache key and artifact).
import { readFileSync, readdirSync, statSync, type Dirent } from "node:fs";
import { createHash } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { codeFile, packageRoot } from "./ir/package_root.js";

export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();

/**
 * A fingerprint of the compiler itself (every file's path, size and mtime under the code
 * directory tspto runs from — src/ or dist/ — and native/include; the bundle file itself when
 * tspto is inlined into an application's bundle): part of every artifact and cache key, so
 * that changing tspto's code (not only its version) never reuses an artifact built by the old code.
 */
/** The directory tspto's code runs from: src/ or dist/ (codeFile() is <code>/ir/package_root), or the bundle's directory. */
export function compilerCodeDir(): string {
  const here = dirname(codeFile());
  return basename(here) === "ir" ? dirname(here) : here;
}

export const COMPILER_FINGERPRINT: string = (() => {
  const root = packageRoot();
  const h = createHash("sha256").update(PACKAGE_VERSION);
  const walk = (dir: string): void => {
    let entries: Dirent[];
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else { const s = statSync(p); h.update(`${p.slice(root.length)}\0${s.size}\0${s.mtimeMs}\0`); }
    }
  };
  const code = compilerCodeDir();
  if (code === join(root, "src") || code === join(root, "dist")) walk(code);
  else { const s = statSync(codeFile()); h.update(`${codeFile()}\0${s.size}\0${s.mtimeMs}\0`); }
  walk(join(root, "native", "include"));
  return h.digest("hex").slice(0, 16);
})();

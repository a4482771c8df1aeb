// The package version (part of every cache key and artifact).
import { readFileSync, readdirSync, statSync, type Dirent } from "node:fs";
import { createHash } from "node:crypto";
import { join, sep } from "node:path";
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
export const COMPILER_FINGERPRINT: string = (() => {
  const root = packageRoot();
  const h = createHash("sha256").update(PACKAGE_VERSION);
  // a file that vanished during the walk, or a dangling link, is part of the fingerprint as such (never an ENOENT at import)
  const stamp = (p: string): string => {
    try { const s = statSync(p); return `${s.size}\0${s.mtimeMs}`; } catch (e) { return `unreadable:${(e as NodeJS.ErrnoException).code ?? "?"}`; }
  };
  const walk = (dir: string): void => {
    let entries: Dirent[];
    try { entries = readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else h.update(`${p.slice(root.length)}\0${stamp(p)}\0`);
    }
  };
  // the code directory holding this module (it lives in src/ir or dist/ir), else a bundle file
  const file = codeFile();
  const code = [join(root, "src"), join(root, "dist")].find((d) => file.startsWith(d + sep));
  if (code) walk(code);
  else h.update(`${file}\0${stamp(file)}\0`);
  walk(join(root, "native", "include"));
  return h.digest("hex").slice(0, 16);
})();

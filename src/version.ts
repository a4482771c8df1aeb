// The package version (part of every cache key and artifact).
import { readFileSync, readdirSync, statSync, type Dirent } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(fileURLToPath(new URL("../package.json", import.meta.url)), "utf8")) as { version: string }).version;
  } catch {
    return "0.0.0";
  }
})();

/**
 * A fingerprint of the compiler itself (every source file's path, size and mtime under src/
 * and native/include): part of every artifact and cache key, so that changing tspto's code
 * (not only its version) never reuses an artifact built by the old code.
 */
export const COMPILER_FINGERPRINT: string = (() => {
  const root = fileURLToPath(new URL("..", import.meta.url));
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
  walk(join(root, "src"));
  walk(join(root, "native", "include"));
  return h.digest("hex").slice(0, 16);
})();

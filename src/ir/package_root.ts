// Where tspto's own files are. The code runs from src/ (tests, tsx), from dist/ (the installed
// package), or from an application's bundle that inlined tspto (esbuild, vite): paths such as
// the native addon, native/include and package.json are found from the package root, never
// from a fixed distance to the running file. It lives in the ir room, which every room may
// import, and imports nothing but Node built-ins.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** The file this module runs from: src/ir/package_root.ts, dist/ir/package_root.js, or a bundle that inlined it. */
export function codeFile(): string {
  // `import.meta` is empty in a CommonJS bundle (esbuild --format=cjs); `__filename` is the bundle there.
  const url = (import.meta as { url?: unknown }).url;
  if (typeof url === "string" && url.startsWith("file:")) return fileURLToPath(url);
  if (typeof __filename === "string") return __filename;
  return join(process.cwd(), "[tspto]");
}

function isTsptoRoot(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "tspto";
  } catch {
    return false;
  }
}

let root: string | undefined;

/**
 * The directory of tspto's package.json: the first one above this module's file, else (tspto
 * inlined into a bundle) the `tspto` package the application's node_modules resolve to.
 */
export function packageRoot(): string {
  if (root !== undefined) return root;
  const here = codeFile();
  for (let dir = dirname(here); ; dir = dirname(dir)) {
    if (isTsptoRoot(dir)) return (root = dir);
    if (dirname(dir) === dir) break;
  }
  for (const base of [here, join(process.cwd(), "[tspto]")]) {
    try {
      return (root = dirname(createRequire(base).resolve("tspto/package.json")));
    } catch {
      /* not resolvable from there */
    }
  }
  throw new Error(`tspto: cannot find the tspto package above ${dirname(here)} or in node_modules: ` +
    "a bundle that inlines tspto needs the tspto package installed (npm install tspto) for its native addon and headers");
}

/** True when `file` is one of tspto's own modules (src/ or dist/ of the package). */
export function isOwnFile(file: string): boolean {
  const r = packageRoot();
  return file.startsWith(join(r, "src") + sep) || file.startsWith(join(r, "dist") + sep);
}

/** `require` resolving from tspto's package (its dependencies, its files), wherever the code runs. */
export function packageRequire(): (id: string) => unknown {
  return createRequire(join(packageRoot(), "package.json"));
}

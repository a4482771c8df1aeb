// Where tspto's own files are, in the browser build (scripts/build-browser.mjs uses this module
// for ./package_root.ts): the package is code in the page's bundle, not files; the in-memory
// volume (src/browser/node/fs.ts) gives it a root, /tspto, under which nothing is the user's.
const ROOT = "/tspto";

/** The file this module runs from, as the volume names it. */
export function codeFile(): string {
  return `${ROOT}/dist/browser/index.js`;
}

/** The package root in the volume. */
export function packageRoot(): string {
  return ROOT;
}

/** Whether a file is tspto's own (stack frames of the bundle are never the user's kernel site). */
export function isOwnFile(file: string): boolean {
  return file.startsWith(`${ROOT}/`);
}

/** There is no require() in a page: what needs it (the native addon, Dawn) is Node-only. */
export function packageRequire(): (id: string) => unknown {
  return (id: string) => {
    throw new Error(`tspto's browser build cannot require('${id}'): that part of tspto runs in Node only`);
  };
}

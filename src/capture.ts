// `tspto/capture`: what the tspto build plugins (tspto/vite, tspto/rollup, tspto/esbuild;
// src/plugin/) put in front of the kernels of a user's module. Not for hand-written code.
//  - `source(key, text, imports)`: the part of a module its kernels need (src/plugin/redact.ts),
//    under `file\0version` (file relative to the build root; version a hash of the text and its
//    imports'), with its relative imports' keys; kept in memory, where the front end reads it.
//  - `site(key, line, col, pre, jit)`: jit whose definition has this place in that text (a bundle's
//    stack names the bundle), and its IR precompiled at build time (src/dsl/precompiled.ts).
// The same in Node and in the browser build.
import { captureSource, setNextSite, takeNextSite } from "./dsl/index.js";

export function source(key: string, text: string, imports?: Readonly<Record<string, string>>): void {
  captureSource(key, text, imports);
}

/**
 * `jit` (pl.jit, pl.jit.incore or pl.jit.inline) whose next definition has this site; the
 * decorator-factory form (`@pl.jit({ scope })`) keeps it for the decorator it returns. A key
 * without a version (a bundle made by an older plugin) names a file on disk.
 */
export function site(key: string, line: number, col: number, pre: unknown, jit: (...a: unknown[]) => unknown): (...a: unknown[]) => unknown {
  const cut = key.indexOf("\0");
  const s = cut > 0 ? { file: key.slice(0, cut), version: key.slice(cut + 1), line, col, pre } : { file: key, line, col, pre };
  const once = (f: (...a: unknown[]) => unknown, a: unknown[]): unknown => {
    setNextSite(s);
    try { return f(...a); } finally { takeNextSite(); }
  };
  return (...a: unknown[]) => {
    const r = once(jit, a);
    const factory = a.length === 1 && typeof a[0] === "object" && a[0] !== null && typeof r === "function";
    return factory ? (...b: unknown[]) => once(r as (...x: unknown[]) => unknown, b) : r;
  };
}

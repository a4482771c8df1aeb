// `tspto/capture`: what the tspto build plugins (tspto/vite, tspto/rollup, tspto/esbuild;
// src/plugin/) put in front of the kernels of a user's module. Not for hand-written code.
//  - `source(file, text)`: the module's original text (with its types) for the front end. In Node
//    the file is on disk and this does nothing; the browser build (capture.browser.ts) writes it
//    into the page's in-memory volume, where the front end reads it as in Node.
//  - `site(file, line, col, pre, jit)`: jit whose definition has this place in that text (a bundle's
//    stack names the bundle), and its IR precompiled at build time (src/dsl/precompiled.ts).
import { setNextSite, takeNextSite } from "./dsl/index.js";

export function source(_file: string, _text: string): void {
  /* the file is on disk */
}

/**
 * `jit` (pl.jit, pl.jit.incore or pl.jit.inline) whose next definition has this site; the
 * decorator-factory form (`@pl.jit({ scope })`) keeps it for the decorator it returns.
 */
export function site(file: string, line: number, col: number, pre: unknown, jit: (...a: unknown[]) => unknown): (...a: unknown[]) => unknown {
  const s = { file, line, col, pre };
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

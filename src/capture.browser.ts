// `tspto/capture` in the browser build (see src/capture.ts): the module's original text goes
// into the page's in-memory volume (src/browser/node/fs.ts), where the front end finds it.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { setNextSite, takeNextSite } from "./dsl/index.js";

export function source(file: string, text: string): void {
  if (existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
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

// `tspto/capture`: what the tspto build plugins (tspto/vite, tspto/rollup, tspto/esbuild;
// src/plugin/) put in front of the kernels of a user's module. Not for hand-written code.
//  - `source(file, text)`: the module's original text (with its types) for the front end. In Node
//    the file is on disk and this does nothing; the browser build (capture.browser.ts) writes it
//    into the page's in-memory volume, where the front end reads it as in Node.
//  - `site(file, line, col, pre?)`: the next `pl.jit` definition's place in that text (a bundle's
//    stack names the bundle), and its IR precompiled at build time (src/dsl/precompiled.ts).
import { setNextSite } from "./dsl/index.js";

export function source(_file: string, _text: string): void {
  /* the file is on disk */
}

export function site(file: string, line: number, col: number, pre?: unknown): void {
  setNextSite({ file, line, col, pre });
}

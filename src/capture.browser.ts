// `tspto/capture` in the browser build (see src/capture.ts): the module's original text goes
// into the page's in-memory volume (src/browser/node/fs.ts), where the front end finds it.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { setNextSite } from "./dsl/index.js";

export function source(file: string, text: string): void {
  if (existsSync(file)) return;
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

export function site(file: string, line: number, col: number, pre?: unknown): void {
  setNextSite({ file, line, col, pre });
}

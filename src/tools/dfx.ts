// The DFX output files the tools read (see docs/dfx-formats.md): file names, and the error
// a malformed file raises.
import { readFileSync } from "node:fs";

export { DFX_DIR } from "../artifact/index.js";
export const SWIMLANE_FILE = "swimlane.json";
export const DEPS_FILE = "deps.json";
export const SWIMLANE_HTML = "swimlane.html";
export const DEPS_HTML = "deps.html";

/** A DFX file that does not follow its format: names the file and the exact problem. */
export class DfxFormatError extends Error {
  constructor(readonly file: string, readonly problem: string) {
    super(`${file}: ${problem}`);
    this.name = "DfxFormatError";
  }
}

/** Read and JSON-parse a DFX file; a missing or unparsable file is a DfxFormatError. */
export function readJsonFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new DfxFormatError(file, code === "ENOENT" ? "no such file" : `cannot read (${code ?? (e as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new DfxFormatError(file, `not valid JSON (${(e as Error).message})`);
  }
}

/** JSON.stringify for messages, cut to 80 characters. */
export function show(v: unknown): string {
  if (v === undefined) return "undefined";
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

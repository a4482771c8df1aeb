// The DFX output files the tools read (see docs/dfx-formats.md): file names, and the error
// a malformed file raises.
import { join } from "node:path";
import { FILE_LIMITS, TsptoArtifactError, readTextInside } from "../artifact/index.js";

export { DFX_DIR } from "../artifact/index.js";
export const SWIMLANE_FILE = "swimlane.json";
export const DEPS_FILE = "deps.json";
export const SWIMLANE_HTML = "swimlane.html";
export const DEPS_HTML = "deps.html";
export const ROOFLINE_FILE = "roofline.json";
export const ROOFLINE_HTML = "roofline.html";

/** A DFX file that does not follow its format: names the file and the exact problem. */
export class DfxFormatError extends Error {
  constructor(readonly file: string, readonly problem: string) {
    super(`${file}: ${problem}`);
    this.name = "DfxFormatError";
  }
}

/**
 * Read and JSON-parse the DFX file `root/rel` (`root`: the artifact directory, which is not
 * trusted: a regular file inside it only, at most FILE_LIMITS.dfx bytes, no link followed);
 * a missing, refused or unparsable file is a DfxFormatError.
 */
export function readJsonFile(root: string, rel: string): unknown {
  const file = join(root, rel);
  let text: string;
  try {
    text = readTextInside(root, rel, { maxBytes: FILE_LIMITS.dfx });
  } catch (e) {
    if (!(e instanceof TsptoArtifactError)) throw e;
    const d = e.detail.startsWith(`${file}: `) ? e.detail.slice(file.length + 2) : e.detail;
    throw new DfxFormatError(file, d === "is missing" ? "no such file" : d);
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

/**
 * The largest of `f(x)` over `xs` (`empty` when there is none). A loop, not `Math.max(...xs)`:
 * spreading a trace's hundred thousand tasks as call arguments overflows the stack.
 */
export function maxOf<T>(xs: Iterable<T>, f: (x: T) => number, empty = -Infinity): number {
  let m = -Infinity, any = false;
  for (const x of xs) { const v = f(x); if (v > m) m = v; any = true; }
  return any ? m : empty;
}

/** The smallest of `f(x)` over `xs` (`empty` when there is none); see maxOf. */
export function minOf<T>(xs: Iterable<T>, f: (x: T) => number, empty = Infinity): number {
  return -maxOf(xs, (x) => -f(x), -empty);
}

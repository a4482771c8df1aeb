// Locates the user's call site (the first stack frame outside tspto's own sources) so that
// errors at dispatch name the user's file:line:col. Only used on error paths.
import { fileURLToPath } from "node:url";
import type { Span } from "../ir/index.js";
import { isOwnFile } from "../ir/package_root.js";

export function callerSpan(): Span | undefined {
  const stack = new Error().stack ?? "";
  for (const line of stack.split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?[^\s()]+):(\d+):(\d+)\)?\s*$/.exec(line.trim());
    if (!m) continue;
    let file = m[1];
    if (file.startsWith("file://")) { try { file = fileURLToPath(file); } catch { continue; } }
    if (file.startsWith("node:") || file.includes("/node_modules/") || isOwnFile(file)) continue;
    return { file, line: Number(m[2]), col: Number(m[3]) };
  }
  return undefined;
}

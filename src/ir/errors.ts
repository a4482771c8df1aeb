// User-facing errors. Every error a user can cause is a TsptoError: a code, the span in the
// user's .ts file, a caret excerpt of that line, and a hint saying how to fix it.
import { readFileSync } from "node:fs";
import type { Span } from "./nodes.js";

const sourceCache = new Map<string, string[] | null>();

/** Register source text for a file (used when the text did not come from disk). */
export function registerSource(file: string, text: string): void {
  sourceCache.set(file, text.split(/\r?\n/));
}

function sourceLine(file: string, line: number): string | undefined {
  let lines = sourceCache.get(file);
  if (lines === undefined) {
    try {
      lines = readFileSync(file, "utf8").split(/\r?\n/);
    } catch {
      lines = null;
    }
    sourceCache.set(file, lines);
  }
  return lines?.[line - 1];
}

/** `file:line:col` plus the source line and a caret under the column. */
export function formatSpan(span: Span): string {
  const where = `${span.file}:${span.line}:${span.col}`;
  const text = sourceLine(span.file, span.line);
  if (text === undefined) return where;
  const num = String(span.line);
  const width = Math.max(1, (span.endLine === span.line && span.endCol ? span.endCol - span.col : 1));
  const caret = " ".repeat(Math.max(0, span.col - 1)) + "^".repeat(Math.min(width, Math.max(1, text.length - span.col + 1)));
  return `${where}\n  ${num} | ${text}\n  ${" ".repeat(num.length)} | ${caret}`;
}

export class TsptoError extends Error {
  readonly code: string;
  readonly span?: Span;
  readonly hint?: string;
  /** The message without location/hint decoration. */
  readonly detail: string;
  constructor(code: string, detail: string, span?: Span, hint?: string) {
    let msg = `[${code}] ${detail}`;
    if (span) msg += `\n  at ${formatSpan(span)}`;
    if (hint) msg += `\n  hint: ${hint}`;
    super(msg);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.span = span;
    this.hint = hint;
  }
}

/** Errors in kernel source: syntax the DSL does not accept, unresolved identifiers. */
export class TsptoSyntaxError extends TsptoError {}
/** Type errors: shape/dtype mismatches, bad op operands. */
export class TsptoTypeError extends TsptoError {}
/** Errors found by passes (misplaced ops, capacity, windows out of range). */
export class TsptoCompileError extends TsptoError {}
/** Errors at dispatch: arity, argument mismatches, DeviceTensor misuse, platform. */
export class TsptoRuntimeError extends TsptoError {}

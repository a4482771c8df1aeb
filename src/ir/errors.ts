// User-facing errors. Every error a user can cause is a TsptoError: a code, the span in the
// user's .ts file, a caret excerpt of that line, and a hint saying how to fix it.
import type { Span } from "./nodes.js";

/**
 * The file reader of the caret excerpts: Node's fs, found through process.getBuiltinModule
 * (Node >= 20.16; package.json's engines ask for 20.19) so that this module imports no Node
 * built-in and a browser build loads it; where there is none (a browser) only text given to
 * registerSource has excerpts.
 */
type ReadText = (file: string) => string;
let readText: ReadText | null | undefined;
function fileReader(): ReadText | null {
  if (readText === undefined) {
    const p = (globalThis as { process?: { getBuiltinModule?: (m: string) => unknown } }).process;
    const fs = p?.getBuiltinModule?.("node:fs") as { readFileSync(f: string, enc: "utf8"): string } | undefined;
    readText = fs ? (f) => fs.readFileSync(f, "utf8") : null;
  }
  return readText;
}

const sourceCache = new Map<string, string[] | null>();

/** Register source text for a file (used when the text did not come from disk). */
export function registerSource(file: string, text: string): void {
  sourceCache.set(file, text.split(/\r?\n/));
}

function sourceLine(file: string, line: number): string | undefined {
  let lines = sourceCache.get(file);
  if (lines === undefined) {
    try {
      const read = fileReader();
      lines = read ? read(file).split(/\r?\n/) : null;
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

/** Where an error points in a call: the argument's (or field's) name and its 1-based position. */
export interface ErrorWhere {
  /** Name of the argument, parameter or option the error is about. */
  readonly argument?: string;
  /** 1-based position of that argument in the call, where there is one. */
  readonly position?: number;
  /** The underlying error (a native error, a file system error). */
  readonly cause?: unknown;
}

export class TsptoError extends Error {
  readonly code: string;
  readonly span?: Span;
  readonly hint?: string;
  /** The message without location/hint decoration. */
  readonly detail: string;
  /** Name of the argument (or RunConfig field) the error is about, where there is one. */
  readonly argument?: string;
  /** 1-based position of that argument, where there is one. */
  readonly position?: number;
  constructor(code: string, detail: string, span?: Span, hint?: string, where?: ErrorWhere) {
    let msg = `[${code}] ${detail}`;
    if (span) msg += `\n  at ${formatSpan(span)}`;
    if (hint) msg += `\n  hint: ${hint}`;
    super(msg, where?.cause !== undefined ? { cause: where.cause } : undefined);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.span = span;
    this.hint = hint;
    if (where?.argument !== undefined) this.argument = where.argument;
    if (where?.position !== undefined) this.position = where.position;
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
/** An invalid RunConfig option (code E_CONFIG; `argument` is the field name). */
export class TsptoConfigError extends TsptoError {}
/** A value passed to a runtime API that it does not accept: tensor-likes, shapes, dtypes,
 *  scalars, host views (`argument` / `position` name it where there is one). */
export class TsptoArgumentError extends TsptoRuntimeError {}
/** A device refused an operation: a bad or freed address, a closed device, a module that
 *  cannot be loaded. */
export class TsptoDeviceError extends TsptoRuntimeError {}
/** Device memory exhausted, or more than the machine can back (E_DEVICE_OOM). */
export class TsptoOutOfMemoryError extends TsptoDeviceError {}
/** A launch whose program recorded a failure at run time (E_KERNEL): a dynamic window out
 *  of bounds, an orchestration buffer that could not be allocated. */
export class TsptoKernelError extends TsptoDeviceError {}

/** Every TsptoError class of the IR room, by name (TsptoArtifactError lives in src/artifact). */
export const TSPTO_ERROR_CLASSES = {
  TsptoError, TsptoSyntaxError, TsptoTypeError, TsptoCompileError, TsptoRuntimeError, TsptoConfigError,
  TsptoArgumentError, TsptoDeviceError, TsptoOutOfMemoryError, TsptoKernelError,
} as const;

/**
 * Formats any value for an error message without throwing (BigInts, cycles, symbols,
 * functions): strings quoted, bigints as `4n`, arrays element-wise, objects by JSON or class.
 */
export function formatValue(x: unknown, depth = 0): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (typeof x === "symbol" || typeof x === "function") return typeof x === "symbol" ? x.toString() : `function ${x.name || "(anonymous)"}`;
  if (Array.isArray(x)) {
    if (depth > 2) return "[...]";
    const items = x.slice(0, 16).map((v) => formatValue(v, depth + 1));
    return `[${items.join(", ")}${x.length > 16 ? `, ... (${x.length} entries)` : ""}]`;
  }
  if (x !== null && typeof x === "object") {
    if (ArrayBuffer.isView(x)) return `${x.constructor.name}(${x.byteLength} bytes)`;
    try {
      const json = JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v));
      if (json !== undefined && json.length <= 200) return json;
    } catch {
      // cycles and the like: fall through to the class name
    }
    return (x as object).constructor?.name ?? Object.prototype.toString.call(x);
  }
  return String(x);
}

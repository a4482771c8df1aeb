// Shared helpers of the front-end tests: bind arguments, parse, round-trip, and check that
// errors point at the right place of the test file (file:line:col, the line, a caret).
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { expect } from "vitest";
import { parseKernel, roundTrip, type KernelDef, type ParamBinding } from "../../src/dsl/index.js";
import { forEachExpr, forEachStmt, scalarT, tensorT, TsptoError, type Func, type Program, type Type } from "../../src/ir/index.js";

export const f32 = (...shape: (number | string)[]): Type => tensorT(shape, "float32");

export function defOf(k: unknown): KernelDef {
  const def = (k as { def?: KernelDef }).def;
  if (!def) throw new Error("not a jit function");
  return def;
}

/** Bindings from argument descriptions: a Type, or a number/boolean (a specialized scalar). */
export function bindings(args: readonly (Type | number | boolean)[]): ParamBinding[] {
  return args.map((a, i) => {
    const name = `arg${i}`;
    if (typeof a === "number") return { name, type: scalarT(Number.isInteger(a) ? "int64" : "float32"), value: a };
    if (typeof a === "boolean") return { name, type: scalarT("bool"), value: a };
    return { name, type: a };
  });
}

/** Parse a jit function specialized on `args`, and check the program round-trips through its text. */
export function parse(k: unknown, ...args: (Type | number | boolean)[]): Program {
  const def = defOf(k);
  const p = parseKernel(def, bindings(args));
  roundTrip(p);
  return p;
}

export function fn(p: Program, name = p.entry): Func {
  const f = p.getFunction(name);
  if (!f) throw new Error(`no function ${name} in ${p.functions.map((x) => x.name)}`);
  return f;
}

/** Op names of calls in a function, in evaluation order (pre-order statements, post-order exprs). */
export function opsOf(f: Func): string[] {
  const out: string[] = [];
  forEachExpr(f.body, (e) => { if (e.kind === "call") out.push(e.op === "call" ? `call:${String(e.attrs.callee)}` : e.op); });
  return out;
}

export function stmtKinds(f: Func): string[] {
  const out: string[] = [];
  forEachStmt(f.body, (s) => out.push(s.kind));
  return out;
}

/** 1-based line and column of `token` on the line of `file` that contains `marker`. */
export function where(file: string, marker: string, token: string): { line: number; col: number } {
  const lines = readFileSync(file, "utf8").split(/\r?\n/);
  const i = lines.findIndex((l) => l.includes(marker));
  if (i < 0) throw new Error(`marker ${marker} not found in ${file}`);
  const col = lines[i].indexOf(token);
  if (col < 0) throw new Error(`token ${token} not on the line of ${marker}`);
  return { line: i + 1, col: col + 1 };
}

export interface ExpectedError {
  cls: new (...a: never[]) => TsptoError;
  code: string;
  /** Text the message must contain. */
  message: string;
  file: string;
  marker: string;
  /** The token the span starts at, on the marker's line. */
  token: string;
  hint?: string | RegExp;
}

/** Runs f, which must throw the expected TsptoError located at marker/token, with the source line and a caret. */
export function expectError(f: () => unknown, x: ExpectedError): TsptoError {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err, `expected ${x.code}`).toBeInstanceOf(x.cls);
  const e = err as TsptoError;
  expect(e.code).toBe(x.code);
  expect(e.message).toContain(x.message);
  const { line, col } = where(x.file, x.marker, x.token);
  const src = readFileSync(x.file, "utf8").split(/\r?\n/)[line - 1];
  expect(e.message).toContain(`test/dsl/${basename(x.file)}:${line}:${col}`);
  expect(e.message).toContain(`${line} | ${src}`);
  const caretLine = e.message.split("\n").find((l) => /^\s+\| *\^+$/.test(l));
  expect(caretLine, "a caret line").toBeDefined();
  expect(caretLine!.indexOf("^") - caretLine!.indexOf("|") - 2).toBe(col - 1);
  expect(e.span?.line).toBe(line);
  expect(e.span?.col).toBe(col);
  if (x.hint !== undefined) {
    expect(e.hint).toBeDefined();
    if (typeof x.hint === "string") expect(e.hint).toContain(x.hint);
    else expect(e.hint).toMatch(x.hint);
  }
  return e;
}

// JSON (de)serialization of programs, for artifacts (program.json). Variables are written
// once with an id and referenced by it.
import type { Attrs, Expr, Func, Param, Span, Stmt, Var } from "./nodes.js";
import { mkAssign, mkBreak, mkCall, mkConst, mkContinue, mkEval, mkFor, mkFunc, mkIf, mkList, mkReturn, mkScope, mkVar, mkWhile, mkYield, NO_SPAN } from "./nodes.js";
import type { Type } from "./types.js";

export const IR_FORMAT = "tspto-ir";
export const IR_VERSION = 1;

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any
export interface ProgramJSON { format: string; version: number; name: string; entry: string; functions: J[]; span?: Span }

/**
 * JSON has no NaN, Infinity, -Infinity or -0 (JSON.stringify writes null, null, null, 0), but
 * a program's constants and attributes may hold them (SEMANTICS.md: non-finite constants are
 * values like any other). Such a number is written as `{ "$num": "NaN" | "Infinity" |
 * "-Infinity" | "-0" }`; every other value as is. A string can never be read as one.
 */
export function numberToJSON(v: number): number | { $num: string } {
  return Number.isFinite(v) && !Object.is(v, -0) ? v : { $num: Object.is(v, -0) ? "-0" : String(v) };
}
const NUM_TAGS: Readonly<Record<string, number>> = { NaN, Infinity, "-Infinity": -Infinity, "-0": -0 };
/** The number `j` stands for when it is a tagged number (numberToJSON), else undefined. */
export function numberFromJSON(j: unknown): number | undefined {
  if (typeof j === "number") return j;
  if (j === null || typeof j !== "object" || Array.isArray(j)) return undefined;
  const keys = Object.keys(j);
  const tag = (j as { $num?: unknown }).$num;
  return keys.length === 1 && typeof tag === "string" && Object.hasOwn(NUM_TAGS, tag) ? NUM_TAGS[tag] : undefined;
}
/** A JSON.stringify replacer that writes numbers JSON cannot hold as tagged numbers. */
export function nonFiniteReplacer(_key: string, v: unknown): unknown {
  return typeof v === "number" ? numberToJSON(v) : v;
}
/** Deep copy with every tagged number (numberToJSON) turned back into the number. */
function reviveNumbers(v: J): J {
  if (v === null || typeof v !== "object") return v;
  const n = numberFromJSON(v);
  if (n !== undefined) return n;
  if (Array.isArray(v)) return v.map(reviveNumbers);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, reviveNumbers(x)]));
}
/** Deep copy with every number JSON cannot hold tagged. */
function tagNumbers(v: J): J {
  if (typeof v === "number") return numberToJSON(v);
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(tagNumbers);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, tagNumbers(x)]));
}

const spanJ = (s: Span): J => (s.line ? [s.file, s.line, s.col] : undefined);
const spanOf = (j: J): Span => (Array.isArray(j) ? { file: j[0], line: j[1], col: j[2] } : NO_SPAN);

export function programToJSON(p: { name: string; entry: string; functions: readonly Func[] }): ProgramJSON {
  const varJ = (v: Var): J => ({ var: v.id, name: v.name, type: v.type, span: spanJ(v.span) });
  const ref = (v: Var): J => ({ ref: v.id });
  const ex = (e: Expr): J => {
    switch (e.kind) {
      case "var": return ref(e);
      case "const": return { const: typeof e.value === "number" ? numberToJSON(e.value) : e.value, dtype: e.dtype, span: spanJ(e.span) };
      case "list": return { list: e.items.map(ex), span: spanJ(e.span) };
      case "call": return { op: e.op, args: e.args.map(ex), attrs: tagNumbers(e.attrs), type: e.type, span: spanJ(e.span) };
    }
  };
  const st = (s: Stmt): J => {
    const span = spanJ(s.span);
    switch (s.kind) {
      case "assign": return { s: "assign", targets: s.targets.map(varJ), value: ex(s.value), span };
      case "eval": return { s: "eval", expr: ex(s.expr), span };
      case "for": return { s: "for", loopVar: varJ(s.loopVar), start: ex(s.start), stop: ex(s.stop), step: ex(s.step), iterArgs: s.iterArgs.map(varJ), inits: s.inits.map(ex), body: s.body.map(st), results: s.results.map(varJ), span };
      case "while": return { s: "while", iterArgs: s.iterArgs.map(varJ), inits: s.inits.map(ex), cond: ex(s.cond), body: s.body.map(st), results: s.results.map(varJ), span };
      case "if": return { s: "if", cond: ex(s.cond), then: s.then.map(st), else: s.else.map(st), results: s.results.map(varJ), span };
      case "yield": case "break": case "continue": case "return": return { s: s.kind, values: s.values.map(ex), span };
      case "scope": return { s: "scope", level: s.level, body: s.body.map(st), span };
    }
  };
  return {
    format: IR_FORMAT, version: IR_VERSION, name: p.name, entry: p.entry,
    functions: p.functions.map((f) => ({
      name: f.name, fnKind: f.fnKind, params: f.params.map((q) => ({ ...varJ(q.var), dir: q.dir })),
      returnTypes: f.returnTypes, attrs: tagNumbers(f.attrs), body: f.body.map(st), span: spanJ(f.span),
    })),
  };
}

export function programFromJSON<P>(j: ProgramJSON, make: (name: string, entry: string, fns: Func[], span: Span) => P): P {
  if (!j || j.format !== IR_FORMAT) throw new Error(`not a tspto IR document (format ${JSON.stringify(j?.format)}, expected "${IR_FORMAT}")`);
  if (j.version !== IR_VERSION) throw new Error(`tspto IR version ${j.version} is not supported (expected ${IR_VERSION})`);
  const fns = j.functions.map((fj: J) => {
    const vars = new Map<number, Var>();
    const def = (vj: J): Var => {
      let v = vars.get(vj.var);
      if (!v) { v = mkVar(vj.name, vj.type as Type, spanOf(vj.span)); vars.set(vj.var, v); }
      return v;
    };
    const ex = (e: J): Expr => {
      if ("ref" in e) {
        const v = vars.get(e.ref);
        if (!v) throw new Error(`program.json: variable #${e.ref} used before its definition`);
        return v;
      }
      if ("const" in e) {
        const v = typeof e.const === "boolean" ? e.const : numberFromJSON(e.const);
        if (v === undefined) throw new Error(`program.json: constant ${JSON.stringify(e.const)} is not a number or a boolean`);
        return mkConst(v, e.dtype, spanOf(e.span));
      }
      if ("list" in e) return mkList(e.list.map(ex), spanOf(e.span));
      return mkCall(e.op, e.args.map(ex), reviveNumbers(e.attrs) as Attrs, e.type as Type, spanOf(e.span));
    };
    const st = (s: J): Stmt => {
      const span = spanOf(s.span);
      switch (s.s) {
        case "assign": { const value = ex(s.value); return mkAssign(s.targets.map(def), value, span); }
        case "eval": return mkEval(ex(s.expr), span);
        case "for": {
          const start = ex(s.start), stop = ex(s.stop), step = ex(s.step), inits = s.inits.map(ex);
          const loopVar = def(s.loopVar), iterArgs = s.iterArgs.map(def);
          const body = s.body.map(st);
          return mkFor({ loopVar, start, stop, step, iterArgs, inits, body, results: s.results.map(def), span });
        }
        case "while": {
          const inits = s.inits.map(ex), iterArgs = s.iterArgs.map(def), cond = ex(s.cond), body = s.body.map(st);
          return mkWhile({ iterArgs, inits, cond, body, results: s.results.map(def), span });
        }
        case "if": { const cond = ex(s.cond); const then = s.then.map(st), els = s.else.map(st); return mkIf({ cond, then, else: els, results: s.results.map(def), span }); }
        case "yield": return mkYield(s.values.map(ex), span);
        case "break": return mkBreak(s.values.map(ex), span);
        case "continue": return mkContinue(s.values.map(ex), span);
        case "return": return mkReturn(s.values.map(ex), span);
        case "scope": return mkScope(s.level, s.body.map(st), span);
        default: throw new Error(`program.json: unknown statement kind ${JSON.stringify(s.s)}`);
      }
    };
    const params: Param[] = fj.params.map((pj: J) => ({ var: def(pj), dir: pj.dir }));
    return mkFunc({ name: fj.name, fnKind: fj.fnKind, params, returnTypes: fj.returnTypes, attrs: reviveNumbers(fj.attrs), body: fj.body.map(st), span: spanOf(fj.span) });
  });
  return make(j.name, j.entry, fns, j.span ?? NO_SPAN);
}

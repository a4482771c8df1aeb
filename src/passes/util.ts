// Helpers for rewriting statement trees.
import type { Expr, Stmt, Var } from "../ir/index.js";
import { freshVar, mapExpr, mkAssign, mkBreak, mkContinue, mkEval, mkFor, mkIf, mkReturn, mkScope, mkWhile, mkYield } from "../ir/index.js";

/**
 * Copy statements giving every variable they define a fresh identity; `map` holds the
 * substitution for variables defined outside (e.g. parameters -> arguments) and is
 * extended with the renamed definitions.
 */
export function cloneStmts(stmts: readonly Stmt[], map: Map<number, Expr>, renamed: Set<number> = new Set()): Stmt[] {
  const ex = (e: Expr) => mapExpr(e, (x) => (x.kind === "var" ? map.get(x.id) : undefined));
  const def = (v: Var): Var => {
    if (renamed.has(v.id)) return map.get(v.id) as Var; // a pre-SSA rebinding keeps its new identity
    const nv = freshVar(v);
    map.set(v.id, nv);
    renamed.add(v.id);
    return nv;
  };
  const defs = (vs: readonly Var[]) => vs.map(def);
  return stmts.map((s): Stmt => {
    switch (s.kind) {
      case "assign": { const value = ex(s.value); return mkAssign(defs(s.targets), value, s.span); }
      case "eval": return mkEval(ex(s.expr), s.span);
      case "for": {
        const start = ex(s.start), stop = ex(s.stop), step = ex(s.step), inits = s.inits.map(ex);
        const loopVar = def(s.loopVar), iterArgs = defs(s.iterArgs);
        const body = cloneStmts(s.body, map, renamed);
        return mkFor({ loopVar, start, stop, step, iterArgs, inits, body, results: defs(s.results), span: s.span });
      }
      case "while": {
        const inits = s.inits.map(ex), iterArgs = defs(s.iterArgs), cond = ex(s.cond), body = cloneStmts(s.body, map, renamed);
        return mkWhile({ iterArgs, inits, cond, body, results: defs(s.results), span: s.span });
      }
      case "if": {
        const cond = ex(s.cond), then = cloneStmts(s.then, map, renamed), els = cloneStmts(s.else, map, renamed);
        return mkIf({ cond, then, else: els, results: defs(s.results), span: s.span });
      }
      case "yield": return mkYield(s.values.map(ex), s.span);
      case "break": return mkBreak(s.values.map(ex), s.span);
      case "continue": return mkContinue(s.values.map(ex), s.span);
      case "return": return mkReturn(s.values.map(ex), s.span);
      case "scope": return mkScope(s.level, cloneStmts(s.body, map, renamed), s.span);
    }
  });
}

/**
 * Replace variables (definitions and uses) by `f(v)` where it returns a new Var. Used to
 * change variable types (e.g. give tiles their planned addresses).
 */
export function replaceVars(stmts: readonly Stmt[], f: (v: Var) => Var | undefined): Stmt[] {
  const cache = new Map<number, Var>();
  const rv = (v: Var): Var => {
    let n = cache.get(v.id);
    if (!n) { n = f(v) ?? v; cache.set(v.id, n); }
    return n;
  };
  const ex = (e: Expr): Expr => mapExpr(e, (x) => (x.kind === "var" ? rv(x) : undefined));
  const walk = (ss: readonly Stmt[]): Stmt[] => ss.map((s): Stmt => {
    switch (s.kind) {
      case "assign": return mkAssign(s.targets.map(rv), ex(s.value), s.span);
      case "eval": return mkEval(ex(s.expr), s.span);
      case "for": return mkFor({ loopVar: rv(s.loopVar), start: ex(s.start), stop: ex(s.stop), step: ex(s.step), iterArgs: s.iterArgs.map(rv), inits: s.inits.map(ex), body: walk(s.body), results: s.results.map(rv), span: s.span });
      case "while": return mkWhile({ iterArgs: s.iterArgs.map(rv), inits: s.inits.map(ex), cond: ex(s.cond), body: walk(s.body), results: s.results.map(rv), span: s.span });
      case "if": return mkIf({ cond: ex(s.cond), then: walk(s.then), else: walk(s.else), results: s.results.map(rv), span: s.span });
      case "yield": return mkYield(s.values.map(ex), s.span);
      case "break": return mkBreak(s.values.map(ex), s.span);
      case "continue": return mkContinue(s.values.map(ex), s.span);
      case "return": return mkReturn(s.values.map(ex), s.span);
      case "scope": return mkScope(s.level, walk(s.body), s.span);
    }
  });
  return walk(stmts);
}

// Generic traversal helpers shared by passes, the interpreter and codegen.
import type { Expr, Stmt, Var } from "./nodes.js";

/** Calls `f` on every expression (post-order) reachable from `s`, including nested ones. */
export function forEachExpr(stmts: readonly Stmt[], f: (e: Expr) => void): void {
  const ve = (e: Expr): void => {
    if (e.kind === "call") e.args.forEach(ve);
    else if (e.kind === "list") e.items.forEach(ve);
    f(e);
  };
  forEachStmt(stmts, (s) => {
    switch (s.kind) {
      case "assign": ve(s.value); break;
      case "eval": ve(s.expr); break;
      case "for": ve(s.start); ve(s.stop); ve(s.step); s.inits.forEach(ve); break;
      case "while": s.inits.forEach(ve); ve(s.cond); break;
      case "if": ve(s.cond); break;
      case "yield": case "break": case "continue": case "return": s.values.forEach(ve); break;
      case "scope": break;
    }
  });
}

/** Pre-order walk over statements, descending into bodies. */
export function forEachStmt(stmts: readonly Stmt[], f: (s: Stmt) => void): void {
  for (const s of stmts) {
    f(s);
    switch (s.kind) {
      case "for": case "while": forEachStmt(s.body, f); break;
      case "if": forEachStmt(s.then, f); forEachStmt(s.else, f); break;
      case "scope": forEachStmt(s.body, f); break;
      default: break;
    }
  }
}

/** Variables defined anywhere in `stmts` (assign targets, loop vars, iter args, results). */
export function definedVars(stmts: readonly Stmt[]): Set<number> {
  const out = new Set<number>();
  forEachStmt(stmts, (s) => {
    switch (s.kind) {
      case "assign": s.targets.forEach((v) => out.add(v.id)); break;
      case "for": out.add(s.loopVar.id); s.iterArgs.forEach((v) => out.add(v.id)); s.results.forEach((v) => out.add(v.id)); break;
      case "while": s.iterArgs.forEach((v) => out.add(v.id)); s.results.forEach((v) => out.add(v.id)); break;
      case "if": s.results.forEach((v) => out.add(v.id)); break;
      default: break;
    }
  });
  return out;
}

/** Variables used in `stmts` but not defined there (in first-use order). */
export function freeVars(stmts: readonly Stmt[]): Var[] {
  const defined = definedVars(stmts);
  const seen = new Map<number, Var>();
  forEachExpr(stmts, (e) => {
    if (e.kind === "var" && !defined.has(e.id) && !seen.has(e.id)) seen.set(e.id, e);
  });
  return [...seen.values()];
}

/** Rebuilds expressions bottom-up; `f` returns a replacement or undefined to keep. */
export function mapExpr(e: Expr, f: (e: Expr) => Expr | undefined): Expr {
  let cur: Expr = e;
  if (e.kind === "call") {
    const args = e.args.map((a) => mapExpr(a, f));
    if (args.some((a, i) => a !== e.args[i])) cur = Object.freeze({ ...e, args: Object.freeze(args) });
  } else if (e.kind === "list") {
    const items = e.items.map((a) => mapExpr(a, f));
    if (items.some((a, i) => a !== e.items[i])) cur = Object.freeze({ ...e, items: Object.freeze(items) });
  }
  return f(cur) ?? cur;
}

/** Rebuilds every expression in a statement list (not descending into new statements' identity otherwise). */
export function mapStmtExprs(stmts: readonly Stmt[], f: (e: Expr) => Expr | undefined): Stmt[] {
  const me = (e: Expr) => mapExpr(e, f);
  return stmts.map((s): Stmt => {
    switch (s.kind) {
      case "assign": return Object.freeze({ ...s, value: me(s.value) });
      case "eval": return Object.freeze({ ...s, expr: me(s.expr) });
      case "for": return Object.freeze({ ...s, start: me(s.start), stop: me(s.stop), step: me(s.step), inits: s.inits.map(me), body: mapStmtExprs(s.body, f) });
      case "while": return Object.freeze({ ...s, inits: s.inits.map(me), cond: me(s.cond), body: mapStmtExprs(s.body, f) });
      case "if": return Object.freeze({ ...s, cond: me(s.cond), then: mapStmtExprs(s.then, f), else: mapStmtExprs(s.else, f) });
      case "yield": case "break": case "continue": case "return": return Object.freeze({ ...s, values: s.values.map(me) });
      case "scope": return Object.freeze({ ...s, body: mapStmtExprs(s.body, f) });
    }
  });
}

/** Substitute variables by id. */
export function substitute(stmts: readonly Stmt[], map: Map<number, Expr>): Stmt[] {
  return mapStmtExprs(stmts, (e) => (e.kind === "var" ? map.get(e.id) : undefined));
}

/** Structural equality of two expressions: the same variables (by identity), constants, ops and attributes. */
export function sameExpr(a: Expr, b: Expr): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "var") return a.id === (b as typeof a).id;
  if (a.kind === "const") return Object.is(a.value, (b as typeof a).value) && a.dtype === (b as typeof a).dtype;
  if (a.kind === "list") return a.items.length === (b as typeof a).items.length && a.items.every((x, i) => sameExpr(x, (b as typeof a).items[i]));
  const c = b as typeof a;
  return a.op === c.op && a.args.length === c.args.length && a.args.every((x, i) => sameExpr(x, c.args[i])) && JSON.stringify(a.attrs) === JSON.stringify(c.attrs);
}

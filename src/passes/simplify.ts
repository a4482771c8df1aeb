// simplify: constant folding of scalar ops, copy propagation, `if` on a constant condition,
// and removal of unused pure computations.
import {
  getOp, mkConst, mapExpr, mkAssign, forEachExpr, type Expr, type Func, type Stmt, type Value, type EvalEnv,
} from "../ir/index.js";
import { TsptoCompileError } from "../ir/index.js";
import type { Pass } from "./manager.js";

const foldEnv: EvalEnv = { fail(m, span) { throw new TsptoCompileError("E_FOLD", m, span); } };

export const simplifyPass: Pass = {
  name: "Simplify",
  run(p) {
    return p.withFunctions(p.functions.map((f) => {
      let body = f.body;
      for (let i = 0; i < 8; i++) {
        const next = dce(fold(body, new Map()));
        if (next.length === body.length && next.every((s, k) => s === body[k])) break;
        body = next;
      }
      return Object.freeze({ ...f, body: Object.freeze([...body]) }) as Func;
    }));
  },
};

function foldExpr(e: Expr, env: Map<number, Expr>): Expr {
  return mapExpr(e, (x) => {
    if (x.kind === "var") return env.get(x.id);
    if (x.kind !== "call" || x.op === "call") return undefined;
    const op = getOp(x.op);
    const known = op.fold?.(x.args, x.attrs);
    if (known !== undefined) return mkConst(known, x.type.kind === "scalar" ? x.type.dtype : undefined, x.span);
    if (op.level !== "scalar" || !x.args.every((a) => a.kind === "const")) return undefined;
    const v = op.evaluate(x.args.map((a) => (a.kind === "const" ? a.value : undefined)) as Value[], x.attrs, foldEnv, x);
    if (typeof v !== "number" && typeof v !== "boolean") return undefined;
    if (typeof v === "number" && !Number.isFinite(v)) return undefined;
    return mkConst(v, x.type.kind === "scalar" ? x.type.dtype : undefined, x.span);
  });
}

/** Fold constants and propagate copies/constants (env: var id -> replacement). */
function fold(stmts: readonly Stmt[], env: Map<number, Expr>): Stmt[] {
  const out: Stmt[] = [];
  const fe = (e: Expr) => foldExpr(e, env);
  for (const s of stmts) {
    switch (s.kind) {
      case "assign": {
        const value = fe(s.value);
        if (s.targets.length === 1 && (value.kind === "const" || value.kind === "var") && s.targets[0].type.kind === "scalar") {
          env.set(s.targets[0].id, value);
          continue;
        }
        out.push(mkAssign(s.targets, value, s.span));
        break;
      }
      case "eval": out.push(Object.freeze({ ...s, expr: fe(s.expr) })); break;
      case "if": {
        const cond = fe(s.cond);
        if (cond.kind === "const") {
          const branch = cond.value ? s.then : s.else;
          const last = branch[branch.length - 1];
          const plain = !branch.some((b) => b.kind === "break" || b.kind === "continue" || b.kind === "return");
          if (plain && (s.results.length === 0 || last?.kind === "yield")) {
            const inner = fold(s.results.length ? branch.slice(0, -1) : branch, env);
            out.push(...inner);
            if (s.results.length && last?.kind === "yield") s.results.forEach((r, i) => out.push(mkAssign([r], fe(last.values[i]), s.span)));
            continue;
          }
        }
        out.push(Object.freeze({ ...s, cond, then: fold(s.then, env), else: fold(s.else, env) }));
        break;
      }
      case "for": out.push(Object.freeze({ ...s, start: fe(s.start), stop: fe(s.stop), step: fe(s.step), inits: s.inits.map(fe), body: fold(s.body, env) })); break;
      case "while": out.push(Object.freeze({ ...s, inits: s.inits.map(fe), cond: fe(s.cond), body: fold(s.body, env) })); break;
      case "scope": out.push(Object.freeze({ ...s, body: fold(s.body, env) })); break;
      default: out.push(Object.freeze({ ...s, values: s.values.map(fe) })); break;
    }
  }
  return out;
}

/** Drop assignments of pure ops whose results are never used. */
function dce(stmts: readonly Stmt[]): Stmt[] {
  const used = new Set<number>();
  forEachExpr(stmts, (e) => { if (e.kind === "var") used.add(e.id); });
  const sweep = (ss: readonly Stmt[]): Stmt[] => ss.flatMap((s): Stmt[] => {
    switch (s.kind) {
      case "assign": {
        if (s.targets.some((t) => used.has(t.id))) return [s];
        const v = s.value;
        const pure = v.kind !== "call" || (v.op !== "call" && getOp(v.op).pure);
        return pure ? [] : [s];
      }
      case "for": case "while": return [Object.freeze({ ...s, body: sweep(s.body) })];
      case "if": return [Object.freeze({ ...s, then: sweep(s.then), else: sweep(s.else) })];
      case "scope": return [Object.freeze({ ...s, body: sweep(s.body) })];
      default: return [s];
    }
  });
  return sweep(stmts);
}

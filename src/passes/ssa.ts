// SSA / carried values: a `let` variable assigned more than once becomes a chain of single-
// assignment variables. Loops carry the variables their body assigns as iterArgs (inits
// before, a yield at the end of the body, results after); `if` merges the variables its
// branches assign through results and yields; break/continue carry the current values.
import {
  TsptoTypeError, freshVar, mapExpr, mkAssign, mkBreak, mkContinue, mkEval, mkFor, mkIf, mkReturn, mkScope, mkWhile, mkYield,
  forEachStmt, exprType, typeEqual, typeStr, type Expr, type Func, type Stmt, type Var,
} from "../ir/index.js";
import type { Pass } from "./manager.js";

export const ssaPass: Pass = {
  name: "SSA",
  after: { ssa: true },
  run(p) {
    return p.withFunctions(p.functions.map(ssaFunc));
  },
};

function assignedIn(stmts: readonly Stmt[]): Set<number> {
  const out = new Set<number>();
  forEachStmt(stmts, (s) => { if (s.kind === "assign") s.targets.forEach((t) => out.add(t.id)); });
  return out;
}

type Env = Map<number, Expr>;

function ssaFunc(f: Func): Func {
  const counts = new Map<number, number>();
  forEachStmt(f.body, (s) => { if (s.kind === "assign") s.targets.forEach((t) => counts.set(t.id, (counts.get(t.id) ?? 0) + 1)); });
  const mutable = new Set([...counts].filter(([, n]) => n > 1).map(([id]) => id));
  if (mutable.size === 0) return f;
  const origin = new Map<number, Var>(); // mutable var id -> the source variable (for names/types/errors)
  forEachStmt(f.body, (s) => { if (s.kind === "assign") s.targets.forEach((t) => { if (mutable.has(t.id)) origin.set(t.id, t); }); });
  const loops: Var[][] = []; // carried source variables of the enclosing loops

  const sub = (e: Expr, env: Env) => mapExpr(e, (x) => (x.kind === "var" ? env.get(x.id) : undefined));
  const carriedOf = (stmts: readonly Stmt[], env: Env): Var[] => {
    const assigned = assignedIn(stmts);
    return [...env.keys()].filter((id) => assigned.has(id)).map((id) => origin.get(id)!);
  };
  const checkCarried = (v: Var, value: Expr, span: Stmt["span"]) => {
    const t = exprType(value);
    if (!typeEqual(t, v.type)) {
      throw new TsptoTypeError("E_CARRIED_TYPE", `'${v.name}' changes type from ${typeStr(v.type)} to ${typeStr(t)} inside a loop or branch`, span,
        "a variable carried across loop iterations or if-branches must keep its shape, dtype and memory space");
    }
  };

  /** Rewrites a block; `env` ends holding the values at the block's end. Returns [stmts, terminated]. */
  const block = (stmts: readonly Stmt[], env: Env): [Stmt[], boolean] => {
    const out: Stmt[] = [];
    for (const s of stmts) {
      switch (s.kind) {
        case "assign": {
          const value = sub(s.value, env);
          const targets = s.targets.map((t) => {
            if (!mutable.has(t.id)) return t;
            if (env.has(t.id)) checkCarried(origin.get(t.id)!, value.kind === "call" && s.targets.length > 1 ? t : value, s.span);
            const nv = freshVar(t);
            env.set(t.id, nv);
            return nv;
          });
          out.push(mkAssign(targets, value, s.span));
          break;
        }
        case "eval": out.push(mkEval(sub(s.expr, env), s.span)); break;
        case "return": out.push(mkReturn(s.values.map((v) => sub(v, env)), s.span)); return [out, true];
        case "yield": out.push(mkYield(s.values.map((v) => sub(v, env)), s.span)); return [out, true];
        case "break": case "continue": {
          const carried = loops[loops.length - 1] ?? [];
          const values = s.values.length ? s.values.map((v) => sub(v, env)) : carried.map((v) => env.get(v.id)!);
          out.push(s.kind === "break" ? mkBreak(values, s.span) : mkContinue(values, s.span));
          return [out, true];
        }
        case "scope": { const [body, term] = block(s.body, env); out.push(mkScope(s.level, body, s.span)); if (term) return [out, true]; break; }
        case "if": {
          const cond = sub(s.cond, env);
          const carried = s.results.length ? [] : carriedOf([...s.then, ...s.else], env);
          const te = new Map(env), ee = new Map(env);
          const [then, tt] = block(s.then, te);
          const [els, et] = block(s.else, ee);
          if (carried.length) {
            for (const [b, be, bt] of [[then, te, tt], [els, ee, et]] as const) {
              if (bt) continue;
              const vals = carried.map((v) => be.get(v.id)!);
              vals.forEach((x, i) => checkCarried(carried[i], x, s.span));
              b.push(mkYield(vals, s.span));
            }
          }
          const results = carried.length ? carried.map((v) => freshVar(v)) : [...s.results];
          carried.forEach((v, i) => env.set(v.id, results[i]));
          out.push(mkIf({ cond, then, else: els, results, span: s.span }));
          if (tt && et) return [out, true];
          break;
        }
        case "for": case "while": {
          const inits0 = s.inits.map((v) => sub(v, env));
          const carried = s.iterArgs.length ? [] : carriedOf(s.body, env);
          const iterArgs = [...s.iterArgs, ...carried.map((v) => freshVar(v))];
          const inits = [...inits0, ...carried.map((v) => env.get(v.id)!)];
          const be: Env = new Map(env);
          carried.forEach((v, i) => be.set(v.id, iterArgs[s.iterArgs.length + i]));
          loops.push(carried);
          const cond = s.kind === "while" ? sub(s.cond, be) : undefined;
          const [body, term] = block(s.body, be);
          loops.pop();
          if (carried.length && !term) {
            const vals = carried.map((v) => be.get(v.id)!);
            vals.forEach((x, i) => checkCarried(carried[i], x, s.span));
            body.push(mkYield(vals, s.span));
          }
          const results = [...s.results, ...carried.map((v) => freshVar(v))];
          carried.forEach((v, i) => env.set(v.id, results[s.results.length + i]));
          out.push(s.kind === "for"
            ? mkFor({ loopVar: s.loopVar, start: sub(s.start, env), stop: sub(s.stop, env), step: sub(s.step, env), iterArgs, inits, body, results, span: s.span })
            : mkWhile({ iterArgs, inits, cond: cond!, body, results, span: s.span }));
          break;
        }
      }
    }
    return [out, false];
  };
  const [body] = block(f.body, new Map());
  return Object.freeze({ ...f, body: Object.freeze(body) });
}

// IR analyses shared by the passes, the code generators and the artifact metadata.
import type { Expr, Func, Stmt, Var } from "./nodes.js";
import type { Program } from "./program.js";

/**
 * Which parameter each returned value of a function is (following tensor aliases: store
 * results, plain copies, carried values). Unknown positions are left undefined.
 */
export function returnedParams(fn: Func, program?: Program): (number | undefined)[] {
  const alias = new Map<number, number>();
  fn.params.forEach((p, i) => alias.set(p.var.id, i));
  const of = (e: Expr | undefined): number | undefined => {
    if (!e) return undefined;
    if (e.kind === "var") return alias.get(e.id);
    if (e.kind === "call" && e.op === "tile.store") return of(e.args[2]);
    return undefined;
  };
  const bind = (v: Var, i: number | undefined) => { if (i !== undefined && v.type.kind === "tensor") alias.set(v.id, i); };
  let out: (number | undefined)[] | null = null;
  const lastYields = (ss: readonly Stmt[]): readonly Expr[] | undefined => {
    const l = ss[ss.length - 1];
    return l && l.kind === "yield" ? l.values : undefined;
  };
  const walk = (ss: readonly Stmt[]): void => {
    for (const s of ss) {
      switch (s.kind) {
        case "assign": {
          const v = s.value;
          if (program && v.kind === "call" && v.op === "call") {
            const callee = program.getFunction(String(v.attrs.callee));
            const ret = callee && callee !== fn ? returnedParams(callee, program) : [];
            s.targets.forEach((t, k) => bind(t, ret[k] === undefined ? undefined : of(v.args[ret[k]!])));
          } else if (s.targets.length === 1) {
            bind(s.targets[0], of(v));
          }
          break;
        }
        case "for": case "while":
          s.iterArgs.forEach((v, k) => bind(v, of(s.inits[k])));
          walk(s.body);
          s.results.forEach((v, k) => bind(v, of(s.inits[k])));
          break;
        case "if": {
          walk(s.then); walk(s.else);
          const y = lastYields(s.then) ?? lastYields(s.else);
          s.results.forEach((v, k) => bind(v, of(y?.[k])));
          break;
        }
        case "return": if (!out) out = s.values.map(of); break;
        default: break;
      }
    }
  };
  walk(fn.body);
  return out ?? [];
}

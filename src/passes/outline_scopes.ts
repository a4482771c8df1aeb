// outline: every pl.at scope of an orchestration function becomes an InCore function; the
// scope is replaced by a call. Parameters are the scope's free variables (tensors first,
// then scalars); a tensor written inside is Out (InOut when also read).
import {
  TsptoCompileError, effectsOf, getOp, freshVar, mkCall, mkEval, mkFunc, substitute, freeVars, definedVars, forEachExpr, forEachStmt,
  voidT, typeStr, type Direction, type Expr, type Func, type Param, type Stmt, type Var, type Program,
} from "../ir/index.js";
import type { Pass } from "./manager.js";

export const outlinePass: Pass = {
  name: "OutlineScopes",
  after: { outlined: true },
  run(p) {
    const out: Func[] = [];
    const taken = new Set(p.functions.map((f) => f.name));
    for (const f of p.functions) {
      if (f.fnKind !== "orchestration") { out.push(f); continue; }
      let k = 0;
      const rewrite = (stmts: readonly Stmt[]): Stmt[] => stmts.map((s): Stmt => {
        switch (s.kind) {
          case "scope": {
            let name = `${f.name}_incore_${k++}`;
            while (taken.has(name)) name = `${f.name}_incore_${k++}`;
            taken.add(name);
            const { fn, args } = outlineScope(p, f, s.body, name, s.span);
            out.push(fn);
            return mkEval(mkCall("call", args, { callee: name }, voidT, s.span), s.span);
          }
          case "for": case "while": return Object.freeze({ ...s, body: rewrite(s.body) });
          case "if": return Object.freeze({ ...s, then: rewrite(s.then), else: rewrite(s.else) });
          default: return s;
        }
      });
      const body = rewrite(f.body);
      checkEscapes(f, body);
      out.push(Object.freeze({ ...f, body: Object.freeze(body) }));
    }
    return p.withFunctions(out);
  },
};

/** Which of `vars` (tensors) are read and written by `stmts`, from op effects and callee directions. */
export function tensorAccess(p: Program, stmts: readonly Stmt[]): { reads: Set<number>; writes: Set<number> } {
  const reads = new Set<number>(), writes = new Set<number>();
  forEachExpr(stmts, (e) => {
    if (e.kind !== "call") return;
    if (e.op === "call") {
      const callee = p.getFunction(String(e.attrs.callee));
      callee?.params.forEach((prm, i) => {
        const a = e.args[i];
        if (a?.kind !== "var" || a.type.kind !== "tensor") return;
        if (prm.dir !== "out") reads.add(a.id);
        if (prm.dir !== "in") writes.add(a.id);
      });
      return;
    }
    const eff = effectsOf(getOp(e.op), e.args, e.attrs);
    for (const i of eff.reads) { const a = e.args[i]; if (a?.kind === "var") reads.add(a.id); }
    for (const i of eff.writes) { const a = e.args[i]; if (a?.kind === "var") writes.add(a.id); }
  });
  return { reads, writes };
}

function outlineScope(p: Program, f: Func, body: readonly Stmt[], name: string, span: Stmt["span"]): { fn: Func; args: Expr[] } {
  const free = freeVars(body);
  for (const v of free) {
    if (v.type.kind === "tile") {
      throw new TsptoCompileError("E_SCOPE_TILE", `tile '${v.name}' is defined outside the pl.at scope that uses it`, v.span,
        "tiles live on chip inside one pl.at scope: create or load the tile inside the scope");
    }
  }
  const ordered = [...free.filter((v) => v.type.kind === "tensor"), ...free.filter((v) => v.type.kind !== "tensor")];
  const { reads, writes } = tensorAccess(p, body);
  const map = new Map<number, Expr>();
  const params: Param[] = ordered.map((v) => {
    const pv = freshVar(v);
    map.set(v.id, pv);
    let dir: Direction = "in";
    if (v.type.kind === "tensor" && writes.has(v.id)) dir = reads.has(v.id) ? "inout" : "out";
    return { var: pv, dir };
  });
  // A pure Out inside the scope is only written; make sure parameters of the entry that were
  // declared In are not written (the caller's contract).
  for (const prm of f.params) {
    if (prm.dir === "in" && prm.var.type.kind === "tensor" && writes.has(prm.var.id)) {
      throw new TsptoCompileError("E_WRITE_IN", `parameter '${prm.var.name}' of '${f.name}' is written inside pl.at but is an input`, prm.var.span,
        `declare it pl.Out<...> (written only) or pl.InOut<...> (read and written)`);
    }
  }
  const fn = mkFunc({ name, fnKind: "incore", params, returnTypes: [], body: substitute(body, map), span });
  return { fn, args: ordered };
}

/** Values defined inside a scope cannot be used after it (the scope became another function). */
function checkEscapes(f: Func, body: readonly Stmt[]): void {
  const defined = definedVars(body);
  const params = new Set(f.params.map((q) => q.var.id));
  forEachStmt(body, () => undefined);
  forEachExpr(body, (e) => {
    if (e.kind === "var" && !defined.has(e.id) && !params.has(e.id)) {
      throw new TsptoCompileError("E_SCOPE_ESCAPE", `'${e.name}' (${typeStr(e.type)}) is defined inside a pl.at scope and used outside it`, e.span,
        "compute it outside the scope, or write it to a tensor inside the scope");
    }
  });
}
export type { Var };

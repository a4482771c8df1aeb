// derive task dependencies: every call of an InCore function from the orchestration is a
// task. Its read/write set (from the callee's parameter directions) is recorded on the call
// as `accesses`, with a `scopeId` naming the call site; the runtime orders tasks whose
// regions overlap with a write. Also checks that a kernel writes only Out/InOut params.
import { TsptoCompileError, effectsOf, forEachExpr, getOp, mapStmtExprs, mkCall, type Func, type Program, type AttrValue, type Span } from "../ir/index.js";
import type { Pass } from "./manager.js";
import { tensorAccess } from "./outline_scopes.js";

export const depsPass: Pass = {
  name: "DeriveDeps",
  run(p) {
    for (const f of p.functions) if (f.fnKind === "incore") checkKernelWrites(p, f);
    let scopeId = 0;
    return p.withFunctions(p.functions.map((f) => {
      if (f.fnKind !== "orchestration") return f;
      const body = mapStmtExprs(f.body, (e) => {
        if (e.kind !== "call" || e.op !== "call") return undefined;
        const callee = p.getFunction(String(e.attrs.callee));
        if (!callee || callee.fnKind !== "incore") return undefined;
        const accesses: AttrValue[] = [];
        callee.params.forEach((prm, i) => {
          if (prm.var.type.kind !== "tensor") return;
          accesses.push({ arg: i, mode: prm.dir === "in" ? "read" : prm.dir === "out" ? "write" : "readwrite" });
        });
        return mkCall("call", e.args, { ...e.attrs, scopeId: scopeId++, accesses }, e.type, e.span);
      });
      return Object.freeze({ ...f, body: Object.freeze(body), attrs: Object.freeze({ ...f.attrs, lowered: true, tasks: scopeId }) });
    }));
  },
};

function checkKernelWrites(p: Program, f: Func): void {
  const { writes } = tensorAccess(p, f.body);
  for (const prm of f.params) {
    if (prm.dir === "in" && writes.has(prm.var.id)) {
      // point at the first op that writes it (the parameter's declaration goes in the message)
      let at: Span | undefined;
      forEachExpr(f.body, (e) => {
        if (at || e.kind !== "call" || e.op === "call") return;
        const eff = effectsOf(getOp(e.op), e.args, e.attrs);
        if (eff.writes.some((i) => { const a = e.args[i]; return a?.kind === "var" && a.id === prm.var.id; })) at = e.span;
      });
      const decl = prm.var.span;
      throw new TsptoCompileError("E_WRITE_IN",
        `kernel '${f.name}' writes parameter '${prm.var.name}', which it does not declare Out or InOut` +
        (at && decl.line ? ` (declared at ${decl.file}:${decl.line}:${decl.col})` : ""), at ?? decl,
        `annotate it pl.Out<pl.Tensor> (written only) or pl.InOut<pl.Tensor> (read and written)`);
    }
  }
}

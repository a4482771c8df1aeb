// inline: splice pl.jit.inline helpers into each call site and drop them from the program.
import { TsptoCompileError, mkAssign, mapExpr, mkVar, type Expr, type Func, type Stmt, type Call } from "../ir/index.js";
import { mapStmtExprs } from "../ir/index.js";
import { cloneStmts } from "./util.js";
import type { Pass } from "./manager.js";

export const inlinePass: Pass = {
  name: "Inline",
  run(p) {
    const inl = new Map(p.functions.filter((f) => f.fnKind === "inline").map((f) => [f.name, f]));
    if (inl.size === 0) return p;
    const fns = p.functions.filter((f) => f.fnKind !== "inline").map((f) => ({ ...f, body: inlineBlock(f.body, inl, 0) }) as Func);
    return p.withFunctions(fns.map((f) => Object.freeze(f)));
  },
};

function inlineBlock(stmts: readonly Stmt[], inl: Map<string, Func>, depth: number): Stmt[] {
  if (depth > 32) throw new TsptoCompileError("E_INLINE_RECURSION", "pl.jit.inline helpers call each other more than 32 levels deep", stmts[0]?.span, "inline helpers cannot be recursive");
  const out: Stmt[] = [];
  for (const s of stmts) {
    // Hoist every inline call out of this statement's expressions, innermost first.
    const pre: Stmt[] = [];
    const hoist = (e: Expr): Expr => mapExpr(e, (x) => {
      if (x.kind !== "call" || x.op !== "call" || !inl.has(String(x.attrs.callee))) return undefined;
      const { stmts: body, results } = expand(x, inl.get(String(x.attrs.callee))!);
      pre.push(...inlineBlock(body, inl, depth + 1));
      if (results.length === 1) return results[0];
      return x; // multi-result: handled at assignment level below
    });
    // Whole-statement multi-result assignment: const [a, b] = helper(...)
    if (s.kind === "assign" && s.value.kind === "call" && s.value.op === "call" && inl.has(String(s.value.attrs.callee)) && s.targets.length > 1) {
      const args = s.value.args.map(hoist);
      const call = { ...s.value, args } as Call;
      const { stmts: body, results } = expand(call, inl.get(String(call.attrs.callee))!);
      out.push(...pre, ...inlineBlock(body, inl, depth + 1));
      s.targets.forEach((t, i) => out.push(mkAssign([t], results[i], s.span)));
      continue;
    }
    // Only this statement's own expressions are hoisted here (a loop's bounds and inits, a
    // branch's condition); nested bodies are inlined in place by the recursion, so that a
    // helper called inside pl.at (or a loop) is spliced inside it, not before it.
    let ns: Stmt;
    switch (s.kind) {
      case "for": ns = Object.freeze({ ...s, start: hoist(s.start), stop: hoist(s.stop), step: hoist(s.step), inits: s.inits.map(hoist), body: inlineBlock(s.body, inl, depth) }); break;
      case "while": ns = Object.freeze({ ...s, inits: s.inits.map(hoist), cond: hoist(s.cond), body: inlineBlock(s.body, inl, depth) }); break;
      case "if": ns = Object.freeze({ ...s, cond: hoist(s.cond), then: inlineBlock(s.then, inl, depth), else: inlineBlock(s.else, inl, depth) }); break;
      case "scope": ns = Object.freeze({ ...s, body: inlineBlock(s.body, inl, depth) }); break;
      default: [ns] = mapStmtExprs([s], hoist);
    }
    out.push(...pre, ns);
  }
  return out;
}

/** The helper's body with parameters bound to the call's arguments; its final return gives the results. */
function expand(call: Call, f: Func): { stmts: Stmt[]; results: Expr[] } {
  const map = new Map<number, Expr>();
  const stmts: Stmt[] = [];
  f.params.forEach((prm, i) => {
    const a = call.args[i];
    if (a.kind === "var" || a.kind === "const") map.set(prm.var.id, a);
    else { const t = mkVar(prm.var.name, prm.var.type, call.span); stmts.push(mkAssign([t], a, call.span)); map.set(prm.var.id, t); }
  });
  const body = cloneStmts(f.body, map);
  const last = body[body.length - 1];
  const hasReturn = body.some((s, i) => s.kind === "return" && i !== body.length - 1);
  if (hasReturn) throw new TsptoCompileError("E_INLINE_RETURN", `inline helper '${f.name}' returns before its last statement`, f.span, "an inline helper may only return at its end");
  if (last?.kind === "return") { body.pop(); stmts.push(...body); return { stmts, results: [...last.values] }; }
  stmts.push(...body);
  return { stmts, results: [] };
}

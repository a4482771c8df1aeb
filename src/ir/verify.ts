// The IR verifier: structural invariants every pass must keep. Runs between passes in
// tests (and when TSPTO_VERIFY=1). Reports internal errors (a pass bug), not user errors.
import type { Expr, Func, Stmt, Var } from "./nodes.js";
import type { Program } from "./program.js";
import { getOp, hasOp, inferCall } from "./registry.js";
import { validSources } from "./valid.js";
import { typeEqual, typeStr } from "./types.js";

export class VerifyError extends Error {
  constructor(message: string) { super(`IR verification failed: ${message}`); this.name = "VerifyError"; }
}

export interface VerifyOptions {
  /** Every variable assigned at most once (after the SSA pass). */
  ssa?: boolean;
  /** No pl.at scopes left (after outlining). */
  outlined?: boolean;
}

export function verifyProgram(p: Program, opts: VerifyOptions = {}): void {
  if (!p.getFunction(p.entry)) throw new VerifyError(`entry '${p.entry}' is not a function of the program`);
  const names = new Set<string>();
  for (const f of p.functions) {
    if (names.has(f.name)) throw new VerifyError(`function '${f.name}' defined twice`);
    names.add(f.name);
  }
  for (const f of p.functions) verifyFunc(p, f, opts);
}

function verifyFunc(p: Program, f: Func, opts: VerifyOptions): void {
  const fail = (m: string): never => { throw new VerifyError(`${f.name}: ${m}`); };
  const scopes: Set<number>[] = [new Set(f.params.map((q) => q.var.id))];
  const assigned = new Set<number>(f.params.map((q) => q.var.id));
  const visible = (v: Var) => scopes.some((s) => s.has(v.id));
  const define = (v: Var, what: string) => {
    if (opts.ssa && assigned.has(v.id)) fail(`${what}: '${v.name}' (#${v.id}) assigned more than once in SSA form`);
    assigned.add(v.id);
    scopes[scopes.length - 1].add(v.id);
  };
  const expr = (e: Expr): void => {
    if (e.kind === "var") { if (!visible(e)) fail(`'${e.name}' (#${e.id}) used before definition or outside its scope`); return; }
    if (e.kind === "list") { e.items.forEach(expr); return; }
    if (e.kind !== "call") return;
    e.args.forEach(expr);
    if (e.op === "call") {
      const callee = p.getFunction(String(e.attrs.callee));
      if (!callee) fail(`call of unknown function '${String(e.attrs.callee)}'`);
      if (callee!.params.length !== e.args.length) fail(`call of '${callee!.name}' with ${e.args.length} args, expects ${callee!.params.length}`);
      return;
    }
    if (!hasOp(e.op)) fail(`unknown op '${e.op}'`);
    const op = getOp(e.op);
    if (op.level === "orchestration") {
      if (f.fnKind !== "orchestration" || inScope > 0) fail(`orchestration op '${e.op}' inside an on-chip scope or kernel`);
    } else if (op.level !== "scalar" && f.fnKind === "orchestration" && inScope === 0) fail(`op '${e.op}' outside an on-chip scope`);
    const t = inferCall(op, e.args, e.attrs, e.span);
    if (!typeEqual(t, e.type)) fail(`${e.op}: recorded type ${typeStr(e.type)} but inferred ${typeStr(t)}`);
    validSources(e); // a runtime validShape must be traceable to its operands (E_DYNAMIC otherwise)
  };
  let inScope = 0;
  let loopDepth = 0;
  // Before SSA a `let` may be first assigned inside a branch and read after it (assigned on
  // every path, which the front end checks), so block scoping is enforced in SSA form only.
  const push = () => { if (opts.ssa) scopes.push(new Set()); };
  const pop = () => { if (opts.ssa) scopes.pop(); };
  const block = (ss: readonly Stmt[]) => { push(); ss.forEach(stmt); pop(); };
  const stmt = (s: Stmt): void => {
    switch (s.kind) {
      case "assign": expr(s.value); s.targets.forEach((v) => define(v, "assign")); break;
      case "eval": expr(s.expr); break;
      case "for":
        expr(s.start); expr(s.stop); expr(s.step); s.inits.forEach(expr);
        if (s.inits.length !== s.iterArgs.length || s.results.length !== s.iterArgs.length) fail("for: iterArgs/inits/results lengths differ");
        push(); define(s.loopVar, "loop var"); s.iterArgs.forEach((v) => define(v, "iter arg"));
        loopDepth++; s.body.forEach(stmt); loopDepth--; pop();
        checkTerminator(s.body, s.iterArgs.length, "for");
        s.results.forEach((v) => define(v, "for result"));
        break;
      case "while":
        s.inits.forEach(expr);
        if (s.inits.length !== s.iterArgs.length || s.results.length !== s.iterArgs.length) fail("while: iterArgs/inits/results lengths differ");
        push(); s.iterArgs.forEach((v) => define(v, "iter arg")); expr(s.cond);
        loopDepth++; s.body.forEach(stmt); loopDepth--; pop();
        checkTerminator(s.body, s.iterArgs.length, "while");
        s.results.forEach((v) => define(v, "while result"));
        break;
      case "if":
        expr(s.cond); block(s.then); block(s.else);
        if (s.results.length) { checkTerminator(s.then, s.results.length, "if/then"); checkTerminator(s.else, s.results.length, "if/else"); }
        s.results.forEach((v) => define(v, "if result"));
        break;
      case "yield": s.values.forEach(expr); break;
      case "break": case "continue":
        if (loopDepth === 0) fail(`${s.kind} outside a loop`);
        s.values.forEach(expr); break;
      case "return": s.values.forEach(expr); break;
      case "scope":
        if (opts.outlined) fail("pl.at scope left after outlining");
        inScope++; block(s.body); inScope--; break;
    }
  };
  const checkTerminator = (body: readonly Stmt[], n: number, what: string) => {
    if (n === 0) return;
    const last = body[body.length - 1];
    if (!last || !["yield", "break", "continue", "return"].includes(last.kind)) fail(`${what}: body must end with a yield of ${n} values`);
    if (last.kind === "yield" && last.values.length !== n) fail(`${what}: yields ${last.values.length} values, expected ${n}`);
  };
  f.body.forEach(stmt);
}

// FunctionBuilder: builds one IR function from a kernel's TypeScript AST (build), and the
// structured control flow: if/for-of/while, return, pl.at scopes and the IR text forms
// pl.forRange/whileLoop/ifElse with pl.yield/break/continue (carried values and results).
import { ts } from "../typescript.js";
import {
  exprType, mkBreak, mkConst, mkContinue, mkEval, mkFor, mkFunc, mkIf, mkReturn, mkScope, mkVar, mkWhile, mkYield,
  type Func, type Span, type Stmt, type Var,
} from "../../ir/nodes.js";
import { INDEX, typeStr, type Type } from "../../ir/types.js";
import { annType, readAnnotation } from "../annotations.js";
import type { KernelFnNode } from "../source.js";
import { StmtBuilder } from "./statements.js";
import type { BuildOptions, ParamSpec } from "./types.js";

export class FunctionBuilder extends StmtBuilder {
  // ------------------------------------------------------------ the function

  build(node: KernelFnNode, irName: string, params: readonly ParamSpec[], opts: BuildOptions = {}): Func {
    this.scopes.push(new Map());
    const paramVars = params.map((p) => {
      const v = mkVar(p.name, p.type, this.span(p.node));
      this.paramDirs.set(p.name, p.dir);
      this.declare({ name: p.name, var: v, folded: p.folded, mutable: false, role: "param" });
      return v;
    });
    const body: Stmt[] = [];
    if (!node.body) this.syntax("E_SYNTAX", `kernel '${this.env.kernelName}' has no body`, node);
    if (ts.isBlock(node.body)) this.stmts(node.body.statements, body);
    else {
      // an expression-bodied arrow: `(a) => expr` returns expr
      const e = this.expr(node.body);
      body.push(mkReturn([e], this.span(node.body)));
      this.returns.push({ types: [exprType(e)], span: this.span(node.body) });
    }
    this.scopes.pop();

    const returnTypes = opts.returnTypes ?? this.inferReturnTypes();
    const fparams = params.map((p, i) => ({ var: paramVars[i], dir: p.dir ?? this.inferDir(paramVars[i]) }));
    // Scalars specialized on their call value are recorded, so a compiled program can check
    // that it is launched with the values it was compiled for.
    const specialized = Object.fromEntries(params.filter((p) => p.folded).map((p) => [p.name, p.folded!.value]));
    const attrs = Object.keys(specialized).length ? { ...(opts.attrs ?? {}), specialized } : opts.attrs ?? {};
    return mkFunc({ name: irName, fnKind: this.env.fnKind, params: fparams, returnTypes, body, attrs, span: this.span(node) });
  }

  // ------------------------------------------------------------ control flow

  protected atStmt(call: ts.CallExpression, span: Span, out: Stmt[]): void {
    if (call.arguments.length !== 2) this.syntax("E_ARITY", `pl.at takes 2 arguments (level, body), got ${call.arguments.length}`, call);
    const [lvl, fn] = call.arguments;
    const level = this.constOf(lvl);
    if (level?.k !== "str" || (this.kernel && level.v !== "CORE_GROUP")) {
      this.syntax("E_SYNTAX", `pl.at supports only pl.Level.CORE_GROUP, got ${lvl.getText()}`, lvl, "write pl.at(pl.Level.CORE_GROUP, () => { ... })");
    }
    const arrow = this.arrowArg(fn, "pl.at", 0);
    const body: Stmt[] = [];
    this.scopeDepth++;
    try {
      this.withFrame("at", false, () => this.arrowBody(arrow, body));
    } finally {
      this.scopeDepth--;
    }
    out.push(mkScope(level.v, body, span));
  }

  /** An arrow/function argument of a statement form with `nParams` parameters (-1: any). */
  protected arrowArg(e: ts.Expression, what: string, nParams: number): ts.ArrowFunction | ts.FunctionExpression {
    const a = ts.isParenthesizedExpression(e) ? e.expression : e;
    if (!ts.isArrowFunction(a) && !ts.isFunctionExpression(a)) this.syntax("E_SYNTAX", `${what} expects an arrow function here`, e);
    if (nParams >= 0 && a.parameters.length !== nParams) {
      this.syntax("E_SYNTAX", `the function passed to ${what} takes ${nParams} parameter${nParams === 1 ? "" : "s"}, got ${a.parameters.length}`, a);
    }
    return a;
  }

  protected arrowBody(a: ts.ArrowFunction | ts.FunctionExpression, out: Stmt[]): void {
    if (ts.isBlock(a.body)) this.stmts(a.body.statements, out);
    else out.push(mkEval(this.expr(a.body), this.span(a.body)));
  }

  protected paramName(p: ts.ParameterDeclaration): string {
    if (!ts.isIdentifier(p.name) || p.dotDotDotToken || p.initializer) this.syntax("E_SYNTAX", "parameters here must be plain names", p);
    return (p.name as ts.Identifier).text;
  }
  /** The type an arrow parameter declares, else `fallback`; a declared type must agree in kind/dtype. */
  protected paramType(p: ts.ParameterDeclaration, fallback: Type | undefined, what: string): Type {
    const ann = p.type ? annType(readAnnotation(p.type, this.annEnv).ann) : null;
    if (ann && fallback && (ann.kind !== fallback.kind || ("dtype" in ann && "dtype" in fallback && ann.dtype !== fallback.dtype))) {
      this.typeErr(`${what} '${p.name.getText()}' is annotated ${typeStr(ann)} but its initial value is ${typeStr(fallback)}`, p);
    }
    const t = ann ?? fallback;
    if (!t) this.syntax("E_SYNTAX", `annotate ${what} '${p.name.getText()}' with its type`, p);
    return t;
  }

  protected jumpStmt(kind: "yield" | "break" | "continue", call: ts.CallExpression, span: Span, out: Stmt[]): void {
    const values = call.arguments.map((a) => this.expr(a));
    if (kind === "yield") {
      const f = this.frame.kind;
      if (f !== "forRange" && f !== "whileLoop" && f !== "ifElse") {
        this.syntax("E_SYNTAX", "pl.yield is only allowed in the bodies of pl.forRange, pl.whileLoop and pl.ifElse", call,
          "with plain loops and if statements, rebind a let variable instead");
      }
      out.push(mkYield(values, span));
    } else {
      if (this.frame.loopDepth === 0) this.syntax("E_SYNTAX", `pl.${kind} outside a loop`, call);
      out.push(kind === "break" ? mkBreak(values, span) : mkContinue(values, span));
    }
    this.flow = null;
  }

  /** The IR text forms with carried values/results. Returns the result variables (bound to `names`). */
  protected structured(kind: "forRange" | "whileLoop" | "ifElse", call: ts.CallExpression, names: readonly ts.Identifier[], span: Span, out: Stmt[]): Var[] {
    const args = call.arguments;
    const arity = { forRange: 5, whileLoop: 3, ifElse: 3 }[kind];
    if (args.length !== arity) this.syntax("E_ARITY", `pl.${kind} takes ${arity} arguments, got ${args.length}`, call);
    const before = this.snapshot();
    const resultsOf = (types: readonly Type[]) => {
      if (names.length && names.length !== types.length) {
        this.syntax("E_SYNTAX", `pl.${kind} produces ${types.length} results but ${names.length} names are bound`, call);
      }
      return types.map((t, i) => mkVar(names[i]?.text ?? `r${i}`, t, names[i] ? this.span(names[i]) : span));
    };
    if (kind === "forRange" || kind === "whileLoop") {
      const initsNode = args[kind === "forRange" ? 3 : 0];
      if (!ts.isArrayLiteralExpression(initsNode)) this.syntax("E_SYNTAX", `the initial values of pl.${kind} are an array literal [a, b, ...]`, initsNode);
      const inits = initsNode.elements.map((e) => this.expr(e));
      const n = inits.length;
      if (kind === "forRange") {
        const [start, stop, step] = [0, 1, 2].map((i) => this.indexExpr(args[i], "pl.forRange bounds"));
        const arrow = this.arrowArg(args[4], "pl.forRange", n + 1);
        const [pi, ...pa] = arrow.parameters;
        const loopVar = mkVar(this.paramName(pi), this.paramType(pi, INDEX, "the loop variable"), this.span(pi.name));
        const iterArgs = pa.map((p, i) => mkVar(this.paramName(p), this.paramType(p, exprType(inits[i]), "the carried value"), this.span(p.name)));
        const body: Stmt[] = [];
        this.withFrame("forRange", true, () => {
          this.declare({ name: loopVar.name, var: loopVar, mutable: false, role: "loop" });
          iterArgs.forEach((v) => this.declare({ name: v.name, var: v, mutable: false, role: "iter" }));
          this.arrowBody(arrow, body);
        });
        this.terminator(body, n, "pl.forRange", arrow);
        this.flow = before;
        const results = resultsOf(iterArgs.map((v) => v.type));
        out.push(mkFor({ loopVar, start, stop, step, iterArgs, inits, body, results, span }));
        return results;
      }
      const condFn = this.arrowArg(args[1], "pl.whileLoop", n);
      const bodyFn = this.arrowArg(args[2], "pl.whileLoop", n);
      const iterArgs = condFn.parameters.map((p, i) => mkVar(this.paramName(p), this.paramType(p, exprType(inits[i]), "the carried value"), this.span(p.name)));
      const cond = this.withFrame("whileLoop", false, () => {
        iterArgs.forEach((v) => this.declare({ name: v.name, var: v, mutable: false, role: "iter" }));
        if (ts.isBlock(condFn.body)) this.syntax("E_SYNTAX", "the condition of pl.whileLoop is an expression: (a) => a < n", condFn.body);
        return this.scalarExpr(condFn.body, "the condition of pl.whileLoop");
      });
      const body: Stmt[] = [];
      this.withFrame("whileLoop", true, () => {
        bodyFn.parameters.forEach((p, i) => this.declare({ name: this.paramName(p), var: iterArgs[i], mutable: false, role: "iter" }));
        this.arrowBody(bodyFn, body);
      });
      this.terminator(body, n, "pl.whileLoop", bodyFn);
      this.flow = before;
      const results = resultsOf(iterArgs.map((v) => v.type));
      out.push(mkWhile({ iterArgs, inits, cond, body, results, span }));
      return results;
    }
    // ifElse
    const cond = this.scalarExpr(args[0], "the condition of pl.ifElse");
    const thenFn = this.arrowArg(args[1], "pl.ifElse", 0);
    const elseFn = this.arrowArg(args[2], "pl.ifElse", 0);
    const thenB: Stmt[] = [], elseB: Stmt[] = [];
    this.withFrame("ifElse", false, () => this.arrowBody(thenFn, thenB));
    const afterThen = this.flow;
    this.flow = before && new Set(before);
    this.withFrame("ifElse", false, () => this.arrowBody(elseFn, elseB));
    this.flow = FunctionBuilder.meet(afterThen, this.flow);
    const yields = [thenB, elseB].map((b) => b[b.length - 1]).filter((s): s is Extract<Stmt, { kind: "yield" }> => s?.kind === "yield");
    const n = names.length || (yields[0]?.values.length ?? 0);
    if (n > 0 && !yields.length) this.syntax("E_SYNTAX", "a branch of pl.ifElse with results must end with pl.yield(...)", call);
    this.terminator(thenB, n, "pl.ifElse", thenFn);
    this.terminator(elseB, n, "pl.ifElse", elseFn);
    // the result types: the then-arrow's return annotation `(): [T] => {` when given (printed IR:
    // results placed apart from their yields by memory planning), else the first yield's values
    const annotated = thenFn.type && ts.isTupleTypeNode(thenFn.type)
      ? thenFn.type.elements.map((el) => annType(readAnnotation(el as ts.TypeNode, this.annEnv).ann)) : null;
    if (annotated && annotated.some((t) => !t)) this.syntax("E_SYNTAX", "the result annotation of pl.ifElse must be a tuple of types: (): [T] => { ... }", thenFn.type!);
    const results = resultsOf(annotated ? annotated as Type[] : n ? yields[0].values.map(exprType) : []);
    // this.flow (already merged) stays
    out.push(mkIf({ cond, then: thenB, else: elseB, results, span }));
    return results;
  }

  /** A body with n carried values must end with a yield of n values (or break/continue/return). */
  protected terminator(body: readonly Stmt[], n: number, what: string, node: ts.Node): void {
    if (n === 0) return;
    const last = body[body.length - 1];
    if (!last || !["yield", "break", "continue", "return"].includes(last.kind)) {
      this.syntax("E_SYNTAX", `the body of ${what} must end with pl.yield(...) of ${n} value${n === 1 ? "" : "s"}`, node);
    }
    if (last.kind === "yield" && last.values.length !== n) {
      this.syntax("E_SYNTAX", `${what} carries ${n} value${n === 1 ? "" : "s"} but pl.yield passes ${last.values.length}`, node);
    }
  }

  protected ifStmt(s: ts.IfStatement, out: Stmt[]): void {
    const cond = this.scalarExpr(s.expression, "an if condition");
    const before = this.snapshot();
    const then = this.nested(s.thenStatement);
    const afterThen = this.flow;
    this.flow = before && new Set(before);
    const els = s.elseStatement ? this.nested(s.elseStatement) : [];
    this.flow = FunctionBuilder.meet(afterThen, this.flow);
    out.push(mkIf({ cond, then, else: els, results: [], span: this.span(s) }));
  }

  protected forOf(s: ts.ForOfStatement, out: Stmt[]): void {
    const init = s.initializer;
    const hint = "write for (const i of pl.range(n)) or pl.range(start, stop, step)";
    if (s.awaitModifier) this.syntax("E_SYNTAX", "for-await loops are not supported in kernels", s, hint);
    if (!ts.isVariableDeclarationList(init) || init.declarations.length !== 1 || !ts.isIdentifier(init.declarations[0].name) ||
      !(init.flags & (ts.NodeFlags.Const | ts.NodeFlags.Let))) {
      this.syntax("E_SYNTAX", "a range loop declares one loop variable", init, hint);
    }
    const call = s.expression;
    if (!ts.isCallExpression(call) || this.plCallName(call) !== "range") {
      this.syntax("E_SYNTAX", "for-of loops in kernels iterate over pl.range(...) only", s.expression, hint);
    }
    const args = call.arguments;
    if (args.length < 1 || args.length > 3) this.syntax("E_ARITY", `pl.range takes 1 to 3 arguments (stop | start, stop, step?), got ${args.length}`, call);
    const sp = this.span(call);
    const bounds = args.map((a) => this.indexExpr(a, "pl.range bounds"));
    const [start, stop, step] = bounds.length === 1 ? [mkConst(0, "int64", sp), bounds[0], mkConst(1, "int64", sp)]
      : [bounds[0], bounds[1], bounds[2] ?? mkConst(1, "int64", sp)];
    const nameNode = init.declarations[0].name as ts.Identifier;
    const loopVar = mkVar(nameNode.text, INDEX, this.span(nameNode));
    const before = this.snapshot();
    const body: Stmt[] = [];
    this.frame.loopDepth++;
    try {
      this.withScope(() => {
        this.declare({ name: loopVar.name, var: loopVar, mutable: false, role: "loop" });
        this.stmts(ts.isBlock(s.statement) ? s.statement.statements : [s.statement], body);
      });
    } finally {
      this.frame.loopDepth--;
    }
    this.flow = before;
    out.push(mkFor({ loopVar, start, stop, step, iterArgs: [], inits: [], body, results: [], span: this.span(s) }));
  }

  protected whileStmt(s: ts.WhileStatement, out: Stmt[]): void {
    const cond = this.scalarExpr(s.expression, "a while condition");
    const before = this.snapshot();
    this.frame.loopDepth++;
    let body: Stmt[];
    try {
      body = this.nested(s.statement);
    } finally {
      this.frame.loopDepth--;
    }
    this.flow = before;
    out.push(mkWhile({ iterArgs: [], inits: [], cond, body, results: [], span: this.span(s) }));
  }

  protected returnStmt(s: ts.ReturnStatement, out: Stmt[]): void {
    const f = this.frame.kind;
    if (f === "at") {
      this.syntax("E_SYNTAX", "return inside pl.at(...) would return from the arrow function, not from the kernel", s,
        "return after the pl.at(...) call");
    }
    if (f !== "function") this.syntax("E_SYNTAX", `return is not allowed in the body of pl.${f}`, s, "end the body with pl.yield(...)");
    const e = s.expression;
    const values = !e ? [] : ts.isArrayLiteralExpression(e) ? e.elements.map((x) => this.expr(x)) : [this.expr(e)];
    values.forEach((v, i) => {
      const t = exprType(v);
      if (t.kind === "void" || t.kind === "tuple") this.typeErr(`cannot return ${t.kind === "void" ? "nothing" : "several values"} as one value`, ts.isArrayLiteralExpression(e!) ? e.elements[i] : e!);
    });
    const span = this.span(s);
    this.returns.push({ types: values.map(exprType), span });
    out.push(mkReturn(values, span));
    this.flow = null;
  }
}

// Statements: declarations (with annotations and destructuring), assignments and ++/--,
// expression statements. The control-flow statements (if, loops, return, pl.at and the IR text
// forms pl.forRange/whileLoop/ifElse/yield/break/continue) are built by FunctionBuilder
// (function.ts), reached through the abstract methods below.
import { ts } from "../typescript.js";
import { exprType, mkAssign, mkBreak, mkConst, mkContinue, mkEval, mkVar, type Expr, type Span, type Stmt, type Var } from "../../ir/nodes.js";
import { dimsEqual, isFloat, typeEqual, typeStr, type Type } from "../../ir/types.js";
import { annType, readAnnotation, type Ann } from "../annotations.js";
import { PlOpBuilder } from "./ops.js";
import { arithAssign, type Local } from "./types.js";

export abstract class StmtBuilder extends PlOpBuilder {
  // control-flow statements (function.ts)
  protected abstract ifStmt(s: ts.IfStatement, out: Stmt[]): void;
  protected abstract forOf(s: ts.ForOfStatement, out: Stmt[]): void;
  protected abstract whileStmt(s: ts.WhileStatement, out: Stmt[]): void;
  protected abstract returnStmt(s: ts.ReturnStatement, out: Stmt[]): void;
  protected abstract atStmt(call: ts.CallExpression, span: Span, out: Stmt[]): void;
  protected abstract jumpStmt(kind: "yield" | "break" | "continue", call: ts.CallExpression, span: Span, out: Stmt[]): void;
  protected abstract structured(kind: "forRange" | "whileLoop" | "ifElse", call: ts.CallExpression, names: readonly ts.Identifier[], span: Span, out: Stmt[]): Var[];

  // ------------------------------------------------------------ statements

  protected stmts(list: readonly ts.Statement[], out: Stmt[]): void {
    for (const s of list) this.stmt(s, out);
  }

  /** A nested statement (block or single statement) in its own lexical scope. */
  protected nested(s: ts.Statement): Stmt[] {
    const out: Stmt[] = [];
    this.withScope(() => this.stmts(ts.isBlock(s) ? s.statements : [s], out));
    return out;
  }

  protected stmt(s: ts.Statement, out: Stmt[]): void {
    if (ts.isVariableStatement(s)) return this.varStmt(s, out);
    if (ts.isExpressionStatement(s)) return this.exprStmt(s, out);
    if (ts.isIfStatement(s)) return this.ifStmt(s, out);
    if (ts.isForOfStatement(s)) return this.forOf(s, out);
    if (ts.isWhileStatement(s)) return this.whileStmt(s, out);
    if (ts.isReturnStatement(s)) return this.returnStmt(s, out);
    if (ts.isBreakStatement(s) || ts.isContinueStatement(s)) {
      const what = ts.isBreakStatement(s) ? "break" : "continue";
      if (s.label) this.syntax("E_SYNTAX", `labelled ${what} is not supported in kernels`, s);
      if (this.frame.loopDepth === 0) this.syntax("E_SYNTAX", `'${what}' outside a loop`, s);
      out.push(what === "break" ? mkBreak([], this.span(s)) : mkContinue([], this.span(s)));
      this.flow = null;
      return;
    }
    if (ts.isBlock(s)) {
      this.withScope(() => this.stmts(s.statements, out));
      return;
    }
    if (ts.isEmptyStatement(s)) return;
    if (ts.isForStatement(s)) {
      this.syntax("E_SYNTAX", "C-style for loops are not supported in kernels", s,
        "use a range loop: for (const i of pl.range(start, stop, step)) { ... }");
    }
    if (ts.isForInStatement(s)) this.syntax("E_SYNTAX", "for-in loops are not supported in kernels", s, "use for (const i of pl.range(n)) { ... }");
    if (ts.isDoStatement(s)) this.syntax("E_SYNTAX", "do-while loops are not supported in kernels", s, "use while (cond) { ... }");
    if (ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) {
      this.syntax("E_SYNTAX", `nested ${ts.isFunctionDeclaration(s) ? "functions" : "classes"} are not supported in kernels`, s,
        "define helpers outside the kernel with pl.jit.inline(function helper(...) { ... }) and call them by name");
    }
    const kind = ts.SyntaxKind[s.kind].replace(/Statement$/, "").toLowerCase();
    this.syntax("E_SYNTAX", `'${kind}' statements are not supported in kernels`, s,
      "kernels use const/let, if/else, for (const i of pl.range(...)), while, break, continue, return, pl.at and pl.* ops");
  }

  protected varStmt(s: ts.VariableStatement, out: Stmt[]): void {
    const flags = s.declarationList.flags;
    const isConst = (flags & ts.NodeFlags.Const) !== 0;
    const isLet = (flags & ts.NodeFlags.Let) !== 0;
    if (!isConst && !isLet) {
      this.syntax("E_SYNTAX", (flags & ts.NodeFlags.Using) ? "'using' declarations are not supported in kernels" : "'var' is not supported in kernels",
        s, "declare variables with const (bound once) or let (rebound)");
    }
    const single = s.declarationList.declarations.length === 1;
    for (const d of s.declarationList.declarations) {
      const span = this.span(single ? s : d);
      if (ts.isObjectBindingPattern(d.name)) this.syntax("E_SYNTAX", "object destructuring is not supported in kernels", d.name);
      if (ts.isArrayBindingPattern(d.name)) {
        this.destructuring(d, d.name, isConst, span, out);
        continue;
      }
      const name = d.name.text;
      const ann = d.type ? readAnnotation(d.type, this.annEnv) : null;
      if (!d.initializer) {
        if (isConst) this.syntax("E_SYNTAX", `const '${name}' needs a value`, d);
        const declared = ann ? annType(ann.ann) ?? undefined : undefined;
        // `let x: T;` declares the variable (IR text hoists rebound variables this way); plain `let x;` gets its type at the first assignment
        this.declare({ name, var: declared ? mkVar(name, declared, this.span(d.name)) : undefined, mutable: true, role: "local", declared });
        if (declared && this.flow) this.flow.delete(this.local(name)!);
        continue;
      }
      const init = d.initializer;
      if (ts.isCallExpression(init)) {
        const pl = this.plCallName(init);
        if (pl === "forRange" || pl === "whileLoop" || pl === "ifElse") {
          this.syntax("E_SYNTAX", `bind the results of pl.${pl} by destructuring: const [r] = pl.${pl}(...)`, d.name);
        }
      }
      let value = this.expr(init);
      let type = this.valueType(value, init, name);
      if (ann) ({ value, type } = this.applyAnnotation(ann.ann, value, type, d.type!));
      const v = mkVar(name, type, this.span(d.name));
      const constVal = isConst && value.kind === "const" ? (typeof value.value === "boolean" ? { k: "bool" as const, v: value.value } : { k: "num" as const, v: value.value, float: isFloat(value.dtype) }) : undefined;
      const list = isConst && this.kernel && value.kind === "list" ? value : undefined;
      this.declare({ name, var: v, mutable: isLet, role: "local", constVal, list });
      this.copyAlias(v, value);
      out.push(mkAssign([v], value, span));
    }
  }

  /** The type a variable bound to `value` gets; rejects void and multi-value results. */
  protected valueType(value: Expr, node: ts.Node, name: string): Type {
    const t = exprType(value);
    if (t.kind === "void") this.typeErr(`'${name}' is bound to a call that returns nothing`, node);
    if (t.kind === "tuple") {
      this.typeErr(`'${name}' is bound to a call that returns ${t.elems.length} values`, node,
        `destructure the results: const [${t.elems.map((_, i) => `r${i}`).join(", ")}] = ...`);
    }
    return t;
  }

  /** `const t: pl.Tile<...> = e` gives t the annotated type (shape/dtype/mem must match); scalar annotations retype constants. */
  protected applyAnnotation(ann: Ann, value: Expr, type: Type, node: ts.Node): { value: Expr; type: Type } {
    const want = annType(ann);
    // IR text annotates exactly the variables whose type differs from their value's: take it verbatim
    if (!this.kernel && want) return { value, type: want };
    if (ann.kind === "none" || (ann.kind === "scalar" && ann.plain && !want)) return { value, type };
    const mismatch = (): never => this.typeErr(`annotation ${node.getText()} does not match the value's type ${typeStr(type)}`, node);
    switch (ann.kind) {
      case "tile": {
        const t = ann.type as Extract<Type, { kind: "tile" }> | null;
        if (type.kind !== "tile") mismatch();
        if (!t) return { value, type };
        if (!dimsEqual(t.shape, (type as typeof t).shape) || t.dtype !== (type as typeof t).dtype || t.mem !== (type as typeof t).mem) mismatch();
        return { value, type: t };
      }
      case "scalar": {
        if (type.kind !== "scalar") mismatch();
        if (!want || typeEqual(want, type)) return { value, type };
        const c = this.coerce(value, want);
        return c ? { value: c, type: want } : mismatch();
      }
      case "tensor": {
        if (type.kind !== "tensor") mismatch();
        const t = type as Extract<Type, { kind: "tensor" }>;
        if (ann.dtype && ann.dtype !== t.dtype) mismatch();
        if (ann.shape && (ann.shape.length !== t.shape.length || ann.shape.some((d, i) => typeof d === "number" && d !== t.shape[i]))) mismatch();
        return { value, type };
      }
      default:
        return mismatch();
    }
  }

  /** A constant retyped to a scalar type it fits (5 → int32), or null. */
  protected coerce(value: Expr, to: Type): Expr | null {
    if (typeEqual(exprType(value), to)) return value;
    if (value.kind !== "const" || to.kind !== "scalar") return null;
    if (typeof value.value === "boolean") return to.dtype === "bool" ? value : null;
    if (to.dtype === "bool") return null;
    if (!isFloat(to.dtype) && !Number.isInteger(value.value)) return null;
    return mkConst(value.value, to.dtype, value.span);
  }

  protected copyAlias(target: Var, value: Expr) {
    if (value.kind === "var" && value.type.kind === "tensor") this.alias.set(target.id, this.root(value));
  }

  /** `const [a, b] = f(...)` / `= pl.forRange(...)` / `= pl.whileLoop(...)` / `= pl.ifElse(...)`. */
  protected destructuring(d: ts.VariableDeclaration, pat: ts.ArrayBindingPattern, isConst: boolean, span: Span, out: Stmt[]): void {
    const names = pat.elements.map((el) => {
      if (ts.isOmittedExpression(el) || el.dotDotDotToken || el.initializer || !ts.isIdentifier(el.name)) {
        this.syntax("E_SYNTAX", "destructuring in kernels binds plain names: const [a, b] = ...", el);
      }
      return el.name as ts.Identifier;
    });
    if (!d.initializer) this.syntax("E_SYNTAX", "a destructuring declaration needs a value", d);
    const init = d.initializer;
    const pl = ts.isCallExpression(init) ? this.plCallName(init) : null;
    let results: Var[];
    if (pl === "forRange" || pl === "whileLoop" || pl === "ifElse") {
      results = this.structured(pl, init as ts.CallExpression, names, span, out);
    } else {
      const value = this.expr(init);
      const t = exprType(value);
      const elems = t.kind === "tuple" ? t.elems : null;
      if (!elems || elems.length !== names.length) {
        this.typeErr(`cannot destructure ${typeStr(t)} into ${names.length} names`, init,
          elems ? `the call returns ${elems.length} values` : "only calls of kernels that return several values can be destructured");
      }
      // IR text annotates the targets whose types differ from the call's results (tiles given
      // addresses by memory planning): `const [e, s]: [pl.Tile<...>, pl.Tile<...>] = ...`
      const anns = !this.kernel && d.type && ts.isTupleTypeNode(d.type) && d.type.elements.length === names.length
        ? d.type.elements.map((el) => annType(readAnnotation(el as ts.TypeNode, this.annEnv).ann)) : null;
      results = names.map((n, i) => mkVar(n.text, anns?.[i] ?? elems[i], this.span(n)));
      out.push(mkAssign(results, value, span));
    }
    names.forEach((n, i) => this.declare({ name: n.text, var: results[i], mutable: !isConst, role: "local" }));
  }

  protected exprStmt(s: ts.ExpressionStatement, out: Stmt[]): void {
    const e = s.expression;
    const span = this.span(s);
    if (ts.isCallExpression(e)) {
      const pl = this.plCallName(e);
      switch (pl) {
        case "at": return this.atStmt(e, span, out);
        case "forRange": case "whileLoop": case "ifElse": this.structured(pl, e, [], span, out); return;
        case "yield": case "break": case "continue": return this.jumpStmt(pl, e, span, out);
      }
    }
    if (ts.isBinaryExpression(e) && (e.operatorToken.kind === ts.SyntaxKind.EqualsToken || arithAssign()[e.operatorToken.kind])) {
      return this.assignment(e, span, out);
    }
    if ((ts.isPostfixUnaryExpression(e) || ts.isPrefixUnaryExpression(e)) &&
      (e.operator === ts.SyntaxKind.PlusPlusToken || e.operator === ts.SyntaxKind.MinusMinusToken)) {
      if (!ts.isIdentifier(e.operand)) this.syntax("E_SYNTAX", "++/-- apply to local variables only", e);
      const l = this.assignable(e.operand);
      const cur = this.readLocal(l, e.operand);
      const ct = exprType(cur);
      const one = mkConst(1, ct.kind === "scalar" && isFloat(ct.dtype) ? "float32" : "int64", this.span(e));
      const value = this.binary(e.operator === ts.SyntaxKind.PlusPlusToken ? "+" : "-", cur, one, e);
      return this.assignLocal(l, value, e.operand, span, out);
    }
    const value = this.expr(e);
    out.push(mkEval(value, span));
  }

  protected assignment(e: ts.BinaryExpression, span: Span, out: Stmt[]): void {
    const compound = arithAssign()[e.operatorToken.kind];
    if (ts.isIdentifier(e.left) && !compound && this.local(e.left.text)?.role === "param") {
      const l = this.local(e.left.text)!;
      if (l.var?.type.kind === "tensor") {
        // PyPTO's idioms: `y = kernel(x, w, y)` rebinds a tensor parameter to the (written)
        // result of a sub-kernel call; `out = pl.add(a, b)` on an Out parameter only rebinds
        // the name (PyPTO's OutParamWriteDropped): accepted with a warning that says the fix.
        const value = this.expr(e.right);
        const dir = this.paramDirs.get(l.name);
        const isCall = value.kind === "call" && value.op === "call";
        if (!isCall && (dir === "out" || dir === "inout")) {
          const at = this.span(e);
          process.emitWarning(
            `${at.file}:${at.line}:${at.col}: assigning to ${dir === "out" ? "Out" : "InOut"} parameter '${l.name}' of kernel '${this.env.kernelName}' only rebinds the name; the tensor is not written. ` +
            `Write it with pl.assign(${l.name}, ${e.right.getText()})`, { code: "OutParamWriteDropped" });
        }
        if (isCall || dir === "out" || dir === "inout") {
          // a new local of the parameter's name (the parameter itself stays defined once)
          const shadow = this.declare({ name: l.name, var: mkVar(l.name, l.var.type, this.span(e.left)), mutable: true, role: "local" });
          return this.assignLocal(shadow, value, e.left, span, out);
        }
      }
    }
    if (ts.isIdentifier(e.left)) {
      const l = this.assignable(e.left);
      let value = this.expr(e.right);
      if (compound) value = this.binary(compound, this.readLocal(l, e.left), value, e);
      return this.assignLocal(l, value, e.left, span, out);
    }
    if (ts.isArrayLiteralExpression(e.left) && !compound) {
      // `[a, b] = f(...)`: rebinding several lets at once
      const ls = e.left.elements.map((el) => {
        if (!ts.isIdentifier(el)) this.syntax("E_SYNTAX", "destructuring assignment binds plain names: [a, b] = ...", el);
        return { l: this.assignable(el), node: el };
      });
      const value = this.expr(e.right);
      const t = exprType(value);
      if (t.kind !== "tuple" || t.elems.length !== ls.length) this.typeErr(`cannot destructure ${typeStr(t)} into ${ls.length} names`, e.right);
      const targets = ls.map(({ l, node }, i) => {
        const et = (t as Extract<Type, { kind: "tuple" }>).elems[i];
        if (!l.var) l.var = mkVar(l.name, et, this.span(node));
        else if (!typeEqual(l.var.type, et)) this.typeErr(`cannot assign ${typeStr(et)} to '${l.name}' of type ${typeStr(l.var.type)}`, node);
        this.flow?.add(l);
        return l.var;
      });
      out.push(mkAssign(targets, value, span));
      return;
    }
    if (ts.isElementAccessExpression(e.left)) {
      this.syntax("E_SYNTAX", "element assignment is not supported in kernels", e.left,
        "write tiles into tensors with pl.store(tile, offsets, out), or whole tensors with pl.assign(out, value)");
    }
    this.syntax("E_SYNTAX", "kernels assign to local variables only", e.left);
  }

  /** The local a name assigns to; parameters, consts and loop variables cannot be assigned. */
  protected assignable(id: ts.Identifier): Local {
    const l = this.local(id.text);
    if (!l) {
      const free = this.env.resolveFree(id.text, id);
      if (free) this.syntax("E_ASSIGN", `cannot assign to '${id.text}': it is not a local variable of kernel '${this.env.kernelName}'`, id);
      this.unresolved(id);
    }
    if (l.role === "param") {
      this.syntax("E_ASSIGN", `cannot assign to parameter '${id.text}' of kernel '${this.env.kernelName}'`, id,
        `parameters are read-only: copy into a local (let x = ${id.text}) or write into a tensor with pl.store/pl.assign (a tensor parameter may be rebound to a kernel's result: ${id.text} = kernel(..., ${id.text}))`);
    }
    if (l.role === "loop" || l.role === "iter") {
      this.syntax("E_ASSIGN", `cannot assign to loop variable '${id.text}'`, id,
        l.role === "iter" ? "pass the next value with pl.yield(...)" : "the loop variable is set by pl.range");
    }
    if (!l.mutable) this.syntax("E_ASSIGN", `cannot assign to const '${id.text}'`, id, `declare it with let to rebind it: let ${id.text} = ...`);
    return l;
  }

  protected assignLocal(l: Local, value: Expr, node: ts.Node, span: Span, out: Stmt[]): void {
    let t = this.valueType(value, node, l.name);
    if (!l.var) {
      l.var = mkVar(l.name, l.declared ?? t, this.span(node));
    }
    if (!typeEqual(l.var.type, t)) {
      const c = this.coerce(value, l.var.type);
      if (!c) {
        this.typeErr(`cannot assign ${typeStr(t)} to '${l.name}' of type ${typeStr(l.var.type)}`, node,
          "a variable keeps one type; use a new const for a value of another type" +
          (l.var.type.kind === "scalar" && t.kind === "scalar" && isFloat(t.dtype) ? ` (or initialize it with a float, e.g. ${l.name} = 0.0)` : ""));
      }
      value = c;
      t = l.var.type;
    }
    this.flow?.add(l);
    this.copyAlias(l.var, value);
    out.push(mkAssign([l.var], value, span));
  }
}

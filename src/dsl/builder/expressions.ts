// Expressions: literals, locals and free constants, scalar operators (folded on constants in
// kernel mode), Math.* calls and calls of sub-kernels. `pl.*` op calls are built by PlOpBuilder
// (ops.ts), reached through the abstract plCall.
import { ts } from "../typescript.js";
import { TsptoSyntaxError, TsptoTypeError } from "../../ir/errors.js";
import { exprType, mkCall, mkConst, mkList, type Const, type Expr } from "../../ir/nodes.js";
import { inferCall, opForMath, opForOperator, type OpDef } from "../../ir/registry.js";
import { isFloat, tupleT, typeStr, voidT, type Type } from "../../ir/types.js";
import { accessPath, describeConst, numericLiteral, type ConstVal } from "../resolve.js";
import { BuilderBase } from "./base.js";
import { binaryOps, type Local } from "./types.js";

export abstract class ExprBuilder extends BuilderBase {
  /** `pl.<name>(...)` in an expression (ops.ts). */
  protected abstract plCall(name: string, e: ts.CallExpression): Expr;

  // ------------------------------------------------------------ expressions

  /** A scalar expression (conditions). */
  protected scalarExpr(e: ts.Expression, what: string): Expr {
    const x = this.expr(e);
    const t = exprType(x);
    if (t.kind !== "scalar") this.typeErr(`${what} must be a scalar, got ${typeStr(t)}`, e);
    return x;
  }

  /** A scalar used as an integer (loop bounds, offsets): kernel constants like 64.0 become int64. */
  protected indexExpr(e: ts.Expression, what: string): Expr {
    return this.intify(this.scalarExpr(e, what));
  }
  protected intify(x: Expr): Expr {
    if (this.kernel && x.kind === "const" && typeof x.value === "number" && isFloat(x.dtype) && Number.isInteger(x.value)) {
      return mkConst(x.value, "int64", x.span);
    }
    return x;
  }

  expr(e: ts.Expression): Expr {
    const span = this.span(e);
    if (ts.isParenthesizedExpression(e)) {
      const inner = this.expr(e.expression);
      return inner;
    }
    if (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isNonNullExpression(e)) return this.expr(e.expression);
    if (ts.isNumericLiteral(e)) {
      const n = numericLiteral(e);
      return mkConst(n.v, n.float ? "float32" : "int64", span);
    }
    if (e.kind === ts.SyntaxKind.TrueKeyword || e.kind === ts.SyntaxKind.FalseKeyword) return mkConst(e.kind === ts.SyntaxKind.TrueKeyword, "bool", span);
    if (ts.isIdentifier(e)) return this.identifier(e);
    if (ts.isPrefixUnaryExpression(e)) return this.prefix(e);
    if (ts.isBinaryExpression(e)) {
      const op = binaryOps()[e.operatorToken.kind];
      if (!op) {
        const t = e.operatorToken.getText();
        if (e.operatorToken.kind >= ts.SyntaxKind.FirstAssignment && e.operatorToken.kind <= ts.SyntaxKind.LastAssignment) {
          this.syntax("E_SYNTAX", "assignments are statements in kernels, not expressions", e);
        }
        this.syntax("E_SYNTAX", `operator '${t}' is not supported in kernels`, e.operatorToken,
          "scalar expressions use + - * / % < <= > >= === !== && || ! and Math.min/max/floor/ceil/trunc");
      }
      return this.binary(op, this.expr(e.left), this.expr(e.right), e);
    }
    if (ts.isCallExpression(e)) return this.call(e);
    if (ts.isArrayLiteralExpression(e)) return mkList(e.elements.map((x) => this.expr(x)), span);
    if (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) {
      const c = this.constOf(e);
      if (c) return this.constExpr(c, e);
      if (ts.isPropertyAccessExpression(e) && this.isPl(e.expression)) {
        this.syntax("E_SYNTAX", `pl.${e.name.text} is not a value here`, e);
      }
      this.syntax("E_SYNTAX", ts.isElementAccessExpression(e) ? "indexing is only supported on constant arrays in kernels" : `cannot read '${e.getText()}' in a kernel`, e,
        ts.isElementAccessExpression(e) ? "load a window of a tensor with pl.load(t, offsets, shape)" : undefined);
    }
    if (ts.isConditionalExpression(e)) {
      const c = this.kernel ? this.constOf(e.condition) : undefined;
      if (c) return this.expr((c.k === "bool" ? c.v : c.k === "num" ? c.v !== 0 : c.k !== "null") ? e.whenTrue : e.whenFalse);
      this.syntax("E_SYNTAX", "conditional expressions (c ? a : b) are not supported in kernels", e, "use if (c) { x = a; } else { x = b; }");
    }
    if (ts.isArrowFunction(e) || ts.isFunctionExpression(e)) {
      this.syntax("E_SYNTAX", "closures are not supported in kernels", e,
        "arrow functions are only allowed as the body of pl.at(...) (and the IR forms pl.forRange/whileLoop/ifElse); define helpers with pl.jit.inline");
    }
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) {
      this.typeErr(`a string (${e.getText()}) is not a value in kernels`, e, "strings are only used as dtypes or op options");
    }
    const kind = ts.SyntaxKind[e.kind].replace(/Expression$/, "");
    this.syntax("E_SYNTAX", `${kind} expressions are not supported in kernels`, e);
  }

  protected constExpr(c: ConstVal, node: ts.Node): Expr {
    const span = this.span(node);
    if (c.k === "num") return mkConst(c.v, c.float ? "float32" : "int64", span);
    if (c.k === "bool") return mkConst(c.v, "bool", span);
    return this.typeErr(`'${node.getText()}' is the constant ${describeConst(c)}, which is not a scalar value`, node,
      c.k === "arr" ? "constant arrays are used where an op expects a list (offsets, shapes)" : c.k === "str" ? "strings are dtypes or op options" : undefined);
  }

  /** Throw E_UNRESOLVED for the first free identifier in `e` that does not resolve (locals and pl/Math names are fine). */
  protected reportUnresolved(e: ts.Node): void {
    const visit = (n: ts.Node): void => {
      if (ts.isIdentifier(n)) {
        const p = n.parent;
        const member = (ts.isPropertyAccessExpression(p) && p.name === n) || (ts.isPropertyAssignment(p) && p.name === n);
        if (!member && !this.local(n.text)) {
          const b = this.env.resolveFree(n.text, n);
          if (!b) this.unresolved(n);
          if (b.kind === "other") this.unresolved(n, b.what);
        }
        return;
      }
      ts.forEachChild(n, visit);
    };
    visit(e);
  }

  protected unresolved(id: ts.Identifier, why?: string): never {
    const name = id.text;
    throw new TsptoSyntaxError("E_UNRESOLVED", `cannot resolve identifier '${name}' in kernel '${this.env.kernelName}'${why ? ` (it is ${why})` : ""}`,
      this.span(id), `declare it as a module-level const with a constant value, or pass it through pl.jit(fn, { scope: { ${name} } })`);
  }

  protected identifier(id: ts.Identifier): Expr {
    const l = this.local(id.text);
    if (l) return this.readLocal(l, id);
    const b = this.env.resolveFree(id.text, id);
    if (!b) return this.unresolved(id);
    switch (b.kind) {
      case "const": return this.constExpr(b.value, id);
      case "kernel": return this.syntax("E_SYNTAX", `kernel '${id.text}' can only be called, as ${id.text}(...)`, id);
      case "pl": return this.syntax("E_SYNTAX", `'${id.text}' is the pl namespace, not a value`, id);
      case "math": return this.syntax("E_SYNTAX", "Math is not a value; call Math.min/max/floor/ceil/trunc", id);
      case "other": return this.unresolved(id, b.what);
    }
  }

  protected readLocal(l: Local, id: ts.Node): Expr {
    if (l.folded) return mkConst(l.folded.value, l.folded.dtype, this.span(id));
    const hint = `assign it on every path before this use, or initialize it where it is declared: let ${l.name} = ...`;
    if (!l.var) throw new TsptoSyntaxError("E_UNASSIGNED", `'${l.name}' is used before it is assigned`, this.span(id), hint);
    if (this.kernel && this.flow && !this.flow.has(l)) {
      throw new TsptoSyntaxError("E_UNASSIGNED", `'${l.name}' is possibly unassigned here`, this.span(id), hint);
    }
    return l.var;
  }

  protected prefix(e: ts.PrefixUnaryExpression): Expr {
    const span = this.span(e);
    if (e.operator === ts.SyntaxKind.MinusToken) {
      // `-3`, `-2.5`, `-Infinity` are negative constants; `-(3)` is a negation (the printer's spelling)
      if (ts.isNumericLiteral(e.operand)) {
        const n = numericLiteral(e.operand);
        return mkConst(-n.v, n.float || n.v === 0 ? "float32" : "int64", span); // -0 is a float
      }
      if (ts.isIdentifier(e.operand) && e.operand.text === "Infinity" && !this.local("Infinity")) return mkConst(-Infinity, "float32", span);
      const x = this.expr(e.operand);
      if (this.kernel && x.kind === "const" && typeof x.value === "number") return mkConst(-x.value, x.dtype, span);
      return this.scalarOp(opForOperator("-", 1)!, [x], e);
    }
    if (e.operator === ts.SyntaxKind.ExclamationToken) {
      const x = this.expr(e.operand);
      if (this.kernel && x.kind === "const") return mkConst(!x.value, "bool", span);
      return this.scalarOp(opForOperator("!", 1)!, [x], e);
    }
    if (e.operator === ts.SyntaxKind.PlusPlusToken || e.operator === ts.SyntaxKind.MinusMinusToken) {
      this.syntax("E_SYNTAX", "++/-- are statements in kernels (x++;), not expressions", e);
    }
    this.syntax("E_SYNTAX", `unary operator '${ts.tokenToString(e.operator)}' is not supported in kernels`, e);
  }

  /** A scalar binary operator; constants fold in kernel mode (`ROWS / 2` → 64). */
  protected binary(op: string, a: Expr, b: Expr, node: ts.Node): Expr {
    const def = opForOperator(op, 2);
    if (!def) this.syntax("E_SYNTAX", `operator '${op}' is not supported in kernels`, node);
    const ta = exprType(a), tb = exprType(b);
    if (ta.kind !== "scalar" || tb.kind !== "scalar") {
      const plName = { "+": "add", "-": "sub", "*": "mul", "/": "div" }[op];
      this.typeErr(`operator '${op}' applies to scalars, got ${typeStr(ta)} ${op} ${typeStr(tb)}`, node,
        plName ? `use pl.${plName}(a, b) for tiles and tensors` : "tile and tensor arithmetic uses pl.* ops");
    }
    return this.scalarOp(def, [a, b], node);
  }

  protected scalarOp(def: OpDef, args: Expr[], node: ts.Node): Expr {
    const span = this.span(node);
    const type = inferCall(def, args, {}, span);
    if (this.kernel && args.every((x) => x.kind === "const")) {
      const folded = this.fold(def, args as Const[], type, node);
      if (folded) return folded;
    }
    return mkCall(def.name, args, {}, type, span);
  }

  /** Evaluate a scalar op on constants (the registry's reference semantics); integers divide to ints when exact. */
  protected fold(def: OpDef, args: readonly Const[], type: Type, node: ts.Node): Const | null {
    if (type.kind !== "scalar") return null;
    const span = this.span(node);
    const r = def.evaluate(args.map((a) => a.value), {}, { fail: (m, s) => { throw new TsptoTypeError("E_TYPE", m, s); } }, { type, span });
    if (typeof r === "boolean") return mkConst(r, "bool", span);
    if (typeof r !== "number") return null;
    const intArgs = args.every((a) => typeof a.value === "number" && !isFloat(a.dtype));
    let dtype = type.dtype;
    if (isFloat(dtype) && intArgs && Number.isInteger(r)) dtype = "int64";
    if (!isFloat(dtype) && !Number.isFinite(r)) return null;
    return mkConst(r, dtype, span);
  }

  protected call(e: ts.CallExpression): Expr {
    const c = e.expression;
    if (ts.isPropertyAccessExpression(c) && ts.isIdentifier(c.name)) {
      if (this.isPl(c.expression)) return this.plCall(c.name.text, e);
      if (this.isMath(c.expression)) return this.mathCall(c.name.text, e);
      const path = accessPath(c);
      if (path && path.length > 2 && this.isPl(c.expression)) this.syntax("E_SYNTAX", `${path.join(".")} cannot be used inside a kernel`, e);
      if (ts.isPropertyAccessExpression(c.expression) && ts.isIdentifier(c.expression.expression) && this.isPl(c.expression.expression)) {
        this.syntax("E_SYNTAX", `${c.getText()} cannot be used inside a kernel`, e, "define kernels at module level and call them by name");
      }
      this.syntax("E_SYNTAX", `cannot call '${c.getText()}' in a kernel`, e,
        "kernels call pl.* ops, Math.min/max/floor/ceil/trunc, and pl.jit.incore / pl.jit.inline kernels by name");
    }
    if (ts.isIdentifier(c)) return this.kernelCall(c, e);
    this.syntax("E_SYNTAX", "unsupported call in a kernel", e);
  }

  protected mathCall(fn: string, e: ts.CallExpression): Expr {
    const def = opForMath(fn);
    if (!def) {
      this.syntax("E_UNKNOWN_OP", `Math.${fn} is not supported in kernels`, e, "supported: Math.min, Math.max, Math.floor, Math.ceil, Math.trunc");
    }
    const n = def.params.length;
    const args = e.arguments.map((a) => this.expr(a));
    if (n === 1 && args.length !== 1) this.syntax("E_ARITY", `Math.${fn} takes 1 argument, got ${args.length}`, e);
    if (n === 2 && args.length < 2) this.syntax("E_ARITY", `Math.${fn} takes at least 2 arguments, got ${args.length}`, e);
    // Math.min(a, b, c) = min(min(a, b), c)
    let acc = this.scalarOp(def, n === 1 ? args : args.slice(0, 2), e);
    for (const x of n === 2 ? args.slice(2) : []) acc = this.scalarOp(def, [acc, x], e);
    return acc;
  }

  /** A call of a sub-kernel by name. */
  protected kernelCall(id: ts.Identifier, e: ts.CallExpression): Expr {
    const span = this.span(e);
    if (this.local(id.text)) this.syntax("E_SYNTAX", `'${id.text}' is a variable, not a kernel`, id);
    const b = this.env.resolveFree(id.text, id);
    if (!b) this.unresolved(id);
    if (b.kind !== "kernel") {
      if (b.kind === "other" && b.isFunction) {
        this.syntax("E_SYNTAX", `cannot call '${id.text}' in a kernel: it is not a kernel`, e,
          `wrap it with pl.jit.inline(function ${id.text}(...) { ... }) to use it as a helper, or pl.jit.incore for a device kernel`);
      }
      if (b.kind === "other") this.unresolved(id, b.what);
      this.syntax("E_SYNTAX", `cannot call '${id.text}' in a kernel`, e);
    }
    if (this.kernel && b.kernelKind === "orchestration") {
      throw new TsptoSyntaxError("E_ENTRY_CALL", `cannot call entry kernel '${id.text}' from kernel '${this.env.kernelName}'`, span,
        `entries (pl.jit) are called from host code; make '${id.text}' a device kernel with pl.jit.incore (or a helper with pl.jit.inline)`);
    }
    const args = e.arguments.map((a) => {
      if (ts.isSpreadElement(a)) this.syntax("E_SYNTAX", "spread arguments are not supported in kernels", a);
      const x = this.expr(a);
      const t = exprType(x);
      if (t.kind === "void" || t.kind === "tuple") this.typeErr(`cannot pass ${t.kind === "void" ? "nothing" : "several values"} as one argument`, a);
      return x;
    });
    const info = this.env.callee(b, args, e, span);
    args.forEach((x, i) => {
      const d = info.dirs[i] ?? "in";
      this.markEffect(x, d !== "out", d !== "in");
    });
    const rt = info.returnTypes;
    const type = rt.length === 0 ? voidT : rt.length === 1 ? rt[0] : tupleT(rt);
    return mkCall("call", args, { callee: info.name }, type, span);
  }
}

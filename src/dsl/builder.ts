// Builds one IR function from a kernel's TypeScript AST. Shared by the kernel parser
// (parser.ts: kernels specialized on argument types, with constant folding) and the IR text
// parser (text.ts: printed programs, read back verbatim).
//
// The output is pre-SSA: `let x = ...; x = ...` inside loops and branches assigns the SAME
// Var (a later pass builds SSA with iterArgs/yields). The SSA text forms (`pl.forRange`,
// `pl.whileLoop`, `pl.ifElse`, `pl.yield`, `pl.break(v)`, `pl.continue(v)`) map to the
// corresponding IR nodes with iterArgs and results.
import { ts } from "./typescript.js";
import { TsptoCompileError, TsptoSyntaxError, TsptoTypeError } from "../ir/errors.js";
import {
  exprType, mkAssign, mkBreak, mkCall, mkConst, mkContinue, mkEval, mkFor, mkFunc, mkIf, mkList, mkReturn, mkScope,
  mkVar, mkWhile, mkYield, type Attrs, type AttrValue, type Const, type Direction, type Expr, type Func, type FunctionKind,
  type Span, type Stmt, type Var,
} from "../ir/nodes.js";
import {
  effectsOf, inferCall, opForMath, opForOperator, opsForPl, plOpNames, resolvePlOp, type OpDef, type ParamKind,
} from "../ir/registry.js";
import { INDEX, isFloat, tupleT, typeEqual, typeStr, voidT, dimsEqual, type Type } from "../ir/types.js";
import { annType, readAnnotation, type Ann, type AnnEnv } from "./annotations.js";
import { accessPath, constToValue, describeConst, evalConst, numericLiteral, type ConstVal, type FreeBinding } from "./resolve.js";
import { spanOf, type KernelFnNode, type SourceText } from "./source.js";

export type KernelRef = Extract<NonNullable<FreeBinding>, { kind: "kernel" }>;

/** What the caller of a sub-kernel needs: its IR name, parameter directions and return types. */
export interface CalleeInfo {
  readonly name: string;
  readonly dirs: readonly Direction[];
  readonly returnTypes: readonly Type[];
}

export interface BuildEnv {
  /** "kernel": user kernels (constant folding, ints from float consts, definite assignment); "text": printed IR, verbatim. */
  readonly mode: "kernel" | "text";
  readonly src: SourceText;
  /** The kernel's name, for messages. */
  readonly kernelName: string;
  readonly fnKind: FunctionKind;
  resolveFree(name: string, at: ts.Node): FreeBinding;
  /** A call of a sub-kernel with these arguments (kernel mode: specializes it on their types). */
  callee(ref: KernelRef, args: readonly Expr[], call: ts.CallExpression, span: Span): CalleeInfo;
}

export interface ParamSpec {
  readonly name: string;
  readonly node: ts.Node;
  readonly type: Type;
  /** null: infer from the body (tensors without pl.Out / pl.InOut). */
  readonly dir: Direction | null;
  /** A specialized scalar: uses of the parameter fold to this constant. */
  readonly folded?: Const;
}

export interface BuildOptions {
  /** Declared return types (IR text); inferred from `return` statements when absent. */
  readonly returnTypes?: readonly Type[];
  readonly attrs?: Attrs;
}

/** Statement helpers of `pl` (not registry ops). */
export const PL_STATEMENTS = ["at", "range", "forRange", "whileLoop", "ifElse", "yield", "break", "continue", "const", "withAttrs", "jit"];

interface Local {
  readonly name: string;
  /** Undefined until first assigned (`let x;`). */
  var?: Var;
  readonly folded?: Const;
  readonly mutable: boolean;
  readonly role: "param" | "local" | "loop" | "iter";
  /** A `const` local bound to a constant (usable where constants are required). */
  readonly constVal?: ConstVal;
  /** Declared type of `let x: T;`. */
  readonly declared?: Type;
  /** A `const` local bound to a list (`const offs = [0, i]`): spliced where an op expects a list. */
  readonly list?: Expr;
}

/** The arrow/function body being built: what `return`, `pl.yield`, `break` mean inside it. */
interface Frame {
  readonly kind: "function" | "at" | "forRange" | "whileLoop" | "ifElse";
  loopDepth: number;
}

type Flow = Set<Local> | null; // definitely-assigned tracked locals; null = unreachable (everything)

// Built on first use: the compiler (ts.SyntaxKind) is loaded only when a kernel is parsed.
let arithAssignTable: Partial<Record<ts.SyntaxKind, string>> | undefined;
const arithAssign = (): Partial<Record<ts.SyntaxKind, string>> => (arithAssignTable ??= {
  [ts.SyntaxKind.PlusEqualsToken]: "+", [ts.SyntaxKind.MinusEqualsToken]: "-", [ts.SyntaxKind.AsteriskEqualsToken]: "*",
  [ts.SyntaxKind.SlashEqualsToken]: "/", [ts.SyntaxKind.PercentEqualsToken]: "%",
});
let binaryOpsTable: Partial<Record<ts.SyntaxKind, string>> | undefined;
const binaryOps = (): Partial<Record<ts.SyntaxKind, string>> => (binaryOpsTable ??= {
  [ts.SyntaxKind.PlusToken]: "+", [ts.SyntaxKind.MinusToken]: "-", [ts.SyntaxKind.AsteriskToken]: "*", [ts.SyntaxKind.SlashToken]: "/",
  [ts.SyntaxKind.PercentToken]: "%", [ts.SyntaxKind.LessThanToken]: "<", [ts.SyntaxKind.LessThanEqualsToken]: "<=",
  [ts.SyntaxKind.GreaterThanToken]: ">", [ts.SyntaxKind.GreaterThanEqualsToken]: ">=", [ts.SyntaxKind.EqualsEqualsEqualsToken]: "===",
  [ts.SyntaxKind.ExclamationEqualsEqualsToken]: "!==", [ts.SyntaxKind.EqualsEqualsToken]: "===", [ts.SyntaxKind.ExclamationEqualsToken]: "!==",
  [ts.SyntaxKind.AmpersandAmpersandToken]: "&&", [ts.SyntaxKind.BarBarToken]: "||",
});

/** Edit distance, for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

/** The closest names to `name` (at most 3). */
export function closest(name: string, names: readonly string[]): string[] {
  return [...new Set(names)]
    .map((n) => ({ n, d: editDistance(name, n) - (n.toLowerCase().includes(name.toLowerCase()) || name.toLowerCase().includes(n.toLowerCase()) ? 2 : 0) }))
    .sort((a, b) => a.d - b.d || a.n.localeCompare(b.n))
    .slice(0, 3)
    .map((x) => x.n);
}

export class FunctionBuilder {
  private readonly scopes: Map<string, Local>[] = [];
  private readonly frames: Frame[] = [{ kind: "function", loopDepth: 0 }];
  private flow: Flow = new Set();
  private scopeDepth = 0;
  /** Declared directions of the parameters (null: inferred). */
  private readonly paramDirs = new Map<string, Direction | null>();
  private readonly returns: { types: Type[]; span: Span }[] = [];
  /** Direction inference: tensor variables read / written, through copies (aliases) of parameters. */
  private readonly reads = new Set<number>();
  private readonly writes = new Set<number>();
  private readonly alias = new Map<number, number>();
  private readonly plCache = new Map<string, boolean>();
  private readonly annEnv: AnnEnv;

  constructor(private readonly env: BuildEnv) {
    this.annEnv = { lookup: (name, at) => this.lookupConstBinding(name, at), span: (n) => this.span(n) };
  }

  private get kernel() { return this.env.mode === "kernel"; }

  // ------------------------------------------------------------ errors and spans

  span(node: ts.Node): Span {
    return spanOf(this.env.src, node);
  }
  private syntax(code: string, msg: string, node: ts.Node, hint?: string): never {
    throw new TsptoSyntaxError(code, msg, this.span(node), hint);
  }
  private typeErr(msg: string, node: ts.Node, hint?: string, code = "E_TYPE"): never {
    throw new TsptoTypeError(code, msg, this.span(node), hint);
  }

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

  private inferReturnTypes(): Type[] {
    if (!this.returns.length) return [];
    const first = this.returns[0];
    for (const r of this.returns.slice(1)) {
      if (r.types.length !== first.types.length || !r.types.every((t, i) => typeEqual(t, first.types[i]))) {
        throw new TsptoTypeError("E_TYPE",
          `kernel '${this.env.kernelName}' returns [${r.types.map(typeStr).join(", ")}] here but [${first.types.map(typeStr).join(", ")}] at line ${first.span.line}`,
          r.span, "every return statement must return values of the same types");
      }
    }
    return first.types;
  }

  /** Written and never read → out; written and read → inout; else in. */
  private inferDir(v: Var): Direction {
    if (v.type.kind !== "tensor") return "in";
    const w = this.writes.has(v.id), r = this.reads.has(v.id);
    return w ? (r ? "inout" : "out") : "in";
  }

  private root(v: Var): number {
    return this.alias.get(v.id) ?? v.id;
  }
  private markEffect(e: Expr, read: boolean, write: boolean) {
    if (e.kind !== "var" || e.type.kind !== "tensor") return;
    const id = this.root(e);
    if (read) this.reads.add(id);
    if (write) this.writes.add(id);
  }

  // ------------------------------------------------------------ scopes, locals, flow

  private declare(l: Local): Local {
    this.scopes[this.scopes.length - 1].set(l.name, l);
    if (this.flow && (l.var || l.folded)) this.flow.add(l);
    return l;
  }
  private local(name: string): Local | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const l = this.scopes[i].get(name);
      if (l) return l;
    }
    return undefined;
  }
  private withScope<T>(f: () => T): T {
    this.scopes.push(new Map());
    try {
      return f();
    } finally {
      this.scopes.pop();
    }
  }
  private get frame(): Frame {
    return this.frames[this.frames.length - 1];
  }
  private withFrame<T>(kind: Frame["kind"], loop: boolean, f: () => T): T {
    this.frames.push({ kind, loopDepth: loop ? 1 : 0 });
    try {
      return this.withScope(f);
    } finally {
      this.frames.pop();
    }
  }
  private snapshot(): Flow {
    return this.flow && new Set(this.flow);
  }
  private static meet(a: Flow, b: Flow): Flow {
    if (a === null) return b;
    if (b === null) return a;
    return new Set([...a].filter((x) => b.has(x)));
  }

  /** Whether `name` (at `at`) is the pl namespace. */
  private isPl(e: ts.Expression): boolean {
    if (!ts.isIdentifier(e) || this.local(e.text)) return false;
    let r = this.plCache.get(e.text);
    if (r === undefined) {
      r = this.env.resolveFree(e.text, e)?.kind === "pl";
      this.plCache.set(e.text, r);
    }
    return r;
  }
  private isMath(e: ts.Expression): boolean {
    return ts.isIdentifier(e) && !this.local(e.text) && this.env.resolveFree(e.text, e)?.kind === "math";
  }
  /** `pl.<name>(...)` → name. */
  private plCallName(call: ts.CallExpression): string | null {
    const c = call.expression;
    return ts.isPropertyAccessExpression(c) && this.isPl(c.expression) && ts.isIdentifier(c.name) ? c.name.text : null;
  }

  /** Identifier lookup for constant evaluation: const locals, folded params, free constants. */
  private lookupConstBinding(name: string, at: ts.Node): FreeBinding {
    const l = this.local(name);
    if (l) {
      if (l.folded) return { kind: "const", value: typeof l.folded.value === "boolean" ? { k: "bool", v: l.folded.value } : { k: "num", v: l.folded.value, float: isFloat(l.folded.dtype) } };
      if (l.constVal) return { kind: "const", value: l.constVal };
      return { kind: "other", what: `the variable '${name}'` };
    }
    return this.env.resolveFree(name, at);
  }
  /** A compile-time constant, or undefined. */
  private constOf(e: ts.Expression): ConstVal | undefined {
    return evalConst(e, (n, at) => this.lookupConstBinding(n, at));
  }

  // ------------------------------------------------------------ statements

  private stmts(list: readonly ts.Statement[], out: Stmt[]): void {
    for (const s of list) this.stmt(s, out);
  }

  /** A nested statement (block or single statement) in its own lexical scope. */
  private nested(s: ts.Statement): Stmt[] {
    const out: Stmt[] = [];
    this.withScope(() => this.stmts(ts.isBlock(s) ? s.statements : [s], out));
    return out;
  }

  private stmt(s: ts.Statement, out: Stmt[]): void {
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

  private varStmt(s: ts.VariableStatement, out: Stmt[]): void {
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
  private valueType(value: Expr, node: ts.Node, name: string): Type {
    const t = exprType(value);
    if (t.kind === "void") this.typeErr(`'${name}' is bound to a call that returns nothing`, node);
    if (t.kind === "tuple") {
      this.typeErr(`'${name}' is bound to a call that returns ${t.elems.length} values`, node,
        `destructure the results: const [${t.elems.map((_, i) => `r${i}`).join(", ")}] = ...`);
    }
    return t;
  }

  /** `const t: pl.Tile<...> = e` gives t the annotated type (shape/dtype/mem must match); scalar annotations retype constants. */
  private applyAnnotation(ann: Ann, value: Expr, type: Type, node: ts.Node): { value: Expr; type: Type } {
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
  private coerce(value: Expr, to: Type): Expr | null {
    if (typeEqual(exprType(value), to)) return value;
    if (value.kind !== "const" || to.kind !== "scalar") return null;
    if (typeof value.value === "boolean") return to.dtype === "bool" ? value : null;
    if (to.dtype === "bool") return null;
    if (!isFloat(to.dtype) && !Number.isInteger(value.value)) return null;
    return mkConst(value.value, to.dtype, value.span);
  }

  private copyAlias(target: Var, value: Expr) {
    if (value.kind === "var" && value.type.kind === "tensor") this.alias.set(target.id, this.root(value));
  }

  /** `const [a, b] = f(...)` / `= pl.forRange(...)` / `= pl.whileLoop(...)` / `= pl.ifElse(...)`. */
  private destructuring(d: ts.VariableDeclaration, pat: ts.ArrayBindingPattern, isConst: boolean, span: Span, out: Stmt[]): void {
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
      results = names.map((n, i) => mkVar(n.text, elems[i], this.span(n)));
      out.push(mkAssign(results, value, span));
    }
    names.forEach((n, i) => this.declare({ name: n.text, var: results[i], mutable: !isConst, role: "local" }));
  }

  private exprStmt(s: ts.ExpressionStatement, out: Stmt[]): void {
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

  private assignment(e: ts.BinaryExpression, span: Span, out: Stmt[]): void {
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
  private assignable(id: ts.Identifier): Local {
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

  private assignLocal(l: Local, value: Expr, node: ts.Node, span: Span, out: Stmt[]): void {
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

  private atStmt(call: ts.CallExpression, span: Span, out: Stmt[]): void {
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
  private arrowArg(e: ts.Expression, what: string, nParams: number): ts.ArrowFunction | ts.FunctionExpression {
    const a = ts.isParenthesizedExpression(e) ? e.expression : e;
    if (!ts.isArrowFunction(a) && !ts.isFunctionExpression(a)) this.syntax("E_SYNTAX", `${what} expects an arrow function here`, e);
    if (nParams >= 0 && a.parameters.length !== nParams) {
      this.syntax("E_SYNTAX", `the function passed to ${what} takes ${nParams} parameter${nParams === 1 ? "" : "s"}, got ${a.parameters.length}`, a);
    }
    return a;
  }

  private arrowBody(a: ts.ArrowFunction | ts.FunctionExpression, out: Stmt[]): void {
    if (ts.isBlock(a.body)) this.stmts(a.body.statements, out);
    else out.push(mkEval(this.expr(a.body), this.span(a.body)));
  }

  private paramName(p: ts.ParameterDeclaration): string {
    if (!ts.isIdentifier(p.name) || p.dotDotDotToken || p.initializer) this.syntax("E_SYNTAX", "parameters here must be plain names", p);
    return (p.name as ts.Identifier).text;
  }
  /** The type an arrow parameter declares, else `fallback`; a declared type must agree in kind/dtype. */
  private paramType(p: ts.ParameterDeclaration, fallback: Type | undefined, what: string): Type {
    const ann = p.type ? annType(readAnnotation(p.type, this.annEnv).ann) : null;
    if (ann && fallback && (ann.kind !== fallback.kind || ("dtype" in ann && "dtype" in fallback && ann.dtype !== fallback.dtype))) {
      this.typeErr(`${what} '${p.name.getText()}' is annotated ${typeStr(ann)} but its initial value is ${typeStr(fallback)}`, p);
    }
    const t = ann ?? fallback;
    if (!t) this.syntax("E_SYNTAX", `annotate ${what} '${p.name.getText()}' with its type`, p);
    return t;
  }

  private jumpStmt(kind: "yield" | "break" | "continue", call: ts.CallExpression, span: Span, out: Stmt[]): void {
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
  private structured(kind: "forRange" | "whileLoop" | "ifElse", call: ts.CallExpression, names: readonly ts.Identifier[], span: Span, out: Stmt[]): Var[] {
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
    const results = resultsOf(n ? yields[0].values.map(exprType) : []);
    // this.flow (already merged) stays
    out.push(mkIf({ cond, then: thenB, else: elseB, results, span }));
    return results;
  }

  /** A body with n carried values must end with a yield of n values (or break/continue/return). */
  private terminator(body: readonly Stmt[], n: number, what: string, node: ts.Node): void {
    if (n === 0) return;
    const last = body[body.length - 1];
    if (!last || !["yield", "break", "continue", "return"].includes(last.kind)) {
      this.syntax("E_SYNTAX", `the body of ${what} must end with pl.yield(...) of ${n} value${n === 1 ? "" : "s"}`, node);
    }
    if (last.kind === "yield" && last.values.length !== n) {
      this.syntax("E_SYNTAX", `${what} carries ${n} value${n === 1 ? "" : "s"} but pl.yield passes ${last.values.length}`, node);
    }
  }

  private ifStmt(s: ts.IfStatement, out: Stmt[]): void {
    const cond = this.scalarExpr(s.expression, "an if condition");
    const before = this.snapshot();
    const then = this.nested(s.thenStatement);
    const afterThen = this.flow;
    this.flow = before && new Set(before);
    const els = s.elseStatement ? this.nested(s.elseStatement) : [];
    this.flow = FunctionBuilder.meet(afterThen, this.flow);
    out.push(mkIf({ cond, then, else: els, results: [], span: this.span(s) }));
  }

  private forOf(s: ts.ForOfStatement, out: Stmt[]): void {
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

  private whileStmt(s: ts.WhileStatement, out: Stmt[]): void {
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

  private returnStmt(s: ts.ReturnStatement, out: Stmt[]): void {
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

  // ------------------------------------------------------------ expressions

  /** A scalar expression (conditions). */
  private scalarExpr(e: ts.Expression, what: string): Expr {
    const x = this.expr(e);
    const t = exprType(x);
    if (t.kind !== "scalar") this.typeErr(`${what} must be a scalar, got ${typeStr(t)}`, e);
    return x;
  }

  /** A scalar used as an integer (loop bounds, offsets): kernel constants like 64.0 become int64. */
  private indexExpr(e: ts.Expression, what: string): Expr {
    return this.intify(this.scalarExpr(e, what));
  }
  private intify(x: Expr): Expr {
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

  private constExpr(c: ConstVal, node: ts.Node): Expr {
    const span = this.span(node);
    if (c.k === "num") return mkConst(c.v, c.float ? "float32" : "int64", span);
    if (c.k === "bool") return mkConst(c.v, "bool", span);
    return this.typeErr(`'${node.getText()}' is the constant ${describeConst(c)}, which is not a scalar value`, node,
      c.k === "arr" ? "constant arrays are used where an op expects a list (offsets, shapes)" : c.k === "str" ? "strings are dtypes or op options" : undefined);
  }

  /** Throw E_UNRESOLVED for the first free identifier in `e` that does not resolve (locals and pl/Math names are fine). */
  private reportUnresolved(e: ts.Node): void {
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

  private unresolved(id: ts.Identifier, why?: string): never {
    const name = id.text;
    throw new TsptoSyntaxError("E_UNRESOLVED", `cannot resolve identifier '${name}' in kernel '${this.env.kernelName}'${why ? ` (it is ${why})` : ""}`,
      this.span(id), `declare it as a module-level const with a constant value, or pass it through pl.jit(fn, { scope: { ${name} } })`);
  }

  private identifier(id: ts.Identifier): Expr {
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

  private readLocal(l: Local, id: ts.Node): Expr {
    if (l.folded) return mkConst(l.folded.value, l.folded.dtype, this.span(id));
    const hint = `assign it on every path before this use, or initialize it where it is declared: let ${l.name} = ...`;
    if (!l.var) throw new TsptoSyntaxError("E_UNASSIGNED", `'${l.name}' is used before it is assigned`, this.span(id), hint);
    if (this.kernel && this.flow && !this.flow.has(l)) {
      throw new TsptoSyntaxError("E_UNASSIGNED", `'${l.name}' is possibly unassigned here`, this.span(id), hint);
    }
    return l.var;
  }

  private prefix(e: ts.PrefixUnaryExpression): Expr {
    const span = this.span(e);
    if (e.operator === ts.SyntaxKind.MinusToken) {
      // `-3`, `-2.5`, `-Infinity` are negative constants; `-(3)` is a negation (the printer's spelling)
      if (ts.isNumericLiteral(e.operand)) {
        const n = numericLiteral(e.operand);
        return mkConst(-n.v, n.float ? "float32" : "int64", span);
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
  private binary(op: string, a: Expr, b: Expr, node: ts.Node): Expr {
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

  private scalarOp(def: OpDef, args: Expr[], node: ts.Node): Expr {
    const span = this.span(node);
    const type = inferCall(def, args, {}, span);
    if (this.kernel && args.every((x) => x.kind === "const")) {
      const folded = this.fold(def, args as Const[], type, node);
      if (folded) return folded;
    }
    return mkCall(def.name, args, {}, type, span);
  }

  /** Evaluate a scalar op on constants (the registry's reference semantics); integers divide to ints when exact. */
  private fold(def: OpDef, args: readonly Const[], type: Type, node: ts.Node): Const | null {
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

  private call(e: ts.CallExpression): Expr {
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

  private mathCall(fn: string, e: ts.CallExpression): Expr {
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

  private plCall(name: string, e: ts.CallExpression): Expr {
    if (name === "const") return this.plConst(e);
    if (name === "withAttrs") return this.withAttrs(e);
    if (PL_STATEMENTS.includes(name)) { // (const and withAttrs are handled above)
      const what = name === "range" ? "pl.range is only used as the iterable of a for-of loop: for (const i of pl.range(n))"
        : name === "jit" ? "pl.jit cannot be used inside a kernel"
          : name === "forRange" || name === "whileLoop" || name === "ifElse" ? `pl.${name} results are bound by destructuring: const [r] = pl.${name}(...)`
            : `pl.${name}(...) is a statement`;
      this.syntax("E_SYNTAX", what, e);
    }
    if (!opsForPl(name).length) {
      const names = [...plOpNames(), ...PL_STATEMENTS.filter((s) => s !== "jit")];
      throw new TsptoSyntaxError("E_UNKNOWN_OP", `unknown op 'pl.${name}'`, this.span(e.expression),
        `did you mean ${closest(name, names).map((n) => `pl.${n}`).join(", ")}?`);
    }
    return this.op(name, e);
  }

  /** `pl.withAttrs(call, { k: v })`: a call with extra attributes (what passes record; printed IR). */
  private withAttrs(e: ts.CallExpression): Expr {
    if (e.arguments.length !== 2) this.syntax("E_ARITY", `pl.withAttrs takes 2 arguments (call, attrs), got ${e.arguments.length}`, e);
    const inner = this.expr(e.arguments[0]);
    if (inner.kind !== "call") this.syntax("E_SYNTAX", "pl.withAttrs applies to a call", e.arguments[0]);
    const c = this.constOf(e.arguments[1]);
    if (c?.k !== "obj") this.typeErr("the attributes of pl.withAttrs are an object of constants", e.arguments[1]);
    const extra = constToValue(c) as Record<string, AttrValue>;
    return mkCall(inner.op, inner.args, { ...inner.attrs, ...extra }, inner.type, inner.span);
  }

  private plConst(e: ts.CallExpression): Expr {
    if (e.arguments.length !== 2) this.syntax("E_ARITY", `pl.const takes 2 arguments (value, dtype), got ${e.arguments.length}`, e);
    const v = this.constOf(e.arguments[0]);
    const d = this.constOf(e.arguments[1]);
    if (!v || (v.k !== "num" && v.k !== "bool")) this.typeErr("the value of pl.const must be a constant number or boolean", e.arguments[0]);
    if (d?.k !== "str") this.typeErr("the dtype of pl.const must be a dtype like pl.INT32", e.arguments[1]);
    const c = mkConst(v.v, d.v as Const["dtype"], this.span(e));
    if (!(["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"] as string[]).includes(d.v)) {
      this.typeErr(`unknown dtype ${JSON.stringify(d.v)}`, e.arguments[1]);
    }
    return c;
  }

  /** `pl.<name>(...)` of a registry op: source arguments → IR operands and attributes by the op's params. */
  private op(name: string, e: ts.CallExpression): Expr {
    const span = this.span(e);
    const params = opsForPl(name)[0].params;
    const args = e.arguments;
    for (const a of args) if (ts.isSpreadElement(a)) this.syntax("E_SYNTAX", "spread arguments are not supported in kernels", a);
    const min = params.filter((p) => !p.optional).length;
    if (args.length < min || args.length > params.length) {
      const sig = `pl.${name}(${params.map((p) => (p.optional ? `${p.name}?` : p.name)).join(", ")})`;
      throw new TsptoTypeError("E_ARITY",
        `pl.${name} takes ${min === params.length ? min : `${min} to ${params.length}`} argument${params.length === 1 ? "" : "s"}, got ${args.length}`,
        span, `${sig}: ${opsForPl(name)[0].doc}`);
    }
    const firstIdx = params.findIndex((p) => p.kind === "value");
    const first = firstIdx >= 0 && firstIdx < args.length ? this.expr(args[firstIdx]) : undefined;
    // a number first (pl.sub(1.0, x)): the other value operands decide between the tile and tensor op
    const others = new Map<number, Expr>();
    if (first && exprType(first).kind === "scalar") {
      params.forEach((p, i) => {
        const a = args[i];
        if (i !== firstIdx && p.kind === "value" && a && !(ts.isIdentifier(a) && a.text === "undefined")) others.set(i, this.expr(a));
      });
    }
    const def = resolvePlOp(name, first && exprType(first), [...others.values()].map(exprType))!;
    const irArgs: Expr[] = [];
    const attrs: Record<string, AttrValue> = {};
    def.params.forEach((p, i) => {
      const a = args[i];
      if (!a || a.kind === ts.SyntaxKind.UndefinedKeyword || (ts.isIdentifier(a) && a.text === "undefined")) {
        if (!p.optional && a) this.typeErr(`pl.${name}: '${p.name}' is required`, a);
        return;
      }
      switch (p.kind) {
        case "value": irArgs.push(i === firstIdx ? first! : others.get(i) ?? this.expr(a)); break;
        case "values": irArgs.push(this.listArg(a, name, p.name)); break;
        case "options": this.optionsArg(a, name, p.options ?? {}, attrs); break;
        default: attrs[p.name] = this.attrArg(a, p.kind, name, p.name);
      }
    });
    // after the arguments, so that pl.assign(out, pl.add(a, b)) reports the innermost op first
    if (def.level === "orchestration") {
      if (this.env.fnKind !== "orchestration" || this.scopeDepth > 0) {
        throw new TsptoCompileError("E_MISPLACED", `pl.${name} creates an orchestration-level device tensor and is only allowed in an entry (pl.jit), outside pl.at`, span,
          this.env.fnKind === "orchestration" ? `call pl.${name} before the pl.at scope and use the tensor inside it` : "create on-chip buffers with pl.createTile, or pass the tensor in from the entry");
      }
    } else if (def.level !== "scalar" && this.env.fnKind === "orchestration" && this.scopeDepth === 0) {
      throw new TsptoCompileError("E_MISPLACED", `Misplaced tensor op '${def.name}' in Orchestration function (should be inside InCore block)`, span,
        "wrap it in pl.at(pl.Level.CORE_GROUP, () => { ... }) or move it into a pl.jit.incore kernel");
    }
    // tensors an op reads/writes (direction inference)
    const eff = effectsOf(def, irArgs, attrs);
    irArgs.forEach((x, i) => this.markEffect(x, eff.reads.includes(i) || !eff.writes.includes(i), eff.writes.includes(i)));
    const type = inferCall(def, irArgs, attrs, span);
    return mkCall(def.name, irArgs, attrs, type, span);
  }

  /** Offsets: an array literal of scalar expressions (or a constant array). */
  private listArg(a: ts.Expression, op: string, param: string): Expr {
    const span = this.span(a);
    if (ts.isArrayLiteralExpression(a)) {
      return mkList(a.elements.map((x) => {
        if (ts.isSpreadElement(x)) this.syntax("E_SYNTAX", "spread is not supported in kernels", x);
        return this.intify(this.scalarExpr(x, `an element of '${param}'`));
      }), span);
    }
    const c = this.constOf(a);
    if (c?.k === "arr" && c.v.every((x) => x.k === "num")) {
      return mkList(c.v.map((x) => this.intify(mkConst((x as { v: number }).v, (x as { float: boolean }).float ? "float32" : "int64", span))), span);
    }
    if (ts.isIdentifier(a)) {
      const l = this.local(a.text);
      if (l?.list) return l.list; // kernel mode: the list a const was bound to
      if (l?.var && l.var.type.kind === "list") return this.readLocal(l, a); // IR text: a list variable
    }
    if (c === undefined) this.reportUnresolved(a);
    return this.typeErr(`pl.${op}: '${param}' must be an array literal of scalars, like [0, i * 64]`, a);
  }

  private attrArg(a: ts.Expression, kind: Exclude<ParamKind, "value" | "values" | "options">, op: string, param: string): AttrValue {
    const c = this.constOf(a);
    // not a constant: report an unresolved identifier in it before the generic message
    if (c === undefined) this.reportUnresolved(a);
    switch (kind) {
      case "ints":
        if (c?.k === "arr" && c.v.every((x) => x.k === "num" && Number.isInteger(x.v))) return c.v.map((x) => (x as { v: number }).v);
        return this.typeErr(`pl.${op}: '${param}' must be a list of constant integers`, a,
          "use numbers or module-level consts, e.g. [ROWS, COLS]; a dynamic shape is not supported");
      case "dtype":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a dtype like pl.FP32 or "float32"`, a);
      case "mem":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a memory space like pl.Mem.Vec`, a);
      case "number":
        if (c?.k === "num") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a constant number`, a);
      case "string":
        if (c?.k === "str") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a string literal`, a);
      case "bool":
        if (c?.k === "bool") return c.v;
        return this.typeErr(`pl.${op}: '${param}' must be a constant true or false`, a);
    }
  }

  private optionsArg(a: ts.Expression, op: string, options: Readonly<Record<string, Exclude<ParamKind, "options" | "value">>>, attrs: Record<string, AttrValue>): void {
    if (!ts.isObjectLiteralExpression(a)) this.typeErr(`pl.${op}: options must be an object literal like { ${Object.keys(options).map((k) => `${k}: ...`).join(", ")} }`, a);
    for (const p of a.properties) {
      const key = (ts.isPropertyAssignment(p) || ts.isShorthandPropertyAssignment(p)) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : null;
      if (key === null) this.syntax("E_SYNTAX", `pl.${op}: unsupported option syntax`, p);
      const kind = options[key];
      if (!kind) this.typeErr(`pl.${op}: unknown option '${key}' (expected ${Object.keys(options).join(", ")})`, p);
      const value = ts.isPropertyAssignment(p) ? p.initializer : (p as ts.ShorthandPropertyAssignment).name;
      if (kind === "values") this.typeErr(`pl.${op}: option '${key}' is not supported`, p);
      attrs[key] = this.attrArg(value, kind as Exclude<ParamKind, "value" | "values" | "options">, op, key);
    }
  }

  /** A call of a sub-kernel by name. */
  private kernelCall(id: ts.Identifier, e: ts.CallExpression): Expr {
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

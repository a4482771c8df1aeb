// Immutable IR nodes. Plain frozen objects with a `kind` tag; build them with the
// constructors below (never mutate). Every node carries a span into the user's source.
import type { DType, Type } from "./types.js";
import { INDEX, scalarT } from "./types.js";

const FLOAT_DTYPES: ReadonlySet<DType> = new Set(["float32", "float16", "bfloat16"]);

export interface Span {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly endLine?: number;
  readonly endCol?: number;
}
export const NO_SPAN: Span = Object.freeze({ file: "<generated>", line: 0, col: 0 });

export type AttrValue = number | string | boolean | null | readonly AttrValue[] | { readonly [k: string]: AttrValue };
export type Attrs = { readonly [k: string]: AttrValue };

// ---------------------------------------------------------------- expressions
let nextVarId = 1;
/** A variable. Identity is `id`; `name` is a hint for printing and errors. */
export interface Var { readonly kind: "var"; readonly id: number; readonly name: string; readonly type: Type; readonly span: Span }
export interface Const { readonly kind: "const"; readonly value: number | boolean; readonly dtype: DType; readonly span: Span }
export interface Call {
  readonly kind: "call";
  /** Registry op name ("tile.add", "scalar.mul", ...) or "call" for a function call (attrs.callee). */
  readonly op: string;
  readonly args: readonly Expr[];
  readonly attrs: Attrs;
  readonly type: Type;
  readonly span: Span;
}
/** A list of scalar expressions (offsets). */
export interface ListExpr { readonly kind: "list"; readonly items: readonly Expr[]; readonly type: Type; readonly span: Span }
export type Expr = Var | Const | Call | ListExpr;

export function mkVar(name: string, type: Type, span: Span = NO_SPAN): Var {
  return Object.freeze({ kind: "var", id: nextVarId++, name, type, span });
}
/** A new variable with the same name hint (and optionally another type). */
export function freshVar(v: Var, type: Type = v.type, span: Span = v.span): Var {
  return mkVar(v.name, type, span);
}
export function mkConst(value: number | boolean, dtype?: DType, span: Span = NO_SPAN): Const {
  // -0 is a float (no integer dtype has it): untyped it is float32, typed as an integer it is 0
  const dt: DType = dtype ?? (typeof value === "boolean" ? "bool" : Number.isInteger(value) && !Object.is(value, -0) ? "int64" : "float32");
  const v = Object.is(value, -0) && !FLOAT_DTYPES.has(dt) ? 0 : value;
  return Object.freeze({ kind: "const", value: v, dtype: dt, span });
}
export function mkCall(op: string, args: readonly Expr[], attrs: Attrs, type: Type, span: Span = NO_SPAN): Call {
  return Object.freeze({ kind: "call", op, args: Object.freeze([...args]), attrs: Object.freeze({ ...attrs }), type, span });
}
export function mkList(items: readonly Expr[], span: Span = NO_SPAN): ListExpr {
  return Object.freeze({
    kind: "list", items: Object.freeze([...items]), span,
    type: Object.freeze({ kind: "list", elems: items.map((i) => exprType(i)) }) as Type,
  });
}
export function exprType(e: Expr): Type {
  if (e.kind === "const") return scalarT(e.dtype);
  return (e as Var | Call | ListExpr).type;
}
export { INDEX };

// ---------------------------------------------------------------- statements
/** Binds `targets` to `value`. Before SSA a `let` variable may be assigned again (same Var). */
export interface Assign { readonly kind: "assign"; readonly targets: readonly Var[]; readonly value: Expr; readonly span: Span }
export interface Eval { readonly kind: "eval"; readonly expr: Expr; readonly span: Span }
/**
 * `for (loopVar = start; loopVar < stop; loopVar += step)`. With iterArgs (SSA form), each
 * iteration starts with iterArgs bound to `inits` (first) or the previous Yield, and after
 * the loop `results` hold the last values (or those of a Break).
 */
export interface For {
  readonly kind: "for"; readonly loopVar: Var; readonly start: Expr; readonly stop: Expr; readonly step: Expr;
  readonly iterArgs: readonly Var[]; readonly inits: readonly Expr[]; readonly body: readonly Stmt[];
  readonly results: readonly Var[]; readonly span: Span;
}
/** `while (cond)`; cond is evaluated with iterArgs bound. */
export interface While {
  readonly kind: "while"; readonly iterArgs: readonly Var[]; readonly inits: readonly Expr[]; readonly cond: Expr;
  readonly body: readonly Stmt[]; readonly results: readonly Var[]; readonly span: Span;
}
/** Each branch that falls through ends with a Yield of results.length values. */
export interface If {
  readonly kind: "if"; readonly cond: Expr; readonly then: readonly Stmt[]; readonly else: readonly Stmt[];
  readonly results: readonly Var[]; readonly span: Span;
}
export interface Yield { readonly kind: "yield"; readonly values: readonly Expr[]; readonly span: Span }
/** Leave the innermost loop; in SSA form `values` are the loop's results. */
export interface Break { readonly kind: "break"; readonly values: readonly Expr[]; readonly span: Span }
/** Next iteration; in SSA form `values` are the next iteration's iterArgs. */
export interface Continue { readonly kind: "continue"; readonly values: readonly Expr[]; readonly span: Span }
export interface Return { readonly kind: "return"; readonly values: readonly Expr[]; readonly span: Span }
/** `pl.at(level, () => body)`: the on-chip scope, outlined into an InCore function by a pass. */
export interface Scope { readonly kind: "scope"; readonly level: string; readonly body: readonly Stmt[]; readonly span: Span }
export type Stmt = Assign | Eval | For | While | If | Yield | Break | Continue | Return | Scope;

type Fields<T> = Omit<T, "kind" | "span"> & { span?: Span };
const freeze = <T extends object>(o: T): T => Object.freeze(o);
export const mkAssign = (targets: readonly Var[], value: Expr, span: Span = NO_SPAN): Assign =>
  freeze({ kind: "assign", targets: freeze([...targets]), value, span });
export const mkEval = (expr: Expr, span: Span = NO_SPAN): Eval => freeze({ kind: "eval", expr, span });
export const mkFor = (f: Fields<For>): For => freeze({
  kind: "for", loopVar: f.loopVar, start: f.start, stop: f.stop, step: f.step, iterArgs: freeze([...f.iterArgs]),
  inits: freeze([...f.inits]), body: freeze([...f.body]), results: freeze([...f.results]), span: f.span ?? NO_SPAN,
});
export const mkWhile = (f: Fields<While>): While => freeze({
  kind: "while", iterArgs: freeze([...f.iterArgs]), inits: freeze([...f.inits]), cond: f.cond,
  body: freeze([...f.body]), results: freeze([...f.results]), span: f.span ?? NO_SPAN,
});
export const mkIf = (f: Fields<If>): If => freeze({
  kind: "if", cond: f.cond, then: freeze([...f.then]), else: freeze([...f.else]), results: freeze([...f.results]),
  span: f.span ?? NO_SPAN,
});
export const mkYield = (values: readonly Expr[], span: Span = NO_SPAN): Yield => freeze({ kind: "yield", values: freeze([...values]), span });
export const mkBreak = (values: readonly Expr[] = [], span: Span = NO_SPAN): Break => freeze({ kind: "break", values: freeze([...values]), span });
export const mkContinue = (values: readonly Expr[] = [], span: Span = NO_SPAN): Continue => freeze({ kind: "continue", values: freeze([...values]), span });
export const mkReturn = (values: readonly Expr[], span: Span = NO_SPAN): Return => freeze({ kind: "return", values: freeze([...values]), span });
export const mkScope = (level: string, body: readonly Stmt[], span: Span = NO_SPAN): Scope => freeze({ kind: "scope", level, body: freeze([...body]), span });

// ---------------------------------------------------------------- functions, programs
export type FunctionKind = "orchestration" | "incore" | "inline";
export type Direction = "in" | "out" | "inout";
export interface Param { readonly var: Var; readonly dir: Direction }
export interface Func {
  readonly kind: "function";
  readonly name: string;
  readonly fnKind: FunctionKind;
  readonly params: readonly Param[];
  readonly returnTypes: readonly Type[];
  readonly body: readonly Stmt[];
  /** Pass-produced facts (e.g. scratchBytes). Printed and round-tripped. */
  readonly attrs: Attrs;
  readonly span: Span;
}
export function mkFunc(f: Omit<Func, "kind" | "span" | "attrs"> & { span?: Span; attrs?: Attrs }): Func {
  return freeze({
    kind: "function", name: f.name, fnKind: f.fnKind, params: freeze(f.params.map((p) => freeze({ ...p }))),
    returnTypes: freeze([...f.returnTypes]), body: freeze([...f.body]), attrs: freeze({ ...(f.attrs ?? {}) }),
    span: f.span ?? NO_SPAN,
  });
}

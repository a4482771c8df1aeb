// Type annotations of kernel source: `pl.Tensor<[M, N], pl.FP32>`, `pl.Out<...>`, `pl.InOut<...>`,
// `pl.Tile<[M, N], pl.FP32, pl.Mem.Vec, { validShape: [..]; addr: N }>`, `pl.Scalar<pl.INT32>`,
// `number`, `boolean`, `void` and tuples `[A, B]` (return types). They are read syntactically.
import { ts } from "./typescript.js";
import { TsptoSyntaxError, TsptoTypeError } from "../ir/errors.js";
import type { Direction, Span } from "../ir/nodes.js";
import { isDType, MEMS, scalarT, tensorT, tileT, typeStr, type DType, type Dim, type Mem, type Type } from "../ir/types.js";
import { evalConst, plConstant, type ConstLookup, type ConstVal } from "./resolve.js";

/** An annotation, possibly partial (`pl.Tensor` without shape, `number` without dtype). */
export type Ann =
  | { readonly kind: "none" }
  | { readonly kind: "tensor"; readonly shape: readonly Dim[] | null; readonly dtype: DType | null }
  /** type null: `pl.Tile` / `pl.AnyTile` without arguments (the binding decides). */
  | { readonly kind: "tile"; readonly type: Type | null }
  | { readonly kind: "scalar"; readonly dtype: DType | null; readonly plain: boolean }
  | { readonly kind: "tuple"; readonly elems: readonly Ann[] }
  | { readonly kind: "void" };

export interface ReadAnn {
  readonly ann: Ann;
  /** From `pl.Out<...>` / `pl.InOut<...>`; null when not annotated. */
  readonly dir: Direction | null;
}

export interface AnnEnv {
  readonly lookup: ConstLookup;
  span(node: ts.Node): Span;
}

const NONE: Ann = { kind: "none" };

/** The last name of a type reference and its qualifier path (`pl.Mem.Vec` → ["pl", "Mem", "Vec"]). */
function entityPath(n: ts.EntityName): string[] {
  return ts.isIdentifier(n) ? [n.text] : [...entityPath(n.left), n.right.text];
}

/** The path after the `pl` namespace (or the whole path when unqualified). */
function plPath(t: ts.TypeNode): string[] | null {
  if (ts.isTypeReferenceNode(t)) {
    const p = entityPath(t.typeName);
    return p.length > 1 ? p.slice(1) : p;
  }
  if (ts.isTypeQueryNode(t)) {
    const p = entityPath(t.exprName);
    return p.length > 1 ? p.slice(1) : p;
  }
  return null;
}

function fail(env: AnnEnv, node: ts.Node, msg: string, hint?: string): never {
  throw new TsptoTypeError("E_TYPE", msg, env.span(node), hint);
}

function typeArgs(t: ts.TypeNode): readonly ts.TypeNode[] {
  return ts.isTypeReferenceNode(t) ? t.typeArguments ?? [] : [];
}

/** A constant written in a type position: a literal type, `typeof X`, or (leniently) a const's name. */
function typeConst(t: ts.TypeNode, env: AnnEnv): ConstVal | undefined {
  if (ts.isLiteralTypeNode(t)) {
    const lit = t.literal;
    if (ts.isPrefixUnaryExpression(lit) || ts.isNumericLiteral(lit) || ts.isStringLiteral(lit) ||
      lit.kind === ts.SyntaxKind.TrueKeyword || lit.kind === ts.SyntaxKind.FalseKeyword) return evalConst(lit as ts.Expression, env.lookup);
    return undefined;
  }
  if (ts.isTypeQueryNode(t)) {
    const path = entityPath(t.exprName);
    const root = env.lookup(path[0], t);
    if (root?.kind === "pl") return plConstant(path.slice(1));
    return path.length === 1 && root?.kind === "const" ? root.value : undefined;
  }
  if (ts.isTypeReferenceNode(t) && !t.typeArguments) {
    const path = entityPath(t.typeName);
    const root = env.lookup(path[0], t);
    if (root?.kind === "pl") return plConstant(path.slice(1));
    if (path.length === 1 && root?.kind === "const") return root.value;
  }
  return undefined;
}

function dims(t: ts.TypeNode, env: AnnEnv, what: string): Dim[] {
  if (!ts.isTupleTypeNode(t)) fail(env, t, `${what} must be a tuple of dimensions like [128, 64] or ["N", 64]`);
  return t.elements.map((el) => {
    const c = typeConst(ts.isNamedTupleMember(el) ? el.type : el, env);
    if (c?.k === "num" && Number.isInteger(c.v) && c.v >= 0) return c.v;
    if (c?.k === "str" && c.v) return c.v;
    return fail(env, el, `a dimension of ${what} must be a number, a string (a symbolic dim) or typeof a const`);
  });
}

function dtypeOf(t: ts.TypeNode, env: AnnEnv): DType {
  const c = typeConst(t, env);
  if (c?.k === "str" && isDType(c.v)) return c.v;
  return fail(env, t, `unknown dtype '${t.getText()}'`, "use pl.FP32, pl.FP16, pl.BF16, pl.INT8, pl.INT16, pl.INT32, pl.INT64, pl.UINT8 or pl.BOOL");
}

function memOf(t: ts.TypeNode, env: AnnEnv): Mem {
  const c = typeConst(t, env);
  if (c?.k === "str" && (MEMS as readonly string[]).includes(c.v)) return c.v as Mem;
  return fail(env, t, `unknown memory space '${t.getText()}'`, "use pl.Mem.Vec, Mat, Left, Right, Acc or Bias");
}

function tileExtra(t: ts.TypeNode, env: AnnEnv): { validShape: Dim[] | null; addr: number | null } {
  if (!ts.isTypeLiteralNode(t)) fail(env, t, "the 4th argument of pl.Tile must be { validShape: [..]; addr: N }");
  let validShape: Dim[] | null = null;
  let addr: number | null = null;
  for (const m of t.members) {
    if (!ts.isPropertySignature(m) || !m.type || !(ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) fail(env, m, "unsupported tile property");
    const key = m.name.text;
    if (key === "validShape") validShape = dims(m.type, env, "validShape");
    else if (key === "addr") {
      const c = typeConst(m.type, env);
      if (c?.k !== "num" || !Number.isInteger(c.v)) fail(env, m.type, "addr must be an integer");
      addr = c.v;
    } else fail(env, m, `unknown tile property '${key}' (expected validShape, addr)`);
  }
  return { validShape, addr };
}

/** Read an annotation (undefined = none). */
export function readAnnotation(t: ts.TypeNode | undefined, env: AnnEnv): ReadAnn {
  if (!t) return { ann: NONE, dir: null };
  if (ts.isParenthesizedTypeNode(t)) return readAnnotation(t.type, env);
  const path = plPath(t);
  const last = path?.[path.length - 1];
  if (ts.isTypeReferenceNode(t) && (last === "Out" || last === "InOut") && path!.length === 1) {
    const inner = typeArgs(t)[0];
    if (!inner) fail(env, t, `pl.${last} needs a type argument: pl.${last}<pl.Tensor>`);
    const r = readAnnotation(inner, env);
    if (r.ann.kind !== "tensor") fail(env, t, `pl.${last} applies to tensors, not ${inner.getText()}`);
    return { ann: r.ann, dir: last === "Out" ? "out" : "inout" };
  }
  return { ann: readType(t, env), dir: null };
}

function readType(t: ts.TypeNode, env: AnnEnv): Ann {
  switch (t.kind) {
    case ts.SyntaxKind.NumberKeyword: return { kind: "scalar", dtype: null, plain: true };
    case ts.SyntaxKind.BooleanKeyword: return { kind: "scalar", dtype: "bool", plain: true };
    case ts.SyntaxKind.VoidKeyword: return { kind: "void" };
    case ts.SyntaxKind.AnyKeyword: case ts.SyntaxKind.UnknownKeyword: return NONE;
  }
  if (ts.isParenthesizedTypeNode(t)) return readType(t.type, env);
  if (ts.isTupleTypeNode(t)) return { kind: "tuple", elems: t.elements.map((e) => readType(ts.isNamedTupleMember(e) ? e.type : e, env)) };
  const path = plPath(t);
  if (ts.isTypeReferenceNode(t) && path?.length === 1) {
    const args = typeArgs(t);
    switch (path[0]) {
      case "Tensor": {
        const shape = args[0] ? dims(args[0], env, "the tensor shape") : null;
        const dtype = args[1] ? dtypeOf(args[1], env) : null;
        return { kind: "tensor", shape, dtype };
      }
      case "AnyTile":
        return { kind: "tile", type: null };
      case "Tile": {
        if (args.length === 0) return { kind: "tile", type: null };
        if (args.length < 2) fail(env, t, "pl.Tile needs a shape and a dtype: pl.Tile<[M, N], pl.FP32>");
        const shape = dims(args[0], env, "the tile shape");
        if (!shape.every((d) => typeof d === "number" && d > 0)) fail(env, args[0], "a tile shape must be positive integers");
        const dtype = dtypeOf(args[1], env);
        const mem = args[2] ? memOf(args[2], env) : "Vec";
        const extra = args[3] ? tileExtra(args[3], env) : { validShape: null, addr: null };
        return { kind: "tile", type: tileT(shape as number[], dtype, mem, extra.validShape, extra.addr) };
      }
      case "Scalar":
        return { kind: "scalar", dtype: args[0] ? dtypeOf(args[0], env) : "int64", plain: false };
      case "Out": case "InOut":
        throw new TsptoSyntaxError("E_SYNTAX", `pl.${path[0]} is only allowed on a parameter`, env.span(t));
    }
  }
  throw new TsptoSyntaxError("E_SYNTAX", `unsupported type annotation '${t.getText()}' in a kernel`, env.span(t),
    "annotate parameters with pl.Tensor, pl.Tensor<[M, N], pl.FP32>, pl.Out<...>, pl.InOut<...>, pl.Tile<...>, pl.Scalar<...>, number or boolean");
}

/** The complete IR type an annotation gives, or null when it leaves something to the binding. */
export function annType(a: Ann): Type | null {
  switch (a.kind) {
    case "tensor": return a.shape && a.dtype ? tensorT(a.shape, a.dtype) : null;
    case "tile": return a.type;
    case "scalar": return a.dtype ? scalarT(a.dtype) : null;
    default: return null;
  }
}

/** Human-readable annotation, for messages. */
export function annStr(a: Ann): string {
  switch (a.kind) {
    case "none": return "unannotated";
    case "tensor": return `Tensor<${a.shape ? `[${a.shape.map((d) => (typeof d === "number" ? d : JSON.stringify(d))).join(", ")}]` : "?"}, ${a.dtype ?? "?"}>`;
    case "tile": return a.type ? typeStr(a.type) : "Tile";
    case "scalar": return a.plain ? (a.dtype === "bool" ? "boolean" : "number") : `Scalar<${a.dtype}>`;
    case "tuple": return `[${a.elems.map(annStr).join(", ")}]`;
    case "void": return "void";
  }
}

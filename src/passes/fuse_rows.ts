// FuseRows: row-wise chains across reductions and broadcasts run one row at a time.
//
// A straight-line tile computation over [R, C] tiles whose reductions go along rows (rowMax,
// rowSum, rowMin -> [R, 1]) and whose broadcasts bring [R, 1] values back along rows
// (rowExpandSub/Div/Mul/Add) — softmax (max -> sub -> exp -> sum -> div), layer norm (mean
// -> var -> normalize -> scale/shift), RMS norm — computes each row independently. This pass
// turns such a block (a kernel body, or the body of a loop without carried values) into a
// loop over its R rows: every [R, C] tile becomes a [1, C] tile (4 KiB for C = 1024: it stays
// in L1 between the passes over the row, instead of an [R, C] tile streaming through L2 once
// per op), every [R, 1] value a [1, 1] tile, and
//   - a row broadcast folds into its consumer: rowExpandSub(t, v) becomes sub(t, read(v, [0, 0]))
//     (an elementwise op with a scalar operand, which code generation fuses into the
//     neighbouring elementwise chain: exp(t - max) is one loop);
//   - a column broadcast of a [1, C] tile (colExpandMul(t, g), colExpand(t, b)) becomes the
//     elementwise op with g itself;
//   - loads and stores address row r0 + i; the last elementwise result is computed inside the
//     store's loop (no tile round trip).
// Values that do not depend on the rows ([1, C] loads such as gamma/beta, scalars) are computed
// once before the loop. Each element is computed by the same operations in the same order as
// before (a row broadcast t - v[i] is t - read(v, i)), so the results are unchanged.
//
// The block is left as it is unless every statement fits (loads/creates of R rows or of one
// row, elementwise ops, row reductions, row/column broadcasts, reshapes of a [R, 1] value,
// stores of the rows) and it has at least one row reduction.
import {
  BINARY, EXPAND_OPS, INDEX, getOp, inferCall, mkAssign, mkCall, mkConst, mkEval, mkFor, mkList, mkVar,
  type Call, type Expr, type Func, type Stmt, type TileType, type Var,
} from "../ir/index.js";
import type { Pass } from "./manager.js";
import { isFusable } from "./flatten_tiles.js";

export const fuseRowsPass: Pass = {
  name: "FuseRows",
  run(p) {
    return p.withFunctions(p.functions.map((f) => {
      if (f.fnKind !== "incore") return f;
      const body = fuseIn(f.body);
      return body === f.body ? f : Object.freeze({ ...f, body: Object.freeze(body) }) as Func;
    }));
  },
};

/** The statement list with every fusable block (itself, or a loop body inside) rewritten. */
function fuseIn(ss: readonly Stmt[]): readonly Stmt[] {
  const whole = fuseBlock(ss);
  if (whole) return whole;
  let changed = false;
  const out = ss.map((s) => {
    if (s.kind === "if" && !s.results.length) {
      // the branches of an if (a loop's whole tile and its partial last tile, tensor_to_tile.ts)
      const then = fuseIn(s.then), els = fuseIn(s.else);
      if (then === s.then && els === s.else) return s;
      changed = true;
      return Object.freeze({ ...s, then: Object.freeze(then), else: Object.freeze(els) }) as Stmt;
    }
    if (s.kind !== "for" || s.iterArgs.length) return s;
    const body = fuseIn(s.body);
    if (body === s.body) return s;
    changed = true;
    return mkFor({ ...s, body });
  });
  return changed ? out : ss;
}

class Bail extends Error {}
const bail = (): never => { throw new Bail(); };
type Cls = "row" | "vec" | "inv";
const REDUCE = new Set(["tile.rowMax", "tile.rowSum", "tile.rowMin"]);
const ROW_EXPAND = new Map(Object.entries(EXPAND_OPS).map(([s, b]) => [`tile.rowExpand${s}`, `tile.${b}`]));
const COL_EXPAND = new Map(Object.entries(EXPAND_OPS).map(([s, b]) => [`tile.colExpand${s}`, `tile.${b}`]));
void BINARY;

/** The block as a row loop (null: not a row-wise block). */
function fuseBlock(ss: readonly Stmt[]): Stmt[] | null {
  const tail = ss.length && ss[ss.length - 1].kind === "return" ? [ss[ss.length - 1]] : [];
  const stmts = ss.slice(0, ss.length - tail.length);
  let rows = 0;
  let reductions = 0, stores = 0;
  const row = mkVar("row", INDEX);
  const region = new Map<number, { cls: Cls; e: Expr }>();
  const stored = new Set<number>(), invLoads = new Set<number>();
  const span = stmts[0]?.span;

  const shape2 = (v: unknown): [number, number] | null =>
    Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "number") ? [v[0] as number, v[1] as number] : null;
  /** The class an [a, b] tile of the block has (sets R on the first tile of more than one row). */
  const clsOfShape = (s: [number, number]): Cls => {
    if (s[0] === 1) return "inv";
    if (rows === 0) rows = s[0];
    if (s[0] !== rows) bail();
    return s[1] === 1 ? "vec" : "row";
  };
  const call = (op: string, args: readonly Expr[], attrs: Call["attrs"], at: Call): Call =>
    mkCall(op, args, attrs, inferCall(getOp(op), args, attrs, at.span), at.span);
  const rowOffsets = (offs: Expr, at: Call): Expr => {
    if (offs.kind !== "list" || offs.items.length !== 2) return bail();
    if (offs.items.some((x) => rewrite(x).cls !== "inv")) bail();
    const o0 = offs.items[0];
    const first = o0.kind === "const" && o0.value === 0 ? row : call("scalar.add", [o0, row], {}, at);
    return mkList([first, offs.items[1]], offs.span);
  };
  const readScalar = (v: Expr, at: Call): Expr => call("tile.read", [v, mkList([mkConst(0, "int64"), mkConst(0, "int64")])], {}, at);

  const rewrite = (e: Expr): { cls: Cls; e: Expr } => {
    if (e.kind === "const") return { cls: "inv", e };
    if (e.kind === "var") return region.get(e.id) ?? { cls: "inv", e };
    if (e.kind === "list") {
      if (e.items.some((x) => rewrite(x).cls !== "inv")) bail();
      return { cls: "inv", e };
    }
    const t = e.type.kind === "tile" ? (e.type as TileType) : null;
    if (t?.validShape) bail();
    switch (e.op) {
      case "tile.load": {
        const s = shape2(e.attrs.shape);
        if (!s || e.attrs.validShape != null || e.attrs.pad !== undefined) return bail();
        const c = clsOfShape(s);
        if (c === "inv") { if (rewrite(e.args[1]).cls !== "inv") bail(); if (e.args[0].kind === "var") invLoads.add(e.args[0].id); return { cls: "inv", e }; }
        return { cls: c, e: call("tile.load", [e.args[0], rowOffsets(e.args[1], e)], { ...e.attrs, shape: [1, s[1]] }, e) };
      }
      case "tile.create": case "tile.full": {
        const s = shape2(e.attrs.shape);
        if (!s) return bail();
        const c = clsOfShape(s);
        return c === "inv" ? { cls: "inv", e } : { cls: c, e: call(e.op, [], { ...e.attrs, shape: [1, s[1]] }, e) };
      }
      case "tile.store": {
        const x = rewrite(e.args[0]);
        if (x.cls === "inv") bail();
        if (e.args[2].kind !== "var") bail();
        stored.add((e.args[2] as Var).id);
        stores++;
        return { cls: "row", e: call("tile.store", [x.e, rowOffsets(e.args[1], e), e.args[2]], e.attrs, e) };
      }
      case "tile.reshape": {
        const x = rewrite(e.args[0]);
        const s = shape2(e.attrs.shape);
        const xt = e.args[0].kind !== "const" ? (e.args[0] as Var).type as TileType : null;
        if (x.cls !== "vec" || !s || !xt) return x.cls === "inv" ? { cls: "inv", e } : bail();
        // [R, 1] <-> [1, R]: one element per row either way
        if (!((s[0] === 1 && s[1] === rows) || (s[0] === rows && s[1] === 1))) bail();
        return x;
      }
      default: break;
    }
    if (REDUCE.has(e.op)) {
      const x = rewrite(e.args[0]), tmp = rewrite(e.args[1]);
      if (x.cls !== "row" || tmp.cls !== "row") bail();
      reductions++;
      return { cls: "vec", e: call(e.op, [x.e, tmp.e], e.attrs, e) };
    }
    if (ROW_EXPAND.has(e.op)) {
      const x = rewrite(e.args[0]), v = rewrite(e.args[1]);
      if (x.cls !== "row" || v.cls !== "vec") bail();
      return { cls: "row", e: call(ROW_EXPAND.get(e.op)!, [x.e, readScalar(v.e, e)], {}, e) };
    }
    if (COL_EXPAND.has(e.op) || e.op === "tile.colExpand") {
      const x = rewrite(e.args[0]), g = rewrite(e.args[1]);
      if (x.cls !== "row" || g.cls !== "inv") bail();
      return { cls: "row", e: e.op === "tile.colExpand" ? g.e : call(COL_EXPAND.get(e.op)!, [x.e, g.e], {}, e) };
    }
    if (isFusable(e)) {
      const args = e.args.map(rewrite);
      const tileCls = new Set(args.filter((a, k) => a.cls !== "inv" || (e.args[k].kind !== "const" && exprTypeKind(e.args[k]) === "tile")).map((a) => a.cls));
      if (tileCls.size === 0 || (tileCls.size === 1 && tileCls.has("inv"))) return { cls: "inv", e };
      if (tileCls.size !== 1) return bail(); // mixes rows with a one-row tile, or rows with [R, 1]
      const c = [...tileCls][0];
      return { cls: c, e: call(e.op, args.map((a) => a.e), e.attrs, e) };
    }
    if (e.args.every((a) => rewrite(a).cls === "inv")) return { cls: "inv", e };
    return bail();
  };

  const pre: Stmt[] = [], body: Stmt[] = [];
  try {
    for (const s of stmts) {
      if (s.kind === "assign" && s.targets.length === 1 && s.targets[0].type.kind !== "tensor") {
        const r = rewrite(s.value);
        if (r.cls === "inv") { pre.push(s); continue; }
        const v = s.targets[0];
        const nv = r.e.kind === "var" ? r.e : mkVar(v.name, (r.e as Call).type, v.span);
        if (r.e.kind !== "var") body.push(mkAssign([nv], r.e, s.span));
        region.set(v.id, { cls: r.cls, e: nv });
        continue;
      }
      if (s.kind === "eval" && s.expr.kind === "call" && s.expr.op === "tile.store") {
        body.push(mkEval(rewrite(s.expr).e, s.span));
        continue;
      }
      return null;
    }
  } catch (e) {
    if (e instanceof Bail) return null;
    throw e;
  }
  if (rows < 2 || reductions === 0 || stores === 0) return null;
  for (const id of invLoads) if (stored.has(id)) return null; // a hoisted load of a tensor the rows write
  const loop = mkFor({ loopVar: row, start: mkConst(0, "int64"), stop: mkConst(rows, "int64"), step: mkConst(1, "int64"), iterArgs: [], inits: [], body, results: [], span });
  return [...pre, loop, ...tail];
}

const exprTypeKind = (e: Expr): string => (e.kind === "const" ? "scalar" : e.type.kind);

// tensor-to-tile: tensor-level ops inside InCore functions (`pl.assign(out, pl.mul(pl.add(a,
// b), c))`) become loop nests over tiles: each tensor leaf is loaded window by window, the
// elementwise expression is rebuilt from the tile-level ops, and the result is stored. The
// tile shape is chosen so that the leaves' tiles fit half the per-core scratch (the other
// half is headroom for the rest of the kernel), tiling the last two axes and stepping the
// leading ones one at a time.
import {
  TsptoCompileError, getOp, inferCall, mkCall, mkConst, mkEval, mkFor, mkList, mkVar, mkAssign, mapExpr, INDEX,
  tileElemBytes, type Expr, type Func, type Stmt, type TensorType, type Var, type Span,
} from "../ir/index.js";
import type { Pass, PassContext } from "./manager.js";

export const tensorToTilePass: Pass = {
  name: "TensorToTile",
  run(p, ctx) {
    return p.withFunctions(p.functions.map((f) => (f.fnKind === "incore" ? lowerFunc(f, ctx) : f)));
  },
};

const isTensorOp = (e: Expr): e is Extract<Expr, { kind: "call" }> =>
  e.kind === "call" && e.op !== "call" && e.op.startsWith("tensor.") && e.op !== "tensor.assign";

function lowerFunc(f: Func, ctx: PassContext): Func {
  const pending = new Map<number, Expr>(); // tensor-valued vars defined by tensor ops -> their expression
  const subst = (e: Expr): Expr => mapExpr(e, (x) => (x.kind === "var" ? pending.get(x.id) : undefined));
  let changed = false;
  const walk = (ss: readonly Stmt[]): Stmt[] => ss.flatMap((s): Stmt[] => {
    switch (s.kind) {
      case "assign":
        if (s.targets.length === 1 && isTensorOp(s.value)) { pending.set(s.targets[0].id, subst(s.value)); changed = true; return []; }
        return [s];
      case "eval":
        if (s.expr.kind === "call" && s.expr.op === "tensor.assign") {
          changed = true;
          const [out, value] = s.expr.args;
          if (out.kind !== "var") throw new TsptoCompileError("E_ASSIGN_TARGET", "pl.assign needs a tensor variable as its target", s.span);
          return lowerAssign(out, subst(value), ctx, s.span, f.name);
        }
        if (isTensorOp(s.expr)) { changed = true; return []; } // an unused tensor expression
        return [s];
      case "for": case "while": return [Object.freeze({ ...s, body: Object.freeze(walk(s.body)) })];
      case "if": return [Object.freeze({ ...s, then: Object.freeze(walk(s.then)), else: Object.freeze(walk(s.else)) })];
      default: return [s];
    }
  });
  const body = walk(f.body);
  return changed ? Object.freeze({ ...f, body: Object.freeze(body) }) : f;
}

/** Distinct tensor variables read by a tensor expression. */
function leaves(e: Expr, out: Var[] = []): Var[] {
  if (e.kind === "var" && e.type.kind === "tensor") { if (!out.some((v) => v.id === e.id)) out.push(e); }
  else if (e.kind === "call") e.args.forEach((a) => leaves(a, out));
  return out;
}

function largestDivisorAtMost(n: number, limit: number): number {
  for (let d = Math.min(n, Math.max(1, Math.floor(limit))); d >= 1; d--) if (n % d === 0) return d;
  return 1;
}

function lowerAssign(out: Var, value: Expr, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const ot = out.type as TensorType;
  if (!ot.shape.every((d): d is number => typeof d === "number")) {
    throw new TsptoCompileError("E_DYNAMIC", `pl.assign on tensor '${out.name}' with dynamic dimensions is not supported yet`, span, "give the tensor a static shape");
  }
  const shape = ot.shape as number[];
  const ls = leaves(value);
  const nTiles = Math.max(1, ls.length);
  const elem = Math.max(tileElemBytes(ot.dtype), ...ls.map((l) => tileElemBytes((l.type as TensorType).dtype)));
  const budget = Math.floor(ctx.scratchCapacity / 2 / nTiles / elem / 16) * 16; // elements per tile
  if (budget < 1) throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': pl.assign over ${ls.length} tensors cannot fit one element per tile in ${ctx.scratchCapacity} bytes of scratch`, span);
  const rank = shape.length;
  const tile = shape.map(() => 1);
  const last = shape[rank - 1];
  if (last <= budget) {
    tile[rank - 1] = last;
    if (rank >= 2) tile[rank - 2] = largestDivisorAtMost(shape[rank - 2], budget / last);
  } else {
    tile[rank - 1] = largestDivisorAtMost(last, budget);
  }
  // offsets: a loop variable per axis that takes more than one step, else the constant 0
  const loops: { v: Var; axis: number }[] = [];
  const offsets: Expr[] = shape.map((d, ax) => {
    if (tile[ax] === d) return mkConst(0, "int64", span);
    const v = mkVar(`i${ax}`, INDEX, span);
    loops.push({ v, axis: ax });
    return v;
  });
  const inner: Stmt[] = [];
  const tileOf = new Map<number, Var>();
  for (const l of ls) {
    const args = [l, mkList(offsets, span)];
    const attrs = { shape: tile };
    const load = mkCall("tile.load", args, attrs, inferCall(getOp("tile.load"), args, attrs, span), span);
    const tv = mkVar(`${l.name}_tile`, load.type, span);
    inner.push(mkAssign([tv], load, span));
    tileOf.set(l.id, tv);
  }
  const toTile = (e: Expr): Expr => {
    if (e.kind === "var" && e.type.kind === "tensor") return tileOf.get(e.id)!;
    if (e.kind !== "call" || !isTensorOp(e)) return e;
    const name = `tile.${e.op.slice("tensor.".length)}`;
    const args = e.args.map(toTile);
    return mkCall(name, args, e.attrs, inferCall(getOp(name), args, e.attrs, e.span), e.span);
  };
  const result = toTile(value);
  if (result.kind !== "var" && (result.kind !== "call" || result.type.kind !== "tile")) {
    throw new TsptoCompileError("E_ASSIGN_VALUE", `pl.assign to '${out.name}' needs a tensor value`, span);
  }
  const storeArgs = [result, mkList(offsets, span), out];
  inner.push(mkEval(mkCall("tile.store", storeArgs, {}, inferCall(getOp("tile.store"), storeArgs, {}, span), span), span));
  let body: Stmt[] = inner;
  for (let k = loops.length - 1; k >= 0; k--) {
    const { v, axis } = loops[k];
    body = [mkFor({ loopVar: v, start: mkConst(0, "int64", span), stop: mkConst(shape[axis], "int64", span), step: mkConst(tile[axis], "int64", span), iterArgs: [], inits: [], body, results: [], span })];
  }
  return body;
}

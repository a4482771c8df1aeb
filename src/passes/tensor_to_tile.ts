// tensor-to-tile: tensor-level ops inside InCore functions become loop nests over tiles.
//   pl.assign(out, expr)               out[:] = expr
//   pl.assemble(target, expr, offset)  target[offset : offset + shape(expr)] = expr
// where expr is an elementwise expression (add, mul, exp, cast, ... and scalars) over tensors
// and tensor windows (pl.slice(t, shape, offset)). Each tensor leaf is loaded window by
// window, the expression is rebuilt from the tile-level ops, and the result is stored.
//
// The tile shape is chosen so that the leaves' tiles fit half the per-core scratch (the other
// half is headroom for the rest of the kernel), tiling the last two axes and stepping the
// leading ones one at a time. Where an extent has a good divisor the tiles cover it exactly
// (one loop nest); otherwise the last tile along that axis is a partial tile: the same tile
// shape with a validShape of the remainder (loads read, and stores write, only that region),
// emitted as a peeled copy of the loop body after the loop.
import {
  TsptoCompileError, getOp, inferCall, tileOpOf, mkCall, mkConst, mkEval, mkFor, mkList, mkVar, mkAssign, mapExpr, INDEX,
  tileElemBytes, type Expr, type Func, type Stmt, type TensorType, type Var, type Span, type Call,
} from "../ir/index.js";
import type { Pass, PassContext } from "./manager.js";

export const tensorToTilePass: Pass = {
  name: "TensorToTile",
  run(p, ctx) {
    return p.withFunctions(p.functions.map((f) => (f.fnKind === "incore" ? lowerFunc(f, ctx) : f)));
  },
};

const STATEMENT_OPS = new Set(["tensor.assign", "tensor.assemble"]);
/** A tensor-valued tensor-level op (part of an expression to lower). */
const isTensorOp = (e: Expr): e is Call =>
  e.kind === "call" && e.op !== "call" && e.type.kind === "tensor" && !STATEMENT_OPS.has(e.op) && getOp(e.op).level === "tensor";

function lowerFunc(f: Func, ctx: PassContext): Func {
  const pending = new Map<number, Expr>(); // tensor-valued vars defined by tensor ops -> their expression
  const subst = (e: Expr): Expr => mapExpr(e, (x) => (x.kind === "var" ? pending.get(x.id) : undefined));
  let changed = false;
  const target = (e: Expr, what: string, span: Span): Var => {
    if (e.kind !== "var") throw new TsptoCompileError("E_ASSIGN_TARGET", `pl.${what} needs a tensor variable as its target`, span);
    return e;
  };
  const walk = (ss: readonly Stmt[]): Stmt[] => ss.flatMap((s): Stmt[] => {
    switch (s.kind) {
      case "assign": {
        const v = s.value;
        if (s.targets.length === 1 && isTensorOp(v)) { pending.set(s.targets[0].id, subst(v)); changed = true; return []; }
        if (s.targets.length === 1 && v.kind === "call" && v.op === "tensor.assemble") {
          // x = pl.assemble(t, expr, off): lower the write, then x is t
          changed = true;
          const t = target(v.args[0], "assemble", s.span);
          return [...lowerWrite(t, v.args[2], subst(v.args[1]), ctx, s.span, f.name), mkAssign(s.targets, t, s.span)];
        }
        return [s];
      }
      case "eval":
        if (s.expr.kind === "call" && s.expr.op === "tensor.assign") {
          changed = true;
          const [out, value] = s.expr.args;
          return lowerWrite(target(out, "assign", s.span), null, subst(value), ctx, s.span, f.name);
        }
        if (s.expr.kind === "call" && s.expr.op === "tensor.assemble") {
          changed = true;
          const [out, value, off] = s.expr.args;
          return lowerWrite(target(out, "assemble", s.span), off, subst(value), ctx, s.span, f.name);
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

/** A tensor leaf of an expression: a tensor variable, or a window pl.slice(var, shape, offset). */
interface Leaf { key: Expr; tensor: Var; base: readonly Expr[] | null }

function leaves(e: Expr, out: Leaf[] = []): Leaf[] {
  if (e.kind === "var" && e.type.kind === "tensor") {
    if (!out.some((l) => l.key.kind === "var" && l.key.id === e.id)) out.push({ key: e, tensor: e, base: null });
  } else if (e.kind === "call" && e.op === "tensor.slice" && e.args[0].kind === "var") {
    const off = e.args[1];
    if (off.kind !== "list") throw new TsptoCompileError("E_CODEGEN", "internal: slice offsets must be a list", e.span);
    if (!out.some((l) => l.key === e)) out.push({ key: e, tensor: e.args[0], base: off.items });
  } else if (e.kind === "call") e.args.forEach((a) => leaves(a, out));
  return out;
}

function largestDivisorAtMost(n: number, limit: number): number {
  for (let d = Math.min(n, Math.max(1, Math.floor(limit))); d >= 1; d--) if (n % d === 0) return d;
  return 1;
}
/**
 * A tile extent for an axis of extent n with at most `limit` elements: n itself when it fits;
 * else the largest divisor when it is at least half the limit (no partial tile); else the
 * limit (a multiple of 8 when possible), leaving a partial tile at the end.
 */
export function tileExtent(n: number, limit: number): number {
  const lim = Math.max(1, Math.floor(limit));
  if (n <= lim) return n;
  const d = largestDivisorAtMost(n, lim);
  if (2 * d >= lim) return d;
  return lim >= 16 ? lim - (lim % 8) : lim;
}

const add = (a: Expr, b: Expr, span: Span): Expr => {
  if (a.kind === "const" && a.value === 0) return b;
  if (b.kind === "const" && b.value === 0) return a;
  if (a.kind === "const" && b.kind === "const") return mkConst(Number(a.value) + Number(b.value), "int64", span);
  const args = [a, b];
  return mkCall("scalar.add", args, {}, inferCall(getOp("scalar.add"), args, {}, span), span);
};

function lowerWrite(out: Var, outOffsets: Expr | null, value: Expr, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const ot = out.type as TensorType;
  const vt = value.kind === "const" ? null : value.type;
  if (!vt || vt.kind !== "tensor") throw new TsptoCompileError("E_ASSIGN_VALUE", `pl.${outOffsets ? "assemble" : "assign"} to '${out.name}' needs a tensor value`, span);
  if (!vt.shape.every((d): d is number => typeof d === "number") || !ot.shape.every((d): d is number => typeof d === "number")) {
    throw new TsptoCompileError("E_DYNAMIC", `pl.${outOffsets ? "assemble" : "assign"} on tensor '${out.name}' with dynamic dimensions is not supported yet`, span, "give the tensor a static shape");
  }
  const shape = vt.shape as number[];
  const base = outOffsets ? (outOffsets.kind === "list" ? outOffsets.items : null) : shape.map(() => mkConst(0, "int64", span));
  if (!base) throw new TsptoCompileError("E_CODEGEN", "internal: assemble offsets must be a list", span);
  const ls = leaves(value);
  const nTiles = Math.max(1, ls.length);
  const elem = Math.max(tileElemBytes(ot.dtype), ...ls.map((l) => tileElemBytes((l.tensor.type as TensorType).dtype)));
  const budget = Math.floor(ctx.scratchCapacity / 2 / nTiles / elem / 16) * 16; // elements per tile
  if (budget < 1) throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': tiling over ${ls.length} tensors cannot fit one element per tile in ${ctx.scratchCapacity} bytes of scratch`, span);
  const rank = shape.length;
  const tile = shape.map(() => 1);
  tile[rank - 1] = tileExtent(shape[rank - 1], budget);
  if (rank >= 2) tile[rank - 2] = tileExtent(shape[rank - 2], budget / tile[rank - 1]);

  // Each axis runs `full` whole tiles (a loop, or the constant 0 for one tile) and then, when
  // the extent is not a multiple of the tile, one partial tile at offset full * tile.
  const axes = shape.map((d, ax) => ({ d, t: tile[ax], full: Math.floor(d / tile[ax]), rem: d % tile[ax] }));
  // every combination of (whole tiles | the partial tile) over the axes that have both
  let combos: ("full" | "rem")[][] = [[]];
  for (const a of axes) {
    const opts: ("full" | "rem")[] = [];
    if (a.full > 0) opts.push("full");
    if (a.rem > 0) opts.push("rem");
    combos = combos.flatMap((c) => opts.map((o) => [...c, o]));
  }
  const stmts: Stmt[] = [];
  for (const combo of combos) {
    const loops: { v: Var; stop: number; step: number }[] = [];
    const offsets: Expr[] = axes.map((a, ax) => {
      if (combo[ax] === "rem") return mkConst(a.full * a.t, "int64", span);
      if (a.full === 1) return mkConst(0, "int64", span);
      const v = mkVar(`i${ax}`, INDEX, span);
      loops.push({ v, stop: a.full * a.t, step: a.t });
      return v;
    });
    const valid = combo.some((c) => c === "rem") ? axes.map((a, ax) => (combo[ax] === "rem" ? a.rem : a.t)) : null;
    const inner: Stmt[] = [];
    const tileOf = new Map<Expr, Var>();
    for (const l of ls) {
      const offs = offsets.map((o, ax) => (l.base ? add(l.base[ax], o, span) : o));
      const args = [l.tensor, mkList(offs, span)];
      const attrs: Record<string, number[]> = valid ? { shape: tile, validShape: valid } : { shape: tile };
      const load = mkCall("tile.load", args, attrs, inferCall(getOp("tile.load"), args, attrs, span), span);
      const tv = mkVar(`${l.tensor.name}_tile`, load.type, span);
      inner.push(mkAssign([tv], load, span));
      tileOf.set(l.key, tv);
    }
    const toTile = (e: Expr): Expr => {
      for (const [k, v] of tileOf) if (k === e || (k.kind === "var" && e.kind === "var" && k.id === e.id)) return v;
      if (e.kind !== "call" || !isTensorOp(e)) return e;
      const name = tileOpOf(getOp(e.op));
      const args = e.args.map(toTile);
      return mkCall(name, args, e.attrs, inferCall(getOp(name), args, e.attrs, e.span), e.span);
    };
    const result = toTile(value);
    if (result.kind !== "var" && (result.kind !== "call" || result.type.kind !== "tile")) {
      throw new TsptoCompileError("E_ASSIGN_VALUE", `pl.${outOffsets ? "assemble" : "assign"} to '${out.name}' needs a tensor value`, span);
    }
    const storeArgs = [result, mkList(offsets.map((o, ax) => add(base[ax], o, span)), span), out];
    inner.push(mkEval(mkCall("tile.store", storeArgs, {}, inferCall(getOp("tile.store"), storeArgs, {}, span), span), span));
    let body: Stmt[] = inner;
    for (let k = loops.length - 1; k >= 0; k--) {
      const { v, stop, step } = loops[k];
      body = [mkFor({ loopVar: v, start: mkConst(0, "int64", span), stop: mkConst(stop, "int64", span), step: mkConst(step, "int64", span), iterArgs: [], inits: [], body, results: [], span })];
    }
    stmts.push(...body);
  }
  return stmts;
}

// tensor-to-tile: tensor-level ops inside InCore functions become loop nests over tiles.
//   pl.assign(out, expr)               out[:] = expr
//   pl.assemble(target, expr, offset)  target[offset : offset + shape(expr)] = expr
// where expr is an elementwise expression (add, mul, exp, cast, ... and scalars) over tensors
// and tensor windows (pl.slice(t, shape, offset)), NumPy-broadcasting [M,N] with [1,N] and
// [M,1] (a broadcast leaf is loaded once along the stretched axis and widened with
// broadcastTo); or a reduction of such an expression (rowSum ... colArgmin: each tile holds
// the whole reduced axis); or a matmul of two tensors (output tiles [tm, tn], K in tiles
// accumulated with matmulAcc in k order, so the values equal one whole matmul). Each tensor
// leaf is loaded window by window, the expression is rebuilt from the tile-level ops (the
// registry's tileOp of each tensor op), and the result is stored.
//
// The tile shape is chosen so that the leaves' tiles fit half the per-core scratch (the other
// half is headroom for the rest of the kernel), tiling the last two axes and stepping the
// leading ones one at a time. Where an extent has a good divisor the tiles cover it exactly
// (one loop nest); otherwise the last tile along that axis is a partial tile: the same tile
// shape with a validShape of the remainder (loads read, and stores write, only that region),
// emitted as a peeled copy of the loop body after the loop.
import {
  TsptoCompileError, getOp, inferCall, tileOpOf, mkCall, mkConst, mkEval, mkFor, mkList, mkVar, mkAssign, mkYield, mapExpr, exprType, INDEX,
  ELEMENTWISE, REDUCTIONS, PROD_REDUCTIONS, ARG_REDUCTIONS,
  tileElemBytes, type Attrs, type Expr, type Func, type Stmt, type TensorType, type TileType, type Var, type Span, type Call,
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

/** A tensor-level op allowed inside an elementwise expression (the rest must be the whole value). */
const isElementwiseTensorOp = (op: string) => {
  if (op === "tensor.cast" || op === "tensor.slice" || getOp(op).tileExpr) return true;
  const t = tileOpOf(getOp(op));
  return t === "tile.cast" || ELEMENTWISE.has(t.slice("tile.".length));
};
const REDUCE_NAMES = new Set([...Object.keys(REDUCTIONS), ...Object.keys(PROD_REDUCTIONS), ...Object.keys(ARG_REDUCTIONS)]);

/** Per axis: `full` whole tiles of extent t, then a partial tile of `rem` when the extent is not a multiple. */
interface Axis { d: number; t: number; full: number; rem: number }
const axisOf = (d: number, t: number): Axis => ({ d, t, full: Math.floor(d / t), rem: d % t });

/**
 * The loop nests that cover `axes` with tiles: each axis runs its whole tiles (a loop, or the
 * constant 0 for one tile) and then, when the extent is not a multiple of the tile, one
 * partial tile at offset full * tile (a peeled copy). body gets the tile offsets and, for a
 * combination with a partial tile, the valid extents.
 */
function tileLoops(axes: readonly Axis[], span: Span, body: (offsets: Expr[], valid: number[] | null) => Stmt[], name = "i"): Stmt[] {
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
      const v = mkVar(`${name}${ax}`, INDEX, span);
      loops.push({ v, stop: a.full * a.t, step: a.t });
      return v;
    });
    const valid = combo.some((c) => c === "rem") ? axes.map((a, ax) => (combo[ax] === "rem" ? a.rem : a.t)) : null;
    let inner = body(offsets, valid);
    for (let k = loops.length - 1; k >= 0; k--) {
      const { v, stop, step } = loops[k];
      inner = [mkFor({ loopVar: v, start: mkConst(0, "int64", span), stop: mkConst(stop, "int64", span), step: mkConst(step, "int64", span), iterArgs: [], inits: [], body: inner, results: [], span })];
    }
    stmts.push(...inner);
  }
  return stmts;
}

const staticShape = (t: TensorType, what: string, span: Span): number[] => {
  if (!t.shape.every((d): d is number => typeof d === "number")) {
    throw new TsptoCompileError("E_DYNAMIC", `${what} with dynamic dimensions is not supported yet`, span, "give the tensor a static shape");
  }
  return t.shape as number[];
};
const call = (op: string, args: readonly Expr[], attrs: Attrs, span: Span): Call => mkCall(op, args, attrs, inferCall(getOp(op), args, attrs, span), span);
const list = (xs: readonly Expr[], span: Span) => mkList(xs, span);
const zero = (span: Span) => mkConst(0, "int64", span);

/** Elements per tile when `nTiles` tiles of the widest of `dtypes` share half the scratch. */
function tileBudget(ctx: PassContext, nTiles: number, dtypes: readonly TensorType["dtype"][], what: string, span: Span, fname: string): number {
  const elem = Math.max(...dtypes.map((d) => tileElemBytes(d)));
  const budget = Math.floor(ctx.scratchCapacity / 2 / Math.max(1, nTiles) / elem / 16) * 16;
  if (budget < 1) throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': tiling ${what} cannot fit one element per tile in ${ctx.scratchCapacity} bytes of scratch`, span);
  return budget;
}

/**
 * Load the leaves of an elementwise tensor expression for the tile at `offsets` (in the
 * expression's space of shape `space`, tile shape `tile`, valid extents `valid`) and rebuild
 * the expression from tile ops. A leaf with a dimension of 1 where the space has more (NumPy
 * broadcasting) is loaded once along that axis and stretched with broadcastTo.
 */
function tileExpr(value: Expr, ls: readonly Leaf[], space: readonly number[], tile: readonly number[], offsets: readonly Expr[], valid: number[] | null, span: Span, inner: Stmt[]): Expr {
  checkElementwise(value);
  const tileOf = new Map<Expr, Expr>();
  for (const l of ls) {
    const lt = l.key.kind === "call" ? (l.key.type as TensorType) : (l.tensor.type as TensorType);
    const bc = lt.shape.map((d, ax) => d === 1 && space[ax] !== 1);
    const offs = offsets.map((o, ax) => {
      const own = bc[ax] ? zero(span) : o;
      return l.base ? add(l.base[ax], own, span) : own;
    });
    const shape = tile.map((t, ax) => (bc[ax] ? 1 : t));
    const v = valid ? valid.map((x, ax) => (bc[ax] ? 1 : x)) : null;
    const attrs: Record<string, number[]> = v ? { shape, validShape: v } : { shape };
    const load = call("tile.load", [l.tensor, list(offs, span)], attrs, span);
    const tv = mkVar(`${l.tensor.name}_tile`, load.type, span);
    inner.push(mkAssign([tv], load, span));
    tileOf.set(l.key, bc.some(Boolean) ? call("tile.broadcastTo", [tv], valid ? { shape: [...tile], validShape: valid } : { shape: [...tile] }, span) : tv);
  }
  const toTile = (e: Expr): Expr => {
    for (const [k, v] of tileOf) if (k === e || (k.kind === "var" && e.kind === "var" && k.id === e.id)) return v;
    if (e.kind !== "call" || !isTensorOp(e)) return e;
    const args = e.args.map(toTile);
    const def = getOp(e.op);
    if (def.tileExpr) return def.tileExpr(args, e.attrs, (op, xs, attrs = {}) => call(op, xs, attrs, e.span), { shape: tile, validShape: valid });
    return call(tileOpOf(def), args, e.attrs, e.span);
  };
  return toTile(value);
}

/** Every tensor-level op of an elementwise expression must be elementwise (checked before its leaves are loaded). */
function checkElementwise(e: Expr): void {
  if (e.kind !== "call" || !isTensorOp(e) || (e.op === "tensor.slice" && e.args[0].kind === "var")) return;
  if (!isElementwiseTensorOp(e.op)) {
    const pl = getOp(e.op).pl ?? e.op;
    const kind = /^(matmul|matmulAcc|matmulBias|batchMatmul)$/.test(pl) ? "matmul" : REDUCE_NAMES.has(pl) ? "reduction" : pl;
    throw new TsptoCompileError("E_TENSOR_FORM", `pl.${pl}: a tensor-level ${kind} must be the whole value of pl.assign / pl.assemble, not part of an elementwise expression`, e.span,
      "assign it to a tensor of its own first (a pl.Out parameter or a pl.createTensor buffer passed in), then use that tensor");
  }
  e.args.forEach(checkElementwise);
}

function lowerWrite(out: Var, outOffsets: Expr | null, value: Expr, ctx: PassContext, span: Span, fname: string, what = `pl.${outOffsets ? "assemble" : "assign"}`): Stmt[] {
  const ot = out.type as TensorType;
  const vt = value.kind === "const" ? null : value.type;
  if (!vt || vt.kind !== "tensor") throw new TsptoCompileError("E_ASSIGN_VALUE", `${what} to '${out.name}' needs a tensor value`, span);
  const shape = staticShape(vt, `${what} on tensor '${out.name}'`, span);
  staticShape(ot, `${what} on tensor '${out.name}'`, span);
  const base = outOffsets ? (outOffsets.kind === "list" ? outOffsets.items : null) : shape.map(() => zero(span));
  if (!base) throw new TsptoCompileError("E_CODEGEN", "internal: assemble offsets must be a list", span);
  const store = (result: Expr, offsets: readonly Expr[]): Stmt => {
    const args = [result, list(offsets.map((o, ax) => add(base[ax], o, span)), span), out];
    return mkEval(call("tile.store", args, {}, span), span);
  };
  if (value.kind === "call" && value.op.startsWith("tensor.") && REDUCE_NAMES.has(value.op.slice(7))) return lowerReduce(value, store, ctx, span, fname);
  if (value.kind === "call" && (value.op === "tensor.matmul" || value.op === "tensor.matmulAcc" || value.op === "tensor.matmulBias" || value.op === "tensor.batchMatmul")) return lowerMatmul(value, store, ctx, span, fname);
  if (value.kind === "call" && value.op === "tensor.reshape") return lowerReshape(value, store, ctx, span, fname);
  if (value.kind === "call" && value.op === "tensor.concat") {
    // each operand written into its columns of the result: [..., 0 : Na] and [..., Na : Na + Nb]
    const [a, b] = value.args;
    const last = shape.length - 1, na = (exprType(a) as TensorType).shape[last] as number;
    const bBase = base.map((o, ax) => (ax === last ? add(o, mkConst(na, "int64", span), span) : o));
    return [...lowerWrite(out, list(base, span), a, ctx, span, fname, what), ...lowerWrite(out, list(bBase, span), b, ctx, span, fname, what)];
  }
  if (value.kind === "call" && value.op === "tensor.transpose") return lowerTranspose(value, shape, store, ctx, span, fname);

  const ls = leaves(value);
  const budget = tileBudget(ctx, ls.length, [ot.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)], `over ${ls.length} tensors`, span, fname);
  const rank = shape.length;
  const tile = shape.map(() => 1);
  tile[rank - 1] = tileExtent(shape[rank - 1], budget);
  if (rank >= 2) tile[rank - 2] = tileExtent(shape[rank - 2], budget / tile[rank - 1]);
  return tileLoops(shape.map((d, ax) => axisOf(d, tile[ax])), span, (offsets, valid) => {
    const inner: Stmt[] = [];
    const result = tileExpr(value, ls, shape, tile, offsets, valid, span, inner);
    if (result.kind !== "var" && (result.kind !== "call" || result.type.kind !== "tile")) {
      throw new TsptoCompileError("E_ASSIGN_VALUE", `${what} to '${out.name}' needs a tensor value`, span);
    }
    inner.push(store(result, offsets));
    return inner;
  });
}

/** A tensor-level reduction: tiles hold the whole reduced axis; the other axis is tiled (partial tiles at the end). */
function lowerReduce(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const name = value.op.slice("tensor.".length);
  const row = name.startsWith("row");
  const x = value.args[0];
  const xt = exprType(x) as TensorType;
  const [m, n] = staticShape(xt, `pl.${name}`, span);
  const ls = leaves(x);
  const budget = tileBudget(ctx, ls.length + 1, [xt.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)], `pl.${name}`, span, fname);
  const whole = row ? n : m;
  if (whole > budget) {
    throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': pl.${name} reduces ${whole} elements per ${row ? "row" : "column"}, more than a tile holds (${budget})`, span,
      `reduce slices of the tensor (pl.slice) and combine the partial results`);
  }
  const t = tileExtent(row ? m : n, budget / whole);
  const tile = row ? [t, n] : [m, t];
  return tileLoops([axisOf(row ? m : n, t)], span, ([o], valid) => {
    const inner: Stmt[] = [];
    const full = row ? [o, zero(span)] : [zero(span), o];
    const v = valid ? (row ? [valid[0], n] : [m, valid[0]]) : null;
    const tx = tileExpr(x, ls, [m, n], tile, full, v, span, inner);
    const scratch = name in REDUCTIONS && row ? [call("tile.create", [], { shape: tile, dtype: xt.dtype }, span)] : [];
    inner.push(store(call(`tile.${name}`, [tx, ...scratch], {}, span), full));
    return inner;
  });
}

/** A tensor-level matmul: [tm, tn] output tiles, K in tiles of tk accumulated with matmulAcc in k order. */
function lowerMatmul(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const withAcc = value.op === "tensor.matmulAcc", withBias = value.op === "tensor.matmulBias";
  const [a, b] = withAcc ? value.args.slice(1) : value.args;
  const extra = withAcc ? value.args[0] : withBias ? value.args[2] : null;
  const la = leaves(a), lb = leaves(b);
  const isLeaf = (e: Expr) => (e.kind === "var" && e.type.kind === "tensor") || (e.kind === "call" && e.op === "tensor.slice" && e.args[0].kind === "var");
  if (!isLeaf(a) || !isLeaf(b) || (extra && !isLeaf(extra))) {
    throw new TsptoCompileError("E_TENSOR_FORM", "pl.matmul on tensors takes tensors or tensor windows (pl.slice) as its operands, not expressions", span,
      "assign the expression to a tensor first, then multiply that tensor");
  }
  const aT = value.attrs.aTrans === true, bT = value.attrs.bTrans === true;
  const at = exprType(a) as TensorType, bt = exprType(b) as TensorType, rt = value.type as TensorType;
  // batchMatmul: the same per batch, on [1, rows, cols] windows seen as [rows, cols] (a reshape that drops the 1)
  const batch = value.op === "tensor.batchMatmul" ? staticShape(at, "pl.batchMatmul", span)[0] : 0;
  const as = staticShape(at, "pl.matmul", span).slice(batch ? 1 : 0), bs = staticShape(bt, "pl.matmul", span).slice(batch ? 1 : 0);
  const [m, k] = aT ? [as[1], as[0]] : as, n = bT ? bs[0] : bs[1];
  const budget = tileBudget(ctx, batch ? 6 : 3, [at.dtype, "float32"], "pl.matmul", span, fname);
  let tm = tileExtent(m, 128), tn = tileExtent(n, 128), tk = tileExtent(k, 128);
  while (tm * tk > budget || tk * tn > budget || tm * tn > budget) {
    if (tk >= tm && tk >= tn) tk = tileExtent(k, Math.max(1, tk >> 1)); else if (tm >= tn) tm = tileExtent(m, Math.max(1, tm >> 1)); else tn = tileExtent(n, Math.max(1, tn >> 1));
  }
  const ka = axisOf(k, tk);
  const opts = { ...(aT ? { aTrans: true } : {}), ...(bT ? { bTrans: true } : {}) };
  return tileLoops([...(batch ? [axisOf(batch, 1)] : []), axisOf(m, tm), axisOf(n, tn)], span, (offsets, valid0) => {
    const inner: Stmt[] = [];
    const ob = batch ? offsets[0] : null;
    const [oi, oj] = batch ? offsets.slice(1) : offsets;
    const valid = valid0 && batch ? valid0.slice(1) : valid0;
    const vm = valid ? valid[0] : tm, vn = valid ? valid[1] : tn;
    /** Load the operand tiles for the k tile at offset ok (valid extent vk). */
    const operands = (ok: Expr, vk: number, body: Stmt[]): [Expr, Expr] => {
      const win = (l: Leaf, r: Expr, c: Expr, shape: number[], v: number[]): Expr => {
        const offs = (ob ? [ob, r, c] : [r, c]).map((o, ax) => (l.base ? add(l.base[ax], o, span) : o));
        const full = v[0] === shape[0] && v[1] === shape[1];
        const [sh, vs] = ob ? [[1, ...shape], [1, ...v]] : [shape, v];
        const ld = call("tile.load", [l.tensor, list(offs, span)], full ? { shape: sh } : { shape: sh, validShape: vs }, span);
        const tv = mkVar(`${l.tensor.name}_tile`, ld.type, span);
        body.push(mkAssign([tv], ld, span));
        return ob ? call("tile.reshape", [tv], { shape }, span) : tv;
      };
      const ta = aT ? win(la[0], ok, oi, [tk, tm], [vk, vm]) : win(la[0], oi, ok, [tm, tk], [vm, vk]);
      const tb = bT ? win(lb[0], oj, ok, [tn, tk], [vn, vk]) : win(lb[0], ok, oj, [tk, tn], [vk, vn]);
      return [ta, tb];
    };
    const firstValid = ka.full > 0 ? tk : ka.rem;
    const [a0, b0] = operands(zero(span), firstValid, inner);
    /** The [rows, cols] window of a leaf tensor at (r, c), valid (vr, vc). */
    const window = (e: Expr, r: Expr, c: Expr, shape: number[], v: number[]): Var => {
      const l = leaves(e)[0];
      const offs = [r, c].map((o, ax) => (l.base ? add(l.base[ax], o, span) : o));
      const full = v[0] === shape[0] && v[1] === shape[1];
      const ld = call("tile.load", [l.tensor, list(offs, span)], full ? { shape } : { shape, validShape: v }, span);
      const tv = mkVar(`${l.tensor.name}_tile`, ld.type, span);
      inner.push(mkAssign([tv], ld, span));
      return tv;
    };
    const first = withAcc
      ? call("tile.matmulAcc", [window(extra!, oi, oj, [tm, tn], [vm, vn]), a0, b0], opts, span)
      : call("tile.matmul", [a0, b0], opts, span);
    let acc = mkVar("acc", first.type, span);
    inner.push(mkAssign([acc], first, span));
    if (ka.full > 1) {
      const kv = mkVar("k", INDEX, span);
      const accIn = mkVar("acc", acc.type, span), accOut = mkVar("acc", acc.type, span);
      const body: Stmt[] = [];
      const [ak, bk] = operands(kv, tk, body);
      const next = call("tile.matmulAcc", [accIn, ak, bk], opts, span);
      const accNext = mkVar("acc", next.type, span);
      body.push(mkAssign([accNext], next, span), mkYield([accNext], span));
      inner.push(mkFor({ loopVar: kv, start: mkConst(tk, "int64", span), stop: mkConst(ka.full * tk, "int64", span), step: mkConst(tk, "int64", span), iterArgs: [accIn], inits: [acc], body, results: [accOut], span }));
      acc = accOut;
    }
    if (ka.full > 0 && ka.rem > 0) {
      const [ar, br] = operands(mkConst(ka.full * tk, "int64", span), ka.rem, inner);
      const last = call("tile.matmulAcc", [acc, ar, br], opts, span);
      acc = mkVar("acc", last.type, span);
      inner.push(mkAssign([acc], last, span));
    }
    const biased: Expr = withBias ? call("tile.colExpandAdd", [acc, window(extra!, zero(span), oj, [1, tn], [1, vn])], {}, span) : acc;
    const result = (acc.type as TileType).dtype === rt.dtype ? biased : call("tile.cast", [biased], { dtype: rt.dtype, mode: "round" }, span);
    inner.push(ob ? store(call("tile.reshape", [result], { shape: [1, tm, tn] }, span), [ob, oi, oj]) : store(result, [oi, oj]));
    return inner;
  }, "m");
}

/**
 * A chunk of `e` consecutive elements (row-major) of a tensor of `shape`, starting at a multiple
 * of e, as a window: [1, ..., 1, c, shape[j+1], ..., shape[last]] at axis j. It is one whenever c
 * divides shape[j], or j is the first axis (the last chunk then has fewer rows); null otherwise.
 */
function chunkWindow(shape: readonly number[], e: number): { axis: number; shape: number[] } | null {
  let suffix = 1;
  for (let j = shape.length - 1; j >= 0; j--) {
    if (e % suffix === 0 && e / suffix <= shape[j]) {
      const c = e / suffix;
      if (j > 0 && shape[j] % c !== 0) return null;
      return { axis: j, shape: shape.map((d, ax) => (ax < j ? 1 : ax === j ? c : d)) };
    }
    suffix *= shape[j];
  }
  return null;
}

/**
 * A tensor-level reshape: the elements are cut into chunks of e consecutive elements that are
 * windows of both shapes (the largest such e that fits a tile); each chunk is loaded in the
 * operand's shape (an elementwise expression of tensors, computed on the tile), reshaped and
 * stored in the result's shape. The chunk offsets come from the flat position of the chunk.
 */
function lowerReshape(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const x = value.args[0];
  const xt = exprType(x) as TensorType;
  const from = staticShape(xt, "pl.reshape", span), to = staticShape(value.type as TensorType, "pl.reshape", span);
  const ls = leaves(x);
  const budget = tileBudget(ctx, ls.length + 2, [xt.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)], "pl.reshape", span, fname);
  const total = from.reduce((p, d) => p * d, 1);
  let e = Math.min(total, budget);
  for (; e > 1; e--) {
    const rem = total % e;
    if (chunkWindow(from, e) && chunkWindow(to, e) && (rem === 0 || (chunkWindow(from, rem) && chunkWindow(to, rem)))) break;
  }
  /** The offsets of the window of the chunk at flat position p (a constant or a loop variable). */
  const offsetsAt = (shape: readonly number[], axis: number, p: Expr): Expr[] => {
    const strides = shape.map((_, ax) => shape.slice(ax + 1).reduce((q, d) => q * d, 1));
    return shape.map((d, ax) => {
      if (ax > axis) return zero(span);
      if (p.kind === "const") return mkConst(Math.floor(Number(p.value) / strides[ax]) % d, "int64", span);
      let q = p;
      if (strides[ax] !== 1) q = call("scalar.floor", [call("scalar.div", [p, mkConst(strides[ax], "int64", span)], {}, span)], {}, span);
      return ax === 0 ? q : call("scalar.mod", [q, mkConst(d, "int64", span)], {}, span);
    });
  };
  return tileLoops([axisOf(total, e)], span, ([p], valid) => {
    const inner: Stmt[] = [];
    const n = valid ? valid[0] : e;
    const wIn = chunkWindow(from, n)!, wOut = chunkWindow(to, n)!;
    const tx = tileExpr(x, ls, from, wIn.shape, offsetsAt(from, wIn.axis, p), null, span, inner);
    inner.push(store(call("tile.reshape", [tx], { shape: wOut.shape }, span), offsetsAt(to, wOut.axis, p)));
    return inner;
  }, "p");
}

/** A tensor-level transpose of a tensor (or window): each output tile is the transposed tile of the swapped window. */
function lowerTranspose(value: Call, shape: readonly number[], store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const x = value.args[0];
  const ls = leaves(x);
  if (ls.length !== 1 || !(x.kind === "var" || (x.kind === "call" && x.op === "tensor.slice"))) {
    throw new TsptoCompileError("E_TENSOR_FORM", "pl.transpose on tensors takes a tensor or a tensor window (pl.slice), not an expression", span,
      "transpose the tiles instead (pl.transpose of a tile), or assign the expression to a tensor first");
  }
  const l = ls[0];
  const a1 = Number(value.attrs.axis1), a2 = Number(value.attrs.axis2);
  const swap = <T>(xs: readonly T[]): T[] => { const o = [...xs]; [o[a1], o[a2]] = [o[a2], o[a1]]; return o; };
  const budget = tileBudget(ctx, 2, [(l.tensor.type as TensorType).dtype], "pl.transpose", span, fname);
  const rank = shape.length;
  const tile = shape.map(() => 1);
  const side = Math.max(1, Math.floor(Math.sqrt(budget)));
  tile[rank - 1] = tileExtent(shape[rank - 1], side);
  if (rank >= 2) tile[rank - 2] = tileExtent(shape[rank - 2], budget / tile[rank - 1]);
  for (const ax of [a1, a2]) if (ax < rank - 2) tile[ax] = 1;
  return tileLoops(shape.map((d, ax) => axisOf(d, tile[ax])), span, (offsets, valid) => {
    const inner: Stmt[] = [];
    const offs = swap(offsets).map((o, ax) => (l.base ? add(l.base[ax], o, span) : o));
    const attrs: Record<string, number[]> = valid ? { shape: swap(tile), validShape: swap(valid) } : { shape: swap(tile) };
    const ld = call("tile.load", [l.tensor, list(offs, span)], attrs, span);
    const tv = mkVar(`${l.tensor.name}_tile`, ld.type, span);
    inner.push(mkAssign([tv], ld, span));
    inner.push(store(call("tile.transpose", [tv], { axis1: a1, axis2: a2 }, span), offsets));
    return inner;
  });
}

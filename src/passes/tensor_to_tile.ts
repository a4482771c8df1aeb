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
  TsptoCompileError, getOp, inferCall, tileOpOf, mkCall, mkConst, mkEval, mkFor, mkIf, mkList, mkVar, mkAssign, mkYield, mapExpr, exprType, INDEX,
  ELEMENTWISE, REDUCTIONS, PROD_REDUCTIONS, ARG_REDUCTIONS, EXPAND_OPS, matmulAccDType, sameExpr,
  tileElemBytes, typeStr, type Attrs, type Dim, type Expr, type Func, type Stmt, type TensorType, type TileType, type Var, type Span, type Call,
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
          const value = subst(v.args[1]);
          return [...sliceChecks(value), ...lowerWrite(t, v.args[2], value, ctx, s.span, f.name), mkAssign(s.targets, t, s.span)];
        }
        return [s];
      }
      case "eval":
        if (s.expr.kind === "call" && s.expr.op === "tensor.assign") {
          changed = true;
          const [out, value0] = s.expr.args;
          const value = subst(value0);
          return [...sliceChecks(value), ...lowerWrite(target(out, "assign", s.span), null, value, ctx, s.span, f.name)];
        }
        if (s.expr.kind === "call" && s.expr.op === "tensor.assemble") {
          changed = true;
          const [out, value0, off] = s.expr.args;
          const value = subst(value0);
          return [...sliceChecks(value), ...lowerWrite(target(out, "assemble", s.span), off, value, ctx, s.span, f.name)];
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

/**
 * A tensor leaf of an expression: a tensor variable, or a window pl.slice(var, shape, offset)
 * (`base`: its offsets; `ext`: its extents, numbers or run-time expressions).
 */
interface Leaf { key: Expr; tensor: Var; base: readonly Expr[] | null; ext: readonly (number | Expr)[] | null; read?: "gather" }

function leaves(e: Expr, out: Leaf[] = [], gathered = false): Leaf[] {
  // `gathered`: read by a gather only (a leaf read elsewhere too is loaded as usual)
  const push = (l: Leaf) => { if (gathered) l.read = "gather"; out.push(l); };
  if (e.kind === "var" && e.type.kind === "tensor") {
    const seen = out.find((l) => l.key.kind === "var" && l.key.id === e.id);
    if (seen) { if (!gathered) delete seen.read; return out; }
    push({ key: e, tensor: e, base: null, ext: null });
  } else if (e.kind === "call" && e.op === "tensor.slice") {
    const [x, shape, off] = e.args;
    if (x.kind !== "var") {
      throw new TsptoCompileError("E_TENSOR_FORM", "pl.slice on tensors takes a tensor variable (a parameter or a pl.createTensor buffer), not an expression", e.span,
        "slice the tensors the expression reads (pl.slice of each operand), or assign the expression to a tensor first");
    }
    if (off.kind !== "list" || shape.kind !== "list") throw new TsptoCompileError("E_CODEGEN", "internal: slice shape and offsets must be lists", e.span);
    const ext = shape.items.map((it) => (it.kind === "const" ? Number(it.value) : it));
    const seen = out.find((l) => l.key === e);
    if (seen) { if (!gathered) delete seen.read; return out; }
    push({ key: e, tensor: x, base: off.items, ext });
  } else if (e.kind === "call" && e.op === "tensor.gather") {
    // the table is read by gatherLoad and the indices as an index tile (gatherTile), not as tiles of
    // the value's space: leaves for the extents and the tile budget only (unless read elsewhere too)
    e.args.forEach((a) => leaves(a, out, true));
  } else if (e.kind === "call") e.args.forEach((a) => leaves(a, out, gathered));
  return out;
}

/** A slice whose extents hold run-time values: its window is checked once before the loops (tile.checkWindow). */
const runtimeSlice = (e: Expr): e is Call => e.kind === "call" && e.op === "tensor.slice" && e.args[1].kind === "list" && e.args[1].items.some((it) => it.kind !== "const");

/** The window checks of the run-time slices an expression reads (each once, at the slice's location). */
function sliceChecks(e: Expr, out: Stmt[] = [], seen = new Set<Expr>()): Stmt[] {
  if (e.kind !== "call" || seen.has(e)) return out;
  seen.add(e);
  if (runtimeSlice(e) && e.args[0].kind === "var") {
    const [x, shape, off] = e.args;
    out.push(mkEval(call("tile.checkWindow", [x, shape, off], {}, e.span), e.span));
  }
  e.args.forEach((a) => sliceChecks(a, out, seen));
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
  if (op === "tensor.cast" || op === "tensor.slice" || op === "tensor.gather" || getOp(op).tileExpr) return true;
  const t = tileOpOf(getOp(op));
  return t === "tile.cast" || ELEMENTWISE.has(t.slice("tile.".length));
};
const REDUCE_NAMES = new Set([...Object.keys(REDUCTIONS), ...Object.keys(PROD_REDUCTIONS), ...Object.keys(ARG_REDUCTIONS)]);

/**
 * Per axis: a static extent d as `full` whole tiles of extent t, then a partial tile of `rem`
 * when d is not a multiple; or a dynamic extent (an int64 expression, `pl.dim` of a tensor).
 */
/** exactLast: the partial tile of a oneLoop axis is a whole tile of the remainder's extent (no validShape). */
type StaticAxis = { d: number; t: number; full: number; rem: number; dyn?: undefined; oneLoop?: boolean; exactLast?: boolean };
type Axis = StaticAxis | { dyn: Expr; t: number };
const axisOf = (d: number, t: number): StaticAxis => ({ d, t, full: Math.floor(d / t), rem: d % t });

type TileBody = (offsets: Expr[], valid: number[] | null, tile: number[]) => Stmt[];
const c64 = (n: number, span: Span) => mkConst(n, "int64", span);
const loop = (v: Var, start: Expr, stop: Expr, step: number, body: Stmt[], span: Span): Stmt =>
  mkFor({ loopVar: v, start, stop, step: c64(step, span), iterArgs: [], inits: [], body, results: [], span });

/**
 * The loop nests that cover `axes` with tiles. All static: each axis runs its whole tiles (a
 * loop, or the constant 0 for one tile) and then, when the extent is not a multiple of the
 * tile, one partial tile at offset full * tile (a peeled copy) — except the first axis, whose
 * whole tiles and partial tile are one loop (the last trip partial, tiledAxes' `oneLoop`), so
 * that a kernel over it stays one loop SplitParallelLoops can split. body gets the tile
 * offsets, for a combination with a partial tile the valid extents, and the tile shape.
 * With a dynamic axis (or that first axis) the nests are built axis by axis (tiledAxes).
 */
function tileLoops(axes: readonly Axis[], span: Span, body: TileBody, name = "i"): Stmt[] {
  // a first axis of whole tiles and a partial one: ONE loop whose last trip takes the partial
  // tile (an `if` on the offset), so that SplitParallelLoops can still spread it over the cores
  const a0 = axes[0];
  if (a0 && !a0.dyn && a0.full >= 1 && a0.rem > 0) return tiledAxes([{ ...a0, oneLoop: true }, ...axes.slice(1)], 0, [], [], [], span, body, name);
  if (axes.some((a) => a.dyn)) return tiledAxes(axes, 0, [], [], [], span, body, name);
  const st = axes as readonly StaticAxis[];
  let combos: ("full" | "rem")[][] = [[]];
  for (const a of st) {
    const opts: ("full" | "rem")[] = [];
    if (a.full > 0) opts.push("full");
    if (a.rem > 0) opts.push("rem");
    combos = combos.flatMap((c) => opts.map((o) => [...c, o]));
  }
  const stmts: Stmt[] = [];
  for (const combo of combos) {
    const loops: { v: Var; stop: number; step: number }[] = [];
    const offsets: Expr[] = st.map((a, ax) => {
      if (combo[ax] === "rem") return c64(a.full * a.t, span);
      if (a.full === 1) return c64(0, span);
      const v = mkVar(`${name}${ax}`, INDEX, span);
      loops.push({ v, stop: a.full * a.t, step: a.t });
      return v;
    });
    const valid = combo.some((c) => c === "rem") ? st.map((a, ax) => (combo[ax] === "rem" ? a.rem : a.t)) : null;
    let inner = body(offsets, valid, st.map((a) => a.t));
    for (let k = loops.length - 1; k >= 0; k--) inner = [loop(loops[k].v, c64(0, span), c64(loops[k].stop, span), loops[k].step, inner, span)];
    stmts.push(...inner);
  }
  return stmts;
}

/**
 * Axis by axis from `ax`, inside the loops of the axes before it (offsets, tile, partial so
 * far). A dynamic axis of extent d is ONE loop over tiles of t (a run-time trip count, so the
 * loop stays splittable across cores): a tile that fits (v + t <= d) is a whole tile; the last
 * one is covered row by row, `for j in [0, t): if (v + j < d)` with 1-wide tiles (no partial
 * tile whose extent is only known at run time). A static axis marked oneLoop is one loop over
 * its whole tiles and its partial tile, `if (v + t <= d)` whole else partial; any other static
 * axis runs its whole tiles and a peeled partial tile inside the enclosing loops.
 */
function tiledAxes(axes: readonly Axis[], ax: number, offs: Expr[], tile: number[], part: (number | null)[], span: Span, body: TileBody, name: string): Stmt[] {
  if (ax === axes.length) {
    const valid = part.some((p) => p !== null) ? part.map((p, k) => p ?? tile[k]) : null;
    return body(offs, valid, tile);
  }
  const a = axes[ax];
  const next = (o: Expr, t: number, p: number | null) => tiledAxes(axes, ax + 1, [...offs, o], [...tile, t], [...part, p], span, body, name);
  if (a.dyn) {
    const v = mkVar(`${name}${ax}`, INDEX, span), j = mkVar(`${name}${ax}_row`, INDEX, span);
    const row = scalarOp("scalar.add", v, j, span);
    const fits = scalarOp("scalar.le", scalarOp("scalar.add", v, c64(a.t, span), span), a.dyn, span);
    const tail = loop(j, c64(0, span), c64(a.t, span), 1, [mkIf({ cond: scalarOp("scalar.lt", row, a.dyn, span), then: next(row, 1, null), else: [], results: [], span })], span);
    return [loop(v, c64(0, span), a.dyn, a.t, [mkIf({ cond: fits, then: next(v, a.t, null), else: [tail], results: [], span })], span)];
  }
  if (a.oneLoop) {
    // static extent d = full whole tiles + a partial tile of rem: one loop, the last trip partial
    const v = mkVar(`${name}${ax}`, INDEX, span);
    const whole = scalarOp("scalar.le", scalarOp("scalar.add", v, c64(a.t, span), span), c64(a.d, span), span);
    const last = a.exactLast ? next(v, a.rem, null) : next(v, a.t, a.rem);
    return [loop(v, c64(0, span), c64((a.full + 1) * a.t, span), a.t, [mkIf({ cond: whole, then: next(v, a.t, null), else: last, results: [], span })], span)];
  }
  const out: Stmt[] = [];
  if (a.full === 1) out.push(...next(c64(0, span), a.t, null));
  else if (a.full > 1) { const v = mkVar(`${name}${ax}`, INDEX, span); out.push(loop(v, c64(0, span), c64(a.full * a.t, span), a.t, next(v, a.t, null), span)); }
  if (a.rem > 0) out.push(...next(c64(a.full * a.t, span), a.t, a.rem));
  return out;
}

const scalarOp = (op: string, a: Expr, b: Expr, span: Span): Expr => {
  const args = [a, b];
  return mkCall(op, args, {}, inferCall(getOp(op), args, {}, span), span);
};

/**
 * The extents of a tensor-level value's shape: numbers, or for a dynamic dimension its
 * run-time extent: `pl.dim` of the first of `sources` (tensor variables, leaves) that has it,
 * or a slice leaf's extent expression. A dimension spelled from a slice's extent (`"{n}"`,
 * ops/shape.ts extentDim) must be the same expression in every slice that has it: two values
 * spelled alike (a rebound `n`) are different extents, an E_DYNAMIC.
 */
function extents(shape: readonly Dim[], sources: readonly (Var | Leaf)[], what: string, span: Span): (number | Expr)[] {
  return shape.map((d) => {
    if (typeof d === "number") return d;
    let found: number | Expr | undefined;
    for (const s of sources) {
      const e = extentIn(s, d, span);
      if (e === undefined) continue;
      if (found === undefined) { found = e; continue; }
      if (d.startsWith("{") && (typeof found === "number" ? found !== e : typeof e === "number" || !sameExpr(found, e))) {
        throw new TsptoCompileError("E_DYNAMIC", `${what}: two slices have extents spelled ${d} that are different values`, span,
          "give each run-time extent its own name (e.g. const n1 = ...; const n2 = ...), or slice both with the same variable");
      }
    }
    if (found !== undefined) {
      // a window of a static axis bounds the extent (checkWindow fails the launch otherwise)
      if (typeof found !== "number") {
        for (const s of sources) {
          if ("kind" in s || !s.ext) continue;
          const ax = ((s.key as Call).type as TensorType).shape.indexOf(d), bound = ax >= 0 ? (s.tensor.type as TensorType).shape[ax] : undefined;
          if (typeof bound === "number") capExtent(found, bound);
        }
      }
      return found;
    }
    throw new TsptoCompileError("E_DYNAMIC", `${what}: dynamic dimension ${JSON.stringify(d)} is not a dimension of any tensor it reads or writes`, span);
  });
}
/** The extent of dimension `d` in a source: a slice leaf's own extent, or `pl.dim` of a tensor variable that has it. */
function extentIn(s: Var | Leaf, d: string, span: Span): number | Expr | undefined {
  if ("kind" in s || !s.ext) {
    const v = "kind" in s ? s : s.tensor;
    const ax = (v.type as TensorType).shape.indexOf(d);
    return ax >= 0 ? call("tensor.dim", [v], { axis: ax }, span) : undefined;
  }
  const ax = ((s.key as Call).type as TensorType).shape.indexOf(d);
  return ax < 0 ? extentIn(s.tensor, d, span) : s.ext[ax];
}

/**
 * Static bounds of run-time extents: a slice's extent is at most its tensor's static extent on
 * that axis (checkWindow fails the launch otherwise), a written value's at most the target's.
 * Tiles along such an axis are no larger (a larger tile fails the static window checks).
 */
const CAPS = new WeakMap<Expr, number>();
const capExtent = (e: Expr, bound: number) => CAPS.set(e, Math.min(bound, CAPS.get(e) ?? Infinity));
const capped = (e: Expr, t: number) => Math.max(1, Math.min(t, CAPS.get(e) ?? Infinity));
/** A tile extent for a dynamic axis: the limit, a multiple of 8 when it is at least 16. */
const dynTile = (limit: number): number => { const lim = Math.max(1, Math.floor(limit)); return lim >= 16 ? lim - (lim % 8) : lim; };
const axisFor = (e: number | Expr, limit: number): Axis => (typeof e === "number" ? axisOf(e, tileExtent(e, limit)) : { dyn: e, t: capped(e, dynTile(limit)) });

const staticShape = (t: TensorType, what: string, span: Span): number[] => {
  if (!t.shape.every((d): d is number => typeof d === "number")) {
    throw new TsptoCompileError("E_DYNAMIC", `${what} with dynamic dimensions is not supported yet`, span, "give the tensor a static shape");
  }
  return t.shape as number[];
};
const call = (op: string, args: readonly Expr[], attrs: Attrs, span: Span): Call => mkCall(op, args, attrs, inferCall(getOp(op), args, attrs, span), span);
const list = (xs: readonly Expr[], span: Span) => mkList(xs, span);
const zero = (span: Span) => mkConst(0, "int64", span);

/** Tiles an expression makes besides its leaves' and reductions': each iota, and each gather's index tile and rows. */
function madeTiles(e: Expr, seen = new Set<Expr>()): number {
  if (e.kind !== "call" || seen.has(e)) return 0;
  seen.add(e);
  const own = e.op === "tensor.iota" ? 1 : e.op === "tensor.gather" ? 2 : 0;
  return own + e.args.reduce((n, a) => n + madeTiles(a, seen), 0);
}

/** Elements per tile when `nTiles` tiles of the widest of `dtypes` share half the scratch. */
function tileBudget(ctx: PassContext, nTiles: number, dtypes: readonly TensorType["dtype"][], what: string, span: Span, fname: string): number {
  const elem = Math.max(...dtypes.map((d) => Math.max(ctx.minTileElemBytes ?? 1, tileElemBytes(d))));
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
function tileExpr(value: Expr, ls: readonly Leaf[], space: readonly Dim[], tile: readonly number[], offsets: readonly Expr[], valid: number[] | null, span: Span, inner: Stmt[],
  given: ReadonlyMap<Expr, Expr> = new Map(), vectors: ReadonlyMap<Expr, Var> = new Map()): Expr {
  // a tile of whole rows (the last axis whole, from 0): row reductions of the space's rows can be
  // computed on it; a tile of whole columns (the first axis whole, from 0): column reductions.
  // `vectors`: reductions the caller computed for this tile's rows ([t, 1]) or columns ([1, t])
  // over the whole reduced axis (lowerBlocked: a run-time or long reduced axis, in blocks); with
  // them a tile of part of the rows is lowered as one of whole rows.
  const wholeOn = (ax: number) => tile.length === 2 && typeof space[ax] === "number" && tile[ax] === space[ax] && offsets[ax]?.kind === "const" && Number((offsets[ax] as { value: unknown }).value) === 0;
  const hasVec = (axis: "row" | "col") => [...vectors.keys()].some((k) => k.kind === "call" && reductionAxis(k.op) === axis);
  const whole: Whole = tile.length === 2 ? { rows: space[0], cols: space[1], row: wholeOn(1) || hasVec("row"), col: wholeOn(0) || hasVec("col") } : null;
  checkElementwise(value, whole, vectors.size ? new Map([...given, ...vectors]) : given);
  // only an expression with reductions in it is lowered the whole-row / whole-column way below
  // (vectors kept narrow, rowExpand / colExpand ops, shared nodes computed once); any other
  // stays one tree of elementwise tile ops with stretched leaves
  const reducing = whole !== null && (reductions(value, "row") > 0 || reductions(value, "col") > 0);
  // `given`: subexpressions whose tile the caller computed (a matmul's result under its epilogue)
  const tileOf = new Map<Expr, Expr>(given);
  // stretched [t, 1] / [1, C] values (whole-row expressions) -> their unstretched tiles (see below)
  const rowVec = new Map<Expr, Expr>(), colVec = new Map<Expr, Expr>();
  for (const l of ls) {
    if (l.read === "gather") continue;
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
    const t = bc.some(Boolean) ? call("tile.broadcastTo", [tv], valid ? { shape: [...tile], validShape: valid } : { shape: [...tile] }, span) : tv;
    if (reducing && bc[0] !== bc[1]) (bc[0] ? colVec : rowVec).set(t, tv);
    tileOf.set(l.key, t);
  }
  // Row reductions inside the expression (`x - rowMax(x)`, on tiles of whole rows): one [t, 1]
  // tile per reduction node (a local used twice is one node), computed from the same whole-row
  // tile of its operand; [rows, 1] values made of reductions, [M, 1] leaves and scalars
  // (`rowSum(x) * (1 / C)`) stay [t, 1] tiles (toVec). A binary op with such a value as its
  // vector becomes the tile's rowExpand op (`rowExpandSub(x, mean)`, as written on tiles), and
  // one with a [1, C] leaf (gamma, beta) the colExpand op; any other use stretches it like a
  // leaf. A node the expression uses more than once (a local such as e = exp(x - max), read by
  // rowSum(e) and by the division) gets a tile of its own, computed once. (FuseRows then runs
  // such a block row by row, as the same computation written on tiles.)
  const memo = new Map<Expr, Expr>();
  const uses = new Map<Expr, number>();
  const count = (e: Expr): void => {
    if (e.kind !== "call" || !isTensorOp(e)) return;
    const n = (uses.get(e) ?? 0) + 1;
    uses.set(e, n);
    if (n === 1) e.args.forEach(count);
  };
  if (reducing) count(value);
  const stretch = (rv: Expr, axis: "row" | "col", span2: Span): Expr => {
    const r = call("tile.broadcastTo", [rv], valid ? { shape: [...tile], validShape: valid } : { shape: [...tile] }, span2);
    (axis === "row" ? rowVec : colVec).set(r, rv);
    return r;
  };
  /** A reduction of the current tile's rows ([t, 1]) or columns ([1, t]): a tile of its own (not fusable). */
  const reduction = (e: Call): Var => {
    const pre = vectors.get(e);
    if (pre) return pre;
    const name = e.op.slice("tensor.".length);
    const xt = toTile(e.args[0]);
    const xtt = exprType(xt) as TileType;
    const scratch = name in REDUCTIONS ? [call("tile.create", [], { shape: [...xtt.shape], dtype: xtt.dtype }, e.span)] : [];
    const red = call(`tile.${name}`, [xt, ...scratch], {}, e.span);
    const rv = mkVar(name, red.type, e.span);
    inner.push(mkAssign([rv], red, e.span));
    return rv;
  };
  // A [rows, 1] value inside a whole-row expression (a row reduction, a [M, 1] leaf, or
  // elementwise ops of those and scalars: `rowSum(x) * (1 / C)`) is computed on [t, 1] tiles,
  // and a [1, cols] value inside a whole-column expression on [1, t] tiles; null: not such a value.
  const vecMemo = new Map<Expr, Expr>();
  const toVec = (e: Expr, axis: "row" | "col"): Expr | null => {
    const t = e.kind === "const" ? null : e.type;
    if (!t || t.kind !== "tensor") return e;  // a scalar operand
    const [keep, gone] = axis === "row" ? [0, 1] : [1, 0];  // the axis the value keeps, the one it was reduced along
    if (!whole?.[axis] || t.shape.length !== 2 || t.shape[gone] !== 1 || t.shape[keep] !== (keep === 0 ? whole.rows : whole.cols) || tile[gone] === 1) return null;
    const done = vecMemo.get(e);
    if (done) return done;
    let r: Expr | null = null;
    for (const [k, v] of tileOf) {
      if (k === e || (k.kind === "var" && e.kind === "var" && k.id === e.id)) r = v.kind === "call" && v.op === "tile.broadcastTo" ? v.args[0] : null;
    }
    if (r === null && e.kind === "call" && isTensorOp(e)) {
      if (reductionAxis(e.op) === axis) r = reduction(e);
      else if (isElementwiseTensorOp(e.op) && !getOp(e.op).tileExpr) {
        const args = e.args.map((a) => toVec(a, axis));
        if (args.every((x) => x !== null)) r = call(tileOpOf(getOp(e.op)), args as Expr[], e.attrs, e.span);
        // a [t, 1] value used more than once: a tile of its own, computed once
        if (r && (uses.get(e) ?? 0) > 1) {
          const rv = mkVar("v", exprType(r), e.span);
          inner.push(mkAssign([rv], r, e.span));
          r = rv;
        }
      }
    }
    if (r) vecMemo.set(e, r);
    return r;
  };
  const toTile = (e: Expr): Expr => {
    for (const [k, v] of tileOf) if (k === e || (k.kind === "var" && e.kind === "var" && k.id === e.id)) return v;
    if (e.kind !== "call" || !isTensorOp(e)) return e;
    const done = memo.get(e);
    if (done) return done;
    let r: Expr;
    const et = e.type as TensorType;
    const axis = et.shape.length === 2 && et.shape[1] === 1 && tile[1] !== 1 ? "row" : et.shape.length === 2 && et.shape[0] === 1 && tile[0] !== 1 ? "col" : null;
    const vec = axis && reducing ? toVec(e, axis) : null;
    if (vec && axis) {
      r = stretch(vec, axis, e.span);
    } else if (e.op === "tensor.gather") {
      r = gatherTile(e, ls, space, tile, offsets, valid, inner);
    } else if (reductionAxis(e.op)) {
      r = reduction(e);  // a [t, 1] / [1, t] output space: the reduction's own tile
    } else {
      const args = e.args.map(toTile);
      const def = getOp(e.op);
      const op = def.tileExpr ? null : tileOpOf(def);
      const suffix = op ? EXPAND_SUFFIX.get(op.slice("tile.".length)) : undefined;
      const vecAt = (m: Map<Expr, Expr>) => (suffix && args.length === 2 && !rowVec.has(args[0]) && !colVec.has(args[0]) && m.has(args[1]) ? 1
        : suffix && args.length === 2 && COMMUTES.has(suffix) && !rowVec.has(args[1]) && !colVec.has(args[1]) && m.has(args[0]) ? 0 : -1);
      const atRow = vecAt(rowVec), atCol = atRow < 0 ? vecAt(colVec) : -1;
      if (atRow >= 0) r = call(`tile.rowExpand${suffix}`, [args[1 - atRow], rowVec.get(args[atRow])!], {}, e.span);
      else if (atCol >= 0) r = call(`tile.colExpand${suffix}`, [args[1 - atCol], colVec.get(args[atCol])!], {}, e.span);
      else if (def.tileExpr) r = def.tileExpr(args, e.attrs, (o, xs, attrs = {}) => call(o, xs, attrs, e.span), { shape: tile, validShape: valid, offsets });
      else r = call(op!, args, e.attrs, e.span);
      if (reducing && (uses.get(e) ?? 0) > 1) {
        const tv = mkVar("t", exprType(r), e.span);
        inner.push(mkAssign([tv], r, e.span));
        r = tv;
      }
    }
    if (reducing) memo.set(e, r);  // (elsewhere a node used twice is rebuilt: the expression stays a tree)
    return r;
  };
  return toTile(value);
}

/**
 * The tile at `offsets` of a tensor-level gather(table, indices, axis): the indices' window
 * along the gathered axis loaded as an index tile, then gatherLoad reads the rows (columns) of
 * the table it picks, the window [offset, offset + extent) along the other axis. A result of
 * extent 1 where the space has more (a broadcast operand) is read once there and stretched.
 */
function gatherTile(e: Call, ls: readonly Leaf[], space: readonly Dim[], tile: readonly number[], offsets: readonly Expr[], valid: readonly number[] | null, inner: Stmt[]): Expr {
  const span = e.span;
  const axis = Number(e.attrs.axis ?? 0), other = 1 - axis;
  const [table, idx] = e.args;
  const rt = e.type as TensorType;
  const il = ls.find((l) => l.key === idx || (idx.kind === "var" && l.key.kind === "var" && l.key.id === idx.id));
  if (table.kind !== "var" || !il) {
    throw new TsptoCompileError("E_TENSOR_FORM", "pl.gather on tensors takes a tensor variable as the table and a tensor (or a pl.slice window of one) as the indices, not expressions", span,
      "assign the indices to a tensor of their own first (a pl.createTensor buffer)");
  }
  const bc = rt.shape.map((d, ax) => d === 1 && space[ax] !== 1);
  const shape = tile.map((t, ax) => (bc[ax] ? 1 : t));
  const v = valid ? valid.map((x, ax) => (bc[ax] ? 1 : x)) : null;
  const offs = offsets.map((o, ax) => (bc[ax] ? zero(span) : o));
  // the index window: [n] along the gathered axis, in the index tensor's own orientation
  const it = (il.key.kind === "call" ? il.key.type : il.tensor.type) as TensorType;
  const n = shape[axis], vn = v ? v[axis] : n;
  const long = it.shape.findIndex((d) => d !== 1);
  const lax = long < 0 ? it.shape.length - 1 : long;
  const ishape = it.shape.map((_, ax) => (ax === lax ? n : 1));
  const ivalid = vn < n ? it.shape.map((_, ax) => (ax === lax ? vn : 1)) : null;
  const ioffs = it.shape.map((_, ax) => {
    const own = ax === lax ? offs[axis] : zero(span);
    return il.base ? add(il.base[ax], own, span) : own;
  });
  const ld = call("tile.load", [il.tensor, list(ioffs, span)], ivalid ? { shape: ishape, validShape: ivalid } : { shape: ishape }, span);
  const iv = mkVar(`${il.tensor.name}_idx`, ld.type, span);
  inner.push(mkAssign([iv], ld, span));
  const g = call("tile.gatherLoad", [table, iv, offs[other]], { shape: [...shape], axis, ...(v ? { validShape: [...v] } : {}) }, span);
  const gv = mkVar(`${table.name}_rows`, g.type, span);
  inner.push(mkAssign([gv], g, span));
  return bc.some(Boolean) ? call("tile.broadcastTo", [gv], valid ? { shape: [...tile], validShape: [...valid] } : { shape: [...tile] }, span) : gv;
}

/** tile binary op -> the suffix of its rowExpand form (rowExpandSub is sub with a [M, 1] vector). */
const EXPAND_SUFFIX = new Map(Object.entries(EXPAND_OPS).map(([suffix, bin]) => [bin as string, suffix]));
const COMMUTES = new Set(["Add", "Mul", "Max", "Min"]);

/**
 * Reductions that may stand inside an elementwise expression: along rows (rowSum ..., on tiles of
 * whole rows) or columns (colSum ..., on tiles of whole columns); null: any other op.
 */
const reductionAxis = (op: string): "row" | "col" | null => {
  const n = op.startsWith("tensor.") ? op.slice("tensor.".length) : "";
  return REDUCTIONS[n]?.axis ?? PROD_REDUCTIONS[n] ?? null;
};
/** Whether a 2-D tile covers whole rows / whole columns of its [rows, cols] space (null: not 2-D). */
type Whole = { rows: Dim; cols: Dim; row: boolean; col: boolean } | null;
/** How many reduction nodes along `axis` an expression holds (each once, however often it is used). */
function reductions(e: Expr, axis: "row" | "col", seen = new Set<Expr>()): number {
  if (e.kind !== "call" || seen.has(e)) return 0;
  seen.add(e);
  return (isTensorOp(e) && reductionAxis(e.op) === axis ? 1 : 0) + e.args.reduce((n, a) => n + reductions(a, axis, seen), 0);
}

/**
 * Every tensor-level op of an elementwise expression must be elementwise (checked before its
 * leaves are loaded), except a row reduction of a tensor of the expression's own [rows, cols]
 * when the tiles hold whole rows, or a column reduction of one when they hold whole columns.
 */
function checkElementwise(e: Expr, whole: Whole, given: ReadonlyMap<Expr, Expr> = new Map()): void {
  if (e.kind !== "call" || !isTensorOp(e) || given.has(e)) return;
  const axis = reductionAxis(e.op);
  if (axis) {
    const xt = exprType(e.args[0]) as TensorType;
    if (whole?.[axis] && xt.shape.length === 2 && xt.shape[0] === whole.rows && xt.shape[1] === whole.cols) { checkElementwise(e.args[0], whole, given); return; }
    const pl = getOp(e.op).pl ?? e.op;
    const [what, lines] = axis === "row" ? ["row", "rows"] : ["column", "columns"];
    throw new TsptoCompileError("E_TENSOR_FORM", whole?.[axis]
      ? `pl.${pl}: a ${what} reduction inside an expression must reduce a tensor of the expression's own shape [${whole.rows}, ${whole.cols}], got ${typeStr(xt)}`
      : `pl.${pl}: a ${what} reduction inside an expression needs tiles of whole ${lines} (a pl.assign / pl.assemble of a 2-D value with a static ${axis === "row" ? "row length" : "column height"}, or the operand of a ${what} reduction)`, e.span,
    "assign the reduction to a tensor of its own first (a pl.Out parameter or a pl.createTensor buffer), then use that tensor");
  }
  if (!isElementwiseTensorOp(e.op)) {
    const pl = getOp(e.op).pl ?? e.op;
    const kind = /^(matmul|matmulAcc|matmulBias|batchMatmul)$/.test(pl) ? "matmul" : REDUCE_NAMES.has(pl) ? "reduction" : pl;
    throw new TsptoCompileError("E_TENSOR_FORM", `pl.${pl}: a tensor-level ${kind} must be the whole value of pl.assign / pl.assemble, not part of an elementwise expression`, e.span,
      "assign it to a tensor of its own first (a pl.Out parameter or a pl.createTensor buffer), then use that tensor");
  }
  e.args.forEach((a) => checkElementwise(a, whole, given));
}

const MATMULS = new Set(["tensor.matmul", "tensor.matmulAcc", "tensor.matmulBias", "tensor.matmulQuant"]);
/**
 * The one 2-D matmul below the root of an elementwise expression (`relu(matmul(a, b) + bias)`,
 * `matmul(q, k) * scale`): its epilogue is applied to each output tile before the store. Null
 * when there is none, more than one, or other ops an epilogue cannot hold (reductions, shapes).
 */
function epilogueMatmul(value: Expr): Call | null {
  if (value.kind !== "call" || !isTensorOp(value) || MATMULS.has(value.op)) return null;
  let found: Call | null = null, ok = true;
  const visit = (e: Expr): void => {
    if (!ok || e.kind !== "call" || !isTensorOp(e)) return;
    if (MATMULS.has(e.op)) { if (found && found !== e) ok = false; found = e; return; }
    if (!isElementwiseTensorOp(e.op)) { ok = false; return; }
    e.args.forEach(visit);
  };
  visit(value);
  return ok ? found : null;
}
/** The leaves of an expression outside the subexpression `skip`. */
function leavesOutside(e: Expr, skip: Expr, out: Leaf[] = []): Leaf[] {
  if (e === skip) return out;
  if (e.kind === "call" && !(e.op === "tensor.slice" && e.args[0].kind === "var") && e.op !== "tensor.gather") { e.args.forEach((a) => leavesOutside(a, skip, out)); return out; }
  return leaves(e, out);
}

function lowerWrite(out: Var, outOffsets: Expr | null, value: Expr, ctx: PassContext, span: Span, fname: string, what = `pl.${outOffsets ? "assemble" : "assign"}`): Stmt[] {
  const ot = out.type as TensorType;
  const vt = value.kind === "const" ? null : value.type;
  if (!vt || vt.kind !== "tensor") throw new TsptoCompileError("E_ASSIGN_VALUE", `${what} to '${out.name}' needs a tensor value`, span);
  const shape = vt.shape;
  const base = outOffsets ? (outOffsets.kind === "list" ? outOffsets.items : null) : shape.map(() => zero(span));
  if (!base) throw new TsptoCompileError("E_CODEGEN", "internal: assemble offsets must be a list", span);
  const store = (result: Expr, offsets: readonly Expr[]): Stmt => {
    const args = [result, list(offsets.map((o, ax) => add(base[ax], o, span)), span), out];
    return mkEval(call("tile.store", args, {}, span), span);
  };
  if (value.kind === "call" && value.op.startsWith("tensor.") && REDUCE_NAMES.has(value.op.slice(7))) return lowerReduce(value, store, ctx, span, fname);
  if (value.kind === "call" && (value.op === "tensor.matmul" || value.op === "tensor.matmulAcc" || value.op === "tensor.matmulBias" || value.op === "tensor.batchMatmul" || value.op === "tensor.matmulQuant")) return lowerMatmul(value, store, ctx, span, fname);
  const mm = epilogueMatmul(value);
  if (mm && (exprType(mm) as TensorType).shape.length === 2 && shape.length === 2) {
    // the matmul's output tiles, each finished by the rest of the expression before its store
    const rest = leavesOutside(value, mm);
    return lowerMatmul(mm, store, ctx, mm.span, fname, {
      tiles: rest.length + madeTiles(value),
      apply: (result, offsets, tile, valid, inner) => tileExpr(value, rest, shape, tile, offsets, valid, span, inner, new Map([[mm as Expr, result]])),
    });
  }
  if (value.kind === "call" && value.op === "tensor.reshape") return lowerReshape(value, store, ctx, span, fname);
  if (value.kind === "call" && value.op === "tensor.concat") {
    // each operand written into its columns of the result: [..., 0 : Na] and [..., Na : Na + Nb]
    const [a, b] = value.args;
    const last = shape.length - 1, na = (exprType(a) as TensorType).shape[last] as number;
    const bBase = base.map((o, ax) => (ax === last ? add(o, mkConst(na, "int64", span), span) : o));
    return [...lowerWrite(out, list(base, span), a, ctx, span, fname, what), ...lowerWrite(out, list(bBase, span), b, ctx, span, fname, what)];
  }
  const ls = leaves(value);
  // a dynamic extent is read (pl.dim) from the written tensor or a tensor read
  const ext = extents(shape, [out, ...ls], `${what} on tensor '${out.name}'`, span);
  ext.forEach((e, ax) => { const d = ot.shape[ax]; if (typeof e !== "number" && typeof d === "number") capExtent(e, d); });
  if (value.kind === "call" && value.op === "tensor.transpose") return lowerTranspose(value, ext, store, ctx, span, fname);

  const rank = shape.length;
  const dtypes = [ot.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)];
  const nRed = reductions(value, "row"), nCol = reductions(value, "col");
  let axes: Axis[];
  if (nRed > 0 || nCol > 0) {
    // reductions inside the value (softmax, layer norm written on tensors): tiles of whole rows
    // for row reductions, of whole columns for column reductions (both: the whole value in one
    // tile); each reduction adds its result and a scratch tile of its operand's shape
    const n = nRed + nCol;
    /** The static extent of axis ax (the one the reductions of `kind` run along). */
    const need = (ax: number, kind: string, length: string): number => {
      const d = shape[ax];
      if (rank !== 2 || typeof d !== "number") {
        throw new TsptoCompileError("E_TENSOR_FORM", `${what} to '${out.name}': ${kind} reductions inside the value need a 2-D value with a static ${length}, got ${typeStr(vt)}`, span,
          "assign each reduction to a tensor of its own first (a pl.Out parameter or a pl.createTensor buffer), then use that tensor");
      }
      return d;
    };
    const budget = tileBudget(ctx, ls.length + madeTiles(value) + 2 * n + 1, dtypes, `over ${ls.length} tensors and ${n} reduction(s)`, span, fname);
    // reductions of one kind along an axis of run-time extent, or longer than a tile holds: in blocks
    if (rank === 2 && (nRed === 0) !== (nCol === 0)) {
      const along = shape[nRed > 0 ? 1 : 0];
      if (typeof along !== "number" || along > budget) return lowerBlocked(value, ext, nRed > 0, budget, store, span);
    }
    const cols = nRed > 0 ? need(1, "row", "row length") : 1, rows = nCol > 0 ? need(0, "column", "column height") : 1;
    if (cols * rows > budget) {
      const [kind, whole] = nCol === 0 ? ["row", `whole rows of ${cols} elements`] : nRed === 0 ? ["column", `whole columns of ${rows} elements`] : ["row and column", `the whole [${rows}, ${cols}] value`];
      throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': ${what} to '${out.name}' computes ${n} ${kind} reduction(s) on ${whole}, more than a tile holds here (${budget})`, span,
        "assign each reduction to a tensor of its own first (a pl.createTensor buffer), or reduce slices of the tensor (pl.slice) and combine them");
    }
    axes = nCol === 0 ? [axisFor(ext[0], budget / cols), axisOf(cols, cols)]
      : nRed === 0 ? [axisOf(rows, rows), axisFor(ext[1], budget / rows)]
        : [axisOf(rows, rows), axisOf(cols, cols)];
  } else {
    const budget = tileBudget(ctx, ls.length + madeTiles(value), dtypes, `over ${ls.length} tensors`, span, fname);
    axes = ext.map((e) => axisFor(e, 1));
    axes[rank - 1] = axisFor(ext[rank - 1], budget);
    if (rank >= 2) axes[rank - 2] = axisFor(ext[rank - 2], budget / axes[rank - 1].t);
  }
  return tileLoops(axes, span, (offsets, valid0, tile0) => {
    const inner: Stmt[] = [];
    // whole-row tiles: the last rows of a static extent are a tile of their own shape ([rem, C],
    // no valid region); a tile outside a loop (one whole tile, or those last rows) goes into a
    // loop of one trip, so that FuseRows runs each such block row by row (it fuses a kernel body
    // or a loop body whose tiles all have one row count)
    const peeled = nRed > 0 && valid0 !== null;
    const alone = nRed > 0 && offsets[0].kind === "const";
    const tile = peeled ? valid0 : tile0, valid = peeled ? null : valid0;
    const result = tileExpr(value, ls, shape, tile, offsets, valid, span, inner);
    if (result.kind !== "var" && (result.kind !== "call" || result.type.kind !== "tile")) {
      throw new TsptoCompileError("E_ASSIGN_VALUE", `${what} to '${out.name}' needs a tensor value`, span);
    }
    inner.push(store(result, offsets));
    return alone ? [loop(mkVar("rows", INDEX, span), c64(0, span), c64(1, span), 1, inner, span)] : inner;
  });
}

/** A tensor-level reduction: tiles hold the whole reduced axis; the other axis is tiled (partial tiles at the end). */
function lowerReduce(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
  const name = value.op.slice("tensor.".length);
  const row = name.startsWith("row");
  const x = value.args[0];
  const xt = exprType(x) as TensorType;
  const ls = leaves(x);
  const whole = xt.shape[row ? 1 : 0];
  const [other, wholeE] = extents([xt.shape[row ? 0 : 1], whole], ls, `pl.${name}`, span);
  const budget = tileBudget(ctx, ls.length + madeTiles(x) + 1 + 2 * (reductions(x, "row") + reductions(x, "col")), [xt.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)], `pl.${name}`, span, fname);
  if (typeof whole !== "number") return lowerReduceDynamic(value, store, wholeE as Expr, other, budget, span);
  // a reduced axis longer than a tile holds: in blocks, as a dynamic one (not the arg-reductions: their index is found in one tile)
  if (whole > budget && !(name in ARG_REDUCTIONS)) return lowerReduceDynamic(value, store, c64(whole, span), other, budget, span);
  if (whole > budget) {
    throw new TsptoCompileError("E_SCRATCH", `kernel '${fname}': pl.${name} reduces ${whole} elements per ${row ? "row" : "column"}, more than a tile holds (${budget})`, span,
      `reduce slices of the tensor (pl.slice) and combine the partial results`);
  }
  return tileLoops([axisFor(other, budget / whole)], span, ([o], valid, [t]) => {
    const inner: Stmt[] = [];
    const tile = row ? [t, whole] : [whole, t];
    const full = row ? [o, zero(span)] : [zero(span), o];
    const v = valid ? (row ? [valid[0], whole] : [whole, valid[0]]) : null;
    const tx = tileExpr(x, ls, xt.shape, tile, full, v, span, inner);
    const scratch = name in REDUCTIONS && row ? [call("tile.create", [], { shape: tile, dtype: xt.dtype }, span)] : [];
    inner.push(store(call(`tile.${name}`, [tx, ...scratch], {}, span), full));
    return inner;
  });
}

/**
 * Appends to `out` the loop `for k in range(start, stop, step): acc = next(k, acc)` carrying
 * acc from `acc0` (`next` may add statements to the body before its value); returns the
 * carried result after the loop.
 */
function carry(out: Stmt[], acc0: Var, start: Expr, stop: Expr, step: number, next: (k: Var, acc: Var, body: Stmt[]) => Expr, span: Span): Var {
  const kv = mkVar("k", INDEX, span);
  const accIn = mkVar("acc", acc0.type, span), accOut = mkVar("acc", acc0.type, span);
  const body: Stmt[] = [];
  const value = next(kv, accIn, body);
  const accNext = mkVar("acc", value.kind === "const" ? acc0.type : value.type, span);
  body.push(mkAssign([accNext], value, span), mkYield([accNext], span));
  out.push(mkFor({ loopVar: kv, start, stop, step: c64(step, span), iterArgs: [accIn], inits: [acc0], body, results: [accOut], span }));
  return accOut;
}

/** How the partial results of a reduction along a dynamic axis combine. */
const COMBINE: Record<string, string> = { sum: "tile.add", max: "tile.maximum", min: "tile.minimum", prod: "tile.mul" };

/**
 * A tensor-level reduction along a dynamic axis (e.g. softmax over a run-time sequence length):
 * per tile of the other axis, the reduction of the first element along the reduced axis, then
 * of whole tiles of the reduced axis, then of single elements, each combined into the carried
 * result (add / maximum / minimum / mul). max and min equal the one-pass reduction exactly; sums
 * and products add the partial results in this order.
 */
function lowerReduceDynamic(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, whole: Expr, other: number | Expr, budget: number, span: Span): Stmt[] {
  const row = value.op.startsWith("tensor.row");
  const tc = capped(whole, dynTile(Math.min(512, budget)));
  return tileLoops([axisFor(other, budget / tc)], span, ([o], valid, [t]) => {
    const inner: Stmt[] = [];
    const vectors = reduceBlocks([...reductionNodes(value.args[0]), value], o, t, valid ? valid[0] : null, whole, tc, row, inner, span);
    inner.push(store(vectors.get(value)!, row ? [o, zero(span)] : [zero(span), o]));
    return inner;
  });
}

/** The tensor-level reductions in an expression (each node once), innermost first. */
function reductionNodes(e: Expr, out: Call[] = [], seen = new Set<Expr>()): Call[] {
  if (e.kind !== "call" || seen.has(e)) return out;
  seen.add(e);
  e.args.forEach((a) => reductionNodes(a, out, seen));
  if (isTensorOp(e) && reductionAxis(e.op)) out.push(e);
  return out;
}

/** The leaves of an expression outside the subexpressions in `skip` (reductions computed already). */
function leavesSkipping(e: Expr, skip: ReadonlyMap<Expr, unknown>, out: Leaf[] = []): Leaf[] {
  if (skip.has(e)) return out;
  if (e.kind === "call" && e.op !== "tensor.slice" && e.op !== "tensor.gather") { e.args.forEach((a) => leavesSkipping(a, skip, out)); return out; }
  return leaves(e, out);
}

/**
 * For one band of the other axis (offset o, extent t, valid extent v or null), the reductions
 * `nodes` (innermost first, all along rows or all along columns) over the whole reduced axis of
 * run-time extent `whole`, in blocks: the reduction of the first element, then of whole [t, tc]
 * (row) / [tc, t] (column) tiles, then of single elements, each combined into a carried [t, 1] /
 * [1, t] result (add / maximum / minimum / mul: max and min exactly the one-pass value, sums and
 * products in this order). A reduction's operand may hold the reductions before it (softmax's
 * rowSum(exp(x - rowMax(x)))): their results broadcast into its tiles. Returns the results.
 */
function reduceBlocks(nodes: readonly Call[], o: Expr, t: number, v: number | null, whole: Expr, tc: number, row: boolean, inner: Stmt[], span: Span): Map<Expr, Var> {
  const vectors = new Map<Expr, Var>();
  for (const red of nodes) {
    const name = red.op.slice("tensor.".length);
    const kind = name in REDUCTIONS ? REDUCTIONS[name].kind : name in PROD_REDUCTIONS ? "prod" : null;
    const x = red.args[0];
    const xt = exprType(x) as TensorType;
    if (!kind) {
      throw new TsptoCompileError("E_DYNAMIC", `pl.${name} along a dynamic axis (${typeStr(xt)}) is not supported: the position of an extreme is found in one tile`, red.span,
        "make the reduced axis static and at most a tile long, or reduce tiles of it yourself (pl.range over pl.dim) and keep the best index");
    }
    const ls = leavesSkipping(x, vectors);
    const part = (off: Expr, w: number, body: Stmt[]): Var => {
      const tile = row ? [t, w] : [w, t];
      const vv = v !== null ? (row ? [v, w] : [w, v]) : null;
      const tx = tileExpr(x, ls, xt.shape, tile, row ? [o, off] : [off, o], vv, red.span, body, new Map(), vectors);
      const scratch = name in REDUCTIONS && row ? [call("tile.create", [], { shape: tile, dtype: xt.dtype }, red.span)] : [];
      const r = call(`tile.${name}`, [tx, ...scratch], {}, red.span);
      const rv = mkVar("part", r.type, red.span);
      body.push(mkAssign([rv], r, red.span));
      return rv;
    };
    let acc = part(zero(span), 1, inner); // the first element: every extent is >= 1
    const one = c64(1, span);
    const rest = scalarOp("scalar.sub", whole, one, span);
    const wholeStop = scalarOp("scalar.add", one, scalarOp("scalar.sub", rest, scalarOp("scalar.mod", rest, c64(tc, span), span), span), span);
    for (const [start, stop, w] of [[one, wholeStop, tc], [wholeStop, whole, 1]] as const) {
      acc = carry(inner, acc, start, stop, w, (kv, accIn, body) => call(COMBINE[kind], [accIn, part(kv, w, body)], {}, red.span), red.span);
    }
    vectors.set(red, acc);
  }
  return vectors;
}

/**
 * An elementwise value of a 2-D space whose reductions (all along rows, or all along columns)
 * run along an axis of run-time extent, or one longer than a tile holds (softmax over the
 * scores of a dynamic-length KV cache): per band of the other axis, each reduction over the
 * whole reduced axis in blocks (reduceBlocks), then the value tile by tile along it with those
 * results broadcast in, stored as it goes. The operands are read once per reduction and once
 * for the value (softmax: three passes over x).
 */
function lowerBlocked(value: Expr, ext: readonly (number | Expr)[], row: boolean, budget: number, store: (r: Expr, offsets: readonly Expr[]) => Stmt, span: Span): Stmt[] {
  const shape = (value.kind === "const" ? [] : (value.type as TensorType).shape);
  const along = ext[row ? 1 : 0], other = ext[row ? 0 : 1];
  const whole = typeof along === "number" ? c64(along, span) : along;
  const tc = typeof along === "number" ? tileExtent(along, Math.min(512, budget)) : capped(along, dynTile(Math.min(512, budget)));
  const nodes = reductionNodes(value);
  return tileLoops([axisFor(other, budget / tc)], span, ([o], valid0, [t0]) => {
    const inner: Stmt[] = [];
    // the last rows (columns) of a static extent: a band of their own extent, no valid region
    const t = valid0 ? valid0[0] : t0;
    const vectors = reduceBlocks(nodes, o, t, null, whole, tc, row, inner, span);
    const ls = leavesSkipping(value, vectors);
    inner.push(...tileLoops([typeof along === "number" ? axisOf(along, tc) : { dyn: along, t: tc }], span, ([oc], validC, [w]) => {
      const body: Stmt[] = [];
      const tile = row ? [t, w] : [w, t];
      const valid = validC ? (row ? [t, validC[0]] : [validC[0], t]) : null;
      const offsets = row ? [o, oc] : [oc, o];
      const r = tileExpr(value, ls, shape, tile, offsets, valid, span, body, new Map(), vectors);
      body.push(store(r, offsets));
      return body;
    }, "j"));
    return inner;
  });
}

/** The most rows a matmul has for its b to be streamed (src/codegen/cpp/emitters/matmul.ts, FEW_ROWS). */
export const FEW_ROWS = 6;

/**
 * The column tile of a few-row fp32 product where the code generator streams b (null: the usual
 * tiles): the columns of one core split into chunks of at most 1024, rounded up to 64.
 */
export function fewRowTileWidth(ctx: PassContext, m: Dim, n: Dim, k: Dim, aT: boolean, bT: boolean, batch: number, ad: string, bd: string): number | null {
  const cores = ctx.fewRowMatmulCores;
  if (!cores || typeof m !== "number" || typeof n !== "number" || typeof k !== "number" || m > FEW_ROWS || aT || bT || batch) return null;
  if (ad !== "float32" || bd !== "float32" || n < 256 || k < 64) return null;
  const perCore = Math.ceil(n / cores), chunks = Math.ceil(perCore / 1024);
  const w = Math.ceil(Math.ceil(perCore / chunks) / 64) * 64;
  return w > 128 ? Math.min(w, n) : null;
}

/** A tensor-level matmul: [tm, tn] output tiles, K in tiles of tk accumulated with matmulAcc in k order. */
/** What follows a matmul's output tile before its store: the rest of an elementwise expression (`tiles`: its leaf tiles). */
interface Epilogue { tiles: number; apply(result: Expr, offsets: Expr[], tile: number[], valid: number[] | null, inner: Stmt[]): Expr }

function lowerMatmul(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string, epilogue?: Epilogue): Stmt[] {
  if (value.op === "tensor.matmulQuant") return lowerMatmulQuant(value, store, ctx, span, fname, epilogue);
  const withAcc = value.op === "tensor.matmulAcc", withBias = value.op === "tensor.matmulBias";
  const [a, b] = withAcc ? value.args.slice(1) : value.args;
  const extra = withAcc ? value.args[0] : withBias ? value.args[2] : null;
  const la = leaves(a), lb = leaves(b);
  const isLeaf = (e: Expr) => (e.kind === "var" && e.type.kind === "tensor") || (e.kind === "call" && e.op === "tensor.slice" && e.args[0].kind === "var");
  if (!isLeaf(a) || !isLeaf(b) || (extra && !isLeaf(extra))) {
    const transposed = [a, b].find((x) => x.kind === "call" && x.op === "tensor.transpose" && isLeaf(x.args[0]));
    throw new TsptoCompileError("E_TENSOR_FORM", "pl.matmul on tensors takes tensors or tensor windows (pl.slice) as its operands, not expressions", span,
      transposed ? `multiply by the transpose without building it: pl.matmul(a, b, { ${transposed === a ? "aTrans" : "bTrans"}: true })`
        : "assign the expression to a tensor first, then multiply that tensor");
  }
  const aT = value.attrs.aTrans === true, bT = value.attrs.bTrans === true;
  const at = exprType(a) as TensorType, bt = exprType(b) as TensorType, rt = value.type as TensorType;
  // M and N may be dynamic (run-time trip counts, 1-wide tail tiles), and K (whole k tiles
  // then single columns, accumulated in k order onto a zero Acc tile)
  // batchMatmul: the same per batch, on [1, rows, cols] windows seen as [rows, cols] (a reshape that drops the 1)
  const batch = value.op === "tensor.batchMatmul" ? staticShape(at, "pl.batchMatmul", span)[0] : 0;
  const as = at.shape.slice(batch ? 1 : 0), bs = bt.shape.slice(batch ? 1 : 0);
  const [m, k] = aT ? [as[1], as[0]] : as, n = bT ? bs[0] : bs[1];
  const [mE, nE, kE] = extents([m, n, k], [...la, ...lb], "pl.matmul", span);
  const dynOf = new Map<Dim, Expr>([[m, mE], [n, nE], [k, kE]].filter(([d]) => typeof d !== "number") as [Dim, Expr][]);
  const ext = (d: number | string, t: number, lim: number) => (typeof d === "number" ? tileExtent(d, lim) : capped(dynOf.get(d)!, Math.min(t, dynTile(lim))));
  const budget = tileBudget(ctx, (batch ? 6 : 3) + (epilogue?.tiles ?? 0), [at.dtype, "float32"], "pl.matmul", span, fname);
  let tm = ext(m, 128, 128), tn = ext(n, 128, 128), tk = ext(k, 128, 128);
  // A product of few rows (a decode GEMV) is bound by reading b: the code generator streams b's
  // rows (ctx.fewRowMatmulCores), so its tiles are wide — one band of columns per core, at most
  // 1024 wide (rows of 4 KiB; measured: 128-wide panels read b at 0.4 of a streaming read, 1024 at
  // 0.95) — and k tiles shrink first to fit. Tile shapes never change an element's k order.
  const wide = fewRowTileWidth(ctx, m, n, k, aT, bT, batch, at.dtype, bt.dtype);
  // the same under a run-time M that may be 1 (see the branch below); the usual tiles otherwise
  const wideDyn = !wide && typeof m !== "number" ? fewRowTileWidth(ctx, 1, n, k, aT, bT, batch, at.dtype, bt.dtype) : null;
  const tk0 = tk;
  if (wide) {
    tn = wide;
    while (tk > 16 && (tk * tn > budget || tm * tk > budget)) tk = ext(k, tk, Math.max(16, tk >> 1));
  }
  // b stored [n, k] (tied logits) read in place under a few rows: k tiles of whole rows (up to
  // 4096), so the code generator streams each block of 16 rows as one contiguous piece of b; a
  // forwarded operand takes no scratch, so the budget does not bound it
  const rowsBT = !wide && bT && !aT && !batch && ctx.matmulOperandsInPlace === true && !!ctx.fewRowMatmulCores && typeof m === "number" && m <= FEW_ROWS &&
    typeof k === "number" && at.dtype === "float32" && bt.dtype === "float32";
  if (rowsBT) tk = ext(k, Math.min(k, 4096), 4096);
  while (tm * tk > budget || (!rowsBT && tk * tn > budget) || tm * tn > budget) {
    if (tk >= tm && tk >= tn) tk = ext(k, tk, Math.max(1, tk >> 1)); else if (tm >= tn) tm = ext(m, tm, Math.max(1, tm >> 1)); else tn = ext(n, tn, Math.max(1, tn >> 1));
  }
  const opts = { ...(aT ? { aTrans: true } : {}), ...(bT ? { bTrans: true } : {}) };
  const axis = (e: number | Expr, t: number): Axis => (typeof e === "number" ? axisOf(e, t) : { dyn: e, t });
  // The loop over output tiles that SplitParallelLoops spreads over the cores is the outer one:
  // the N tiles when M has fewer tiles than N or is dynamic (a decode GEMV, M = 1: one task per
  // band of columns, each reading its columns of b once), else the M tiles. The body sees the
  // offsets in [m, n] order either way.
  const mTiles = typeof m === "number" ? Math.ceil(m / tm) : 0, nTiles = typeof n === "number" ? Math.ceil(n / tn) : 0;
  const nFirst = !batch && nTiles >= 2 && mTiles < nTiles;
  const swap2 = <T>(xs: T[] | null): T[] | null => (xs ? [xs[1], xs[0]] : xs);
  const order = (xs: readonly Axis[]): Axis[] => (nFirst ? [xs[1], xs[0]] : [...xs]);
  /** One output tile at offsets (in [batch,] m, n order), valid extents or null, tile shape; k tiles of tkT. */
  const tileBody = (offsets: Expr[], valid0: number[] | null, tile: number[], tkT: number): Stmt[] => {
    const tk = tkT, ka = typeof k === "number" ? axisOf(k, tk) : null;
    const inner: Stmt[] = [];
    const ob = batch ? offsets[0] : null;
    const [oi, oj] = batch ? offsets.slice(1) : offsets;
    const valid = valid0 && batch ? valid0.slice(1) : valid0;
    const [tm, tn] = batch ? tile.slice(1) : tile;
    const vm = valid ? valid[0] : tm, vn = valid ? valid[1] : tn;
    /** Load the operand tiles for the k tile at offset ok (valid extent vk, extent kt). */
    const operands = (ok: Expr, vk: number, body: Stmt[], tk0 = tk): [Expr, Expr] => {
      const tk = tk0;
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
    /** acc = matmulAcc(acc, a, b) over k tiles of extent kt from start to stop (a loop carrying acc). */
    const accumulate = (acc0: Var, start: Expr, stop: Expr, kt: number): Var => carry(inner, acc0, start, stop, kt, (kv, accIn, body) => {
      const [ak, bk] = operands(kv, kt, body, kt);
      return call("tile.matmulAcc", [accIn, ak, bk], opts, span);
    }, span);
    let acc: Var;
    if (!ka) {
      // a dynamic K: whole k tiles up to K - K % tk, then one column at a time
      if (withAcc) acc = window(extra!, oi, oj, [tm, tn], [vm, vn]);
      else {
        const z = call("tile.create", [], { shape: [tm, tn], dtype: matmulAccDType(at.dtype), mem: "Acc" }, span);
        acc = mkVar("acc", z.type, span);
        inner.push(mkAssign([acc], z, span));
      }
      const kDyn = kE as Expr;
      const wholeStop = scalarOp("scalar.sub", kDyn, scalarOp("scalar.mod", kDyn, mkConst(tk, "int64", span), span), span);
      acc = accumulate(acc, zero(span), wholeStop, tk);
      acc = accumulate(acc, wholeStop, kDyn, 1);
    } else {
      const firstValid = ka.full > 0 ? tk : ka.rem;
      const [a0, b0] = operands(zero(span), firstValid, inner);
      const first = withAcc
        ? call("tile.matmulAcc", [window(extra!, oi, oj, [tm, tn], [vm, vn]), a0, b0], opts, span)
        : call("tile.matmul", [a0, b0], opts, span);
      acc = mkVar("acc", first.type, span);
      inner.push(mkAssign([acc], first, span));
      if (ka.full > 1) acc = accumulate(acc, mkConst(tk, "int64", span), mkConst(ka.full * tk, "int64", span), tk);
      if (ka.full > 0 && ka.rem > 0) {
        const [ar, br] = operands(mkConst(ka.full * tk, "int64", span), ka.rem, inner);
        const last = call("tile.matmulAcc", [acc, ar, br], opts, span);
        acc = mkVar("acc", last.type, span);
        inner.push(mkAssign([acc], last, span));
      }
    }
    const biased: Expr = withBias ? call("tile.colExpandAdd", [acc, window(extra!, zero(span), oj, [1, tn], [1, vn])], {}, span) : acc;
    const result = (acc.type as TileType).dtype === rt.dtype ? biased : call("tile.cast", [biased], { dtype: rt.dtype, mode: "round" }, span);
    const fin = epilogue && !ob ? epilogue.apply(result, [oi, oj], [tm, tn], valid ? [vm, vn] : null, inner) : result;
    inner.push(ob ? store(call("tile.reshape", [result], { shape: [1, tm, tn] }, span), [ob, oi, oj]) : store(fin, [oi, oj]));
    return inner;
  };
  if (wideDyn) {
    // A run-time M (one program for the prompt and for each decode step): bands of wideDyn
    // columns, the outer loop; in each, a branch on M = 1 (a decode GEMV: one wide tile whose b
    // the code generator streams) and otherwise the usual tiles over the band. The same k order.
    let tkW = tk0;
    while (tkW > 16 && tkW * wideDyn > budget) tkW = ext(k, tkW, Math.max(16, tkW >> 1));
    return tileLoops([axisOf(n as number, wideDyn)], span, ([oj], vN, [tw]) => {
      const vw = vN ? vN[0] : tw;
      const one = tileBody([zero(span), oj], vN ? [1, vw] : null, [1, tw], tkW);
      // column tiles that divide the band (the largest divisor of wideDyn up to tn): a band's
      // windows then end at its last column, so SplitParallelLoops' bands do not overlap (an
      // overlap orders them)
      let tc = Math.min(tn, wideDyn);
      while (wideDyn % tc) tc--;
      const rest = tileLoops([axisOf(vw, Math.min(tc, vw)), axis(mE, tm)], span, ([oc, oi], valid, [tnn, tmm]) =>
        tileBody([oi, add(oj, oc, span)], valid ? [valid[1], valid[0]] : null, [tmm, tnn], tk), "n");
      return [mkIf({ cond: scalarOp("scalar.eq", mE as Expr, c64(1, span), span), then: one, else: rest, results: [], span })];
    }, "n");
  }
  return tileLoops([...(batch ? [axisOf(batch, 1)] : []), ...order([axis(mE, tm), axis(nE, tn)])], span, (offsetsIn, validIn, tileIn) =>
    nFirst ? tileBody(swap2(offsetsIn)!, swap2(validIn), swap2(tileIn)!, tk) : tileBody(offsetsIn, validIn, tileIn, tk), nFirst ? "n" : "m");
}

/**
 * A tensor-level matmulQuant (src/ir/ops/quant.ts): [tm, tn] output tiles, N the outer loop (the
 * one SplitParallelLoops spreads over the cores: a decode GEMV is one task per band of weight
 * rows), M (static or dynamic) inside it; each tile is the tile op on x's rows [tm, K], the
 * weight's rows [tn, K (or K/2)] and the scales' rows [tn, K / groupSize], K whole (the tile op
 * streams it; on cpu the operands are read in place, forwardableMatmulOperands).
 */
function lowerMatmulQuant(value: Call, store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string, epilogue?: Epilogue): Stmt[] {
  const [x, w, sc] = value.args;
  const isLeaf = (e: Expr) => (e.kind === "var" && e.type.kind === "tensor") || (e.kind === "call" && e.op === "tensor.slice" && e.args[0].kind === "var");
  if (!isLeaf(x) || !isLeaf(w) || !isLeaf(sc)) {
    throw new TsptoCompileError("E_TENSOR_FORM", "pl.matmulQuant on tensors takes tensors or tensor windows (pl.slice) as its operands, not expressions", span,
      "assign the expression to a tensor first, then multiply that tensor");
  }
  const lx = leaves(x)[0], lw = leaves(w)[0], ls = leaves(sc)[0];
  const xt = exprType(x) as TensorType, wt = exprType(w) as TensorType, st = exprType(sc) as TensorType;
  const m = xt.shape[0], k = xt.shape[1] as number, n = wt.shape[0] as number, kw = wt.shape[1] as number, groups = st.shape[1] as number;
  const [mE] = extents([m], [lx], "pl.matmulQuant", span);
  const budget = tileBudget(ctx, 3 + (epilogue?.tiles ?? 0), ["float32"], "pl.matmulQuant", span, fname);
  // Every tile is a whole tile (no validShape): the N extent is cut into tiles of tn and one
  // tile of the remainder, so that the weight and scales tiles are all read in place (a partial
  // tile would be copied into scratch). tn = 128 rows: many tasks balance the cores of a loaded
  // machine better than few large ones (measured on the tied logits, N = 50257: 128-row tiles
  // 12.4 ms, 1568-row tiles 23.7 ms at load average 8 on 2 cores).
  const tm0 = Math.min(16, Math.max(1, Math.floor(budget / k)));
  const tn0 = Math.max(1, Math.min(128, Math.floor(budget / tm0)));
  const tn = Math.min(n, tileExtent(n, tn0));
  const mAxis: Axis = typeof mE === "number" ? axisOf(mE, tileExtent(mE, tm0)) : { dyn: mE, t: capped(mE, dynTile(tm0)) };
  const at = (l: Leaf, offs: Expr[]) => offs.map((o, ax) => (l.base ? add(l.base[ax], o, span) : o));
  // N in whole tiles and one tile of the remainder, ONE loop (the last trip takes the remainder's
  // tile), so that SplitParallelLoops spreads it over the cores (as two loops, the tied logits,
  // N = 50257, were one task)
  return tileLoops([{ ...axisOf(n, tn), exactLast: true }, mAxis], span, ([oj, oi], valid, [tnn, tmm]) => {
    const inner: Stmt[] = [];
    const vn = valid ? valid[0] : tnn, vm = valid ? valid[1] : tmm;
    const ld = (l: Leaf, offs: Expr[], shape: number[], v: number[]): Var => {
      const whole = v[0] === shape[0] && v[1] === shape[1];
      const e = call("tile.load", [l.tensor, list(at(l, offs), span)], whole ? { shape } : { shape, validShape: v }, span);
      const tv = mkVar(`${l.tensor.name}_tile`, e.type, span);
      inner.push(mkAssign([tv], e, span));
      return tv;
    };
    const xv = ld(lx, [oi, zero(span)], [tmm, k], [vm, k]);
    const wv = ld(lw, [oj, zero(span)], [tnn, kw], [vn, kw]);
    const sv = ld(ls, [oj, zero(span)], [tnn, groups], [vn, groups]);
    const r = call("tile.matmulQuant", [xv, wv, sv], value.attrs, span);
    const fin = epilogue ? epilogue.apply(r, [oi, oj], [tmm, tnn], valid ? [vm, vn] : null, inner) : r;
    inner.push(store(fin, [oi, oj]));
    return inner;
  }, "n");
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
  const budget = tileBudget(ctx, ls.length + madeTiles(x) + 2, [xt.dtype, ...ls.map((l) => (l.tensor.type as TensorType).dtype)], "pl.reshape", span, fname);
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
function lowerTranspose(value: Call, shape: readonly (number | Expr)[], store: (r: Expr, offsets: readonly Expr[]) => Stmt, ctx: PassContext, span: Span, fname: string): Stmt[] {
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
  const side = Math.max(1, Math.floor(Math.sqrt(budget)));
  const axes = shape.map((e) => axisFor(e, 1));
  axes[rank - 1] = axisFor(shape[rank - 1], side);
  if (rank >= 2) axes[rank - 2] = axisFor(shape[rank - 2], budget / axes[rank - 1].t);
  for (const ax of [a1, a2]) if (ax < rank - 2) axes[ax] = axisFor(shape[ax], 1);
  return tileLoops(axes, span, (offsets, valid, tile) => {
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

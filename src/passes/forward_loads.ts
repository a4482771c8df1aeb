// Load forwarding (an analysis of lowered kernels that code generators use): `store(f(load(a, off, S), load(b, off, S)), off, out)` — the
// shape tensor-to-tile gives every elementwise pl.assign — need not copy the windows of a
// and b into scratch first: when a loaded tile is used only by the elementwise expression of
// the next store of the same window (same offsets, same tile shape, tensors of the same
// shape) and the window is contiguous in memory, the store's loop reads the tensor directly.
// Element i of the window is read just before element i of the output is written, as in
// the staged code, so the result is bit-identical (also when `out` aliases `a`); the loaded
// values are stored in the tile's own type (no conversion: float32 and integer dtypes only).
import type { Expr, Func, Stmt, TensorType, TileType, Var } from "../ir/index.js";
import { REDUCTIONS, ROW_KEEP, forEachExpr, getOp, numel } from "../ir/index.js";
import { isFusable } from "./flatten_tiles.js";

export interface ForwardedLoad {
  /** The tensor variable read (a kernel parameter or alias of one). */
  readonly tensor: Expr;
  /** Offsets of the window (IR scalar expressions), one per tensor axis. */
  readonly offsets: readonly Expr[];
  /** Element strides of the tensor. */
  readonly strides: readonly number[];
  /** The load, when no store checks its window (forwardableReads): the code generator checks it where the load was. */
  readonly check?: Extract<Expr, { kind: "call" }>;
}

const SAME_TYPE = new Set(["float32", "int8", "int16", "int32", "int64", "uint8"]);

function sameExpr(a: Expr, b: Expr): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "var") return a.id === (b as typeof a).id;
  if (a.kind === "const") return a.value === (b as typeof a).value;
  if (a.kind === "list") return a.items.length === (b as typeof a).items.length && a.items.every((x, i) => sameExpr(x, (b as typeof a).items[i]));
  const c = b as typeof a;
  return a.op === c.op && a.args.length === c.args.length && a.args.every((x, i) => sameExpr(x, c.args[i])) && JSON.stringify(a.attrs) === JSON.stringify(c.attrs);
}

/** Is a [tile] window of a tensor of `dims` one contiguous run of elements? */
function contiguous(tile: readonly number[], dims: readonly number[]): boolean {
  let m = 0; // first axis where the tile is not 1
  while (m < tile.length && tile[m] === 1) m++;
  for (let k = m + 1; k < tile.length; k++) if (tile[k] !== dims[k]) return false;
  return true;
}

/**
 * The window's contiguity and the tensor's strides depend on every dimension but the first:
 * that one may be dynamic (a placeholder 0 stands for it).
 */
const staticRows = (dims: readonly (number | string)[]): boolean => dims.slice(1).every((d) => typeof d === "number");
const rowDims = (dims: readonly (number | string)[]): number[] => dims.map((d, k) => (k === 0 && typeof d !== "number" ? 0 : (d as number)));

const stridesOf = (dims: readonly number[]) => dims.map((_, k) => dims.slice(k + 1).reduce((a, b) => a * b, 1));

/**
 * The tensor a `v = load(...)` reads, when the code generator could read its window in place: a
 * whole (no valid region), unpadded window that is contiguous in the tensor, loaded into a tile
 * of the tensor's own dtype (float32 or an integer: no conversion). `dynamicRows`: the tensor's
 * first dimension may be dynamic (the strides do not depend on it). Else null.
 */
function inPlaceWindow(v: Var, load: Extract<Expr, { kind: "call" }>, dynamicRows: boolean): TensorType | null {
  const tt = v.type as TileType, lt = load.type as TileType;
  const tensor = load.args[0];
  const ten = tensor.kind === "var" && tensor.type.kind === "tensor" ? (tensor.type as TensorType) : null;
  const full = !lt.validShape || numel(lt.validShape as number[]) === numel(lt.shape as number[]);
  const dimsOk = ten && (dynamicRows ? staticRows(ten.shape) : ten.shape.every((d) => typeof d === "number"));
  if (!ten || !dimsOk || !full || tt.kind !== "tile" || tt.dtype !== ten.dtype || !SAME_TYPE.has(ten.dtype) || load.attrs.pad !== undefined ||
      !lt.shape.every((d) => typeof d === "number") || !contiguous(lt.shape as number[], rowDims(ten.shape))) return null;
  return ten;
}

/** Tile variables (by id) whose load the code generator may forward into a store. */
export function forwardableLoads(fn: Func): Map<number, ForwardedLoad> {
  const out = new Map<number, ForwardedLoad>();
  // uses of every variable in the whole function
  const uses = new Map<number, number>();
  forEachExpr(fn.body, (e) => { if (e.kind === "var") uses.set(e.id, (uses.get(e.id) ?? 0) + 1); });
  const block = (ss: readonly Stmt[]): void => {
    // candidate loads of this block, waiting for their store
    let pending: { id: number; load: Extract<Expr, { kind: "call" }> }[] = [];
    for (const s of ss) {
      if (s.kind === "for" || s.kind === "while") { pending = []; block(s.body); continue; }
      if (s.kind === "if") { pending = []; block(s.then); block(s.else); continue; }
      if (s.kind === "assign" && s.targets.length === 1 && s.value.kind === "call" && s.value.op === "tile.load") {
        const v = s.targets[0], load = s.value;
        if (inPlaceWindow(v, load, true)) pending.push({ id: v.id, load });
        continue;
      }
      if (s.kind === "eval" && s.expr.kind === "call" && s.expr.op === "tile.store") {
        const st = s.expr;
        const value = st.args[0], offs = st.args[1], target = st.args[2];
        const vt = value.kind === "const" ? null : value.type;
        const tt = target.kind === "var" && target.type.kind === "tensor" ? (target.type as TensorType) : null;
        // uses of each pending tile inside this store's value
        const inStore = new Map<number, number>();
        forEachExpr([s], (e) => { if (e.kind === "var") inStore.set(e.id, (inStore.get(e.id) ?? 0) + 1); });
        for (const p of pending) {
          const lt = p.load.type as TileType;
          const ten = (p.load.args[0] as Extract<Expr, { kind: "var" }>).type as TensorType;
          if (!vt || vt.kind !== "tile" || !tt || value.kind === "var") continue; // a plain tile copy: nothing to fuse
          if ((inStore.get(p.id) ?? 0) !== (uses.get(p.id) ?? 0)) continue;      // used elsewhere too
          if (JSON.stringify(lt.shape) !== JSON.stringify((vt as TileType).shape)) continue;
          if (JSON.stringify(ten.shape) !== JSON.stringify(tt.shape)) continue;
          if ((vt as TileType).validShape && numel((vt as TileType).validShape as number[]) !== numel((vt as TileType).shape as number[])) continue;
          if (!sameExpr(p.load.args[1], offs) || offs.kind !== "list") continue;
          out.set(p.id, { tensor: p.load.args[0], offsets: offs.items, strides: stridesOf(rowDims(ten.shape)) });
        }
        pending = [];
        continue;
      }
      // anything else (another op, a call) ends the window of the pending loads
      if (s.kind !== "assign" || s.value.kind === "call" && (s.value.op.startsWith("tile.store") || s.value.op.startsWith("tensor."))) pending = [];
    }
  };
  block(fn.body);
  return out;
}

const ELEM_ROOTS = new Set([...Object.keys(REDUCTIONS), ...Object.keys(ROW_KEEP)].map((n) => `tile.${n}`));

/**
 * Occurrences of variable `id` in a statement's expression: all, and those the code generator
 * reads element by element (elementsOf): leaves of an elementwise expression that is computed
 * into a tile, or that is the input of a reduction / rowSumKeep or the value of a store.
 */
export function elementReads(e: Expr, id: number): { all: number; elem: number } {
  let all = 0, elem = 0;
  const visit = (x: Expr, elemCtx: boolean): void => {
    if (x.kind === "var") { if (x.id === id) { all++; if (elemCtx) elem++; } return; }
    if (x.kind === "list") { x.items.forEach((i) => visit(i, false)); return; }
    if (x.kind !== "call") return;
    const chain = elemCtx && isFusable(x); // an elementwise node inside an element read
    x.args.forEach((a, k) => visit(a, chain || (k === 0 && (ELEM_ROOTS.has(x.op) || x.op === "tile.store"))));
  };
  visit(e, isFusable(e));
  return { all, elem };
}

/**
 * Loads read in place before anything writes a tensor (cpu code generation): a load whose every
 * use is an element read (elementReads) by the statements that follow it in the same list, all
 * before the first statement that may write a tensor — or in that statement, when it is a store
 * of the same window (the rule of forwardableLoads) — is never copied into scratch: its readers
 * read the tensor window. The window is checked where the load was (`check`). A row reduction
 * of a loaded row (softmax's max) reads the input directly. Loads forwardableLoads forwards
 * already are not repeated.
 */
export function forwardableReads(fn: Func, already: ReadonlyMap<number, ForwardedLoad>): Map<number, ForwardedLoad> {
  const out = new Map<number, ForwardedLoad>();
  const uses = new Map<number, number>();
  forEachExpr(fn.body, (e) => { if (e.kind === "var") uses.set(e.id, (uses.get(e.id) ?? 0) + 1); });
  const writes = (s: Stmt): boolean => {
    if (s.kind !== "assign" && s.kind !== "eval") return true;
    const v = s.kind === "assign" ? s.value : s.expr;
    let w = false;
    forEachExpr([s], (x) => { if (x.kind === "call" && (x.op === "call" || x.op === "tile.store" || x.op.startsWith("tensor.") || !getOp(x.op).pure)) w = true; });
    return w || v.kind !== "call";
  };
  const block = (ss: readonly Stmt[]): void => {
    ss.forEach((s, i) => {
      if (s.kind === "for" || s.kind === "while" || s.kind === "scope") { block(s.body); return; }
      if (s.kind === "if") { block(s.then); block(s.else); return; }
      if (s.kind !== "assign" || s.targets.length !== 1 || s.value.kind !== "call" || s.value.op !== "tile.load") return;
      const v = s.targets[0], load = s.value;
      if (already.has(v.id)) return;
      const lt = load.type as TileType, tensor = load.args[0];
      const ten = inPlaceWindow(v, load, false);
      if (!ten || load.args[1].kind !== "list") return;
      const total = uses.get(v.id) ?? 0;
      let seen = 0;
      for (let k = i + 1; k < ss.length && seen < total; k++) {
        const t = ss[k];
        const x = t.kind === "assign" ? t.value : t.kind === "eval" ? t.expr : null;
        if (!x) return; // a nested loop / if / yield: stop (it may read the tile or write the tensor)
        const o = elementReads(x, v.id);
        if (o.all !== o.elem) return;
        if (writes(t)) {
          if (o.all === 0) return; // a write before the last read
          // the last reader and a store: only a store of the same window reads element i before writing it
          if (seen + o.all !== total || !(x.kind === "call" && x.op === "tile.store")) return;
          const value = x.args[0], tgt = x.args[2];
          const vt = value.kind === "const" ? null : value.type;
          const tgtT = tgt.kind === "var" && tgt.type.kind === "tensor" ? (tgt.type as TensorType) : null;
          if (!vt || vt.kind !== "tile" || !tgtT || JSON.stringify(lt.shape) !== JSON.stringify(vt.shape) ||
              JSON.stringify(ten.shape) !== JSON.stringify(tgtT.shape) || !sameExpr(load.args[1], x.args[1])) return;
          if ((vt as TileType).validShape && numel((vt as TileType).validShape as number[]) !== numel(vt.shape as number[])) return;
        }
        seen += o.all;
      }
      if (seen !== total || total === 0) return;
      out.set(v.id, { tensor, offsets: (load.args[1] as Extract<Expr, { kind: "list" }>).items, strides: stridesOf(ten.shape as number[]), check: load });
    });
  };
  block(fn.body);
  return out;
}

/**
 * Tiles made by tile.create whose contents nothing reads: every use of the variable is as the
 * scratch operand (`tmp`, argument 1) of a row / column reduction, which the cpu emitters never
 * read. Their zero fill is skipped (an unobservable store of a whole tile).
 */
export function unreadScratchTiles(fn: Func): Set<number> {
  const created = new Set<number>();
  const visit = (ss: readonly Stmt[]): void => {
    for (const s of ss) {
      if (s.kind === "for" || s.kind === "while") visit(s.body);
      else if (s.kind === "if") { visit(s.then); visit(s.else); }
      else if (s.kind === "assign" && s.targets.length === 1 && s.value.kind === "call" && s.value.op === "tile.create") created.add(s.targets[0].id);
    }
  };
  visit(fn.body);
  if (created.size === 0) return created;
  const uses = new Map<number, number>(), tmpUses = new Map<number, number>();
  forEachExpr(fn.body, (e) => {
    if (e.kind === "var") uses.set(e.id, (uses.get(e.id) ?? 0) + 1);
    if (e.kind === "call" && REDUCTION_OPS.has(e.op)) {
      for (const a of e.args.slice(1)) if (a.kind === "var") tmpUses.set(a.id, (tmpUses.get(a.id) ?? 0) + 1);
    }
  });
  for (const id of [...created]) if ((uses.get(id) ?? 0) !== (tmpUses.get(id) ?? 0)) created.delete(id);
  return created;
}
const REDUCTION_OPS = new Set(["rowSum", "rowMax", "rowMin", "colSum", "colMax", "colMin"].map((n) => `tile.${n}`));

/**
 * Matmul operand forwarding (cpu codegen): an operand of a float32 tile.matmul / matmulAcc
 * that is `load(t, off, S)`, `move(load(t, off, S))`, `transpose(load(t, off, S))` or
 * `transpose(move(load(...)))` (a 2-D transpose: what MatmulForms makes of aTrans / bTrans),
 * each used only once and in the same statement list as the matmul with no store or call in
 * between, is read by the matmul straight from the tensor window (row stride = the tensor's row
 * length; a transposed operand with its strides swapped) instead of being copied into scratch
 * (twice, or three times with the transpose). Moves and transposes only move elements, so the
 * values are the same. Returns the skipped tile variables (the load's, the move's and the
 * transpose's), per matmul operand variable the load it reads, and the operand variables read
 * transposed.
 */
/**
 * The ops whose operands are forwarded: the operand positions, the dtypes read in place (a tensor
 * of the tile's dtype) and whether a transposed load is read too. matmulQuant (src/ir/ops/quant.ts)
 * reads its fp32 x, its int8 / packed uint8 weight and its scales (any of their dtypes) in place.
 */
const FORWARDED_OPERANDS: ReadonlyMap<string, { args: readonly number[]; dtypes: readonly string[]; trans: boolean }> = new Map([
  ["tile.matmul", { args: [0, 1], dtypes: ["float32"], trans: true }],
  ["tile.matmulAcc", { args: [1, 2], dtypes: ["float32"], trans: true }],
  ["tile.matmulQuant", { args: [0, 1, 2], dtypes: ["float32", "int8", "uint8", "float16", "bfloat16"], trans: false }],
]);

export function forwardableMatmulOperands(fn: Func): { skipped: Set<number>; operands: Map<number, Extract<Expr, { kind: "call" }>>; transposed: Set<number> } {
  const skipped = new Set<number>();
  const operands = new Map<number, Extract<Expr, { kind: "call" }>>();
  const transposed = new Set<number>();
  const uses = new Map<number, number>();
  forEachExpr(fn.body, (e) => { if (e.kind === "var") uses.set(e.id, (uses.get(e.id) ?? 0) + 1); });
  const block = (ss: readonly Stmt[]): void => {
    // tile var -> [statement index, defining call]
    const defs = new Map<number, { at: number; call: Extract<Expr, { kind: "call" }> }>();
    let barrier = -1; // index of the last statement that may write a tensor
    ss.forEach((s, i) => {
      if (s.kind === "for" || s.kind === "while") { block(s.body); barrier = i; return; }
      if (s.kind === "if") { block(s.then); block(s.else); barrier = i; return; }
      if (s.kind === "eval") { barrier = i; return; }
      if (s.kind !== "assign" || s.targets.length !== 1 || s.value.kind !== "call") { if (s.kind !== "assign") barrier = i; return; }
      const v = s.targets[0], call = s.value;
      if (call.op === "tile.load" || call.op === "tile.move") { defs.set(v.id, { at: i, call }); return; }
      if (call.op === "tile.transpose" && (v.type as TileType).shape.length === 2) { defs.set(v.id, { at: i, call }); return; }
      if (call.op === "call" || call.op.startsWith("tensor.") || call.op === "tile.store") { barrier = i; return; }
      const fwd = FORWARDED_OPERANDS.get(call.op);
      if (!fwd) return;
      for (const a of fwd.args.map((ai) => call.args[ai])) {
        if (!a || a.kind !== "var" || (uses.get(a.id) ?? 0) !== 1 || operands.has(a.id)) continue;
        let d = defs.get(a.id);
        const chain = [a.id];
        const trans = d?.call.op === "tile.transpose";
        if (trans && !fwd.trans) continue;
        if (d && trans) {
          const src = d.call.args[0];
          if (src.kind !== "var" || (uses.get(src.id) ?? 0) !== 1) continue;
          chain.push(src.id);
          d = defs.get(src.id);
        }
        if (d && d.call.op === "tile.move") {
          const src = d.call.args[0];
          if (src.kind !== "var" || (uses.get(src.id) ?? 0) !== 1) continue;
          chain.push(src.id);
          d = defs.get(src.id);
        }
        if (!d || d.call.op !== "tile.load" || d.at <= barrier) continue;
        const load = d.call;
        const lt = load.type as TileType, ten = load.args[0];
        if (ten.kind !== "var" || ten.type.kind !== "tensor") continue;
        const tt = ten.type as TensorType;
        if (tt.dtype !== lt.dtype || !fwd.dtypes.includes(tt.dtype) || tt.shape.length !== 2) continue;
        if (lt.validShape || load.attrs.pad !== undefined || load.attrs.validShape != null) continue;
        operands.set(a.id, load);
        if (trans) transposed.add(a.id);
        for (const id of chain) skipped.add(id);
      }
    });
  };
  block(fn.body);
  return { skipped, operands, transposed };
}

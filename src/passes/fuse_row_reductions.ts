// FuseRowReductions: fewer passes over a tile around its row reductions.
//
// After FuseRows a row-wise chain (row reduction -> broadcast -> elementwise -> row reduction,
// e.g. softmax's max -> exp(t - max) -> sum, layer norm's mean -> (t - mean)^2 -> sum) is a
// loop over [1, C] rows whose statements each make one trip over the row. In every straight-line
// statement list of an InCore function this pass (after FlattenTiles, so that reductions are
// statements of their own) removes trips:
//
//   1. Inline. A tile `v = E` (E an elementwise expression) read only as an element — an
//      operand of elementwise ops, the input of a reduction (rowSum/rowMax/rowMin/colSum/...),
//      the value of a store — by later statements of the same list is computed inside those
//      statements' loops instead of into a tile of its own: always when it is read once; when
//      it is read up to MAX_RECOMPUTE times and E is cheap (at most two of + - * neg abs max min
//      relu), it is recomputed at each read (layer norm: `centered = t - mean` feeds the
//      variance's sum and the output; both compute t - mean from t).
//   2. Keep. `v = E; ...; s = rowSum(v, tmp)` where the reduction is v's first reader and v
//      is read again later becomes `[v, s] = rowSumKeep(E)` (rowMax / rowMin alike): one loop
//      computes each element of E once, writes it to v and adds it to the row's lanes (softmax:
//      exp(t - max) and its sum in one loop; the division reads v).
//
// Each element is computed by the same operations on the same operands as before (a recomputed
// expression gives the same bits; the kept reduction has rowSum's numerics: fp64 lanes in the
// same order), so results are unchanged. Together with loads read in place (forward_loads.ts:
// the row max reads the input tensor, no copy) softmax makes three passes over a row (max;
// exp + sum; scale and store) and layer norm three (sum; sum of squares; normalize and store).
import {
  ROW_KEEP, forEachExpr, getOp, inferCall, mapExpr, mkAssign, mkCall, mkFor, mkIf, mkScope, mkWhile,
  type Call, type Expr, type Func, type Stmt, type TileType, type Var,
} from "../ir/index.js";
import type { Pass } from "./manager.js";
import { isFusable } from "./flatten_tiles.js";
import { elementReads } from "./forward_loads.js";

/** Most reads of a cheap elementwise tile that are recomputed rather than materialized. */
export const MAX_RECOMPUTE = 4;
/** Elementwise ops cheap enough to compute again at each read (one instruction per vector). */
const CHEAP = new Set(["add", "sub", "mul", "neg", "abs", "maximum", "minimum", "relu"].map((n) => `tile.${n}`));
const KEEP_OF = new Map(Object.keys(ROW_KEEP).map((k) => [`tile.${k.slice(0, -4)}`, `tile.${k}`]));

export const fuseRowReductionsPass: Pass = {
  name: "FuseRowReductions",
  run(p) {
    return p.withFunctions(p.functions.map((f) => {
      if (f.fnKind !== "incore") return f;
      const uses = new Map<number, number>();
      forEachExpr(f.body, (e) => { if (e.kind === "var") uses.set(e.id, (uses.get(e.id) ?? 0) + 1); });
      const body = block(f.body, uses);
      return body === f.body ? f : Object.freeze({ ...f, body: Object.freeze(body) }) as Func;
    }));
  },
};

/** The statement list rewritten (nested lists too); `uses`: occurrences of each variable in the function, kept current. */
function block(ss: readonly Stmt[], uses: Map<number, number>): readonly Stmt[] {
  let changed = false;
  let out: Stmt[] = ss.map((s) => {
    const n = nested(s, uses);
    if (n !== s) changed = true;
    return n;
  });
  const inl = inline(out, uses);
  if (inl) { out = inl; changed = true; }
  const kept = keep(out, uses);
  if (kept) { out = kept; changed = true; }
  return changed ? out : ss;
}

function nested(s: Stmt, uses: Map<number, number>): Stmt {
  switch (s.kind) {
    case "for": { const body = block(s.body, uses); return body === s.body ? s : mkFor({ ...s, body }); }
    case "while": { const body = block(s.body, uses); return body === s.body ? s : mkWhile({ ...s, body }); }
    case "if": {
      const then = block(s.then, uses), els = block(s.else, uses);
      return then === s.then && els === s.else ? s : mkIf({ ...s, then, else: els });
    }
    case "scope": { const body = block(s.body, uses); return body === s.body ? s : mkScope(s.level, body, s.span); }
    default: return s;
  }
}

/** Tiles with a validShape (static or run time) are left as they are (their extents travel with the variable). */
const hasValid = (v: Var): boolean => v.type.kind === "tile" && !!(v.type as TileType).validShape;

const stmtExpr = (s: Stmt): Expr | null => (s.kind === "assign" ? s.value : s.kind === "eval" ? s.expr : null);

/** Tile ops in an elementwise expression, and whether all are cheap (scalar subexpressions not counted). */
function cost(e: Expr): { ops: number; cheap: boolean } {
  let ops = 0, cheap = true;
  const visit = (x: Expr): void => {
    if (x.kind !== "call" || x.type.kind !== "tile") return;
    ops++;
    if (!CHEAP.has(x.op)) cheap = false;
    x.args.forEach(visit);
  };
  visit(e);
  return { ops, cheap };
}

/** Add `times` × the variable occurrences of e to `uses`. */
function countInto(uses: Map<number, number>, e: Expr, times: number): void {
  forEachExpr([{ kind: "eval", expr: e, span: e.span } as Stmt], (x) => { if (x.kind === "var") uses.set(x.id, (uses.get(x.id) ?? 0) + times); });
}

/** Step 1 (see the header); null when nothing changed. */
function inline(ss: Stmt[], uses: Map<number, number>): Stmt[] | null {
  let out = ss, changed = false;
  for (let i = 0; i < out.length; i++) {
    const s = out[i];
    if (s.kind !== "assign" || s.targets.length !== 1 || !isFusable(s.value) || hasValid(s.targets[0])) continue;
    const v = s.targets[0], E = s.value;
    const total = uses.get(v.id) ?? 0;
    if (total === 0) continue;
    let seen = 0, ok = true;
    for (let k = i + 1; k < out.length && ok; k++) {
      const x = stmtExpr(out[k]);
      if (!x) { let any = false; forEachExpr([out[k]], (y) => { if (y.kind === "var" && y.id === v.id) any = true; }); if (any) ok = false; continue; }
      const o = elementReads(x, v.id);
      if (o.all !== o.elem) ok = false;
      seen += o.all;
    }
    if (!ok || seen !== total) continue; // read elsewhere (as a tile, in a nested loop, yielded)
    const c = cost(E);
    if (!(total === 1 || (c.cheap && c.ops <= 2 && total <= MAX_RECOMPUTE))) continue;
    const subst = (x: Expr): Expr => mapExpr(x, (y) => (y.kind === "var" && y.id === v.id ? E : undefined));
    const next = out.slice(0, i);
    for (let k = i + 1; k < out.length; k++) {
      const t = out[k];
      if (t.kind === "assign") next.push(Object.freeze({ ...t, value: subst(t.value) }));
      else if (t.kind === "eval") next.push(Object.freeze({ ...t, expr: subst(t.expr) }));
      else next.push(t);
    }
    countInto(uses, E, total - 1);
    uses.set(v.id, 0);
    out = next;
    changed = true;
    i--; // the statement now at i is the next one
  }
  return changed ? out : null;
}

/** Step 2 (see the header); null when nothing changed. */
function keep(ss: Stmt[], uses: Map<number, number>): Stmt[] | null {
  let out = ss, changed = false;
  for (let j = 0; j < out.length; j++) {
    const s = out[j];
    if (s.kind !== "assign" || s.targets.length !== 1 || s.value.kind !== "call" || !KEEP_OF.has(s.value.op)) continue;
    const red = s.value, v = red.args[0];
    if (v.kind !== "var") continue;
    let i = j - 1;
    for (; i >= 0; i--) {
      const d = out[i];
      if (d.kind === "assign" && d.targets.some((t) => t.id === v.id)) break;
    }
    if (i < 0) continue;
    const def = out[i];
    if (def.kind !== "assign" || def.targets.length !== 1 || !isFusable(def.value) || hasValid(def.targets[0])) continue;
    let between = false;
    forEachExpr(out.slice(i + 1, j), (y) => { if (y.kind === "var" && y.id === v.id) between = true; });
    if (between) continue;
    const E = def.value as Call;
    const op = KEEP_OF.get(red.op)!;
    const call = mkCall(op, [E], {}, inferCall(getOp(op), [E], {}, red.span), red.span);
    const next = [...out.slice(0, i), ...out.slice(i + 1, j), mkAssign([def.targets[0] as Var, s.targets[0]], call, s.span), ...out.slice(j + 1)];
    // the reduction's scratch operand, now unread: drop its createTile
    const tmp = red.args[1];
    uses.set(v.id, (uses.get(v.id) ?? 0) - 1);
    if (tmp && tmp.kind === "var") {
      uses.set(tmp.id, (uses.get(tmp.id) ?? 0) - 1);
      if ((uses.get(tmp.id) ?? 0) === 0) {
        const at = next.findIndex((t) => t.kind === "assign" && t.targets.length === 1 && t.targets[0].id === tmp.id && t.value.kind === "call" && t.value.op === "tile.create");
        if (at >= 0) next.splice(at, 1);
      }
    }
    out = next;
    changed = true;
    j = -1; // positions moved: scan again
  }
  return changed ? out : null;
}

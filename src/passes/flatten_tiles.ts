// flatten: every tile value that must live in scratch gets its own variable. Elementwise tile
// ops may stay nested (codegen fuses a nested chain into one loop nest: the "fuse elementwise
// tile chains" stage); any other tile-producing op nested inside an expression (a load, a
// move, a createTile, ...) and every nested function call is hoisted into an assignment
// before the statement, so memory planning sees it and codegen can address it.
import { exprType, forEachExpr, mkAssign, mkVar, getOp, type Expr, type Func, type Stmt } from "../ir/index.js";
import type { Pass } from "./manager.js";

/** Elementwise tile ops: fusable into the expression that consumes them. */
export function isFusable(e: Expr): boolean {
  if (e.kind !== "call" || e.op === "call" || e.type.kind !== "tile") return false;
  const op = getOp(e.op);
  if (op.fusable === false) return false;
  return op.level === "tile" && op.pure && op.params.every((p) => p.kind !== "ints" && p.kind !== "mem" && p.kind !== "values") &&
    e.args.every((a) => a.kind === "const" || a.type.kind === "tile" || a.type.kind === "scalar");
}

export const flattenPass: Pass = {
  name: "FlattenTiles",
  run(p) {
    return p.withFunctions(p.functions.map((f) => Object.freeze({ ...f, body: Object.freeze(flattenBlock(f.body)) }) as Func));
  },
};

function flattenBlock(stmts: readonly Stmt[]): Stmt[] {
  const out: Stmt[] = [];
  for (const s of stmts) {
    const pre: Stmt[] = [];
    let n = 0;
    /** Hoist nested non-fusable tile calls / function calls out of `e` (not `e` itself). */
    const hoistArgs = (e: Expr): Expr => {
      if (e.kind !== "call" && e.kind !== "list") return e;
      const items = e.kind === "call" ? e.args : e.items;
      const next = items.map((a) => {
        const inner = hoistArgs(a);
        const needs = inner.kind === "call" && (inner.op === "call" ? inner.type.kind !== "void" : inner.type.kind === "tile" && !isFusable(inner));
        if (!needs) return inner;
        const v = mkVar(`${inner.op === "call" ? String(inner.attrs.callee) : inner.op.replace(/^\w+\./, "")}_t${n++}`, inner.type, inner.span);
        pre.push(mkAssign([v], inner, inner.span));
        return v;
      });
      if (next.every((x, i) => x === items[i])) return e;
      return e.kind === "call" ? Object.freeze({ ...e, args: Object.freeze(next) }) : Object.freeze({ ...e, items: Object.freeze(next) });
    };
    let ns: Stmt;
    switch (s.kind) {
      case "assign": ns = mkAssign(s.targets, hoistArgs(s.value), s.span); break;
      case "eval": ns = Object.freeze({ ...s, expr: hoistArgs(s.expr) }); break;
      case "for": ns = Object.freeze({ ...s, body: Object.freeze(flattenBlock(s.body)) }); break;
      case "while": ns = Object.freeze({ ...s, body: Object.freeze(flattenBlock(s.body)) }); break;
      case "if": ns = Object.freeze({ ...s, then: Object.freeze(flattenBlock(s.then)), else: Object.freeze(flattenBlock(s.else)) }); break;
      case "scope": ns = Object.freeze({ ...s, body: Object.freeze(flattenBlock(s.body)) }); break;
      default: {
        // yield/break/continue/return values: a tile value yielded must be materialized
        const vals = s.values.map((v) => {
          const h = hoistArgs(v);
          if (h.kind === "call" && (h.type.kind === "tile" || h.op === "call")) {
            const t = mkVar(`${h.op.replace(/^\w+\./, "")}_t${n++}`, h.type, h.span);
            pre.push(mkAssign([t], h, h.span));
            return t;
          }
          return h;
        });
        ns = Object.freeze({ ...s, values: Object.freeze(vals) }) as Stmt;
      }
    }
    out.push(...pre, ns);
  }
  return out;
}


/** Ops that copy a window of their tile operands as asked, pad included (docs/semantics.md, Partial tiles). */
const WINDOW_OPS = new Set(["tile.slice", "tile.concat", "tile.assemble", "tile.read"]);

/**
 * Whether an InCore function may read the pad of a partial tile: a window op (slice, concat,
 * assemble, read) of a tile with a validShape, or an elementwise op with a tile operand whose
 * validShape is another than its result's. On cpu such a kernel zeroes its scratch when it
 * starts (src/codegen/cpp/function.ts), so a pad read gives 0 or a value the same task wrote,
 * never another launch's data; other kernels never read the pad and pay nothing for it.
 */
export function readsPad(fn: Func): boolean {
  let found = false;
  const valid = (e: Expr): string | null => {
    const t = exprType(e);
    return t.kind === "tile" && t.validShape ? JSON.stringify(t.validShape) : null;
  };
  forEachExpr(fn.body, (e) => {
    if (found || e.kind !== "call" || e.op === "call") return;
    const tiles = e.args.filter((a) => exprType(a).kind === "tile");
    if (WINDOW_OPS.has(e.op)) found = tiles.some((a) => valid(a) !== null);
    else if (isFusable(e)) found = tiles.some((a) => valid(a) !== null && valid(a) !== valid(e));
  });
  return found;
}

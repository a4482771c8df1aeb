// Reductions of 2-D tiles: rowSum/rowMax/rowMin (the last axis -> [M, 1]) and
// colSum/colMax/colMin (the first axis -> [1, N]).
//
// Numerics (the cpu code generator follows them exactly):
// - float sums accumulate in fp64 and are rounded once to the tile's dtype. Along a row the
//   sum is kept in REDUCE_LANES (8) interleaved partial sums (element j goes to lane j % 8),
//   combined as ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)) — the order a vectorized loop uses; down
//   a column the rows are added in order.
// - integer sums accumulate in int64 and saturate to the dtype.
// - max/min are exact (order-free); NaN propagates, max(-0, 0) = 0, min(-0, 0) = -0.
// - Only the valid region is reduced (the pad holds no value: docs/semantics.md, Partial tiles):
//   a row reduction reduces the valid columns of each valid row, a column reduction the valid
//   rows of each valid column; the result's validShape keeps the input's valid rows (row
//   reductions) or columns (column reductions), and its pad is not computed. Nothing to reduce
//   (a valid extent of 0) gives the identity: sum 0, product 1, max -inf (integers: the dtype's
//   lowest), min +inf (the dtype's highest), an arg-reduction index 0.
// Row reductions take a scratch tile of the input's shape and dtype (PyPTO's contract); the
// cpu platform does not need it, but a missing one is an error.
import { registerOp, type InferCtx, type OpRow } from "../registry.js";
import { DTYPE_CONST, dimsEqual, isFloat, tileT, tupleT, typeStr, type DType, type TileType } from "../types.js";
import { mkTile, toDType, type TileValue } from "../values.js";
import { BINARY } from "./elementwise.js";
import { argName, dtypeHighest, dtypeLowest, expect2D, perOperandElement } from "./common.js";

export const REDUCE_LANES = 8;
export type ReduceKind = "sum" | "max" | "min";

const maxFn = BINARY.maximum.fn, minFn = BINARY.minimum.fn;
/** Combine two partial results of a reduction. */
function reduceOp(kind: ReduceKind, a: number, b: number, d: DType): number {
  return kind === "sum" ? a + b : kind === "max" ? maxFn(a, b, d) : minFn(a, b, d);
}

/** The value of a reduction of nothing. */
function identity(kind: ReduceKind, d: DType): number {
  if (kind === "sum") return 0;
  if (kind === "max") return isFloat(d) ? -Infinity : dtypeLowest(d);
  return isFloat(d) ? Infinity : dtypeHighest(d);
}
/** The valid extents [rows, cols] of a 2-D tile value (its shape where it has no validShape). */
export function validRC(x: TileValue): [number, number] {
  const v = x.validShape;
  return v ? [v[0], v[1]] : [x.shape[0], x.shape[1]];
}

/** Reduce `n` values (get(j)) the way a row reduction does (lanes for sums). */
function reduceRow(kind: ReduceKind, n: number, get: (j: number) => number, d: DType): number {
  if (kind !== "sum") {
    if (n === 0) return identity(kind, d);
    let acc = get(0);
    for (let j = 1; j < n; j++) acc = reduceOp(kind, acc, get(j), d);
    return acc;
  }
  if (!isFloat(d)) {
    let acc = 0;
    for (let j = 0; j < n; j++) acc += get(j);
    return acc;
  }
  const l = new Array<number>(REDUCE_LANES).fill(0);
  for (let j = 0; j < n; j++) l[j % REDUCE_LANES] += get(j);
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/** Reduce `n` values in order (column reductions). */
function reduceCol(kind: ReduceKind, n: number, get: (i: number) => number, d: DType): number {
  if (n === 0) return identity(kind, d);
  let acc = kind === "sum" ? 0 : get(0);
  for (let i = kind === "sum" ? 0 : 1; i < n; i++) acc = reduceOp(kind, acc, get(i), d);
  return acc;
}

export const REDUCTIONS: Record<string, { axis: "row" | "col"; kind: ReduceKind }> = {
  rowSum: { axis: "row", kind: "sum" }, rowMax: { axis: "row", kind: "max" }, rowMin: { axis: "row", kind: "min" },
  colSum: { axis: "col", kind: "sum" }, colMax: { axis: "col", kind: "max" }, colMin: { axis: "col", kind: "min" },
};

function inferReduction(ctx: InferCtx, name: string, axis: "row" | "col"): TileType {
  const x = expect2D(ctx, 0, `the operand of ${name}`);
  if (x.dtype === "bool") ctx.fail(`cannot reduce a bool tile`, `cast it first: pl.cast(x, "int32")`);
  const [m, n] = x.shape;
  if (ctx.args.length < 2) {
    if (axis === "row") {
      ctx.fail(`needs a scratch tile of the input's shape ${JSON.stringify(x.shape)} as its second operand (PyPTO's contract)`,
        `const tmp = pl.createTile([${m}, ${n}], pl.${DTYPE_CONST[x.dtype]}); pl.${name}(${argName(ctx.args[0])}, tmp)`);
    }
  } else {
    const tmp = ctx.argTypes[1];
    if (tmp.kind !== "tile" || !dimsEqual(tmp.shape, x.shape) || tmp.dtype !== x.dtype) {
      ctx.fail(`the scratch tile must be a tile of the input's shape and dtype (Tile<${JSON.stringify(x.shape)}, ${x.dtype}>), got ${typeStr(tmp)}`,
        `create it with pl.createTile([${m}, ${n}], "${x.dtype}")`);
    }
  }
  const v = x.validShape;
  return axis === "row"
    ? tileT([m, 1], x.dtype, x.mem, v ? [v[0], 1] : null)
    : tileT([1, n], x.dtype, x.mem, v ? [1, v[1]] : null);
}

const REDUCE_ROWS: Record<"row" | "col", OpRow> = {
  row: { key: "rowReduce", call: "rowSum rowMax rowMin (x[M,N], tmp[M,N])", does: "→ `[M,1]`; `tmp` is a scratch tile of x's shape (PyPTO's contract; tensors take none); float sums accumulate in fp64; a tile with a validShape: its valid columns of each valid row (nothing: the identity)" },
  col: { key: "colReduce", call: "colSum colMax colMin (x[M,N], tmp?)", does: "→ `[1,N]`; float sums in fp64, rows in order; the valid rows of each valid column" },
};
const reduceDecl = (scratch: "required" | "optional"): string[] => [
  `<D extends DType>(x: AnyTile<D>, tmp${scratch === "optional" ? "?" : ""}: AnyTile): AnyTile<D>`,
  "<D extends DType>(x: Tensor<any, D>): Tensor<any, D>",
];

for (const [name, { axis, kind }] of Object.entries(REDUCTIONS)) {
  const what = kind === "sum" ? "sum" : kind === "max" ? "maximum" : "minimum";
  registerOp({
    name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: perOperandElement(0),
    decl: reduceDecl(axis === "row" ? "required" : "optional"), row: REDUCE_ROWS[axis],
    doc: axis === "row"
      ? `${name}(x[M,N], tmp[M,N]) -> [M,1]: the ${what} of each row (tmp: a scratch tile of x's shape${kind === "sum" ? "; float sums in fp64, 8 lanes" : ""})`
      : `${name}(x[M,N], tmp?) -> [1,N]: the ${what} of each column${kind === "sum" ? " (float sums in fp64, rows in order)" : ""}`,
    params: [{ name: "x", kind: "value" }, { name: "tmp", kind: "value", optional: true }],
    infer: (ctx) => inferReduction(ctx, name, axis),
    evaluate([xv], _attrs, _env, call) {
      const x = xv as TileValue;
      const t = call.type as TileType;
      const n = x.shape[1], [vm, vn] = validRC(x);
      const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
      if (axis === "row") {
        for (let r = 0; r < vm; r++) out.data[r] = toDType(reduceRow(kind, vn, (j) => x.data[r * n + j], x.dtype), t.dtype);
      } else {
        for (let c = 0; c < vn; c++) out.data[c] = toDType(reduceCol(kind, vm, (i) => x.data[i * n + c], x.dtype), t.dtype);
      }
      return out;
    },
  });
}

// ------------------------------------------------------------------ kept row reductions
// rowSumKeep(x) -> [x, rowSum(x)]: the tile itself and its row sums, with rowSum's numerics. The FuseRowReductions pass
// (src/passes/fuse_row_reductions.ts) makes one of `e = <elementwise>; s = rowSum(e, tmp)`
// when e is used again: code generation then computes each element of e once, writes it
// and adds it to the row's lanes in the same loop (one pass over the row instead of two).
export const ROW_KEEP: Record<string, ReduceKind> = { rowSumKeep: "sum" };
const KEEP_ROW: OpRow = { key: "rowReduceKeep", call: "rowSumKeep(x[M,N])", does: "→ `[x, rowSum(x)]`: the tile and its `[M,1]` row sums (as `rowSum`), one loop computing, keeping and summing x; made by the FuseRowReductions pass" };
for (const [name, kind] of Object.entries(ROW_KEEP)) {
  const base = name.slice(0, -4);
  registerOp({
    name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: perOperandElement(0), row: KEEP_ROW,
    decl: ["<D extends DType>(x: AnyTile<D>): [AnyTile<D>, AnyTile<D>]"],
    doc: `${name}(x[M,N]) -> [x, ${base}(x)]: the tile and the sum of each row (as ${base}), in one pass`,
    params: [{ name: "x", kind: "value" }],
    infer: (ctx) => {
      const x = expect2D(ctx, 0, `the operand of ${name}`);
      if (x.dtype === "bool") ctx.fail(`cannot reduce a bool tile`, `cast it first: pl.cast(x, "int32")`);
      const v = x.validShape;
      return tupleT([x, tileT([x.shape[0], 1], x.dtype, x.mem, v ? [v[0], 1] : null)]);
    },
    evaluate([xv], _attrs, _env, call) {
      const x = xv as TileValue;
      const t = (call.type as { elems: readonly TileType[] }).elems[1];
      const n = x.shape[1], [vm, vn] = validRC(x);
      const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
      for (let r = 0; r < vm; r++) out.data[r] = toDType(reduceRow(kind, vn, (j) => x.data[r * n + j], x.dtype), t.dtype);
      return [x, out];
    },
  });
}

// ------------------------------------------------------------------ products and arg-reductions
// rowProd / colProd: the product along the axis, in order (float: fp64 products rounded once;
// integers: int64 with saturation at every step, then saturated to the dtype).
// rowArgmax rowArgmin colArgmax colArgmin: the index (int32) of the first maximum / minimum
// along the axis; a NaN counts as larger (argmax) / smaller (argmin) than every number, so the
// first NaN wins, as in NumPy.
const I64_MAX = 9223372036854775807n, I64_MIN = -9223372036854775808n;
/** One step of an integer product, saturated to int64 (the cpu formula's tspto_mul_sat). */
function prodStep(acc: number, x: number): number {
  const v = BigInt(Math.trunc(acc)) * BigInt(Math.trunc(x));
  return Number(v > I64_MAX ? I64_MAX : v < I64_MIN ? I64_MIN : v);
}
export const PROD_REDUCTIONS: Record<string, "row" | "col"> = { rowProd: "row", colProd: "col" };
export const ARG_REDUCTIONS: Record<string, { axis: "row" | "col"; kind: "max" | "min" }> = {
  rowArgmax: { axis: "row", kind: "max" }, rowArgmin: { axis: "row", kind: "min" },
  colArgmax: { axis: "col", kind: "max" }, colArgmin: { axis: "col", kind: "min" },
};
/** Whether x beats the best so far (strictly: the first extreme wins), NaN the most extreme. */
function argBetter(kind: "max" | "min", x: number, best: number): boolean {
  if (Number.isNaN(best)) return false;
  if (Number.isNaN(x)) return true;
  return kind === "max" ? x > best : x < best;
}

function inferOptScratch(ctx: InferCtx, name: string, axis: "row" | "col", out: "same" | "int32"): TileType {
  const x = expect2D(ctx, 0, `the operand of ${name}`);
  if (x.dtype === "bool") ctx.fail(`cannot reduce a bool tile`, `cast it first: pl.cast(x, "int32")`);
  if (ctx.args.length > 1) {
    const tmp = ctx.argTypes[1];
    if (tmp.kind !== "tile" || !dimsEqual(tmp.shape, x.shape) || tmp.dtype !== x.dtype) {
      ctx.fail(`the scratch tile must be a tile of the input's shape and dtype (Tile<${JSON.stringify(x.shape)}, ${x.dtype}>), got ${typeStr(tmp)}`);
    }
  }
  const [m, n] = x.shape, v = x.validShape;
  const d = out === "int32" ? "int32" : x.dtype;
  return axis === "row" ? tileT([m, 1], d, x.mem, v ? [v[0], 1] : null) : tileT([1, n], d, x.mem, v ? [1, v[1]] : null);
}

/** Visit the valid lines (rows or columns) of an [m, n] tile: fn(line, get(j), count of valid elements). */
function lines(x: TileValue, axis: "row" | "col", fn: (line: number, get: (j: number) => number, count: number) => void): void {
  const n = x.shape[1], [vm, vn] = validRC(x);
  if (axis === "row") for (let r = 0; r < vm; r++) fn(r, (j) => x.data[r * n + j], vn);
  else for (let c = 0; c < vn; c++) fn(c, (i) => x.data[i * n + c], vm);
}

const PROD_ROW: OpRow = { key: "prod", call: "rowProd colProd (x[M,N], tmp?)", does: "→ `[M,1]` / `[1,N]`: the product along the axis, in order (float: fp64, rounded once; integers saturate)" };
for (const [name, axis] of Object.entries(PROD_REDUCTIONS)) {
  registerOp({
    name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: perOperandElement(0),
    decl: reduceDecl("optional"), row: PROD_ROW,
    doc: `${name}(x[M,N], tmp?) -> ${axis === "row" ? "[M,1]" : "[1,N]"}: the product of each ${axis === "row" ? "row" : "column"}`,
    params: [{ name: "x", kind: "value" }, { name: "tmp", kind: "value", optional: true }],
    infer: (ctx) => inferOptScratch(ctx, name, axis, "same"),
    evaluate([xv], _attrs, _env, call) {
      const x = xv as TileValue, t = call.type as TileType;
      const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
      const float = isFloat(x.dtype);
      lines(x, axis, (l, get, cnt) => {
        let acc = 1;
        for (let j = 0; j < cnt; j++) acc = float ? acc * get(j) : prodStep(acc, get(j));
        out.data[l] = toDType(acc, t.dtype);
      });
      return out;
    },
  });
}

const ARG_ROW: OpRow = { key: "arg", call: "rowArgmax rowArgmin colArgmax colArgmin (x[M,N], tmp?)", does: "→ `int32` `[M,1]` / `[1,N]`: the index of the first maximum / minimum along the axis (a NaN is the extreme, the first NaN wins)" };
for (const [name, { axis, kind }] of Object.entries(ARG_REDUCTIONS)) {
  registerOp({
    name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: perOperandElement(0), row: ARG_ROW,
    decl: ["(x: AnyTile, tmp?: AnyTile): AnyTile<INT32>", "(x: Tensor): Tensor<any, INT32>"],
    doc: `${name}(x[M,N], tmp?) -> int32 ${axis === "row" ? "[M,1]" : "[1,N]"}: the index of the first ${kind === "max" ? "maximum" : "minimum"} of each ${axis === "row" ? "row" : "column"}`,
    params: [{ name: "x", kind: "value" }, { name: "tmp", kind: "value", optional: true }],
    infer: (ctx) => inferOptScratch(ctx, name, axis, "int32"),
    evaluate([xv], _attrs, _env, call) {
      const x = xv as TileValue, t = call.type as TileType;
      const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
      lines(x, axis, (l, get, cnt) => {
        let bi = 0, best = cnt > 0 ? get(0) : 0;
        for (let j = 1; j < cnt; j++) if (argBetter(kind, get(j), best)) { best = get(j); bi = j; }
        out.data[l] = bi;
      });
      return out;
    },
  });
}

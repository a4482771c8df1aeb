// Broadcasts of a row or column vector over a 2-D tile:
//   rowExpand<Op>(t[M,N], v[M,1]): out[r][c] = t[r][c] <op> v[r]      (Op: Add, Sub, Mul, Div)
//   colExpand<Op>(t[M,N], v[1,N]): out[r][c] = t[r][c] <op> v[c]
//   rowExpand(target[M,N], v[M,1]) / colExpand(target[M,N], v[1,N]): v broadcast to the
//   target's shape (the target's values are unused; its shape, memory and validShape are kept).
// Arithmetic is that of the binary elementwise op of the same name (the result rounded to the
// dtype).
import { NO_COST, getOp, registerOp, type InferCtx, type OpDef, type OpRow } from "../registry.js";
import { isFloat, tileT, typeStr, type TensorType, type TileType, type Type } from "../types.js";
import { mkTile, readElem, toDType, writeElem, type TensorValue, type TileValue, type Value } from "../values.js";
import { newTensor } from "./elementwise.js";
import { BINARY } from "./elementwise.js";
import { argName, expect2D, expectKind, perResultElement } from "./common.js";

export const EXPAND_OPS: Record<string, keyof typeof BINARY> = { Add: "add", Sub: "sub", Mul: "mul", Div: "div", Max: "maximum", Min: "minimum" };

function inferExpand(ctx: InferCtx, name: string, axis: "row" | "col"): TileType {
  const t = expect2D(ctx, 0, `the first operand of ${name}`);
  const v = expect2D(ctx, 1, `the vector operand of ${name}`);
  const [m, n] = t.shape;
  const want = axis === "row" ? [m, 1] : [1, n];
  if (v.shape[0] !== want[0] || v.shape[1] !== want[1]) {
    ctx.fail(`the vector '${ctx.args[1]?.kind === "var" ? argName(ctx.args[1]) : ctx.op.params[1].name}' must have shape [${want.join(", ")}] to broadcast along the ${axis === "row" ? "rows" : "columns"} of ${typeStr(t)}, got ${typeStr(v)}`,
      axis === "row" ? "row broadcasts take a [M, 1] tile (e.g. a rowSum result); use colExpand* for a [1, N] one" : "column broadcasts take a [1, N] tile; use rowExpand* for a [M, 1] one");
  }
  if (v.dtype !== t.dtype) ctx.fail(`dtypes differ: ${t.dtype} and ${v.dtype}`, `cast one operand first, e.g. pl.cast(v, "${t.dtype}")`);
  return tileT(t.shape, t.dtype, t.mem, t.validShape);
}

/** Reference semantics of a broadcast: out[r][c] = f(t[r][c], v[row ? r : c]). */
function expandEval(axis: "row" | "col", f: (x: number, y: number, dtype: TileType["dtype"]) => number) {
  return ([tv, vv]: readonly Value[], _attrs: unknown, _env: unknown, call: { readonly type: Type }): Value => {
    const t = tv as TileValue, v = vv as TileValue;
    const type = call.type as TileType;
    const [m, n] = t.shape;
    const out = mkTile(type.shape, type.dtype, type.mem, type.validShape as number[] | null);
    for (let r = 0; r < m; r++) for (let c = 0; c < n; c++) out.data[r * n + c] = f(t.data[r * n + c], v.data[axis === "row" ? r : c], type.dtype);
    return out;
  };
}

const EXPAND_ROWS: Record<"row" | "col", OpRow> = {
  row: { key: "rowExpandOp", call: "rowExpandAdd rowExpandSub rowExpandMul rowExpandDiv rowExpandMax rowExpandMin rowExpandExpdif (t[M,N], v[M,1])", does: "`t op v`, v broadcast along each row (`Expdif`: `exp(t - v)`)" },
  col: { key: "colExpandOp", call: "colExpandAdd colExpandSub colExpandMul colExpandDiv colExpandMax colExpandMin colExpandExpdif (t[M,N], v[1,N])", does: "`t op v`, v broadcast down each column (`Expdif`: `exp(t - v)`)" },
};
const EXPAND_DECL = ["<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D>", "<T extends Tensor>(t: T, v: Tensor): T"];
/** exp(t - v): the difference rounded to the dtype, then its exponential rounded (the softmax step). */
const expdif = (x: number, y: number, d: TileType["dtype"]) => toDType(Math.exp(toDType(x - y, d)), d);

for (const axis of ["row", "col"] as const) {
  registerOp({
    name: `tile.${axis}ExpandExpdif`, pl: `${axis}ExpandExpdif`, level: "tile", pure: true, fusable: false, cost: perResultElement(2), // a subtraction and an exp
    decl: EXPAND_DECL, row: EXPAND_ROWS[axis],
    doc: `${axis}ExpandExpdif(t[M,N], v[${axis === "row" ? "M,1" : "1,N"}]): exp(t - v), v broadcast ${axis === "row" ? "along each row" : "down each column"} (float dtypes)`,
    params: [{ name: "t", kind: "value" }, { name: "v", kind: "value" }],
    infer: (ctx) => {
      const t = inferExpand(ctx, `${axis}ExpandExpdif`, axis);
      if (!isFloat(t.dtype)) ctx.fail(`needs a floating-point operand, got ${t.dtype}`, `cast first: pl.cast(x, "float32")`);
      return t;
    },
    evaluate: expandEval(axis, expdif),
  });
  for (const [suffix, bin] of Object.entries(EXPAND_OPS)) {
    const name = `${axis}Expand${suffix}`;
    const fn = BINARY[bin].fn;
    registerOp({
      decl: EXPAND_DECL, row: EXPAND_ROWS[axis],
      name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: perResultElement(1),
      doc: axis === "row"
        ? `${name}(t[M,N], v[M,1]): t ${BINARY[bin].doc.replace(/^a | b.*$/g, "")} v broadcast along each row`
        : `${name}(t[M,N], v[1,N]): t ${BINARY[bin].doc.replace(/^a | b.*$/g, "")} v broadcast down each column`,
      params: [{ name: "t", kind: "value" }, { name: "v", kind: "value" }],
      infer: (ctx) => inferExpand(ctx, name, axis),
      evaluate: expandEval(axis, (x, y, d) => toDType(fn(x, y, d), d)),
    });
  }
  const name = `${axis}Expand`;
  registerOp({
    name: `tile.${name}`, pl: name, level: "tile", pure: true, fusable: false, cost: NO_COST, // a broadcast copy
    decl: ["<D extends DType>(target: AnyTile, v: AnyTile<D>): AnyTile<D>", "<T extends Tensor>(target: T, v: Tensor): T"],
    row: { key: "expand", call: "rowExpand(target, v[M,1])` / `colExpand(target, v[1,N])", does: "v broadcast to the target's shape (target values unused)" },
    doc: `${name}(target[M,N], v[${axis === "row" ? "M,1" : "1,N"}]): v broadcast to the target's shape (target values unused)`,
    params: [{ name: "target", kind: "value" }, { name: "v", kind: "value" }],
    infer: (ctx) => inferExpand(ctx, name, axis),
    evaluate: expandEval(axis, (_x, y) => y),
  });
}

// prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope[r], the slope broadcast along each row.
registerOp({
  name: "tile.prelu", pl: "prelu", level: "tile", pure: true, fusable: false, cost: perResultElement(1),
  decl: EXPAND_DECL.map((d) => d.replace("(t:", "(x:").replace("v:", "slope:")),
  row: { key: "prelu", call: "prelu(x[M,N], slope[M,1])", does: "parametric relu `x > 0 ? x : x * slope`, the slope broadcast along each row like `rowExpand*` (float dtypes)" },
  doc: "prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope, the slope broadcast along each row",
  params: [{ name: "x", kind: "value" }, { name: "slope", kind: "value" }],
  infer: (ctx) => {
    const t = inferExpand(ctx, "prelu", "row");
    if (!isFloat(t.dtype)) ctx.fail(`needs a floating-point operand, got ${t.dtype}`, `cast first: pl.cast(x, "float32")`);
    return t;
  },
  evaluate: expandEval("row", (x, s, d) => toDType(x > 0 ? x : x * s, d)),
});

// ------------------------------------------------------------------ tensor-level forms
// On tensors (inside pl.at) a row/column broadcast is the elementwise op with NumPy
// broadcasting: rowExpandAdd(t[M,N], v[M,1]) is add(t, v); prelu(x, slope[M,1]) is
// lrelu(x, slope). tensor-to-tile lowers them to that tile op (the registry's tileOp).
function tensorExpand(name: string, axis: "row" | "col", tileOp: string, tileExpr?: OpDef["tileExpr"]): void {
  const ew = tileExpr ? null : getOp(`tensor.${tileOp.slice("tile.".length)}`);
  registerOp({
    name: `tensor.${name}`, pl: name, level: "tensor", pure: true, tileOp, tileExpr,
    doc: `${name}(t[M,N], v[${axis === "row" ? "M,1" : "1,N"}]) on tensors: ${tileOp.slice(5)}(t, v) with v broadcast (inside pl.at)`,
    params: [{ name: "t", kind: "value" }, { name: "v", kind: "value" }],
    infer(ctx) {
      const t = expectKind(ctx, 0, ["tensor"], `the first operand of ${name}`);
      const v = expectKind(ctx, 1, ["tensor"], `the vector operand of ${name}`);
      if (t.shape.length !== 2 || v.shape.length !== 2) ctx.fail(`needs 2-D tensors, got ${typeStr(t)} and ${typeStr(v)}`);
      const want = axis === "row" ? [t.shape[0], 1] : [1, t.shape[1]];
      if (v.shape[0] !== want[0] || v.shape[1] !== want[1]) {
        ctx.fail(`the vector '${ctx.args[1]?.kind === "var" ? argName(ctx.args[1]) : "v"}' must have shape [${want.join(", ")}] to broadcast along the ${axis === "row" ? "rows" : "columns"} of ${typeStr(t)}, got ${typeStr(v)}`);
      }
      if (v.dtype !== t.dtype) ctx.fail(`dtypes differ: ${t.dtype} and ${v.dtype}`, `cast one operand first, e.g. pl.cast(v, "${t.dtype}")`);
      if (name === "prelu" && !isFloat(t.dtype)) ctx.fail(`needs a floating-point operand, got ${t.dtype}`, `cast first: pl.cast(x, "float32")`);
      return t;
    },
    effects: () => ({ reads: [0, 1], writes: [] }),
    evaluate: (args, attrs, env, call) => {
      if (ew) return ew.evaluate(args, attrs, env, call);
      // exp(t - v): the tile form's reference on the whole tensors
      const t = args[0] as TensorValue, v = args[1] as TensorValue;
      const type = call.type as TensorType;
      const [m, n] = t.shape;
      const out = newTensor(t.shape, type.dtype);
      for (let r = 0; r < m; r++) for (let c = 0; c < n; c++) writeElem(out, r * n + c, expdif(readElem(t, r * n + c), readElem(v, axis === "row" ? r : c), type.dtype));
      return out;
    },
  });
}
for (const axis of ["row", "col"] as const) {
  for (const [suffix, bin] of Object.entries(EXPAND_OPS)) tensorExpand(`${axis}Expand${suffix}`, axis, `tile.${bin}`);
}
tensorExpand("prelu", "row", "tile.lrelu");
for (const axis of ["row", "col"] as const) {
  tensorExpand(`${axis}ExpandExpdif`, axis, "tile.exp", (args, _attrs, build) => build("tile.exp", [build("tile.sub", args)]));
  // rowExpand(target, v) / colExpand(target, v): v broadcast to the target (expands with a broadcast operand)
  tensorExpand(`${axis}Expand`, axis, "tile.expands");
}

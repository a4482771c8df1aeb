// Tensor-level forms of the reductions and of matmul (inside pl.at; lowered to tiles by
// tensor-to-tile, no scratch argument): pl.rowSum(t) -> [M,1], pl.colArgmax(t) -> int32 [1,N],
// pl.matmul(a, b, opts) -> [M,N] (K accumulated tile by tile with matmulAcc, in k order, so the
// result equals the tile-level matmul of the whole operands). The reference semantics run the
// tile op on the whole tensor.
// Also broadcastTo(x, shape, { validShape? }): stretches the dims of 1 of a tile (what
// tensor-to-tile uses for broadcast operands of elementwise expressions) or of a tensor; and
// batchMatmul(a[B,M,K], b[B,K,N]) on tensors (per batch, as matmul).
import { NO_COST, registerOp, type InferCtx, type OpDef } from "../registry.js";
import { tensorT, tileT, typeStr, type Dim, type DType, type TensorType, type TileType } from "../types.js";
import { mkTile, readElem, writeElem, type TensorValue, type TileValue, type Value } from "../values.js";
import { newTensor } from "./elementwise.js";
import { ARG_REDUCTIONS, PROD_REDUCTIONS, REDUCTIONS } from "./reduce.js";
import { matmulAccDType, matmulOperandsAgree } from "./matmul.js";
import { argName, expectBroadcastable, expectDType, expectKind, expectShape, stridesOf, forWindow, dot, staticDims, validShapeOption } from "./common.js";
import { getOp } from "../registry.js";

const toTile = (t: TensorValue): TileValue =>
  mkTile(t.shape, t.dtype, "Vec", null, Float64Array.from({ length: t.data.length }, (_, i) => readElem(t, i)));
function toTensor(t: TileValue, dtype: DType): TensorValue {
  const out = newTensor(t.shape, dtype);
  for (let i = 0; i < t.data.length; i++) writeElem(out, i, t.data[i]);
  return out;
}

function expect2DTensor(ctx: InferCtx, i: number, what: string): TensorType {
  const t = expectKind(ctx, i, ["tensor"], what);
  if (t.shape.length !== 2) ctx.fail(`${what} must be a 2-D tensor, got ${typeStr(t)}`);
  return t;
}

/**
 * Run a tile op's reference semantics on whole tensors. `shapeOf` gives the result's shape
 * from the arguments' run-time shapes (the type's shape may hold dynamic dimensions).
 */
function viaTile(tileName: string, shapeOf: (args: readonly TensorValue[], attrs: Parameters<OpDef["evaluate"]>[1]) => number[]) {
  return (args: readonly Value[], attrs: Parameters<OpDef["evaluate"]>[1], env: Parameters<OpDef["evaluate"]>[2], call: Parameters<OpDef["evaluate"]>[3]): Value => {
    const t = call.type as TensorType;
    const tiles = args.map((a) => (typeof a === "object" && a !== null && (a as TensorValue).kind === "tensor" ? toTile(a as TensorValue) : a));
    const tileType = tileT(shapeOf(args as TensorValue[], attrs), t.dtype, "Acc");
    const r = getOp(tileName).evaluate(tiles, attrs, env, { type: tileType, span: call.span }) as TileValue;
    return toTensor(r, t.dtype);
  };
}

const reads = (args: readonly { kind: string; type?: { kind: string } }[]) => ({ reads: args.map((a, i) => (a.kind !== "const" && a.type?.kind === "tensor" ? i : -1)).filter((i) => i >= 0), writes: [] });

for (const [name, axis] of [
  ...Object.entries(REDUCTIONS).map(([n, r]) => [n, r.axis] as const),
  ...Object.entries(PROD_REDUCTIONS),
  ...Object.entries(ARG_REDUCTIONS).map(([n, r]) => [n, r.axis] as const),
]) {
  const isArg = name in ARG_REDUCTIONS;
  registerOp({
    name: `tensor.${name}`, pl: name, level: "tensor", pure: true,
    doc: `${name}(t[M,N]) on a tensor -> ${axis === "row" ? "[M,1]" : "[1,N]"} (inside pl.at; lowered to tiles, the reduced axis whole in each tile)`,
    params: [{ name: "x", kind: "value" }],
    infer(ctx) {
      const x = expect2DTensor(ctx, 0, `the operand of ${name}`);
      if (x.dtype === "bool") ctx.fail("cannot reduce a bool tensor", `cast it first: pl.cast(x, "int32")`);
      const [m, n] = x.shape;
      return tensorT(axis === "row" ? [m, 1] : [1, n], isArg ? "int32" : x.dtype);
    },
    effects: (args) => reads(args as never),
    evaluate: (args, attrs, env, call) => {
      // the tile ops of row reductions take a scratch operand: pass the input again
      const extra = name in REDUCTIONS && axis === "row" ? [args[0]] : [];
      return viaTile(`tile.${name}`, ([x]) => (axis === "row" ? [x.shape[0], 1] : [1, x.shape[1]]))([...args, ...extra], attrs, env, call);
    },
  });
}

/** The run-time [M, N] of a @ b with the transpose flags. */
const matmulShape = (a: TensorValue, b: TensorValue, attrs: Parameters<OpDef["evaluate"]>[1]): number[] =>
  [attrs.aTrans === true ? a.shape[1] : a.shape[0], attrs.bTrans === true ? b.shape[0] : b.shape[1]];

/** Shapes of a tensor matmul's operands a (at ai), b (at ai + 1) with the transpose flags: [M, N, dtype]. */
function inferMatmulTensors(ctx: InferCtx, ai: number, name: string): { m: Dim; n: Dim; acc: DType } {
  const a0 = expect2DTensor(ctx, ai, `the left operand of ${name}`), b0 = expect2DTensor(ctx, ai + 1, `the right operand of ${name}`);
  const a = ctx.attrs.aTrans === true ? [a0.shape[1], a0.shape[0]] : a0.shape;
  const b = ctx.attrs.bTrans === true ? [b0.shape[1], b0.shape[0]] : b0.shape;
  if (a0.dtype === "bool" || a0.dtype === "int64") ctx.fail(`cannot multiply ${a0.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
  if (!matmulOperandsAgree(a0.dtype, b0.dtype)) ctx.fail(`operand dtypes differ: ${a0.dtype} and ${b0.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[ai + 1])}, "${a0.dtype}")`);
  if (a[1] !== b[0]) {
    ctx.fail(`inner dimensions differ: '${argName(ctx.args[ai])}' is ${typeStr(a0)} (K = ${a[1]}) but '${argName(ctx.args[ai + 1])}' is ${typeStr(b0)} (K = ${b[0]})`,
      "a[M, K] @ b[K, N] needs a's column count to equal b's row count");
  }
  return { m: a[0], n: b[1], acc: matmulAccDType(a0.dtype) };
}

registerOp({
  name: "tensor.matmulAcc", pl: "matmulAcc", level: "tensor", pure: true,
  doc: "matmulAcc(acc[M,N], a, b, { aTrans?, bTrans? }) on tensors: acc + a @ b (inside pl.at; auto-tiled, K accumulated onto acc's tiles in k order)",
  params: [{ name: "acc", kind: "value" }, { name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { aTrans: "bool", bTrans: "bool" } }],
  infer(ctx) {
    const acc = expect2DTensor(ctx, 0, "the accumulator of matmulAcc");
    const { m, n, acc: d } = inferMatmulTensors(ctx, 1, "matmulAcc");
    if (acc.shape[0] !== m || acc.shape[1] !== n || acc.dtype !== d) ctx.fail(`the accumulator '${argName(ctx.args[0])}' must be a [${m}, ${n}] ${d} tensor, got ${typeStr(acc)}`);
    return tensorT([m, n], d);
  },
  effects: (args) => reads(args as never),
  evaluate: viaTile("tile.matmulAcc", ([acc]) => [...acc.shape]),
});

registerOp({
  name: "tensor.matmulBias", pl: "matmulBias", level: "tensor", pure: true,
  doc: "matmulBias(a, b, bias[1,N]) on tensors: a @ b + bias (inside pl.at; auto-tiled)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "bias", kind: "value" }],
  infer(ctx) {
    const { m, n, acc } = inferMatmulTensors(ctx, 0, "matmulBias");
    const bias = expect2DTensor(ctx, 2, "the bias of matmulBias");
    if (bias.shape[0] !== 1 || bias.shape[1] !== n || bias.dtype !== acc) ctx.fail(`the bias '${argName(ctx.args[2])}' must be a [1, ${n}] ${acc} tensor, got ${typeStr(bias)}`, `cast it first: pl.cast(bias, "${acc}")`);
    return tensorT([m, n], acc);
  },
  effects: (args) => reads(args as never),
  evaluate: viaTile("tile.matmulBias", (args, attrs) => matmulShape(args[0], args[1], attrs)),
});

registerOp({
  name: "tensor.matmul", pl: "matmul", level: "tensor", pure: true,
  doc: "matmul(a[M,K], b[K,N], { aTrans?, bTrans?, outDtype? }) on tensors -> [M,N] (inside pl.at; auto-tiled, K accumulated tile by tile in k order)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { aTrans: "bool", bTrans: "bool", outDtype: "dtype" } }],
  infer(ctx) {
    const a0 = expect2DTensor(ctx, 0, "the left operand of matmul"), b0 = expect2DTensor(ctx, 1, "the right operand of matmul");
    const a = ctx.attrs.aTrans === true ? [a0.shape[1], a0.shape[0]] : a0.shape;
    const b = ctx.attrs.bTrans === true ? [b0.shape[1], b0.shape[0]] : b0.shape;
    if (a0.dtype === "bool" || a0.dtype === "int64") ctx.fail(`cannot multiply ${a0.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
    if (!matmulOperandsAgree(a0.dtype, b0.dtype)) ctx.fail(`operand dtypes differ: ${a0.dtype} and ${b0.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[1])}, "${a0.dtype}")`);
    if (a[1] !== b[0]) {
      ctx.fail(`inner dimensions differ: '${argName(ctx.args[0])}' is ${typeStr(a0)} (K = ${a[1]}) but '${argName(ctx.args[1])}' is ${typeStr(b0)} (K = ${b[0]})`,
        "a[M, K] @ b[K, N] needs a's column count to equal b's row count");
    }
    const out = ctx.attrs.outDtype == null ? matmulAccDType(a0.dtype) : expectDType(ctx, "outDtype", ctx.attrs.outDtype);
    return tensorT([a[0], b[1]], out);
  },
  effects: (args) => reads(args as never),
  evaluate: viaTile("tile.matmul", (args, attrs) => matmulShape(args[0], args[1], attrs)),
});

registerOp({
  name: "tile.broadcastTo", pl: "broadcastTo", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: [
    "<D extends DType>(x: AnyTile<D>, shape: readonly number[], opts?: { readonly validShape?: readonly (number | Scalar<any>)[] }): AnyTile<D>",
    "<D extends DType>(x: Tensor<any, D>, shape: readonly number[]): Tensor<any, D>",
  ],
  row: { key: "broadcastTo", call: "broadcastTo(x, shape, { validShape? })", does: "x's dims of 1 stretched to `shape` (NumPy `broadcast_to`; what tensor-level elementwise ops do with `[1,N]`, `[M,1]` operands); `validShape` (tiles only): the result's valid region" },
  doc: "broadcastTo(x, shape, { validShape? }): x with its dims of 1 stretched to shape",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "ints" }, { name: "opts", kind: "options", optional: true, options: { validShape: "dims" } }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tile"], "the operand of broadcastTo");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    expectBroadcastable(ctx, x, shape);
    const valid = validShapeOption(ctx, shape, (v) => `validShape ${v} must fit in [${shape.join(", ")}]`);
    return tileT(shape, x.dtype, x.mem, valid);
  },
  evaluate([xv], _attrs, _env, call) {
    const x = xv as TileValue, t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, staticDims(t.validShape));
    const xs = stridesOf(x.shape), os = stridesOf(t.shape);
    forWindow(t.shape, (k) => { out.data[dot(k, os)] = x.data[dot(k.map((v, ax) => (x.shape[ax] === 1 ? 0 : v)), xs)]; });
    return out;
  },
});

registerOp({
  name: "tensor.transpose", pl: "transpose", level: "tensor", pure: true,
  doc: "transpose(t, axis1, axis2) on a tensor: t with two axes swapped (inside pl.at; lowered to transposed tiles)",
  params: [{ name: "x", kind: "value" }, { name: "axis1", kind: "number" }, { name: "axis2", kind: "number" }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of transpose");
    const r = x.shape.length;
    for (const k of ["axis1", "axis2"]) {
      const a = ctx.attrs[k];
      if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= r) ctx.fail(`${k} must be an axis of ${typeStr(x)} (0 to ${r - 1}), got ${JSON.stringify(a)}`);
    }
    const shape = [...x.shape];
    const a1 = ctx.attrs.axis1 as number, a2 = ctx.attrs.axis2 as number;
    [shape[a1], shape[a2]] = [shape[a2], shape[a1]];
    return tensorT(shape, x.dtype);
  },
  effects: (args) => reads(args as never),
  evaluate: viaTile("tile.transpose", ([x], attrs) => {
    const shape = [...x.shape];
    const a1 = attrs.axis1 as number, a2 = attrs.axis2 as number;
    [shape[a1], shape[a2]] = [shape[a2], shape[a1]];
    return shape;
  }),
});

registerOp({
  name: "tensor.broadcastTo", pl: "broadcastTo", level: "tensor", pure: true,
  doc: "broadcastTo(t, shape) on a tensor: t with its dims of 1 stretched to shape (inside pl.at; each tile loads t once along a stretched axis)",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "ints" }, { name: "opts", kind: "options", optional: true, options: { validShape: "ints" } }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of broadcastTo");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    expectBroadcastable(ctx, x, shape);
    if (ctx.attrs.validShape != null) ctx.fail("validShape is for tiles: a tensor has no pad region", "drop the option, or broadcast a tile");
    return tensorT(shape, x.dtype);
  },
  effects: (args) => reads(args as never),
  // the operand's tile in the result's tile shape is already stretched (tensor-to-tile loads a [1, N] leaf once and widens it)
  tileExpr: ([x]) => x,
  evaluate: viaTile("tile.broadcastTo", (_args, attrs) => [...(attrs.shape as number[])]),
});

registerOp({
  name: "tensor.batchMatmul", pl: "batchMatmul", level: "tensor", pure: true,
  doc: "batchMatmul(a[B,M,K], b[B,K,N], { aTrans?, bTrans? }) on tensors -> [B,M,N]: a[i] @ b[i] for each batch i (inside pl.at; auto-tiled per batch, K accumulated tile by tile in k order, as matmul); aTrans/bTrans: each batch stored transposed ([B,K,M] / [B,N,K])",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { aTrans: "bool", bTrans: "bool" } }],
  infer(ctx) {
    const a0 = expectKind(ctx, 0, ["tensor"], "the left operand of batchMatmul"), b0 = expectKind(ctx, 1, ["tensor"], "the right operand of batchMatmul");
    if (a0.shape.length !== 3 || b0.shape.length !== 3) ctx.fail(`needs rank-3 tensors [B, M, K] and [B, K, N], got ${typeStr(a0)} and ${typeStr(b0)}`, "use pl.matmul for 2-D tensors");
    if (![...a0.shape, ...b0.shape].every((d) => typeof d === "number")) ctx.fail(`needs static shapes, got ${typeStr(a0)} and ${typeStr(b0)}`, "give the tensors static shapes");
    const aT = ctx.attrs.aTrans === true, bT = ctx.attrs.bTrans === true;
    const a = aT ? [a0.shape[0], a0.shape[2], a0.shape[1]] : a0.shape, b = bT ? [b0.shape[0], b0.shape[2], b0.shape[1]] : b0.shape;
    if (a[0] !== b[0]) ctx.fail(`batch sizes differ: '${argName(ctx.args[0])}' is ${typeStr(a0)} but '${argName(ctx.args[1])}' is ${typeStr(b0)}`, "a[B, M, K] @ b[B, K, N] needs the same B");
    if (a0.dtype === "bool" || a0.dtype === "int64") ctx.fail(`cannot multiply ${a0.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
    if (a0.dtype !== b0.dtype) ctx.fail(`operand dtypes differ: ${a0.dtype} and ${b0.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[1])}, "${a0.dtype}")`);
    if (a[2] !== b[1]) {
      ctx.fail(`inner dimensions differ: '${argName(ctx.args[0])}' is ${typeStr(a0)} (K = ${a[2]}) but '${argName(ctx.args[1])}' is ${typeStr(b0)} (K = ${b[1]})`,
        `a[B, M, K] @ b[B, K, N] needs a's K to equal b's${aT || bT ? " (after the transposes aTrans / bTrans ask for)" : ": a's last extent, b's middle one"}`);
    }
    return tensorT([a[0], a[1], b[2]], matmulAccDType(a0.dtype));
  },
  effects: (args) => reads(args as never),
  evaluate: viaTile("tile.batchMatmul", ([a, b], attrs) => [a.shape[0], attrs.aTrans === true ? a.shape[2] : a.shape[1], attrs.bTrans === true ? b.shape[1] : b.shape[2]]),
});

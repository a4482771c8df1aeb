// Indexing ops: iota (each element's index along an axis: with cmp / sel a causal mask at a
// run-time length) and gather (rows, or columns, of a table picked by an integer index vector:
// an embedding lookup).
//
//   iota(shape, axis, dtype)        t[i0, i1, ...] = i_axis (an integer dtype saturates; float exact)
//   gather(table, indices, axis=0)  axis 0: out[i, j] = table[indices[i], j]   -> [N, D]
//                                   axis 1: out[i, j] = table[i, indices[j]]   -> [M, N]
//   gatherLoad(table, indices, offset, shape, { axis?, validShape? })
//                                   a tile of a tensor table, its rows (axis 0) at the indices:
//                                   tile[i, j] = table[indices[i], offset + j] (what TensorToTile
//                                   makes of a tensor-level gather: each tile reads its rows
//                                   straight from the table, no table tile)
// `indices` is a vector of int32 or int64: shape [N], [N, 1] or [1, N]. An index outside
// [0, table extent) is a run-time E_KERNEL naming the index, its position and the bounds; no
// element outside the table is ever read.
import { NO_COST, registerOp, type InferCtx } from "../registry.js";
import { isInt, numel, tensorT, tileT, typeStr, type Dim, type DType, type Mem, type TensorType, type TileType } from "../types.js";
import { mkTile, readElem, toDType, writeElem, type TensorValue, type TileValue } from "../values.js";
import { newTensor } from "./elementwise.js";
import { argName, checkWindow, constItems, expectDType, expectKind, expectShape, operandBytes, staticDims, stridesOf, validShapeOption } from "./common.js";

// ------------------------------------------------------------------ iota
function iotaAxis(ctx: InferCtx, rank: number): number {
  const a = ctx.attrs.axis;
  if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= rank) ctx.fail(`axis must be an axis of the shape (0 to ${rank - 1}), got ${JSON.stringify(a)}`);
  return a as number;
}
function iotaDType(ctx: InferCtx): DType {
  const d = expectDType(ctx, "dtype", ctx.attrs.dtype);
  if (d === "bool") ctx.fail("iota needs a numeric dtype, got bool", "use pl.INT32 (compare it with pl.cmp to get a bool mask)");
  return d;
}
/** Fill `put(flat, index along axis)` over a row-major shape. */
function iotaFill(shape: readonly number[], axis: number, put: (flat: number, v: number) => void): void {
  const st = stridesOf(shape);
  const n = numel(shape);
  for (let f = 0; f < n; f++) put(f, Math.floor(f / st[axis]) % shape[axis]);
}

registerOp({
  name: "tile.iota", pl: "iota", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(shape: readonly (number | string)[], axis: number, dtype: D): Full<D>"],
  row: { key: "iota", call: "iota(shape, axis, dtype)", does: "each element's index along `axis` (a numeric dtype; an integer dtype saturates): with `cmp` / `sel` a mask (causal: `cmp(iota(s, 1), iota(s, 0), \"le\")`); a tile, or a tensor where it is an operand of a tensor-level op or `pl.assign`'s value (a dynamic dimension name in `shape`, `[S, \"L\"]`, makes it a tensor)" },
  doc: "iota(shape, axis, dtype): each element's index along axis (integer dtypes saturate); a tile, or a tensor where it is written as an operand of a tensor-level op (a dynamic dimension name in the shape makes it a tensor)",
  params: [{ name: "shape", kind: "shape" }, { name: "axis", kind: "number" }, { name: "dtype", kind: "dtype" },
    { name: "opts", kind: "options", optional: true, options: { validShape: "dims" } }],
  infer(ctx) {
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    iotaAxis(ctx, shape.length);
    const valid = validShapeOption(ctx, shape, (v) => `validShape ${v} must fit in [${shape.join(", ")}]`);
    return tileT(shape, iotaDType(ctx), "Vec", valid);
  },
  evaluate(_a, attrs, _env, call) {
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, staticDims(t.validShape));
    iotaFill(t.shape, attrs.axis as number, (f, v) => { out.data[f] = toDType(v, t.dtype); });
    return out;
  },
});

registerOp({
  name: "tensor.iota", pl: "iota", level: "tensor", pure: true,
  doc: "iota(shape, axis, dtype) as a tensor (an operand of a tensor-level op, or pl.assign's value; a name in shape is a dynamic dimension of a tensor the kernel reads or writes): each element's index along axis (inside pl.at; lowered to iota tiles plus their offset)",
  params: [{ name: "shape", kind: "shape" }, { name: "axis", kind: "number" }, { name: "dtype", kind: "dtype" }],
  infer(ctx) {
    const shape = ctx.attrs.shape;
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => (Number.isInteger(d) && (d as number) > 0) || (typeof d === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d)))) {
      ctx.fail(`shape must be a non-empty list of positive integers and dynamic dimension names, got ${JSON.stringify(shape)}`);
    }
    iotaAxis(ctx, (shape as unknown[]).length);
    return tensorT(shape as Dim[], iotaDType(ctx));
  },
  // a tile of the tensor at `offsets`: the tile's own iota plus its offset along the axis (0 where
  // the tensor's extent there is 1: a broadcast operand); a partial edge tile keeps its validShape
  tileExpr: (_args, attrs, build, at) => {
    const axis = attrs.axis as number;
    const own = attrs.shape as readonly Dim[];
    const t = build("tile.iota", [], { shape: [...at.shape], axis, dtype: attrs.dtype, ...(at.validShape ? { validShape: [...at.validShape] } : {}) });
    const off = at.offsets?.[axis];
    if (!off || own[axis] === 1 || (off.kind === "const" && Number(off.value) === 0)) return t;
    return build("tile.add", [t, off]);
  },
  evaluate(_a, attrs, env, call) {
    const t = call.type as TensorType;
    const shape = t.shape.map((d) => {
      if (typeof d === "number") return d;
      const n = env.dims?.get(d);
      return n ?? env.fail(`iota: ${JSON.stringify(d)} is not a dynamic dimension of the kernel's parameters`, call.span);
    });
    const out = newTensor(shape, t.dtype);
    iotaFill(shape, attrs.axis as number, (f, v) => writeElem(out, f, toDType(v, t.dtype)));
    return out;
  },
});

// ------------------------------------------------------------------ gather
type Shaped = TileType | TensorType;
/** The element count N of an index vector ([N], [N, 1] or [1, N]) of int32 / int64, or a failure. */
function indexVector(ctx: InferCtx, i: number, what: string): Dim {
  const t = ctx.argTypes[i] as Shaped;
  if (!isInt(t.dtype) || (t.dtype !== "int32" && t.dtype !== "int64")) {
    ctx.fail(`the indices must be int32 or int64, got ${t.dtype} ('${argName(ctx.args[i])}', ${typeStr(t)})`, `cast them first: pl.cast(${argName(ctx.args[i])}, "int32")`);
  }
  const s = t.shape;
  const long = s.filter((d) => d !== 1);
  if (s.length > 2 || long.length > 1) {
    ctx.fail(`the indices must be a vector ([N], [N, 1] or [1, N]), got ${typeStr(t)} for '${argName(ctx.args[i])}'`, `${what}: reshape them to [N, 1] first`);
  }
  return long.length ? long[0] : 1;
}
function gatherAxis(ctx: InferCtx): 0 | 1 {
  const a = ctx.attrs.axis ?? 0;
  if (a !== 0 && a !== 1) ctx.fail(`axis must be 0 (rows) or 1 (columns), got ${JSON.stringify(a)}`);
  return a as 0 | 1;
}
/** The table's extent along the gathered axis, and the message for an index outside it. */
function indexFail(what: string, table: string, shape: readonly number[], axis: number, pos: number | null, idx: number): string {
  return `${what} index ${idx}${pos === null ? "" : ` (element ${pos} of the indices)`} is outside [0, ${shape[axis]}) on axis ${axis} of ${table} of shape [${shape.join(", ")}]`;
}
const idxOf = (x: TileValue | TensorValue, k: number): number => (x.kind === "tile" ? x.data[k] : readElem(x, k));

/** out = table with its `axis` picked at the indices (TileValue / TensorValue alike). */
function gatherValues(table: TileValue | TensorValue, idx: TileValue | TensorValue, axis: number, what: string, label: string, fail: (m: string) => never,
  put: (k: number, v: number) => void): void {
  const [r, c] = table.shape;
  const n = idx.kind === "tile" ? idx.data.length : idx.data.length;
  const at = (k: number): number => {
    const v = idxOf(idx, k);
    if (!Number.isInteger(v) || v < 0 || v >= table.shape[axis]) fail(indexFail(what, label, table.shape, axis, k, v));
    return v;
  };
  const read = (k: number) => (table.kind === "tile" ? table.data[k] : readElem(table, k));
  if (axis === 0) for (let i = 0; i < n; i++) { const row = at(i); for (let j = 0; j < c; j++) put(i * c + j, read(row * c + j)); }
  else for (let j = 0; j < n; j++) { const col = at(j); for (let i = 0; i < r; i++) put(i * n + j, read(i * c + col)); }
}

registerOp({
  name: "tile.gather", pl: "gather", level: "tile", pure: true, fusable: false, cost: NO_COST, // rows of a tile: in scratch already
  decl: [
    "<D extends DType>(table: AnyTile<D>, indices: AnyTile, axis?: 0 | 1): AnyTile<D>",
    "<D extends DType>(table: Tensor<any, D>, indices: Tensor, axis?: 0 | 1): Tensor<any, D>",
  ],
  row: { key: "gather", call: "gather(table, indices, axis = 0)", does: "rows (`axis` 0: `out[i, :] = table[indices[i], :]`, `[N, D]`) or columns (`axis` 1) of a 2-D table picked by an int32/int64 index vector (`[N]`, `[N, 1]` or `[1, N]`): an embedding lookup; an index outside the table is a run-time `E_KERNEL` naming it; tensors: auto-tiled, each tile reads its rows straight from the table (it may stand inside an elementwise expression: `gather(wte, ids) + wpe`)" },
  doc: "gather(table, indices, axis = 0): the rows (axis 0) or columns (axis 1) of a 2-D table at an int32/int64 index vector ([N], [N, 1] or [1, N]); out of range is a run-time E_KERNEL",
  params: [{ name: "table", kind: "value" }, { name: "indices", kind: "value" }, { name: "axis", kind: "number", optional: true }],
  infer(ctx) {
    const table = expectKind(ctx, 0, ["tile"], "the table of gather");
    expectKind(ctx, 1, ["tile"], "the indices of gather");
    if (table.shape.length !== 2) ctx.fail(`the table must be a 2-D tile, got ${typeStr(table)}`);
    const axis = gatherAxis(ctx);
    const n = indexVector(ctx, 1, "gather") as number;
    if ((ctx.argTypes[1] as TileType).validShape) ctx.fail("the index tile must be fully valid", `pad it first: pl.fillpad(${argName(ctx.args[1])})`);
    const shape = table.shape.map((d, ax) => (ax === axis ? n : d));
    const valid = table.validShape ? table.validShape.map((d, ax) => (ax === axis ? n : d)) : null;
    return tileT(shape, table.dtype, table.mem, valid);
  },
  evaluate([tv, iv], attrs, env, call) {
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, staticDims(t.validShape));
    gatherValues(tv as TileValue, iv as TileValue, Number(attrs.axis ?? 0), "gather", "the table tile", (m) => env.fail(m, call.span), (k, v) => { out.data[k] = v; });
    return out;
  },
});

registerOp({
  name: "tensor.gather", pl: "gather", level: "tensor", pure: true,
  doc: "gather(table, indices, axis = 0) on tensors: the rows (axis 0) or columns (axis 1) of a 2-D table tensor at an index tensor (inside pl.at; each tile of the result is read straight from the table at its indices, gatherLoad; it may stand inside an elementwise expression)",
  params: [{ name: "table", kind: "value" }, { name: "indices", kind: "value" }, { name: "axis", kind: "number", optional: true }],
  infer(ctx) {
    const table = expectKind(ctx, 0, ["tensor"], "the table of gather");
    if (ctx.argTypes[1]?.kind === "tile") ctx.fail(`the indices are a tile (${typeStr(ctx.argTypes[1])}) but the table '${argName(ctx.args[0])}' is a tensor`, "gather from a tensor with an index tensor (inside pl.at), or load the table into a tile");
    expectKind(ctx, 1, ["tensor"], "the indices of gather");
    if (table.shape.length !== 2) ctx.fail(`the table must be a 2-D tensor, got ${typeStr(table)}`);
    const axis = gatherAxis(ctx);
    const n = indexVector(ctx, 1, "gather");
    return tensorT(table.shape.map((d, ax) => (ax === axis ? n : d)), table.dtype);
  },
  effects: (args) => ({ reads: args.map((a, i) => (a.kind === "var" ? i : -1)).filter((i) => i >= 0), writes: [] }),
  evaluate([tv, iv], attrs, env, call) {
    const table = tv as TensorValue, idx = iv as TensorValue, axis = Number(attrs.axis ?? 0);
    const n = idx.data.length;
    const out = newTensor(table.shape.map((d, ax) => (ax === axis ? n : d)), table.dtype);
    gatherValues(table, idx, axis, "gather", "the table", (m) => env.fail(m, call.span), (k, v) => writeElem(out, k, v));
    return out;
  },
});

registerOp({
  name: "tile.gatherLoad", pl: "gatherLoad", level: "tile", pure: true, fusable: false,
  // the tile's valid region, read from the table's rows (columns) at the indices
  cost: (c) => ({ readBytes: operandBytes(c, 0, numel(c.extents)) }),
  decl: ["<D extends DType>(table: Tensor<any, D>, indices: AnyTile, offset: number, shape: readonly number[], opts?: { readonly axis?: 0 | 1; readonly validShape?: readonly (number | Scalar<any>)[] }): AnyTile<D>"],
  row: { key: "gatherLoad", call: "gatherLoad(table, indices, offset, shape, { axis?, validShape? })", does: "a tile of a 2-D tensor whose rows (`axis` 0: `tile[i, j] = table[indices[i], offset + j]`) or columns (`axis` 1) are picked by an index tile: `load` at the indices (only `validShape` of it is read; an index outside the table is a run-time `E_KERNEL`); what a tensor-level `gather` becomes" },
  doc: "gatherLoad(table, indices, offset, shape, { axis?, validShape? }): a [shape] tile of a 2-D tensor with its rows (axis 0: tile[i, j] = table[indices[i], offset + j]) or columns (axis 1: tile[i, j] = table[offset + i, indices[j]]) picked by an int32/int64 index tile; only validShape of it is read (the rest is zero)",
  params: [
    { name: "table", kind: "value" }, { name: "indices", kind: "value" }, { name: "offset", kind: "value" }, { name: "shape", kind: "ints" },
    { name: "opts", kind: "options", optional: true, options: { axis: "number", validShape: "dims" } },
  ],
  infer(ctx) {
    const table = expectKind(ctx, 0, ["tensor"], "the table of gatherLoad");
    if (table.shape.length !== 2) ctx.fail(`the table must be a 2-D tensor, got ${typeStr(table)}`);
    expectKind(ctx, 1, ["tile"], "the indices of gatherLoad");
    const off = ctx.argTypes[2];
    if (off?.kind !== "scalar" || !isInt(off.dtype)) ctx.fail(`the offset must be an integer scalar, got ${off ? typeStr(off) : "nothing"}`);
    const axis = gatherAxis(ctx);
    const n = indexVector(ctx, 1, "gatherLoad");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    if (shape.length !== 2 || shape[axis] !== n) ctx.fail(`shape ${JSON.stringify(shape)} must be 2-D with ${n} (the index count) on axis ${axis}`);
    const valid = validShapeOption(ctx, shape, (v) => `validShape ${v} must have the tile's rank and fit in shape [${shape.join(", ")}]`);
    return tileT(shape, table.dtype, "Vec" as Mem, valid);
  },
  check(ctx) {
    // the window along the other axis: [offset, offset + extent) of the table
    const axis = Number(ctx.attrs.axis ?? 0), other = 1 - axis;
    const o = constItems({ kind: "list", items: [ctx.args[2]], type: { kind: "list", elems: [] }, span: ctx.span })[0];
    const region = (ctx.attrs.validShape ?? ctx.attrs.shape) as Dim[];
    const t = ctx.argTypes[0] as TensorType;
    const offs = [0, 0];
    if (o === null) return;
    offs[other] = o;
    checkWindow(ctx, "gatherLoad", offs, region.map((d, ax) => (ax === axis ? 1 : d)), t, argName(ctx.args[0]));
  },
  effects: () => ({ reads: [0], writes: [] }),
  evaluate([tv, iv, ov], attrs, env, call) {
    const table = tv as TensorValue, idx = iv as TileValue, off = Number(ov);
    const t = call.type as TileType;
    const axis = Number(attrs.axis ?? 0), other = 1 - axis;
    const valid = staticDims(t.validShape) ?? [...t.shape];
    const out = mkTile(t.shape, t.dtype, t.mem, staticDims(t.validShape));
    const [, c] = table.shape;
    if (off < 0 || off + valid[other] > table.shape[other]) {
      env.fail(`gatherLoad window [${axis === 0 ? `*, ${off}` : `${off}, *`}] + [${valid.join(", ")}] is outside a tensor of shape [${table.shape.join(", ")}] (axis ${other})`, call.span);
    }
    for (let i = 0; i < valid[0]; i++) {
      for (let j = 0; j < valid[1]; j++) {
        const k = axis === 0 ? i : j;
        const v = idx.data[k];
        if (!Number.isInteger(v) || v < 0 || v >= table.shape[axis]) env.fail(indexFail("gather", "a tensor", table.shape, axis, null, v), call.span);
        const [r, cc] = axis === 0 ? [v, off + j] : [off + i, v];
        out.data[i * t.shape[1] + j] = readElem(table, r * c + cc);
      }
    }
    return out;
  },
});

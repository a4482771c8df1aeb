// Shape ops: reshape, slice, concat, assemble, fillpad, read; and createTensor (an
// orchestration-level device buffer).
import { NO_COST, getOp, registerOp, type InferCtx } from "../registry.js";
import { RUNTIME_DIM, isInt, numel, scalarT, shapeStr, tensorT, tileT, typeStr, voidT, type Dim, type DType, type TensorType, type TileType, type Type } from "../types.js";
import { exprType, type Expr } from "../nodes.js";
import { mkTile, readElem, writeElem, type TensorValue, type TileValue } from "../values.js";
import { newTensor } from "./elementwise.js";
import {
  argName, checkTileWindow, checkWindow, constItems, dtypeHighest, dtypeLowest, expect2D, expectDType, expectKind, expectShape, expectTile, ints, stridesOf, forWindow, dot, runtimeCheck, operandBytes,
} from "./common.js";

const where = (ctx: InferCtx, i: number) => argName(ctx.args[i]);
const exprTypeOf = (e: Expr): Type => exprType(e);

/** The tensor operands an op reads (variables; windows and expressions say so themselves). */
const tensorReads = (args: readonly Expr[]) => ({ reads: args.map((a, i) => (a.kind !== "const" && a.type.kind === "tensor" ? i : -1)).filter((i) => i >= 0), writes: [] });

// ------------------------------------------------------------------ reshape
registerOp({
  name: "tile.reshape", pl: "reshape", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(x: AnyTile<D>, shape: readonly number[]): AnyTile<D>", "<D extends DType>(x: Tensor<any, D>, shape: readonly number[]): Tensor<any, D>"],
  row: { key: "reshape", call: "reshape(x, shape)", does: "the same elements, row-major, in another shape (a tile with a validShape only adds or drops dims of 1)" },
  doc: "reshape(x, shape): the same elements (row-major order) as a tile of another shape with as many elements",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "ints" }],
  infer(ctx) {
    const x = expectTile(ctx, 0, "the operand of reshape");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    if (numel(shape) !== numel(x.shape)) {
      ctx.fail(`cannot reshape ${typeStr(x)} (${numel(x.shape)} elements) to ${shapeStr(shape)} (${numel(shape)} elements)`, "the new shape must have as many elements as the old one");
    }
    if (!x.validShape) return tileT(shape, x.dtype, x.mem);
    const valid = unitReshapeValid(x.shape, x.validShape, shape);
    if (!valid) {
      ctx.fail(`cannot reshape a tile with a validShape (${shapeStr(x.validShape)}) to ${shapeStr(shape)}`,
        `only adding or dropping dimensions of 1 keeps a validShape; pad it first: pl.fillpad(${where(ctx, 0)}, "zero")`);
    }
    return tileT(shape, x.dtype, x.mem, valid);
  },
  evaluate([x], _attrs, _env, call) {
    const t = call.type as TileType;
    return mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null, Float64Array.from((x as TileValue).data));
  },
});

/**
 * The validShape of a tile of `from` (valid `valid`) reshaped to `to` when the reshape only adds
 * or drops dimensions of 1 (`[1, M, K]` <-> `[M, K]`: the layout and the valid region are the
 * same); null for any other reshape.
 */
function unitReshapeValid(from: readonly number[], valid: readonly Dim[], to: readonly number[]): Dim[] | null {
  if (from.some((d, i) => d === 1 && valid[i] !== 1)) return null;
  const kept = from.map((d, i) => [d, valid[i]] as const).filter(([d]) => d !== 1);
  const toKept = to.filter((d) => d !== 1);
  if (toKept.length !== kept.length || toKept.some((d, i) => d !== kept[i][0])) return null;
  let k = 0;
  return to.map((d) => (d === 1 ? 1 : kept[k++][1]));
}

registerOp({
  name: "tensor.reshape", pl: "reshape", level: "tensor", pure: true,
  doc: "reshape(t, shape) on a tensor: the same elements (row-major order) in another shape (inside pl.at; lowered to tiles that are whole rectangles of both shapes)",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "ints" }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of reshape");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    if (!x.shape.every((d) => typeof d === "number")) ctx.fail(`reshape needs a static shape, got ${typeStr(x)}`, "give the tensor a static shape");
    if (numel(shape) !== numel(x.shape as number[])) {
      ctx.fail(`cannot reshape ${typeStr(x)} (${numel(x.shape as number[])} elements) to ${shapeStr(shape)} (${numel(shape)} elements)`, "the new shape must have as many elements as the old one");
    }
    return tensorT(shape, x.dtype);
  },
  effects: (args) => tensorReads(args),
  evaluate([xv], _attrs, _env, call) {
    const x = xv as TensorValue, t = call.type as TensorType;
    const out = newTensor(t.shape as number[], t.dtype);
    for (let i = 0; i < out.data.length; i++) writeElem(out, i, readElem(x, i));
    return out;
  },
});

// ------------------------------------------------------------------ slice
registerOp({
  name: "tile.slice", pl: "slice", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(x: AnyTile<D>, shape: readonly number[], offset: readonly number[]): AnyTile<D>", "<D extends DType>(x: Tensor<any, D>, shape: readonly number[], offset: readonly number[]): Tensor<any, D>"],
  row: { key: "slice", call: "slice(x, shape, offset)", does: "the window `x[offset : offset + shape]` (offsets may be scalar expressions; checked at compile time when constant, at run time otherwise); on tensors the shape may hold run-time extents too (`pl.dim(t, 0)`, scalar parameters, loop indices): a window of dynamic extent, usable in elementwise expressions, reductions and as a matmul operand" },
  doc: "slice(x, shape, offset): the sub-tile x[offset : offset + shape] (offsets may be scalar expressions)",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "ints" }, { name: "offset", kind: "values" }],
  infer(ctx) {
    const x = expectTile(ctx, 0, "the operand of slice");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    return tileT(shape, x.dtype, x.mem);
  },
  check(ctx) {
    const x = ctx.argTypes[0] as TileType;
    checkTileWindow(ctx, "slice", constItems(ctx.args[1]), ints(ctx.attrs.shape), x.shape, where(ctx, 0));
  },
  evaluate([xv, offs], _attrs, env, call) {
    const x = xv as TileValue, off = offs as number[];
    const t = call.type as TileType;
    runtimeCheck("slice", "a tile", off, t.shape, x.shape, (m) => env.fail(m, call.span));
    const out = mkTile(t.shape, t.dtype, t.mem);
    const xs = stridesOf(x.shape), os = stridesOf(t.shape);
    forWindow(t.shape, (k) => { out.data[dot(k, os)] = x.data[dot(k, xs, off)]; });
    return out;
  },
});

/**
 * The dimension a tensor slice's extent stands for in its type: a constant integer; for
 * `pl.dim(t, ax)` of a dynamic dimension that dimension's name (so the window composes with
 * every tensor of that name); for any other run-time scalar (a scalar parameter, a loop index,
 * arithmetic of them) a name spelled from the expression in braces, `"{i + 1}"` (two windows
 * whose extents are spelled alike compose; TensorToTile checks that they are the same value).
 * Null: not an integer scalar.
 */
export function extentDim(e: Expr): Dim | null {
  if (e.kind === "const") return typeof e.value === "number" && Number.isInteger(e.value) && isInt(e.dtype) ? e.value : null;
  if (e.kind === "list" || e.type.kind !== "scalar" || !isInt(e.type.dtype)) return null;
  if (e.kind === "call" && e.op === "tensor.dim" && e.args[0].kind !== "const") {
    const t = e.args[0].type;
    const d = t.kind === "tensor" ? t.shape[e.attrs.axis as number] : undefined;
    if (d !== undefined) return d;
  }
  return `{${spell(e)}}`;
}

/** A scalar expression as kernel source (variables by name), for the names extentDim spells. */
function spell(e: Expr, parent = 0): string {
  if (e.kind === "var") return e.name;
  if (e.kind === "const") return String(e.value);
  if (e.kind === "list") return `[${e.items.map((x) => spell(x)).join(", ")}]`;
  const op = getOp(e.op);
  if (op.operator && e.args.length === 2) {
    const p = SPELL_PREC[op.operator] ?? 1;
    const s = `${spell(e.args[0], p)} ${op.operator} ${spell(e.args[1], p + 1)}`;
    return p < parent ? `(${s})` : s;
  }
  if (op.operator) return `${op.operator}${spell(e.args[0], 10)}`;
  if (op.mathFn) return `Math.${op.mathFn}(${e.args.map((x) => spell(x)).join(", ")})`;
  if (e.op === "tensor.dim") return `pl.dim(${spell(e.args[0])}, ${String(e.attrs.axis)})`;
  return `pl.${op.pl ?? e.op}(${e.args.map((x) => spell(x)).join(", ")})`;
}
const SPELL_PREC: Record<string, number> = { "+": 5, "-": 5, "*": 6, "/": 6, "%": 6 };

/** The run-time values of a window's extents must be integers >= 1 (fail names the first that is not). */
function checkExtents(what: string, shape: readonly number[], fail: (m: string) => never): void {
  shape.forEach((d, ax) => { if (!Number.isInteger(d) || d < 1) fail(`${what} extent ${d} on axis ${ax} (shape [${shape.join(", ")}]) must be an integer >= 1`); });
}

registerOp({
  name: "tensor.slice", pl: "slice", level: "tensor", pure: true,
  doc: "slice(t, shape, offset) on a tensor: the window t[offset : offset + shape] as a tensor value (inside pl.at; lowered to loads at the offset); shape and offset may hold run-time integer scalars (pl.dim, scalar parameters, loop indices): a window of run-time extent, checked against the tensor at run time",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "values" }, { name: "offset", kind: "values" }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of slice");
    const sh = ctx.args[1];
    if (sh?.kind !== "list" || sh.items.length === 0) return ctx.fail("shape must be a non-empty list of extents");
    if (sh.items.length !== x.shape.length) {
      ctx.fail(`slice shape has ${sh.items.length} extents but tensor '${where(ctx, 0)}' has rank ${x.shape.length}`, `give one extent per dimension of ${shapeStr(x.shape)}`);
    }
    const dims = sh.items.map((it, ax): Dim => {
      const d = extentDim(it);
      if (d === null) {
        return ctx.fail(`extent ${ax + 1} of the slice shape must be an integer or an integer scalar (pl.dim(t, axis), a pl.Scalar<pl.INT64> parameter, a loop index), got ${it.kind === "const" ? String(it.value) : typeStr(exprTypeOf(it))}`,
          "convert it first, e.g. Math.floor(x)");
      }
      if (typeof d === "number" && d < 1) return ctx.fail(`extent ${ax + 1} of the slice shape must be >= 1, got ${d}`);
      return d;
    });
    return tensorT(dims, x.dtype);
  },
  check(ctx) {
    checkWindow(ctx, "slice", constItems(ctx.args[2]), constItems(ctx.args[1]).map((d): Dim => d ?? RUNTIME_DIM), ctx.argTypes[0] as TensorType, where(ctx, 0));
  },
  effects: (args) => ({ reads: args[0]?.kind === "var" ? [0] : [], writes: [] }),
  evaluate([xv, shp, offs], _attrs, env, call) {
    const x = xv as TensorValue, off = offs as number[];
    const t = call.type as TensorType;
    const shape = (shp as number[]).map(Number);
    checkExtents("slice", shape, (m) => env.fail(m, call.span));
    runtimeCheck("slice", "a tensor", off, shape, x.shape, (m) => env.fail(m, call.span));
    const out = newTensor(shape, t.dtype);
    const xs = stridesOf(x.shape), os = stridesOf(shape);
    forWindow(shape, (k) => writeElem(out, dot(k, os), readElem(x, dot(k, xs, off))));
    return out;
  },
});

registerOp({
  name: "tile.checkWindow", pl: "checkWindow", level: "tile", pure: false, cost: NO_COST,
  decl: ["(tensor: Tensor, shape: readonly number[], offset: readonly number[]): void"],
  row: { key: "checkWindow", call: "checkWindow(tensor, shape, offset)", does: "a run-time `E_KERNEL` (with the window and the location) unless `tensor[offset : offset + shape]` lies inside the tensor with every extent >= 1; what TensorToTile emits for a tensor `slice` of run-time extent" },
  doc: "checkWindow(tensor, shape, offset): fail the launch (E_KERNEL, with the window and this location) unless the window tensor[offset : offset + shape] lies inside the tensor and every extent is >= 1 (TensorToTile emits it for a tensor-level pl.slice of run-time extent)",
  params: [{ name: "x", kind: "value" }, { name: "shape", kind: "values" }, { name: "offset", kind: "values" }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of checkWindow");
    for (const k of [1, 2]) {
      const l = ctx.args[k];
      if (l?.kind !== "list" || l.items.length !== x.shape.length) ctx.fail(`${k === 1 ? "shape" : "offset"} must be a list of ${x.shape.length} integer scalars`);
    }
    return voidT;
  },
  evaluate([xv, shp, offs], _attrs, env, call) {
    const x = xv as TensorValue, shape = (shp as number[]).map(Number), off = (offs as number[]).map(Number);
    checkExtents("slice", shape, (m) => env.fail(m, call.span));
    runtimeCheck("slice", "a tensor", off, shape, x.shape, (m) => env.fail(m, call.span));
    return undefined;
  },
});

// ------------------------------------------------------------------ concat
registerOp({
  name: "tile.concat", pl: "concat", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(a: AnyTile<D>, b: AnyTile<D>): AnyTile<D>", "<D extends DType>(a: Tensor<any, D>, b: Tensor<any, D>): Tensor<any, D>"],
  row: { key: "concat", call: "concat(a[M,Na], b[M,Nb])", does: "`[M, Na+Nb]`, side by side (tensors: any rank, along the last axis)" },
  doc: "concat(a[M,Na], b[M,Nb]) -> [M, Na+Nb]: a and b side by side (along the last axis)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }],
  infer(ctx) {
    const a = expect2D(ctx, 0, "the first operand of concat");
    const b = expect2D(ctx, 1, "the second operand of concat");
    if (a.shape[0] !== b.shape[0]) {
      ctx.fail(`row counts differ: '${where(ctx, 0)}' has ${a.shape[0]} rows (${typeStr(a)}) but '${where(ctx, 1)}' has ${b.shape[0]} (${typeStr(b)})`,
        "concat joins tiles along the last axis: both need the same number of rows");
    }
    if (a.dtype !== b.dtype) ctx.fail(`dtypes differ: ${a.dtype} and ${b.dtype}`, `cast one operand first, e.g. pl.cast(b, "${a.dtype}")`);
    return tileT([a.shape[0], a.shape[1] + b.shape[1]], a.dtype, a.mem);
  },
  evaluate([av, bv], _attrs, _env, call) {
    const a = av as TileValue, b = bv as TileValue;
    const t = call.type as TileType;
    const [m, n] = t.shape, na = a.shape[1], nb = b.shape[1];
    const out = mkTile(t.shape, t.dtype, t.mem);
    for (let r = 0; r < m; r++) {
      for (let c = 0; c < na; c++) out.data[r * n + c] = a.data[r * na + c];
      for (let c = 0; c < nb; c++) out.data[r * n + na + c] = b.data[r * nb + c];
    }
    return out;
  },
});

registerOp({
  name: "tensor.concat", pl: "concat", level: "tensor", pure: true,
  doc: "concat(a[..., Na], b[..., Nb]) on tensors -> [..., Na+Nb]: a and b side by side along the last axis (inside pl.at; each operand is written into its columns of the result tile by tile)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }],
  infer(ctx) {
    const a = expectKind(ctx, 0, ["tensor"], "the first operand of concat");
    const b = expectKind(ctx, 1, ["tensor"], "the second operand of concat");
    for (const [t, i] of [[a, 0], [b, 1]] as const) {
      if (!t.shape.every((d) => typeof d === "number")) ctx.fail(`concat needs static shapes, got ${typeStr(t)} for '${where(ctx, i)}'`, "give the tensor a static shape");
    }
    const r = a.shape.length;
    if (b.shape.length !== r || a.shape.some((d, ax) => ax < r - 1 && d !== b.shape[ax])) {
      ctx.fail(`shapes do not concatenate: '${where(ctx, 0)}' is ${typeStr(a)} but '${where(ctx, 1)}' is ${typeStr(b)}`,
        "concat joins tensors along the last axis: both need the same rank and the same extents on every other axis");
    }
    if (a.dtype !== b.dtype) ctx.fail(`dtypes differ: ${a.dtype} and ${b.dtype}`, `cast one operand first, e.g. pl.cast(${where(ctx, 1)}, "${a.dtype}")`);
    return tensorT([...a.shape.slice(0, r - 1), (a.shape[r - 1] as number) + (b.shape[r - 1] as number)], a.dtype);
  },
  effects: (args) => tensorReads(args),
  evaluate([av, bv], _attrs, _env, call) {
    const a = av as TensorValue, b = bv as TensorValue, t = call.type as TensorType;
    const out = newTensor(t.shape as number[], t.dtype);
    const na = a.shape[a.shape.length - 1], nb = b.shape[b.shape.length - 1], n = na + nb;
    for (let r = 0; r < out.data.length / n; r++) {
      for (let c = 0; c < na; c++) writeElem(out, r * n + c, readElem(a, r * na + c));
      for (let c = 0; c < nb; c++) writeElem(out, r * n + na + c, readElem(b, r * nb + c));
    }
    return out;
  },
});

// ------------------------------------------------------------------ assemble
registerOp({
  name: "tile.assemble", pl: "assemble", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(target: AnyTile<D>, src: AnyTile<D>, offset: readonly number[]): AnyTile<D>", "<T extends Tensor>(target: T, src: Tensor, offset: readonly number[]): T"],
  row: { key: "assemble", call: "assemble(target, src, offset)", does: "tiles: a copy of `target` with `src` written at `offset`; tensors: writes `src` into `target` at `offset`" },
  doc: "assemble(target, src, offset): a copy of the target tile with src written at offset (tiles); on tensors: writes src into target at offset",
  params: [{ name: "target", kind: "value" }, { name: "src", kind: "value" }, { name: "offset", kind: "values" }],
  infer(ctx) {
    const t = expectTile(ctx, 0, "the target of assemble");
    const s = expectTile(ctx, 1, "the source of assemble");
    if (s.dtype !== t.dtype) ctx.fail(`dtypes differ: target ${t.dtype}, source ${s.dtype}`, `cast the source first: pl.cast(src, "${t.dtype}")`);
    return tileT(t.shape, t.dtype, t.mem, t.validShape);
  },
  check(ctx) {
    const t = ctx.argTypes[0] as TileType, s = ctx.argTypes[1] as TileType;
    checkTileWindow(ctx, "assemble", constItems(ctx.args[2]), s.shape, t.shape, where(ctx, 0));
  },
  evaluate([tv, sv, offs], _attrs, env, call) {
    const t = tv as TileValue, s = sv as TileValue, off = offs as number[];
    const type = call.type as TileType;
    runtimeCheck("assemble", "a tile", off, s.shape, t.shape, (m) => env.fail(m, call.span));
    const out = mkTile(type.shape, type.dtype, type.mem, type.validShape as number[] | null, Float64Array.from(t.data));
    const ts = stridesOf(t.shape), ss = stridesOf(s.shape);
    forWindow(s.shape, (k) => { out.data[dot(k, ts, off)] = s.data[dot(k, ss)]; });
    return out;
  },
});

registerOp({
  name: "tensor.assemble", pl: "assemble", level: "tensor", pure: false,
  doc: "assemble(target, src, offset) on tensors: write the tensor value src into target at offset (inside pl.at; lowered to tiled loads and stores)",
  params: [{ name: "target", kind: "value" }, { name: "src", kind: "value" }, { name: "offset", kind: "values" }],
  infer(ctx) {
    const t = expectKind(ctx, 0, ["tensor"], "the target of assemble");
    const s = ctx.argTypes[1];
    if (s?.kind === "tile") ctx.fail(`the source is a tile (${typeStr(s)}) but the target '${where(ctx, 0)}' is a tensor`, `write a tile into a tensor with pl.store(tile, offsets, ${where(ctx, 0)})`);
    const st = expectKind(ctx, 1, ["tensor"], "the source of assemble");
    if (st.dtype !== t.dtype) ctx.fail(`dtypes differ: target ${t.dtype}, source ${st.dtype}`, `cast the source first: pl.cast(src, "${t.dtype}")`);
    if (st.shape.length !== t.shape.length) ctx.fail(`the source ${typeStr(st)} and the target ${typeStr(t)} have different ranks`);
    return t;
  },
  check(ctx) {
    checkWindow(ctx, "assemble", constItems(ctx.args[2]), (ctx.argTypes[1] as TensorType).shape as number[], ctx.argTypes[0] as TensorType, where(ctx, 0));
  },
  effects: (args) => ({ reads: args[1]?.kind === "var" ? [1] : [], writes: [0] }),
  evaluate([tv, sv, offs], _attrs, env, call) {
    const t = tv as TensorValue, s = sv as TensorValue, off = offs as number[];
    runtimeCheck("assemble", "a tensor", off, s.shape, t.shape, (m) => env.fail(m, call.span));
    const ts = stridesOf(t.shape), ss = stridesOf(s.shape);
    forWindow(s.shape, (k) => writeElem(t, dot(k, ts, off), readElem(s, dot(k, ss))));
    return t;
  },
});

// ------------------------------------------------------------------ fillpad
export const PAD_VALUES = ["zero", "min", "max"] as const;
export function padValue(d: DType, pad: string): number {
  return pad === "min" ? dtypeLowest(d) : pad === "max" ? dtypeHighest(d) : 0;
}
registerOp({
  name: "tile.fillpad", pl: "fillpad", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(x: AnyTile<D>, padValue?: PadValue): AnyTile<D>", "<D extends DType>(x: Tensor<any, D>, padValue?: PadValue): Tensor<any, D>"],
  row: { key: "fillpad", call: "fillpad(x, padValue = \"zero\")", does: "the pad outside x's validShape set to 0 / the dtype's lowest (`\"min\"`) / highest (`\"max\"`); a tensor has no pad: its fillpad is the tensor" },
  doc: `fillpad(x, padValue = "zero"): x with the region outside its validShape set to 0 / the dtype's lowest ("min") / highest ("max"); the result is fully valid`,
  params: [{ name: "x", kind: "value" }, { name: "padValue", kind: "string", optional: true }],
  infer(ctx) {
    const x = expectTile(ctx, 0, "the operand of fillpad");
    const pad = ctx.attrs.padValue ?? "zero";
    if (!(PAD_VALUES as readonly unknown[]).includes(pad)) ctx.fail(`unknown pad value ${JSON.stringify(pad)}`, `use "zero", "min" (the dtype's lowest value) or "max" (its highest)`);
    return tileT(x.shape, x.dtype, x.mem);
  },
  evaluate([xv], attrs, _env, call) {
    const x = xv as TileValue;
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, null, Float64Array.from(x.data));
    if (!x.validShape) return out;
    const pv = padValue(t.dtype, String(attrs.padValue ?? "zero"));
    const xs = stridesOf(x.shape);
    forWindow(x.shape, (k) => { if (k.some((v, ax) => v >= x.validShape![ax])) out.data[dot(k, xs)] = pv; });
    return out;
  },
});

registerOp({
  name: "tensor.fillpad", pl: "fillpad", level: "tensor", pure: true,
  doc: `fillpad(t, padValue = "zero") on a tensor: t itself (a tensor has no pad region; the tile form pads a partial tile)`,
  params: [{ name: "x", kind: "value" }, { name: "padValue", kind: "string", optional: true }],
  infer(ctx) {
    const x = expectKind(ctx, 0, ["tensor"], "the operand of fillpad");
    const pad = ctx.attrs.padValue ?? "zero";
    if (!(PAD_VALUES as readonly unknown[]).includes(pad)) ctx.fail(`unknown pad value ${JSON.stringify(pad)}`, `use "zero", "min" (the dtype's lowest value) or "max" (its highest)`);
    return x;
  },
  effects: (args) => tensorReads(args),
  // a tile of the result is the operand's tile: the tiles of a tensor expression store only their valid region
  tileExpr: ([x]) => x,
  evaluate([xv]) {
    const x = xv as TensorValue;
    const out = newTensor(x.shape, x.dtype);
    for (let i = 0; i < out.data.length; i++) writeElem(out, i, readElem(x, i));
    return out;
  },
});

// ------------------------------------------------------------------ read
for (const level of ["tile", "tensor"] as const) {
  registerOp({
    name: `${level}.read`, pl: "read", level, pure: true,
    // a tensor element is one read from memory; a tile's is in scratch already
    cost: level === "tensor" ? (c) => ({ readBytes: operandBytes(c, 0, 1) }) : NO_COST,
    decl: level === "tile" ? ["(x: AnyTile | Tensor, indices: readonly number[]): number"] : undefined,
    row: { key: "read", call: "read(x, indices)", does: "one element as a scalar" },
    doc: level === "tile" ? "read(x, indices): one element of a tile, as a scalar of its dtype" : "read(t, indices): one element of a tensor, as a scalar (in kernels)",
    params: [{ name: "x", kind: "value" }, { name: "indices", kind: "values" }],
    infer(ctx) {
      const x = expectKind(ctx, 0, [level], "the operand of read");
      const idx = ctx.args[1];
      if (idx?.kind !== "list" || idx.items.length !== x.shape.length) {
        ctx.fail(`needs ${x.shape.length} indices for ${typeStr(x)}, got ${idx?.kind === "list" ? idx.items.length : "none"}`, `give one index per dimension, e.g. pl.read(x, [${x.shape.map(() => "0").join(", ")}])`);
      }
      return scalarT(x.dtype);
    },
    check(ctx) {
      const x = ctx.argTypes[0] as TileType | TensorType;
      constItems(ctx.args[1]).forEach((i, ax) => {
        const d = x.shape[ax];
        if (i !== null && typeof d === "number" && (i < 0 || i >= d)) {
          ctx.fail(`index ${i} is out of bounds for axis ${ax} of ${typeStr(x)} '${where(ctx, 0)}'`, `indices run from 0 to ${d - 1}`);
        }
      });
    },
    effects: level === "tensor" ? () => ({ reads: [0], writes: [] }) : undefined,
    evaluate([xv, iv], _attrs, env, call) {
      const x = xv as TileValue | TensorValue, idx = iv as number[];
      idx.forEach((i, ax) => {
        if (!Number.isInteger(i) || i < 0 || i >= x.shape[ax]) env.fail(`read index [${idx.join(", ")}] is outside a ${level} of shape [${x.shape.join(", ")}] (axis ${ax})`, call.span);
      });
      const k = dot(idx, stridesOf(x.shape));
      const v = x.kind === "tile" ? x.data[k] : readElem(x, k);
      return x.dtype === "bool" ? v !== 0 : v;
    },
  });
}

// ------------------------------------------------------------------ createTensor
registerOp({
  name: "tensor.create", pl: "createTensor", level: "orchestration", pure: true,
  decl: ["<D extends DType>(shape: readonly (number | string)[], dtype: D): Tensor<any, D>"],
  row: { key: "createTensor", call: "createTensor(shape, dtype)", does: "a zero-filled device tensor owned by the launch (outside `pl.at`; pass it to scopes and sub-kernels); a name in `shape` is a dynamic dimension of the entry's parameters (`[\"S\", \"S\"]`)" },
  doc: "createTensor(shape, dtype): a zero-filled device tensor owned by the launch (orchestration only; pass it to kernels and pl.at scopes); a string in shape names a dynamic dimension of the entry's parameters",
  params: [{ name: "shape", kind: "shape" }, { name: "dtype", kind: "dtype" }],
  infer(ctx) {
    const shape = ctx.attrs.shape;
    if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => (Number.isInteger(d) && (d as number) > 0) || (typeof d === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d)))) {
      ctx.fail(`shape must be a non-empty list of positive integers and dynamic dimension names, got ${JSON.stringify(shape)}`);
    }
    return tensorT(shape as (number | string)[], expectDType(ctx, "dtype", ctx.attrs.dtype));
  },
  evaluate(_a, _attrs, env, call) {
    const t = call.type as TensorType;
    const shape = t.shape.map((d) => {
      if (typeof d === "number") return d;
      const n = env.dims?.get(d);
      return n ?? env.fail(`createTensor: ${JSON.stringify(d)} is not a dynamic dimension of the entry's parameters`, call.span);
    });
    return newTensor(shape, t.dtype);
  },
});


// ------------------------------------------------------------------ transpose
/** The permutation that swaps axes a1 and a2 of a rank-r shape. */
const swapped = <T>(xs: readonly T[], a1: number, a2: number): T[] => { const o = [...xs]; [o[a1], o[a2]] = [o[a2], o[a1]]; return o; };
registerOp({
  name: "tile.transpose", pl: "transpose", level: "tile", pure: true, fusable: false, cost: NO_COST,
  decl: ["<D extends DType>(x: AnyTile<D>, axis1: number, axis2: number): AnyTile<D>", "<D extends DType>(x: Tensor<any, D>, axis1: number, axis2: number): Tensor<any, D>"],
  row: { key: "transpose", call: "transpose(x, axis1, axis2)", does: "x with two axes swapped (`transpose(k, 0, 1)` is Kᵀ); the validShape swaps with them" },
  doc: "transpose(x, axis1, axis2): x with axes axis1 and axis2 swapped",
  params: [{ name: "x", kind: "value" }, { name: "axis1", kind: "number" }, { name: "axis2", kind: "number" }],
  infer(ctx) {
    const x = expectTile(ctx, 0, "the operand of transpose");
    const r = x.shape.length;
    for (const k of ["axis1", "axis2"]) {
      const a = ctx.attrs[k];
      if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= r) ctx.fail(`${k} must be an axis of ${typeStr(x)} (0 to ${r - 1}), got ${JSON.stringify(a)}`);
    }
    const a1 = ctx.attrs.axis1 as number, a2 = ctx.attrs.axis2 as number;
    return tileT(swapped(x.shape, a1, a2), x.dtype, x.mem, x.validShape ? swapped(x.validShape, a1, a2) : null);
  },
  evaluate([xv], attrs, _env, call) {
    const x = xv as TileValue, t = call.type as TileType;
    const a1 = attrs.axis1 as number, a2 = attrs.axis2 as number;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    const xs = stridesOf(x.shape), os = stridesOf(t.shape);
    forWindow(x.shape, (k) => { out.data[dot(swapped(k, a1, a2), os)] = x.data[dot(k, xs)]; });
    return out;
  },
});

// ------------------------------------------------------------------ dim
registerOp({
  name: "tensor.dim", pl: "dim", level: "scalar", pure: true, cost: NO_COST,
  decl: ["(tensor: Tensor, axis: number): number"],
  row: { key: "dim", call: "dim(tensor, axis)", does: "the extent of an axis as a scalar (a constant for a static dimension)" },
  doc: "dim(tensor, axis): the extent of the tensor's axis, as an int64 scalar",
  params: [{ name: "tensor", kind: "value" }, { name: "axis", kind: "number" }],
  infer(ctx) {
    const t = expectKind(ctx, 0, ["tensor"], "the operand of dim");
    const a = ctx.attrs.axis;
    if (typeof a !== "number" || !Number.isInteger(a) || a < 0 || a >= t.shape.length) {
      ctx.fail(`axis must be an axis of ${typeStr(t)} (0 to ${t.shape.length - 1}), got ${JSON.stringify(a)}`);
    }
    return scalarT("int64");
  },
  fold(args, attrs) {
    const t = args[0].kind === "const" ? null : args[0].type;
    const d = t && t.kind === "tensor" ? t.shape[attrs.axis as number] : undefined;
    return typeof d === "number" ? d : undefined;
  },
  evaluate([tv], attrs) {
    return (tv as TensorValue).shape[attrs.axis as number];
  },
});

// Data movement: load, store, move, createTile, full, assign.
import { NO_COST, registerOp } from "../registry.js";
import { tensorT, tileT, typeStr, MEMS, numel, type Dim, type Mem, type TensorType, type TileType } from "../types.js";
import { mkTile, readElem, writeElem, toDType, type TensorValue, type TileValue } from "../values.js";
import { BINARY, newTensor } from "./elementwise.js";
import { argName, checkWindow, constItems, dot, expectDType, expectKind, expectShape, forWindow, ints, operandBytes, runtimeCheck, staticDims, stridesOf, validShapeOption } from "./common.js";

registerOp({
  name: "tile.load", pl: "load", level: "tile", pure: true,
  // the tile's valid region, read from the tensor
  cost: (c) => ({ readBytes: operandBytes(c, 0, numel(c.extents)) }),
  decl: ["<D extends DType = any>(tensor: Tensor<any, D>, offsets: readonly number[], shape: readonly number[], opts?: { readonly validShape?: readonly (number | Scalar<any>)[]; readonly mem?: Mem }): AnyTile<D>"],
  row: { key: "load", call: "load(tensor, offsets, shape, { validShape?, mem? })", does: "copy a window of a tensor into a tile (only `validShape` of it is read — constants or runtime integer scalars; the rest is pad: not written, no op but `fillpad` reads it)" },
  doc: "load(tensor, offsets, shape, { validShape?, mem? }): copy a window of a tensor into a tile",
  params: [
    { name: "tensor", kind: "value" }, { name: "offsets", kind: "values" }, { name: "shape", kind: "ints" },
    { name: "opts", kind: "options", optional: true, options: { validShape: "dims", mem: "mem" } },
  ],
  infer(ctx) {
    const t = expectKind(ctx, 0, ["tensor"], "the first operand of load");
    const shape = expectShape(ctx, "shape", ctx.attrs.shape);
    const valid = validShapeOption(ctx, shape, (v) => `validShape ${v} must have the tile's rank and fit in shape [${shape.join(", ")}]`);
    return tileT(shape, t.dtype, (ctx.attrs.mem as Mem | undefined) ?? "Vec", valid);
  },
  check(ctx) {
    // a partial tile (validShape) reads only its valid region (a runtime extent: checked at run time)
    const region = ctx.attrs.validShape == null ? ints(ctx.attrs.shape) : ctx.attrs.validShape as Dim[];
    checkWindow(ctx, "load", constItems(ctx.args[1]), region, ctx.argTypes[0] as TensorType, argName(ctx.args[0]));
  },
  effects: () => ({ reads: [0], writes: [] }),
  evaluate([t, offs], attrs, env, call) {
    const tensor = t as TensorValue;
    const offsets = offs as number[];
    const type = call.type as TileType;
    const shape = type.shape;
    // a runtime validShape arrives resolved to this launch's extents (interpret.ts, src/ir/valid.ts)
    const valid = staticDims(type.validShape);
    const region = valid ?? shape;
    runtimeCheck("load", "a tensor", offsets, region as number[], tensor.shape, (m) => env.fail(m, call.span));
    const tile = mkTile(shape, type.dtype, type.mem, valid);
    const ts = stridesOf(tensor.shape), rs = stridesOf(shape);
    // the valid region only (it may be smaller than the tile; the rest stays pad)
    forWindow(region as number[], (k) => { tile.data[dot(k, rs)] = readElem(tensor, dot(k, ts, offsets)); });
    return tile;
  },
});

registerOp({
  name: "tile.store", pl: "store", level: "tile", pure: false,
  // the tile's valid region, written to the tensor (an atomic add also reads it, and adds)
  cost: (c) => {
    const n = numel(c.operand(0) ?? []), bytes = operandBytes(c, 2, n);
    return c.attrs.atomic === "add" ? { writeBytes: bytes, readBytes: bytes, flops: n } : { writeBytes: bytes };
  },
  decl: ["<T extends Tensor>(tile: AnyTile, offsets: readonly number[], out: T, opts?: { readonly atomic?: \"add\" }): T"],
  row: { key: "store", call: "store(tile, offsets, out, { atomic? })", does: "write the tile's valid region into a tensor window; `{ atomic: \"add\" }` adds it to what is there" },
  doc: "store(tile, offsets, out): write the tile's valid region into a tensor window",
  params: [{ name: "tile", kind: "value" }, { name: "offsets", kind: "values" }, { name: "out", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { atomic: "string" } }],
  infer(ctx) {
    const tile = expectKind(ctx, 0, ["tile"], "the first operand of store");
    if (ctx.attrs.atomic != null && ctx.attrs.atomic !== "add") ctx.fail(`unknown atomic mode ${JSON.stringify(ctx.attrs.atomic)}`, `the only atomic store is { atomic: "add" }`);
    if (ctx.attrs.atomic === "add" && tile.dtype === "bool") ctx.fail("an atomic add store needs a numeric tile, got bool");
    const out = expectKind(ctx, 2, ["tensor"], "the output of store");
    if (tile.dtype !== out.dtype) {
      ctx.fail(`tile dtype ${tile.dtype} does not match tensor '${argName(ctx.args[2])}' dtype ${out.dtype}`, `cast the tile first: pl.cast(tile, "${out.dtype}")`);
    }
    return out;
  },
  check(ctx) {
    const tile = ctx.argTypes[0] as TileType;
    // only the valid region is written
    const region = tile.validShape ?? tile.shape;
    checkWindow(ctx, "store", constItems(ctx.args[1]), region, ctx.argTypes[2] as TensorType, argName(ctx.args[2]));
  },
  effects: (_args, attrs) => ({ reads: attrs.atomic === "add" ? [2] : [], writes: [2] }),
  evaluate([t, offs, o], attrs, env, call) {
    const tile = t as TileValue, out = o as TensorValue, offsets = offs as number[];
    const region = (tile.validShape ?? tile.shape) as number[];
    runtimeCheck("store", "a tensor", offsets, region, out.shape, (m) => env.fail(m, call.span));
    const ts = stridesOf(out.shape), rs = stridesOf(tile.shape);
    const add = attrs.atomic === "add";
    forWindow(region, (k) => {
      const at = dot(k, ts, offsets);
      writeElem(out, at, add ? toDType(BINARY.add.fn(readElem(out, at), tile.data[dot(k, rs)], out.dtype), out.dtype) : tile.data[dot(k, rs)]);
    });
    return out;
  },
});

registerOp({
  name: "tile.move", pl: "move", level: "tile", pure: true, cost: NO_COST,
  decl: ["<D extends DType, M extends Mem>(tile: AnyTile<D>, mem: M): Tile<any, D, M, any>"],
  row: { key: "move", call: "move(tile, mem)", does: "the same data in another memory space (`pl.Mem.Vec/Mat/Left/Right/Acc/Bias`; numerically the identity)" },
  doc: "move(tile, mem): the same data in another memory space (numerically the identity)",
  params: [{ name: "tile", kind: "value" }, { name: "mem", kind: "mem" }],
  infer(ctx) {
    const t = expectKind(ctx, 0, ["tile"], "the operand of move");
    const mem = ctx.attrs.mem as Mem;
    if (!MEMS.includes(mem)) ctx.fail(`unknown memory space ${JSON.stringify(mem)}`, `use pl.Mem.Vec, Mat, Left, Right, Acc or Bias`);
    return tileT(t.shape, t.dtype, mem, t.validShape);
  },
  evaluate([t], attrs) {
    const tile = t as TileValue;
    return mkTile(tile.shape, tile.dtype, attrs.mem as Mem, tile.validShape, Float64Array.from(tile.data));
  },
});

registerOp({
  name: "tile.create", pl: "createTile", level: "tile", pure: true, cost: NO_COST,
  decl: ["<D extends DType>(shape: readonly number[], dtype: D, mem?: Mem): AnyTile<D>"],
  row: { key: "create", call: "createTile(shape, dtype, mem?)", does: "a new tile, zero-filled" },
  doc: "createTile(shape, dtype, mem?): a new tile (zero-filled)",
  params: [{ name: "shape", kind: "ints" }, { name: "dtype", kind: "dtype" }, { name: "mem", kind: "mem", optional: true }],
  infer(ctx) {
    return tileT(expectShape(ctx, "shape", ctx.attrs.shape), expectDType(ctx, "dtype", ctx.attrs.dtype), (ctx.attrs.mem as Mem | undefined) ?? "Vec");
  },
  evaluate(_a, _attrs, _env, call) {
    const t = call.type as TileType;
    return mkTile(t.shape, t.dtype, t.mem);
  },
});

// pl.full has no operand to choose its level by: it is a tile, and a tensor where its use asks for one
// (written in place as an operand of a tensor-level op or as pl.assign's value; the parser retypes it).
for (const level of ["tile", "tensor"] as const) {
  registerOp({
    name: `${level}.full`, pl: "full", level, pure: true, cost: NO_COST,
    decl: level === "tile" ? ["<D extends DType>(shape: readonly number[], dtype: D, value: number): Full<D>"] : undefined,
    row: { key: "full", call: "full(shape, dtype, value)", does: "filled with a constant: a tile, or a tensor where it is written as an operand of a tensor-level op or as `pl.assign`'s value (auto-tiled)" },
    doc: level === "tile"
      ? "full(shape, dtype, value): a tile filled with a constant; a tensor where it is written as an operand of a tensor-level op or as pl.assign's value"
      : "full(shape, dtype, value) as a tensor (an operand of a tensor-level op, or pl.assign's value): every element the constant (inside pl.at; lowered to constant tiles)",
    params: [{ name: "shape", kind: "ints" }, { name: "dtype", kind: "dtype" }, { name: "value", kind: "number" }],
    infer(ctx) {
      if (typeof ctx.attrs.value !== "number") ctx.fail(`value must be a constant number, got ${JSON.stringify(ctx.attrs.value)}`);
      const shape = expectShape(ctx, "shape", ctx.attrs.shape), dtype = expectDType(ctx, "dtype", ctx.attrs.dtype);
      return level === "tile" ? tileT(shape, dtype) : tensorT(shape, dtype);
    },
    // a tile of the tensor: the constant in the tile's shape (a partial edge tile keeps its validShape)
    tileExpr: level === "tensor" ? (_args, attrs, build, at) => {
      const { dtype, value } = attrs;
      if (!at.validShape) return build("tile.full", [], { shape: [...at.shape], dtype, value });
      return build("tile.broadcastTo", [build("tile.full", [], { shape: at.shape.map(() => 1), dtype, value })], { shape: [...at.shape], validShape: [...at.validShape] });
    } : undefined,
    evaluate(_a, attrs, _env, call) {
      const t = call.type as TileType | TensorType;
      const v = toDType(attrs.value as number, t.dtype);
      if (t.kind === "tile") return mkTile(t.shape, t.dtype, t.mem, null, new Float64Array(numel(t.shape)).fill(v));
      const out = newTensor(t.shape as number[], t.dtype);
      for (let i = 0; i < out.data.length; i++) writeElem(out, i, v);
      return out;
    },
  });
}

registerOp({
  name: "tensor.assign", pl: "assign", level: "tensor", pure: false,
  decl: ["<T extends Tensor>(out: T, value: Tensor): T"],
  row: { key: "assign", call: "assign(out, value)", does: "whole-tensor write, `out[:] = value` (value an elementwise/reduction/matmul expression of tensors; broadcasts `[1,N]`, `[M,1]`)" },
  doc: "assign(out, value): whole-tensor write (out[:] = value)",
  params: [{ name: "out", kind: "value" }, { name: "value", kind: "value" }],
  infer(ctx) {
    const out = expectKind(ctx, 0, ["tensor"], "the target of assign");
    if (ctx.argTypes[1]?.kind === "tile") {
      ctx.fail(`the value must be a tensor, got ${typeStr(ctx.argTypes[1])}`,
        `write a tile with pl.store(tile, offsets, ${argName(ctx.args[0])}); a pl.full is a tensor only where it is written in place (pl.assign(out, pl.full(shape, dtype, value))), bound to a name it is a tile`);
    }
    const v = expectKind(ctx, 1, ["tensor"], "the value of assign");
    if (v.dtype !== out.dtype || v.shape.length !== out.shape.length || v.shape.some((d, i) => typeof d === "number" && typeof out.shape[i] === "number" && d !== out.shape[i])) {
      ctx.fail(`value ${typeStr(v)} does not match target '${argName(ctx.args[0])}' ${typeStr(out)}`);
    }
    return out;
  },
  effects: () => ({ reads: [1], writes: [0] }),
  evaluate([o, v], _attrs, env, call) {
    const out = o as TensorValue, val = v as TensorValue;
    if (val.shape.every((d, i) => d === out.shape[i])) {
      for (let i = 0; i < out.data.length; i++) writeElem(out, i, toDType(readElem(val, i), out.dtype));
      return out;
    }
    // a value of run-time extent (a pl.slice window of a dynamic dimension): it is written at the
    // start of out, out[0 : shape(value)]
    const off = val.shape.map(() => 0);
    runtimeCheck("assign", "a tensor", off, val.shape, out.shape, (m) => env.fail(m, call.span));
    const os = stridesOf(out.shape), vs = stridesOf(val.shape);
    forWindow(val.shape, (k) => writeElem(out, dot(k, os), toDType(readElem(val, dot(k, vs)), out.dtype)));
    return out;
  },
});

// Shared building blocks for op definitions.
import { exprType, type Expr } from "../nodes.js";
import { runtimeDims, type CostCtx, type InferCtx, type OpCost } from "../registry.js";
import type { Dim, DType, TensorType, TileType, Type } from "../types.js";
import { DTYPE_BYTES, RUNTIME_DIM, isDType, isInt, numel, shapeStr, typeStr } from "../types.js";

export const ints = (a: unknown): number[] => (Array.isArray(a) ? a.map(Number) : []);

export function expectKind<K extends Type["kind"]>(ctx: InferCtx, i: number, kinds: readonly K[], what: string): Extract<Type, { kind: K }> {
  const t = ctx.argTypes[i];
  if (!t || !(kinds as readonly string[]).includes(t.kind)) {
    ctx.fail(`${what} must be a ${kinds.join(" or ")}, got ${t ? typeStr(t) : "nothing"}`,
      kinds.includes("tile" as K) && t?.kind === "tensor" ? "load the tensor into a tile first (pl.load), or use the tensor-level form inside pl.at" : undefined);
  }
  return t as Extract<Type, { kind: K }>;
}

export function expectShape(ctx: InferCtx, name: string, shape: unknown): number[] {
  if (!Array.isArray(shape) || shape.length === 0 || !shape.every((d) => Number.isInteger(d) && (d as number) > 0)) {
    ctx.fail(`${name} must be a non-empty list of positive integers, got ${JSON.stringify(shape)}`);
  }
  return shape as number[];
}

export function expectDType(ctx: InferCtx, name: string, d: unknown): DType {
  if (!isDType(d)) ctx.fail(`unknown dtype ${JSON.stringify(d)} for '${name}'`, `use one of pl.FP32, pl.FP16, pl.BF16, pl.INT8, pl.INT16, pl.INT32, pl.INT64, pl.UINT8, pl.BOOL`);
  return d;
}

/** Constant integer values of a ListExpr's items (null where not constant). */
export function constItems(e: Expr | undefined): (number | null)[] {
  if (!e || e.kind !== "list") return [];
  return e.items.map((it) => (it.kind === "const" && typeof it.value === "number" ? it.value : null));
}

/**
 * The `validShape` option of an op ("dims" kind): constants, and RUNTIME_DIM where the extent
 * is a runtime integer scalar (its expression is the trailing list operand). Checks the rank,
 * the constant extents against `shape` (`message` gets the printed validShape) and that every
 * runtime extent is an integer scalar; the runtime values are checked at run time.
 */
export function validShapeOption(ctx: InferCtx, shape: readonly number[], message: (v: string) => string): Dim[] | null {
  const v = ctx.attrs.validShape;
  if (v == null) return null;
  if (!Array.isArray(v) || !v.every((d) => d === RUNTIME_DIM || (typeof d === "number" && Number.isInteger(d)))) {
    return ctx.fail(`validShape must be a list of integers or integer scalars, got ${JSON.stringify(v)}`);
  }
  const valid = v as Dim[];
  const text = `[${valid.map((d) => (typeof d === "number" ? String(d) : d)).join(", ")}]`;
  if (valid.length !== shape.length || valid.some((d, i) => typeof d === "number" && (d < 0 || d > shape[i]))) ctx.fail(message(text));
  const nRuntime = valid.filter((d) => typeof d !== "number").length;
  if (nRuntime) {
    const list = runtimeDims(ctx.op, ctx.args, ctx.attrs).lists.get("validShape");
    if (!list || list.items.length !== nRuntime) ctx.fail(`validShape ${text} has ${nRuntime} runtime extent(s) but ${list?.items.length ?? 0} expression(s)`);
    list.items.forEach((it, k) => {
      const t = it.kind === "const" ? { kind: "scalar" as const, dtype: it.dtype } : it.type;
      if (t.kind !== "scalar" || !isInt(t.dtype)) {
        ctx.fail(`validShape extents must be integers or integer scalars (pl.Scalar<pl.INT32/INT64>, loop indices), extent ${k + 1} of ${text} is ${typeStr(t)}`,
          "convert it first, e.g. Math.floor(x)");
      }
    });
  }
  return valid;
}

/** The numbers of a validShape resolved to run-time values (the interpreter resolves RUNTIME_DIM before evaluate). */
export function staticDims(v: readonly Dim[] | null): number[] | null {
  if (!v) return null;
  if (!v.every((d) => typeof d === "number")) throw new Error(`internal: unresolved runtime validShape ${shapeStr(v)} in the reference semantics`);
  return v as number[];
}

/**
 * Check a window [off, off+shape) against a tensor's static dims; reports the first axis out of
 * bounds. A runtime extent in `shape` (a string) is checked at run time; here only its offset.
 */
export function checkWindow(ctx: InferCtx, what: string, offsets: (number | null)[], shape: readonly Dim[], tensor: TensorType, tensorName: string): void {
  if (offsets.length !== tensor.shape.length) {
    ctx.fail(`${what} has ${offsets.length} offsets but tensor '${tensorName}' has rank ${tensor.shape.length}`,
      `give one offset per dimension of ${shapeStr(tensor.shape)}`);
  }
  if (shape.length !== tensor.shape.length) {
    ctx.fail(`${what} shape ${shapeStr(shape)} has rank ${shape.length} but tensor '${tensorName}' has rank ${tensor.shape.length}`);
  }
  for (let ax = 0; ax < shape.length; ax++) {
    const off = offsets[ax];
    const dim = tensor.shape[ax];
    if (off === null || typeof dim !== "number") continue;
    const ext = shape[ax];
    if (typeof ext !== "number") {
      if (off < 0 || off > dim) {
        ctx.fail(`${what} window [${offsets.map((o) => o ?? "?").join(", ")}] + [${shape.map((d) => (typeof d === "number" ? d : "?")).join(", ")}] is outside tensor '${tensorName}' of shape ${shapeStr(tensor.shape)} (axis ${ax}: offset ${off} outside 0..${dim})`,
          `keep offset + shape within the tensor on every axis`);
      }
      continue;
    }
    if (off < 0 || off + ext > dim) {
      ctx.fail(`${what} window [${offsets.map((o) => o ?? "?").join(", ")}] + ${shapeStr(shape)} is outside tensor '${tensorName}' of shape ${shapeStr(tensor.shape)} (axis ${ax}: ${off}..${off + ext} > ${dim})`,
        `keep offset + shape within the tensor on every axis`);
    }
  }
}

export const argName = (e: Expr | undefined): string => (e && e.kind === "var" ? e.name : "<expr>");

/** The i-th operand as a tile (a clear error otherwise). */
export function expectTile(ctx: InferCtx, i: number, what: string): TileType {
  return expectKind(ctx, i, ["tile"], what);
}

/** A 2-D tile operand (reductions, broadcasts, matmul, concat). */
export function expect2D(ctx: InferCtx, i: number, what: string): TileType {
  const t = expectTile(ctx, i, what);
  if (t.shape.length !== 2) ctx.fail(`${what} must be a 2-D tile, got ${typeStr(t)}`, "reshape it to [rows, cols] first: pl.reshape(x, [M, N])");
  return t;
}

/** Row-major strides of a static shape. */
export function stridesOf(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/**
 * Check that the window [off, off+shape) fits inside `outer` on every axis where the offset
 * is a constant (the rest is checked at run time).
 */
export function checkTileWindow(ctx: InferCtx, what: string, offsets: (number | null)[], shape: readonly number[], outer: readonly number[], outerName: string, kind = "tile"): void {
  if (offsets.length !== outer.length) {
    ctx.fail(`${what} has ${offsets.length} offsets but ${kind} '${outerName}' has rank ${outer.length}`, `give one offset per dimension of ${shapeStr(outer)}`);
  }
  if (shape.length !== outer.length) ctx.fail(`${what} shape ${shapeStr(shape)} has rank ${shape.length} but ${kind} '${outerName}' has rank ${outer.length}`);
  for (let ax = 0; ax < shape.length; ax++) {
    const off = offsets[ax];
    if (shape[ax] > outer[ax] || (off !== null && (off < 0 || off + shape[ax] > outer[ax]))) {
      ctx.fail(`${what} window [${offsets.map((o) => o ?? "?").join(", ")}] + ${shapeStr(shape)} is outside ${kind} '${outerName}' of shape ${shapeStr(outer)} (axis ${ax}: ${off ?? "?"}..${off === null ? "?" : off + shape[ax]} > ${outer[ax]})`,
        "keep offset + shape within the bounds on every axis");
    }
  }
}

/** dtype lowest / highest (fillpad "min" / "max"). */
export function dtypeLowest(d: DType): number {
  switch (d) {
    case "float32": return -3.4028234663852886e38;
    case "float16": return -65504;
    case "bfloat16": return -3.3895313892515355e38;
    case "int8": return -128;
    case "int16": return -32768;
    case "int32": return -2147483648;
    case "int64": return -9223372036854775808;
    case "uint8": case "bool": return 0;
  }
}
export function dtypeHighest(d: DType): number {
  switch (d) {
    case "float32": return 3.4028234663852886e38;
    case "float16": return 65504;
    case "bfloat16": return 3.3895313892515355e38;
    case "int8": return 127;
    case "int16": return 32767;
    case "int32": return 2147483647;
    case "int64": return 9223372036854775807;
    case "uint8": return 255;
    case "bool": return 1;
  }
}

/** Visit every index of a window of `shape` (row-major, any rank); `fn` gets the index (reused array). */
export function forWindow(shape: readonly number[], fn: (k: number[]) => void): void {
  const n = numel(shape);
  const idx = new Array<number>(shape.length).fill(0);
  for (let e = 0; e < n; e++) {
    fn(idx);
    for (let ax = shape.length - 1; ax >= 0; ax--) { if (++idx[ax] < shape[ax]) break; idx[ax] = 0; }
  }
}
/** Flat offset of `idx` (+ `off`) under `strides`. */
export const dot = (idx: readonly number[], strides: readonly number[], off?: readonly number[]) =>
  idx.reduce((s, v, ax) => s + (v + (off ? off[ax] : 0)) * strides[ax], 0);

/** A window [offsets, offsets + shape) must lie inside `outer`; else fail with the axis. */
export function runtimeCheck(what: string, kind: string, offsets: readonly number[], shape: readonly number[], outer: readonly number[], fail: (m: string) => never): void {
  for (let ax = 0; ax < shape.length; ax++) {
    if (offsets[ax] < 0 || offsets[ax] + shape[ax] > outer[ax]) {
      fail(`${what} window [${offsets.join(", ")}] + [${shape.join(", ")}] is outside ${kind} of shape [${outer.join(", ")}] (axis ${ax})`);
    }
  }
}

/** broadcastTo's rule (tiles and tensors): same rank, and only dimensions of 1 stretch. */
export function expectBroadcastable(ctx: InferCtx, x: TileType | TensorType, shape: readonly number[]): void {
  if (shape.length !== x.shape.length || x.shape.some((d, i) => d !== 1 && d !== shape[i])) {
    ctx.fail(`cannot broadcast ${typeStr(x)} to [${shape.join(", ")}]`, "only dimensions of 1 stretch, and the rank stays");
  }
}

// ---------------------------------------------------------------- cost rules (src/ir/cost.ts)

/** Bytes of `n` elements of operand `i`'s dtype (a tensor: what moves between it and a tile). */
export function operandBytes(c: CostCtx, i: number, n: number): number {
  const t = exprType(c.args[i]);
  return t.kind === "tensor" || t.kind === "tile" ? n * DTYPE_BYTES[t.dtype] : 0;
}
/** `k` ops per valid element of the result (elementwise with broadcast: rowExpandAdd, prelu). */
export const perResultElement = (k = 1) => (c: CostCtx): OpCost => ({ flops: k * numel(c.extents) });
/** One op per valid element of operand `i` (a reduction: each input element is combined once). */
export const perOperandElement = (i = 0) => (c: CostCtx): OpCost => ({ flops: numel(c.operand(i) ?? []) });

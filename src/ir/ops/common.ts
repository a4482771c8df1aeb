// Shared building blocks for op definitions.
import type { Attrs, Expr } from "../nodes.js";
import type { InferCtx } from "../registry.js";
import type { DType, Dim, TensorType, TileType, Type } from "../types.js";
import { isDType, shapeStr, typeStr } from "../types.js";
import type { TensorValue, TileValue, Value } from "../values.js";

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

/** Check a window [off, off+shape) against a tensor's static dims; reports the first axis out of bounds. */
export function checkWindow(ctx: InferCtx, what: string, offsets: (number | null)[], shape: readonly number[], tensor: TensorType, tensorName: string): void {
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
    if (off < 0 || off + shape[ax] > dim) {
      ctx.fail(`${what} window [${offsets.map((o) => o ?? "?").join(", ")}] + ${shapeStr(shape)} is outside tensor '${tensorName}' of shape ${shapeStr(tensor.shape)} (axis ${ax}: ${off}..${off + shape[ax]} > ${dim})`,
        `keep offset + shape within the tensor on every axis`);
    }
  }
}

export const argName = (e: Expr | undefined): string => (e && e.kind === "var" ? e.name : "<expr>");

export function tileOf(t: Type): TileType | undefined {
  return t.kind === "tile" ? t : undefined;
}
export const dimsOf = (t: TensorType): Dim[] => [...t.shape];

export const asTile = (v: Value): TileValue => v as TileValue;
export const asTensor = (v: Value): TensorValue => v as TensorValue;
export const attrs = (a: Attrs) => a;

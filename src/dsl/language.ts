// The `pl` namespace kernels are written against:
//   import { pl } from "tspto";            or   import * as pl from "tspto/language";
//
// Kernels are TypeScript source that is parsed, not executed. Everything here is either a
// type (annotation only), a constant (dtypes, memory spaces, levels), a typed declaration of
// an op so that kernels type-check and autocomplete (calling one at run time throws
// E_NOT_RUNNABLE). `pl.jit` is added by src/language.ts (the module users import as `pl`).
// The op declarations are generated from the registry (src/tools/gen_ops.ts -> ops.generated.ts).
import { notRunnable } from "./not_runnable.js";
import type { AttrValue } from "../ir/nodes.js";

// ---------------------------------------------------------------- dtypes

export const FP32 = "float32";
export type FP32 = typeof FP32;
export const FP16 = "float16";
export type FP16 = typeof FP16;
export const BF16 = "bfloat16";
export type BF16 = typeof BF16;
export const INT8 = "int8";
export type INT8 = typeof INT8;
export const INT16 = "int16";
export type INT16 = typeof INT16;
export const INT32 = "int32";
export type INT32 = typeof INT32;
export const INT64 = "int64";
export type INT64 = typeof INT64;
export const UINT8 = "uint8";
export type UINT8 = typeof UINT8;
export const BOOL = "bool";
export type BOOL = typeof BOOL;

export type DType = FP32 | FP16 | BF16 | INT8 | INT16 | INT32 | INT64 | UINT8 | BOOL;
/** A tensor dimension: a static extent or a symbolic (dynamic) dimension's name. */
export type Dim = number | string;
export type RoundMode = "round" | "rint" | "floor" | "ceil" | "trunc";

// ---------------------------------------------------------------- enums (values and types)

/** Hardware levels for `pl.at`. */
// eslint-disable-next-line @typescript-eslint/no-namespace
export namespace Level {
  export const CORE_GROUP = "CORE_GROUP";
  export type CORE_GROUP = typeof CORE_GROUP;
}
export type Level = Level.CORE_GROUP;

/** On-chip memory spaces of a tile. */
// eslint-disable-next-line @typescript-eslint/no-namespace
export namespace Mem {
  export const Vec = "Vec";
  export type Vec = typeof Vec;
  export const Mat = "Mat";
  export type Mat = typeof Mat;
  export const Left = "Left";
  export type Left = typeof Left;
  export const Right = "Right";
  export type Right = typeof Right;
  export const Acc = "Acc";
  export type Acc = typeof Acc;
  export const Bias = "Bias";
  export type Bias = typeof Bias;
}
export type Mem = Mem.Vec | Mem.Mat | Mem.Left | Mem.Right | Mem.Acc | Mem.Bias;

// ---------------------------------------------------------------- annotation types

declare const tensorBrand: unique symbol;
declare const tileBrand: unique symbol;
declare const outBrand: unique symbol;
declare const inoutBrand: unique symbol;

/**
 * A tensor parameter (device memory). Structurally loose on purpose: `HostTensor`,
 * `DeviceTensor` and tensor-likes `{ data, shape | dims }` are all assignable, so a call of
 * a decorated static method type-checks. `S` and `D` are read by the parser, not by tsc.
 */
export type Tensor<S extends readonly Dim[] = any, D extends DType = any> = object & {
  readonly data?: unknown;
  readonly shape?: unknown;
  readonly dims?: unknown;
  readonly dtype?: unknown;
  readonly type?: unknown;
  readonly [tensorBrand]?: readonly [S, D];
};
/** An output parameter: written, not read. */
export type Out<T> = T & { readonly [outBrand]?: "out" };
/** A parameter that is read and written. */
export type InOut<T> = T & { readonly [inoutBrand]?: "inout" };

/** Extra tile facts printed by the IR: `{ validShape: [..]; addr: N }`. */
export interface TileExtra {
  readonly validShape?: readonly Dim[];
  readonly addr?: number;
}
/** An on-chip tile of a core. */
export interface Tile<S extends readonly number[] = any, D extends DType = any, M extends Mem = Mem.Vec, X = {}> {
  readonly [tileBrand]: { readonly shape: S; readonly dtype: D; readonly mem: M; readonly extra: X };
}
/** A scalar of dtype D (a JS number; booleans for pl.BOOL). */
export type Scalar<D extends DType = INT64> = D extends BOOL ? boolean : number;

/** Any tile (what ops produce: shape, memory and extras are known to the compiler, not to tsc). */
export type AnyTile<D extends DType = any> = Tile<any, D, any, any>;
export type TileOrTensor = AnyTile | Tensor;
declare const fullBrand: unique symbol;
/**
 * What `pl.full` gives: a tile, or a tensor where it is written as an operand of a tensor-level
 * op or as `pl.assign`'s value (the compiler takes its level from that use).
 */
export type Full<D extends DType = any> = AnyTile<D> & Tensor<any, D> & { readonly [fullBrand]: D };
/** The other operand of a binary op on T: a tile for a tile, a tensor for a tensor (either for a pl.full). */
export type Operand<T> = T extends { readonly [fullBrand]: unknown } ? TileOrTensor : T extends AnyTile ? AnyTile : T extends Tensor ? Tensor : never;
/** The bool result of pl.cmp on T. */
export type BoolOf<T> = T extends AnyTile ? AnyTile<BOOL> : Tensor<any, BOOL>;
export type CmpMode = "eq" | "ne" | "lt" | "le" | "gt" | "ge";
export type PadValue = "zero" | "min" | "max";

// ---------------------------------------------------------------- ops
// The op declarations are generated from the registry (src/tools/gen_ops.ts).
export * from "./ops.generated.js";

// ---------------------------------------------------------------- statements

/** The on-chip scope: `pl.at(pl.Level.CORE_GROUP, () => { ... })`. */
export function at(level: Level, body: () => void): void {
  return notRunnable("at");
}
/** A real loop in the IR: `for (const i of pl.range(n))`, `pl.range(start, stop, step?)`. */
export function range(stop: number): Iterable<number>;
export function range(start: number, stop: number, step?: number): Iterable<number>;
export function range(startOrStop: number, stop?: number, step?: number): Iterable<number> {
  return notRunnable("range");
}

// The IR text forms (what `Program.asText()` prints for SSA-form loops and branches).

/** A loop with carried values: `const [r] = pl.forRange(0, n, 1, [init], (i, a) => { ...; pl.yield(next); })`. */
export function forRange<A extends unknown[]>(
  start: number, stop: number, step: number, inits: [...A], body: (i: number, ...iterArgs: A) => void,
): A {
  return notRunnable("forRange");
}
/** A while loop with carried values: `const [r] = pl.whileLoop([init], (a) => cond, (a) => { ...; pl.yield(next); })`. */
export function whileLoop<A extends unknown[]>(inits: [...A], cond: (...iterArgs: A) => boolean, body: (...iterArgs: A) => void): A {
  return notRunnable("whileLoop");
}
/** A branch with results: `const [r] = pl.ifElse(c, () => { pl.yield(a); }, () => { pl.yield(b); })`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function ifElse<R extends unknown[] = any[]>(cond: boolean, then: () => void, otherwise: () => void): R {
  return notRunnable("ifElse");
}
/** End a forRange/whileLoop body or an ifElse branch with the carried values. */
function yield_(...values: unknown[]): void {
  return notRunnable("yield");
}
/** Leave the innermost loop with its results. */
function break_(...values: unknown[]): void {
  return notRunnable("break");
}
/** Next iteration with the next carried values. */
function continue_(...values: unknown[]): void {
  return notRunnable("continue");
}
/** A scalar constant of a given dtype: `pl.const(7, pl.INT32)`. */
function const_<D extends DType>(value: Scalar<D>, dtype: D): Scalar<D> {
  return notRunnable("const");
}
/** A call with extra attributes (what passes record on calls; printed IR): `pl.withAttrs(f(a), { scopeId: 0 })`. */
export function withAttrs<T>(call: T, attrs: Readonly<Record<string, AttrValue>>): T {
  return notRunnable("withAttrs");
}
export { yield_ as yield, break_ as break, continue_ as continue, const_ as const };

// The `pl` namespace kernels are written against:
//   import { pl } from "tspto";            or   import * as pl from "tspto/language";
//
// Kernels are TypeScript source that is parsed, not executed. Everything here is either a
// type (annotation only), a constant (dtypes, memory spaces, levels), a typed declaration of
// an op so that kernels type-check and autocomplete (calling one at run time throws
// E_NOT_RUNNABLE). `pl.jit` is added by src/language.ts (the module users import as `pl`).
import { TsptoRuntimeError } from "../ir/errors.js";
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
type TileOrTensor = AnyTile | Tensor;
type Operand<T> = T extends AnyTile ? AnyTile : T extends Tensor ? Tensor : never;

// ---------------------------------------------------------------- the not-runnable guard

function notRunnable(name: string): never {
  throw new TsptoRuntimeError("E_NOT_RUNNABLE",
    `pl.${name} was called at run time; kernels are parsed, not run — wrap the function with pl.jit and call the jit function`);
}

// ---------------------------------------------------------------- ops (typed declarations)
// Each mirrors a registry op (src/ir/ops): the parser maps `pl.<name>(...)` source arguments
// to IR operands and attributes by the registry's `params`; these signatures only serve tsc.

/** Copy the window `tensor[offsets : offsets + shape]` into a tile. */
export function load<D extends DType = any>(
  tensor: Tensor<any, D>, offsets: readonly number[], shape: readonly number[],
  opts?: { readonly validShape?: readonly number[]; readonly mem?: Mem },
): AnyTile<D> {
  return notRunnable("load");
}
/** Write the tile's valid region into `out` at `offsets`. */
export function store<T extends Tensor>(tile: AnyTile, offsets: readonly number[], out: T): T {
  return notRunnable("store");
}
/** The same tile in another memory space (numerically the identity). */
export function move<D extends DType, M extends Mem>(tile: AnyTile<D>, mem: M): Tile<any, D, M, any> {
  return notRunnable("move");
}
/** A new zero-filled tile. */
export function createTile<D extends DType>(shape: readonly number[], dtype: D, mem?: Mem): AnyTile<D> {
  return notRunnable("createTile");
}
/** A tile filled with a constant. */
export function full<D extends DType>(shape: readonly number[], dtype: D, value: number): AnyTile<D> {
  return notRunnable("full");
}
/** Whole-tensor write (`out[:] = value`). */
export function assign<T extends Tensor>(out: T, value: Tensor): T {
  return notRunnable("assign");
}

export function add<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("add");
}
export function sub<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("sub");
}
export function mul<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("mul");
}
export function div<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("div");
}
export function maximum<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("maximum");
}
export function minimum<T extends TileOrTensor>(a: T, b: Operand<T> | number): T {
  return notRunnable("minimum");
}
export function exp<T extends TileOrTensor>(x: T): T {
  return notRunnable("exp");
}
export function log<T extends TileOrTensor>(x: T): T {
  return notRunnable("log");
}
export function sqrt<T extends TileOrTensor>(x: T): T {
  return notRunnable("sqrt");
}
export function rsqrt<T extends TileOrTensor>(x: T): T {
  return notRunnable("rsqrt");
}
export function recip<T extends TileOrTensor>(x: T): T {
  return notRunnable("recip");
}
export function neg<T extends TileOrTensor>(x: T): T {
  return notRunnable("neg");
}
export function abs<T extends TileOrTensor>(x: T): T {
  return notRunnable("abs");
}
export function relu<T extends TileOrTensor>(x: T): T {
  return notRunnable("relu");
}
/** Convert to `dtype` (modes round — the default —, rint, floor, ceil, trunc). */
export function cast<D extends DType>(x: AnyTile, dtype: D, mode?: RoundMode): AnyTile<D>;
export function cast<D extends DType>(x: Tensor, dtype: D, mode?: RoundMode): Tensor<any, D>;
export function cast(x: unknown, dtype: DType, mode?: RoundMode): unknown {
  return notRunnable("cast");
}

// ---------------------------------------------------------------- reductions and broadcasts

/** The maximum of each row: `x[M,N] -> [M,1]`; `tmp` is a scratch tile of x's shape (PyPTO's contract). */
export function rowMax<D extends DType>(x: AnyTile<D>, tmp: AnyTile): AnyTile<D> {
  return notRunnable("rowMax");
}
/** The sum of each row: `x[M,N] -> [M,1]` (float sums accumulate in fp64); `tmp`: a scratch tile of x's shape. */
export function rowSum<D extends DType>(x: AnyTile<D>, tmp: AnyTile): AnyTile<D> {
  return notRunnable("rowSum");
}
/** The minimum of each row: `x[M,N] -> [M,1]`; `tmp`: a scratch tile of x's shape. */
export function rowMin<D extends DType>(x: AnyTile<D>, tmp: AnyTile): AnyTile<D> {
  return notRunnable("rowMin");
}
/** The sum of each column: `x[M,N] -> [1,N]`. */
export function colSum<D extends DType>(x: AnyTile<D>, tmp?: AnyTile): AnyTile<D> {
  return notRunnable("colSum");
}
/** The maximum of each column: `x[M,N] -> [1,N]`. */
export function colMax<D extends DType>(x: AnyTile<D>, tmp?: AnyTile): AnyTile<D> {
  return notRunnable("colMax");
}
/** The minimum of each column: `x[M,N] -> [1,N]`. */
export function colMin<D extends DType>(x: AnyTile<D>, tmp?: AnyTile): AnyTile<D> {
  return notRunnable("colMin");
}
/** `t[M,N] + v[M,1]`, v broadcast along each row. */
export function rowExpandAdd<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("rowExpandAdd");
}
/** `t[M,N] - v[M,1]`, v broadcast along each row. */
export function rowExpandSub<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("rowExpandSub");
}
/** `t[M,N] * v[M,1]`, v broadcast along each row. */
export function rowExpandMul<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("rowExpandMul");
}
/** `t[M,N] / v[M,1]`, v broadcast along each row. */
export function rowExpandDiv<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("rowExpandDiv");
}
/** `t[M,N] + v[1,N]`, v broadcast down each column. */
export function colExpandAdd<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("colExpandAdd");
}
/** `t[M,N] - v[1,N]`, v broadcast down each column. */
export function colExpandSub<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("colExpandSub");
}
/** `t[M,N] * v[1,N]`, v broadcast down each column. */
export function colExpandMul<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("colExpandMul");
}
/** `t[M,N] / v[1,N]`, v broadcast down each column. */
export function colExpandDiv<D extends DType>(t: AnyTile<D>, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("colExpandDiv");
}
/** `v[M,1]` broadcast to the target's shape (the target's values are unused). */
export function rowExpand<D extends DType>(target: AnyTile, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("rowExpand");
}
/** `v[1,N]` broadcast to the target's shape (the target's values are unused). */
export function colExpand<D extends DType>(target: AnyTile, v: AnyTile<D>): AnyTile<D> {
  return notRunnable("colExpand");
}

// ---------------------------------------------------------------- shape ops, matmul, orchestration buffers

export type PadValue = "zero" | "min" | "max";
/** The same elements (row-major order) in another shape with as many elements. */
export function reshape<D extends DType>(x: AnyTile<D>, shape: readonly number[]): AnyTile<D> {
  return notRunnable("reshape");
}
/** The sub-tile (or, inside pl.at, the tensor window) `x[offset : offset + shape]`. */
export function slice<D extends DType>(x: AnyTile<D>, shape: readonly number[], offset: readonly number[]): AnyTile<D>;
export function slice<D extends DType>(x: Tensor<any, D>, shape: readonly number[], offset: readonly number[]): Tensor<any, D>;
export function slice(x: unknown, shape: readonly number[], offset: readonly number[]): unknown {
  return notRunnable("slice");
}
/** `a[M,Na]` and `b[M,Nb]` side by side: `[M, Na+Nb]`. */
export function concat<D extends DType>(a: AnyTile<D>, b: AnyTile<D>): AnyTile<D> {
  return notRunnable("concat");
}
/** Tiles: a copy of `target` with `src` written at `offset`. Tensors (inside pl.at): writes `src` into `target` at `offset`. */
export function assemble<D extends DType>(target: AnyTile<D>, src: AnyTile<D>, offset: readonly number[]): AnyTile<D>;
export function assemble<T extends Tensor>(target: T, src: Tensor, offset: readonly number[]): T;
export function assemble(target: unknown, src: unknown, offset: readonly number[]): unknown {
  return notRunnable("assemble");
}
/** `x` with the region outside its validShape set to 0 ("zero", the default), the dtype's lowest ("min") or highest ("max"). */
export function fillpad<D extends DType>(x: AnyTile<D>, padValue?: PadValue): AnyTile<D> {
  return notRunnable("fillpad");
}
/** One element of a tile (or, in kernels, of a tensor) as a scalar. */
export function read(x: AnyTile | Tensor, indices: readonly number[]): number {
  return notRunnable("read");
}
/** `a[M,K] @ b[K,N]` into an Acc tile (fp32 accumulation; int32 for integer inputs). */
export function matmul(a: AnyTile, b: AnyTile): Tile<any, any, Mem.Acc, any> {
  return notRunnable("matmul");
}
/** `acc + a @ b` (acc keeps its type). */
export function matmulAcc<T extends AnyTile>(acc: T, a: AnyTile, b: AnyTile): T {
  return notRunnable("matmulAcc");
}
/** A zero-filled device tensor owned by the launch (entries only, outside pl.at). */
export function createTensor<D extends DType>(shape: readonly number[], dtype: D): Tensor<any, D> {
  return notRunnable("createTensor");
}

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

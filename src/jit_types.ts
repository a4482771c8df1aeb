// The call signature of a JitFunction, from the kernel's own signature: each parameter maps to
// what a caller may pass (a tensor parameter takes a HostTensor or a tensor-like, a number or
// pl.Scalar parameter a number, a boolean a boolean; an unannotated JavaScript parameter
// either), optionally followed by a RunConfig; the result is what the launch returns: the
// argument(s) passed for the tensor(s) the kernel returns. Types only.
import type { Tensor } from "./dsl/language.js";
import type { HostTensor, TensorLikeInput } from "./runtime/host/index.js";
import type { RunConfig } from "./runtime/config.js";

type IsAny<T> = 0 extends 1 & T ? true : false;

/** What a caller may pass for a tensor parameter. */
export type TensorArg = HostTensor | TensorLikeInput;

/** What a caller may pass for one kernel parameter of type P. */
export type JitArg<P> =
  IsAny<P> extends true ? TensorArg | number | boolean :
  [P] extends [boolean] ? boolean :
  [P] extends [number] ? number :
  [P] extends [Tensor] ? TensorArg :
  P;

/** The arguments of a call, one per kernel parameter. */
export type JitArgs<Ps extends readonly unknown[]> = { -readonly [K in keyof Ps]: JitArg<Ps[K]> };

/** The tensor(s) a launch hands back: among the call's tensor arguments. */
type TensorOf<A extends readonly unknown[]> = [Exclude<A[number], number | boolean | RunConfig>] extends [never]
  ? TensorArg : Exclude<A[number], number | boolean | RunConfig>;

/** What a call returns, from the kernel's return type R and the call's arguments A. */
export type JitResult<R, A extends readonly unknown[]> =
  IsAny<R> extends true ? unknown :
  [R] extends [void | undefined] ? undefined :
  R extends readonly unknown[] ? { -readonly [K in keyof R]: TensorOf<A> } :
  TensorOf<A>;

/** The call signatures of a jit function of kernel F. */
export interface JitCallable<F extends (...args: never[]) => unknown> {
  <const A extends JitArgs<Parameters<F>>>(...args: A): JitResult<ReturnType<F>, A>;
  <const A extends JitArgs<Parameters<F>>>(...args: [...A, RunConfig]): JitResult<ReturnType<F>, A>;
}

/** JitFunction.callAsync: the same call signatures, each returning a Promise of the result. */
export interface JitAsyncCall<F extends (...args: never[]) => unknown> {
  <const A extends JitArgs<Parameters<F>>>(...args: A): Promise<JitResult<ReturnType<F>, A>>;
  <const A extends JitArgs<Parameters<F>>>(...args: [...A, RunConfig]): Promise<JitResult<ReturnType<F>, A>>;
}

/**
 * Host tensors: the torch stand-in used by examples, tests and the runtime's argument packing.
 *
 * A `HostTensor` is a row-major (C-contiguous) view of a TypedArray: `data` is the dtype's
 * host storage (see `typedArrayFor`): float16/bfloat16 as 16-bit patterns, int64 as bigints,
 * bool as 0/1 bytes. Numeric helpers (`get`, `toArray`, arithmetic, `assertClose`) decode to
 * JS numbers.
 *
 * Conversion of a number to an integer dtype (in `tensor`, `full`, `astype` and arithmetic)
 * uses `roundToDType`'s default mode "round" (half away from zero) then saturates, except
 * integer division, which truncates toward zero.
 */
//
// Files: check.ts (validation and formatting helpers), tensor_like.ts (reading foreign tensor-likes),
// host_tensor.ts (HostTensor, asTensorLike, bufferView), factories.ts (tensor, zeros, full),
// random.ts (Rng, randn), assert.ts (assertClose).
export type { DType } from "../dtype.js";
export type { TensorLike, TensorLikeInput } from "./tensor_like.js";
export { asTensorLike, bufferView, HostTensor } from "./host_tensor.js";
export { full, tensor, zeros, type NestedNumbers } from "./factories.js";
export { randn, Rng } from "./random.js";
export { assertClose } from "./assert.js";
export { quantize, dequantize, type QuantizeOptions, type QuantizedWeight } from "./quantize.js";

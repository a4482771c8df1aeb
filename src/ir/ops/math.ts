// Elementwise ops beyond arithmetic, each one ElementwiseSpec (see elementwise.ts): fmod/rem,
// bitwise ops and shifts (integer dtypes), transcendental functions, pow, leaky relu,
// compare (-> bool), select, expands. References compute in float64 (bitwise ops in BigInt)
// and round to the result dtype once.
import { isInt, type DType } from "../types.js";
import { defineElementwise } from "./elementwise.js";

const BITS: Partial<Record<DType, number>> = { int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8 };
const signed = (d: DType) => d !== "uint8" && d !== "bool";
/** Two's-complement wrap of an integer to dtype d (the C++ cast of the wider result). */
function wrapInt(v: bigint, d: DType): number {
  const bits = BITS[d] ?? 64;
  return Number(signed(d) ? BigInt.asIntN(bits, v) : BigInt.asUintN(bits, v));
}
const big = (x: number) => BigInt(Math.trunc(x));

/** fmod: the remainder of a / b with the sign of a (C fmod; integers: C %, b = 0 gives 0). */
function fmodRef(a: number, b: number, d: DType): number {
  if (isInt(d)) return b === 0 ? 0 : Number(big(a) % big(b));
  return a % b;
}
/** rem: the remainder with the sign of b (Python %; b = 0 gives 0 for integers, NaN for floats). */
function remRef(a: number, b: number, d: DType): number {
  const r = fmodRef(a, b, d);
  if (isInt(d)) return r !== 0 && (r < 0) !== (b < 0) ? r + b : r;
  return r !== 0 && (r < 0) !== (b < 0) ? r + b : r;
}

const REM_ROW = { key: "rem", call: "fmod rem (a, b)", does: "remainder: `fmod` with the sign of the dividend (C `fmod`/`%`), `rem` with the sign of the divisor (Python `%`); integer and float; integer `b = 0` gives 0" };
defineElementwise({ name: "fmod", operands: ["a", "b"], family: "any", row: REM_ROW, doc: "fmod(a, b): the remainder of a / b with the sign of a", ref: ([a, b], d) => fmodRef(a, b, d) });
defineElementwise({ name: "rem", operands: ["a", "b"], family: "any", row: REM_ROW, doc: "rem(a, b): the remainder of a / b with the sign of b", ref: ([a, b], d) => remRef(a, b, d) });

const BIT_ROW = { key: "bits", call: "bitAnd bitOr bitXor (a, b)` / `bitNot(a)` / `shl shr (a, n)", does: "integer dtypes only; `shr` is arithmetic for signed dtypes, logical for `uint8`; a shift by `n >= bits` gives 0 (or -1 for a negative signed `shr`), `n < 0` shifts by 0; `shl` wraps" };
defineElementwise({ name: "bitAnd", operands: ["a", "b"], family: "int", row: BIT_ROW, doc: "bitAnd(a, b): a & b", ref: ([a, b], d) => wrapInt(big(a) & big(b), d) });
defineElementwise({ name: "bitOr", operands: ["a", "b"], family: "int", row: BIT_ROW, doc: "bitOr(a, b): a | b", ref: ([a, b], d) => wrapInt(big(a) | big(b), d) });
defineElementwise({ name: "bitXor", operands: ["a", "b"], family: "int", row: BIT_ROW, doc: "bitXor(a, b): a ^ b", ref: ([a, b], d) => wrapInt(big(a) ^ big(b), d) });
defineElementwise({ name: "bitNot", operands: ["a"], family: "int", row: BIT_ROW, doc: "bitNot(a): ~a", ref: ([a], d) => wrapInt(~big(a), d) });
/** The shift count actually used: n < 0 -> 0, n >= bits -> bits (everything shifted out). */
const shiftCount = (n: number, d: DType) => Math.min(Math.max(Math.trunc(n), 0), BITS[d] ?? 64);
defineElementwise({
  name: "shl", operands: ["a", "n"], family: "int", row: BIT_ROW, doc: "shl(a, n): a << n (wrapping to the dtype)",
  ref: ([a, n], d) => wrapInt(big(a) << BigInt(shiftCount(n, d)), d),
});
defineElementwise({
  name: "shr", operands: ["a", "n"], family: "int", row: BIT_ROW, doc: "shr(a, n): a >> n (arithmetic for signed dtypes, logical for uint8)",
  ref: ([a, n], d) => {
    const k = shiftCount(n, d), bits = BITS[d] ?? 64;
    if (!signed(d)) return k >= bits ? 0 : Number(BigInt.asUintN(bits, big(a)) >> BigInt(k));
    return Number(big(a) >> BigInt(Math.min(k, bits - 1)));
  },
});

const TRANS_ROW = { key: "trans", call: "sin cos tanh sigmoid erf (x)", does: "elementwise, float dtypes; the reference computes in fp64 and rounds once; cpu: vectorized fp32 functions, within 1 ulp of the reference over all floats (sin/cos of huge arguments included), float16/bfloat16 rounded from fp32 (1 ulp); docs/semantics.md" };
/**
 * erf(x): the Maclaurin series 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)) for |x| < 4
 * (relative error below 1e-10 there, far below fp32's 6e-8), and +-1 beyond (erfc(4) = 1.5e-8
 * rounds away at fp32).
 */
export function erf(x: number): number {
  if (Number.isNaN(x) || x === 0) return x; // erf(-0) = -0
  if (Math.abs(x) >= 4) return x > 0 ? 1 : -1;
  const x2 = x * x;
  let term = x, sum = x;
  for (let n = 1; n < 200; n++) {
    term *= -x2 / n;
    const add = term / (2 * n + 1);
    sum += add;
    if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}
defineElementwise({ name: "sin", operands: ["x"], family: "float", row: TRANS_ROW, doc: "sin(x)", ref: ([x]) => Math.sin(x) });
defineElementwise({ name: "cos", operands: ["x"], family: "float", row: TRANS_ROW, doc: "cos(x)", ref: ([x]) => Math.cos(x) });
defineElementwise({ name: "tanh", operands: ["x"], family: "float", row: TRANS_ROW, doc: "tanh(x)", ref: ([x]) => Math.tanh(x) });
defineElementwise({ name: "sigmoid", operands: ["x"], family: "float", row: TRANS_ROW, doc: "sigmoid(x) = 1 / (1 + e^-x)", ref: ([x]) => 1 / (1 + Math.exp(-x)) });
defineElementwise({ name: "erf", operands: ["x"], family: "float", row: TRANS_ROW, doc: "erf(x), the error function", ref: ([x]) => erf(x) });

defineElementwise({
  name: "pow", operands: ["a", "b"], family: "float",
  row: { key: "pow", call: "pow(a, b)", does: "a<sup>b</sup> (`Math.pow`), float dtypes; `b` a tile or a number; cpu: within 1 ulp (a vectorized pow in double); a constant exponent 0, 1, -1, 2, 0.5 exact (one correct rounding), -0.5 and other integers up to 64 in magnitude by `sqrt` / repeated multiplication in double" },
  doc: "pow(a, b): a to the power b (float dtypes)", ref: ([a, b]) => Math.pow(a, b),
});
defineElementwise({
  name: "lrelu", operands: ["x", "slope"], family: "float", decl: ["<T extends TileOrTensor>(x: T, slope: number): T"],
  row: { key: "lrelu", call: "lrelu(x, slope)", does: "leaky relu: `x > 0 ? x : x * slope` (float dtypes)" },
  doc: "lrelu(x, slope): x > 0 ? x : x * slope", ref: ([x, s]) => (x > 0 ? x : x * s),
});

export const CMP_MODES = ["eq", "ne", "lt", "le", "gt", "ge"] as const;
export type CmpMode = (typeof CMP_MODES)[number];
function cmpRef(a: number, b: number, mode: CmpMode): number {
  switch (mode) {
    case "eq": return a === b ? 1 : 0;
    case "ne": return a !== b ? 1 : 0;
    case "lt": return a < b ? 1 : 0;
    case "le": return a <= b ? 1 : 0;
    case "gt": return a > b ? 1 : 0;
    case "ge": return a >= b ? 1 : 0;
  }
}
defineElementwise({
  name: "cmp", operands: ["a", "b"], attrs: [{ name: "mode", kind: "string" }], family: "any", result: "bool",
  decl: [
    "<T extends TileOrTensor>(a: T, b: Operand<T> | number, mode: CmpMode): BoolOf<T>",
    "<T extends TileOrTensor>(a: number, b: T, mode: CmpMode): BoolOf<T>",
  ],
  row: { key: "cmp", call: "cmp(a, b, mode)", does: "→ a `bool` tile/tensor: `mode` one of `\"eq\" \"ne\" \"lt\" \"le\" \"gt\" \"ge\"` (NaN compares unequal to everything); `b` a tile or a number" },
  doc: `cmp(a, b, mode): a <mode> b as bool (mode "eq" | "ne" | "lt" | "le" | "gt" | "ge")`,
  checkAttrs(ctx) {
    const m = ctx.attrs.mode;
    if (!(CMP_MODES as readonly unknown[]).includes(m)) ctx.fail(`unknown compare mode ${JSON.stringify(m)}`, `use one of ${CMP_MODES.map((x) => `"${x}"`).join(", ")}`);
  },
  ref: ([a, b], _d, attrs) => cmpRef(a, b, attrs.mode as CmpMode),
});
defineElementwise({
  name: "sel", operands: ["mask", "a", "b"], mask: 0, family: "any",
  decl: [
    "<T extends TileOrTensor>(mask: BoolOf<T> | AnyTile<BOOL> | Tensor<any, BOOL>, a: T, b: Operand<T> | number): T",
    "<T extends TileOrTensor>(mask: AnyTile<BOOL> | Tensor<any, BOOL>, a: number, b: T): T",
  ],
  row: { key: "sel", call: "sel(mask, a, b)", does: "`mask ? a : b` elementwise; `mask` a bool tile/tensor (from `cmp`), `a`, `b` tiles or numbers (one a tile)" },
  doc: "sel(mask, a, b): mask ? a : b, elementwise", ref: ([m, a, b]) => (m !== 0 ? a : b),
});
defineElementwise({
  name: "expands", operands: ["target", "value"], family: "any",
  decl: ["<T extends TileOrTensor>(target: T, value: number): T"],
  row: { key: "expands", call: "expands(target, value)", does: "a tile/tensor of the target's shape and dtype filled with the number `value` (target values unused)" },
  doc: "expands(target, value): value broadcast to the target's shape and dtype", ref: ([, v]) => v,
});

// Matrix multiply of 2-D tiles: matmul(a[M,K], b[K,N]) -> Acc tile [M,N]; matmulAcc(acc, a, b)
// = acc + a @ b.
//
// Numerics (the cpu code generator follows them exactly): float inputs (float32, float16,
// bfloat16) accumulate in fp32: for each output element, starting from 0 (matmul) or acc
// (matmulAcc), for k = 0, 1, ... K-1 in order:
//   fpContract "off" (the default of the op): acc = fp32(acc + fp32(a[i][k] * b[k][j]));
//   fpContract "fast": acc = fma(a[i][k], b[k][j], acc), one rounding to fp32 (fused
//     multiply-add), which the FpContract pass sets on every float matmul when the compile
//     option fpContract is "fast" (the default of ir.compile and RunConfig).
// Both are modelled exactly here (fmaF32), so cpu and interp agree bit for bit in both modes.
// Integer inputs (int8, int16, int32, uint8) accumulate in int64 and the result saturates to
// int32. The operands' memory spaces (Mat, Left, Right, Vec) do not change the values; the
// result lives in Acc.
import { registerOp, type InferCtx } from "../registry.js";
import type { Attrs } from "../nodes.js";
import { dimsEqual, isFloat, tileT, typeStr, type DType, type TileType } from "../types.js";
import { mkTile, toDType, type TileValue } from "../values.js";
import { argName, expect2D } from "./common.js";

/** The accumulator dtype of a matmul of `d` inputs. */
export const matmulAccDType = (d: DType): DType => (isFloat(d) ? "float32" : "int32");

function inferOperands(ctx: InferCtx, ai: number, name: string): { a: TileType; b: TileType; acc: DType } {
  const a = expect2D(ctx, ai, `the left operand of ${name}`);
  const b = expect2D(ctx, ai + 1, `the right operand of ${name}`);
  if (a.dtype === "bool" || a.dtype === "int64") ctx.fail(`cannot multiply ${a.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
  if (a.dtype !== b.dtype) ctx.fail(`operand dtypes differ: ${a.dtype} and ${b.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[ai + 1])}, "${a.dtype}")`);
  if (a.shape[1] !== b.shape[0]) {
    ctx.fail(`inner dimensions differ: '${argName(ctx.args[ai])}' is ${typeStr(a)} (K = ${a.shape[1]}) but '${argName(ctx.args[ai + 1])}' is ${typeStr(b)} (K = ${b.shape[0]})`,
      `a[M, K] @ b[K, N] needs a's column count to equal b's row count`);
  }
  return { a, b, acc: matmulAccDType(a.dtype) };
}

const CONTRACT_PARAM = { name: "opts", kind: "options", optional: true, options: { fpContract: "string" } } as const;
function checkContract(ctx: InferCtx): void {
  const m = ctx.attrs.fpContract;
  if (m !== undefined && m !== null && !(FP_CONTRACT_MODES as readonly unknown[]).includes(m)) {
    ctx.fail(`fpContract must be ${FP_CONTRACT_MODES.map((x) => JSON.stringify(x)).join(" or ")}, got ${JSON.stringify(m)}`,
      `"fast" accumulates with fused multiply-add (one rounding per step), "off" rounds the product and the sum separately`);
  }
}
export const contractOf = (attrs: Attrs): FpContract => (attrs.fpContract === "fast" ? "fast" : "off");

function validOf(a: TileType, b: TileType): (number | string)[] | null {
  if (!a.validShape && !b.validShape) return null;
  return [a.validShape ? a.validShape[0] : a.shape[0], b.validShape ? b.validShape[1] : b.shape[1]];
}

/** The contraction modes of float matmul (the `fpContract` attribute / compile option). */
export const FP_CONTRACT_MODES = ["fast", "off"] as const;
export type FpContract = (typeof FP_CONTRACT_MODES)[number];

/**
 * fp32 fused multiply-add, exactly: round_f32(a * b + c) for fp32 a, b, c. The product of
 * two fp32 values is exact in double; the sum p + c is computed with its exact rounding error
 * (TwoSum), and a double rounding (p + c rounded to double, then to fp32) can differ from the
 * single rounding only when the double sum lies exactly halfway between two fp32 values: the
 * error's sign then decides.
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const r = Math.fround(s);
  if (!Number.isFinite(s) || r === s) return r;
  const bb = s - p;
  const e = (p - (s - bb)) + (c - bb);
  if (e === 0) return r;
  const d = s - r; // exact (s and r are within a factor of 2)
  const other = r + 2 * d;
  if (Math.fround(other) !== other) return r; // s is not a midpoint: r is the single rounding
  // a tie broken to r; the exact sum lies beyond the midpoint when e points away from r
  return (e > 0) === (d > 0) ? other : r;
}

/** out[i][j] = init(i, j) + sum_k a[i][k] * b[k][j], accumulated as the header says. */
export function matmulValues(a: TileValue, b: TileValue, out: TileValue, init: ((k: number) => number) | null, contract: FpContract = "off"): void {
  const [m, kk] = a.shape, n = b.shape[1];
  const float = isFloat(a.dtype);
  const f = Math.fround;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = init ? init(i * n + j) : 0;
      if (float && contract === "fast") for (let k = 0; k < kk; k++) s = fmaF32(a.data[i * kk + k], b.data[k * n + j], s);
      else if (float) for (let k = 0; k < kk; k++) s = f(s + f(a.data[i * kk + k] * b.data[k * n + j]));
      else for (let k = 0; k < kk; k++) s += a.data[i * kk + k] * b.data[k * n + j];
      out.data[i * n + j] = toDType(s, out.dtype);
    }
  }
}

registerOp({
  name: "tile.matmul", pl: "matmul", level: "tile", pure: true, fusable: false,
  doc: "matmul(a[M,K], b[K,N], { fpContract? }) -> Acc tile [M,N]: a @ b (fp32 accumulation in k order, fused multiply-add with fpContract \"fast\"; int32 for integer inputs)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, CONTRACT_PARAM],
  infer(ctx) {
    checkContract(ctx);
    const { a, b, acc } = inferOperands(ctx, 0, "matmul");
    return tileT([a.shape[0], b.shape[1]], acc, "Acc", validOf(a, b));
  },
  evaluate([av, bv], _attrs, _env, call) {
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    matmulValues(av as TileValue, bv as TileValue, out, null, contractOf(_attrs));
    return out;
  },
});

registerOp({
  name: "tile.matmulAcc", pl: "matmulAcc", level: "tile", pure: true, fusable: false,
  doc: "matmulAcc(acc[M,N], a[M,K], b[K,N], { fpContract? }): acc + a @ b, accumulated into acc's values in k order (acc keeps its type)",
  params: [{ name: "acc", kind: "value" }, { name: "a", kind: "value" }, { name: "b", kind: "value" }, CONTRACT_PARAM],
  infer(ctx) {
    checkContract(ctx);
    const acc = expect2D(ctx, 0, "the accumulator of matmulAcc");
    const { a, b, acc: accD } = inferOperands(ctx, 1, "matmulAcc");
    const want = [a.shape[0], b.shape[1]];
    if (!dimsEqual(acc.shape, want) || acc.dtype !== accD) {
      ctx.fail(`the accumulator '${argName(ctx.args[0])}' must be a [${want.join(", ")}] ${accD} tile for ${a.dtype} operands, got ${typeStr(acc)}`,
        `start it with pl.matmul(a, b) or pl.createTile([${want.join(", ")}], "${accD}", pl.Mem.Acc)`);
    }
    return tileT(acc.shape, acc.dtype, acc.mem, acc.validShape);
  },
  evaluate([cv, av, bv], attrs, _env, call) {
    const t = call.type as TileType;
    const acc = cv as TileValue;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    matmulValues(av as TileValue, bv as TileValue, out, (k) => acc.data[k], contractOf(attrs));
    return out;
  },
});

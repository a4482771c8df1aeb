// Matrix multiply of 2-D tiles: matmul(a[M,K], b[K,N]) -> Acc tile [M,N]; matmulAcc(acc, a, b)
// = acc + a @ b.
//
// Numerics (the cpu code generator follows them exactly): float inputs (float32, float16,
// bfloat16) accumulate in fp32: for each output element, starting from 0 (matmul) or acc
// (matmulAcc), acc = fp32(acc + fp32(a[i][k] * b[k][j])) for k = 0, 1, ... K-1 in order (no
// fused multiply-add). Integer inputs (int8, int16, int32, uint8) accumulate in int64 and the
// result saturates to int32. The operands' memory spaces (Mat, Left, Right, Vec) do not
// change the values; the result lives in Acc.
import { registerOp, type InferCtx } from "../registry.js";
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

function validOf(a: TileType, b: TileType): (number | string)[] | null {
  if (!a.validShape && !b.validShape) return null;
  return [a.validShape ? a.validShape[0] : a.shape[0], b.validShape ? b.validShape[1] : b.shape[1]];
}

/** out[i][j] = init(i, j) + sum_k a[i][k] * b[k][j], accumulated as the header says. */
export function matmulValues(a: TileValue, b: TileValue, out: TileValue, init: ((k: number) => number) | null): void {
  const [m, kk] = a.shape, n = b.shape[1];
  const float = isFloat(a.dtype);
  const f = Math.fround;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = init ? init(i * n + j) : 0;
      if (float) for (let k = 0; k < kk; k++) s = f(s + f(a.data[i * kk + k] * b.data[k * n + j]));
      else for (let k = 0; k < kk; k++) s += a.data[i * kk + k] * b.data[k * n + j];
      out.data[i * n + j] = toDType(s, out.dtype);
    }
  }
}

registerOp({
  name: "tile.matmul", pl: "matmul", level: "tile", pure: true, fusable: false,
  doc: "matmul(a[M,K], b[K,N]) -> Acc tile [M,N]: a @ b (fp32 accumulation in k order; int32 for integer inputs)",
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }],
  infer(ctx) {
    const { a, b, acc } = inferOperands(ctx, 0, "matmul");
    return tileT([a.shape[0], b.shape[1]], acc, "Acc", validOf(a, b));
  },
  evaluate([av, bv], _attrs, _env, call) {
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    matmulValues(av as TileValue, bv as TileValue, out, null);
    return out;
  },
});

registerOp({
  name: "tile.matmulAcc", pl: "matmulAcc", level: "tile", pure: true, fusable: false,
  doc: "matmulAcc(acc[M,N], a[M,K], b[K,N]): acc + a @ b, accumulated into acc's values in k order (acc keeps its type)",
  params: [{ name: "acc", kind: "value" }, { name: "a", kind: "value" }, { name: "b", kind: "value" }],
  infer(ctx) {
    const acc = expect2D(ctx, 0, "the accumulator of matmulAcc");
    const { a, b, acc: accD } = inferOperands(ctx, 1, "matmulAcc");
    const want = [a.shape[0], b.shape[1]];
    if (!dimsEqual(acc.shape, want) || acc.dtype !== accD) {
      ctx.fail(`the accumulator '${argName(ctx.args[0])}' must be a [${want.join(", ")}] ${accD} tile for ${a.dtype} operands, got ${typeStr(acc)}`,
        `start it with pl.matmul(a, b) or pl.createTile([${want.join(", ")}], "${accD}", pl.Mem.Acc)`);
    }
    return tileT(acc.shape, acc.dtype, acc.mem, acc.validShape);
  },
  evaluate([cv, av, bv], _attrs, _env, call) {
    const t = call.type as TileType;
    const acc = cv as TileValue;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    matmulValues(av as TileValue, bv as TileValue, out, (k) => acc.data[k]);
    return out;
  },
});

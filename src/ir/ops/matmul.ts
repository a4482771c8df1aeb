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
import { registerOp, type CostCtx, type CostUnit, type InferCtx, type OpCost } from "../registry.js";
import { exprType, type Attrs } from "../nodes.js";
import { dimsEqual, isFloat, tileT, typeStr, type DType, type TileType } from "../types.js";
import { mkTile, castToDType, toDType, type TileValue, type Value } from "../values.js";
import { BINARY } from "./elementwise.js";
import { argName, expect2D, expectDType, expectTile } from "./common.js";

/**
 * Whether matmul takes operands of dtypes a and b: the same dtype, or int8 with uint8 (either
 * side: the mixed products of the int8 dot-product units, exact in int32).
 */
export const matmulOperandsAgree = (a: DType, b: DType): boolean =>
  a === b || (a === "int8" && b === "uint8") || (a === "uint8" && b === "int8");
/** The accumulator dtype of a matmul of `d` inputs. */
export const matmulAccDType = (d: DType): DType => (isFloat(d) ? "float32" : "int32");

/** The [rows, cols] a matmul operand stands for (its shape, swapped when transposed). */
const logical = (t: TileType, trans: boolean): TileType => (trans ? { ...t, shape: [t.shape[1], t.shape[0]], validShape: t.validShape ? [t.validShape[1], t.validShape[0]] : null } : t);

function inferOperands(ctx: InferCtx, ai: number, name: string): { a: TileType; b: TileType; acc: DType } {
  const a = logical(expect2D(ctx, ai, `the left operand of ${name}`), ctx.attrs.aTrans === true);
  const b = logical(expect2D(ctx, ai + 1, `the right operand of ${name}`), ctx.attrs.bTrans === true);
  if (a.dtype === "bool" || a.dtype === "int64") ctx.fail(`cannot multiply ${a.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
  if (!matmulOperandsAgree(a.dtype, b.dtype)) ctx.fail(`operand dtypes differ: ${a.dtype} and ${b.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[ai + 1])}, "${a.dtype}")`);
  if (a.shape[1] !== b.shape[0]) {
    ctx.fail(`inner dimensions differ: '${argName(ctx.args[ai])}' is ${typeStr(a)} (K = ${a.shape[1]}) but '${argName(ctx.args[ai + 1])}' is ${typeStr(b)} (K = ${b.shape[0]})`,
      `a[M, K] @ b[K, N] needs a's column count to equal b's row count`);
  }
  return { a, b, acc: matmulAccDType(a.dtype) };
}

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

/** A 2-D tile value transposed. */
function transposed(t: TileValue): TileValue {
  const [m, n] = t.shape;
  const out = mkTile([n, m], t.dtype, t.mem, t.validShape ? [t.validShape[1], t.validShape[0]] as number[] : null);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) out.data[j * m + i] = t.data[i * n + j];
  return out;
}
const opA = (v: Value, attrs: Attrs) => (attrs.aTrans === true ? transposed(v as TileValue) : (v as TileValue));
const opB = (v: Value, attrs: Attrs) => (attrs.bTrans === true ? transposed(v as TileValue) : (v as TileValue));
const TRANS_OPTS = { aTrans: "bool", bTrans: "bool" } as const;

/** The unit a product of `dtype` operands runs on where the machine has one: bf16 pairs (fpContract "fast"), int8 quads. */
export function matmulUnit(dtype: DType, attrs: Attrs): CostUnit {
  if (dtype === "bfloat16" && contractOf(attrs) === "fast") return "dotBf16";
  return dtype === "int8" || dtype === "uint8" ? "dotInt8" : "vector";
}
/**
 * 2·M·N·K per product (a multiply and an add for each of the K terms of each output), batches
 * multiplied in, `extra` ops per output element (a bias): the operands at `a` and `a + 1`, M and N
 * the result's valid extents, K the valid inner extent of both (matmul's sum runs over their min).
 */
export function matmulCost(a: number, extra = 0) {
  return (c: CostCtx): OpCost => {
    const x = c.operand(a) ?? [], y = c.operand(a + 1) ?? [], e = c.extents;
    const r = x.length, s = y.length;
    const k = Math.min(c.attrs.aTrans === true ? x[r - 2] : x[r - 1], c.attrs.bTrans === true ? y[s - 1] : y[s - 2]);
    const outs = e.reduce((p, d) => p * d, 1);
    return { flops: 2 * outs * k + extra * outs, unit: matmulUnit((exprType(c.args[a]) as TileType).dtype, c.attrs) };
  };
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

/**
 * out[i][j] = init(i, j) + sum_k a[i][k] * b[k][j], accumulated as the header says, over the
 * valid K only: k < min(a's valid columns, b's valid rows) (the pad holds no value).
 */
function matmulValues(a: TileValue, b: TileValue, out: TileValue, init: ((k: number) => number) | null, contract: FpContract = "off"): void {
  const [m, k0] = a.shape, n = b.shape[1];
  const kk = Math.min(a.validShape ? a.validShape[1] : k0, b.validShape ? b.validShape[0] : k0);
  const float = isFloat(a.dtype);
  const f = Math.fround;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = init ? init(i * n + j) : 0;
      if (float && contract === "fast") for (let k = 0; k < kk; k++) s = fmaF32(a.data[i * k0 + k], b.data[k * n + j], s);
      else if (float) for (let k = 0; k < kk; k++) s = f(s + f(a.data[i * k0 + k] * b.data[k * n + j]));
      else for (let k = 0; k < kk; k++) s += a.data[i * k0 + k] * b.data[k * n + j];
      out.data[i * n + j] = toDType(s, out.dtype);
    }
  }
}

registerOp({
  name: "tile.matmul", pl: "matmul", level: "tile", pure: true, fusable: false, cost: matmulCost(0),
  doc: "matmul(a[M,K], b[K,N], { aTrans?, bTrans?, outDtype?, fpContract? }) -> Acc tile [M,N]: a @ b (fp32 accumulation in k order, fused multiply-add with fpContract \"fast\"; int32 for integer inputs); aTrans/bTrans: the operand is stored transposed ([K,M] / [N,K]); outDtype: the result cast to it",
  decl: [
    "(a: AnyTile, b: AnyTile, opts?: { readonly aTrans?: boolean; readonly bTrans?: boolean; readonly outDtype?: DType; readonly fpContract?: 'fast' | 'off' }): Tile<any, any, Mem.Acc, any>",
    "<D extends DType = FP32>(a: Tensor, b: Tensor, opts?: { readonly aTrans?: boolean; readonly bTrans?: boolean; readonly outDtype?: D; readonly fpContract?: 'fast' | 'off' }): Tensor<any, D>",
  ],
  row: { key: "matmul", call: "matmul(a[M,K], b[K,N], { aTrans?, bTrans?, outDtype?, fpContract? })", does: "→ Acc tile `[M,N]`; fp32 accumulation in k order (int32 for integer inputs); fp16/bf16 inputs; `aTrans`/`bTrans`: the operand is stored transposed (`[K,M]` / `[N,K]`); `outDtype`: the result cast to it; `fpContract`: `'fast'` (the default) sums each k step with a fused multiply-add (one rounding), `'off'` rounds product and sum separately; tiles with a validShape: the sum runs over the valid K, `min(a's valid columns, b's valid rows)`; tensors: auto-tiled, K accumulated tile by tile" },
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { ...TRANS_OPTS, outDtype: "dtype", fpContract: "string" } }],
  infer(ctx) {
    checkContract(ctx);
    const { a, b, acc } = inferOperands(ctx, 0, "matmul");
    const out = ctx.attrs.outDtype == null ? acc : expectDType(ctx, "outDtype", ctx.attrs.outDtype);
    return tileT([a.shape[0], b.shape[1]], out, "Acc", validOf(a, b));
  },
  evaluate([av, bv], attrs, _env, call) {
    const t = call.type as TileType;
    const a = opA(av, attrs), b = opB(bv, attrs);
    const accD = matmulAccDType(a.dtype);
    const out = mkTile(t.shape, accD, t.mem, t.validShape as number[] | null);
    matmulValues(a, b, out, null, contractOf(attrs));
    if (t.dtype !== accD) for (let i = 0; i < out.data.length; i++) out.data[i] = castToDType(out.data[i], t.dtype, "round"); // outDtype: a cast (tile.cast after MatmulForms)
    return mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null, out.data);
  },
});

registerOp({
  name: "tile.matmulAcc", pl: "matmulAcc", level: "tile", pure: true, fusable: false, cost: matmulCost(1),
  doc: "matmulAcc(acc[M,N], a[M,K], b[K,N], { aTrans?, bTrans?, fpContract? }): acc + a @ b, accumulated into acc's values in k order (acc keeps its type)",
  decl: ["<T extends AnyTile | Tensor>(acc: T, a: Operand<T>, b: Operand<T>, opts?: { readonly aTrans?: boolean; readonly bTrans?: boolean; readonly fpContract?: 'fast' | 'off' }): T"],
  row: { key: "matmulAcc", call: "matmulAcc(acc, a, b, { aTrans?, bTrans?, fpContract? })", does: "`acc + a @ b` (acc keeps its type: a loop-carried accumulator)" },
  params: [{ name: "acc", kind: "value" }, { name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: { ...TRANS_OPTS, fpContract: "string" } }],
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
    matmulValues(opA(av, attrs), opB(bv, attrs), out, (k) => acc.data[k], contractOf(attrs));
    return out;
  },
});

registerOp({
  name: "tile.matmulBias", pl: "matmulBias", level: "tile", pure: true, fusable: false, loweredBy: "MatmulForms", cost: matmulCost(0, 1),
  doc: "matmulBias(a[M,K], b[K,N], bias[1,N]): a @ b + bias, the bias (of the accumulator dtype) added to each row after the k sum",
  decl: ["(a: AnyTile, b: AnyTile, bias: AnyTile): Tile<any, any, Mem.Acc, any>", "(a: Tensor, b: Tensor, bias: Tensor): Tensor"],
  row: { key: "matmulBias", call: "matmulBias(a[M,K], b[K,N], bias[1,N])", does: "`a @ b + bias`, the bias (fp32 for float inputs, int32 for integer) added to each row after the k sum" },
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "bias", kind: "value" }],
  infer(ctx) {
    const { a, b, acc } = inferOperands(ctx, 0, "matmulBias");
    const bias = expect2D(ctx, 2, "the bias of matmulBias");
    if (bias.shape[0] !== 1 || bias.shape[1] !== b.shape[1] || bias.dtype !== acc) {
      ctx.fail(`the bias '${argName(ctx.args[2])}' must be a [1, ${b.shape[1]}] ${acc} tile, got ${typeStr(bias)}`, `cast it first: pl.cast(bias, "${acc}")`);
    }
    return tileT([a.shape[0], b.shape[1]], acc, "Acc", validOf(a, b));
  },
  evaluate([av, bv, cv], _attrs, _env, call) {
    const t = call.type as TileType;
    const out = mkTile(t.shape, t.dtype, t.mem, t.validShape as number[] | null);
    matmulValues(av as TileValue, bv as TileValue, out, null);
    const bias = cv as TileValue, n = t.shape[1];
    for (let i = 0; i < out.data.length; i++) out.data[i] = toDType(BINARY.add.fn(out.data[i], bias.data[i % n], t.dtype), t.dtype);
    return out;
  },
});

/** [B, rows, cols] of a batch operand as the [B, M, K] / [B, K, N] it stands for (swapped when transposed). */
const batchLogical = (s: readonly number[], trans: boolean): number[] => (trans ? [s[0], s[2], s[1]] : [...s]);
/** Batch i of a [B, r, c] tile as a [r, c] tile, transposed when `trans`. */
function batchOf(t: TileValue, i: number, trans: boolean): TileValue {
  const [, r, c] = t.shape;
  const x = mkTile([r, c], t.dtype, t.mem, null, t.data.slice(i * r * c, (i + 1) * r * c));
  return trans ? transposed(x) : x;
}

registerOp({
  name: "tile.batchMatmul", pl: "batchMatmul", level: "tile", pure: true, fusable: false, loweredBy: "MatmulForms", cost: matmulCost(0),
  doc: "batchMatmul(a[B,M,K], b[B,K,N], { aTrans?, bTrans? }) -> Acc tile [B,M,N]: a[i] @ b[i] for each batch i (as matmul); aTrans/bTrans: each batch of the operand is stored transposed ([B,K,M] / [B,N,K])",
  decl: [
    "(a: AnyTile, b: AnyTile, opts?: { readonly aTrans?: boolean; readonly bTrans?: boolean }): Tile<any, any, Mem.Acc, any>",
    "(a: Tensor, b: Tensor, opts?: { readonly aTrans?: boolean; readonly bTrans?: boolean }): Tensor",
  ],
  row: { key: "batchMatmul", call: "batchMatmul(a[B,M,K], b[B,K,N], { aTrans?, bTrans? })", does: "→ `[B,M,N]`: `a[i] @ b[i]` for each batch `i` (rank 3; as `matmul`; `aTrans`/`bTrans`: each batch stored transposed, `[B,K,M]` / `[B,N,K]`; tensors: auto-tiled per batch, K accumulated tile by tile)" },
  params: [{ name: "a", kind: "value" }, { name: "b", kind: "value" }, { name: "opts", kind: "options", optional: true, options: TRANS_OPTS }],
  infer(ctx) {
    const a0 = expectTile(ctx, 0, "the left operand of batchMatmul"), b0 = expectTile(ctx, 1, "the right operand of batchMatmul");
    if (a0.shape.length !== 3 || b0.shape.length !== 3) ctx.fail(`needs rank-3 tiles [B, M, K] and [B, K, N], got ${typeStr(a0)} and ${typeStr(b0)}`, "use pl.matmul for 2-D tiles");
    const a = batchLogical(a0.shape, ctx.attrs.aTrans === true), b = batchLogical(b0.shape, ctx.attrs.bTrans === true);
    if (a[0] !== b[0]) ctx.fail(`batch sizes differ: ${a[0]} and ${b[0]}`);
    if (a0.validShape || b0.validShape) ctx.fail("batchMatmul operands must be fully valid tiles", "pad them first: pl.fillpad(x)");
    if (a0.dtype !== b0.dtype) ctx.fail(`operand dtypes differ: ${a0.dtype} and ${b0.dtype}`, `cast one operand first, e.g. pl.cast(${argName(ctx.args[1])}, "${a0.dtype}")`);
    if (a0.dtype === "bool" || a0.dtype === "int64") ctx.fail(`cannot multiply ${a0.dtype} matrices`, `cast the operands to float32, float16, bfloat16, int8, int16 or int32`);
    if (a[2] !== b[1]) ctx.fail(`inner dimensions differ: ${typeStr(a0)} (K = ${a[2]}) and ${typeStr(b0)} (K = ${b[1]})`, `a[B, M, K] @ b[B, K, N]${ctx.attrs.aTrans === true || ctx.attrs.bTrans === true ? " (after the transposes aTrans / bTrans ask for)" : ""}`);
    return tileT([a[0], a[1], b[2]], matmulAccDType(a0.dtype), "Acc");
  },
  evaluate([av, bv], attrs, _env, call) {
    const t = call.type as TileType;
    const a = av as TileValue, b = bv as TileValue;
    const [bs, m, n] = t.shape;
    const out = mkTile(t.shape, t.dtype, t.mem, null);
    for (let i = 0; i < bs; i++) {
      const oi = mkTile([m, n], t.dtype, t.mem, null);
      matmulValues(batchOf(a, i, attrs.aTrans === true), batchOf(b, i, attrs.bTrans === true), oi, null);
      out.data.set(oi.data, i * m * n);
    }
    return out;
  },
});

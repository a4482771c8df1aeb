// Weight-only quantized matmul: matmulQuant(x[M,K], w, scales, { bits, groupSize, outDtype? })
// -> [M,N] float32, the product of x with a weight stored as small integers and per-group
// scales, dequantized inside the product (no dequantized copy of the weight exists anywhere).
//
// Layout (one row per output column n, K along the row: the layout of nn.Linear, of
// onnxruntime's MatMulNBits and of matmul's `bTrans` operand):
//   bits 8: w is int8 [N, K]; the weight value is q = w[n][k] (-128..127).
//   bits 4: w is uint8 [N, K/2], two weights per byte: k = 2j in the LOW nibble of byte
//     w[n][j], k = 2j + 1 in the HIGH nibble; the weight value is q = nibble - 8 (-8..7), the
//     unsigned-nibble, zero-point-8 encoding of MatMulNBits (so the same bytes serve both).
//   scales: [N, K / groupSize], float32, float16 or bfloat16: weight (n, k) stands for
//     q(n, k) * scales[n][floor(k / groupSize)]. groupSize divides K (any divisor: 32, 48, 96,
//     128 ...); for bits 4 K is even.
// Values: out[i][n] = round_f32( sum_g scales[n][g] * sum_{k in group g} x[i][k] * q(n, k) ),
// the sums being real-number sums. The reference (interp) computes them in float64 in k order
// (groups in order, k in order inside a group), so its only error is float64 rounding (K * 2^-53
// relative to sum |x * w|) and the final rounding to fp32. The cpu code accumulates in fp32 in
// an implementation-defined order (16 k lanes per group, the group sum scaled and added with a
// fused multiply-add, the lanes summed at the end): its result differs from the reference by at
// most about (K / 16 + 20) * 2^-24 * sum_k |x[i][k] * w(n, k)|; the tests compare within
// 1e-5 * sum |x * w| + 1e-30 (docs/semantics.md, Weight-only quantized matmul).
// x may be a tile with a validShape of its rows (its columns whole); w and scales may have one of
// their rows (the same count): the result's validShape is [x's valid rows, w's valid rows].
// Tensor form (inside pl.at): [tm, tn] output tiles over M (static or dynamic) and N, each the
// tile op on x's rows and w's and scales' whole rows (K whole in every tile); an elementwise
// expression around it (bias, residual) is its epilogue, as for pl.matmul.
import { registerOp, type InferCtx } from "../registry.js";
import { isFloat, numel, tensorT, tileT, typeStr, type Dim, type DType, type TensorType, type TileType } from "../types.js";
import { castToDType, mkTile, readElem, writeElem, type TensorValue, type TileValue } from "../values.js";
import { argName, expectDType, expectKind } from "./common.js";
import { newTensor } from "./elementwise.js";
import type { Attrs } from "../nodes.js";

/** The bit widths of matmulQuant's weights. */
export const QUANT_BITS = [4, 8] as const;
/** The dtypes of matmulQuant's scales. */
export const QUANT_SCALE_DTYPES: readonly DType[] = ["float32", "float16", "bfloat16"];
/** The storage dtype of a weight of `bits`. */
export const quantWeightDType = (bits: number): DType => (bits === 4 ? "uint8" : "int8");

const QUANT_OPTS = { bits: "number", groupSize: "number", outDtype: "dtype" } as const;

/** Checks the operands; returns [M, N] (M may be dynamic on tensors) and their valid extents (tiles). */
function inferQuant(ctx: InferCtx, level: "tile" | "tensor"): { m: Dim; n: number; out: DType; valid: Dim[] | null } {
  const kinds = [level] as const;
  const what = level === "tile" ? "tile" : "tensor";
  const x = expectKind(ctx, 0, kinds, "the activation x of matmulQuant") as TileType | TensorType;
  const w = expectKind(ctx, 1, kinds, "the quantized weight of matmulQuant") as TileType | TensorType;
  const s = expectKind(ctx, 2, kinds, "the scales of matmulQuant") as TileType | TensorType;
  const bits = ctx.attrs.bits, g = ctx.attrs.groupSize;
  if (bits !== 4 && bits !== 8) {
    ctx.fail(`bits must be 4 or 8, got ${JSON.stringify(bits ?? null)}`, "int8 weights: { bits: 8, groupSize }; int4 weights packed two per byte: { bits: 4, groupSize }");
  }
  for (const [t, name] of [[x, "x"], [w, "the weight"], [s, "the scales"]] as const) {
    if (t.shape.length !== 2) ctx.fail(`${name} must be a 2-D ${what}, got ${typeStr(t)}`, "reshape it to [rows, cols] first");
  }
  if (!isFloat(x.dtype)) ctx.fail(`x '${argName(ctx.args[0])}' must be float32, float16 or bfloat16, got ${typeStr(x)}`, `cast it first: pl.cast(${argName(ctx.args[0])}, "float32")`);
  const wd = quantWeightDType(bits);
  const [n, kw] = w.shape;
  const k = x.shape[1];
  if (typeof k !== "number" || typeof n !== "number" || typeof kw !== "number") ctx.fail(`K and N must be static, got x ${typeStr(x)} and weight ${typeStr(w)}`, "give the weight and x's columns static extents (the rows of x may be dynamic)");
  const kb = bits === 4 ? k / 2 : k;
  if (w.dtype !== wd || kw !== kb) {
    ctx.fail(`the ${bits}-bit weight '${argName(ctx.args[1])}' must be a ${wd} [N, ${bits === 4 ? "K/2" : "K"}] = [N, ${Number.isInteger(kb) ? kb : `${k}/2`}] ${what} for x ${typeStr(x)} (K = ${k}), got ${typeStr(w)}`,
      bits === 4 ? "int4 weights are packed two per byte along K (k = 2j in the low nibble of byte j, stored as q + 8): quantize them with tspto.quantize(w, { bits: 4, groupSize })"
        : "int8 weights are stored one per byte, one row per output column: quantize them with tspto.quantize(w, { bits: 8, groupSize })");
  }
  if (bits === 4 && k % 2 !== 0) ctx.fail(`int4 weights need an even K, got K = ${k}`, "pad K to an even extent");
  if (typeof g !== "number" || !Number.isInteger(g) || g <= 0 || k % g !== 0) {
    ctx.fail(`groupSize must be a positive integer that divides K = ${k}, got ${JSON.stringify(g ?? null)}`,
      `divisors of ${k} near the usual sizes: ${[32, 64, 128].map((t) => nearestDivisor(k, t)).filter((v, i, a) => a.indexOf(v) === i).join(", ")}`);
  }
  const groups = k / g;
  if (!QUANT_SCALE_DTYPES.includes(s.dtype) || s.shape[0] !== n || s.shape[1] !== groups) {
    ctx.fail(`the scales '${argName(ctx.args[2])}' must be a [${n}, ${groups}] (N, K / groupSize) float32, float16 or bfloat16 ${what}, got ${typeStr(s)}`,
      "one scale per group of groupSize weights along K, one row per output column (tspto.quantize returns them)");
  }
  const out = ctx.attrs.outDtype == null ? "float32" : expectDType(ctx, "outDtype", ctx.attrs.outDtype);
  if (!isFloat(out)) ctx.fail(`outDtype must be float32, float16 or bfloat16, got ${out}`, "cast the result afterwards: pl.cast(r, dtype)");
  let valid: Dim[] | null = null;
  if (level === "tile") {
    const xt = x as TileType, wt = w as TileType, st = s as TileType;
    if (xt.validShape && xt.validShape[1] !== k) ctx.fail(`x's valid columns must be all of K = ${k}, got validShape [${xt.validShape.join(", ")}]`, "fill the pad first: pl.fillpad(x)");
    if (wt.validShape && wt.validShape[1] !== kw) ctx.fail(`the weight's valid columns must be whole rows, got validShape [${wt.validShape.join(", ")}]`);
    if (st.validShape && st.validShape[1] !== groups) ctx.fail(`the scales' valid columns must be whole rows, got validShape [${st.validShape.join(", ")}]`);
    const wv = wt.validShape ? wt.validShape[0] : n;
    const sv = st.validShape ? st.validShape[0] : n;
    if (wv !== sv) ctx.fail(`the weight and the scales must have the same valid rows, got ${typeStr(wt)} and ${typeStr(st)}`);
    if (xt.validShape || wt.validShape) valid = [xt.validShape ? xt.validShape[0] : xt.shape[0], wv];
  }
  return { m: x.shape[0], n, out, valid };
}

/** The divisor of k nearest to t. */
function nearestDivisor(k: number, t: number): number {
  let best = 1;
  for (let d = 1; d <= k; d++) if (k % d === 0 && Math.abs(d - t) < Math.abs(best - t)) best = d;
  return best;
}

/** The weight value q(n, k) of row n of a weight (elements `w(idx)` in row-major order, row length kw). */
export function quantWeight(w: (idx: number) => number, bits: number, kw: number, n: number, k: number): number {
  if (bits === 8) return w(n * kw + k);
  const byte = w(n * kw + (k >> 1)) & 0xff;
  return ((k & 1) === 0 ? byte & 0x0f : byte >> 4) - 8;
}

/**
 * out[i][n] (before the final rounding), in float64: groups in order, k in order inside a group,
 * each group sum times its scale added to the total. `x(i, k)`, `w(idx)`, `s(n, g)` read the operands.
 */
export function matmulQuantValue(x: (i: number, k: number) => number, w: (idx: number) => number, s: (n: number, g: number) => number,
  bits: number, groupSize: number, k: number, i: number, n: number): number {
  const kw = bits === 4 ? k / 2 : k;
  let total = 0;
  for (let g0 = 0; g0 < k; g0 += groupSize) {
    let part = 0;
    for (let kk = g0; kk < g0 + groupSize; kk++) part += x(i, kk) * quantWeight(w, bits, kw, n, kk);
    total += s(n, g0 / groupSize) * part;
  }
  return total;
}

function evaluateTiles(x: TileValue, w: TileValue, s: TileValue, attrs: Attrs, outType: TileType): TileValue {
  const bits = Number(attrs.bits), g = Number(attrs.groupSize);
  const [m, k] = x.shape, n = w.shape[0], groups = s.shape[1];
  const out = mkTile(outType.shape, outType.dtype, outType.mem, outType.validShape as number[] | null);
  const mv = x.validShape ? x.validShape[0] : m, nv = w.validShape ? w.validShape[0] : n;
  for (let i = 0; i < mv; i++) {
    for (let j = 0; j < nv; j++) {
      const v = matmulQuantValue((r, c) => x.data[r * k + c], (idx) => w.data[idx], (r, c) => s.data[r * groups + c], bits, g, k, i, j);
      out.data[i * n + j] = castToDType(Math.fround(v), outType.dtype, "round");
    }
  }
  return out;
}

const DOC = "matmulQuant(x[M,K], w, scales[N,K/groupSize], { bits: 8 | 4, groupSize, outDtype? }) -> [M,N] float32: x @ dequant(w)ᵀ, weight-only quantized (bits 8: w int8 [N,K]; bits 4: w uint8 [N,K/2], k = 2j in the low nibble of byte j, value = nibble - 8), dequantized inside the product: weight (n,k) = q * scales[n][k / groupSize]; fp32 accumulation (the reference sums in float64)";

registerOp({
  name: "tile.matmulQuant", pl: "matmulQuant", level: "tile", pure: true, fusable: false,
  // the product's 2·M·N·K (K: x's valid columns), on the vector pipes; the dequantizing multiplies are not counted
  cost: (c) => ({ flops: 2 * numel(c.extents) * (c.operand(0) ?? [0, 0])[1] }),
  doc: DOC,
  decl: [
    "(x: AnyTile, w: AnyTile, scales: AnyTile, opts: { readonly bits: 4 | 8; readonly groupSize: number; readonly outDtype?: DType }): Tile<any, any, Mem.Acc, any>",
    "<D extends DType = FP32>(x: Tensor, w: Tensor, scales: Tensor, opts: { readonly bits: 4 | 8; readonly groupSize: number; readonly outDtype?: D }): Tensor<any, D>",
  ],
  row: {
    key: "matmulQuant", call: "matmulQuant(x[M,K], w, scales, { bits, groupSize, outDtype? })",
    does: "→ `[M,N]` fp32: x times a weight-only quantized weight, dequantized inside the product (never in memory); one row per output column: `bits: 8`: w int8 `[N,K]`; `bits: 4`: w uint8 `[N,K/2]`, two per byte (k = 2j in the low nibble, value = nibble − 8, MatMulNBits' encoding); `scales` `[N, K/groupSize]` fp32/fp16/bf16, groupSize any divisor of K; fp32 accumulation (order implementation-defined; the reference sums in float64); `tspto.quantize` makes w and scales; tensors: auto-tiled, M = 1 (decode) streams the weight rows",
  },
  params: [{ name: "x", kind: "value" }, { name: "w", kind: "value" }, { name: "scales", kind: "value" }, { name: "opts", kind: "options", options: QUANT_OPTS }],
  infer(ctx) {
    const { m, n, out, valid } = inferQuant(ctx, "tile");
    return tileT([m as number, n], out, "Acc", valid);
  },
  evaluate([xv, wv, sv], attrs, _env, call) {
    return evaluateTiles(xv as TileValue, wv as TileValue, sv as TileValue, attrs, call.type as TileType);
  },
});

registerOp({
  name: "tensor.matmulQuant", pl: "matmulQuant", level: "tensor", pure: true,
  doc: "matmulQuant(x, w, scales, { bits, groupSize, outDtype? }) on tensors -> [M,N] (inside pl.at; auto-tiled over M and N, K whole in each tile; an elementwise expression around it is fused as its epilogue)",
  params: [{ name: "x", kind: "value" }, { name: "w", kind: "value" }, { name: "scales", kind: "value" }, { name: "opts", kind: "options", options: QUANT_OPTS }],
  infer(ctx) {
    const { m, n, out } = inferQuant(ctx, "tensor");
    return tensorT([m, n], out);
  },
  effects: (args) => ({ reads: args.map((a, i) => (a.kind !== "const" && a.type.kind === "tensor" ? i : -1)).filter((i) => i >= 0), writes: [] }),
  evaluate([xv, wv, sv], attrs, _env, call) {
    const x = xv as TensorValue, w = wv as TensorValue, s = sv as TensorValue;
    const bits = Number(attrs.bits), g = Number(attrs.groupSize);
    const [m, k] = x.shape, n = w.shape[0], groups = s.shape[1];
    const t = call.type as TensorType;
    const out = newTensor([m, n], t.dtype);
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        const v = matmulQuantValue((r, c) => readElem(x, r * k + c), (idx) => readElem(w, idx), (r, c) => readElem(s, r * groups + c), bits, g, k, i, j);
        writeElem(out, i * n + j, castToDType(Math.fround(v), t.dtype, "round"));
      }
    }
    return out;
  },
});


// GPT-2 in tspto, written on whole tensors: LayerNorm with row reductions, each linear layer one
// matmul with its bias / residual / GELU epilogue, tanh-GELU, attention per head over the
// column windows of a KV cache that stays on the device (the first L rows of a [n_positions, D]
// DeviceTensor through cache.narrow(0, 0, L)), the tied logits with bTrans, greedy argmax.
// One compile of each program serves every prompt length and every position.
//
// The programs are made per model shape (kernels(config)): the widths come from config.json, so
// they reach the kernels through `opts.scope` and annotate the shapes as `typeof D`.
//
// Tensor parallelism (Megatron-style) is the same programs at one rank's shapes
// (kernels(config, tp)) and the same model class given a DistributedWorker: each rank holds
// n_head / tp heads and 4D / tp MLP units of every block (shardLayer cuts them from the
// checkpoint) and vocab_size / tp rows of the tied wte; the residual stream is all-reduced after
// the embedding, after attention and after the MLP, and the logits are gathered.
//
// Lower precision (kernels(config, tp, vocab, precision)): dtype "bf16" keeps the weights (wte,
// wpe and every linear layer's) and the KV caches in bfloat16; the residual stream, LayerNorm,
// softmax and every accumulation stay fp32 (the operands of each matmul are cast to bf16 where
// they are written: h, qkv, the attention probabilities and output, the GELU output). quant
// { bits: 8 | 4, groupSize } stores every linear layer's weight and the tied head weight-only
// quantized (pl.matmulQuant: int8, or int4 two per byte, one scale per groupSize weights along
// K; tspto.quantize on load), activations and caches fp32, the embedding lookup from the fp32 wte.
import { pl, ChipWorker, RunConfig, zeros, quantize, HostTensor, type CompiledProgram, type DeviceTensor, type DistributedWorker, type RegistrationHandle, type ShardedTensor } from "tspto";
import type { GPT2Config, GPT2Weights, LayerWeights } from "./weights.js";

/**
 * The programs of a GPT-2 of this shape, for one rank of a `tp`-way tensor-parallel run (tp = 1:
 * the whole model). A rank holds nHead / tp heads (width DL = D / tp of q, k and v) and the
 * slice FF = 4D / tp of the MLP's hidden layer: the shapes below are that rank's. attn and mlp
 * each end in a row-parallel matmul (attention's out-projection, the MLP's second layer) whose
 * product is only this rank's part of the sum; the residual and the bias join it through
 * `keep` (1 on rank 0, 0 on the others), so one allReduce(sum) of x after each of them gives
 * every rank x + bias + the sum of all parts. The embedding and the tied head are
 * vocabulary-parallel: a rank holds `vocab` consecutive rows of wte, embeds the tokens among
 * them (`mine` = 1 for those rows, 0 for the others, whose lookup is clamped) plus keep * wpe,
 * for one allReduce of x, and computes the logits of its rows. With tp = 1 and keep = 1 nothing
 * is reduced.
 */
export function kernels(c: GPT2Config, tp = 1, vocab = c.vocabSize, precision: Precision = {}) {
  if (!Number.isInteger(tp) || tp < 1 || c.nHead % tp !== 0) {
    throw new Error(`tensor parallel: n_head = ${c.nHead} is not divisible by tp = ${tp} (each rank takes n_head / tp whole heads)`);
  }
  const D = c.nEmbd, H = c.nHead / tp, HD = c.nEmbd / c.nHead, DL = H * HD, QKV = 3 * DL, FF = (4 * c.nEmbd) / tp, V = vocab, P = c.nPositions;
  const EPS = c.eps, INV_D = 1 / D, SCALE = 1 / Math.sqrt(HD), GELU_C = Math.sqrt(2 / Math.PI);
  const scope = { D, DL, QKV, H, HD, FF, V, P, EPS, INV_D, SCALE, GELU_C };
  checkPrecision(c, tp, precision);
  if (precision.dtype === "bf16") return bf16Kernels(scope);
  if (precision.quant) return quantKernels(scope, precision.quant);

  /** x[S, D] = mine * wte[ids] + keep * wpe[pos .. pos + S] (one process: mine = 1, keep = 1) */
  const embed = pl.jit(function embed(ids: pl.Tensor<["S"], pl.INT32>, mine: pl.Tensor<["S", 1], pl.FP32>, wte: pl.Tensor<[typeof V, typeof D], pl.FP32>,
    wpe: pl.Tensor<[typeof P, typeof D], pl.FP32>, pos: pl.Scalar<pl.INT64>, keep: pl.Scalar<pl.FP32>, x: pl.Out<pl.Tensor<["S", typeof D], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.rowExpandMul(pl.gather(wte, ids), mine), pl.mul(pl.slice(wpe, [pl.dim(x, 0), D], [pos, 0]), keep)));
    });
    return x;
  }, { scope });

  /**
   * The attention half of a transformer block on the S new tokens, in place on the residual
   * stream x: x = att @ projW + keep * (x + projB), att over this rank's H heads. kc / vc are
   * the first L rows of the layer's caches of these heads (L = the tokens so far, these S
   * included); the new keys and values are written into their last S rows.
   */
  const attn = pl.jit(function attn(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln1w: pl.Tensor<[1, typeof D], pl.FP32>, ln1b: pl.Tensor<[1, typeof D], pl.FP32>,
    attnW: pl.Tensor<[typeof D, typeof QKV], pl.FP32>, attnB: pl.Tensor<[1, typeof QKV], pl.FP32>,
    projW: pl.Tensor<[typeof DL, typeof D], pl.FP32>, projB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>,
    kc: pl.InOut<pl.Tensor<["L", typeof DL], pl.FP32>>, vc: pl.InOut<pl.Tensor<["L", typeof DL], pl.FP32>>) {
    const h = pl.createTensor(["S", D], pl.FP32);
    const qkv = pl.createTensor(["S", QKV], pl.FP32);
    const att = pl.createTensor(["S", DL], pl.FP32);
    const scores = pl.createTensor(["S", "L"], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln1w), ln1b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(qkv, pl.add(pl.matmul(h, attnW), attnB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      // the new keys and values: the cache's last S rows
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      pl.assemble(kc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, DL]), [past, 0]);
      pl.assemble(vc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, 2 * DL]), [past, 0]);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      for (const hd of pl.range(H)) {
        const q = pl.slice(qkv, [pl.dim(x, 0), HD], [0, HD * hd]);
        const k = pl.slice(kc, [pl.dim(kc, 0), HD], [0, HD * hd]);
        const v = pl.slice(vc, [pl.dim(vc, 0), HD], [0, HD * hd]);
        // query i (position past + i) sees the cache rows j <= past + i
        const visible = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
        pl.assign(scores, pl.sel(visible, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE), -1e30));
        const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
        pl.assign(scores, pl.rowExpandDiv(e, pl.rowSum(e)));
        pl.assemble(att, pl.matmul(scores, v), [0, HD * hd]);
      }
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmul(att, projW), pl.mul(pl.add(x, projB), keep)));
    });
    return x;
  }, { scope });

  /** The MLP half, in place on x: x = gelu(LN2(x) @ fcW + fcB) @ fcProjW + keep * (x + fcProjB), over this rank's FF hidden units. */
  const mlp = pl.jit(function mlp(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln2w: pl.Tensor<[1, typeof D], pl.FP32>, ln2b: pl.Tensor<[1, typeof D], pl.FP32>,
    fcW: pl.Tensor<[typeof D, typeof FF], pl.FP32>, fcB: pl.Tensor<[1, typeof FF], pl.FP32>,
    fcProjW: pl.Tensor<[typeof FF, typeof D], pl.FP32>, fcProjB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>) {
    const h = pl.createTensor(["S", D], pl.FP32);
    const f = pl.createTensor(["S", FF], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln2w), ln2b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const u = pl.add(pl.matmul(h, fcW), fcB);
      // GELU, tanh form: 0.5 u (1 + tanh(sqrt(2 / pi) (u + 0.044715 u^3)))
      pl.assign(f, pl.mul(pl.mul(u, 0.5), pl.add(pl.tanh(pl.mul(pl.add(u, pl.mul(pl.mul(pl.mul(u, u), u), 0.044715)), GELU_C)), 1)));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmul(f, fcProjW), pl.mul(pl.add(x, fcProjB), keep)));
    });
    return x;
  }, { scope });

  /** The last token's logits (the final LayerNorm, then x @ wteᵀ: this rank's rows of wte) and their argmax. */
  const head = pl.jit(function head(x: pl.Tensor<["S", typeof D], pl.FP32>, lnfW: pl.Tensor<[1, typeof D], pl.FP32>, lnfB: pl.Tensor<[1, typeof D], pl.FP32>,
    wte: pl.Tensor<[typeof V, typeof D], pl.FP32>, logits: pl.Out<pl.Tensor<[1, typeof V], pl.FP32>>, next: pl.Out<pl.Tensor<[1, 1], pl.INT32>>) {
    const hl = pl.createTensor([1, D], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const last = pl.slice(x, [1, D], [pl.dim(x, 0) - 1, 0]);
      const mean = pl.mul(pl.rowSum(last), INV_D);
      const xc = pl.rowExpandSub(last, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(hl, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), lnfW), lnfB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(logits, pl.matmul(hl, wte, { bTrans: true }));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(next, pl.rowArgmax(logits));
    });
    return logits;
  }, { scope });

  return { embed, attn, mlp, head };
}

/** The precision of a model's weights: dtype "fp32" (default) or "bf16"; quant: weight-only int8 / int4 (not with bf16). */
export interface Precision { readonly dtype?: "fp32" | "bf16"; readonly quant?: { readonly bits: 4 | 8; readonly groupSize: number } }

/** Checks that a precision fits the model's (one rank's) shapes: each quantized matmul's K is a multiple of the group size. */
export function checkPrecision(c: GPT2Config, tp: number, p: Precision): void {
  if (p.dtype !== undefined && p.dtype !== "fp32" && p.dtype !== "bf16") throw new Error(`dtype must be fp32 or bf16, got ${String(p.dtype)}`);
  if (!p.quant) return;
  if (p.dtype === "bf16") throw new Error("give one of dtype bf16 and quant (weight-only quantization keeps fp32 activations and caches)");
  const { bits, groupSize: g } = p.quant;
  if (bits !== 4 && bits !== 8) throw new Error(`quant bits must be 4 or 8, got ${String(bits)}`);
  // K of each quantized product: D (qkv, fc, head), D / tp (proj), 4D / tp (fcProj)
  for (const [k, what] of [[c.nEmbd, "n_embd"], [c.nEmbd / tp, "n_embd / tp"], [(4 * c.nEmbd) / tp, "4 n_embd / tp"]] as const) {
    if (!Number.isInteger(g) || g <= 0 || k % g !== 0) throw new Error(`quant group size ${g} must divide ${what} = ${k} (the K of a quantized matmul)`);
  }
}

type Scope = { D: number; DL: number; QKV: number; H: number; HD: number; FF: number; V: number; P: number; EPS: number; INV_D: number; SCALE: number; GELU_C: number };

/**
 * The programs with bfloat16 weights and KV caches: each matmul's operands in bf16 (h, qkv, the
 * probabilities, att, the GELU output are written as bf16), fp32 accumulation, the residual
 * stream, LayerNorm statistics, softmax and biases fp32.
 */
function bf16Kernels(s: Scope) {
  const { D, DL, QKV, H, HD, FF, V, P, EPS, INV_D, SCALE, GELU_C } = s;
  const scope = { ...s };
  const embed = pl.jit(function embed(ids: pl.Tensor<["S"], pl.INT32>, mine: pl.Tensor<["S", 1], pl.FP32>, wte: pl.Tensor<[typeof V, typeof D], pl.BF16>,
    wpe: pl.Tensor<[typeof P, typeof D], pl.BF16>, pos: pl.Scalar<pl.INT64>, keep: pl.Scalar<pl.FP32>, x: pl.Out<pl.Tensor<["S", typeof D], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.rowExpandMul(pl.cast(pl.gather(wte, ids), pl.FP32), mine), pl.mul(pl.cast(pl.slice(wpe, [pl.dim(x, 0), D], [pos, 0]), pl.FP32), keep)));
    });
    return x;
  }, { scope });

  const attn = pl.jit(function attn(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln1w: pl.Tensor<[1, typeof D], pl.FP32>, ln1b: pl.Tensor<[1, typeof D], pl.FP32>,
    attnW: pl.Tensor<[typeof D, typeof QKV], pl.BF16>, attnB: pl.Tensor<[1, typeof QKV], pl.FP32>,
    projW: pl.Tensor<[typeof DL, typeof D], pl.BF16>, projB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>,
    kc: pl.InOut<pl.Tensor<["L", typeof DL], pl.BF16>>, vc: pl.InOut<pl.Tensor<["L", typeof DL], pl.BF16>>) {
    const h = pl.createTensor(["S", D], pl.BF16);
    const qkv = pl.createTensor(["S", QKV], pl.BF16);
    const att = pl.createTensor(["S", DL], pl.BF16);
    const scores = pl.createTensor(["S", "L"], pl.FP32);
    const probs = pl.createTensor(["S", "L"], pl.BF16);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.cast(pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln1w), ln1b), pl.BF16));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(qkv, pl.cast(pl.add(pl.matmul(h, attnW), attnB), pl.BF16));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      pl.assemble(kc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, DL]), [past, 0]);
      pl.assemble(vc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, 2 * DL]), [past, 0]);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      for (const hd of pl.range(H)) {
        const q = pl.slice(qkv, [pl.dim(x, 0), HD], [0, HD * hd]);
        const k = pl.slice(kc, [pl.dim(kc, 0), HD], [0, HD * hd]);
        const v = pl.slice(vc, [pl.dim(vc, 0), HD], [0, HD * hd]);
        const visible = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
        pl.assign(scores, pl.sel(visible, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE), -1e30));
        const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
        pl.assign(probs, pl.cast(pl.rowExpandDiv(e, pl.rowSum(e)), pl.BF16));
        pl.assemble(att, pl.cast(pl.matmul(probs, v), pl.BF16), [0, HD * hd]);
      }
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmul(att, projW), pl.mul(pl.add(x, projB), keep)));
    });
    return x;
  }, { scope });

  const mlp = pl.jit(function mlp(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln2w: pl.Tensor<[1, typeof D], pl.FP32>, ln2b: pl.Tensor<[1, typeof D], pl.FP32>,
    fcW: pl.Tensor<[typeof D, typeof FF], pl.BF16>, fcB: pl.Tensor<[1, typeof FF], pl.FP32>,
    fcProjW: pl.Tensor<[typeof FF, typeof D], pl.BF16>, fcProjB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>) {
    const h = pl.createTensor(["S", D], pl.BF16);
    const f = pl.createTensor(["S", FF], pl.BF16);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.cast(pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln2w), ln2b), pl.BF16));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const u = pl.add(pl.matmul(h, fcW), fcB);
      pl.assign(f, pl.cast(pl.mul(pl.mul(u, 0.5), pl.add(pl.tanh(pl.mul(pl.add(u, pl.mul(pl.mul(pl.mul(u, u), u), 0.044715)), GELU_C)), 1)), pl.BF16));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmul(f, fcProjW), pl.mul(pl.add(x, fcProjB), keep)));
    });
    return x;
  }, { scope });

  const head = pl.jit(function head(x: pl.Tensor<["S", typeof D], pl.FP32>, lnfW: pl.Tensor<[1, typeof D], pl.FP32>, lnfB: pl.Tensor<[1, typeof D], pl.FP32>,
    wte: pl.Tensor<[typeof V, typeof D], pl.BF16>, logits: pl.Out<pl.Tensor<[1, typeof V], pl.FP32>>, next: pl.Out<pl.Tensor<[1, 1], pl.INT32>>) {
    const hl = pl.createTensor([1, D], pl.BF16);
    pl.at(pl.Level.CORE_GROUP, () => {
      const last = pl.slice(x, [1, D], [pl.dim(x, 0) - 1, 0]);
      const mean = pl.mul(pl.rowSum(last), INV_D);
      const xc = pl.rowExpandSub(last, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(hl, pl.cast(pl.add(pl.mul(pl.rowExpandMul(xc, rstd), lnfW), lnfB), pl.BF16));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(logits, pl.matmul(hl, wte, { bTrans: true }));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(next, pl.rowArgmax(logits));
    });
    return logits;
  }, { scope });
  return { embed, attn, mlp, head };
}

/**
 * The programs with weight-only quantized linear layers and head (pl.matmulQuant): each weight
 * is a (packed weight, scales) pair in nn.Linear's layout ([N, K]: qkv [QKV, D], proj [D, DL], fc
 * [FF, D], fcProj [D, FF], the head wte [V, D]); activations and caches fp32.
 */
function quantKernels(s: Scope, q: { readonly bits: 4 | 8; readonly groupSize: number }) {
  const { D, DL, QKV, H, HD, FF, V, P, EPS, INV_D, SCALE, GELU_C } = s;
  const BITS = q.bits, G = q.groupSize;
  const scope = { ...s, BITS, G };
  const embed = pl.jit(function embed(ids: pl.Tensor<["S"], pl.INT32>, mine: pl.Tensor<["S", 1], pl.FP32>, wte: pl.Tensor<[typeof V, typeof D], pl.FP32>,
    wpe: pl.Tensor<[typeof P, typeof D], pl.FP32>, pos: pl.Scalar<pl.INT64>, keep: pl.Scalar<pl.FP32>, x: pl.Out<pl.Tensor<["S", typeof D], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.rowExpandMul(pl.gather(wte, ids), mine), pl.mul(pl.slice(wpe, [pl.dim(x, 0), D], [pos, 0]), keep)));
    });
    return x;
  }, { scope });

  const attn = pl.jit(function attn(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln1w: pl.Tensor<[1, typeof D], pl.FP32>, ln1b: pl.Tensor<[1, typeof D], pl.FP32>,
    attnW: pl.Tensor, attnS: pl.Tensor, attnB: pl.Tensor<[1, typeof QKV], pl.FP32>,
    projW: pl.Tensor, projS: pl.Tensor, projB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>,
    kc: pl.InOut<pl.Tensor<["L", typeof DL], pl.FP32>>, vc: pl.InOut<pl.Tensor<["L", typeof DL], pl.FP32>>) {
    const h = pl.createTensor(["S", D], pl.FP32);
    const qkv = pl.createTensor(["S", QKV], pl.FP32);
    const att = pl.createTensor(["S", DL], pl.FP32);
    const scores = pl.createTensor(["S", "L"], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln1w), ln1b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(qkv, pl.add(pl.matmulQuant(h, attnW, attnS, { bits: BITS, groupSize: G }), attnB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      pl.assemble(kc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, DL]), [past, 0]);
      pl.assemble(vc, pl.slice(qkv, [pl.dim(x, 0), DL], [0, 2 * DL]), [past, 0]);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      for (const hd of pl.range(H)) {
        const q = pl.slice(qkv, [pl.dim(x, 0), HD], [0, HD * hd]);
        const k = pl.slice(kc, [pl.dim(kc, 0), HD], [0, HD * hd]);
        const v = pl.slice(vc, [pl.dim(vc, 0), HD], [0, HD * hd]);
        const visible = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
        pl.assign(scores, pl.sel(visible, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE), -1e30));
        const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
        pl.assign(scores, pl.rowExpandDiv(e, pl.rowSum(e)));
        pl.assemble(att, pl.matmul(scores, v), [0, HD * hd]);
      }
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmulQuant(att, projW, projS, { bits: BITS, groupSize: G }), pl.mul(pl.add(x, projB), keep)));
    });
    return x;
  }, { scope });

  const mlp = pl.jit(function mlp(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln2w: pl.Tensor<[1, typeof D], pl.FP32>, ln2b: pl.Tensor<[1, typeof D], pl.FP32>,
    fcW: pl.Tensor, fcS: pl.Tensor, fcB: pl.Tensor<[1, typeof FF], pl.FP32>,
    fcProjW: pl.Tensor, fcProjS: pl.Tensor, fcProjB: pl.Tensor<[1, typeof D], pl.FP32>, keep: pl.Scalar<pl.FP32>) {
    const h = pl.createTensor(["S", D], pl.FP32);
    const f = pl.createTensor(["S", FF], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln2w), ln2b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const u = pl.add(pl.matmulQuant(h, fcW, fcS, { bits: BITS, groupSize: G }), fcB);
      pl.assign(f, pl.mul(pl.mul(u, 0.5), pl.add(pl.tanh(pl.mul(pl.add(u, pl.mul(pl.mul(pl.mul(u, u), u), 0.044715)), GELU_C)), 1)));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.matmulQuant(f, fcProjW, fcProjS, { bits: BITS, groupSize: G }), pl.mul(pl.add(x, fcProjB), keep)));
    });
    return x;
  }, { scope });

  const head = pl.jit(function head(x: pl.Tensor<["S", typeof D], pl.FP32>, lnfW: pl.Tensor<[1, typeof D], pl.FP32>, lnfB: pl.Tensor<[1, typeof D], pl.FP32>,
    wteQ: pl.Tensor, wteS: pl.Tensor, logits: pl.Out<pl.Tensor<[1, typeof V], pl.FP32>>, next: pl.Out<pl.Tensor<[1, 1], pl.INT32>>) {
    const hl = pl.createTensor([1, D], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const last = pl.slice(x, [1, D], [pl.dim(x, 0) - 1, 0]);
      const mean = pl.mul(pl.rowSum(last), INV_D);
      const xc = pl.rowExpandSub(last, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(hl, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), lnfW), lnfB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(logits, pl.matmulQuant(hl, wteQ, wteS, { bits: BITS, groupSize: G }));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(next, pl.rowArgmax(logits));
    });
    return logits;
  }, { scope });
  return { embed, attn, mlp, head };
}

export interface ModelOptions {
  platform?: string; config?: RunConfig;
  /**
   * Tensor parallelism over the ranks of this DistributedWorker (one device per rank): this
   * process holds its 1/size of every block's weights, of wte's rows and of the KV caches on
   * dist.workers[0] (wpe, the LayerNorms and the row-parallel biases whole), reduces x after
   * the embedding and after each row-parallel layer, and gathers the logits. Every rank constructs the model with the same
   * weights and calls step() with the same tokens. The worker stays open (its owner closes it).
   */
  dist?: DistributedWorker;
  /** Weights in bfloat16 (and the KV caches), or weight-only int8 / int4 (default: fp32). */
  precision?: Precision;
  /** The compiled programs (GPT2Model.create compiles them in parallel); default: compiled here, one after another. */
  programs?: Programs;
}

/** This rank's part of a layer's weights under `tp`-way tensor parallelism (column-parallel qkv and fc, row-parallel proj and fcProj; LayerNorms and the row-parallel biases whole). */
export function shardLayer(c: GPT2Config, l: LayerWeights, rank: number, tp: number): LayerWeights {
  if (tp === 1) return l;
  const D = c.nEmbd, DL = D / tp, FF = (4 * D) / tp;
  const attnW = new Float32Array(D * 3 * DL), attnB = new Float32Array(3 * DL), fcW = new Float32Array(D * FF);
  for (let i = 0; i < D; i++) {
    // q, k and v of this rank's heads: columns [p D + rank DL, p D + (rank + 1) DL) of each part p
    for (let p = 0; p < 3; p++) attnW.set(l.attnW.subarray(i * 3 * D + p * D + rank * DL, i * 3 * D + p * D + (rank + 1) * DL), i * 3 * DL + p * DL);
    fcW.set(l.fcW.subarray(i * 4 * D + rank * FF, i * 4 * D + (rank + 1) * FF), i * FF);
  }
  for (let p = 0; p < 3; p++) attnB.set(l.attnB.subarray(p * D + rank * DL, p * D + (rank + 1) * DL), p * DL);
  return {
    ln1w: l.ln1w, ln1b: l.ln1b, attnW, attnB,
    projW: l.projW.slice(rank * DL * D, (rank + 1) * DL * D), projB: l.projB,
    ln2w: l.ln2w, ln2b: l.ln2b, fcW, fcB: l.fcB.slice(rank * FF, (rank + 1) * FF),
    fcProjW: l.fcProjW.slice(rank * FF * D, (rank + 1) * FF * D), fcProjB: l.fcProjB,
  };
}

type Programs = { embed: CompiledProgram; attn: CompiledProgram; mlp: CompiledProgram; head: CompiledProgram };

/**
 * A GPT-2 on one worker (or one rank's part of it, with `dist`): weights resident, one KV cache
 * per layer resident and written in place, the residual stream resident; each step is embed,
 * per layer attn and mlp, and the head (under tensor parallelism an allReduce of x after
 * embed, attn and mlp, and a gather of the logits).
 */
export class GPT2Model {
  readonly worker: ChipWorker;
  readonly programs: Programs;
  /** Ways of tensor parallelism (1 without `dist`) and this process's rank among them. */
  readonly tp: number;
  readonly rank: number;
  /** Tokens in the cache. */
  position = 0;
  /** This rank's rows of the vocabulary (wte and the logits): [vocabStart, vocabStart + vocabRows). */
  readonly vocabStart: number;
  readonly vocabRows: number;
  /** Time spent in collectives (ms: the allReduces of x, the gather of the logits) and how many, since construction (tensor parallelism only). */
  readonly comm = { ms: 0, count: 0 };
  private readonly logitShards: ShardedTensor | undefined;
  private readonly dist: DistributedWorker | undefined;
  private readonly keep: number;
  private readonly handles: { embed: RegistrationHandle; attn: RegistrationHandle; mlp: RegistrationHandle; head: RegistrationHandle };
  private readonly dev: { wte: DeviceTensor; headW: DeviceTensor[]; wpe: DeviceTensor; lnfW: DeviceTensor; lnfB: DeviceTensor; layers: { attn: DeviceTensor[]; mlp: DeviceTensor[] }[]; kc: DeviceTensor[]; vc: DeviceTensor[]; x: DeviceTensor };
  /** The precision of the weights (and, with bf16, of the caches). */
  readonly precision: Precision;
  private readonly logits: Float32Array;
  private readonly next = new Int32Array(1);

  /**
   * The model with its programs compiled at the same time and off the event loop (the
   * constructor compiles them one after another): what the CLI uses.
   */
  static async create(config: GPT2Config, weights: GPT2Weights, opts: ModelOptions & { onCompiled?: CompileProgress } = {}): Promise<GPT2Model> {
    if (opts.programs) return new GPT2Model(config, weights, opts);
    const tp = opts.dist?.size ?? 1, rank = opts.dist?.rank ?? 0;
    const cfg = opts.dist ? opts.dist.workers[0].config : (opts.config ?? new RunConfig({ platform: opts.platform ?? "cpu" }));
    // this rank's rows of the vocabulary, as the logits' ShardedTensor splits them (the first V % tp ranks one more)
    const rows = Math.floor(config.vocabSize / tp) + (rank < config.vocabSize % tp ? 1 : 0);
    const programs = await compileProgramsAsync(config, cfg, tp, rows, opts.precision ?? {}, opts.onCompiled);
    return new GPT2Model(config, weights, { ...opts, programs });
  }

  constructor(readonly config: GPT2Config, weights: GPT2Weights, opts: ModelOptions = {}) {
    const dist = opts.dist;
    if (dist && dist.devices !== 1) throw new Error(`tensor parallel: one device per rank (the DistributedWorker has ${dist.devices}); start one rank per device`);
    this.dist = dist;
    this.tp = dist?.size ?? 1;
    this.rank = dist?.rank ?? 0;
    this.keep = this.rank === 0 ? 1 : 0;
    const cfg = dist ? dist.workers[0].config : (opts.config ?? new RunConfig({ platform: opts.platform ?? "cpu" }));
    const { nEmbd: D, vocabSize: V, nPositions: P } = config;
    const DL = D / this.tp, FF = (4 * D) / this.tp;
    // The logits as one ShardedTensor over the ranks: its shards say which rows of wte each rank
    // holds (the first V % tp ranks one more), and gather() assembles them.
    this.logitShards = dist && this.tp > 1 ? dist.allocSharded([1, V], "float32", { axis: 1 }) : undefined;
    const rows = this.logitShards?.shardShapes.map((sh) => sh[1]) ?? [V];
    this.vocabRows = rows[this.rank];
    this.vocabStart = rows.slice(0, this.rank).reduce((a, b) => a + b, 0);
    const prec = opts.precision ?? {};
    this.precision = prec;
    this.programs = opts.programs ?? compilePrograms(config, cfg, this.tp, this.vocabRows, prec);
    this.worker = dist ? dist.workers[0] : new ChipWorker(cfg);
    const w = this.worker;
    const put = (shape: number[], data: Float32Array) => w.allocTensor(shape, "float32", { init: { data, shape } });
    const bf16 = prec.dtype === "bf16", quant = prec.quant;
    /** A weight as the programs take it: fp32, bf16, or (quant) its packed weight and scales in [N, K] from a [K, N] (layout "kn") or [N, K] matrix. */
    const weight = (shape: number[], data: Float32Array, layout: "kn" | "nk" = "kn"): DeviceTensor[] => {
      if (bf16) return [w.allocTensor(shape, "bfloat16", { init: new HostTensor(data, shape, "float32").astype("bfloat16") })];
      if (!quant) return [put(shape, data)];
      const q = quantize(new HostTensor(data, shape, "float32"), { bits: quant.bits, groupSize: quant.groupSize, layout });
      return [w.allocTensor(q.w.shape, q.w.dtype, { init: q.w }), w.allocTensor(q.scales.shape, "float32", { init: q.scales })];
    };
    const wteRows = weights.wte.subarray(this.vocabStart * D, (this.vocabStart + this.vocabRows) * D);
    const wte = bf16 ? weight([this.vocabRows, D], wteRows)[0] : put([this.vocabRows, D], wteRows);
    const cacheD = bf16 ? "bfloat16" : "float32";
    this.dev = {
      wte, headW: quant ? weight([this.vocabRows, D], wteRows, "nk") : [wte],
      wpe: bf16 ? weight([P, D], weights.wpe)[0] : put([P, D], weights.wpe), lnfW: put([1, D], weights.lnfW), lnfB: put([1, D], weights.lnfB),
      layers: weights.layers.map((full) => {
        const l = shardLayer(config, full, this.rank, this.tp);
        return {
          attn: [put([1, D], l.ln1w), put([1, D], l.ln1b), ...weight([D, 3 * DL], l.attnW), put([1, 3 * DL], l.attnB), ...weight([DL, D], l.projW), put([1, D], l.projB)],
          mlp: [put([1, D], l.ln2w), put([1, D], l.ln2b), ...weight([D, FF], l.fcW), put([1, FF], l.fcB), ...weight([FF, D], l.fcProjW), put([1, D], l.fcProjB)],
        };
      }),
      kc: weights.layers.map(() => w.allocTensor([P, DL], cacheD)),
      vc: weights.layers.map(() => w.allocTensor([P, DL], cacheD)),
      x: w.allocTensor([P, D], "float32"),
    };
    this.handles = { embed: w.register(this.programs.embed), attn: w.register(this.programs.attn), mlp: w.register(this.programs.mlp), head: w.register(this.programs.head) };
    this.logits = new Float32Array(V);
  }

  /**
   * Runs `tokens` (a prompt, or the one token just generated) after the cached ones; returns the
   * logits of the last of them (a view, overwritten by the next step) and its argmax. Under
   * tensor parallelism every rank passes the same tokens and gets the same logits.
   */
  step(tokens: readonly number[]): { logits: Float32Array; next: number } {
    const S = tokens.length, L = this.position + S, V = this.config.vocabSize;
    if (S < 1) throw new Error("step: no tokens");
    if (L > this.config.nPositions) throw new Error(`step: ${L} tokens exceed n_positions = ${this.config.nPositions}`);
    for (const t of tokens) if (!Number.isInteger(t) || t < 0 || t >= V) throw new Error(`step: token ${t} is outside the vocabulary [0, ${V})`);
    const x = this.dev.x.narrow(0, 0, S);
    const [ids, mine] = this.localIds(tokens);
    this.handles.embed({ data: ids, shape: [S] }, { data: mine, shape: [S, 1] }, this.dev.wte, this.dev.wpe, this.position, this.keep, x);
    this.reduce(x);
    for (let i = 0; i < this.config.nLayer; i++) {
      const l = this.dev.layers[i];
      this.handles.attn(x, ...l.attn, this.keep, this.dev.kc[i].narrow(0, 0, L), this.dev.vc[i].narrow(0, 0, L));
      this.reduce(x);
      this.handles.mlp(x, ...l.mlp, this.keep);
      this.reduce(x);
    }
    this.position = L;
    if (!this.logitShards) {
      this.handles.head(x, this.dev.lnfW, this.dev.lnfB, ...this.dev.headW, { data: this.logits, shape: [1, V] }, { data: this.next, shape: [1, 1] });
      return { logits: this.logits, next: this.next[0] };
    }
    // this rank's logits into its shard, then every rank gathers all of them and takes the argmax
    this.handles.head(x, this.dev.lnfW, this.dev.lnfB, ...this.dev.headW, this.logitShards.shards[0], { data: this.next, shape: [1, 1] });
    const t0 = performance.now();
    this.logits.set(this.dist!.gather(this.logitShards).data as Float32Array);
    this.comm.ms += performance.now() - t0;
    this.comm.count++;
    let best = 0;
    for (let v = 1; v < V; v++) if (this.logits[v] > this.logits[best]) best = v;
    return { logits: this.logits, next: best };
  }

  /** The tokens as rows of this rank's part of wte (0 for the others, which `mine` zeroes). */
  private localIds(tokens: readonly number[]): [Int32Array, Float32Array] {
    const ids = new Int32Array(tokens.length), mine = new Float32Array(tokens.length);
    tokens.forEach((t, i) => {
      const r = t - this.vocabStart;
      const ok = r >= 0 && r < this.vocabRows;
      ids[i] = ok ? r : 0;
      mine[i] = ok ? 1 : 0;
    });
    return [ids, mine];
  }

  /** Sums every rank's x (the row-parallel layer's parts, rank 0's also carrying the residual and bias; after embed, each token's row from the rank that holds it). */
  private reduce(x: DeviceTensor): void {
    if (!this.dist) return;
    const t0 = performance.now();
    this.dist.allReduce(x, "sum");
    this.comm.ms += performance.now() - t0;
    this.comm.count++;
  }

  /** The launches one step of `tokens` makes (program, arguments, how many times), for benchmarks; runs nothing. */
  stepLaunches(tokens: readonly number[]): { compiled: CompiledProgram; args: unknown[]; count: number }[] {
    const S = tokens.length, L = this.position + S, V = this.vocabRows;
    const x = this.dev.x.narrow(0, 0, S);
    const l = this.dev.layers[0];
    const [ids, mine] = this.localIds(tokens);
    return [
      { compiled: this.programs.embed, args: [{ data: ids, shape: [S] }, { data: mine, shape: [S, 1] }, this.dev.wte, this.dev.wpe, this.position, this.keep, x], count: 1 },
      { compiled: this.programs.attn, args: [x, ...l.attn, this.keep, this.dev.kc[0].narrow(0, 0, L), this.dev.vc[0].narrow(0, 0, L)], count: this.config.nLayer },
      { compiled: this.programs.mlp, args: [x, ...l.mlp, this.keep], count: this.config.nLayer },
      { compiled: this.programs.head, args: [x, this.dev.lnfW, this.dev.lnfB, ...this.dev.headW, { data: new Float32Array(V), shape: [1, V] }, { data: new Int32Array(1), shape: [1, 1] }], count: 1 },
    ];
  }

  /** Greedy decoding: the prompt, then `maxNew` tokens, each the argmax of the last logits. */
  generate(prompt: readonly number[], maxNew: number, onToken?: (token: number, logits: Float32Array) => void): number[] {
    const out: number[] = [];
    let r = this.step(prompt);
    for (let i = 0; i < maxNew; i++) {
      out.push(r.next);
      onToken?.(r.next, r.logits);
      if (i + 1 < maxNew) r = this.step([r.next]);
    }
    return out;
  }

  /** Forget the cached tokens (the caches are overwritten from position 0). */
  reset(): void { this.position = 0; }

  /** Closes the worker (without `dist`), or frees this model's tensors on the DistributedWorker's (which its owner closes). */
  close(): void {
    if (!this.dist) { this.worker.close(); return; }
    if (this.dist.closed) return;
    const d = this.dev;
    for (const t of new Set([d.wte, ...d.headW, d.wpe, d.lnfW, d.lnfB, d.x, ...d.kc, ...d.vc, ...d.layers.flatMap((l) => [...l.attn, ...l.mlp])])) this.worker.freeTensor(t);
    if (this.logitShards) this.dist.free(this.logitShards);
  }
}

/** Each program's kernel and sample arguments (shapes only) for this model shape (one rank's of `tp`). */
function programSamples(c: GPT2Config, tp = 1, vocab = c.vocabSize, precision: Precision = {}) {
  const k = kernels(c, tp, vocab, precision);
  const { nEmbd: D, nPositions: P } = c;
  const V = vocab;
  const DL = D / tp, FF = (4 * D) / tp;
  const f = (shape: number[]) => zeros(shape);
  const bf16 = precision.dtype === "bf16", q = precision.quant;
  const wd = bf16 ? "bfloat16" : "float32";
  /** Sample arguments of a [K, N] weight: one tensor, or (quant) the [N, K] packed weight and its scales. */
  const wt = (kk: number, n: number) => (q ? [zeros([n, q.bits === 4 ? kk / 2 : kk], q.bits === 4 ? "uint8" : "int8"), zeros([n, kk / q.groupSize])] : [zeros([kk, n], wd)]);
  type Sample = [{ compile(...a: unknown[]): CompiledProgram; compileAsync(...a: unknown[]): Promise<CompiledProgram> }, unknown[]];
  const samples: Record<keyof Programs, Sample> = {
    embed: [k.embed, [zeros([1], "int32"), f([1, 1]), zeros([V, D], wd), zeros([P, D], wd), 0, 1, f([1, D])]],
    attn: [k.attn, [f([1, D]), f([1, D]), f([1, D]), ...wt(D, 3 * DL), f([1, 3 * DL]), ...wt(DL, D), f([1, D]), 1, zeros([2, DL], wd), zeros([2, DL], wd)]],
    mlp: [k.mlp, [f([1, D]), f([1, D]), f([1, D]), ...wt(D, FF), f([1, FF]), ...wt(FF, D), f([1, D]), 1]],
    head: [k.head, [f([1, D]), f([1, D]), f([1, D]), ...(q ? [zeros([V, q.bits === 4 ? D / 2 : D], q.bits === 4 ? "uint8" : "int8"), zeros([V, D / q.groupSize])] : [zeros([V, D], wd)]), f([1, V]), zeros([1, 1], "int32")]],
  };
  return samples;
}

/** Compiles the programs for this model shape (one rank's of `tp`) from sample arguments (shapes only). */
export function compilePrograms(c: GPT2Config, cfg: RunConfig, tp = 1, vocab = c.vocabSize, precision: Precision = {}): Programs {
  const s = programSamples(c, tp, vocab, precision);
  // (the jit's disk cache: a later process loads them without parsing or compiling)
  const build = ([kern, args]: (typeof s)[keyof Programs]) => kern.compile(...args, cfg);
  return { embed: build(s.embed), attn: build(s.attn), mlp: build(s.mlp), head: build(s.head) };
}

/** Called as each program is built (compileProgramsAsync): how many are done of how many, and which. */
export type CompileProgress = (done: number, total: number, name: keyof Programs) => void;

/** compilePrograms with the C++ compiles of the four programs running at the same time, off the event loop. */
export async function compileProgramsAsync(c: GPT2Config, cfg: RunConfig, tp = 1, vocab = c.vocabSize, precision: Precision = {},
  onCompiled?: CompileProgress): Promise<Programs> {
  const s = programSamples(c, tp, vocab, precision);
  let done = 0;
  const build = async ([kern, args]: (typeof s)[keyof Programs], name: keyof Programs) => {
    const p = await kern.compileAsync(...args, cfg);
    onCompiled?.(++done, Object.keys(s).length, name);
    return p;
  };
  const [embed, attn, mlp, head] = await Promise.all([build(s.embed, "embed"), build(s.attn, "attn"), build(s.mlp, "mlp"), build(s.head, "head")]);
  return { embed, attn, mlp, head };
}

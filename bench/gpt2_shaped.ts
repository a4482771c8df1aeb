// Programs shaped like a GPT-2 decoder's (issue 20), for the launch and compile benchmarks
// (bench/launch.ts, bench/compile_child.ts) until the model example stands on its own: an
// embedding lookup, a decoder layer (LayerNorm on tensors, a fused QKV matmul + bias, the new
// token's K/V written into a KV cache, per-head attention at tile level over the cache with an
// additive mask, the output projection + bias + residual, LayerNorm, matmul + bias + tanh GELU,
// the second projection + bias + residual), the final LayerNorm, the tied logits matmul
// (bTrans over the embedding table) and rowArgmax. Written the way a user would; the
// dimensions come from the factory so one source serves GPT-2 small (compile times) and a
// tiny model (launch overhead, where host cost dominates).
import { pl } from "tspto";

export interface Gpt2Dims {
  /** model width, heads, MLP width, KV-cache length (positions), vocabulary, query rows per layer call */
  readonly D: number; readonly H: number; readonly F: number; readonly C: number; readonly V: number; readonly S: number;
}

/** GPT-2 small (124M): the cold-compile benchmark's programs. */
export const GPT2_SMALL: Gpt2Dims = { D: 768, H: 12, F: 3072, C: 1024, V: 50257, S: 1 };
/** A tiny model of the same shape: every kernel is small, so a launch's host cost dominates. */
export const GPT2_TINY: Gpt2Dims = { D: 32, H: 2, F: 128, C: 16, V: 64, S: 1 };

export function gpt2Programs(dims: Gpt2Dims) {
  const D = dims.D, H = dims.H, F = dims.F, C = dims.C, V = dims.V, S = dims.S;
  const HD = D / H, D3 = 3 * D;
  const INV_D = 1 / D, EPS = 1e-5, SCALE = 1 / Math.sqrt(HD), GELU_C = Math.sqrt(2 / Math.PI);
  // the dimensions are the factory's locals: kernels see them through the jit's scope option
  const opts = { scope: { D, H, F, C, S, HD, D3, INV_D, EPS, SCALE, GELU_C } };

  /** x = wte[token] + wpe[pos] */
  const embed = pl.jit(function embed(wte: pl.Tensor, wpe: pl.Tensor, token: pl.Scalar<pl.INT64>, pos: pl.Scalar<pl.INT64>, x: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(wte, [token, 0], [1, D]);
      const p = pl.load(wpe, [pos, 0], [1, D]);
      pl.store(pl.add(t, p), [0, 0], x);
    });
    return x;
  }, opts);

  /** One decoder layer for S new rows at positions pos..pos+S-1: 16 tensors, 5 launch buffers, 8 scopes. */
  const layer = pl.jit(function layer(x: pl.Tensor, ln1g: pl.Tensor, ln1b: pl.Tensor, wqkv: pl.Tensor, bqkv: pl.Tensor, wo: pl.Tensor, bo: pl.Tensor,
    ln2g: pl.Tensor, ln2b: pl.Tensor, wfc: pl.Tensor, bfc: pl.Tensor, wpr: pl.Tensor, bpr: pl.Tensor,
    kc: pl.InOut<pl.Tensor>, vc: pl.InOut<pl.Tensor>, mask: pl.Tensor, pos: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor>) {
    const xn = pl.createTensor([S, D], pl.FP32);
    const qkv = pl.createTensor([S, D3], pl.FP32);
    const att = pl.createTensor([S, D], pl.FP32);
    const h = pl.createTensor([S, D], pl.FP32);
    const fc = pl.createTensor([S, F], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {   // LayerNorm 1
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const centered = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(centered, centered)), INV_D), EPS));
      pl.assign(xn, pl.add(pl.mul(pl.rowExpandMul(centered, rstd), ln1g), ln1b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // fused QKV projection
      pl.assign(qkv, pl.add(pl.matmul(xn, wqkv), bqkv));
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // the new rows' keys and values into the cache
      pl.store(pl.load(qkv, [0, D], [S, D]), [pos, 0], kc);
      pl.store(pl.load(qkv, [0, 2 * D], [S, D]), [pos, 0], vc);
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // attention, one head at a time, over the whole cache (masked)
      for (const hh of pl.range(0, H)) {
        const q = pl.load(qkv, [0, hh * HD], [S, HD]);
        const k = pl.load(kc, [0, hh * HD], [C, HD]);
        const v = pl.load(vc, [0, hh * HD], [C, HD]);
        const m = pl.load(mask, [0, 0], [S, C]);
        const s = pl.add(pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE), m);
        const tmp = pl.createTile([S, C], pl.FP32);
        const e = pl.rowExpandExpdif(s, pl.rowMax(s, tmp));
        const p = pl.rowExpandDiv(e, pl.rowSum(e, tmp));
        pl.store(pl.matmul(p, v), [0, hh * HD], att);
      }
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // output projection + bias + residual
      pl.assign(h, pl.add(pl.add(pl.matmul(att, wo), bo), x));
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // LayerNorm 2
      const mean = pl.mul(pl.rowSum(h), INV_D);
      const centered = pl.rowExpandSub(h, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(centered, centered)), INV_D), EPS));
      pl.assign(xn, pl.add(pl.mul(pl.rowExpandMul(centered, rstd), ln2g), ln2b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // MLP up: matmul + bias, GELU (tanh)
      const u = pl.add(pl.matmul(xn, wfc), bfc);
      const inner = pl.mul(pl.add(u, pl.mul(pl.mul(pl.mul(u, u), u), 0.044715)), GELU_C);
      pl.assign(fc, pl.mul(pl.mul(u, 0.5), pl.add(pl.tanh(inner), 1.0)));
    });
    pl.at(pl.Level.CORE_GROUP, () => {   // MLP down + bias + residual
      pl.assign(out, pl.add(pl.add(pl.matmul(fc, wpr), bpr), h));
    });
    return out;
  }, opts);

  /** The final LayerNorm. */
  const finalNorm = pl.jit(function finalNorm(x: pl.Tensor, g: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const centered = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(centered, centered)), INV_D), EPS));
      pl.assign(y, pl.add(pl.mul(pl.rowExpandMul(centered, rstd), g), b));
    });
    return y;
  }, opts);

  /** Logits with the embedding table tied: xn · wteᵀ. */
  const logits = pl.jit(function logits(xn: pl.Tensor, wte: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(xn, wte, { bTrans: true })); });
    return out;
  }, opts);

  /** The greedy next token. */
  const argmax = pl.jit(function argmax(lg: pl.Tensor, idx: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(idx, pl.rowArgmax(lg)); });
    return idx;
  }, opts);

  /** The final norm and the logits in one program (two scopes, one launch buffer). */
  const head = pl.jit(function head(x: pl.Tensor, g: pl.Tensor, b: pl.Tensor, wte: pl.Tensor, out: pl.Out<pl.Tensor>) {
    const xn = pl.createTensor([S, D], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const centered = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(centered, centered)), INV_D), EPS));
      pl.assign(xn, pl.add(pl.mul(pl.rowExpandMul(centered, rstd), g), b));
    });
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(xn, wte, { bTrans: true })); });
    return out;
  }, opts);

  return { dims: { D, H, F, C, V, S, HD, D3 }, embed, layer, finalNorm, logits, argmax, head };
}

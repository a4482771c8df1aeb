// The demo's kernels (examples/web): annotated with static shapes, so the tspto build plugin
// precompiles each to IR and the page ships no TypeScript compiler.
import { pl } from "tspto";

export const R = 16, C = 64;                 // softmax rows x columns
export const M = 32, K = 48, N = 64;         // linear: [M, K] x [K, N] + bias, relu
export const S = 8, D = 16, F = 32;          // transformer block: sequence, width, FFN width
const INV_D = 0.0625;                        // 1 / D
const EPS = 1e-5;
const SCALE = 0.25;                          // 1 / sqrt(D)
const GELU_C = 0.7978845608028654;           // sqrt(2 / pi)

export const softmax = pl.jit(function softmax(x: pl.Tensor<[16, 64], pl.FP32>, out: pl.Out<pl.Tensor<[16, 64], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.sub(x, pl.rowMax(x)));
    pl.assign(out, pl.div(e, pl.rowSum(e)));
  });
});

export const linearRelu = pl.jit(function linearRelu(a: pl.Tensor<[32, 48], pl.FP32>, b: pl.Tensor<[48, 64], pl.FP32>,
  bias: pl.Tensor<[1, 64], pl.FP32>, out: pl.Out<pl.Tensor<[32, 64], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.relu(pl.add(pl.matmul(a, b), bias))); });
});

const layerNorm = pl.jit.inline(function layerNorm(x: pl.AnyTile, gamma: pl.AnyTile, beta: pl.AnyTile) {
  const tmp = pl.createTile([S, D], pl.FP32);
  const mean = pl.mul(pl.rowSum(x, tmp), INV_D);
  const centered = pl.rowExpandSub(x, mean);
  const variance = pl.mul(pl.rowSum(pl.mul(centered, centered), tmp), INV_D);
  const normed = pl.rowExpandMul(centered, pl.rsqrt(pl.add(variance, EPS)));
  return pl.colExpandAdd(pl.colExpandMul(normed, gamma), beta);
});

const gelu = pl.jit.inline(function gelu(x: pl.AnyTile) {
  const inner = pl.mul(pl.add(x, pl.mul(pl.mul(pl.mul(x, x), x), 0.044715)), GELU_C);
  return pl.mul(pl.mul(x, 0.5), pl.add(pl.tanh(inner), 1.0));
});

const attention = pl.jit.incore(function attention(x: pl.Tensor, g1: pl.Tensor, b1: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor,
  wv: pl.Tensor, wo: pl.Tensor, h: pl.Out<pl.Tensor>) {
  const tx = pl.load(x, [0, 0], [S, D]);
  const xn = layerNorm(tx, pl.load(g1, [0, 0], [1, D]), pl.load(b1, [0, 0], [1, D]));
  const q = pl.matmul(xn, pl.load(wq, [0, 0], [D, D]));
  const k = pl.matmul(xn, pl.load(wk, [0, 0], [D, D]));
  const v = pl.matmul(xn, pl.load(wv, [0, 0], [D, D]));
  const scores = pl.mul(pl.matmul(q, pl.transpose(k, 0, 1)), SCALE);
  const tmp = pl.createTile([S, S], pl.FP32);
  const e = pl.rowExpandExpdif(scores, pl.rowMax(scores, tmp));
  const probs = pl.rowExpandDiv(e, pl.rowSum(e, tmp));
  pl.store(pl.add(tx, pl.matmul(pl.matmul(probs, v), pl.load(wo, [0, 0], [D, D]))), [0, 0], h);
  return h;
});

const ffn = pl.jit.incore(function ffn(h: pl.Tensor, g2: pl.Tensor, b2: pl.Tensor, w1: pl.Tensor, c1: pl.Tensor, w2: pl.Tensor,
  c2: pl.Tensor, out: pl.Out<pl.Tensor>) {
  const th = pl.load(h, [0, 0], [S, D]);
  const hn = layerNorm(th, pl.load(g2, [0, 0], [1, D]), pl.load(b2, [0, 0], [1, D]));
  const up = gelu(pl.matmulBias(hn, pl.load(w1, [0, 0], [D, F]), pl.load(c1, [0, 0], [1, F])));
  pl.store(pl.add(th, pl.matmulBias(up, pl.load(w2, [0, 0], [F, D]), pl.load(c2, [0, 0], [1, D]))), [0, 0], out);
  return out;
});

export const transformerBlock = pl.jit(function transformerBlock(x: pl.Tensor<[8, 16], pl.FP32>, g1: pl.Tensor<[1, 16], pl.FP32>,
  b1: pl.Tensor<[1, 16], pl.FP32>, wq: pl.Tensor<[16, 16], pl.FP32>, wk: pl.Tensor<[16, 16], pl.FP32>, wv: pl.Tensor<[16, 16], pl.FP32>,
  wo: pl.Tensor<[16, 16], pl.FP32>, g2: pl.Tensor<[1, 16], pl.FP32>, b2: pl.Tensor<[1, 16], pl.FP32>, w1: pl.Tensor<[16, 32], pl.FP32>,
  c1: pl.Tensor<[1, 32], pl.FP32>, w2: pl.Tensor<[32, 16], pl.FP32>, c2: pl.Tensor<[1, 16], pl.FP32>, out: pl.Out<pl.Tensor<[8, 16], pl.FP32>>) {
  let h = pl.createTensor([S, D], pl.FP32);
  h = attention(x, g1, b1, wq, wk, wv, wo, h);
  out = ffn(h, g2, b2, w1, c1, w2, c2, out);
  return out;
});

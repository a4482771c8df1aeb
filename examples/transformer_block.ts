// A pre-LayerNorm transformer block, written as a user would (one head, causal mask):
//   h   = x + Wo · softmax(mask(q kᵀ / √d)) v        q, k, v = LN1(x) · Wq, Wk, Wv
//   out = h + W2 · GELU(W1 · LN2(h) + c1) + c2      GELU with tanh
// Layer norm and GELU are pl.jit.inline helpers spliced into two pl.jit.incore kernels; kᵀ is
// pl.transpose; the causal mask is a bool tile from pl.cmp and pl.sel puts -1e30 where a
// position may not attend; softmax is rowMax -> rowExpandExpdif (exp(s - max)) -> rowSum ->
// rowExpandDiv; the FFN uses matmulBias; the entry chains the kernels through a
// pl.createTensor buffer and rebinds its Out parameter PyPTO-style (`out = ffn(h, ..., out)`).
//
//   npx tsx examples/transformer_block.ts
import { pl, RunConfig, randn, tensor, zeros, type HostTensor } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const S = 32, D = 64, F = 128;     // sequence, model width, FFN width
const EPS = 1e-5;
const INV_D = 0.015625;             // 1 / D
const SCALE = 0.125;                // 1 / sqrt(D)
const GELU_C = 0.7978845608028654;  // sqrt(2 / pi)

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
  wv: pl.Tensor, wo: pl.Tensor, mask: pl.Tensor, h: pl.Out<pl.Tensor>) {
  const tx = pl.load(x, [0, 0], [S, D]);
  const xn = layerNorm(tx, pl.load(g1, [0, 0], [1, D]), pl.load(b1, [0, 0], [1, D]));
  const q = pl.matmul(xn, pl.load(wq, [0, 0], [D, D]));
  const k = pl.matmul(xn, pl.load(wk, [0, 0], [D, D]));
  const v = pl.matmul(xn, pl.load(wv, [0, 0], [D, D]));
  const scores = pl.mul(pl.matmul(q, pl.transpose(k, 0, 1)), SCALE);
  const visible = pl.cmp(pl.load(mask, [0, 0], [S, S]), 0, "ne");
  const masked = pl.sel(visible, scores, -1e30);
  const tmp = pl.createTile([S, S], pl.FP32);
  const e = pl.rowExpandExpdif(masked, pl.rowMax(masked, tmp));
  const probs = pl.rowExpandDiv(e, pl.rowSum(e, tmp));
  const attn = pl.matmul(probs, v);
  pl.store(pl.add(tx, pl.matmul(attn, pl.load(wo, [0, 0], [D, D]))), [0, 0], h);
  return h;
});

const ffn = pl.jit.incore(function ffn(h: pl.Tensor, g2: pl.Tensor, b2: pl.Tensor, w1: pl.Tensor, c1: pl.Tensor, w2: pl.Tensor,
  c2: pl.Tensor, out: pl.Out<pl.Tensor>) {
  const th = pl.load(h, [0, 0], [S, D]);
  const hn = layerNorm(th, pl.load(g2, [0, 0], [1, D]), pl.load(b2, [0, 0], [1, D]));
  const up = gelu(pl.matmulBias(hn, pl.load(w1, [0, 0], [D, F]), pl.load(c1, [0, 0], [1, F])));
  const down = pl.matmulBias(up, pl.load(w2, [0, 0], [F, D]), pl.load(c2, [0, 0], [1, D]));
  pl.store(pl.add(th, down), [0, 0], out);
  return out;
});

const transformerBlock = pl.jit(function transformerBlock(x: pl.Tensor, g1: pl.Tensor, b1: pl.Tensor, wq: pl.Tensor, wk: pl.Tensor,
  wv: pl.Tensor, wo: pl.Tensor, mask: pl.Tensor, g2: pl.Tensor, b2: pl.Tensor, w1: pl.Tensor, c1: pl.Tensor, w2: pl.Tensor,
  c2: pl.Tensor, out: pl.Out<pl.Tensor>) {
  let h = pl.createTensor([S, D], pl.FP32);
  h = attention(x, g1, b1, wq, wk, wv, wo, mask, h);
  out = ffn(h, g2, b2, w1, c1, w2, c2, out);
  return out;
});

// ------------------------------------------------------------------ independent reference (float64)
type M = { v: number[]; r: number; c: number };
const mat = (t: HostTensor): M => ({ v: t.toArray(), r: t.shape[0], c: t.shape[1] });
const mm = (a: M, b: M): M => {
  const v = new Array<number>(a.r * b.c).fill(0);
  for (let i = 0; i < a.r; i++) for (let k = 0; k < a.c; k++) for (let j = 0; j < b.c; j++) v[i * b.c + j] += a.v[i * a.c + k] * b.v[k * b.c + j];
  return { v, r: a.r, c: b.c };
};
const map = (a: M, f: (x: number, i: number, j: number) => number): M => ({ ...a, v: a.v.map((x, k) => f(x, Math.floor(k / a.c), k % a.c)) });
const rows = (a: M) => Array.from({ length: a.r }, (_, i) => a.v.slice(i * a.c, (i + 1) * a.c));
function lnRef(x: M, g: number[], b: number[]): M {
  const stats = rows(x).map((row) => {
    const mean = row.reduce((s, v) => s + v, 0) / x.c;
    return { mean, inv: 1 / Math.sqrt(row.reduce((s, v) => s + (v - mean) ** 2, 0) / x.c + EPS) };
  });
  return map(x, (v, i, j) => (v - stats[i].mean) * stats[i].inv * g[j] + b[j]);
}
export function transformerRef(p: Record<string, HostTensor>): number[] {
  const x = mat(p.x);
  const xn = lnRef(x, p.g1.toArray(), p.b1.toArray());
  const q = mm(xn, mat(p.wq)), k = mm(xn, mat(p.wk)), v = mm(xn, mat(p.wv));
  const kt: M = { v: Array.from({ length: D * S }, (_, n) => k.v[(n % S) * D + Math.floor(n / S)]), r: D, c: S };
  const mask = p.mask.toArray();
  const scores = map(mm(q, kt), (s, i, j) => (mask[i * S + j] !== 0 ? s * SCALE : -Infinity));
  const probs = rows(scores).flatMap((row) => { const mx = Math.max(...row); const e = row.map((s) => Math.exp(s - mx)); const z = e.reduce((a, b) => a + b, 0); return e.map((y) => y / z); });
  const h = map(mm(mm({ v: probs, r: S, c: S }, v), mat(p.wo)), (o, i, j) => o + x.v[i * D + j]);
  const hn = lnRef(h, p.g2.toArray(), p.b2.toArray());
  const c1 = p.c1.toArray(), c2 = p.c2.toArray();
  const up = map(mm(hn, mat(p.w1)), (y, _i, j) => { const z = y + c1[j]; return 0.5 * z * (1 + Math.tanh(GELU_C * (z + 0.044715 * z ** 3))); });
  return map(mm(up, mat(p.w2)), (y, i, j) => h.v[i * D + j] + y + c2[j]).v;
}

export function inputs(): Record<string, HostTensor> {
  const w = (shape: number[], seed: number, scale: number) => tensor(randn(shape, { seed }).toArray().map((v) => v * scale), { shape });
  return {
    x: randn([S, D], { seed: 1 }),
    g1: w([1, D], 2, 0.1).add(1), b1: w([1, D], 3, 0.1),
    wq: w([D, D], 4, 0.125), wk: w([D, D], 5, 0.125), wv: w([D, D], 6, 0.125), wo: w([D, D], 7, 0.125),
    mask: tensor(Array.from({ length: S * S }, (_, n) => (n % S <= Math.floor(n / S) ? 1 : 0)), { shape: [S, S], dtype: "int32" }), // causal
    g2: w([1, D], 8, 0.1).add(1), b2: w([1, D], 9, 0.1),
    w1: w([D, F], 10, 0.125), c1: w([1, F], 11, 0.1), w2: w([F, D], 12, 0.09), c2: w([1, D], 13, 0.1),
  };
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`transformer_block on ${platform}`);
  const p = inputs();
  const out = zeros([S, D]);
  transformerBlock(p.x, p.g1, p.b1, p.wq, p.wk, p.wv, p.wo, p.mask, p.g2, p.b2, p.w1, p.c1, p.w2, p.c2, out, new RunConfig({ platform }));
  check("transformer block (LN -> causal attention -> residual -> LN -> GELU FFN -> residual)", out, ref(transformerRef(p), [S, D]), 1e-4);
}
runIfMain(import.meta.url, main);

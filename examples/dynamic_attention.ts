// Attention over a dynamic sequence length: q, k, v are [S, 32] with S a name in the
// annotation, so one compiled program serves every sequence length. The [S, S] scores and the
// per-row statistics live in launch-owned buffers whose shapes name the same dimension
// (`pl.createTensor(["S", "S"], pl.FP32)`). The matmuls contract over 32 (q @ kᵀ) and over the
// dynamic S (p @ v); the row max and row sum reduce along the dynamic S; all of them loop
// with run-time trip counts.
//
//   TSPTO_LOG=recompiles npx tsx examples/dynamic_attention.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const D = 32;
const SCALE = 0.17677669529663687; // 1 / sqrt(32)

const attention = pl.jit(function attention(q: pl.Tensor<["S", 32], pl.FP32>, k: pl.Tensor<["S", 32], pl.FP32>, v: pl.Tensor<["S", 32], pl.FP32>,
  out: pl.Out<pl.Tensor<["S", 32], pl.FP32>>) {
  const scores = pl.createTensor(["S", "S"], pl.FP32);
  const rowMax = pl.createTensor(["S", 1], pl.FP32);
  const rowSum = pl.createTensor(["S", 1], pl.FP32);
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(scores, pl.matmul(q, k, { bTrans: true }));
    pl.assign(rowMax, pl.rowMax(scores));
    pl.assign(scores, pl.exp(pl.mul(pl.sub(scores, rowMax), SCALE))); // softmax(SCALE · q kᵀ), stable
    pl.assign(rowSum, pl.rowSum(scores));
    pl.assign(scores, pl.div(scores, rowSum));
    pl.assign(out, pl.matmul(scores, v));
  });
  return out;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`dynamic_attention on ${platform}`);
  const cfg = new RunConfig({ platform });
  attention.clearCache();
  for (const s of [1, 45, 200]) {
    const q = randn([s, D], { seed: s }), k = randn([s, D], { seed: s + 1 }), v = randn([s, D], { seed: s + 2 }), out = zeros([s, D]);
    attention(q, k, v, out, cfg);
    const qd = q.toArray(), kd = k.toArray(), vd = v.toArray();
    const want: number[] = [];
    for (let i = 0; i < s; i++) {
      const logits = Array.from({ length: s }, (_, j) => { let t = 0; for (let c = 0; c < D; c++) t += qd[i * D + c] * kd[j * D + c]; return t * SCALE; });
      const m = Math.max(...logits);
      const e = logits.map((x) => Math.exp(x - m));
      const z = e.reduce((a, b) => a + b, 0);
      for (let c = 0; c < D; c++) { let t = 0; for (let j = 0; j < s; j++) t += (e[j] / z) * vd[j * D + c]; want.push(t); }
    }
    check(`S = ${s}: softmax(q kᵀ / √${D}) v`, out, ref(want, [s, D]), 1e-4);
  }
  if (attention.cacheSize !== 1) throw new Error(`dynamic_attention: expected one compiled program for three sequence lengths, got ${attention.cacheSize}`);
  say(`three sequence lengths, ${attention.cacheSize} compile`);
}
runIfMain(import.meta.url, main);

// A matmul with its epilogue on whole tensors: `relu(x @ w + b)` (a dense layer) and the scaled
// scores `q @ kᵀ / √d` of attention, each one pl.assign. TensorToTile tiles the matmul's output
// and finishes every output tile with the rest of the expression (bias, relu, scale) before its
// single store: no [M, N] intermediate. Shapes are not multiples of the tiles (partial tiles on
// M, N and K).
//
//   npx tsx examples/matmul_epilogue.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const M = 150, K = 200, N = 90, D = 40, SCALE = 1 / Math.sqrt(40);

const dense = pl.jit(function dense(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.relu(pl.add(pl.matmul(x, w), b)));  // b is [1, N]: broadcast down the rows
  });
  return y;
});

const scores = pl.jit(function scores(q: pl.Tensor, k: pl.Tensor, s: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(s, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE));  // kᵀ without building it
  });
  return s;
});

/** a [rows, inner] @ b [inner, cols] (b given as [cols, inner] when bT) in double precision. */
function mm(a: number[], b: number[], rows: number, inner: number, cols: number, bT = false): number[] {
  const out: number[] = [];
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) {
    let t = 0;
    for (let k = 0; k < inner; k++) t += a[i * inner + k] * (bT ? b[j * inner + k] : b[k * cols + j]);
    out.push(t);
  }
  return out;
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`matmul epilogues on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([M, K], { seed: 31 }), w = randn([K, N], { seed: 32 }), b = randn([1, N], { seed: 33 }), y = zeros([M, N]);
  dense(x, w, b, y, cfg);
  const bs = b.toArray();
  check("dense: relu(x @ w + b)", y, ref(mm(x.toArray(), w.toArray(), M, K, N).map((v, i) => Math.max(0, v + bs[i % N])), [M, N]), 1e-4);

  const q = randn([M, D], { seed: 34 }), k = randn([M, D], { seed: 35 }), s = zeros([M, M]);
  scores(q, k, s, cfg);
  check("scores: q @ kᵀ / √d", s, ref(mm(q.toArray(), k.toArray(), M, D, M, true).map((v) => v * SCALE), [M, M]), 1e-4);
}
runIfMain(import.meta.url, main);

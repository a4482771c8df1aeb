// Softmax, LayerNorm and RMSNorm written on whole tensors: the row reductions stand inside the
// expressions (with locals), no tiles, no scratch arguments. TensorToTile tiles whole rows and
// computes each reduction once per tile; FuseRows then runs every row band as the hand-written
// tile kernels of examples/softmax.ts and examples/normalization.ts do (the same bits), and the
// row loop is split into one band per core. 300 rows: not a multiple of the row tile.
//
//   npx tsx examples/tensor_norms.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const ROWS = 300, COLS = 512, INV = 1 / COLS, EPS = 1e-5;

const softmax = pl.jit(function softmax(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(x, pl.rowMax(x)));  // exp(x - max of its row)
    pl.assign(y, pl.rowExpandDiv(e, pl.rowSum(e)));       // e computed once, summed, divided
  });
  return y;
});

const layerNorm = pl.jit(function layerNorm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const mean = pl.mul(pl.rowSum(x), INV);                                  // [ROWS, 1]
    const centered = pl.rowExpandSub(x, mean);
    const std = pl.sqrt(pl.add(pl.mul(pl.rowSum(pl.mul(centered, centered)), INV), EPS));
    // gamma and beta are [1, COLS]: broadcast down the rows
    pl.assign(y, pl.add(pl.mul(pl.rowExpandDiv(centered, std), gamma), beta));
  });
  return y;
});

const rmsNorm = pl.jit(function rmsNorm(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.mul(pl.mul(x, pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(x, x)), INV), EPS))), gamma));
  });
  return y;
});

/** Per row: fn(row) -> the output row (double precision). */
function rowsRef(x: number[], fn: (row: number[]) => number[]): number[] {
  const out: number[] = [];
  for (let r = 0; r < ROWS; r++) out.push(...fn(x.slice(r * COLS, (r + 1) * COLS)));
  return out;
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`softmax, LayerNorm and RMSNorm on whole tensors on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([ROWS, COLS], { seed: 21 }), g = randn([1, COLS], { seed: 22 }), b = randn([1, COLS], { seed: 23 });
  const xs = x.toArray(), gs = g.toArray(), bs = b.toArray();

  const sm = zeros([ROWS, COLS]);
  softmax(x, sm, cfg);
  check("softmax over each row", sm, ref(rowsRef(xs, (row) => {
    const m = Math.max(...row), e = row.map((v) => Math.exp(v - m)), s = e.reduce((p, q) => p + q, 0);
    return e.map((v) => v / s);
  }), [ROWS, COLS]), 1e-6);

  const ln = zeros([ROWS, COLS]);
  layerNorm(x, g, b, ln, cfg);
  check("layerNorm (x - mean) / std * gamma + beta", ln, ref(rowsRef(xs, (row) => {
    const mean = row.reduce((p, q) => p + q, 0) / COLS, vr = row.reduce((p, q) => p + (q - mean) ** 2, 0) / COLS;
    return row.map((v, c) => ((v - mean) / Math.sqrt(vr + EPS)) * gs[c] + bs[c]);
  }), [ROWS, COLS]), 1e-4);

  const rms = zeros([ROWS, COLS]);
  rmsNorm(x, g, rms, cfg);
  check("rmsNorm x / sqrt(mean(x^2) + eps) * gamma", rms, ref(rowsRef(xs, (row) => {
    const ms = row.reduce((p, q) => p + q * q, 0) / COLS;
    return row.map((v, c) => (v / Math.sqrt(ms + EPS)) * gs[c]);
  }), [ROWS, COLS]), 1e-4);
}
runIfMain(import.meta.url, main);

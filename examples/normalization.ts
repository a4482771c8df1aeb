// Normalization layers (PyPTO examples/intermediate/03_normalization.py) on a 32x64 input:
//   rmsNorm   out = x / sqrt(mean(x^2) + eps) * gamma
//   layerNorm out = (x - mean) / sqrt(var + eps) * gamma + beta
// pl.rowSum reduces each row to [32, 1]; pl.reshape turns it into [1, 32] and back (PyPTO's
// layout workaround, kept to show reshape); pl.rowExpandSub/Div broadcast per-row values,
// pl.colExpandMul and pl.colExpand per-column ones (gamma, beta).
//
//   npx tsx examples/normalization.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const EPS = 1e-5;
const INV_HIDDEN = 0.015625; // 1 / 64

const rmsNorm = pl.jit(function rmsNorm(x: pl.Tensor, gamma: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 64]);
    const tileGamma = pl.load(gamma, [0, 0], [1, 64]);
    const squared = pl.mul(tileX, tileX);
    const tmp = pl.createTile([32, 64], pl.FP32, pl.Mem.Vec);
    const sumSq: pl.Tile<[32, 1], pl.FP32> = pl.rowSum(squared, tmp);
    // mean of squares, + eps, sqrt — on the [1, 32] view
    const meanSqT = pl.mul(pl.reshape(sumSq, [1, 32]), INV_HIDDEN);
    const rmsT = pl.sqrt(pl.add(meanSqT, EPS));
    const rms = pl.reshape(rmsT, [32, 1]);
    const normalized = pl.rowExpandDiv(tileX, rms);
    pl.store(pl.colExpandMul(normalized, tileGamma), [0, 0], output);
  });
  return output;
});

const layerNorm = pl.jit(function layerNorm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 64]);
    const tileGamma = pl.load(gamma, [0, 0], [1, 64]);
    const tileBeta = pl.load(beta, [0, 0], [1, 64]);
    const tmp = pl.createTile([32, 64], pl.FP32, pl.Mem.Vec);
    const mean = pl.mul(pl.rowSum(tileX, tmp), INV_HIDDEN);
    const centered = pl.rowExpandSub(tileX, mean);
    const variance = pl.mul(pl.rowSum(pl.mul(centered, centered), tmp), INV_HIDDEN);
    const std = pl.sqrt(pl.add(variance, EPS));
    const scaled = pl.colExpandMul(pl.rowExpandDiv(centered, std), tileGamma);
    const betaFull = pl.colExpand(scaled, tileBeta);
    pl.store(pl.add(scaled, betaFull), [0, 0], output);
  });
  return output;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`normalization on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([32, 64], { seed: 0 }), gamma = randn([1, 64], { seed: 1 }), beta = randn([1, 64], { seed: 2 });
  const xv = x.toArray(), g = gamma.toArray(), bt = beta.toArray();
  const out = zeros([32, 64]);
  rmsNorm(x, gamma, out, cfg);
  const rmsWant: number[] = [];
  for (let r = 0; r < 32; r++) {
    const row = xv.slice(r * 64, r * 64 + 64);
    const rms = Math.sqrt(row.reduce((s, v) => s + v * v, 0) / 64 + EPS);
    rmsWant.push(...row.map((v, c) => (v / rms) * g[c]));
  }
  check("rmsNorm", out, ref(rmsWant, [32, 64]), 1e-5);

  layerNorm(x, gamma, beta, out, cfg);
  const lnWant: number[] = [];
  for (let r = 0; r < 32; r++) {
    const row = xv.slice(r * 64, r * 64 + 64);
    const mean = row.reduce((s, v) => s + v, 0) / 64;
    const variance = row.reduce((s, v) => s + (v - mean) ** 2, 0) / 64;
    const std = Math.sqrt(variance + EPS);
    lnWant.push(...row.map((v, c) => ((v - mean) / std) * g[c] + bt[c]));
  }
  check("layerNorm", out, ref(lnWant, [32, 64]), 1e-5);
}
runIfMain(import.meta.url, main);

// Row-wise softmax (PyPTO examples/intermediate/02_softmax.py), numerically stable:
// out[i] = exp(a[i] - max(a[i])) / sum(exp(a[i] - max(a[i]))). Row reductions (pl.rowMax,
// pl.rowSum) take a scratch tile of the input's shape (pl.createTile) and give [64, 1]
// tiles; row broadcasts (pl.rowExpandSub, pl.rowExpandDiv) apply them to every column.
//
//   npx tsx examples/softmax.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const tileSoftmax = pl.jit(function tileSoftmax(a: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileA = pl.load(a, [0, 0], [64, 64]);
    // step 1: row max for numerical stability
    const maxTmp = pl.createTile([64, 64], pl.FP32, pl.Mem.Vec);
    const rowMax: pl.Tile<[64, 1], pl.FP32> = pl.rowMax(tileA, maxTmp);
    // steps 2-3: exp(x - max(x))
    const expShifted = pl.exp(pl.rowExpandSub(tileA, rowMax));
    // step 4: row sums of the exponentials
    const sumTmp = pl.createTile([64, 64], pl.FP32, pl.Mem.Vec);
    const rowSum: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(expShifted, sumTmp);
    // step 5: divide each row by its sum
    pl.store(pl.rowExpandDiv(expShifted, rowSum), [0, 0], output);
  });
  return output;
});

function softmaxRef(a: number[], m: number, n: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < m; r++) {
    const row = a.slice(r * n, (r + 1) * n);
    const mx = Math.max(...row);
    const e = row.map((v) => Math.exp(v - mx));
    const s = e.reduce((x, y) => x + y, 0);
    out.push(...e.map((v) => v / s));
  }
  return out;
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`softmax on ${platform}`);
  const a = randn([64, 64], { seed: 0 }), out = zeros([64, 64]);
  tileSoftmax(a, out, new RunConfig({ platform }));
  check("tileSoftmax: softmax over each row", out, ref(softmaxRef(a.toArray(), 64, 64), [64, 64]), 1e-5);
}
runIfMain(import.meta.url, main);

// Valid shapes and fillpad (PyPTO examples/kernels/09_dyn_valid_shape.py): the caller passes
// the number of valid columns `vlen` as a scalar; pl.load(..., { validShape: [rows, vlen] })
// reads only that region of the tile (the rest is pad, which holds no value), and
// pl.fillpad(tile, "min") sets the pad to the dtype's lowest value: a fully valid tile whose
// row maximum equals that of the valid region (a rowMax of sTile itself reduces only the valid
// columns too). The kernel is specialized on vlen (one compiled program
// per value). Here: out = fillpad(x) * scale, and per-row maxima of the valid region.
//
//   npx tsx examples/dyn_valid_shape.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const Q_TILE = 64, BLOCK_COL = 64;
const FP32_LOWEST = -3.4028234663852886e38;

const dynValidShape = pl.jit(function dynValidShape(data: pl.Tensor, scale: number, vlen: number, output: pl.Out<pl.Tensor>, rowMax: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const sTile = pl.load(data, [0, 0], [Q_TILE, BLOCK_COL], { validShape: [Q_TILE, vlen], mem: pl.Mem.Vec });
    const sPadded = pl.fillpad(sTile, "min");
    pl.store(pl.mul(sPadded, scale), [0, 0], output);
    const tmp = pl.createTile([Q_TILE, BLOCK_COL], pl.FP32);
    pl.store(pl.rowMax(sPadded, tmp), [0, 0], rowMax);
  });
  return output;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`dyn_valid_shape on ${platform}`);
  const cfg = new RunConfig({ platform });
  const data = randn([Q_TILE, BLOCK_COL], { seed: 0 });
  const d = data.toArray();
  for (const vlen of [BLOCK_COL, 32, 5]) {
    const out = zeros([Q_TILE, BLOCK_COL]), mx = zeros([Q_TILE, 1]);
    dynValidShape(data, 0.5, vlen, out, mx, cfg);
    const want = d.map((v, i) => (i % BLOCK_COL < vlen ? v : FP32_LOWEST) * 0.5);
    check(`vlen=${vlen}: fillpad(min) * 0.5`, out, ref(want, [Q_TILE, BLOCK_COL]), 1e-5);
    const wantMax = Array.from({ length: Q_TILE }, (_, r) => Math.max(...d.slice(r * BLOCK_COL, r * BLOCK_COL + vlen)));
    check(`vlen=${vlen}: row maxima of the valid columns`, mx, ref(wantMax, [Q_TILE, 1]), 1e-5);
  }
}
runIfMain(import.meta.url, main);

// Dynamic batch: a dense layer out = relu(x @ w + b) whose batch dimension is a name in the
// annotation, "B". It compiles once and serves every batch size: the cache key holds "B",
// not its value, and the extent is passed at launch (`TSPTO_LOG=recompiles` shows one compile).
// Inside, the tensor-level matmul and relu loop over the batch with a run-time trip count;
// the last rows that do not fill a tile are done row by row.
//
//   TSPTO_LOG=recompiles npx tsx examples/dynamic_batch.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const IN = 64, OUT = 32;

const dense = pl.jit(function dense(x: pl.Tensor<["B", 64], pl.FP32>, w: pl.Tensor<[64, 32], pl.FP32>, b: pl.Tensor<[1, 32], pl.FP32>,
  out: pl.Out<pl.Tensor<["B", 32], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.matmulBias(x, w, b));
    pl.assign(out, pl.relu(out));
  });
  return out;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`dynamic_batch on ${platform}`);
  const cfg = new RunConfig({ platform });
  dense.clearCache();
  const w = randn([IN, OUT], { seed: 1 }), b = randn([1, OUT], { seed: 2 });
  const wd = w.toArray(), bd = b.toArray();
  for (const batch of [1, 37, 512]) {
    const x = randn([batch, IN], { seed: batch }), out = zeros([batch, OUT]);
    dense(x, w, b, out, cfg);
    const xd = x.toArray();
    const want = Array.from({ length: batch * OUT }, (_, i) => {
      const r = Math.floor(i / OUT), c = i % OUT;
      let s = 0;
      for (let k = 0; k < IN; k++) s += xd[r * IN + k] * wd[k * OUT + c];
      return Math.max(0, s + bd[c]);
    });
    check(`batch ${batch}: relu(x @ w + b)`, out, ref(want, [batch, OUT]), 1e-4);
  }
  if (dense.cacheSize !== 1) throw new Error(`dynamic_batch: expected one compiled program for three batch sizes, got ${dense.cacheSize}`);
  say(`three batch sizes, ${dense.cacheSize} compile`);
}
runIfMain(import.meta.url, main);

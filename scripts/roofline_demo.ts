// The roofline of a small attention-shaped program on all cores (for docs/roofline.png):
//   npx tsx scripts/roofline_demo.ts /tmp/roofline_demo && npx tspto inspect /tmp/roofline_demo --roofline
//   /usr/lib/chromium/chromium-headless-shell --no-sandbox --disable-gpu --hide-scrollbars \
//     --screenshot=docs/roofline.png --window-size=900,900 file:///tmp/roofline_demo/dfx_outputs/roofline.html
// Four kernels: the scores q·kᵀ and the weighted sum p·v (matmuls: compute-bound), the row
// softmax and the residual add (elementwise and row reductions: memory-bound).
import { ir, pl, benchmark, ChipWorker, RunConfig, randn, zeros } from "tspto";
const S = 512, D = 256;
const attention = pl.jit(function attention(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, scores: pl.Out<pl.Tensor>, probs: pl.Out<pl.Tensor>,
  ctx: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(scores, pl.mul(pl.matmul(q, k, { bTrans: true }), 0.0625)); });
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
    pl.assign(probs, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(ctx, pl.matmul(probs, v)); });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(ctx, q)); });
  return out;
});
const dir = process.argv[2];
const q = randn([S, D], { seed: 1 }), k = randn([S, D], { seed: 2 }), v = randn([S, D], { seed: 3 });
const args = [q, k, v, zeros([S, S]), zeros([S, S]), zeros([S, D]), zeros([S, D])];
const compiled = ir.compile(attention.lower(...args), { platform: "cpu", outputDir: dir });
const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
const stats = benchmark(compiled, args, { roofline: true, rounds: 50, worker: w });
console.log(stats.toString());
console.log(`${compiled.outputDir}/dfx_outputs/roofline.json`);
w.close();

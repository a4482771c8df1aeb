// Trace of a tiled program on all cores (for docs/swimlane.png):
//   npx tsx scripts/swimlane_demo.ts /tmp/tiled_demo && npx tspto inspect /tmp/tiled_demo --trace
import { ir, pl, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { readFileSync } from "node:fs";
const ROWS = 2048, COLS = 256, TR = 64;
const tiled = pl.jit(function tiled(a: pl.Tensor, b: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, ROWS, TR)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [TR, COLS]);
      pl.store(pl.exp(pl.mul(t, pl.load(b, [r, 0], [TR, COLS]))), [r, 0], mid);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [r, 0], [TR, COLS]);
      pl.store(pl.add(t, 1), [r, 0], out);
    });
  }
  return out;
});
const dir = process.argv[2];
const a = randn([ROWS, COLS], { seed: 1 }), b = randn([ROWS, COLS], { seed: 2 });
const compiled = ir.compile(tiled.lower(a, b, zeros([ROWS, COLS]), zeros([ROWS, COLS])), { platform: "cpu", outputDir: dir });
const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
for (let i = 0; i < 5; i++) w.run(compiled, a, b, zeros([ROWS, COLS]), zeros([ROWS, COLS]));
w.run(compiled, a, b, zeros([ROWS, COLS]), zeros([ROWS, COLS]), new RunConfig({ platform: "cpu", enableChipSwimlane: 1, enableDepGen: true, enablePmu: true, enableScopeStats: true }));
console.log(readFileSync(`${dir}/dfx_outputs/pmu.csv`, "utf8").split("\n").slice(0, 4).join("\n"));
console.log(readFileSync(`${dir}/dfx_outputs/scope_stats.jsonl`, "utf8").split("\n").slice(0, 3).join("\n"));
w.close();

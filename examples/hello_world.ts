// Hello world (PyPTO examples/beginner/01_hello_world.py): the simplest program, c = a + b
// on one 128x128 tile. pl.jit specializes on the arguments' shapes and dtypes, compiles and
// caches; pl.at(CORE_GROUP) is one on-chip scope (load tiles, compute, store back); pl.Out
// marks the output.
//
//   npx tsx examples/hello_world.ts          (TSPTO_PLATFORM=interp for the reference interpreter)
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const tileAdd = pl.jit(function tileAdd(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileA = pl.load(a, [0, 0], [128, 128]);
    const tileB = pl.load(b, [0, 0], [128, 128]);
    const tileC = pl.add(tileA, tileB);
    pl.store(tileC, [0, 0], c);
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`hello_world on ${platform}`);
  const a = randn([128, 128], { seed: 0 }), b = randn([128, 128], { seed: 1 });
  const c = zeros([128, 128]);
  tileAdd(a, b, c, new RunConfig({ platform }));
  const av = a.toArray(), bv = b.toArray();
  check("tileAdd: c = a + b", c, ref(av.map((x, i) => x + bv[i]), [128, 128]), 1e-5);
}
runIfMain(import.meta.url, main);

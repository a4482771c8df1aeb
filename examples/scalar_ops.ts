// Scalar operations (PyPTO examples/beginner/03_scalar_ops.py): a tile times a number,
// c = (a + b) * 2.0. Added here: a scalar *parameter* — alpha is specialized on its value at
// the call (a program compiled for one alpha refuses another), and an integer one used as a
// loop bound.
//
//   npx tsx examples/scalar_ops.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const fusedAddScale = pl.jit(function fusedAddScale(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileSum = pl.add(pl.load(a, [0, 0], [128, 128]), pl.load(b, [0, 0], [128, 128]));
    pl.store(pl.mul(tileSum, 2.0), [0, 0], c);
  });
  return c;
});

/** c = alpha * a + b over the first `rows` 32-row blocks (alpha, rows: scalar parameters). */
const axpy = pl.jit(function axpy(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>, alpha: number, blocks: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(blocks)) {
      const ta = pl.load(a, [i * 32, 0], [32, 64]);
      const tb = pl.load(b, [i * 32, 0], [32, 64]);
      pl.store(pl.add(pl.mul(ta, alpha), tb), [i * 32, 0], c);
    }
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`scalar_ops on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([128, 128], { seed: 1 }), b = randn([128, 128], { seed: 2 }), c = zeros([128, 128]);
  fusedAddScale(a, b, c, cfg);
  const av = a.toArray(), bv = b.toArray();
  check("fusedAddScale: c = (a + b) * 2", c, ref(av.map((x, i) => (x + bv[i]) * 2), [128, 128]), 1e-5);

  const x = randn([128, 64], { seed: 3 }), y = randn([128, 64], { seed: 4 });
  for (const [alpha, blocks] of [[0.5, 4], [-1.25, 3]]) {
    const z = zeros([128, 64]);
    axpy(x, y, z, alpha, blocks, cfg);
    const xv = x.toArray(), yv = y.toArray();
    check(`axpy alpha=${alpha} over ${blocks} blocks`, z, ref(xv.map((v, i) => (i < blocks * 32 * 64 ? alpha * v + yv[i] : 0)), [128, 64]), 1e-5);
  }
}
runIfMain(import.meta.url, main);

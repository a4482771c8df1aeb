// The vector DAG (PyPTO examples/models/02_vector_dag.py): out = (a+b+1)(a+b+2) + (a+b),
// once with tiles (one shared subexpression, fused into one loop by the code generator) and
// once at tensor level on a shape that is not a multiple of the tile (the compiler tiles it,
// with partial tiles at the edges).
//
//   npx tsx examples/vector_dag.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const tileDag = pl.jit(function tileDag(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(4)) {
      const s = pl.add(pl.load(a, [i * 32, 0], [32, 128]), pl.load(b, [i * 32, 0], [32, 128]));
      const c = pl.add(s, 1.0);
      const d = pl.add(s, 2.0);
      pl.store(pl.add(pl.mul(c, d), s), [i * 32, 0], out);
    }
  });
  return out;
});

const tensorDag = pl.jit(function tensorDag(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const s = pl.add(a, b);
    pl.assign(out, pl.add(pl.mul(pl.add(s, 1.0), pl.add(s, 2.0)), s));
  });
  return out;
});

const f = Math.fround;
const dag = (x: number, y: number) => { const s = f(x + y); return f(f(f(s + 1) * f(s + 2)) + s); };

export function main(platform: Platform = platformFromEnv()): void {
  say(`vector_dag on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([128, 128], { seed: 0 }), b = randn([128, 128], { seed: 1 }), out = zeros([128, 128]);
  tileDag(a, b, out, cfg);
  const av = a.toArray(), bv = b.toArray();
  check("tileDag: (a+b+1)(a+b+2)+(a+b)", out, ref(av.map((x, i) => dag(x, bv[i])), [128, 128]), 1e-5);
  const shape = [509, 700];
  const p = randn(shape, { seed: 2 }), q = randn(shape, { seed: 3 }), r = zeros(shape);
  tensorDag(p, q, r, cfg);
  const pv = p.toArray(), qv = q.toArray();
  check("tensorDag on [509, 700] (partial edge tiles)", r, ref(pv.map((x, i) => dag(x, qv[i])), shape), 1e-5);
}
runIfMain(import.meta.url, main);

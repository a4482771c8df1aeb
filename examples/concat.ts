// Concatenation (PyPTO examples/beginner/06_concat.py): c[:, :16] = a, c[:, 16:] = b with
// pl.concat along the last axis. A tile annotation states the result's type (checked).
//
//   npx tsx examples/concat.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const tileConcat32x32 = pl.jit(function tileConcat32x32(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileA = pl.load(a, [0, 0], [32, 16]);
    const tileB = pl.load(b, [0, 0], [32, 16]);
    const tileOut: pl.Tile<[32, 32], pl.FP32> = pl.concat(tileA, tileB);
    pl.store(tileOut, [0, 0], c);
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`concat on ${platform}`);
  const a = randn([32, 16], { seed: 0 }), b = randn([32, 16], { seed: 1 }), c = zeros([32, 32]);
  tileConcat32x32(a, b, c, new RunConfig({ platform }));
  const av = a.toArray(), bv = b.toArray();
  check("tileConcat32x32: c = [a | b]", c, ref(Array.from({ length: 32 * 32 }, (_, i) => {
    const r = Math.floor(i / 32), col = i % 32;
    return col < 16 ? av[r * 16 + col] : bv[r * 16 + col - 16];
  }), [32, 32]), 1e-5);
}
runIfMain(import.meta.url, main);

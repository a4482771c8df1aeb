// Element-wise ops (PyPTO examples/beginner/02_elementwise.py): add and multiply on 128x128
// and 64x64 tiles, several jit kernels in one file, and a tensor taller than one tile
// processed in chunks with a pl.range loop inside the scope (the shape stays the tile size,
// only the offset moves). Added here: the same sum written at tensor level,
// pl.assign(c, pl.add(a, b)), on a shape that is not a multiple of any tile — the compiler
// tiles it and gives the last tile along each axis a validShape (a partial tile).
//
//   npx tsx examples/elementwise.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const ROWS = 512, COLS = 128, TILE_ROWS = 128;

const tileAdd128 = pl.jit(function tileAdd128(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [128, 128]), pl.load(b, [0, 0], [128, 128])), [0, 0], c);
  });
  return c;
});
const tileMul128 = pl.jit(function tileMul128(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(a, [0, 0], [128, 128]), pl.load(b, [0, 0], [128, 128])), [0, 0], c);
  });
  return c;
});
const tileAdd64 = pl.jit(function tileAdd64(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64])), [0, 0], c);
  });
  return c;
});
const tileMul64 = pl.jit(function tileMul64(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(a, [0, 0], [64, 64]), pl.load(b, [0, 0], [64, 64])), [0, 0], c);
  });
  return c;
});

/** A tensor taller than one tile: four 128x128 chunks. */
const chunkedAdd = pl.jit(function chunkedAdd(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(ROWS / TILE_ROWS)) {
      const tileA = pl.load(a, [i * TILE_ROWS, 0], [TILE_ROWS, COLS]);
      const tileB = pl.load(b, [i * TILE_ROWS, 0], [TILE_ROWS, COLS]);
      pl.store(pl.add(tileA, tileB), [i * TILE_ROWS, 0], c);
    }
  });
  return c;
});

/** Tensor level: the compiler picks the tiles (partial ones at the edges). */
const tensorAdd = pl.jit(function tensorAdd(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(c, pl.add(a, b));
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`elementwise on ${platform}`);
  const cfg = new RunConfig({ platform });
  const cases = [
    { name: "tileAdd128", fn: tileAdd128, n: 128, op: (x: number, y: number) => x + y },
    { name: "tileMul128", fn: tileMul128, n: 128, op: (x: number, y: number) => x * y },
    { name: "tileAdd64", fn: tileAdd64, n: 64, op: (x: number, y: number) => x + y },
    { name: "tileMul64", fn: tileMul64, n: 64, op: (x: number, y: number) => x * y },
  ];
  for (const { name, fn, n, op } of cases) {
    const a = randn([n, n], { seed: 10 + n }), b = randn([n, n], { seed: 20 + n });
    const c = zeros([n, n]);
    fn(a, b, c, cfg);
    const av = a.toArray(), bv = b.toArray();
    check(name, c, ref(av.map((x, i) => op(x, bv[i])), [n, n]), 1e-5);
  }
  const a = randn([ROWS, COLS], { seed: 1 }), b = randn([ROWS, COLS], { seed: 2 });
  const c = zeros([ROWS, COLS]);
  chunkedAdd(a, b, c, cfg);
  const av = a.toArray(), bv = b.toArray();
  check(`chunkedAdd (${ROWS / TILE_ROWS} chunks of ${TILE_ROWS} rows)`, c, ref(av.map((x, i) => x + bv[i]), [ROWS, COLS]), 1e-5);

  const shape = [300, 1000]; // 300 rows: whole tiles of 60; 1000 columns fit one tile
  const x = randn(shape, { seed: 3 }), y = randn([300, 1000], { seed: 4 }), z = zeros(shape);
  tensorAdd(x, y, z, cfg);
  const xv = x.toArray(), yv = y.toArray();
  check("tensorAdd (tensor level, [300, 1000])", z, ref(xv.map((v, i) => v + yv[i]), shape), 1e-5);
  const odd = [1021, 300]; // 1021 is prime: whole tiles, then a partial last tile
  const p = randn(odd, { seed: 5 }), q = randn(odd, { seed: 6 }), r = zeros(odd);
  tensorAdd(p, q, r, cfg);
  const pv = p.toArray(), qv = q.toArray();
  check("tensorAdd (tensor level, [1021, 300], partial edge tile)", r, ref(pv.map((v, i) => v + qv[i]), odd), 1e-5);
}
runIfMain(import.meta.url, main);

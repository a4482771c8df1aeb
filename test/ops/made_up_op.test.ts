// "One op entry drives everything": a made-up elementwise op needs only a registry entry and
// one formula per target (test/ops/fixtures/made_up_op.ts); it then works at tile and tensor
// level, with a number on either side, on cpu and interp, and has a generated declaration and
// README row.
import { describe, expect, it } from "vitest";
import "./fixtures/made_up_op.js";
import { pl, RunConfig, randn, zeros, assertClose, tensor, type HostTensor } from "tspto";
import { generateLanguageOps, generateOpTable } from "../../src/tools/gen_ops.js";

const M = 20, N = 36;
const tileForm = pl.jit(function tileForm(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const y = pl.load(b, [0, 0], [M, N]);
    // @ts-expect-error squarePlus is registered by the fixture at run time, not declared in pl
    pl.store(pl.add(pl.squarePlus(x, 0.5), pl.squarePlus(x, y)), [0, 0], out);
  });
  return out;
});
const tensorForm = pl.jit(function tensorForm(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error registered by the fixture
    pl.assign(out, pl.squarePlus(a, -1.25));
  });
  return out;
});

const f = Math.fround;
describe("a made-up elementwise op", () => {
  for (const platform of ["cpu", "interp"]) {
    it(`runs at tile and tensor level (${platform})`, () => {
      const a = randn([M, N], { seed: 11 }), b = randn([M, N], { seed: 12 });
      const out = zeros([M, N]);
      tileForm(a, b, out, new RunConfig({ platform }));
      const A = a.data as Float32Array, B = b.data as Float32Array;
      const want = Float32Array.from(A, (x, i) => f(f(x * x + 0.5) + f(x * x + B[i])));
      assertClose(out, tensor(want, { shape: [M, N] }), { rtol: 0, atol: 0 });
      const big = randn([300, 70], { seed: 13 });
      const o2 = zeros([300, 70]);
      tensorForm(big, o2, new RunConfig({ platform }));
      const W = Float32Array.from(big.data as Float32Array, (x) => f(x * x - 1.25));
      assertClose(o2 as HostTensor, tensor(W, { shape: [300, 70] }), { rtol: 0, atol: 0 });
    });
  }
  it("gets a generated pl declaration and README row", () => {
    expect(generateLanguageOps()).toContain("export function squarePlus<T extends TileOrTensor>(a: T, b: Operand<T> | number): T;");
    expect(generateOpTable()).toContain("| `squarePlus(x, c)` | tile, tensor | x * x + c |");
  });
});

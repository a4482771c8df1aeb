// tile.transpose of a 2-D tile in scratch goes through the prelude's blocked tspto_transpose
// (one out-of-line copy per element type) instead of a loop specialized for its shape, which
// GCC vectorized into scatters: several times slower, and most of a bTrans matmul's compile
// time. Shapes that are not multiples of the 16 x 16 blocks, integer and bool tiles, a bTrans
// matmul next to them (its operand is read in place, no transpose) and a fused source (the
// loop path) against interp.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, tensor, zeros, assertClose } from "../../src/index.js";

const R = 37, C = 21;
const transposes = pl.jit(function transposes(a: pl.Tensor, i: pl.Tensor, m: pl.Tensor, k: pl.Tensor, oa: pl.Out<pl.Tensor>, oi: pl.Out<pl.Tensor>,
  om: pl.Out<pl.Tensor>, os: pl.Out<pl.Tensor>, of: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [R, C]);
    pl.store(pl.transpose(ta, 0, 1), [0, 0], oa);
    pl.store(pl.transpose(pl.load(i, [0, 0], [R, C]), 0, 1), [0, 0], oi);
    pl.store(pl.transpose(pl.cmp(pl.load(m, [0, 0], [R, C]), 0, "gt"), 0, 1), [0, 0], om);
    // q [R, C] times k [48, C] transposed (read in place by the matmul)
    pl.store(pl.matmul(ta, pl.load(k, [0, 0], [48, C]), { bTrans: true }), [0, 0], os);
    pl.store(pl.transpose(pl.add(ta, 1), 0, 1), [0, 0], of);
  });
  return oa;
});

describe("tile.transpose", () => {
  it("blocked transpose of 2-D tiles (float, int32, bool) equals interp, next to a bTrans matmul; a fused source too", () => {
    const make = () => [randn([R, C], { seed: 1 }), tensor(Array.from({ length: R * C }, (_, n) => n * 7 - 300), { shape: [R, C], dtype: "int32" }),
      randn([R, C], { seed: 2 }), randn([48, C], { seed: 3 }), zeros([C, R]), zeros([C, R], "int32"), zeros([C, R], "bool"), zeros([R, 48]), zeros([C, R])];
    const onCpu = make(), onInterp = make();
    const call = transposes as (...a: unknown[]) => unknown;
    call(...onCpu, new RunConfig({ platform: "cpu" }));
    call(...onInterp, new RunConfig({ platform: "interp" }));
    for (const k of [4, 5, 6, 8]) expect(onCpu[k].toArray(), `output ${k}`).toEqual(onInterp[k].toArray());
    assertClose(onCpu[7], onInterp[7], { rtol: 1e-5, atol: 1e-5 });
    const a = onCpu[0].toArray();
    expect(onCpu[4].toArray()).toEqual(Array.from({ length: R * C }, (_, n) => a[(n % R) * C + Math.floor(n / R)]));
    const src = readFileSync(join(transposes.compile(...onCpu).outputDir, "kernels", "program.cpp"), "utf8");
    // the float and the int32 tile (the bool one is a fused cmp, the last a fused add)
    expect(src.match(/tspto_transpose\(_o\d+, _x\d+, \d+, \d+\);/g)?.length ?? 0).toBe(2);
  });
});

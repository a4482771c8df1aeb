// Tensor-level ops on shapes that are not multiples of the tile: the last tile along an axis
// is a partial tile (validShape); pl.assemble and pl.slice windows at offsets; tensor casts.
import { describe, it, expect } from "vitest";
import { pl, RunConfig, randn, zeros, assertClose, tensor } from "tspto";
import { forEachStmt } from "../../src/ir/index.js";
import { tileExtent } from "../../src/passes/tensor_to_tile.js";

const add = pl.jit(function add(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});
const window = pl.jit(function window(a: pl.Tensor, out: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(out, pl.cast(pl.mul(pl.slice(a, [37, 50], [3, 7]), 2), pl.INT32, "floor"), [5, 1]);
  });
  return out;
});
const PLATFORMS = ["cpu", "interp"] as const;

describe("tensor-to-tile with partial edge tiles", () => {
  it("chooses whole tiles when a good divisor exists, else a partial last tile", () => {
    expect(tileExtent(1024, 64)).toBe(64);
    expect(tileExtent(96, 200)).toBe(96);
    expect(tileExtent(1021, 93)).toBe(88); // 1021 is prime: 11 tiles of 88 and one of 53
    expect(tileExtent(1000, 93)).toBe(50);  // a divisor at least half the limit
  });

  it("pl.assign(out, pl.add(a, b)) on [1021, 700] runs whole tiles then a [53, 700] partial tile", () => {
    const a = randn([1021, 700], { seed: 1 }), b = randn([1021, 700], { seed: 2 });
    const p = add.lower(a, b, zeros([1021, 700]));
    const valid: string[] = [];
    forEachStmt(p.functions.find((f) => f.fnKind === "incore")!.body, (s) => {
      if (s.kind === "assign" && s.value.kind === "call" && s.value.op === "tile.load" && s.value.attrs.validShape) valid.push(JSON.stringify(s.value.attrs.validShape));
    });
    expect(valid).toEqual(["[53,700]", "[53,700]"]);
    for (const platform of PLATFORMS) {
      const out = zeros([1021, 700]);
      add(a, b, out, new RunConfig({ platform }));
      assertClose(out, a.add(b), { rtol: 0, atol: 0 });
    }
  });

  it("partial tiles along the last axis ([3, 300001]) and along both axes ([517, 2049])", () => {
    for (const shape of [[3, 300001], [517, 2049]]) {
      const a = randn(shape, { seed: 3 }), b = randn(shape, { seed: 4 });
      for (const platform of PLATFORMS) {
        const out = zeros(shape);
        add(a, b, out, new RunConfig({ platform }));
        assertClose(out, a.add(b), { rtol: 0, atol: 0 });
      }
    }
  });

  it("pl.assemble writes a cast of a slice at an offset; the rest of the target is untouched", () => {
    const A = randn([40, 60], { seed: 5 });
    const a = A.toArray();
    for (const platform of PLATFORMS) {
      const init = Int32Array.from({ length: 50 * 60 }, (_, i) => -(i % 7) - 1);
      const out = tensor(Int32Array.from(init), { shape: [50, 60], dtype: "int32" });
      window(A, out, new RunConfig({ platform }));
      const w = Int32Array.from(init);
      for (let r = 0; r < 37; r++) for (let c = 0; c < 50; c++) w[(5 + r) * 60 + 1 + c] = Math.floor(Math.fround(a[(3 + r) * 60 + 7 + c] * 2));
      assertClose(out, tensor(w, { shape: [50, 60], dtype: "int32" }), { rtol: 0, atol: 0 });
    }
  });
});

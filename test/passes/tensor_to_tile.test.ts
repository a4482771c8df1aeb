// Tensor-level ops inside pl.at are lowered to tiled loops; results agree with the
// interpreter of the unlowered program and with independent JS formulas.
import { describe, it, expect } from "vitest";
import { pl, RunConfig, randn, zeros, assertClose, tensor } from "tspto";
import { forEachStmt } from "../../src/ir/index.js";

const vecDag = pl.jit(function vecDag(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const s = pl.add(a, b);
    pl.assign(out, pl.add(pl.mul(pl.add(s, 1), pl.add(s, 2)), s));
  });
  return out;
});

const scaleCopy = pl.jit(function scaleCopy(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.exp(pl.mul(a, 0.5)));
  });
  return out;
});

describe("tensor-to-tile", () => {
  it("splits a [1024, 512] pl.assign(out, pl.add(a, b)) into several tiles", () => {
    const add = pl.jit(function add(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
      return out;
    });
    const a = randn([1024, 512], { seed: 1 }), b = randn([1024, 512], { seed: 2 });
    const p = add.lower(a, b, zeros([1024, 512]));
    const loops: number[] = [];
    forEachStmt(p.functions.find((f) => f.fnKind === "incore")!.body, (s) => {
      if (s.kind === "for" && s.step.kind === "const") loops.push(Number(s.step.value));
    });
    expect(loops.length).toBe(1);
    expect(1024 / loops[0]).toBeGreaterThan(1); // more than one tile
    for (const platform of ["cpu", "interp"] as const) {
      const out = zeros([1024, 512]);
      add(a, b, out, new RunConfig({ platform }));
      assertClose(out, a.add(b), { rtol: 0, atol: 0 });
    }
  });

  it("computes the vector DAG (a+b+1)(a+b+2)+(a+b) on cpu and interp", () => {
    const a = randn([96, 80], { seed: 3 }), b = randn([96, 80], { seed: 4 });
    const want = a.toArray().map((x, i) => {
      const s = Math.fround(x + b.toArray()[i]);
      return Math.fround(Math.fround(Math.fround(s + 1) * Math.fround(s + 2)) + s);
    });
    for (const platform of ["cpu", "interp"] as const) {
      const out = zeros([96, 80]);
      vecDag(a, b, out, new RunConfig({ platform }));
      assertClose(out, tensor(Float32Array.from(want), { shape: [96, 80] }), { rtol: 1e-6, atol: 1e-6 });
    }
  });

  it("tiles a row too long for one tile along the last axis", () => {
    const a = randn([3, 300000], { seed: 5 });
    const out = zeros([3, 300000]);
    scaleCopy(a, out);
    const want = a.toArray().map((x) => Math.exp(Math.fround(x * 0.5)));
    assertClose(out, tensor(Float32Array.from(want), { shape: [3, 300000] }), { rtol: 1e-5, atol: 1e-6 });
  });
});

// DeriveDeps: each task's accesses carry the window of its tensor arguments it reads and
// writes, as affine bounds over the call's scalar arguments (src/passes/deps.ts); windows
// that cannot be bounded fall back to the whole tensor.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { forEachExpr, type Call, type Program } from "../../src/ir/index.js";
import type { AccessAttr } from "../../src/passes/index.js";

const R = 256, C = 128, B = 64;

const twoScopes = pl.jit(function twoScopes(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, R, B)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [B, C]);
      pl.store(pl.mul(t, 2), [r, 0], mid);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [r, 0], [B, C]);
      pl.store(pl.add(t, 1), [r, 0], out);
    });
  }
  return out;
});

/** A kernel looping over column blocks of one row band: its window is the band's hull. */
const innerLoop = pl.jit(function innerLoop(a: pl.Tensor, out: pl.InOut<pl.Tensor>) {
  for (const r of pl.range(0, R, B)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      for (const c of pl.range(0, C, 32)) {
        const t = pl.load(a, [r + 1, c], [B, 32]);
        const u = pl.load(out, [r, c], [B, 32]);
        pl.store(pl.add(u, t), [r, c], out);
      }
    });
  }
  return out;
});

/** A window offset the analysis cannot bound (a product of two variables): whole tensors. */
const nonAffine = pl.jit(function nonAffine(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, 4)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r * r * B, 0], [B, C]);
      pl.store(t, [r * B, 0], out);
    });
  }
  return out;
});

function calls(p: Program): Call[] {
  const out: Call[] = [];
  forEachExpr(p.entryFunction.body, (e) => { if (e.kind === "call" && e.op === "call") out.push(e); });
  return out;
}
const accessesOf = (c: Call) => c.attrs.accesses as unknown as AccessAttr[];

describe("DeriveDeps windows", () => {
  it("two pl.at scopes over 64-row windows: each access is the window [r, 0] + [64, 128]", () => {
    const p = twoScopes.lower(randn([R, C]), zeros([R, C]), zeros([R, C]));
    const cs = calls(p);
    expect(cs).toHaveLength(2);
    for (const c of cs) {
      const acc = accessesOf(c);
      expect(acc.map((x) => x.mode)).toEqual(["read", "write"]);
      // the loop variable r is the call's scalar argument 2
      const ri = c.args.findIndex((a) => a.kind === "var" && a.name === "r");
      expect(ri).toBeGreaterThanOrEqual(0);
      for (const x of acc) {
        expect(x.window).toEqual({ lo: [[{ c: 0, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
      }
    }
  });

  it("offsets over the kernel's own loop are bounded over its range; reads and writes of one tensor are separate windows", () => {
    const p = innerLoop.lower(randn([R + 1, C]), zeros([R, C]));
    const [c] = calls(p);
    const ri = c.args.findIndex((a) => a.kind === "var" && a.name === "r");
    const acc = accessesOf(c);
    expect(acc.map((x) => [x.arg, x.mode])).toEqual([[0, "read"], [1, "read"], [1, "write"]]);
    // a: rows r+1 .. r+65 (exclusive), columns 0 .. 96+32
    expect(acc[0].window).toEqual({ lo: [[{ c: 1, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B + 1, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
    expect(acc[2].window).toEqual({ lo: [[{ c: 0, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
  });

  it("a non-affine offset gives a whole-tensor access", () => {
    const p = nonAffine.lower(randn([16 * B, C]), zeros([4 * B, C]));
    const acc = accessesOf(calls(p)[0]);
    expect(acc[0]).toEqual({ arg: 0, mode: "read" });
    // the store's offset r * 64 is affine: still a window
    expect(acc[1].mode).toBe("write");
    expect(acc[1].window).toBeDefined();
  });

  // Item 4 of the GPT-2 issue: disjoint bands of a tensor whose width is not a multiple of the
  // tile were chained one after another (the partial tile's window was rounded up to a whole tile).
  it("column bands with a partial last tile: the windows end where the bands end (no rounding up to whole tiles)", () => {
    // small enough that neither scope is split over the cores: constant windows
    const p = columnBandsSmall.lower(randn([1, 64]), randn([64, 300]), zeros([1, 300]));
    const [c0, c1] = calls(p);
    expect(c0.attrs.spmd).toBeUndefined();
    const colHi = (c: Call, arg: number) => accessesOf(c).find((x) => x.arg === arg)!.window!.hi[1];
    const colLo = (c: Call, arg: number) => accessesOf(c).find((x) => x.arg === arg)!.window!.lo[1];
    for (const arg of [0, 2]) { // y written, w read
      expect(colLo(c0, arg)).toEqual([{ c: 0, t: [] }]);
      expect(colHi(c0, arg)).toEqual([{ c: 150, t: [] }]);
      expect(colLo(c1, arg)).toEqual([{ c: 150, t: [] }]);
      expect(colHi(c1, arg)).toEqual([{ c: 300, t: [] }]);
    }
  });

  it("row bands whose last trip is a partial tile (the if on the offset), each split over the cores: no task depends on another (deps.json)", () => {
    const x = randn([2998, 256], { seed: 3 }), y = zeros([2998, 256]);
    const compiled = ir.compile(rowBands.lower(x, y), { platform: "cpu" });
    using wk = new ChipWorker(new RunConfig({ platform: "cpu", enableDepGen: true }));
    wk.run(compiled, x, y);
    expect(Array.from(y.data as Float32Array)).toEqual(Array.from(x.data as Float32Array, (v) => Math.fround(v * 2)));
    const deps = JSON.parse(readFileSync(join(compiled.outputDir, "dfx_outputs", "deps.json"), "utf8")) as { tasks: unknown[]; edges: unknown[] };
    expect(deps.tasks.length).toBeGreaterThanOrEqual(2);
    expect(deps.edges).toEqual([]);
  });

  it("the column-band tasks of one launch (each scope split over the cores too) share no dependency edge (deps.json)", () => {
    const x = randn([1, 768], { seed: 1 }), w = randn([768, 6282], { seed: 2 }), y = zeros([1, 6282]);
    const compiled = ir.compile(columnBands.lower(x, w, y), { platform: "cpu" });
    using wk = new ChipWorker(new RunConfig({ platform: "cpu", enableDepGen: true }));
    wk.run(compiled, x, w, y);
    const deps = JSON.parse(readFileSync(join(compiled.outputDir, "dfx_outputs", "deps.json"), "utf8")) as { tasks: { id: number; kernel: string }[]; edges: { from: number; to: number }[] };
    const kernels = new Set(deps.tasks.map((t) => t.kernel));
    expect(kernels.size).toBe(2);
    expect(deps.edges).toEqual([]);
    const want = new Float32Array(6282);
    for (let j = 0; j < 6282; j++) { let acc = 0; for (let q = 0; q < 768; q++) acc += (x.data as Float32Array)[q] * (w.data as Float32Array)[q * 6282 + j]; want[j] = acc; }
    (y.data as Float32Array).forEach((v, j) => expect(Math.abs(v - want[j])).toBeLessThan(1e-3 * (1 + Math.abs(want[j]))));
  });
});

/** y[:, :3141] and y[:, 3141:] of x @ w in two scopes: bands of 3141 columns, each 24 whole tiles of 128 and one of 69. */
const columnBands = pl.jit(function columnBands(x: pl.Tensor<[1, 768], pl.FP32>, w: pl.Tensor<[768, 6282], pl.FP32>, y: pl.Out<pl.Tensor<[1, 6282], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.matmul(x, pl.slice(w, [768, 3141], [0, 0])), [0, 0]);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.matmul(x, pl.slice(w, [768, 3141], [0, 3141])), [0, 3141]);
  });
  return y;
});

const columnBandsSmall = pl.jit(function columnBandsSmall(x: pl.Tensor<[1, 64], pl.FP32>, w: pl.Tensor<[64, 300], pl.FP32>, y: pl.Out<pl.Tensor<[1, 300], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.matmul(x, pl.slice(w, [64, 150], [0, 0])), [0, 0]);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.matmul(x, pl.slice(w, [64, 150], [0, 150])), [0, 150]);
  });
  return y;
});

/** Rows [0, 1499) and [1499, 2998) of y = 2x in two scopes: 1499 rows are whole tiles and a partial one. */
const rowBands = pl.jit(function rowBands(x: pl.Tensor<[2998, 256], pl.FP32>, y: pl.Out<pl.Tensor<[2998, 256], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.mul(pl.slice(x, [1499, 256], [0, 0]), 2), [0, 0]);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(y, pl.mul(pl.slice(x, [1499, 256], [1499, 0]), 2), [1499, 0]);
  });
  return y;
});

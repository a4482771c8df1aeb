// Reductions inside tensor expressions along an axis of run-time extent (or longer than a tile
// holds): TensorToTile's lowerBlocked / reduceBlocks reduce the axis in blocks (first element,
// whole tiles, single elements, carried [t, 1] results; a reduction's operand may hold earlier
// reductions), then compute the value tile by tile. Softmax over the [S, L] scores of a
// dynamic-length cache, a log-sum-exp as a whole value, a centring by a run-time mean, column
// reductions down a run-time height; cpu and interp against independent JS formulas, the lowered
// form, and what stays an error.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { TsptoCompileError } from "../../src/ir/index.js";

const PLATFORMS = ["cpu", "interp"] as const;
const cfgOf = (platform: string) => new RunConfig({ platform });
const f32 = (t: HostTensor) => t.data as Float32Array;
function maxRel(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < want.length; i++) w = Math.max(w, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  return w;
}
const rowsOf = (x: Float32Array, r: number, c: number) => Array.from({ length: r }, (_, i) => Array.from(x.subarray(i * c, (i + 1) * c)));
const softmaxRef = (row: number[]) => { const m = row.reduce((a, b) => Math.max(a, b), -Infinity); const e = row.map((v) => Math.exp(v - m)); const z = e.reduce((a, b) => a + b, 0); return e.map((v) => v / z); };

const softmax = pl.jit(function softmax(s: pl.Tensor<["S", "L"], pl.FP32>, p: pl.Out<pl.Tensor<["S", "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(s, pl.rowMax(s)));
    pl.assign(p, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
});
// NumPy-broadcast spelling and a scalar of the run-time width: x - mean(x) with mean = rowSum / L
const centre = pl.jit(function centre(x: pl.Tensor<[6, "L"], pl.FP32>, y: pl.Out<pl.Tensor<[6, "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.sub(x, pl.div(pl.rowSum(x), pl.dim(x, 1)))); });
});
const lse = pl.jit(function lse(s: pl.Tensor<[3, "L"], pl.FP32>, out: pl.Out<pl.Tensor<[3, 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.rowSum(pl.exp(pl.sub(s, pl.rowMax(s))))); });
});
const colSoftmax = pl.jit(function colSoftmax(x: pl.Tensor<["M", 12], pl.FP32>, y: pl.Out<pl.Tensor<["M", 12], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.colExpandSub(x, pl.colMax(x)));
    pl.assign(y, pl.colExpandDiv(e, pl.colSum(e)));
  });
});
// a static row longer than a tile holds with its reductions
const wide = pl.jit(function wide(x: pl.Tensor<[2, 150000], pl.FP32>, y: pl.Out<pl.Tensor<[2, 150000], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(x, pl.rowMax(x)));
    pl.assign(y, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
});

const wideSum = pl.jit(function wideSum(x: pl.Tensor<[2, 150000], pl.FP32>, y: pl.Out<pl.Tensor<[2, 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.rowSum(x)); });
});

describe("reductions along a run-time axis inside tensor expressions", () => {
  for (const platform of PLATFORMS) {
    const cfg = cfgOf(platform);
    it(`${platform}: softmax over [S, L] scores of run-time S and L (one compile; L from 1 to longer than a tile)`, () => {
      softmax.clearCache();
      for (const [S, L] of [[1, 1], [1, 1024], [3, 5], [9, 1300]]) {
        const s = randn([S, L], { seed: S * 7 + L }), p = zeros([S, L]);
        softmax(s, p, cfg);
        expect(maxRel(f32(p), rowsOf(f32(s), S, L).flatMap(softmaxRef))).toBeLessThan(1e-5);
      }
      expect(softmax.cacheSize).toBe(1);
    });
    it(`${platform}: a run-time mean (rowSum / pl.dim) in the NumPy-broadcast spelling`, () => {
      for (const L of [1, 77, 900]) {
        const x = randn([6, L], { seed: L }), y = zeros([6, L]);
        centre(x, y, cfg);
        const want = rowsOf(f32(x), 6, L).flatMap((row) => { const m = Math.fround(Math.fround(row.reduce((a, b) => a + b, 0)) / L); return row.map((v) => v - m); });
        expect(maxRel(f32(y), want)).toBeLessThan(1e-5);
      }
    });
    it(`${platform}: a whole-value reduction whose operand holds a reduction (log-sum-exp's rowSum(exp(s - rowMax(s))))`, () => {
      for (const L of [1, 9, 1000]) {
        const s = randn([3, L], { seed: L + 3 }), out = zeros([3, 1]);
        lse(s, out, cfg);
        const want = rowsOf(f32(s), 3, L).map((row) => { const m = Math.max(...row); return row.reduce((a, v) => a + Math.exp(v - m), 0); });
        expect(maxRel(f32(out), want)).toBeLessThan(1e-5);
      }
    });
    it(`${platform}: column reductions down a run-time height (a softmax of each column)`, () => {
      for (const M of [1, 40, 700]) {
        const x = randn([M, 12], { seed: M }), y = zeros([M, 12]);
        colSoftmax(x, y, cfg);
        const cols = Array.from({ length: 12 }, (_, c) => softmaxRef(Array.from({ length: M }, (_, r) => f32(x)[r * 12 + c])));
        expect(maxRel(f32(y), Array.from({ length: M * 12 }, (_, e) => cols[e % 12][Math.floor(e / 12)]))).toBeLessThan(1e-5);
      }
    });
  }

  it("cpu: a static row longer than a tile holds is reduced in blocks too, inside an expression and as a whole value (both were E_SCRATCH)", () => {
    const x = randn([2, 150000], { seed: 11 }), y = zeros([2, 150000]);
    wide(x, y, cfgOf("cpu"));
    expect(maxRel(f32(y), rowsOf(f32(x), 2, 150000).flatMap(softmaxRef))).toBeLessThan(1e-5);
    const sums = zeros([2, 1]);
    wideSum(x, sums, cfgOf("cpu"));
    expect(maxRel(f32(sums), rowsOf(f32(x), 2, 150000).map((row) => row.reduce((a, b) => a + b, 0)))).toBeLessThan(1e-5);
  });

  it("the lowered form: each reduction a carried loop over column blocks, then the value block by block", () => {
    const text = softmax.lower(randn([2, 40]), zeros([2, 40])).asText();
    // rowMax and rowSum each: the first column, whole blocks, single columns, combined in carried loops
    expect(text).toContain("pl.maximum(acc");
    expect(text).toContain("pl.add(acc");
    expect(text.match(/pl\.forRange\(/g)?.length ?? 0).toBeGreaterThanOrEqual(4);
    expect(text).toContain("pl.rowExpandSub(");
    expect(text).toContain("pl.rowExpandDiv(");
  });

  it("what stays an error: row and column reductions in one expression over a run-time axis; an arg-reduction along one", () => {
    const both = pl.jit(function both(x: pl.Tensor<[8, "L"], pl.FP32>, y: pl.Out<pl.Tensor<[8, "L"], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.add(pl.sub(x, pl.rowMax(x)), pl.colMin(x))); });
    });
    let err: unknown;
    try { both.lower(randn([8, 5]), zeros([8, 5])); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_TENSOR_FORM");
    expect((err as TsptoCompileError).message).toContain("row reductions inside the value need a 2-D value with a static row length");
    const argmax = pl.jit(function argmax(x: pl.Tensor<[4, "L"], pl.FP32>, y: pl.Out<pl.Tensor<[4, "L"], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.rowExpandSub(x, pl.cast(pl.rowArgmax(x), pl.FP32))); });
    });
    err = undefined;
    try { argmax.lower(randn([4, 5]), zeros([4, 5])); } catch (e) { err = e; }
    expect((err as TsptoCompileError).code).toMatch(/E_TENSOR_FORM|E_DYNAMIC/);
  });
});

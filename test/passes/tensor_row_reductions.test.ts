// Row (and column) reductions inside tensor-level expressions (src/passes/tensor_to_tile.ts, tileExpr):
// softmax, layer norm and RMS norm written on whole tensors, with locals, inside one pl.at.
// TensorToTile tiles whole rows, computes each reduction once per tile ([t, 1]), keeps [rows, 1]
// values as [t, 1] tiles and writes row/column broadcasts as rowExpand/colExpand ops, so
// FuseRows runs them row by row like the same computation written on tiles. Checked against
// independent JS formulas on cpu and interp (static and dynamic row counts, partial row tiles),
// cpu == interp bit for bit, the lowered form, and the messages of what stays unsupported.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ir, pl, RunConfig, randn, zeros } from "tspto";
import { TsptoCompileError } from "../../src/ir/index.js";

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
/** The pass dump text after `pass` of a compile of fn's lowering (interp: no C++ build). */
function dumpAfter(fn: { lower(...a: unknown[]): ir.Program }, args: unknown[], pass: string): string {
  const dir = mkdtempSync(join(tmpdir(), "tspto-trr-"));
  dirs.push(dir);
  const c = ir.compile(fn.lower(...args), { platform: "interp", dumpPasses: true, outputDir: dir });
  const d = join(c.outputDir, "passes_dump");
  const file = readdirSync(d).find((f) => new RegExp(`^\\d+_after_${pass}\\.ts$`).test(f));
  if (!file) throw new Error(`no dump after ${pass}`);
  return readFileSync(join(d, file), "utf8");
}

const f = Math.fround;
const cfg = (platform: string) => new RunConfig({ platform });

const softmax = pl.jit(function softmax(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const m = pl.rowMax(x);
    const e = pl.exp(pl.rowExpandSub(x, m));
    pl.assign(y, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
  return y;
});

const softmaxDyn = pl.jit(function softmaxDyn(x: pl.Tensor<["S", 96], pl.FP32>, y: pl.Out<pl.Tensor<["S", 96], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.sub(x, pl.rowMax(x)));  // NumPy broadcasting of the [S, 1] max
    pl.assign(y, pl.div(e, pl.rowSum(e)));
  });
  return y;
});

const C = 320, INV = 1 / C, EPS = 1e-5;
const layerNorm = pl.jit(function layerNorm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const mean = pl.mul(pl.rowSum(x), INV);
    const centered = pl.rowExpandSub(x, mean);
    const variance = pl.mul(pl.rowSum(pl.mul(centered, centered)), INV);
    pl.assign(y, pl.add(pl.mul(pl.rowExpandDiv(centered, pl.sqrt(pl.add(variance, EPS))), gamma), beta));
  });
  return y;
});

const rmsNorm = pl.jit(function rmsNorm(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.mul(pl.mul(x, pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(x, x)), INV), EPS))), gamma));
  });
  return y;
});

const PLATFORMS = ["cpu", "interp"] as const;

/** Row-wise reference: fn(row) -> output row (doubles), compared with a relative tolerance. */
function expectRows(got: Float32Array, x: Float32Array, cols: number, fn: (row: Float32Array, r: number) => number[], tol: number): void {
  let worst = 0;
  for (let r = 0; r < x.length / cols; r++) {
    const want = fn(x.subarray(r * cols, (r + 1) * cols), r);
    for (let c = 0; c < cols; c++) worst = Math.max(worst, Math.abs(got[r * cols + c] - want[c]) / (1 + Math.abs(want[c])));
  }
  expect(worst).toBeLessThan(tol);
}
const softmaxRef = (row: Float32Array) => {
  const m = Math.max(...row);
  const e = Array.from(row, (v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
};

describe.each(PLATFORMS)("row reductions inside tensor expressions on %s", (platform) => {
  it("softmax with locals (rows not a multiple of the row tile)", () => {
    const X = randn([203, 256], { seed: 1 }), Y = zeros([203, 256]);
    softmax(X, Y, cfg(platform));
    expectRows(Y.data as Float32Array, X.data as Float32Array, 256, softmaxRef, 1e-6);
  });
  it("softmax with NumPy broadcasting over a dynamic row count", () => {
    for (const rows of [1, 37, 130]) {
      const X = randn([rows, 96], { seed: rows }), Y = zeros([rows, 96]);
      softmaxDyn(X, Y, cfg(platform));
      expectRows(Y.data as Float32Array, X.data as Float32Array, 96, softmaxRef, 1e-6);
    }
  });
  it("layer norm with [1, C] scale and shift", () => {
    const X = randn([77, C], { seed: 4 }), G = randn([1, C], { seed: 5 }), B = randn([1, C], { seed: 6 }), Y = zeros([77, C]);
    layerNorm(X, G, B, Y, cfg(platform));
    const g = G.data as Float32Array, b = B.data as Float32Array;
    expectRows(Y.data as Float32Array, X.data as Float32Array, C, (row) => {
      const mean = row.reduce((a, v) => a + v, 0) / C;
      const variance = row.reduce((a, v) => a + (v - mean) ** 2, 0) / C;
      return Array.from(row, (v, c) => ((v - mean) / Math.sqrt(variance + EPS)) * g[c] + b[c]);
    }, 1e-5);
  });
  it("RMS norm in one expression", () => {
    const X = randn([40, C], { seed: 7 }), G = randn([1, C], { seed: 8 }), Y = zeros([40, C]);
    rmsNorm(X, G, Y, cfg(platform));
    const g = G.data as Float32Array;
    expectRows(Y.data as Float32Array, X.data as Float32Array, C, (row) => {
      const ms = row.reduce((a, v) => a + v * v, 0) / C;
      return Array.from(row, (v, c) => (v / Math.sqrt(ms + EPS)) * g[c]);
    }, 1e-5);
  });
});

describe("row reductions inside tensor expressions: one computation on every platform", () => {
  it("cpu and interp agree: bit for bit without exp, within 4 ulp with it", () => {
    const X = randn([203, 256], { seed: 11 });
    const a = zeros([203, 256]), b = zeros([203, 256]);
    softmax(X, a, cfg("cpu"));
    softmax(X, b, cfg("interp"));
    const sa = a.data as Float32Array, sb = b.data as Float32Array;
    // tspto_expf (cpu) is within 1 ulp of the correctly rounded exp (interp); the row's sum of those
    // and the division add at most 2 more
    sa.forEach((v, i) => expect(Math.abs(v - sb[i])).toBeLessThanOrEqual(Math.abs(sb[i]) * 2 ** -21 * 1.01));
    const Xl = randn([77, C], { seed: 12 }), G = randn([1, C], { seed: 13 }), B = randn([1, C], { seed: 14 });
    const la = zeros([77, C]), lb = zeros([77, C]);
    layerNorm(Xl, G, B, la, cfg("cpu"));
    layerNorm(Xl, G, B, lb, cfg("interp"));
    expect(la.data).toEqual(lb.data);
  });
  it("lowers to rowExpand / colExpand tile ops that FuseRows runs row by row (no stretched copies)", () => {
    const args = [randn([77, C]), randn([1, C]), randn([1, C]), zeros([77, C])];
    // after TensorToTile: the tile forms as written by hand; 77 rows = one loop of two trips: a
    // whole tile of 48 rows, then a [29, C] tile of the last rows (its own shape, no valid region)
    const tiled = dumpAfter(layerNorm, args, "TensorToTile");
    for (const op of ["pl.rowSum(", "pl.rowExpandSub(", "pl.rowExpandDiv(", "pl.colExpandMul(", "pl.colExpandAdd("]) expect(tiled).toContain(op);
    expect(tiled).not.toContain("broadcastTo");
    expect(tiled).not.toContain("validShape");
    expect(tiled).toMatch(/for \(const i0 of pl\.range\(0, 96, 48\)\)/);
    expect(tiled).toMatch(/pl\.load\(x, \[i0, 0\], \[29, 320\]\)/);
    // FuseRows runs both blocks row by row, folding the row broadcasts into reads of each row's [1, 1] values
    const text = layerNorm.lower(...args).asText();
    expect(text.match(/for \(const row\w* of pl\.range\(0, (48|29), 1\)\)/g)).toHaveLength(2);
    expect(text).toContain("pl.read(");
    expect(text).not.toContain("broadcastTo");
    const sm = softmax.lower(randn([256, 256]), zeros([256, 256])).asText();
    expect(sm).toContain("pl.rowMax(");
    expect(sm).toContain("pl.rowSumKeep(");  // FuseRowReductions: e = exp(x - max) written once while it is summed
    expect(sm).not.toContain("broadcastTo");
  });
});

describe("row reductions inside tensor expressions: what stays unsupported", () => {
  const otherShape = pl.jit(function otherShape(y: pl.Tensor, z: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(out, pl.rowExpandMul(y, pl.rowSum(z)));  // MARK:otherShape
    });
    return out;
  });
  const chunks = pl.jit(function chunks(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(out, pl.reshape(pl.sub(x, pl.rowMax(x)), [2, 4, 50000]));
    });
    return out;
  });
  const longRows = pl.jit(function longRows(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(out, pl.rowExpandSub(x, pl.rowMax(x)));  // MARK:longRows
    });
    return out;
  });
  const caught = (run: () => unknown): TsptoCompileError => {
    try { run(); } catch (e) { expect(e).toBeInstanceOf(TsptoCompileError); return e as TsptoCompileError; }
    throw new Error("no error");
  };
  it("a reduction of a tensor of another row length", () => {
    const e = caught(() => otherShape.lower(randn([8, 16]), randn([8, 32]), zeros([8, 16])));
    expect(e.code).toBe("E_TENSOR_FORM");
    expect(e.message).toContain("pl.rowSum: a row reduction inside an expression must reduce a tensor of the expression's own shape [8, 16], got Tensor<[8, 32], float32>");
    expect(e.message).toMatch(/tensor_row_reductions\.test\.ts:\d+:\d+/);
    expect(e.hint).toContain("assign the reduction to a tensor of its own first");
  });
  it("tiles that are not whole rows (a reshape's chunks of a row longer than a tile)", () => {
    const e = caught(() => chunks.lower(randn([2, 200000]), zeros([2, 4, 50000])));
    expect(e.code).toBe("E_TENSOR_FORM");
    expect(e.message).toContain("pl.rowMax: a row reduction inside an expression needs tiles of whole rows");
  });
  it("rows longer than a tile holds are reduced in blocks (no longer E_SCRATCH; tensor_blocked_reductions.test.ts)", () => {
    const X = randn([2, 200000], { seed: 5 }), Y = zeros([2, 200000]);
    longRows(X, Y, cfg("cpu"));
    expectRows(Y.data as Float32Array, X.data as Float32Array, 200000, (row) => { let m = -Infinity; for (const v of row) m = Math.max(m, v); return Array.from(row, (v) => f(v - m)); }, 1e-12);
  });
});

// Column reductions inside expressions: tiles of whole columns (the rows' extent static); with
// row reductions too, the whole value in one tile.
describe("column reductions inside tensor expressions", () => {
  const R2 = 300, C2 = 70;
  const colNorm = pl.jit(function colNorm(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const c = pl.colExpandSub(x, pl.mul(pl.colSum(x), 1 / 300));
      pl.assign(y, pl.colExpandDiv(c, pl.colMax(pl.abs(c))));
    });
    return y;
  });
  const both = pl.jit(function both(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.add(pl.sub(x, pl.rowMax(x)), pl.colMin(x))); });
    return y;
  });
  const colDyn = pl.jit(function colDyn(x: pl.Tensor<[64, "N"], pl.FP32>, y: pl.Out<pl.Tensor<[64, "N"], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.sub(x, pl.colMax(x))); });
    return y;
  });
  const rowsDyn = pl.jit(function rowsDyn(x: pl.Tensor<["M", 8], pl.FP32>, y: pl.Out<pl.Tensor<["M", 8], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.sub(x, pl.colMax(x))); });  // MARK:rowsDyn
    return y;
  });
  const colNormRef = (x: Float32Array) => {
    const out = new Float64Array(R2 * C2);
    for (let c = 0; c < C2; c++) {
      let s = 0;
      for (let r = 0; r < R2; r++) s += x[r * C2 + c];
      const m = f(f(s) * f(1 / 300));
      let mx = 0;
      for (let r = 0; r < R2; r++) mx = Math.max(mx, Math.abs(f(x[r * C2 + c] - m)));
      for (let r = 0; r < R2; r++) out[r * C2 + c] = f(x[r * C2 + c] - m) / mx;
    }
    return out;
  };
  it.each(PLATFORMS)("centre and scale each column (%s)", (platform) => {
    const X = randn([R2, C2], { seed: 41 }), Y = zeros([R2, C2]);
    colNorm(X, Y, cfg(platform));
    expectRows(Y.data as Float32Array, X.data as Float32Array, C2, (_row, r) => Array.from(colNormRef(X.data as Float32Array).subarray(r * C2, (r + 1) * C2)), 1e-6);
  });
  it("row and column reductions in one expression: the whole value in one tile; cpu == interp bit for bit", () => {
    const X = randn([R2, C2], { seed: 42 }), a = zeros([R2, C2]), b = zeros([R2, C2]);
    both(X, a, cfg("cpu"));
    both(X, b, cfg("interp"));
    expect(a.data).toEqual(b.data);
    const x = X.data as Float32Array;
    const colMin = Array.from({ length: C2 }, (_, c) => Math.min(...Array.from({ length: R2 }, (_, r) => x[r * C2 + c])));
    expectRows(a.data as Float32Array, x, C2, (row) => { const m = Math.max(...row); return Array.from(row, (v, c) => f(v - m) + colMin[c]); }, 1e-6);
  });
  it("a dynamic column count: tiles of whole columns over a run-time number of columns", () => {
    for (const n of [1, 100]) {
      const X = randn([64, n], { seed: n }), Y = zeros([64, n]);
      colDyn(X, Y);
      const x = X.data as Float32Array;
      const colMax = Array.from({ length: n }, (_, c) => Math.max(...Array.from({ length: 64 }, (_, r) => x[r * n + c])));
      expectRows(Y.data as Float32Array, x, n, (row) => Array.from(row, (v, c) => f(v - colMax[c])), 1e-7);
    }
  });
  it.each(PLATFORMS)("a column reduction over a dynamic row count is reduced in blocks down the columns (%s)", (platform) => {
    for (const m of [1, 5, 700]) {
      const X = randn([m, 8], { seed: m }), Y = zeros([m, 8]);
      rowsDyn(X, Y, cfg(platform));
      const x = X.data as Float32Array;
      const colMax = Array.from({ length: 8 }, (_, c) => Math.max(...Array.from({ length: m }, (_, r) => x[r * 8 + c])));
      expectRows(Y.data as Float32Array, x, 8, (row) => Array.from(row, (v, c) => f(v - colMax[c])), 1e-12);
    }
  });
  it("row and column reductions over a value larger than a tile", () => {
    let err: unknown;
    try { both.lower(randn([2000, 2000]), zeros([2000, 2000])); } catch (e) { err = e; }
    expect((err as TsptoCompileError).code).toBe("E_SCRATCH");
    expect((err as TsptoCompileError).message).toMatch(/computes 2 row and column reduction\(s\) on the whole \[2000, 2000\] value, more than a tile holds here \(\d+\)/);
  });
});

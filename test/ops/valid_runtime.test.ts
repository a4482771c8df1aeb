// Runtime validShape: `pl.load(x, offs, shape, { validShape: [Math.min(64, n - i), 64] })` with a
// pl.Scalar, a loop index, an expression or Math.min as an extent. Numerics on cpu and interp
// against an independent JavaScript reference on seeded random data (tiles modelled whole, pad
// included); the printed IR round-trips (TSPTO_ROUNDTRIP=1 in test/setup, and explicitly); an
// extent outside the tile, or a window that leaves the tensor, is a run-time error with the
// op's location and the same message on both platforms; cuda says it does not support it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pl, RunConfig, randn, full, zeros, TsptoCompileError, TsptoTypeError } from "tspto";
import {
  INDEX, NO_SPAN, TsptoRuntimeError, dimsOperand, getOp, inferCall, mkCall, mkConst, mkList, mkVar, programsEqual, scalarT, tensorT,
  type Call, type Expr, type Program,
} from "../../src/ir/index.js";
import { parseProgramText } from "../../src/dsl/index.js";
import { generateCuda } from "../../src/codegen/cuda/index.js";

// a private disk cache: the error tests check source locations, which a cached artifact of an
// earlier edit of this file would hold at their old lines
const cacheDir = mkdtempSync(join(tmpdir(), "tspto-valid-runtime-"));
process.env.TSPTO_CACHE_DIR = cacheDir;
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

const PLATFORMS = ["cpu", "interp"] as const;
const cfg = (platform: string) => new RunConfig({ platform, fpContract: "off" });
const f = Math.fround;
const R = 200, C = 64, T = 64;
const FP32_MAX = 3.4028234663852886e38;

// Rows [0, n) of a [R, C] tensor, 64 rows a tile; the last tile holds min(64, n - i) rows.
const edgeRows = pl.jit(function edgeRows(x: pl.Tensor, n: pl.Scalar<pl.INT64>, out: pl.InOut<pl.Tensor>, sums: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, n, T)) {
      const t = pl.load(x, [i, 0], [T, C], { validShape: [Math.min(T, n - i), C] });
      const y = pl.add(pl.mul(t, 2.0), 1.0);
      pl.store(y, [i, 0], out);
      pl.store(pl.rowSum(y, pl.createTile([T, C], pl.FP32)), [i, 0], sums);
      pl.store(pl.sub(y, 1.0), [i, 0], out); // a fused expression's extents: y's
    }
  });
  return out;
});

// Both extents runtime (pl.Scalar<pl.INT32> params): transpose swaps them, matmul keeps
// [a.rows, b.cols], colSum keeps the valid columns, fillpad fills outside them.
const M = 16, K = 32, N = 8;
const shapes = pl.jit(function shapes(x: pl.Tensor, w: pl.Tensor, r: pl.Scalar<pl.INT32>, c: pl.Scalar<pl.INT32>,
  tr: pl.InOut<pl.Tensor>, mm: pl.InOut<pl.Tensor>, cs: pl.InOut<pl.Tensor>, pad: pl.Out<pl.Tensor>, rmin: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [M, K], { validShape: [r, c] });
    pl.store(pl.transpose(t, 0, 1), [0, 0], tr);
    pl.store(pl.matmul(t, pl.load(w, [0, 0], [K, N])), [0, 0], mm);
    pl.store(pl.colSum(t), [0, 0], cs);
    const p = pl.fillpad(t, "max");
    pl.store(p, [0, 0], pad);
    pl.store(pl.rowMin(p, pl.createTile([M, K], pl.FP32)), [0, 0], rmin);
  });
  return pad;
});

// A tile carried across iterations and merged from an if: its extents travel with it.
const carried = pl.jit(function carried(x: pl.Tensor, n: pl.Scalar<pl.INT64>, out: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let last = pl.load(x, [0, 0], [T, C], { validShape: [Math.min(T, n), C] });
    for (const i of pl.range(T, n, T)) {
      const t = pl.load(x, [i, 0], [T, C], { validShape: [Math.min(T, n - i), C] });
      if (i % (2 * T) === 0) {
        last = pl.add(t, last);
      } else {
        last = pl.mul(t, 3.0);
      }
    }
    pl.store(last, [0, 0], out);
  });
  return out;
});

// The loop index itself as an extent (a triangle of rows), and an extent given directly.
const direct = pl.jit(function direct(x: pl.Tensor, k: pl.Scalar<pl.INT64>, out: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 4)) {
      const t = pl.load(x, [8 * i, 0], [8, 16], { validShape: [8, i * 4] });
      pl.store(t, [8 * i, 0], out);
    }
    pl.store(pl.neg(pl.load(x, [32, 0], [8, 16], { validShape: [k, 16] })), [32, 0], out);
  });
  return out;
});

// A row softmax over a runtime-partial tile (FuseRows leaves partial tiles to the unfused
// path), a constant-offset edge tile, and broadcastTo with a runtime validShape.
const softmaxEdge = pl.jit(function softmaxEdge(x: pl.Tensor, b: pl.Tensor, k: pl.Scalar<pl.INT32>, out: pl.InOut<pl.Tensor>, bo: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [192, 0], [T, C], { validShape: [k, C] });
    const tmp = pl.createTile([T, C], pl.FP32);
    const e = pl.exp(pl.rowExpandSub(t, pl.rowMax(t, tmp)));
    pl.store(pl.rowExpandDiv(e, pl.rowSum(e, tmp)), [192, 0], out);
    const row = pl.load(b, [0, 0], [1, C]);
    pl.store(pl.broadcastTo(row, [8, C], { validShape: [k, C] }), [0, 0], bo);
  });
  return out;
});

// A dynamic tensor dimension M: the edge tile of the loop to pl.dim(x, 0) holds min(64, M - i) rows.
const dynRows = pl.jit(function dynRows(x: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const m = pl.dim(x, 0);
    for (const i of pl.range(0, m, T)) {
      const t = pl.load(x, [i, 0], [T, C], { validShape: [Math.min(T, m - i), C] });
      pl.store(pl.rowMax(t, pl.createTile([T, C], pl.FP32)), [i, 0], out); // rows past M are pad: not stored
    }
  });
  return out;
});

// Math.max clamps an extent that would go negative.
const clamped = pl.jit(function clamped(x: pl.Tensor, k: pl.Scalar<pl.INT32>, out: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(x, [0, 0], [8, 16], { validShape: [Math.max(k - 5, 0), Math.min(k * 2, 16)] }), [0, 0], out);
  });
  return out;
});

const rows = (h: { data: unknown }) => h.data as Float32Array;

/** A [rows, cols] tile loaded from x at row r0 with `vr` x `vc` valid (the rest zero). */
function tileOf(xs: Float32Array, xc: number, r0: number, rowsN: number, cols: number, vr: number, vc: number): Float64Array {
  const t = new Float64Array(rowsN * cols);
  for (let a = 0; a < vr; a++) for (let b = 0; b < vc; b++) t[a * cols + b] = xs[(r0 + a) * xc + b];
  return t;
}

describe("runtime validShape: numerics", () => {
  for (const platform of PLATFORMS) {
    it(`edge tiles of a runtime row count: load, elementwise, rowSum, store (${platform})`, () => {
      const X = randn([R, C], { seed: 7 });
      const xs = rows(X);
      for (const n of [200, 130, 64, 1]) {
        const out = full([R, C], -5), sums = full([R, 1], -9);
        edgeRows(X, n, out, sums, cfg(platform));
        const od = rows(out), sd = rows(sums);
        for (let r = 0; r < R; r++) {
          let s = 0;
          for (let c = 0; c < C; c++) {
            const y = f(f(xs[r * C + c] * 2) + 1);
            expect(od[r * C + c]).toBe(r < n ? f(y - 1) : -5);
            s += y;
          }
          // the pad rows of the last tile reduce to 64 * (0 * 2 + 1) = 64, but are not stored
          if (r < n) expect(sd[r]).toBeCloseTo(s, 3);
          else expect(sd[r]).toBe(-9);
        }
      }
    });

    it(`transpose, matmul, colSum and fillpad of a tile with two runtime extents (${platform})`, () => {
      const X = randn([M, K], { seed: 11 }), W = randn([K, N], { seed: 12 });
      const xs = rows(X), ws = rows(W);
      for (const [r, c] of [[16, 32], [5, 17], [1, 1], [0, 9]]) {
        const tr = full([K, M], -1), mm = full([M, N], -2), cs = full([1, K], -3), pad = zeros([M, K]), rmin = zeros([M, 1]);
        shapes(X, W, r, c, tr, mm, cs, pad, rmin, cfg(platform));
        const t = tileOf(xs, K, 0, M, K, r, c);
        for (let a = 0; a < K; a++) for (let b = 0; b < M; b++) expect(rows(tr)[a * M + b]).toBe(a < c && b < r ? f(t[b * K + a]) : -1);
        for (let a = 0; a < M; a++) {
          for (let b = 0; b < N; b++) {
            let s = 0;
            for (let k = 0; k < K; k++) s = f(s + f(f(t[a * K + k]) * ws[k * N + b]));
            if (a < r) expect(rows(mm)[a * N + b]).toBeCloseTo(s, 4);
            else expect(rows(mm)[a * N + b]).toBe(-2);
          }
        }
        for (let b = 0; b < K; b++) {
          let s = 0;
          for (let a = 0; a < M; a++) s += t[a * K + b];
          if (b < c) expect(rows(cs)[b]).toBeCloseTo(s, 4); else expect(rows(cs)[b]).toBe(-3);
        }
        for (let a = 0; a < M; a++) {
          let mn = Infinity;
          for (let b = 0; b < K; b++) {
            const v = a < r && b < c ? f(t[a * K + b]) : f(FP32_MAX);
            expect(rows(pad)[a * K + b]).toBe(v);
            mn = Math.min(mn, v);
          }
          expect(rows(rmin)[a]).toBe(mn);
        }
      }
    });

    it(`a carried tile and an if result keep their runtime extents (${platform})`, () => {
      const X = randn([R, C], { seed: 3 });
      const xs = rows(X);
      for (const n of [200, 150, 64, 10]) {
        const out = full([T, C], -4);
        carried(X, n, out, cfg(platform));
        let last = tileOf(xs, C, 0, T, C, Math.min(T, n), C), valid = Math.min(T, n);
        for (let i = T; i < n; i += T) {
          const v = Math.min(T, n - i), t = tileOf(xs, C, i, T, C, v, C);
          last = i % (2 * T) === 0 ? t.map((e, k) => f(e + last[k])) : t.map((e) => f(e * 3));
          valid = v;
        }
        for (let a = 0; a < T; a++) for (let b = 0; b < C; b++) expect(rows(out)[a * C + b]).toBe(a < valid ? f(last[a * C + b]) : -4);
      }
    });

    it(`softmax rows of a constant-offset edge tile; broadcastTo with a runtime validShape (${platform})`, () => {
      const X = randn([R, C], { seed: 9 }), Bv = randn([1, C], { seed: 10 });
      const xs = rows(X), bs = rows(Bv);
      for (const k of [8, 3, 0]) {
        const out = full([R, C], 2), bo = full([8, C], 4);
        softmaxEdge(X, Bv, k, out, bo, cfg(platform));
        for (let r = 0; r < R; r++) {
          const inRows = r >= 192 && r < 192 + k;
          const mx = inRows ? Math.max(...Array.from(xs.subarray(r * C, r * C + C))) : 0;
          const ex = Array.from({ length: C }, (_, c) => Math.exp(xs[r * C + c] - mx));
          const sum = ex.reduce((a, v) => a + v, 0);
          for (let c = 0; c < C; c++) {
            if (inRows) expect(rows(out)[r * C + c]).toBeCloseTo(ex[c] / sum, 5);
            else expect(rows(out)[r * C + c]).toBe(2);
          }
        }
        for (let r = 0; r < 8; r++) for (let c = 0; c < C; c++) expect(rows(bo)[r * C + c]).toBe(r < k ? bs[c] : 4);
      }
    });

    it(`a loop index and a scalar parameter as extents (${platform})`, () => {
      const X = randn([40, 16], { seed: 5 });
      const xs = rows(X);
      const out = full([40, 16], 7);
      direct(X, 3, out, cfg(platform));
      for (let a = 0; a < 40; a++) {
        for (let b = 0; b < 16; b++) {
          const want = a < 32 ? (b < Math.floor(a / 8) * 4 ? xs[a * 16 + b] : 7) : a - 32 < 3 ? -xs[a * 16 + b] : 7;
          expect(rows(out)[a * 16 + b]).toBe(want);
        }
      }
    });
  }

  for (const platform of PLATFORMS) {
    it(`the edge tile of a dynamic dimension: validShape [min(64, M - i), 64], one compile for every M (${platform})`, () => {
      dynRows.clearCache();
      for (const m of [150, 64, 7]) {
        const X = randn([m, C], { seed: m });
        const out = zeros([m, 1]);
        dynRows(X, out, cfg(platform));
        const xs = rows(X);
        for (let r = 0; r < m; r++) expect(rows(out)[r]).toBe(Math.max(...Array.from(xs.subarray(r * C, r * C + C))));
      }
      expect(dynRows.cacheSize).toBe(1);
    });
  }

  for (const platform of PLATFORMS) {
    it(`Math.max and Math.min of scalars as extents (${platform})`, () => {
      const X = randn([8, 16], { seed: 4 });
      for (const k of [2, 7, 12]) {
        const out = full([8, 16], 6);
        clamped(X, k, out, cfg(platform));
        const vr = Math.max(k - 5, 0), vc = Math.min(k * 2, 16);
        for (let a = 0; a < 8; a++) for (let b = 0; b < 16; b++) expect(rows(out)[a * 16 + b]).toBe(a < vr && b < vc ? rows(X)[a * 16 + b] : 6);
      }
    });
  }

  it("compiles once for every runtime extent (one cache entry across n)", () => {
    const X = randn([R, C], { seed: 1 });
    edgeRows.clearCache();
    for (const n of [10, 100, 200]) edgeRows(X, n, zeros([R, C]), zeros([R, 1]), cfg("cpu"));
    expect(edgeRows.cacheSize).toBe(1);
  });
});

describe("runtime validShape: errors", () => {
  for (const platform of PLATFORMS) {
    it(`an extent outside [0, tile rows] fails at run time with the load's location (${platform})`, () => {
      const X = randn([40, 16], { seed: 5 });
      for (const [k, shown] of [[9, 9], [-1, -1]]) {
        let err: unknown;
        try { direct(X, k, zeros([40, 16]), cfg(platform)); } catch (e) { err = e; }
        expect(err).toBeInstanceOf(TsptoRuntimeError);
        expect((err as TsptoRuntimeError).code).toBe("E_KERNEL");
        expect((err as Error).message).toContain(`load validShape [${shown}, 16] does not fit the tile shape [8, 16] (axis 0)`);
        // the location of the load: in the message (cpu) or as the error's span (interp)
        if (platform === "cpu") expect((err as Error).message).toContain(`valid_runtime.test.ts:86:21: load validShape [${shown}, 16]`);
        else expect((err as TsptoRuntimeError).span).toMatchObject({ line: 86, col: 21 });
      }
    });

    it(`the window check covers the valid region: a valid edge tile passes, one past the tensor fails (${platform})`, () => {
      const X = randn([R, C], { seed: 2 });
      let err: unknown;
      // n = 230: the last tile (row 192) holds 38 valid rows, past the 200 rows of x
      try { edgeRows(X, 230, zeros([R, C]), zeros([R, 1]), cfg(platform)); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoRuntimeError);
      expect((err as Error).message).toContain("load window [192, 0] + [38, 64] is outside");
      expect((err as Error).message).toContain("of shape [200, 64] (axis 0)");
    });
  }

  it("an extent must be an integer scalar", () => {
    const bad = pl.jit(function badExtent(x: pl.Tensor, s: pl.Scalar<pl.FP32>, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        pl.store(pl.load(x, [0, 0], [8, 8], { validShape: [s, 8] }), [0, 0], out);
      });
      return out;
    });
    expect(() => bad.lower(zeros([8, 8]), 1.5, zeros([8, 8]))).toThrow(TsptoTypeError);
    expect(() => bad.lower(zeros([8, 8]), 1.5, zeros([8, 8]))).toThrow(/validShape extents must be integers or integer scalars .*extent 1 of \[\?, 8\] is Scalar<float32>/);
  });

  it("a constant extent outside the tile is still a compile error", () => {
    const bad = pl.jit(function badConst(x: pl.Tensor, n: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        pl.store(pl.load(x, [0, 0], [8, 8], { validShape: [n, 9] }), [0, 0], out);
      });
      return out;
    });
    expect(() => bad.lower(zeros([8, 8]), 1, zeros([8, 8]))).toThrow(/validShape \[\?, 9\] must have the tile's rank and fit in shape \[8, 8\]/);
  });

  it("cuda rejects a runtime validShape with E_DYNAMIC naming it", () => {
    const p = edgeRows.lower(randn([R, C]), 100, zeros([R, C]), zeros([R, 1]));
    let err: unknown;
    try { generateCuda(p); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_DYNAMIC");
    expect((err as Error).message).toContain(`a runtime validShape (["?", 64]) is not supported on the cuda platform yet`);
  });
});

describe("runtime validShape: IR", () => {
  const roundTrip = (p: Program) => {
    const back = parseProgramText(p.asText());
    expect(programsEqual(p, back)).toBeNull();
  };

  it("prints the extents' expressions and a runtime type; the text parses back equal", () => {
    const p = edgeRows.lower(randn([R, C]), 100, zeros([R, C]), zeros([R, 1]));
    const text = p.asText();
    expect(text).toContain("pl.load(x, [i, 0], [64, 64], { validShape: [Math.min(64, n - i), 64] })");
    expect(text).toContain(`validShape: ["?", 64]`);
    expect(text).toContain(`validShape: ["?", 1]`); // the row sum keeps the valid rows
    roundTrip(p);
    roundTrip(carried.lower(randn([R, C]), 100, zeros([T, C])));
    roundTrip(shapes.lower(randn([M, K]), randn([K, N]), 3, 4, zeros([K, M]), zeros([M, N]), zeros([1, K]), zeros([M, K]), zeros([M, 1])));
  });

  it("constant extents keep the static form", () => {
    const st = pl.jit(function staticValid(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const V = 5;
        pl.store(pl.load(x, [0, 0], [8, 8], { validShape: [V, 8] }), [0, 0], out);
      });
      return out;
    });
    const p = st.lower(zeros([8, 8]), zeros([8, 8]));
    const load = p.functions.flatMap((fn) => fn.body).find((s) => s.kind === "assign" && s.value.kind === "call" && s.value.op === "tile.load");
    const call = (load as { value: Call }).value;
    expect(call.args.length).toBe(2);
    expect(call.attrs.validShape).toEqual([5, 8]);
    expect(p.asText()).toContain("{ validShape: [5, 8] }");
  });

  it("passes build runtime extents with dimsOperand and scalar.min; a folded one prints as pl.const and round-trips", () => {
    const p = edgeRows.lower(randn([R, C]), 100, zeros([R, C]), zeros([R, 1]));
    // replace the load's extent by a constant (what folding an inlined argument leaves)
    const text = p.asText().replace("Math.min(64, n - i)", "pl.const(17, pl.INT64)");
    const folded = parseProgramText(text);
    expect(folded.asText()).toContain("{ validShape: [pl.const(17, pl.INT64), 64] }");
    roundTrip(folded);
    // a pass-built load with min(64, n - i)
    const x = mkVar("x", tensorT([R, C], "float32")), n = mkVar("n", scalarT("int64")), i = mkVar("i", INDEX);
    const sub = mkCall("scalar.sub", [n, i], {}, INDEX);
    const min = mkCall("scalar.min", [mkConst(64), sub], {}, inferCall(getOp("scalar.min"), [mkConst(64), sub], {}, NO_SPAN));
    const { attr, list } = dimsOperand([min, C]);
    expect(attr).toEqual(["?", C]);
    const args: Expr[] = [x, mkList([i, mkConst(0)]), list!];
    const t = inferCall(getOp("tile.load"), args, { shape: [T, C], validShape: attr }, NO_SPAN);
    expect(t).toMatchObject({ kind: "tile", shape: [T, C], validShape: ["?", C] });
  });
});

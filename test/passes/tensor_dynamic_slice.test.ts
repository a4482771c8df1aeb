// Tensor-level pl.slice of run-time extent (API.md: "On tensors, slice's shape and offset may
// hold run-time expressions (pl.dim(x, 0), scalar parameters, loop indices)"): a head's column
// window of a dynamic-length cache, a prefix of n rows, a window per loop iteration; as operands
// of elementwise expressions, reductions (whole values and inside expressions) and matmul (bTrans,
// a run-time K); the run-time window check (E_KERNEL with the window and file:line:col) and the
// compile-time errors. On cpu and interp against independent JS formulas.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ir, pl, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { TsptoError } from "../../src/ir/index.js";

const FILE = fileURLToPath(import.meta.url);
const PLATFORMS = ["cpu", "interp"] as const;
const cfgOf = (platform: string) => new RunConfig({ platform });
const f32 = (t: HostTensor) => t.data as Float32Array;
/** 1-based line and column of `token` on the line holding `marker`. */
function where(marker: string, token: string): string {
  const lines = readFileSync(FILE, "utf8").split(/\r?\n/);
  const i = lines.findIndex((l) => l.includes(marker));
  return `${FILE}:${i + 1}:${lines[i].indexOf(token) + 1}`;
}
function caught(f: () => unknown): TsptoError {
  try { f(); } catch (e) { if (e instanceof TsptoError) return e; throw e; }
  throw new Error("no error");
}
function maxRel(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let w = 0;
  for (let i = 0; i < want.length; i++) w = Math.max(w, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  return w;
}

const HEADS = 4, HD = 16, D = HEADS * HD;
// per head h: the [L, 16] column window of k, scores q_h · k_hᵀ · scale into row h of s
const headScores = pl.jit(function headScores(q: pl.Tensor<[1, 64], pl.FP32>, k: pl.Tensor<["L", 64], pl.FP32>, s: pl.Out<pl.Tensor<[4, "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const h of pl.range(4)) {
      const qh = pl.slice(q, [1, 16], [0, 16 * h]);
      const kh = pl.slice(k, [pl.dim(k, 0), 16], [0, 16 * h]);
      pl.assemble(s, pl.mul(pl.matmul(qh, kh, { bTrans: true }), 0.25), [h, 0]);
    }
  });
});
// the last n rows of x plus one, at the top of out (a scalar-parameter extent and offset)
const tailRows = pl.jit(function tailRows(x: pl.Tensor<[64, 32], pl.FP32>, n: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<[64, 32], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(pl.slice(x, [n, 32], [64 - n, 0]), 1.0));  // MARK:tailRows
  });
});
// a loop index extent: row i of out = the sum of the first i + 1 rows of x (a column reduction of a window)
const prefixSums = pl.jit(function prefixSums(x: pl.Tensor<[40, 24], pl.FP32>, out: pl.Out<pl.Tensor<[40, 24], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(40)) {
      pl.assemble(out, pl.colSum(pl.slice(x, [i + 1, 24], [0, 0])), [i, 0]);
    }
  });
});
// matmul over a run-time K: p[1, n] @ v[n, 16] for the first n rows of v's column window, and a
// softmax over the window's row first (a reduction inside the expression along the run-time axis)
const attendPrefix = pl.jit(function attendPrefix(s: pl.Tensor<[1, 200], pl.FP32>, v: pl.Tensor<[200, 64], pl.FP32>, n: pl.Scalar<pl.INT64>,
  p: pl.Out<pl.Tensor<[1, 200], pl.FP32>>, out: pl.Out<pl.Tensor<[1, 16], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const sn = pl.slice(s, [1, n], [0, 0]);
    const e = pl.exp(pl.rowExpandSub(sn, pl.rowMax(sn)));
    pl.assign(p, pl.rowExpandDiv(e, pl.rowSum(e)));
    pl.assign(out, pl.matmul(pl.slice(p, [1, n], [0, 0]), pl.slice(v, [n, 16], [0, 32])));
  });
});
const windowRowMax = pl.jit(function windowRowMax(x: pl.Tensor<["R", "C"], pl.FP32>, c0: pl.Scalar<pl.INT64>, w: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<["R", 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.rowMax(pl.slice(x, [pl.dim(x, 0), w], [0, c0]))); });
});

describe("tensor-level pl.slice of run-time extent", () => {
  for (const platform of PLATFORMS) {
    const cfg = cfgOf(platform);

    it(`${platform}: a head's [L, 16] column window of a dynamic-length k as a bTrans matmul operand; one compile for every L`, () => {
      headScores.clearCache();
      for (const L of [1, 7, 130]) {
        const q = randn([1, D], { seed: L }), k = randn([L, D], { seed: L + 1 }), s = zeros([HEADS, L]);
        headScores(q, k, s, cfg);
        const want: number[] = [];
        for (let h = 0; h < HEADS; h++) for (let j = 0; j < L; j++) {
          let t = 0;
          for (let c = 0; c < HD; c++) t += f32(q)[h * HD + c] * f32(k)[j * D + h * HD + c];
          want.push(t * 0.25);
        }
        expect(maxRel(f32(s), want)).toBeLessThan(1e-5);
      }
      expect(headScores.cacheSize).toBe(1);
    });

    it(`${platform}: a scalar parameter as extent and offset (the last n rows), written at the top of the target`, () => {
      const x = randn([64, 32], { seed: 3 });
      for (const n of [1, 9, 64]) {
        const out = zeros([64, 32]);
        tailRows(x, n, out, cfg);
        const want = Array.from({ length: 64 * 32 }, (_, e) => (e < n * 32 ? Math.fround(f32(x)[(64 - n) * 32 + e] + 1) : 0));
        expect(Array.from(f32(out))).toEqual(want);
      }
    });

    it(`${platform}: a loop index extent: a column reduction of a window that grows each iteration`, () => {
      const x = randn([40, 24], { seed: 4 }), out = zeros([40, 24]);
      prefixSums(x, out, cfg);
      const want: number[] = [];
      for (let i = 0; i < 40; i++) for (let c = 0; c < 24; c++) { let t = 0; for (let r = 0; r <= i; r++) t += f32(x)[r * 24 + c]; want.push(t); }
      expect(maxRel(f32(out), want)).toBeLessThan(1e-5);
    });

    it(`${platform}: softmax over a run-time width and a matmul contracting over it`, () => {
      const s = randn([1, 200], { seed: 5 }), v = randn([200, 64], { seed: 6 });
      for (const n of [1, 33, 200]) {
        const p = zeros([1, 200]), out = zeros([1, 16]);
        attendPrefix(s, v, n, p, out, cfg);
        const row = Array.from(f32(s).subarray(0, n));
        const m = Math.max(...row), ez = row.map((x) => Math.exp(x - m)), z = ez.reduce((a, b) => a + b, 0);
        const pr = ez.map((x) => x / z);
        expect(maxRel(f32(p).subarray(0, n), pr)).toBeLessThan(1e-5);
        expect(Array.from(f32(p).subarray(n))).toEqual(new Array(200 - n).fill(0));
        const want = Array.from({ length: 16 }, (_, c) => pr.reduce((a, w, j) => a + w * f32(v)[j * 64 + 32 + c], 0));
        expect(maxRel(f32(out), want)).toBeLessThan(1e-4);
      }
    });

    it(`${platform}: a whole-value reduction of a window of run-time width and offset`, () => {
      const x = randn([5, 700], { seed: 7 });
      for (const [c0, w] of [[0, 1], [3, 600], [99, 601]]) {
        const out = zeros([5, 1]);
        windowRowMax(x, c0, w, out, cfg);
        const want = Array.from({ length: 5 }, (_, r) => Math.max(...Array.from(f32(x).subarray(r * 700 + c0, r * 700 + c0 + w))));
        expect(Array.from(f32(out))).toEqual(want);
      }
    });

    it(`${platform}: a window outside its tensor, or an extent below 1, is an E_KERNEL with the window and the slice's location`, () => {
      const x = randn([64, 32], { seed: 8 });
      const e1 = caught(() => tailRows(x, 65, zeros([64, 32]), cfg));
      expect(e1.code).toBe("E_KERNEL");
      expect(e1.message).toContain("slice window [-1, 0] + [65, 32] is outside");
      expect(e1.message).toContain("of shape [64, 32] (axis 0)");
      expect(e1.message).toContain(where("MARK:tailRows", "pl.slice"));
      const e2 = caught(() => tailRows(x, 0, zeros([64, 32]), cfg));
      expect(e2.code).toBe("E_KERNEL");
      expect(e2.message).toContain("slice extent 0 on axis 0 (shape [0, 32]) must be an integer >= 1");
      expect(e2.message).toContain(where("MARK:tailRows", "pl.slice"));
      const e3 = caught(() => windowRowMax(randn([5, 700]), 100, 601, zeros([5, 1]), cfg));
      expect(e3.message).toContain("slice window [0, 100] + [5, 601] is outside");
    });
  }

  it("the slice's result type names its run-time extents; the printed program parses back to an equal one", () => {
    const p = attendPrefix.lower(randn([1, 200]), randn([200, 64]), 3, zeros([1, 200]), zeros([1, 16]));
    const text = headScores.lower(randn([1, 64]), randn([5, 64]), zeros([4, 5])).asText();
    expect(text).toContain("pl.checkWindow(k, [pl.dim(k, 0), 16], [0, 16 * h])");
    const front = ir.parse(p.asText());
    expect(front.structurallyEqual(p)).toBe(true);
  });

  it("compile-time errors: an extent that is not an integer, a slice of an expression, two extents spelled alike that differ", () => {
    const floaty = pl.jit(function floaty(x: pl.Tensor<[8, 8], pl.FP32>, n: pl.Scalar<pl.FP32>, out: pl.Out<pl.Tensor<[8, 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.slice(x, [n, 8], [0, 0])); });  // MARK:floaty
    });
    const e1 = caught(() => floaty.lower(randn([8, 8]), 1.5, zeros([8, 8])));
    expect(e1.code).toBe("E_TYPE");
    expect(e1.message).toContain("pl.slice: extent 1 of the slice shape must be an integer or an integer scalar (pl.dim(t, axis), a pl.Scalar<pl.INT64> parameter, a loop index), got Scalar<float32>");
    expect(e1.message).toContain(where("MARK:floaty", "pl.slice"));
    const ofExpr = pl.jit(function ofExpr(x: pl.Tensor<[8, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.slice(pl.mul(x, 2.0), [4, 8], [0, 0])); });
    });
    const e2 = caught(() => ofExpr.lower(randn([8, 8]), zeros([4, 8])));
    expect(e2.code).toBe("E_TENSOR_FORM");
    expect(e2.message).toContain("pl.slice on tensors takes a tensor variable");
    const rebound = pl.jit(function rebound(x: pl.Tensor<[64, 8], pl.FP32>, n: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<[64, 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const a = pl.slice(x, [n, 8], [0, 0]);
        for (const n of pl.range(1, 3)) {  // another n, spelled alike
          pl.assign(out, pl.add(a, pl.slice(x, [n, 8], [0, 0])));
        }
      });
    });
    const e3 = caught(() => rebound.lower(randn([64, 8]), 4, zeros([64, 8])));
    expect(e3.code).toBe("E_DYNAMIC");
    expect(e3.message).toContain('two slices have extents spelled {n} that are different values');
    const rank = pl.jit(function rank(x: pl.Tensor<[8, 8], pl.FP32>, out: pl.Out<pl.Tensor<[8, 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.slice(x, [pl.dim(x, 0)], [0, 0])); });
    });
    expect(caught(() => rank.lower(randn([8, 8]), zeros([8, 8]))).message).toContain("pl.slice: slice shape has 1 extents but tensor 'x' has rank 2");
  });
});

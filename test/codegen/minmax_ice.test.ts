// maximum / minimum of a value and its own abs (issue 19 item 9). The generated C++ settled
// a tie of tspto_fmin / tspto_fmax (equal operands: only a zero's sign can differ) with
// `std::signbit(a) ? a : b`; once a is fabs(v) g++ 12 knows that sign, and at -O3 with AVX2
// or AVX-512 (-march=native here) its vectorized loop hits an internal compiler error
// (FRE, eliminate_stmt, tree-ssa-sccvn.cc:6459) on minimum(abs(v), v) of a partial tile whose
// abs is kept in scratch: a compile failure the user could not work around. The tie is now
// settled on the bits (min ORs them, max ANDs them). Checked on cpu and interp against the
// formula on every kind of float: ±0 (the tie), NaN, ±Infinity, negatives and positives.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, tensor, zeros } from "tspto";

const PLATFORMS = ["cpu", "interp"] as const;
const cfg = (platform: string) => new RunConfig({ platform });

/** abs(v) is used twice, so it is a tile of its own in scratch (the shape g++ failed on). */
const minAbs = pl.jit(function minAbs(x: pl.Tensor, out: pl.Out<pl.Tensor>, sum: pl.Out<pl.Tensor>, rows: number, cols: number, vr: number, vc: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const v = pl.load(x, [0, 0], [rows, cols], { validShape: [vr, vc] });
    const a = pl.abs(v);
    const m = pl.minimum(a, v);
    pl.store(m, [0, 0], out);
    pl.store(pl.add(a, m), [0, 0], sum);
  });
  return out;
});

const maxAbs = pl.jit(function maxAbs(x: pl.Tensor, out: pl.Out<pl.Tensor>, sum: pl.Out<pl.Tensor>, rows: number, cols: number, vr: number, vc: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const v = pl.load(x, [0, 0], [rows, cols], { validShape: [vr, vc] });
    const a = pl.abs(v);
    const m = pl.maximum(v, a);
    pl.store(m, [0, 0], out);
    pl.store(pl.sub(m, a), [0, 0], sum);
  });
  return out;
});

const SPECIAL = [0, -0, NaN, Infinity, -Infinity, -1.5, 2.25, -3, 0.5, -0.125, 7];
const jsMin = (p: number, q: number) => Math.min(p, q);
const jsMax = (p: number, q: number) => Math.max(p, q);

describe("minimum / maximum of a value and its abs compile and are exact (no g++ internal compiler error)", () => {
  for (const platform of PLATFORMS) {
    it(`${platform}: minimum(abs(v), v) and maximum(v, abs(v)) of partial tiles, ±0 / NaN / ±Infinity`, async () => {
      const shapes = [[8, 16, 7, 13], [4, 8, 3, 5], [16, 16, 15, 13], [32, 64, 31, 61]];
      // the eight programs built off the event loop first (seconds of g++ together)
      await Promise.all(shapes.flatMap(([rows, cols, vr, vc]) => [minAbs, maxAbs].map((k) =>
        k.compileAsync(zeros([rows, cols]), zeros([rows, cols]), zeros([rows, cols]), rows, cols, vr, vc, cfg(platform)))));
      for (const [rows, cols, vr, vc] of shapes) {
        const n = rows * cols;
        const xv = Array.from({ length: n }, (_, i) => SPECIAL[(i * 7) % SPECIAL.length]);
        const x = tensor(xv, { shape: [rows, cols] });
        const valid = (i: number) => Math.floor(i / cols) < vr && i % cols < vc;
        for (const [k, f, g] of [[minAbs, jsMin, (a: number, m: number) => a + m], [maxAbs, jsMax, (a: number, m: number) => m - a]] as const) {
          const out = zeros([rows, cols]), sum = zeros([rows, cols]);
          k(x, out, sum, rows, cols, vr, vc, cfg(platform));
          const wantOut = xv.map((v, i) => (valid(i) ? (k === minAbs ? f(Math.abs(v), v) : f(v, Math.abs(v))) : 0));
          const wantSum = xv.map((v, i) => (valid(i) ? Math.fround(g(Math.abs(v), wantOut[i])) : 0));
          const what = `${k.name} [${rows}, ${cols}] valid [${vr}, ${vc}]`;
          // toEqual compares with Object.is: -0 and 0 differ, NaN equals NaN
          expect(Array.from(out.data as Float32Array), what).toEqual(wantOut);
          expect(Array.from(sum.data as Float32Array), `${what} (the abs tile)`).toEqual(wantSum);
        }
      }
    });
  }

  it("the ties: minimum(-0, 0) is -0 and maximum(-0, 0) is 0, in either order (cpu == interp)", () => {
    for (const platform of PLATFORMS) {
      // v = [-0, 0, -0, 0]: abs(v) = 0 everywhere, so each element is a tie
      const x = tensor([-0, 0, -0, 0, 1, -1, 0, -0], { shape: [1, 8] });
      const out = zeros([1, 8]), sum = zeros([1, 8]);
      minAbs(x, out, sum, 1, 8, 1, 8, cfg(platform));
      expect(Array.from(out.data as Float32Array), platform).toEqual([-0, 0, -0, 0, 1, -1, 0, -0]);
      maxAbs(x, out, sum, 1, 8, 1, 8, cfg(platform));
      expect(Array.from(out.data as Float32Array), platform).toEqual([0, 0, 0, 0, 1, 1, 0, 0]);
    }
  });
});

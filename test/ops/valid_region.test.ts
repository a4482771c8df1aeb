// A run-time valid region bounds the work on a tile (docs/semantics.md, Partial tiles): tiles
// loaded with validShape [L, 64] out of [1024, 64] (L a run-time scalar, 0 included) fed to
// elementwise chains, row and column reductions, matmuls as the q·kᵀ and p·v of one attention
// step, and stores — cpu against interp for L in {0, 1, 7, 64, 1000, 1024}, and both against an
// independent JavaScript reference that reduces and contracts over the valid region only.
// (test/codegen/valid_region.test.ts shows the pad is not touched at all.)
import { describe, expect, it } from "vitest";
import { pl, RunConfig, full, randn, type HostTensor } from "tspto";

const S = 1024, D = 64;
const LENGTHS = [0, 1, 7, 64, 1000, 1024] as const;
const cfg = (platform: string) => new RunConfig({ platform, fpContract: "off" });
const f = Math.fround;

// elementwise, row / column reductions and stores of a [1024, 64] tile with L valid rows
const rowsKernel = pl.jit(function rowsKernel(x: pl.Tensor, L: pl.Scalar<pl.INT64>, y: pl.InOut<pl.Tensor>, rs: pl.InOut<pl.Tensor>,
  rm: pl.InOut<pl.Tensor>, cs: pl.InOut<pl.Tensor>, cm: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [S, D], { validShape: [L, D] });
    const e = pl.sub(pl.mul(pl.add(t, 1.5), t), 0.25);      // one fused loop over the valid rows
    pl.store(e, [0, 0], y);
    const tmp = pl.createTile([S, D], pl.FP32);
    pl.store(pl.rowSum(e, tmp), [0, 0], rs);
    pl.store(pl.rowMax(t, tmp), [0, 0], rm);                 // no fillpad: only the valid columns are reduced
    pl.store(pl.colSum(e), [0, 0], cs);                      // over the valid rows: 0 when L = 0
    pl.store(pl.colMax(t), [0, 0], cm);                      // -inf when L = 0
  });
  return y;
});

// one decode step of attention over a cache of L valid rows: s = q kᵀ / 8 ([1, 1024], L valid
// columns), a softmax over them, o = p v (K = L)
const attnKernel = pl.jit(function attnKernel(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, L: pl.Scalar<pl.INT64>, scores: pl.InOut<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const qt = pl.load(q, [0, 0], [1, D]);
    const kt = pl.load(k, [0, 0], [S, D], { validShape: [L, D] });
    const vt = pl.load(v, [0, 0], [S, D], { validShape: [L, D] });
    const s = pl.mul(pl.matmul(qt, kt, { bTrans: true }), 0.125);
    pl.store(s, [0, 0], scores);
    const tmp = pl.createTile([1, S], pl.FP32);
    const e = pl.exp(pl.rowExpandSub(s, pl.rowMax(s, tmp)));
    const p = pl.rowExpandDiv(e, pl.rowSum(e, tmp));
    pl.store(pl.matmul(p, vt), [0, 0], out);
  });
  return out;
});

const arr = (t: HostTensor) => t.data as Float32Array;
/** The lanes of a row sum (src/ir/ops/reduce.ts): element j into lane j % 8, fp64, combined pairwise. */
function laneSum(xs: readonly number[]): number {
  const l = new Array<number>(8).fill(0);
  xs.forEach((x, j) => { l[j % 8] += x; });
  return f(((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])));
}

describe("a run-time valid region bounds elementwise ops, reductions, matmul and stores", () => {
  const X = randn([S, D], { seed: 41 }), xs = arr(X);
  const run = (platform: string, L: number) => {
    const y = full([S, D], -3), rs = full([S, 1], -4), rm = full([S, 1], -5), cs = full([1, D], -6), cm = full([1, D], -7);
    rowsKernel(X, L, y, rs, rm, cs, cm, cfg(platform));
    return { y: arr(y), rs: arr(rs), rm: arr(rm), cs: arr(cs), cm: arr(cm) };
  };
  for (const L of LENGTHS) {
    it(`elementwise, rowSum / rowMax, colSum / colMax and stores at L = ${L}: cpu = interp = reference`, () => {
      const cpu = run("cpu", L), interp = run("interp", L);
      for (const k of ["y", "rs", "rm", "cs", "cm"] as const) expect(Array.from(cpu[k]), k).toEqual(Array.from(interp[k]));
      const e = (r: number, c: number) => { const t = xs[r * D + c]; return f(f(f(t + 1.5) * t) - 0.25); };
      for (let r = 0; r < S; r++) {
        for (let c = 0; c < D; c++) if (cpu.y[r * D + c] !== (r < L ? e(r, c) : -3)) expect.fail(`y[${r}, ${c}]`);
        const row = Array.from({ length: D }, (_, c) => e(r, c));
        expect(cpu.rs[r]).toBe(r < L ? laneSum(row) : -4);
        expect(cpu.rm[r]).toBe(r < L ? Math.max(...Array.from(xs.subarray(r * D, r * D + D))) : -5);
      }
      for (let c = 0; c < D; c++) {
        let s = 0, m = -Infinity;
        for (let r = 0; r < L; r++) { s += e(r, c); m = Math.max(m, xs[r * D + c]); }
        expect(cpu.cs[c]).toBe(f(s));
        expect(cpu.cm[c]).toBe(m);
      }
    });
  }

  const Q = randn([1, D], { seed: 42 }), K = randn([S, D], { seed: 43 }), V = randn([S, D], { seed: 44 });
  const qs = arr(Q), ks = arr(K), vs = arr(V);
  for (const L of LENGTHS) {
    it(`attention over a [1024, 64] cache with validShape [L, 64], L = ${L}: q·kᵀ and p·v contract over the valid rows`, () => {
      const res = ["cpu", "interp"].map((platform) => {
        const scores = full([1, S], 9), out = full([1, D], 9);
        attnKernel(Q, K, V, L, scores, out, cfg(platform));
        return { s: arr(scores), o: arr(out) };
      });
      // q·kᵀ in fp32 in k order (fpContract off): bit-identical on both platforms and to the reference
      const s = Array.from({ length: L }, (_, j) => { let t = 0; for (let c = 0; c < D; c++) t = f(t + f(qs[c] * ks[j * D + c])); return f(t * 0.125); });
      for (const { s: got } of res) for (let j = 0; j < S; j++) expect(got[j]).toBe(j < L ? s[j] : 9);
      // the softmax and p·v: exp within 1 ulp on cpu, so within 1e-6 of interp and of the float64 reference
      const mx = Math.max(...s), ex = s.map((x) => Math.exp(x - mx)), z = ex.reduce((a, b) => a + b, 0);
      const want = Array.from({ length: D }, (_, c) => { let t = 0; for (let j = 0; j < L; j++) t += (ex[j] / z) * vs[j * D + c]; return t; });
      for (let c = 0; c < D; c++) {
        expect(Math.abs(res[0].o[c] - res[1].o[c])).toBeLessThanOrEqual(1e-6);
        expect(Math.abs(res[1].o[c] - want[c])).toBeLessThanOrEqual(1e-5);
      }
      if (L === 0) expect(Array.from(res[0].o)).toEqual(new Array(D).fill(0)); // nothing to contract: 0
    });
  }
  it("one compile serves every L", () => {
    expect(rowsKernel.cacheSize).toBe(2); // cpu and interp
    expect(attnKernel.cacheSize).toBe(2);
  });
});

// Row reductions over partially valid columns (run-time and static): only the valid columns are
// reduced — rowMax of all-negative data is its maximum, not the 0 of a zero pad (as before) —
// and an empty extent gives the identity: sum 0, prod 1, max -inf, min +inf, argmax 0.
const RR = 8, RC = 40;
const partialRows = pl.jit(function partialRows(x: pl.Tensor, c: pl.Scalar<pl.INT64>, o: pl.Out<pl.Tensor>, os: pl.Out<pl.Tensor>, oi: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [RR, RC], { validShape: [RR, c] });
    const tmp = pl.createTile([RR, RC], pl.FP32);
    pl.store(pl.rowMax(t, tmp), [0, 0], o);
    pl.store(pl.rowMin(t, tmp), [0, 1], o);
    pl.store(pl.rowSum(t, tmp), [0, 2], o);
    pl.store(pl.rowProd(t), [0, 3], o);
    pl.store(pl.rowArgmin(t), [0, 0], oi);
    const s = pl.load(x, [0, 0], [RR, RC], { validShape: [RR, 13] });   // a static partial extent
    pl.store(pl.rowMax(s, tmp), [0, 0], os);
    pl.store(pl.rowArgmax(s), [0, 1], oi);
  });
  return o;
});

describe("row reductions reduce the valid columns only (the identity when there are none)", () => {
  // all-negative rows: a zero pad would win every max
  const X = randn([RR, RC], { seed: 45 }), xs = arr(X).map((v) => -Math.abs(v) - 0.01);
  const Xn = full([RR, RC], 0);
  arr(Xn).set(xs);
  for (const c of [0, 3, 13, RC]) {
    it(`validShape [8, ${c}] (run time) and [8, 13] (static), cpu and interp`, () => {
      const got = ["cpu", "interp"].map((platform) => {
        const o = full([RR, 4], 9), os = full([RR, 1], 9), oi = full([RR, 2], 9, "int32");
        partialRows(Xn, c, o, os, oi, cfg(platform));
        return { o: Array.from(arr(o)), os: Array.from(arr(os)), oi: Array.from(oi.data as Int32Array) };
      });
      expect(got[0]).toEqual(got[1]);
      for (let r = 0; r < RR; r++) {
        const row = Array.from(xs.slice(r * RC, r * RC + c)), first13 = Array.from(xs.slice(r * RC, r * RC + 13));
        const prod = row.reduce((a, b) => a * b, 1);
        expect(got[0].o.slice(r * 4, r * 4 + 4)).toEqual([
          c ? Math.max(...row) : -Infinity, c ? Math.min(...row) : Infinity, laneSum(row), f(prod)]);
        expect(got[0].os[r]).toBe(Math.max(...first13));
        expect(got[0].oi.slice(r * 2, r * 2 + 2)).toEqual([c ? row.indexOf(Math.min(...row)) : 0, first13.indexOf(Math.max(...first13))]);
      }
    });
  }
});

// Tensor-level reductions, matmul and broadcasting inside pl.at, lowered to tiles with partial
// edge tiles, on cpu and interp, against independent JavaScript formulas.
import { describe, expect, it } from "vitest";
import { castToDType } from "../../src/ir/dtype.js";
import { pl, RunConfig, randn, zeros, tensor, assertClose, TsptoCompileError, TsptoTypeError } from "tspto";

const PLATFORMS = ["cpu", "interp"] as const;
// The references sum fp32 products rounded separately: compile with fpContract "off" (test/ops/fp_contract.test.ts covers "fast").
const cfg = (platform: string) => new RunConfig({ platform, fpContract: "off" });
const f = Math.fround;

const reduceAll = pl.jit(function reduceAll(x: pl.Tensor, rs: pl.Out<pl.Tensor>, rm: pl.Out<pl.Tensor>, ca: pl.Out<pl.Tensor>, rp: pl.Out<pl.Tensor>, cm: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(rs, pl.rowSum(x));
    pl.assign(rm, pl.rowMax(pl.mul(x, 2)));
    pl.assign(ca, pl.colArgmax(x));
    const p = pl.rowProd(pl.add(pl.mul(x, 0.01), 1));
    pl.assign(rp, p);
    pl.assign(cm, pl.colMin(x));
  });
  return rs;
});

const mmTensor = pl.jit(function mmTensor(a: pl.Tensor, b: pl.Tensor, bt: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(c, pl.matmul(a, b));
    pl.assign(d, pl.matmul(a, bt, { bTrans: true, outDtype: pl.FP16 }));
  });
  return c;
});

const mmAccBias = pl.jit(function mmAccBias(a: pl.Tensor, b: pl.Tensor, acc: pl.Tensor, bias: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(c, pl.matmulAcc(acc, a, b));
    pl.assign(d, pl.matmulBias(a, b, bias));
  });
  return c;
});

const bcast = pl.jit(function bcast(x: pl.Tensor, row: pl.Tensor, col: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.div(pl.sub(x, row), pl.add(col, 2.0)));
  });
  return out;
});

const expandTensor = pl.jit(function expandTensor(x: pl.Tensor, r: pl.Tensor, c: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.colExpandMul(pl.prelu(pl.rowExpandSub(x, r), r), c));
  });
  return out;
});
const expdifTensor = pl.jit(function expdifTensor(x: pl.Tensor, r: pl.Tensor, c: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o1, pl.rowExpandExpdif(x, r));
    pl.assign(o2, pl.add(pl.colExpandExpdif(x, c), pl.rowExpand(x, r)));
  });
  return o1;
});

const transposeTensor = pl.jit(function transposeTensor(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.transpose(x, 0, 1));
  });
  return out;
});

const nested = pl.jit(function nested(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(pl.rowArgmax(x), 1)); // MARK:nested (row/column reductions may stand here: test/passes/tensor_row_reductions.test.ts)
  });
  return out;
});

const M = 1009, N = 37; // prime rows: partial row tiles
describe.each(PLATFORMS)("tensor-level forms on %s", (platform) => {
  it("row/col reductions and arg-reductions of tensors and expressions", () => {
    const X = randn([M, N], { seed: 5 });
    const x = X.toArray();
    const rs = zeros([M, 1]), rm = zeros([M, 1]), ca = zeros([1, N], "int32"), rp = zeros([M, 1]), cm = zeros([1, N]);
    reduceAll(X, rs, rm, ca, rp, cm, cfg(platform));
    const row = (r: number) => x.slice(r * N, (r + 1) * N);
    const col = (c: number) => Array.from({ length: M }, (_, r) => x[r * N + c]);
    assertClose(rs, tensor(Array.from({ length: M }, (_, r) => row(r).reduce((s, v) => s + v, 0)), { shape: [M, 1] }), { rtol: 1e-6, atol: 1e-6 });
    expect(rm.toArray()).toEqual(Array.from({ length: M }, (_, r) => Math.max(...row(r).map((v) => f(2 * v)))));
    expect(ca.toArray()).toEqual(Array.from({ length: N }, (_, c) => { const v = col(c); return v.indexOf(Math.max(...v)); }));
    assertClose(rp, tensor(Array.from({ length: M }, (_, r) => row(r).reduce((p, v) => p * f(f(v * 0.01) + 1), 1)), { shape: [M, 1] }), { rtol: 1e-6 });
    expect(cm.toArray()).toEqual(Array.from({ length: N }, (_, c) => Math.min(...col(c))));
  });

  it("matmul of tensors: auto-tiled, K accumulated in tiles (partial tiles on every axis)", async () => {
    const m = 131, k = 257, n = 139; // primes: partial tiles on M, N and K
    const A = randn([m, k], { seed: 6 }), B = randn([k, n], { seed: 7 }), BT = randn([n, k], { seed: 8 });
    const c = zeros([m, n]), d = zeros([m, n], "float16");
    await mmTensor.compileAsync(A, B, BT, c, d, cfg(platform)); // (seconds of g++: off the event loop)
    mmTensor(A, B, BT, c, d, cfg(platform));
    const a = A.toArray(), b = B.toArray(), bt = BT.toArray();
    const ref = (bget: (q: number, j: number) => number) => {
      const o: number[] = [];
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) { let s = 0; for (let q = 0; q < k; q++) s = f(s + f(a[i * k + q] * bget(q, j))); o.push(s); }
      return o;
    };
    expect(c.toArray()).toEqual(ref((q, j) => b[q * n + j]));
    // outDtype casts the fp32 sum with cast's default mode, "round" (ties away from zero; SEMANTICS.md)
    expect(d.toArray()).toEqual(ref((q, j) => bt[j * k + q]).map((v) => castToDType(v, "float16", "round")));
  });

  it("matmulAcc and matmulBias of tensors", async () => {
    const m = 131, k = 257, n = 139;
    const A = randn([m, k], { seed: 20 }), B = randn([k, n], { seed: 21 }), ACC = randn([m, n], { seed: 22 }), BIAS = randn([1, n], { seed: 23 });
    const c = zeros([m, n]), d = zeros([m, n]);
    await mmAccBias.compileAsync(A, B, ACC, BIAS, c, d, cfg(platform)); // (seconds of g++: off the event loop)
    mmAccBias(A, B, ACC, BIAS, c, d, cfg(platform));
    const a = A.toArray(), b = B.toArray(), acc = ACC.toArray(), bias = BIAS.toArray();
    const ref = (init: (i: number, j: number) => number) => {
      const o: number[] = [];
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) { let s = init(i, j); for (let q = 0; q < k; q++) s = f(s + f(a[i * k + q] * b[q * n + j])); o.push(s); }
      return o;
    };
    expect(c.toArray()).toEqual(ref((i, j) => acc[i * n + j]));
    expect(d.toArray()).toEqual(ref(() => 0).map((v, i) => f(v + bias[i % n])));
  });

  it("NumPy broadcasting of [M,N] with [1,N] and [M,1]", async () => {
    const X = randn([M, N], { seed: 9 }), R = randn([1, N], { seed: 10 }), C = randn([M, 1], { seed: 11 });
    const out = zeros([M, N]);
    await bcast.compileAsync(X, R, C, out, cfg(platform));
    bcast(X, R, C, out, cfg(platform));
    const x = X.toArray(), r = R.toArray(), c = C.toArray();
    expect(out.toArray()).toEqual(x.map((v, i) => f(f(v - r[i % N]) / f(c[Math.floor(i / N)] + 2))));
  });
});

describe.each(PLATFORMS)("tensor-level broadcasts on %s", (platform) => {
  it("rowExpand*/colExpand*/prelu on tensors are the broadcasting elementwise ops", () => {
    const X = randn([M, N], { seed: 12 }), R = randn([M, 1], { seed: 13 }), C = randn([1, N], { seed: 14 });
    const out = zeros([M, N]);
    expandTensor(X, R, C, out, cfg(platform));
    const x = X.toArray(), r = R.toArray(), c = C.toArray();
    expect(out.toArray()).toEqual(x.map((v, i) => {
      const row = Math.floor(i / N), d = f(v - r[row]);
      return f((d > 0 ? d : f(d * r[row])) * c[i % N]);
    }));
  });
});

describe.each(PLATFORMS)("tensor-level transpose on %s", (platform) => {
  it("transposes a tensor with partial edge tiles", () => {
    const X = randn([M, N], { seed: 15 });
    const out = zeros([N, M]);
    transposeTensor(X, out, cfg(platform));
    const x = X.toArray();
    expect(out.toArray()).toEqual(Array.from({ length: N * M }, (_, k) => x[(k % M) * N + Math.floor(k / M)]));
  });
});

describe.each(PLATFORMS)("tensor-level Expdif and rowExpand on %s", (platform) => {
  it("rowExpandExpdif, colExpandExpdif (exp(t - v)) and rowExpand on tensors", () => {
    const X = randn([M, N], { seed: 16 }), R = randn([M, 1], { seed: 17 }), C = randn([1, N], { seed: 18 });
    const o1 = zeros([M, N]), o2 = zeros([M, N]);
    expdifTensor(X, R, C, o1, o2, cfg(platform));
    const x = X.toArray(), r = R.toArray(), c = C.toArray();
    const ulp = (w: number) => Math.abs(w) * 2 ** -22 * 1.01; // 2 ulp: tspto_expf is within 1 ulp of exp, the reference rounds exp once
    const w1 = x.map((v, i) => f(Math.exp(f(v - r[Math.floor(i / N)]))));
    const w2 = x.map((v, i) => f(f(Math.exp(f(v - c[i % N]))) + r[Math.floor(i / N)]));
    o1.toArray().forEach((g, i) => expect(Math.abs(g - w1[i])).toBeLessThanOrEqual(ulp(w1[i])));
    const e2 = x.map((v, i) => Math.exp(f(v - c[i % N])));
    o2.toArray().forEach((g, i) => expect(Math.abs(g - w2[i])).toBeLessThanOrEqual(ulp(e2[i]) + ulp(w2[i])));
  });
});

describe("tensor-level forms: bad input", () => {
  it("an arg-reduction inside an elementwise expression says to assign it first", () => {
    let err: unknown;
    try { nested(randn([8, 16], { seed: 1 }), zeros([8, 1], "int32")); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_TENSOR_FORM");
    expect((err as TsptoCompileError).message).toContain("pl.rowArgmax: a tensor-level reduction must be the whole value of pl.assign");
    expect((err as TsptoCompileError).message).toMatch(/tensor_forms\.test\.ts:\d+:\d+/);
  });
  it("shapes that do not broadcast", () => {
    let err: unknown;
    try { bcast(randn([8, 16], { seed: 1 }), randn([2, 16], { seed: 2 }), randn([8, 1], { seed: 3 }), zeros([8, 16])); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoTypeError);
    expect((err as TsptoTypeError).message).toContain("pl.sub: shapes do not broadcast: Tensor<[8, 16], float32> and Tensor<[2, 16], float32>");
  });
});

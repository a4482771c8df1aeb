// Products, arg-reductions, the max/min/expdif broadcasts, prelu, transpose, the matmul forms
// (transposed operands, outDtype, matmulAcc with flags, matmulBias, batchMatmul), atomic-add
// stores and dim: each kernel on cpu and interp against an independent JavaScript formula on
// seeded random data (with ties and NaN where the op defines them).
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, tensor, assertClose, type DType } from "tspto";
import { mulberry32 } from "../codegen/helpers.js";

const PLATFORMS = ["cpu", "interp"] as const;
// The references sum fp32 products rounded separately: compile with fpContract "off" (test/ops/fp_contract.test.ts covers "fast").
const cfg = (platform: string) => new RunConfig({ platform, fpContract: "off" });
const f = Math.fround;
const M = 12, N = 20;

const prodArg = pl.jit(function prodArg(a: pl.Tensor, rp: pl.Out<pl.Tensor>, cp: pl.Out<pl.Tensor>, ri: pl.Out<pl.Tensor>, ci: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    pl.store(pl.rowProd(x), [0, 0], rp);
    pl.store(pl.colProd(x), [0, 0], cp);
    pl.store(pl.concat(pl.rowArgmax(x), pl.rowArgmin(x)), [0, 0], ri);
    pl.store(pl.colArgmax(x), [0, 0], ci);
    pl.store(pl.colArgmin(x), [1, 0], ci);
  });
  return rp;
});

const expandMore = pl.jit(function expandMore(a: pl.Tensor, rv: pl.Tensor, cv: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const r = pl.load(rv, [0, 0], [M, 1]);
    const c = pl.load(cv, [0, 0], [1, N]);
    pl.store(pl.rowExpandMax(x, r), [0, 0], out);
    pl.store(pl.rowExpandMin(x, r), [M, 0], out);
    pl.store(pl.rowExpandExpdif(x, r), [2 * M, 0], out);
    pl.store(pl.colExpandMax(x, c), [3 * M, 0], out);
    pl.store(pl.colExpandMin(x, c), [4 * M, 0], out);
    pl.store(pl.colExpandExpdif(x, c), [5 * M, 0], out);
    pl.store(pl.prelu(x, r), [6 * M, 0], out);
  });
  return out;
});

const transposeKernel = pl.jit(function transposeKernel(a: pl.Tensor, b: pl.Tensor, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.transpose(pl.load(a, [0, 0], [M, N]), 0, 1), [0, 0], o2);
    pl.store(pl.transpose(pl.load(b, [0, 0, 0], [2, 3, 5]), 0, 2), [0, 0, 0], o3);
  });
  return o2;
});

const K = 24;
const mmForms = pl.jit(function mmForms(at: pl.Tensor, b: pl.Tensor, bt: pl.Tensor, bias: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>, o4: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(at, [0, 0], [K, M]);   // a stored transposed: [K, M]
    const tb = pl.load(b, [0, 0], [K, N]);
    const tbt = pl.load(bt, [0, 0], [N, K]);  // b stored transposed: [N, K]
    pl.store(pl.matmul(ta, tbt, { aTrans: true, bTrans: true }), [0, 0], o1);
    pl.store(pl.matmul(ta, tb, { aTrans: true, outDtype: pl.FP16 }), [0, 0], o2);
    let acc = pl.matmul(ta, tb, { aTrans: true });
    acc = pl.matmulAcc(acc, ta, tbt, { aTrans: true, bTrans: true });
    pl.store(acc, [0, 0], o3);
    pl.store(pl.matmulBias(pl.transpose(ta, 0, 1), tb, pl.load(bias, [0, 0], [1, N])), [0, 0], o4);
  });
  return o1;
});

const BM = 3;
const batchKernel = pl.jit(function batchKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.batchMatmul(pl.load(a, [0, 0, 0], [BM, M, K]), pl.load(b, [0, 0, 0], [BM, K, N])), [0, 0, 0], out);
  });
  return out;
});

const atomicKernel = pl.jit(function atomicKernel(a: pl.Tensor, out: pl.InOut<pl.Tensor>) {
  for (const i of pl.range(4)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const x = pl.load(a, [i * M, 0], [M, N]);
      pl.store(pl.mul(x, 2), [0, 0], out, { atomic: "add" });
    });
  }
  return out;
});

const dimKernel = pl.jit(function dimKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const rows = pl.dim(a, 0);
    for (const r of pl.range(0, rows, 4)) {
      pl.store(pl.mul(pl.load(a, [r, 0], [4, N]), pl.dim(a, 1)), [r, 0], out);
    }
  });
  return out;
});

/** Data with ties (small integers) and a NaN in row 2 / column 3. */
function tieData(dtype: DType, seed: number): number[] {
  const rnd = mulberry32(seed);
  const v = Array.from({ length: M * N }, () => Math.floor(rnd() * 7) - 3);
  if (dtype === "float32") { v[2 * N + 5] = NaN; v[7 * N + 3] = NaN; v[7 * N + 9] = NaN; }
  return v;
}
function argRef(get: (j: number) => number, n: number, kind: "max" | "min"): number {
  let bi = 0;
  for (let j = 1; j < n; j++) {
    const x = get(j), b = get(bi);
    if (Number.isNaN(b)) break;
    if (Number.isNaN(x) || (kind === "max" ? x > b : x < b)) bi = j;
  }
  return bi;
}
function matmulRef(a: (i: number, k: number) => number, b: (k: number, j: number) => number, m: number, k: number, n: number, init?: (i: number, j: number) => number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = init ? init(i, j) : 0;
    for (let q = 0; q < k; q++) s = f(s + f(a(i, q) * b(q, j)));
    out.push(s);
  }
  return out;
}

describe.each(PLATFORMS)("more ops on %s", (platform) => {
  for (const dtype of ["float32", "int32"] as DType[]) {
    it(`rowProd/colProd and the arg-reductions (${dtype}; ties, NaN first wins)`, () => {
      const v = tieData(dtype, dtype.length);
      const nz = v.map((x) => (x === 0 ? 1 : x)); // keep products non-zero
      const A = tensor(nz, { shape: [M, N], dtype });
      const rp = zeros([M, 1], dtype), cp = zeros([1, N], dtype), ri = zeros([M, 2], "int32"), ci = zeros([2, N], "int32");
      prodArg(A, rp, cp, ri, ci, cfg(platform));
      const x = (r: number, c: number) => nz[r * N + c];
      const prod = (n: number, g: (j: number) => number) => { let p = 1; for (let j = 0; j < n; j++) p *= g(j); return dtype === "int32" ? Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, p)) : f(p); };
      const wantRp = Array.from({ length: M }, (_, r) => prod(N, (j) => x(r, j)));
      const wantCp = Array.from({ length: N }, (_, c) => prod(M, (i) => x(i, c)));
      expect(rp.toArray()).toEqual(wantRp);
      expect(cp.toArray()).toEqual(wantCp);
      const wantRi = Array.from({ length: M }, (_, r) => [argRef((j) => x(r, j), N, "max"), argRef((j) => x(r, j), N, "min")]).flat();
      const wantCi = [...Array.from({ length: N }, (_, c) => argRef((i) => x(i, c), M, "max")), ...Array.from({ length: N }, (_, c) => argRef((i) => x(i, c), M, "min"))];
      expect(ri.toArray()).toEqual(wantRi);
      expect(ci.toArray()).toEqual(wantCi);
    });
  }

  it("rowExpand/colExpand Max, Min, Expdif and prelu", () => {
    const A = randn([M, N], { seed: 21 }), Rv = randn([M, 1], { seed: 22 }), Cv = randn([1, N], { seed: 23 });
    const a = A.toArray(), rv = Rv.toArray(), cv = Cv.toArray();
    const out = zeros([7 * M, N]);
    expandMore(A, Rv, Cv, out, cfg(platform));
    const fns: ((x: number, r: number, c: number) => number)[] = [
      (x, r) => Math.max(x, rv[r]), (x, r) => Math.min(x, rv[r]), (x, r) => f(Math.exp(f(x - rv[r]))),
      (x, _r, c) => Math.max(x, cv[c]), (x, _r, c) => Math.min(x, cv[c]), (x, _r, c) => f(Math.exp(f(x - cv[c]))),
      (x, r) => (x > 0 ? x : f(x * rv[r])),
    ];
    const want = fns.flatMap((fn) => a.map((x, i) => fn(x, Math.floor(i / N), i % N)));
    assertClose(out, tensor(want, { shape: [7 * M, N] }), { rtol: 2.4e-7, atol: 0 }); // expdif: tspto_expf is within 1 ulp
  });

  it("transpose of a 2-D and a rank-3 tile", () => {
    const A = randn([M, N], { seed: 31 }), B = randn([2, 3, 5], { seed: 32 });
    const o2 = zeros([N, M]), o3 = zeros([5, 3, 2]);
    transposeKernel(A, B, o2, o3, cfg(platform));
    const a = A.toArray(), b = B.toArray();
    expect(o2.toArray()).toEqual(Array.from({ length: N * M }, (_, k) => a[(k % M) * N + Math.floor(k / M)]));
    const w3: number[] = [];
    for (let i = 0; i < 5; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 2; k++) w3.push(b[k * 15 + j * 5 + i]);
    expect(o3.toArray()).toEqual(w3);
  });

  it("matmul with transposed operands and outDtype, matmulAcc with flags, matmulBias", () => {
    const AT = randn([K, M], { seed: 41 }), B = randn([K, N], { seed: 42 }), BT = randn([N, K], { seed: 43 }), BIAS = randn([1, N], { seed: 44 });
    const at = AT.toArray(), b = B.toArray(), bt = BT.toArray(), bias = BIAS.toArray();
    const o1 = zeros([M, N]), o2 = zeros([M, N], "float16"), o3 = zeros([M, N]), o4 = zeros([M, N]);
    mmForms(AT, B, BT, BIAS, o1, o2, o3, o4, cfg(platform));
    const A = (i: number, k: number) => at[k * M + i];
    const w1 = matmulRef(A, (k, j) => bt[j * K + k], M, K, N);
    const w2 = matmulRef(A, (k, j) => b[k * N + j], M, K, N);
    expect(o1.toArray()).toEqual(w1);
    expect(o2.toArray()).toEqual(tensor(w2, { shape: [M, N], dtype: "float16" }).toArray());
    expect(o3.toArray()).toEqual(matmulRef(A, (k, j) => bt[j * K + k], M, K, N, (i, j) => w2[i * N + j]));
    expect(o4.toArray()).toEqual(w2.map((v, i) => f(v + bias[i % N])));
  });

  it("batchMatmul of rank-3 tiles", () => {
    const A = randn([BM, M, K], { seed: 51 }), B = randn([BM, K, N], { seed: 52 });
    const a = A.toArray(), b = B.toArray();
    const out = zeros([BM, M, N]);
    batchKernel(A, B, out, cfg(platform));
    const want = Array.from({ length: BM }, (_, s) => matmulRef((i, k) => a[s * M * K + i * K + k], (k, j) => b[s * K * N + k * N + j], M, K, N)).flat();
    expect(out.toArray()).toEqual(want);
  });

  it("store { atomic: \"add\" } accumulates across tasks", () => {
    const A = randn([4 * M, N], { seed: 61 }), init = randn([M, N], { seed: 62 });
    const out = init.clone();
    atomicKernel(A, out, cfg(platform));
    const a = A.toArray();
    const want = init.toArray().map((v, k) => { let s = v; for (let i = 0; i < 4; i++) s = f(s + f(2 * a[i * M * N + k])); return s; });
    expect(out.toArray()).toEqual(want);
  });

  it("dim reads a tensor's extent (a loop bound and a number)", () => {
    const A = randn([16, N], { seed: 71 });
    const out = zeros([16, N]);
    dimKernel(A, out, cfg(platform));
    expect(out.toArray()).toEqual(A.toArray().map((x) => f(x * N)));
  });
});

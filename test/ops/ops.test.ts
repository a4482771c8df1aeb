// The op set beyond elementwise: reductions, broadcasts, matmul, shape ops, read and
// createTensor. Every kernel runs on cpu and interp and is compared with an independent JS
// formula on seeded random data.
import { describe, it, expect } from "vitest";
import { pl, RunConfig, randn, zeros, assertClose, tensor, type HostTensor } from "tspto";

const PLATFORMS = ["cpu", "interp"] as const;
const cfg = (platform: string) => new RunConfig({ platform });
const f = Math.fround;
const T = (data: ArrayLike<number>, shape: number[], dtype: "float32" | "int32" = "float32") =>
  tensor(dtype === "float32" ? Float32Array.from(data) : Int32Array.from(data), { shape, dtype });
/** Element (r, c) of a row-major [.., n] array. */
const at = (a: number[], n: number) => (r: number, c: number) => a[r * n + c];

const M = 24, N = 40; // N is not a multiple of 8: the row-reduction tail lanes are used

const reduceKernel = pl.jit(function reduceKernel(a: pl.Tensor, rows: pl.Out<pl.Tensor>, cols: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const tmp = pl.createTile([M, N], pl.FP32);
    const rs = pl.rowSum(x, tmp), rmx = pl.rowMax(x, tmp), rmn = pl.rowMin(pl.mul(x, 2), tmp);
    pl.store(pl.concat(pl.concat(rs, rmx), rmn), [0, 0], rows);
    const cs = pl.colSum(x), cmx = pl.colMax(x), cmn = pl.colMin(x, tmp);
    pl.store(pl.concat(pl.concat(cs, cmx), cmn), [0, 0], cols);
  });
  return rows;
});

const intReduce = pl.jit(function intReduce(a: pl.Tensor, rows: pl.Out<pl.Tensor>, cols: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const tmp = pl.createTile([M, N], pl.INT32);
    pl.store(pl.concat(pl.rowSum(x, tmp), pl.rowMax(x, tmp)), [0, 0], rows);
    pl.store(pl.concat(pl.colSum(x), pl.colMin(x)), [0, 0], cols);
  });
  return rows;
});

const broadcastKernel = pl.jit(function broadcastKernel(a: pl.Tensor, rv: pl.Tensor, cv: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const r = pl.load(rv, [0, 0], [M, 1]);
    const c = pl.load(cv, [0, 0], [1, N]);
    pl.store(pl.rowExpandAdd(x, r), [0, 0], out);
    pl.store(pl.rowExpandSub(x, r), [M, 0], out);
    pl.store(pl.rowExpandMul(x, r), [2 * M, 0], out);
    pl.store(pl.rowExpandDiv(x, r), [3 * M, 0], out);
    pl.store(pl.colExpandAdd(x, c), [4 * M, 0], out);
    pl.store(pl.colExpandSub(x, c), [5 * M, 0], out);
    pl.store(pl.colExpandMul(x, c), [6 * M, 0], out);
    pl.store(pl.colExpandDiv(pl.exp(x), c), [7 * M, 0], out);
    pl.store(pl.rowExpand(x, r), [8 * M, 0], out);
    pl.store(pl.colExpand(x, c), [9 * M, 0], out);
  });
  return out;
});

const MM = 32, KK = 48, NN = 24;
const matmulKernel = pl.jit(function matmulKernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.move(pl.load(a, [0, 0], [MM, KK], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const tb = pl.move(pl.load(b, [0, 0], [KK, NN], { mem: pl.Mem.Mat }), pl.Mem.Right);
    pl.store(pl.matmul(ta, tb), [0, 0], c);
  });
  return c;
});

/** Split-K: c = a[:, :K/2] @ b[:K/2] then += a[:, K/2:] @ b[K/2:] in a loop. */
const splitK = pl.jit(function splitK(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.matmul(pl.load(a, [0, 0], [MM, 16]), pl.load(b, [0, 0], [16, NN]));
    for (const k of pl.range(16, KK, 16)) {
      acc = pl.matmulAcc(acc, pl.load(a, [0, k], [MM, 16]), pl.load(b, [k, 0], [16, NN]));
    }
    pl.store(acc, [0, 0], c);
  });
  return c;
});

function matmulRef(a: number[], b: number[], m: number, k: number, n: number, float = true): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) s = float ? f(s + f(a[i * k + q] * b[q * n + j])) : s + a[i * k + q] * b[q * n + j];
      out.push(s);
    }
  }
  return out;
}

describe.each(PLATFORMS)("ops on %s", (platform) => {
  it("row and column reductions (float32): sum in fp64, max, min", () => {
    const A = randn([M, N], { seed: 11 });
    const a = A.toArray(), x = at(a, N);
    const rows = zeros([M, 3]), cols = zeros([1, 3 * N]);
    reduceKernel(A, rows, cols, cfg(platform));
    const wantRows: number[] = [], wantCols = new Array<number>(3 * N);
    for (let r = 0; r < M; r++) {
      let s = 0, mx = -Infinity, mn = Infinity;
      for (let c = 0; c < N; c++) { s += x(r, c); mx = Math.max(mx, x(r, c)); mn = Math.min(mn, f(2 * x(r, c))); }
      wantRows.push(s, mx, mn);
    }
    for (let c = 0; c < N; c++) {
      let s = 0, mx = -Infinity, mn = Infinity;
      for (let r = 0; r < M; r++) { s += x(r, c); mx = Math.max(mx, x(r, c)); mn = Math.min(mn, x(r, c)); }
      wantCols[c] = s; wantCols[N + c] = mx; wantCols[2 * N + c] = mn;
    }
    assertClose(rows, T(wantRows, [M, 3]), { rtol: 1e-6, atol: 1e-6 });
    assertClose(cols, T(wantCols, [1, 3 * N]), { rtol: 1e-6, atol: 1e-6 });
  });

  it("integer reductions accumulate exactly", () => {
    const A = randn([M, N], { seed: 12, dtype: "int32" });
    const a = A.toArray(), x = at(a, N);
    const rows = zeros([M, 2], "int32"), cols = zeros([1, 2 * N], "int32");
    intReduce(A, rows, cols, cfg(platform));
    const wr: number[] = [], wc = new Array<number>(2 * N);
    for (let r = 0; r < M; r++) { let s = 0, mx = -Infinity; for (let c = 0; c < N; c++) { s += x(r, c); mx = Math.max(mx, x(r, c)); } wr.push(s, mx); }
    for (let c = 0; c < N; c++) { let s = 0, mn = Infinity; for (let r = 0; r < M; r++) { s += x(r, c); mn = Math.min(mn, x(r, c)); } wc[c] = s; wc[N + c] = mn; }
    assertClose(rows, T(wr, [M, 2], "int32"), { rtol: 0, atol: 0 });
    assertClose(cols, T(wc, [1, 2 * N], "int32"), { rtol: 0, atol: 0 });
  });

  it("row and column broadcasts", () => {
    const A = randn([M, N], { seed: 13 }), R = randn([M, 1], { seed: 14 }), C = randn([1, N], { seed: 15 });
    const x = at(A.toArray(), N), rv = R.toArray(), cv = C.toArray();
    const out = zeros([10 * M, N]);
    broadcastKernel(A, R, C, out, cfg(platform));
    const fns: ((r: number, c: number) => number)[] = [
      (r, c) => x(r, c) + rv[r], (r, c) => x(r, c) - rv[r], (r, c) => x(r, c) * rv[r], (r, c) => x(r, c) / rv[r],
      (r, c) => x(r, c) + cv[c], (r, c) => x(r, c) - cv[c], (r, c) => x(r, c) * cv[c], (r, c) => f(Math.exp(x(r, c))) / cv[c],
      (r) => rv[r], (_r, c) => cv[c],
    ];
    const want: number[] = [];
    for (const fn of fns) for (let r = 0; r < M; r++) for (let c = 0; c < N; c++) want.push(fn(r, c));
    assertClose(out, T(want, [10 * M, N]), { rtol: 1e-6, atol: 1e-6 });
  });

  for (const dtype of ["float32", "float16", "bfloat16"] as const) {
    it(`matmul of ${dtype} tiles through Mat -> Left/Right accumulates in fp32`, () => {
      const A = randn([MM, KK], { seed: 21, dtype }), B = randn([KK, NN], { seed: 22, dtype });
      const c = zeros([MM, NN]);
      matmulKernel(A, B, c, cfg(platform));
      const want = matmulRef(A.toArray(), B.toArray(), MM, KK, NN);
      assertClose(c, T(want, [MM, NN]), { rtol: 1e-5, atol: 1e-5 });
      // a plain double-precision product agrees to matmul tolerance
      const a = A.toArray(), b = B.toArray();
      const exact = want.map((_, e) => { const i = Math.floor(e / NN), j = e % NN; let s = 0; for (let q = 0; q < KK; q++) s += a[i * KK + q] * b[q * NN + j]; return s; });
      assertClose(c, T(exact, [MM, NN]), { rtol: 1e-3, atol: 1e-3 });
    });
  }

  it("matmul of int8 tiles gives int32", () => {
    const A = randn([MM, KK], { seed: 23, dtype: "int8" }), B = randn([KK, NN], { seed: 24, dtype: "int8" });
    const c = zeros([MM, NN], "int32");
    matmulKernel(A, B, c, cfg(platform));
    assertClose(c, T(matmulRef(A.toArray(), B.toArray(), MM, KK, NN, false), [MM, NN], "int32"), { rtol: 0, atol: 0 });
  });

  it("split-K matmulAcc in a loop with a loop-carried accumulator", () => {
    const A = randn([MM, KK], { seed: 25 }), B = randn([KK, NN], { seed: 26 });
    const c = zeros([MM, NN]);
    splitK(A, B, c, cfg(platform));
    assertClose(c, T(matmulRef(A.toArray(), B.toArray(), MM, KK, NN), [MM, NN]), { rtol: 1e-5, atol: 1e-5 });
  });
});

// ------------------------------------------------------------------ shape ops
const shapeKernel = pl.jit(function shapeKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>, pads: pl.Out<pl.Tensor>, k: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [16, 32]);
    // reshape [16, 32] -> [32, 16] keeps the row-major order
    pl.store(pl.reshape(x, [32, 16]), [0, 0], out);
    // slice with a scalar-parameter offset, concat with a constant slice
    const s1 = pl.slice(x, [16, 8], [0, k]);
    const s2 = pl.slice(x, [16, 8], [0, 24]);
    pl.store(pl.concat(s1, s2), [0, 16], out);
    // assemble row by row in a loop: y = x with rows i of src (x * 10) at columns [8, 16)
    let y = x;
    const src = pl.mul(pl.slice(x, [16, 8], [0, 0]), 10);
    for (const i of pl.range(16)) {
      const row = pl.slice(src, [1, 8], [i, 0]);
      y = pl.assemble(y, row, [i, 8]);
    }
    pl.store(y, [32, 0], out);
    // fillpad: load 5 valid columns of 8, pad with zero / lowest / highest; read one element
    const v = pl.load(a, [0, 0], [4, 8], { validShape: [4, 5] });
    pl.store(pl.fillpad(v), [0, 0], pads);
    pl.store(pl.fillpad(v, "min"), [4, 0], pads);
    pl.store(pl.fillpad(v, "max"), [8, 0], pads);
    const e = pl.read(x, [3, k]);
    pl.store(pl.full([4, 8], pl.FP32, 0.0), [12, 0], pads);
    pl.store(pl.add(pl.full([1, 8], pl.FP32, 0.0), e), [12, 0], pads);
  });
  return out;
});

const tileAssembleLoops = pl.jit(function tileAssembleLoops(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let t = pl.load(x, [0, 0], [32, 32]);
    const s = pl.load(src, [0, 0], [16, 16]);
    for (const b of pl.range(2)) {
      for (const c of pl.range(2)) {
        t = pl.assemble(t, s, [b * 16, c * 16]);
      }
    }
    pl.store(t, [0, 0], y);
  });
  return y;
});

describe.each(PLATFORMS)("shape ops on %s", (platform) => {
  it("reshape, slice (dynamic offset), concat, assemble in a loop, fillpad, read", () => {
    const A = randn([16, 32], { seed: 31 });
    const a = A.toArray(), x = at(a, 32);
    const k = 5;
    const out = zeros([48, 32]), pads = zeros([16, 8]);
    shapeKernel(A, out, pads, k, cfg(platform));
    const want = new Array<number>(48 * 32).fill(0);
    for (let i = 0; i < 16 * 32; i++) want[Math.floor(i / 16) * 32 + (i % 16)] = a[i];
    for (let r = 0; r < 16; r++) for (let c = 0; c < 16; c++) want[r * 32 + 16 + c] = c < 8 ? x(r, k + c) : x(r, 24 + c - 8);
    for (let r = 0; r < 16; r++) for (let c = 0; c < 32; c++) want[(32 + r) * 32 + c] = c >= 8 && c < 16 ? f(x(r, c - 8) * 10) : x(r, c);
    assertClose(out, T(want, [48, 32]), { rtol: 0, atol: 0 });
    const wp: number[] = [];
    for (const pad of [0, -3.4028234663852886e38, 3.4028234663852886e38]) {
      for (let r = 0; r < 4; r++) for (let c = 0; c < 8; c++) wp.push(c < 5 ? x(r, c) : pad);
    }
    for (let r = 0; r < 4; r++) for (let c = 0; c < 8; c++) wp.push(r === 0 ? x(3, k) : 0);
    assertClose(pads, T(wp, [16, 8]), { rtol: 0, atol: 0 });
  });

  it("assemble of quadrants in nested loops", () => {
    const X = randn([32, 32], { seed: 32 }), S = randn([16, 16], { seed: 33 });
    const y = zeros([32, 32]);
    tileAssembleLoops(X, S, y, cfg(platform));
    const s = S.toArray();
    assertClose(y, T(Array.from({ length: 32 * 32 }, (_, i) => s[(Math.floor(i / 32) % 16) * 16 + (i % 16)]), [32, 32]), { rtol: 0, atol: 0 });
  });
});

/** trace = sum of x[i][i] read with a loop-variable index; plus a tensor element read in the kernel. */
const readKernel = pl.jit(function readKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 8]);
    let trace = 0.0;
    for (const i of pl.range(8)) trace = trace + pl.read(x, [i, i]);
    const corner = pl.read(a, [7, 0]);
    pl.store(pl.add(pl.mul(pl.full([1, 8], pl.FP32, 1.0), trace), corner), [0, 0], out);
  });
  return out;
});

describe.each(PLATFORMS)("read on %s", (platform) => {
  it("tile elements at loop-variable indices and a tensor element, as scalars", () => {
    const A = randn([8, 8], { seed: 34 });
    const a = A.toArray();
    const out = zeros([1, 8]);
    readKernel(A, out, cfg(platform));
    let trace = 0;
    for (let i = 0; i < 8; i++) trace += a[i * 8 + i];
    assertClose(out, T(new Array(8).fill(trace + a[56]), [1, 8]), { rtol: 1e-6, atol: 1e-6 });
  });
});

// ------------------------------------------------------------------ createTensor and sub-kernels
const mmKernel = pl.jit.incore(function mmKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  const c = pl.matmul(pl.load(a, [0, 0], [32, 32], { mem: pl.Mem.Mat }), pl.load(b, [0, 0], [32, 32], { mem: pl.Mem.Mat }));
  pl.store(c, [0, 0], out);
  return out;
});
const biasRelu = pl.jit.incore(function biasRelu(x: pl.Tensor, bias: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.store(pl.relu(pl.colExpandAdd(pl.load(x, [0, 0], [32, 32]), pl.load(bias, [0, 0], [1, 32]))), [0, 0], out);
  return out;
});
const linear = pl.jit(function linear(a: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out<pl.Tensor>) {
  let mm = pl.createTensor([32, 32], pl.FP32);
  mm = mmKernel(a, w, mm);
  const scaled = pl.createTensor([32, 32], pl.FP32);
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(scaled, pl.mul(mm, 0.5));
  });
  return biasRelu(scaled, bias, y);
});

describe.each(PLATFORMS)("orchestration buffers on %s", (platform) => {
  it("createTensor buffers pass results between kernels and scopes", () => {
    const A = randn([32, 32], { seed: 41 }), W = randn([32, 32], { seed: 42 }), Bi = randn([1, 32], { seed: 43 });
    const y = zeros([32, 32]);
    const r = linear(A, W, Bi, y, cfg(platform)) as HostTensor | undefined;
    const mm = matmulRef(A.toArray(), W.toArray(), 32, 32, 32);
    const bias = Bi.toArray();
    const want = mm.map((v, i) => Math.max(0, f(f(v * 0.5) + bias[i % 32])));
    assertClose(y, T(want, [32, 32]), { rtol: 1e-6, atol: 1e-6 });
    if (r) expect(r.shape).toEqual([32, 32]);
  });
});

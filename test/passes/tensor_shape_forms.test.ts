// Tensor-level reshape, concat, fillpad, full, broadcastTo and batchMatmul inside pl.at, lowered
// to tiles (partial edge tiles, no scratch argument), on cpu and interp, against independent
// JavaScript formulas on seeded random data, for float32, float16, bfloat16 and int32.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, tensor, type HostTensor, TsptoCompileError, TsptoTypeError } from "tspto";
import { forEachStmt, type Program } from "../../src/ir/index.js";

const PLATFORMS = ["cpu", "interp"] as const;
const DTYPES = ["float32", "float16", "bfloat16", "int32"] as const;
type DT = (typeof DTYPES)[number];
// matmul references sum fp32 products rounded separately: compile with fpContract "off"
const cfg = (platform: string) => new RunConfig({ platform, fpContract: "off" });
const f = Math.fround;

/** Seeded random data of a dtype: small integers for int32, normal values (rounded to the dtype) for floats. */
function data(shape: number[], dtype: DT, seed: number): HostTensor {
  const r = randn(shape, { seed });
  if (dtype === "int32") return tensor(Int32Array.from(r.toArray(), (v) => Math.round(v * 20)), { shape, dtype });
  return tensor(r.toArray(), { shape, dtype });
}
/** Element-by-element equality that reports the first difference (a diff of 100k-element arrays takes minutes). */
function same(got: readonly number[], want: readonly number[], what = "values"): void {
  expect(got.length, `${what}: length`).toBe(want.length);
  let first = -1, count = 0;
  for (let i = 0; i < want.length; i++) if (got[i] !== want[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) { if (first < 0) first = i; count++; }
  expect(first < 0 ? "equal" : `${count} differ, the first at ${first}: got ${got[first]}, want ${want[first]}`, what).toBe("equal");
}
/** A value as stored in the dtype (what the host reads back). */
const asDType = (v: number[], shape: number[], dtype: DT) => tensor(dtype === "int32" ? Int32Array.from(v) : v, { shape, dtype }).toArray();

const R1 = [517, 300], R2 = [1034, 150]; // 155100 elements: several whole chunks and a shorter last one
const reshapeBig = pl.jit(function reshapeBig(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.reshape(x, R2)); });
  return out;
});
const reshapeExpr = pl.jit(function reshapeExpr(x: pl.Tensor, w: pl.Tensor, o3: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o3, pl.reshape(pl.add(x, w), [4, 3, 5]));        // an expression with a broadcast [1, 15] operand, to rank 3
    pl.assign(o2, pl.reshape(pl.slice(x, [2, 15], [1, 0]), [5, 6])); // a window
  });
  return o3;
});

describe.each(PLATFORMS)("tensor-level reshape on %s", (platform) => {
  it.each(DTYPES)("reshapes [517, 300] to [1034, 150] (%s): whole chunks and a shorter last chunk", (dtype) => {
    const X = data(R1, dtype, 1);
    const out = zeros(R2, dtype);
    reshapeBig(X, out, cfg(platform));
    same(out.toArray(), X.toArray());
  });
  it("reshapes an elementwise expression (with broadcasting) and a window", () => {
    const X = randn([4, 15], { seed: 2 }), W = randn([1, 15], { seed: 3 });
    const o3 = zeros([4, 3, 5]), o2 = zeros([5, 6]);
    reshapeExpr(X, W, o3, o2, cfg(platform));
    const x = X.toArray(), w = W.toArray();
    same(o3.toArray(), x.map((v, i) => f(v + w[i % 15])));
    same(o2.toArray(), x.slice(15, 45));
  });
});

const R3 = [2, 1500, 40], R4 = [3000, 40]; // a [1500, 40] slab does not fit a tile: chunks of [1, 750, 40] at offsets from div/mod
const reshape3 = pl.jit(function reshape3(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.reshape(x, R4)); });
  return out;
});

describe("tensor-level reshape: chunks", () => {
  it("[517, 300] -> [1034, 150] runs a loop of whole chunks and a shorter last chunk", () => {
    const p = reshapeBig.lower(randn(R1, { seed: 1 }), zeros(R2));
    const shapes: string[] = [];
    let loops = 0;
    forEachStmt(p.functions.find((fn) => fn.fnKind === "incore")!.body, (s) => {
      if (s.kind === "for") loops++;
      if (s.kind === "assign" && s.value.kind === "call" && s.value.op === "tile.load") shapes.push(JSON.stringify(s.value.attrs.shape));
    });
    expect(loops).toBe(1);
    expect(shapes).toEqual(["[145,300]", "[82,300]"]); // 43500 elements per chunk (a multiple of both rows), 3 chunks, then 24600
  });
  it.each(PLATFORMS)("a rank-3 operand whose slab does not fit a tile (%s)", (platform) => {
    const X = randn(R3, { seed: 4 });
    const out = zeros(R4);
    reshape3(X, out, cfg(platform));
    same(out.toArray(), X.toArray());
  });
});

const NA = 37, NB = 50, M = 1009; // prime rows: partial row tiles
const concatK = pl.jit(function concatK(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, big: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.concat(a, b));
    pl.assemble(big, pl.concat(pl.mul(a, 2), pl.concat(b, a)), [3, 1]); // expressions, nested, at an offset
  });
  return out;
});

describe.each(PLATFORMS)("tensor-level concat on %s", (platform) => {
  it.each(DTYPES)("concat along the last axis, of expressions, nested, at an offset (%s)", (dtype) => {
    const A = data([M, NA], dtype, 5), B = data([M, NB], dtype, 6);
    const out = zeros([M, NA + NB], dtype);
    const W = 2 * NA + NB + 3;
    const init = data([M + 5, W], dtype, 7);
    const big = tensor(init.toArray(), { shape: [M + 5, W], dtype });
    concatK(A, B, out, big, cfg(platform));
    const a = A.toArray(), b = B.toArray();
    const row = (r: number) => [...a.slice(r * NA, (r + 1) * NA), ...b.slice(r * NB, (r + 1) * NB)];
    same(out.toArray(), Array.from({ length: M }, (_, r) => row(r)).flat());
    const want = init.toArray();
    const twice = asDType(a.map((v) => 2 * v), [M, NA], dtype);
    for (let r = 0; r < M; r++) {
      const vals = [...twice.slice(r * NA, (r + 1) * NA), ...b.slice(r * NB, (r + 1) * NB), ...a.slice(r * NA, (r + 1) * NA)];
      vals.forEach((v, c) => { want[(r + 3) * W + 1 + c] = v; });
    }
    same(big.toArray(), want);
  });
});

const N = 37;
const fillK = pl.jit(function fillK(x: pl.Tensor, out: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.fillpad(x, "max"));
    pl.assign(o2, pl.sub(pl.fillpad(x), 1));
  });
  return out;
});
const fullF32 = pl.jit(function fullF32(x: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o1, pl.full([M, N], pl.FP32, 0.5));
    pl.assign(o2, pl.mul(x, pl.full([M, N], pl.FP32, 3)));
    pl.assign(o3, pl.sub(pl.full([1, N], pl.FP32, 2), x)); // first operand, broadcast [1, N]
  });
  return o1;
});
const fullTyped = pl.jit(function fullTyped(xi: pl.Tensor, xh: pl.Tensor, xb: pl.Tensor, oi: pl.Out<pl.Tensor>, oh: pl.Out<pl.Tensor>, ob: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(oi, pl.add(xi, pl.full([M, N], pl.INT32, -7)));
    pl.assign(oh, pl.maximum(xh, pl.full([M, 1], pl.FP16, 0.25)));
    pl.assign(ob, pl.mul(pl.full([M, N], pl.BF16, 1.5), xb));
  });
  return oi;
});

describe.each(PLATFORMS)("tensor-level fillpad and full on %s", (platform) => {
  it.each(DTYPES)("fillpad of a tensor is the tensor (%s)", (dtype) => {
    const X = data([M, N], dtype, 8);
    const out = zeros([M, N], dtype), o2 = zeros([M, N], dtype);
    fillK(X, out, o2, cfg(platform));
    same(out.toArray(), X.toArray());
    same(o2.toArray(), asDType(X.toArray().map((v) => v - 1), [M, N], dtype));
  });
  it("full as pl.assign's value and as an operand (either side, broadcast) of tensor ops (float32)", () => {
    const X = randn([M, N], { seed: 9 });
    const o1 = zeros([M, N]), o2 = zeros([M, N]), o3 = zeros([M, N]);
    fullF32(X, o1, o2, o3, cfg(platform));
    const x = X.toArray();
    same(o1.toArray(), new Array(M * N).fill(0.5));
    same(o2.toArray(), x.map((v) => f(v * 3)));
    same(o3.toArray(), x.map((v) => f(2 - v)));
  });
  it("full of int32, float16 and bfloat16", () => {
    const XI = data([M, N], "int32", 10), XH = data([M, N], "float16", 11), XB = data([M, N], "bfloat16", 12);
    const oi = zeros([M, N], "int32"), oh = zeros([M, N], "float16"), ob = zeros([M, N], "bfloat16");
    fullTyped(XI, XH, XB, oi, oh, ob, cfg(platform));
    same(oi.toArray(), XI.toArray().map((v) => v - 7));
    same(oh.toArray(), XH.toArray().map((v) => Math.max(v, 0.25)));
    same(ob.toArray(), asDType(XB.toArray().map((v) => v * 1.5), [M, N], "bfloat16"));
  });
});

const bcastK = pl.jit(function bcastK(r: pl.Tensor, c: pl.Tensor, x: pl.Tensor, o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(o1, pl.broadcastTo(r, [M, N]));
    pl.assign(o2, pl.mul(x, pl.broadcastTo(pl.add(c, 1), [M, N])));
  });
  return o1;
});

describe.each(PLATFORMS)("tensor-level broadcastTo on %s", (platform) => {
  it.each(DTYPES)("stretches [1, N] and [M, 1] tensors and expressions (%s)", (dtype) => {
    const Rw = data([1, N], dtype, 13), C = data([M, 1], dtype, 14), X = data([M, N], dtype, 15);
    const o1 = zeros([M, N], dtype), o2 = zeros([M, N], dtype);
    bcastK(Rw, C, X, o1, o2, cfg(platform));
    const r = Rw.toArray(), c = asDType(C.toArray().map((v) => v + 1), [M, 1], dtype), x = X.toArray();
    same(o1.toArray(), Array.from({ length: M * N }, (_, i) => r[i % N]));
    same(o2.toArray(), asDType(x.map((v, i) => v * c[Math.floor(i / N)]), [M, N], dtype));
  });
});

const bmm = pl.jit(function bmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.batchMatmul(a, b)); });
  return out;
});
const BS = 3, BM = 131, BK = 257, BN = 139; // primes: partial tiles on M, N and K

/** a[i] @ b[i] summed in k order: fp32 products and sums rounded separately (floats), exact (small integers). */
function bmmRef(a: number[], b: number[], int: boolean): number[] {
  const o: number[] = [];
  for (let z = 0; z < BS; z++) {
    for (let i = 0; i < BM; i++) {
      for (let j = 0; j < BN; j++) {
        let s = 0;
        for (let q = 0; q < BK; q++) {
          const p = a[(z * BM + i) * BK + q] * b[(z * BK + q) * BN + j];
          s = int ? s + p : f(s + f(p));
        }
        o.push(s);
      }
    }
  }
  return o;
}

describe.each(PLATFORMS)("tensor-level batchMatmul on %s", (platform) => {
  it.each(DTYPES)("[3, 131, 257] @ [3, 257, 139] per batch, K in tiles (%s)", (dtype) => {
    const A = data([BS, BM, BK], dtype, 16), B = data([BS, BK, BN], dtype, 17);
    const acc = dtype === "int32" ? "int32" : "float32";
    const out = zeros([BS, BM, BN], acc);
    bmm(A, B, out, cfg(platform));
    same(out.toArray(), bmmRef(A.toArray(), B.toArray(), dtype === "int32"));
  });
});

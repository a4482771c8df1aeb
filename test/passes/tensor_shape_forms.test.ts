// Tensor-level reshape, concat, fillpad, full, broadcastTo and batchMatmul inside pl.at, lowered
// to tiles (partial edge tiles, no scratch argument), on cpu and interp, against independent
// JavaScript formulas on seeded random data, for float32, float16, bfloat16 and int32.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, tensor, type HostTensor, TsptoCompileError, TsptoTypeError } from "tspto";
import { forEachStmt } from "../../src/ir/index.js";
import { BK, BM, BN, BS, M, N, NA, NB, R1, R2, R3, R4, bcastK, bmm, concatK, fillK, fullF32, fullTyped, reshape3, reshapeBig, reshapeExpr, squeeze } from "./fixtures/tensor_shapes.js";

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

describe.each(PLATFORMS)("tile-level reshape of a partial tile on %s", (platform) => {
  it("adding or dropping dims of 1 keeps the validShape (the store writes only the valid region)", () => {
    const X = randn([2, 8, 16], { seed: 18 }), init = randn([8, 16], { seed: 19 });
    const out = tensor(init.toArray(), { shape: [8, 16] });
    squeeze(X, out, cfg(platform));
    const x = X.toArray(), want = init.toArray();
    for (let r = 0; r < 5; r++) for (let c = 0; c < 11; c++) want[r * 16 + c] = f(2 * x[128 + r * 16 + c]);
    same(out.toArray(), want);
  });
});

// ------------------------------------------------------------------ bad input
// Each bad kernel marks its offending line with `// BAD:<name>`; the error must point there.
const SOURCE = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
const lineOf = (mark: string) => SOURCE.findIndex((l) => l.includes(`// BAD:${mark}`)) + 1;

const badReshape = pl.jit(function badReshape(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.reshape(x, [5, 5])); // BAD:reshape
  });
  return out;
});
const badConcat = pl.jit(function badConcat(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.concat(a, b)); // BAD:concat
  });
  return out;
});
const badBmm = pl.jit(function badBmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.batchMatmul(a, b)); // BAD:bmm
  });
  return out;
});
const nestedReshape = pl.jit(function nestedReshape(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(pl.reshape(x, [8, 4]), 1)); // BAD:nestedReshape
  });
  return out;
});
const nestedConcat = pl.jit(function nestedConcat(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.exp(pl.concat(a, a))); // BAD:nestedConcat
  });
  return out;
});
const nestedBmm = pl.jit(function nestedBmm(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(pl.batchMatmul(a, b), 2)); // BAD:nestedBmm
  });
  return out;
});
const badBroadcast = pl.jit(function badBroadcast(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error the tensor form takes no validShape
    pl.assign(out, pl.broadcastTo(x, [4, 8], { validShape: [2, 8] })); // BAD:broadcastValid
  });
  return out;
});
const badBroadcastShape = pl.jit(function badBroadcastShape(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.broadcastTo(x, [4, 8])); // BAD:broadcastShape
  });
  return out;
});
const badFillpad = pl.jit(function badFillpad(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.fillpad(x, "middle" as pl.PadValue)); // BAD:fillpad
  });
  return out;
});
const namedFull = pl.jit(function namedFull(out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const z = pl.full([4, 8], pl.FP32, 1);
    pl.assign(out, z); // BAD:namedFull
  });
  return out;
});
const badTileReshape = pl.jit(function badTileReshape(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [4, 8], { validShape: [3, 8] });
    pl.store(pl.reshape(t, [8, 4]), [0, 0], out); // BAD:tileReshape
  });
  return out;
});

function errorOf(run: () => unknown): Error {
  try { run(); } catch (e) { return e as Error; }
  throw new Error("expected an error");
}

describe("tensor-level shape forms: bad input", () => {
  const x48 = () => randn([4, 8], { seed: 1 });
  const cases: { mark: string; run: () => unknown; cls: typeof TsptoTypeError | typeof TsptoCompileError; code: string; message: string }[] = [
    { mark: "reshape", run: () => badReshape.lower(x48(), zeros([5, 5])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.reshape: cannot reshape Tensor<[4, 8], float32> (32 elements) to [5, 5] (25 elements)" },
    { mark: "concat", run: () => badConcat.lower(x48(), randn([3, 8], { seed: 2 }), zeros([4, 16])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.concat: shapes do not concatenate: 'a' is Tensor<[4, 8], float32> but 'b' is Tensor<[3, 8], float32>" },
    { mark: "concat", run: () => badConcat.lower(x48(), zeros([4, 8], "int32"), zeros([4, 16])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.concat: dtypes differ: float32 and int32" },
    { mark: "bmm", run: () => badBmm.lower(x48(), randn([8, 4], { seed: 2 }), zeros([4, 4])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.batchMatmul: needs rank-3 tensors [B, M, K] and [B, K, N], got Tensor<[4, 8], float32> and Tensor<[8, 4], float32>" },
    { mark: "bmm", run: () => badBmm.lower(randn([2, 4, 8], { seed: 1 }), randn([3, 8, 4], { seed: 2 }), zeros([2, 4, 4])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.batchMatmul: batch sizes differ: 'a' is Tensor<[2, 4, 8], float32> but 'b' is Tensor<[3, 8, 4], float32>" },
    { mark: "bmm", run: () => badBmm.lower(randn([2, 4, 8], { seed: 1 }), randn([2, 6, 4], { seed: 2 }), zeros([2, 4, 4])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.batchMatmul: inner dimensions differ: 'a' is Tensor<[2, 4, 8], float32> (K = 8) but 'b' is Tensor<[2, 6, 4], float32> (K = 6)" },
    { mark: "nestedReshape", run: () => nestedReshape.lower(x48(), zeros([8, 4])), cls: TsptoCompileError, code: "E_TENSOR_FORM",
      message: "pl.reshape: a tensor-level reshape must be the whole value of pl.assign / pl.assemble" },
    { mark: "nestedConcat", run: () => nestedConcat.lower(x48(), zeros([4, 16])), cls: TsptoCompileError, code: "E_TENSOR_FORM",
      message: "pl.concat: a tensor-level concat must be the whole value of pl.assign / pl.assemble" },
    { mark: "nestedBmm", run: () => nestedBmm.lower(randn([2, 4, 8], { seed: 1 }), randn([2, 8, 4], { seed: 2 }), zeros([2, 4, 4])), cls: TsptoCompileError, code: "E_TENSOR_FORM",
      message: "pl.batchMatmul: a tensor-level matmul must be the whole value of pl.assign / pl.assemble" },
    { mark: "broadcastValid", run: () => badBroadcast.lower(randn([1, 8], { seed: 1 }), zeros([4, 8])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.broadcastTo: validShape is for tiles: a tensor has no pad region" },
    { mark: "broadcastShape", run: () => badBroadcastShape.lower(randn([2, 8], { seed: 1 }), zeros([4, 8])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.broadcastTo: cannot broadcast Tensor<[2, 8], float32> to [4, 8]" },
    { mark: "fillpad", run: () => badFillpad.lower(x48(), zeros([4, 8])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.fillpad: unknown pad value \"middle\"" },
    { mark: "namedFull", run: () => namedFull.lower(zeros([4, 8])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.assign: the value must be a tensor, got Tile<[4, 8], float32" },
    { mark: "tileReshape", run: () => badTileReshape.lower(x48(), zeros([8, 4])), cls: TsptoTypeError, code: "E_TYPE",
      message: "pl.reshape: cannot reshape a tile with a validShape ([3, 8]) to [8, 4]" },
  ];
  it.each(cases)("$mark: $message", ({ mark, run, cls, code, message }) => {
    const err = errorOf(run);
    expect(err).toBeInstanceOf(cls);
    expect((err as TsptoTypeError).code).toBe(code);
    expect(err.message).toContain(message);
    expect(err.message).toContain(`tensor_shape_forms.test.ts:${lineOf(mark)}:`);
  });
  it("the hints say what to do", () => {
    expect((errorOf(() => namedFull.lower(zeros([4, 8]))) as TsptoTypeError).message).toContain("a pl.full is a tensor only where it is written in place");
    expect((errorOf(() => nestedReshape.lower(x48(), zeros([8, 4]))) as TsptoCompileError).message).toContain("assign it to a tensor of its own first");
  });
});

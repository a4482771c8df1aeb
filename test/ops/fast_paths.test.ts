// The cpu fast paths of the float emitters against interp (the reference): row max / min on
// ordered integer keys (NaN, signed zeros, infinities bit-exact), the register-blocked float
// matmul at sizes with row and column remainders (bit-exact: fp32 accumulation in k order,
// as before), and softmax with the vectorized exp.
import { describe, it, expect } from "vitest";
import { pl, RunConfig, randn, zeros, tensor, assertClose } from "tspto";

const cfg = (platform: string) => new RunConfig({ platform });
const R = 6, N = 37; // N: 2 blocks of 16 lanes and a tail of 5

const rowMaxMin = pl.jit(function rowMaxMin(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, N]);
    const tmp = pl.createTile([R, N], pl.FP32);
    pl.store(pl.concat(pl.rowMax(x, tmp), pl.rowMin(x, tmp)), [0, 0], out);
  });
  return out;
});

// a scratch tile that is also read (stored) keeps its zero fill; one only passed as a
// reduction's tmp is not filled (generate.ts / forward.ts unreadScratchTiles)
const tmpRead = pl.jit(function tmpRead(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, N]);
    const tmp = pl.createTile([R, N], pl.FP32);
    const only = pl.createTile([R, N], pl.FP32);
    pl.store(pl.rowSum(pl.exp(x), tmp), [0, 0], out);
    pl.store(pl.rowMax(x, only), [0, 1], out);
    pl.store(tmp, [0, 2], out);
  });
  return out;
});

const MM = 13, KK = 7, NN = 53; // 2 row blocks of 6 + 1; columns 32 + 16 + 5
const mmAcc = pl.jit(function mmAcc(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const acc = pl.matmulAcc(pl.load(c0, [0, 0], [MM, NN]), pl.load(a, [0, 0], [MM, KK]), pl.load(b, [0, 0], [KK, NN]));
    pl.store(pl.add(pl.matmul(pl.load(a, [0, 0], [MM, KK]), pl.load(b, [0, 0], [KK, NN])), acc), [0, 0], c);
  });
  return c;
});

describe("cpu fast paths agree with interp", () => {
  it("rowMax / rowMin: NaN, signed zeros, infinities", () => {
    const rows = [
      Array.from({ length: N }, (_, j) => (j === 20 ? -0 : j === 33 ? 0 : -1 - j)),        // max +0 (after -0), min -37
      Array.from({ length: N }, (_, j) => (j % 2 ? -0 : 0)),                                // max +0, min -0
      Array.from({ length: N }, (_, j) => (j === 35 ? NaN : j)),                            // NaN in the tail
      Array.from({ length: N }, (_, j) => (j === 3 ? Infinity : j === 4 ? -Infinity : 0.5 * j)),
      Array.from({ length: N }, () => -0),                                                  // -0, -0
      Array.from({ length: N }, (_, j) => (j === 7 ? -NaN : -1e-40 * (j + 1))),            // NaN in a lane; subnormals
    ];
    const A = tensor(Float32Array.from(rows.flat()), { shape: [R, N], dtype: "float32" });
    const got = (p: string) => { const o = zeros([R, 2]); rowMaxMin(A, o, cfg(p)); return Array.from(o.data as Float32Array); };
    const cpu = got("cpu"), ref = got("interp");
    cpu.forEach((v, i) => expect(Object.is(v, ref[i]) || (Number.isNaN(v) && Number.isNaN(ref[i])), `${i}: ${v} vs ${ref[i]}`).toBe(true));
    expect(Object.is(cpu[2], 0)).toBe(true);
    expect(Object.is(cpu[3], -0)).toBe(true);
    expect(Number.isNaN(cpu[4]) && Number.isNaN(cpu[5])).toBe(true);
  });

  it("a created scratch tile that is read elsewhere is still zero", () => {
    const A = randn([R, N], { seed: 5 });
    const run = (p: string) => { const o = randn([R, N + 2], { seed: 6 }); tmpRead(A, o, cfg(p)); return o; };
    const cpu = run("cpu"), ref = run("interp");
    assertClose(cpu, ref, { rtol: 1e-5, atol: 1e-6 });
    const d = cpu.data as Float32Array;
    for (let r = 0; r < R; r++) for (let c = 2; c < N + 2; c++) expect(d[r * (N + 2) + c]).toBe(0);
  });

  it("float matmul + matmulAcc with remainder rows and columns", () => {
    const A = randn([MM, KK], { seed: 11 }), B = randn([KK, NN], { seed: 12 }), C0 = randn([MM, NN], { seed: 13 });
    const run = (p: string) => { const o = zeros([MM, NN]); mmAcc(A, B, C0, o, cfg(p)); return o; };
    assertClose(run("cpu"), run("interp"), { rtol: 1e-4, atol: 1e-5 });
  });
});

// A tensor-level matmul under an elementwise expression (src/passes/tensor_to_tile.ts,
// epilogueMatmul): `relu(matmul(x, w) + b)`, `matmul(q, k, { bTrans }) * scale`. Each output
// tile of the matmul is finished by the rest of the expression and stored once (no [M, N]
// intermediate). Checked against fp64 references on cpu and interp (partial tiles on every
// axis), cpu == interp bit for bit, the lowered form, and the messages of what stays unsupported.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros } from "tspto";
import { TsptoCompileError } from "../../src/ir/index.js";

const cfg = (platform: string) => new RunConfig({ platform });

const dense = pl.jit(function dense(x: pl.Tensor, w: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.relu(pl.add(pl.matmul(x, w), b))); });
  return y;
});
const SCALE = 0.125;
const scores = pl.jit(function scores(q: pl.Tensor, k: pl.Tensor, s: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(s, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE)); });
  return s;
});

/** x [M, K] @ w [K, N] in fp64 (w transposed: w is [N, K]). */
function mmRef(x: Float32Array, w: Float32Array, M: number, K: number, N: number, wT = false): Float64Array {
  const out = new Float64Array(M * N);
  for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
    let t = 0;
    for (let k = 0; k < K; k++) t += x[i * K + k] * (wT ? w[j * K + k] : w[k * N + j]);
    out[i * N + j] = t;
  }
  return out;
}
const worstRel = (got: Float32Array, want: ArrayLike<number>) => {
  let w = 0;
  for (let i = 0; i < got.length; i++) w = Math.max(w, Math.abs(got[i] - want[i]) / (1 + Math.abs(want[i])));
  return w;
};

describe.each(["cpu", "interp"] as const)("matmul epilogues on %s", (platform) => {
  it("relu(x @ w + b) with partial tiles on M, N and K", () => {
    const [M, K, N] = [300, 200, 130];
    const X = randn([M, K], { seed: 1 }), W = randn([K, N], { seed: 2 }), B = randn([1, N], { seed: 3 }), Y = zeros([M, N]);
    dense(X, W, B, Y, cfg(platform));
    const mm = mmRef(X.data as Float32Array, W.data as Float32Array, M, K, N), b = B.data as Float32Array;
    expect(worstRel(Y.data as Float32Array, Array.from(mm, (v, i) => Math.max(0, v + b[i % N])))).toBeLessThan(5e-5);
  });
  it("q @ kᵀ * scale (bTrans)", () => {
    const [S, D] = [77, 40];
    const Q = randn([S, D], { seed: 4 }), K = randn([S, D], { seed: 5 }), O = zeros([S, S]);
    scores(Q, K, O, cfg(platform));
    const mm = mmRef(Q.data as Float32Array, K.data as Float32Array, S, D, S, true);
    expect(worstRel(O.data as Float32Array, Array.from(mm, (v) => v * SCALE))).toBeLessThan(2e-5);
  });
});

describe("matmul epilogues: one computation, no intermediate", () => {
  it("cpu and interp agree bit for bit (interp models the fused multiply-adds)", () => {
    const X = randn([150, 90], { seed: 6 }), W = randn([90, 70], { seed: 7 }), B = randn([1, 70], { seed: 8 });
    const a = zeros([150, 70]), b = zeros([150, 70]);
    dense(X, W, B, a, cfg("cpu"));
    dense(X, W, B, b, cfg("interp"));
    expect(a.data).toEqual(b.data);
  });
  it("each output tile is finished and stored once: relu(acc + bias) is the store's value", () => {
    const text = dense.lower(randn([300, 200]), randn([200, 130]), randn([1, 130]), zeros([300, 130])).asText();
    const stores = text.split("\n").filter((l) => l.includes("pl.store("));
    expect(stores.length).toBeGreaterThan(0);
    for (const s of stores) expect(s).toMatch(/pl\.store\(pl\.relu\(pl\.add\(acc\w*, /);
  });
});

describe("matmul epilogues: what stays unsupported", () => {
  const twoMatmuls = pl.jit(function twoMatmuls(a: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.add(pl.matmul(a, b), pl.matmul(b, a))); });
    return y;
  });
  const transposed = pl.jit(function transposed(q: pl.Tensor, k: pl.Tensor, s: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.assign(s, pl.mul(pl.matmul(q, pl.transpose(k, 0, 1)), 2)); });
    return s;
  });
  const caught = (run: () => unknown): TsptoCompileError => {
    try { run(); } catch (e) { expect(e).toBeInstanceOf(TsptoCompileError); return e as TsptoCompileError; }
    throw new Error("no error");
  };
  it("two matmuls in one expression", () => {
    const e = caught(() => twoMatmuls.lower(randn([16, 16]), randn([16, 16]), zeros([16, 16])));
    expect(e.code).toBe("E_TENSOR_FORM");
    expect(e.message).toContain("pl.matmul: a tensor-level matmul must be the whole value of pl.assign / pl.assemble");
    expect(e.message).toMatch(/matmul_epilogue\.test\.ts:\d+:\d+/);
  });
  it("a transposed operand built with pl.transpose: the hint names bTrans", () => {
    const e = caught(() => transposed.lower(randn([16, 8]), randn([16, 8]), zeros([16, 16])));
    expect(e.code).toBe("E_TENSOR_FORM");
    expect(e.message).toContain("pl.matmul on tensors takes tensors or tensor windows (pl.slice) as its operands, not expressions");
    expect(e.hint).toBe("multiply by the transpose without building it: pl.matmul(a, b, { bTrans: true })");
  });
});

// The roofline's counts (src/ir/cost.ts): bytes each task kernel moves between tensors and tiles
// and the flops of its ops, counted from the lowered IR of known kernels against formulas: an
// elementwise add, matmuls (2·M·N·K, operands and result read and written at least once, the
// unit by dtype), a reduction, a fused chain, partial edge tiles, dynamic shapes, a loop whose
// cost depends on its index, orchestration loops, and a count that needs a value only the run
// has (which is not guessed). Every tile op of the registry has a cost rule.
import { describe, expect, it } from "vitest";
import { pl, randn, zeros } from "tspto";
import { allOps, programCost, totalBytes, totalFlops, type KernelCost } from "../../src/ir/index.js";

const only = (c: ReturnType<typeof programCost>): KernelCost => {
  expect(c.unknown).toBeNull();
  expect(c.kernels).toHaveLength(1);
  expect(c.kernels[0].unknown).toBeNull();
  return c.kernels[0];
};

const ROWS = 128, COLS = 128;
const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

const matmul = pl.jit(function matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.matmul(a, b)); });
  return c;
});
const matmulOff = pl.jit(function matmulOff(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(a, [0, 0], [64, 128]), pl.load(b, [0, 0], [128, 64]), { fpContract: "off" }), [0, 0], c);
  });
  return c;
});
const rowSum = pl.jit(function rowSum(a: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.rowSum(a)); });
  return c;
});
const chain = pl.jit(function chain(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.exp(pl.add(pl.mul(a, b), c))); });
  return out;
});
const addT = pl.jit(function addT(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});
const addDyn = pl.jit(function addDyn(a: pl.Tensor<["M", 64], pl.FP32>, b: pl.Tensor<["M", 64], pl.FP32>, out: pl.Out<pl.Tensor<["M", 64], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});
/** Trip i loads the first i + 1 rows: a cost that depends on the loop index. */
const triangle = pl.jit(function triangle(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 4)) {
      const t = pl.load(a, [0, 0], [4, 64], { validShape: [i + 1, 64] });
      pl.store(pl.exp(t), [0, 0], out);
    }
  });
  return out;
});
/** Four scopes in an orchestration loop: four calls of one kernel. */
const bands = pl.jit(function bands(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, 4)) {
    pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.neg(pl.load(a, [i * 16, 0], [16, 32])), [i * 16, 0], out); });
  }
  return out;
});
/** How much it stores depends on a value in memory. */
const dataDependent = pl.jit(function dataDependent(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [8, 8]);
    if (pl.read(a, [0, 0]) > 0) pl.store(pl.exp(t), [0, 0], out);
  });
  return out;
});

describe("programCost: known kernels", () => {
  it("an elementwise add of [128, 128] fp32: bytes = 3·128·128·4, flops = 128·128", () => {
    const k = only(programCost(addKernel.lower(randn([ROWS, COLS]), randn([ROWS, COLS]), zeros([ROWS, COLS]))));
    expect(k.kernel).toBe("addKernel_incore_0");
    expect(k.calls).toBe(1);
    expect(k.readBytes).toBe(2 * ROWS * COLS * 4);
    expect(k.writeBytes).toBe(ROWS * COLS * 4);
    expect(totalBytes(k)).toBe(3 * ROWS * COLS * 4);
    expect(totalFlops(k)).toBe(ROWS * COLS);
    expect(k.vectorFlops).toBe(ROWS * COLS);
  });

  it("a matmul [M,K]x[K,N]: flops 2·M·N·K; bytes at least the operands and the result once", () => {
    for (const [M, K, N] of [[256, 256, 256], [256, 128, 384], [200, 96, 72]]) {
      const k = only(programCost(matmul.lower(randn([M, K]), randn([K, N]), zeros([M, N]))));
      expect(totalFlops(k)).toBe(2 * M * N * K);
      expect(k.vectorFlops).toBe(2 * M * N * K);
      expect(k.readBytes).toBeGreaterThanOrEqual((M * K + K * N) * 4);
      expect(k.writeBytes).toBe(M * N * 4);
    }
  });

  it("the unit of a matmul's flops follows its operands: bf16 (fpContract fast) a bf16 dot unit, int8 an int8 one, fp32 / bf16 without contraction the vector pipes", () => {
    const M = 64, K = 128, N = 64;
    const bf = only(programCost(matmul.lower(randn([M, K], { dtype: "bfloat16" }), randn([K, N], { dtype: "bfloat16" }), zeros([M, N]))));
    expect(bf.dotBf16Flops).toBe(2 * M * N * K);
    expect(bf.vectorFlops).toBe(0);
    expect(bf.readBytes).toBeGreaterThanOrEqual((M * K + K * N) * 2);
    const i8 = only(programCost(matmul.lower(zeros([M, K], "int8"), zeros([K, N], "int8"), zeros([M, N], "int32"))));
    expect(i8.dotInt8Flops).toBe(2 * M * N * K);
    expect(i8.readBytes).toBeGreaterThanOrEqual(M * K + K * N);
    const off = only(programCost(matmulOff.lower(randn([M, K], { dtype: "bfloat16" }), randn([K, N], { dtype: "bfloat16" }), zeros([M, N]))));
    expect(off.vectorFlops).toBe(2 * M * N * K);
    expect(off.dotBf16Flops).toBe(0);
  });

  it("a row reduction: one op per element read, the input read once and the [M, 1] result written", () => {
    const k = only(programCost(rowSum.lower(randn([256, 512]), zeros([256, 1]))));
    expect(totalFlops(k)).toBe(256 * 512);
    expect(k.readBytes).toBe(256 * 512 * 4);
    expect(k.writeBytes).toBe(256 * 4);
  });

  it("a fused elementwise chain counts each op once per element: exp(a * b + c) is 3", () => {
    const k = only(programCost(chain.lower(randn([64, 256]), randn([64, 256]), randn([64, 256]), zeros([64, 256]))));
    expect(totalFlops(k)).toBe(3 * 64 * 256);
    expect(totalBytes(k)).toBe(4 * 64 * 256 * 4);
  });

  it("partial edge tiles count their valid region only", () => {
    for (const [r, c] of [[100, 70], [1, 333], [257, 1]]) {
      const k = only(programCost(addT.lower(randn([r, c]), randn([r, c]), zeros([r, c]))));
      expect(totalBytes(k)).toBe(3 * r * c * 4);
      expect(totalFlops(k)).toBe(r * c);
    }
  });

  it("dynamic shapes: counted with the launch's extents, and not guessed without them", () => {
    const p = addDyn.lower(randn([200, 64]), randn([200, 64]), zeros([200, 64]));
    for (const m of [200, 13, 1024]) {
      const k = only(programCost(p, [[m, 64], [m, 64], [m, 64]]));
      expect(totalBytes(k)).toBe(3 * m * 64 * 4);
      expect(totalFlops(k)).toBe(m * 64);
    }
    const none = programCost(p);
    const why = none.unknown ?? none.kernels.map((k) => k.unknown).join("; ");
    expect(why).toMatch(/known only at run time/);
  });

  it("a loop whose cost depends on its index is counted trip by trip", () => {
    const k = only(programCost(triangle.lower(randn([4, 64]), zeros([4, 64]))));
    expect(k.readBytes).toBe((1 + 2 + 3 + 4) * 64 * 4);
    expect(k.writeBytes).toBe((1 + 2 + 3 + 4) * 64 * 4);
    expect(totalFlops(k)).toBe((1 + 2 + 3 + 4) * 64);
  });

  it("an orchestration loop of scopes: one kernel, a call per trip, the counts summed", () => {
    const c = programCost(bands.lower(randn([64, 32]), zeros([64, 32])));
    expect(c.unknown).toBeNull();
    const calls = c.kernels.reduce((s, k) => s + k.calls, 0);
    expect(calls).toBe(4);
    expect(c.kernels.reduce((s, k) => s + totalBytes(k), 0)).toBe(2 * 64 * 32 * 4);
    expect(c.kernels.reduce((s, k) => s + totalFlops(k), 0)).toBe(64 * 32);
  });

  it("a branch on a value in memory whose sides cost differently is unknown, with the reason (not a guess)", () => {
    const c = programCost(dataDependent.lower(randn([8, 8]), zeros([8, 8])));
    expect(c.unknown).toBeNull();
    expect(c.kernels).toHaveLength(1);
    expect(c.kernels[0].calls).toBe(1);
    expect(c.kernels[0].unknown).toMatch(/^the branch taken at cost\.test\.ts:\d+ depends on a value known only at run time, and its sides cost differently$/);
  });
});

describe("the registry's cost rules", () => {
  it("every tile op is elementwise (one op per element by default) or declares its cost", () => {
    const elementwise = (o: ReturnType<typeof allOps>[number]) => o.fusable !== false && o.pure && o.params.every((p) => p.kind !== "ints" && p.kind !== "mem" && p.kind !== "values");
    const missing = allOps().filter((o) => o.level === "tile" && !o.cost && !elementwise(o)).map((o) => o.name);
    expect(missing).toEqual([]);
  });
});

// Tensor-level matmuls split across the cores (TensorToTile + SplitParallelLoops): the loop
// over output tiles that is split is the one with the most tiles, so a decode GEMV (M = 1, or a
// dynamic M) is split by bands of columns — each task reads its own columns of the weight once —
// with the epilogue (bias, residual, activation) still applied to each output tile before its one
// store; prefill-sized and static-M matmuls keep their row bands. Results are bit-identical to
// interp (the split changes which core computes a tile, not its arithmetic).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { forEachExpr, type Call, type Program } from "../../src/ir/index.js";
import type { SpmdAttr } from "../../src/passes/index.js";
import { coreThreadCount } from "../../src/runtime/worker.js";

const bits = (t: HostTensor) => Array.from(t.data as Float32Array);

/** A decode / prefill dense layer: y = gelu-ish(x @ w + b) + r (the residual), x of a dynamic row count. */
const dense = pl.jit(function dense(x: pl.Tensor<["S", 256], pl.FP32>, w: pl.Tensor<[256, 1000], pl.FP32>, b: pl.Tensor<[1, 1000], pl.FP32>,
  r: pl.Tensor<["S", 1000], pl.FP32>, y: pl.Out<pl.Tensor<["S", 1000], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.add(pl.relu(pl.add(pl.matmul(x, w), b)), r));
  });
  return y;
});

/** Tied logits: x @ wteᵀ with the embedding stored [vocab, d] (bTrans), one static row. */
const logits = pl.jit(function logits(x: pl.Tensor<[1, 256], pl.FP32>, wte: pl.Tensor<[3001, 256], pl.FP32>, y: pl.Out<pl.Tensor<[1, 3001], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.matmul(x, wte, { bTrans: true }));
  });
  return y;
});

function entryCalls(p: Program): Call[] {
  const out: Call[] = [];
  forEachExpr(p.entryFunction.body, (e) => { if (e.kind === "call" && e.op === "call") out.push(e); });
  return out;
}

/** The band of the kernel parameter named `name` (band args are the callee's parameter positions). */
const bandOf = (p: Program, call: Call, spmd: SpmdAttr) => (name: string) => {
  const callee = p.getFunction(String(call.attrs.callee))!;
  const arg = callee.params.findIndex((q) => q.var.name === name);
  return spmd.bands.find((b) => b.arg === arg);
};

describe("tensor-level matmul across the cores", () => {
  it("a GEMV with a dynamic row count is one kernel whose column loop is split (bands along axis 1 of y and w); the epilogue stays fused", () => {
    const p = dense.lower(randn([1, 256]), randn([256, 1000]), randn([1, 1000]), randn([1, 1000]), zeros([1, 1000]));
    const calls = entryCalls(p);
    expect(calls).toHaveLength(1);
    const spmd = calls[0].attrs.spmd as unknown as SpmdAttr;
    expect(spmd).toBeDefined();
    const band = bandOf(p, calls[0], spmd);
    expect(band("y")?.axis).toBe(1);
    expect(band("w")?.axis).toBe(1);
    expect(band("b")?.axis).toBe(1);
    // no [S, 1000] intermediate: the entry creates no tensor, the kernel stores y only
    let creates = 0;
    forEachExpr(p.entryFunction.body, (e) => { if (e.kind === "call" && e.op === "tensor.create") creates++; });
    expect(creates).toBe(0);
    const kernel = p.functions.find((f) => f.fnKind === "incore")!;
    const stored = new Set<string>();
    forEachExpr(kernel.body, (e) => { if (e.kind === "call" && e.op === "tile.store" && e.args[2].kind === "var") stored.add(e.args[2].name); });
    expect([...stored]).toEqual(["y"]);
  });

  it("cpu == interp bit for bit at 1, 5, 128 and 131 rows (whole tiles, row-by-row tails)", () => {
    const w = randn([256, 1000], { seed: 2 }), b = randn([1, 1000], { seed: 3 });
    for (const s of [1, 5, 128, 131]) {
      const x = randn([s, 256], { seed: 10 + s }), r = randn([s, 1000], { seed: 20 + s });
      const yc = zeros([s, 1000]), yi = zeros([s, 1000]);
      dense(x, w, b, r, yc, new RunConfig({ platform: "cpu" }));
      dense(x, w, b, r, yi, new RunConfig({ platform: "interp" }));
      expect(bits(yc), `S = ${s}`).toEqual(bits(yi));
    }
  });

  it("tied logits (bTrans, 3001 columns: a partial last tile) are split by bands of the embedding's rows", () => {
    const x = randn([1, 256], { seed: 4 }), wte = randn([3001, 256], { seed: 5 });
    const p = logits.lower(x, wte, zeros([1, 3001]));
    const call = entryCalls(p)[0];
    const band = bandOf(p, call, call.attrs.spmd as unknown as SpmdAttr);
    expect(band("wte")).toBeDefined();
    expect(band("wte")?.axis ?? 0).toBe(0); // wte [3001, 256]: its rows
    expect(band("y")?.axis).toBe(1);        // y [1, 3001]: its columns
    const yc = zeros([1, 3001]), yi = zeros([1, 3001]);
    logits(x, wte, yc, new RunConfig({ platform: "cpu" }));
    logits(x, wte, yi, new RunConfig({ platform: "interp" }));
    expect(bits(yc)).toEqual(bits(yi));
  });

  it("one launch of the GEMV runs one task per core, no task waiting for another (deps.json)", () => {
    const x = randn([1, 256], { seed: 6 }), w = randn([256, 1000], { seed: 7 }), b = randn([1, 1000], { seed: 8 }), r = randn([1, 1000], { seed: 9 });
    const y = zeros([1, 1000]);
    const compiled = ir.compile(dense.lower(x, w, b, r, y), { platform: "cpu" });
    using wk = new ChipWorker(new RunConfig({ platform: "cpu", enableDepGen: true }));
    wk.run(compiled, x, w, b, r, y);
    const deps = JSON.parse(readFileSync(join(compiled.outputDir, "dfx_outputs", "deps.json"), "utf8")) as { tasks: unknown[]; edges: unknown[] };
    expect(deps.tasks.length).toBe(Math.min(coreThreadCount(), Math.ceil(1000 / 128)));
    expect(deps.edges).toEqual([]);
  });
});

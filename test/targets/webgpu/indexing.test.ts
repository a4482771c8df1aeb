// The indexing ops on webgpu (iota, gather in its tile and tensor forms, batchMatmul with
// transposes: test/ops/fixtures/indexing.ts) against interp with index tensors that stay inside
// their tables (the corpus test's random inputs would not), the run-time E_KERNEL of an index
// outside its table (the failure record names the index; zero is read, nothing outside the
// table), and E_DTYPE for int64 indices (WGSL has no 64-bit integers). Skipped, saying why,
// where no WebGPU device opens.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, RunConfig, randn, tensor, zeros, TsptoError } from "tspto";
import { E, S, V, embed, ids, pickCols, tileGather } from "../../ops/fixtures/indexing.js";
import { agreesWithInterp, titled, webgpuUnavailable } from "./helpers.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu indexing tests skipped: ${why}`);

const i32 = (v: number[], shape: number[]) => tensor(Int32Array.from(v), { shape, dtype: "int32" });

// pickCols / tileGather of the fixtures with int32 indices
const pickCols32 = pl.jit(function pickCols32(t: pl.Tensor<[7, 40], pl.FP32>, cols: pl.Tensor<[1, 5], pl.INT32>, out: pl.Out<pl.Tensor<[7, 5], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.gather(t, cols, 1)); });
});
const tileGather32 = pl.jit(function tileGather32(t: pl.Tensor<[8, 16], pl.FP32>, r: pl.Tensor<[5, 1], pl.INT32>, c: pl.Tensor<[1, 3], pl.INT32>,
  rows: pl.Out<pl.Tensor<[5, 16], pl.FP32>>, cols: pl.Out<pl.Tensor<[8, 3], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tt = pl.load(t, [0, 0], [8, 16]);
    pl.store(pl.gather(tt, pl.load(r, [0, 0], [5, 1])), [0, 0], rows);
    pl.store(pl.gather(tt, pl.load(c, [0, 0], [1, 3]), 1), [0, 0], cols);
  });
});

describe.skipIf(!!why)(titled("webgpu: indexing ops", why), () => {
  let gpu: ChipWorker, cpu: ChipWorker;
  beforeAll(async () => {
    gpu = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync();
    cpu = new ChipWorker(new RunConfig({ platform: "interp" }));
  });
  afterAll(() => { gpu?.close(); cpu?.close(); });

  const r = (shape: number[], seed = 1) => randn(shape, { seed });
  const embedP = () => embed.lower(r([V, E]), r([16, E]), ids(S), zeros([S, E]));
  const pickP = () => pickCols32.lower(r([7, 40]), i32([0, 39, 5, 5, 20], [1, 5]), zeros([7, 5]));
  const tileP = () => tileGather32.lower(r([8, 16]), ids(5, "int32", 8), i32([15, 0, 7], [1, 3]), zeros([5, 16]), zeros([8, 3]));

  it("a tensor-level gather inside an expression (wte[ids] + wpe) agrees with interp", async () => {
    await agreesWithInterp(embedP(), "embed", gpu, cpu, undefined, { 2: ids(S) });
  });
  it("columns of a tensor at an index row, and rows / columns of a tile, agree with interp", async () => {
    await agreesWithInterp(pickP(), "pickCols32", gpu, cpu, undefined, { 1: i32([0, 39, 5, 5, 20], [1, 5]) });
    await agreesWithInterp(tileP(), "tileGather32", gpu, cpu, undefined, { 1: ids(5, "int32", 8), 2: i32([15, 0, 7], [1, 3]) });
  });

  async function failure(p: ReturnType<typeof embedP>, args: unknown[]): Promise<TsptoError> {
    const c = ir.compile(p, { platform: "webgpu" });
    try { await gpu.runAsync(c, ...args); } catch (e) { if (e instanceof TsptoError) return e; throw e; }
    throw new Error("no error");
  }
  it("an index outside its table is E_KERNEL naming the index and the table; the host output is not written", async () => {
    const tok = ids(S); (tok.data as Int32Array)[4] = V;  // one past the last row
    const out = zeros([S, E]);
    const e = await failure(embedP(), [r([V, E]), r([16, E]), tok, out]);
    expect(e.code).toBe("E_KERNEL");
    expect(e.message).toMatch(new RegExp(`gather window \\[${V}, 0\\] \\+ \\[1, ${E}\\] is outside tensor 'wte' of shape \\[${V}, ${E}\\]`));
    expect(Array.from(out.data as Float32Array).every((v) => v === 0)).toBe(true);
    const bad = await failure(tileP(), [r([8, 16]), ids(5, "int32", 8), i32([15, -1, 7], [1, 3]), zeros([5, 16]), zeros([8, 3])]);
    expect(bad.code).toBe("E_KERNEL");
    expect(bad.message).toMatch(/gather window \[0, -1\] \+ \[8, 1\] is outside tile '.*' of shape \[8, 16\]/);
    // the device goes on: the next launch with good indices agrees with interp
    await agreesWithInterp(embedP(), "embed", gpu, cpu, undefined, { 2: ids(S) });
  });
  it("int64 indices are E_DTYPE at compile time", () => {
    const p = pickCols.lower(r([7, 40]), tensor(BigInt64Array.from([0n, 39n, 5n, 5n, 20n]), { shape: [1, 5], dtype: "int64" }), zeros([7, 5]));
    expect(() => ir.compile(p, { platform: "webgpu" })).toThrow(/\[E_DTYPE\] parameter 'cols' of 'pickCols' is int64, which the webgpu platform does not support/);
  });
});

// The op formulas of the webgpu platform against interp (the reference semantics), on every
// dtype family each op takes: integer arithmetic with saturation at the dtype's edges (int32
// through the i32 saturating helpers), bitwise ops and shifts, comparisons and selects,
// transcendental float ops, casts in every rounding mode, float16 / bfloat16 storage (packed
// 16-bit halves, stored with atomics), int8 / uint8 / bool storage, reductions, arg-reductions,
// broadcasts and matmul. Integer results must be identical; float results within the fp32
// accuracy of the WGSL built-ins. Skipped, saying why, where no WebGPU device opens.
import { afterAll, beforeAll, describe, it } from "vitest";
import { pl, ChipWorker, RunConfig, tensor, zeros, randn, type DType, type HostTensor } from "tspto";
import { mulberry32 } from "../../codegen/helpers.js";
import { agreesWithInterp, titled, webgpuUnavailable } from "./helpers.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu op tests skipped: ${why}`);

const R = 4, C = 40;

const intKernel = pl.jit(function intKernel(a: pl.Tensor, b: pl.Tensor, s: pl.Tensor, out: pl.Out<pl.Tensor>, mask: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, C]);
    const y = pl.load(b, [0, 0], [R, C]);
    const n = pl.load(s, [0, 0], [R, C]);
    pl.store(pl.add(x, y), [0, 0], out);
    pl.store(pl.sub(x, y), [R, 0], out);
    pl.store(pl.mul(x, y), [2 * R, 0], out);
    pl.store(pl.div(x, y), [3 * R, 0], out);
    pl.store(pl.maximum(x, y), [4 * R, 0], out);
    pl.store(pl.minimum(x, 3), [5 * R, 0], out);
    pl.store(pl.neg(x), [6 * R, 0], out);
    pl.store(pl.abs(x), [7 * R, 0], out);
    pl.store(pl.relu(x), [8 * R, 0], out);
    pl.store(pl.bitAnd(x, y), [9 * R, 0], out);
    pl.store(pl.bitOr(x, y), [10 * R, 0], out);
    pl.store(pl.bitXor(x, 90), [11 * R, 0], out);
    pl.store(pl.bitNot(x), [12 * R, 0], out);
    pl.store(pl.shl(x, n), [13 * R, 0], out);
    pl.store(pl.shr(x, n), [14 * R, 0], out);
    pl.store(pl.fmod(x, y), [15 * R, 0], out);
    pl.store(pl.rem(x, y), [16 * R, 0], out);
    pl.store(pl.rem(100, y), [17 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, y, "lt"), x, y), [18 * R, 0], out);
    pl.store(pl.sub(7, x), [19 * R, 0], out);
    pl.store(pl.mul(n, 2.5), [20 * R, 0], out);
    pl.store(pl.expands(x, 3), [21 * R, 0], out);
    pl.store(pl.cmp(x, y, "ne"), [0, 0], mask);
    pl.store(pl.cmp(x, 1, "ge"), [R, 0], mask);
  });
  return out;
});

const floatKernel = pl.jit(function floatKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, mask: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, C]);
    const y = pl.load(b, [0, 0], [R, C]);
    pl.store(pl.add(x, y), [0, 0], out);
    pl.store(pl.sub(x, 0.1), [R, 0], out);
    pl.store(pl.mul(x, y), [2 * R, 0], out);
    pl.store(pl.div(x, y), [3 * R, 0], out);
    pl.store(pl.maximum(x, y), [4 * R, 0], out);
    pl.store(pl.minimum(0, x), [5 * R, 0], out);
    pl.store(pl.exp(x), [6 * R, 0], out);
    pl.store(pl.log(pl.abs(x)), [7 * R, 0], out);
    pl.store(pl.sqrt(pl.abs(x)), [8 * R, 0], out);
    pl.store(pl.rsqrt(pl.abs(y)), [9 * R, 0], out);
    pl.store(pl.recip(x), [10 * R, 0], out);
    pl.store(pl.neg(pl.abs(x)), [11 * R, 0], out);
    pl.store(pl.relu(x), [12 * R, 0], out);
    pl.store(pl.sin(x), [13 * R, 0], out);
    pl.store(pl.cos(x), [14 * R, 0], out);
    pl.store(pl.tanh(pl.mul(x, 30)), [15 * R, 0], out);
    pl.store(pl.sigmoid(x), [16 * R, 0], out);
    pl.store(pl.erf(x), [17 * R, 0], out);
    pl.store(pl.pow(pl.abs(x), y), [18 * R, 0], out);
    pl.store(pl.pow(x, 3), [19 * R, 0], out);
    pl.store(pl.lrelu(x, 0.1), [20 * R, 0], out);
    pl.store(pl.fmod(x, y), [21 * R, 0], out);
    pl.store(pl.rem(x, y), [22 * R, 0], out);
    pl.store(pl.sel(pl.cmp(x, y, "gt"), x, 0.5), [23 * R, 0], out);
    pl.store(pl.expands(x, 2.5), [24 * R, 0], out);
    pl.store(pl.cmp(x, y, "eq"), [0, 0], mask);
    pl.store(pl.cmp(x, 0, "le"), [R, 0], mask);
  });
  return out;
});

const castKernel = pl.jit(function castKernel(a: pl.Tensor, i8: pl.Out<pl.Tensor>, u8: pl.Out<pl.Tensor>, i32: pl.Out<pl.Tensor>, f16: pl.Out<pl.Tensor>,
  bf16: pl.Out<pl.Tensor>, b: pl.Out<pl.Tensor>, back: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [R, C]);
    pl.store(pl.cast(x, pl.INT8, "round"), [0, 0], i8);
    pl.store(pl.cast(x, pl.INT8, "floor"), [R, 0], i8);
    pl.store(pl.cast(x, pl.UINT8, "ceil"), [0, 0], u8);
    pl.store(pl.cast(x, pl.UINT8, "trunc"), [R, 0], u8);
    pl.store(pl.cast(x, pl.INT32, "rint"), [0, 0], i32);
    pl.store(pl.cast(pl.cast(x, pl.INT16, "round"), pl.INT32), [R, 0], i32);
    pl.store(pl.cast(x, pl.FP16), [0, 0], f16);
    pl.store(pl.cast(x, pl.BF16), [0, 0], bf16);
    pl.store(pl.cast(x, pl.BOOL), [0, 0], b);
    pl.store(pl.cast(pl.cast(x, pl.INT8, "round"), pl.FP32), [0, 0], back);
  });
  return i8;
});

const M = 24, N = 40;
const reduceKernel = pl.jit(function reduceKernel(a: pl.Tensor, rows: pl.Out<pl.Tensor>, cols: pl.Out<pl.Tensor>, args: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const tmp = pl.createTile([M, N], pl.FP32);
    pl.store(pl.concat(pl.concat(pl.rowSum(x, tmp), pl.rowMax(x, tmp)), pl.concat(pl.rowMin(x, tmp), pl.rowProd(x))), [0, 0], rows);
    pl.store(pl.concat(pl.concat(pl.colSum(x), pl.colMax(x)), pl.colProd(x)), [0, 0], cols);
    pl.store(pl.concat(pl.rowArgmax(x), pl.rowArgmin(x)), [0, 0], args);
  });
  return rows;
});
const intReduceKernel = pl.jit(function intReduceKernel(a: pl.Tensor, rows: pl.Out<pl.Tensor>, cols: pl.Out<pl.Tensor>, args: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const tmp = pl.createTile([M, N], pl.INT32);
    pl.store(pl.concat(pl.concat(pl.rowSum(x, tmp), pl.rowMax(x, tmp)), pl.concat(pl.rowMin(x, tmp), pl.rowProd(x))), [0, 0], rows);
    pl.store(pl.concat(pl.concat(pl.colSum(x), pl.colMax(x)), pl.colProd(x)), [0, 0], cols);
    pl.store(pl.concat(pl.rowArgmax(x), pl.rowArgmin(x)), [0, 0], args);
  });
  return rows;
});

const broadcastKernel = pl.jit(function broadcastKernel(a: pl.Tensor, rv: pl.Tensor, cv: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [M, N]);
    const r = pl.load(rv, [0, 0], [M, 1]);
    const c = pl.load(cv, [0, 0], [1, N]);
    pl.store(pl.rowExpandAdd(x, r), [0, 0], out);
    pl.store(pl.rowExpandMax(x, r), [M, 0], out);
    pl.store(pl.colExpandMul(x, c), [2 * M, 0], out);
    pl.store(pl.colExpandExpdif(x, c), [3 * M, 0], out);
    pl.store(pl.prelu(x, r), [4 * M, 0], out);
    pl.store(pl.broadcastTo(c, [M, N]), [5 * M, 0], out);
    pl.store(pl.transpose(pl.slice(x, [N / 2, M], [0, 0]), 0, 1), [6 * M, 0], out);
  });
  return out;
});

const MM = 32, KK = 48, NN = 24;
const matmulKernel = pl.jit(function matmulKernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [MM, KK]);
    const y = pl.load(b, [0, 0], [KK, NN]);
    pl.store(pl.matmul(x, y), [0, 0], c);
  });
  return c;
});

/** Integer data over the whole range of the dtype (int32: near the edges too, so additions and products saturate). */
function ints(d: DType, seed: number, small = false): HostTensor {
  const rnd = mulberry32(seed);
  const lim: Record<string, [number, number]> = { int8: [-128, 127], int16: [-32768, 32767], int32: [-(2 ** 31), 2 ** 31 - 1], uint8: [0, 255] };
  const [lo, hi] = small ? [0, 40] : lim[d];
  const v = Array.from({ length: R * C }, (_, i) => {
    if (!small && d === "int32" && i % 5 === 0) return rnd() < 0.5 ? lo + Math.floor(rnd() * 3) : hi - Math.floor(rnd() * 3);
    const span = d === "int32" && !small && i % 2 ? 2 ** 16 : hi - lo;
    return Math.floor((d === "int32" && !small && i % 2 ? -(2 ** 15) : lo) + rnd() * span);
  });
  return tensor(v, { shape: [R, C], dtype: d });
}

describe.skipIf(!!why)(titled("webgpu: op formulas agree with interp", why), () => {
  let gpu: ChipWorker, cpu: ChipWorker;
  beforeAll(async () => {
    gpu = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync();
    cpu = new ChipWorker(new RunConfig({ platform: "interp" }));
  });
  afterAll(() => { gpu?.close(); cpu?.close(); });
  const exact = { rtol: 0, atol: 0 };

  for (const d of ["int32", "int16", "int8", "uint8"] as const) {
    it(`integer ops on ${d} (saturating at the dtype's edges; sub-word stores)`, async () => {
      const p = intKernel.lower(ints(d, 1), ints(d, 2), ints(d, 3, true), zeros([22 * R, C], d), zeros([2 * R, C], "bool"));
      await agreesWithInterp(p, `intKernel-${d}`, gpu, cpu, exact, { 0: ints(d, 1), 1: ints(d, 2), 2: ints(d, 3, true) });
    });
  }
  for (const d of ["float32", "float16", "bfloat16"] as const) {
    it(`float ops on ${d}`, async () => {
      const p = floatKernel.lower(randn([R, C], { dtype: d }), randn([R, C], { dtype: d }), zeros([25 * R, C], d), zeros([2 * R, C], "bool"));
      // fp32: within a few ulp of the reference's double-then-rounded values; float16 / bfloat16: one ulp of theirs
      await agreesWithInterp(p, `floatKernel-${d}`, gpu, cpu, d === "float32" ? { rtol: 1e-6, atol: 1e-7 } : d === "float16" ? { rtol: 1e-3, atol: 1e-6 } : { rtol: 8e-3, atol: 1e-6 });
    });
  }
  it("casts in every rounding mode, to every dtype", async () => {
    const a = tensor(Array.from({ length: R * C }, (_, i) => (i - 80) * 0.75 + (i % 3 === 0 ? 0.5 : 0) + (i % 7 === 0 ? 300 : 0)), { shape: [R, C] });
    const p = castKernel.lower(a, zeros([2 * R, C], "int8"), zeros([2 * R, C], "uint8"), zeros([2 * R, C], "int32"), zeros([R, C], "float16"),
      zeros([R, C], "bfloat16"), zeros([R, C], "bool"), zeros([R, C]));
    await agreesWithInterp(p, "castKernel", gpu, cpu, exact, { 0: a });
  });
  for (const d of ["float32", "int32"] as const) {
    it(`row and column reductions, products and arg-reductions on ${d}`, async () => {
      const a = d === "int32" ? tensor(Array.from({ length: M * N }, (_, i) => ((i * 37) % 11) - 5), { shape: [M, N], dtype: "int32" }) : randn([M, N], { seed: 7 });
      const p = (d === "int32" ? intReduceKernel : reduceKernel).lower(a, zeros([M, 4], d), zeros([1, 3 * N], d), zeros([M, 2], "int32"));
      await agreesWithInterp(p, `reduceKernel-${d}`, gpu, cpu, d === "int32" ? exact : { rtol: 1e-5, atol: 1e-5 }, { 0: a });
    });
  }
  it("broadcasts, prelu, broadcastTo, transpose of a slice", async () => {
    const p = broadcastKernel.lower(randn([M, N]), randn([M, 1]), randn([1, N]), zeros([7 * M, N]));
    await agreesWithInterp(p, "broadcastKernel", gpu, cpu, { rtol: 1e-5, atol: 1e-5 });
  });
  for (const [a, b] of [["float32", "float32"], ["float16", "float16"], ["bfloat16", "bfloat16"], ["int8", "int32"]] as const) {
    it(`matmul of ${a} into ${b}`, async () => {
      const x = a === "int8" ? ints("int8", 11) : randn([MM, KK], { dtype: a, seed: 11 });
      const xa = a === "int8" ? tensor(Array.from({ length: MM * KK }, (_, i) => ((i * 7) % 19) - 9), { shape: [MM, KK], dtype: "int8" }) : x;
      const ya = a === "int8" ? tensor(Array.from({ length: KK * NN }, (_, i) => ((i * 5) % 17) - 8), { shape: [KK, NN], dtype: "int8" }) : randn([KK, NN], { dtype: a, seed: 12 });
      const p = matmulKernel.lower(xa, ya, zeros([MM, NN], b === "int32" ? "int32" : "float32"));
      await agreesWithInterp(p, `matmul-${a}`, gpu, cpu, a === "int8" ? exact : { rtol: 1e-5, atol: 1e-5 }, { 0: xa, 1: ya });
    });
  }
});

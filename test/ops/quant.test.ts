// pl.matmulQuant (src/ir/ops/quant.ts, cpu: src/codegen/cpp/emitters/quant.ts) and the host
// helper tspto.quantize: int8 and int4 weights with per-group fp32/fp16/bf16 scales, group sizes
// that are and are not multiples of 16 (32, 48, 96, 128, 40, 24), tile and tensor forms, M = 1
// (the GEMV) and M > 1, dynamic M, N not a multiple of the tile, an epilogue (bias + residual).
// cpu and interp are compared against an independent float64 reference built from the
// dequantized weight (tspto.dequantize): |out - ref| <= 1e-5 * sum_k |x * w| + 1e-30, the bound
// docs/semantics.md states (interp sums in float64, cpu in fp32 in its own order).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, quantize, dequantize, tensor, type HostTensor, type QuantizedWeight } from "tspto";

const f32 = (t: HostTensor) => Float32Array.from(t.toArray());

/** out[i][n] = sum_k x[i][k] * deq[n][k] in float64, and sum_k |x * deq| (the error scale). */
function reference(x: HostTensor, qw: QuantizedWeight): { ref: Float64Array; mag: Float64Array } {
  const d = f32(dequantize(qw));
  const xs = f32(x);
  const [n, k] = qw.shape, m = x.shape[0];
  const ref = new Float64Array(m * n), mag = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = 0, a = 0;
    for (let q = 0; q < k; q++) { const p = xs[i * k + q] * d[j * k + q]; s += p; a += Math.abs(p); }
    ref[i * n + j] = s; mag[i * n + j] = a;
  }
  return { ref, mag };
}
function expectNear(got: Float32Array, ref: Float64Array, mag: Float64Array, what: string): void {
  let worst = 0;
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]) / (mag[i] + 1e-30));
  expect(worst, `${what}: max |out - ref| / sum|x*w|`).toBeLessThanOrEqual(1e-5);
}

// Tile form: x [M, K] times w [N, K] (one kernel, whole tiles).
const M = 5, K = 192, N = 37;
const tileKernels = {
  8: (g: number) => pl.jit(function q8(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.store(pl.matmulQuant(pl.load(x, [0, 0], [M, K]), pl.load(w, [0, 0], [N, K]), pl.load(s, [0, 0], [N, K / g]), { bits: 8, groupSize: g }), [0, 0], y);
    });
    return y;
  }, { scope: { g } }),
  4: (g: number) => pl.jit(function q4(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.store(pl.matmulQuant(pl.load(x, [0, 0], [M, K]), pl.load(w, [0, 0], [N, K / 2]), pl.load(s, [0, 0], [N, K / g]), { bits: 4, groupSize: g }), [0, 0], y);
    });
    return y;
  }, { scope: { g } }),
};

describe("pl.matmulQuant: tile form", () => {
  for (const bits of [8, 4] as const) {
    for (const [g, sd] of [[32, "float32"], [48, "float16"], [96, "bfloat16"], [64, "float32"], [24, "float32"], [192, "bfloat16"]] as const) {
      it(`int${bits}, groupSize ${g}, ${sd} scales: cpu and interp within the bound of a float64 reference`, () => {
        const x = randn([M, K], { seed: 1 }), wf = randn([N, K], { seed: 2 + g });
        const qw = quantize(wf, { bits, groupSize: g, scaleDtype: sd });
        const { ref, mag } = reference(x, qw);
        for (const platform of ["cpu", "interp"]) {
          const y = zeros([M, N]);
          tileKernels[bits](g)(x, qw.w, qw.scales, y, new RunConfig({ platform }));
          expectNear(f32(y), ref, mag, `${platform} int${bits} g${g}`);
        }
      });
    }
  }
});

// Tensor form: x [S, K] with S dynamic (decode S = 1, prefill S > 1), N not a multiple of a tile,
// with the epilogue + bias (a [1, N] row) + residual, and a plain assign.
const K2 = 384, N2 = 1000;
const linear = (bits: 4 | 8, g: number) => pl.jit(function lin(x: pl.Tensor<["S", 384], pl.FP32>, w: pl.Tensor, s: pl.Tensor, b: pl.Tensor<[1, 1000], pl.FP32>,
  r: pl.Tensor<["S", 1000], pl.FP32>, y: pl.Out<pl.Tensor<["S", 1000], pl.FP32>>, z: pl.Out<pl.Tensor<["S", 1000], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.matmulQuant(x, w, s, { bits, groupSize: g }));
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(z, pl.add(pl.add(pl.matmulQuant(x, w, s, { bits, groupSize: g }), b), r));
  });
  return y;
}, { scope: { bits, g } });

const plain = pl.jit(function plainQ(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmulQuant(x, w, s, { bits: 8, groupSize: 128 })); });
});

describe("pl.matmulQuant: tensor form", () => {
  it("N prime (no tile divides it): the whole tiles and the last one are one loop, split over the cores, values as the reference", () => {
    // (two loops were one task: GPT-2's quantized tied logits, N = 50257 = 29 x 1733, ran on one core)
    const n = 1009;
    const qw = quantize(randn([n, K2], { seed: 7 }), { bits: 8, groupSize: 128 });
    const x = randn([1, K2], { seed: 1 });
    const prog = plain.compile(x, qw.w, qw.scales, zeros([1, n]));
    const dir = join(prog.outputDir, "kernels");
    const src = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith(".cpp"))!), "utf8");
    expect(src).toMatch(/iterations split into row bands, one task per core \(SPMD\)/);
    const y = zeros([1, n]);
    plain(x, qw.w, qw.scales, y);
    const { ref, mag } = reference(x, qw);
    expectNear(f32(y), ref, mag, "cpu");
  });
  for (const [bits, g] of [[8, 128], [4, 32], [4, 96], [8, 48]] as const) {
    it(`int${bits} groupSize ${g}, S = 1, 3, 17: cpu and interp match the reference, epilogue fused`, () => {
      const wf = randn([N2, K2], { seed: 7 });
      const qw = quantize(wf, { bits, groupSize: g });
      const b = randn([1, N2], { seed: 8 });
      const kern = linear(bits, g);
      for (const S of [1, 3, 17]) {
        const x = randn([S, K2], { seed: 10 + S }), r = randn([S, N2], { seed: 20 + S });
        const { ref, mag } = reference(x, qw);
        const bs = f32(b), rs = f32(r);
        const refZ = ref.map((v, i) => v + bs[i % N2] + rs[i]);
        const magZ = mag.map((v, i) => v + Math.abs(bs[i % N2]) + Math.abs(rs[i]));
        for (const platform of S > 3 ? ["cpu"] : ["cpu", "interp"]) {
          const y = zeros([S, N2]), z = zeros([S, N2]);
          kern(x, qw.w, qw.scales, b, r, y, z, new RunConfig({ platform }));
          expectNear(f32(y), ref, mag, `${platform} S=${S} y`);
          expectNear(f32(z), refZ, magZ, `${platform} S=${S} z`);
        }
      }
    }, 120_000);
  }
});

describe("tspto.quantize", () => {
  it("packs int4 low nibble first as q + 8, scales are max|w| / 7 per group; int8 max|w| / 127", () => {
    const w = tensor([[0.7, -0.7, 0.1, 0.35], [0, 0, 0, 0]]);
    const w8 = tensor([[0.7, -0.7, 0.1, 0.3]]);
    const q4 = quantize(w, { bits: 4, groupSize: 2 });
    const s = f32(q4.scales);
    expect(s[0]).toBeCloseTo(0.1, 6);
    expect(s[1]).toBeCloseTo(0.05, 6);
    expect(s[2]).toBe(0);
    const bytes = Array.from(q4.w.data as Uint8Array);
    // row 0: q = 7, -7 | 2, 7 -> bytes (7+8) | (-7+8)<<4 = 0x1f, (2+8) | (7+8)<<4 = 0xfa; row 1: q = 0 -> 0x88
    expect(bytes).toEqual([0x1f, 0xfa, 0x88, 0x88]);
    const q8 = quantize(w8, { bits: 8, groupSize: 4 });
    expect(Array.from(q8.w.data as Int8Array)).toEqual([127, -127, 18, 54]);
    // layout "kn" quantizes the transpose
    const t = quantize(tensor([[0.7, 0], [-0.7, 0], [0.1, 0], [0.35, 0]]), { bits: 4, groupSize: 2, layout: "kn" });
    expect(Array.from(t.w.data as Uint8Array)).toEqual(bytes);
  });
  it("refuses a group size that does not divide K, bits other than 4 / 8, a 1-D weight", () => {
    const w = randn([4, 6], { seed: 1 });
    expect(() => quantize(w, { bits: 8, groupSize: 4 })).toThrow(/groupSize must be a positive integer that divides K = 6, got 4/);
    expect(() => quantize(w, { bits: 3 as 4, groupSize: 2 })).toThrow(/bits must be 4 or 8, got 3/);
    expect(() => quantize(randn([6], { seed: 1 }), { bits: 8, groupSize: 2 })).toThrow(/must be 2-D/);
  });
});

// Transposed matmul operands on cpu (aTrans / bTrans, src/codegen/cpp/emitters/matmul.ts): an
// operand `transpose(load(...))` is read straight from its tensor with its strides swapped (a)
// or packed into the panels the register blocks read, 16 x 16 blocks transposed in registers
// (b) — no transposed copy in scratch. The values are those of the untransposed path, bit for
// bit: cpu == interp in both contraction modes, at tile and tensor level, on shapes that take
// every panel width (64, 32, 16, the scalar tail), remainder rows, k chunks, M = 1 (a GEMV).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, ir, RunConfig, randn, zeros, type HostTensor } from "tspto";

const bits = (t: HostTensor) => Array.from(t.data as Float32Array);
const cfg = (platform: string, fpContract: "fast" | "off") => new RunConfig({ platform, fpContract });

const M = 13, N = 117, K = 300;
/** Tile level: a^T is stored [K, M], b^T [N, K]. */
const tileTrans = pl.jit(function tileTrans(at: pl.Tensor, bt: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c1: pl.Out<pl.Tensor>, c2: pl.Out<pl.Tensor>, c3: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const a = pl.load(at, [0, 0], [K, M]);
    pl.store(pl.matmul(a, pl.load(b, [0, 0], [K, N]), { aTrans: true }), [0, 0], c1);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(at, [0, 0], [K, M]), pl.load(bt, [0, 0], [N, K]), { aTrans: true, bTrans: true }), [0, 0], c2);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [M, N]), pl.load(at, [0, 0], [K, M]), pl.load(bt, [0, 0], [N, K]), { aTrans: true, bTrans: true }), [0, 0], c3);
  });
  return c1;
});

/** Tensor level with a dynamic row count: x [S, K] times w^T (w stored [N, K]), the logits of a tied embedding. */
const logits = pl.jit(function logits(x: pl.Tensor<["S", 300], pl.FP32>, w: pl.Tensor<[117, 300], pl.FP32>, y: pl.Out<pl.Tensor<["S", 117], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.matmul(x, w, { bTrans: true }));
  });
  return y;
});

/** Independent reference in float64 (for a bound, not bits). */
function refMatmul(a: Float32Array, b: Float32Array, m: number, k: number, n: number, aT: boolean, bT: boolean): Float64Array {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = 0;
    for (let q = 0; q < k; q++) s += a[aT ? q * m + i : i * k + q] * b[bT ? j * k + q : q * n + j];
    out[i * n + j] = s;
  }
  return out;
}

describe("transposed matmul operands on cpu", () => {
  for (const mode of ["fast", "off"] as const) {
    it(`tile level aTrans, aTrans + bTrans, matmulAcc: cpu == interp bit for bit (fpContract ${mode})`, () => {
      const at = randn([K, M], { seed: 1 }), bt = randn([N, K], { seed: 2 }), b = randn([K, N], { seed: 3 }), c0 = randn([M, N], { seed: 4 });
      const run = (platform: string) => {
        const outs = [zeros([M, N]), zeros([M, N]), zeros([M, N])];
        tileTrans(at, bt, b, c0, outs[0], outs[1], outs[2], cfg(platform, mode));
        return outs.map(bits);
      };
      const cpu = run("cpu"), ref = run("interp");
      for (let i = 0; i < 3; i++) expect(cpu[i], `output ${i + 1}`).toEqual(ref[i]);
      // and the values are a^T b: within the fp32 bound of a float64 reference
      const want = refMatmul(at.data as Float32Array, b.data as Float32Array, M, K, N, true, false);
      cpu[0].forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThan(1e-3 * (1 + Math.abs(want[i]))));
    });
  }

  it("tensor level bTrans over a dynamic row count (1, 6, 7, 13, 150 rows): cpu == interp bit for bit", () => {
    const w = randn([117, 300], { seed: 5 });
    for (const s of [1, 6, 7, 13, 150]) {
      const x = randn([s, 300], { seed: 10 + s });
      const yc = zeros([s, 117]), yi = zeros([s, 117]);
      logits(x, w, yc, cfg("cpu", "fast"));
      logits(x, w, yi, cfg("interp", "fast"));
      expect(bits(yc), `S = ${s}`).toEqual(bits(yi));
      const want = refMatmul(x.data as Float32Array, w.data as Float32Array, s, 300, 117, false, true);
      bits(yc).forEach((v, i) => expect(Math.abs(v - want[i])).toBeLessThan(1e-3 * (1 + Math.abs(want[i]))));
    }
  });

  it("reads the transposed operands in place: no transposed tile in scratch, b^T packed in registers", () => {
    const x = randn([1, 300], { seed: 1 }), w = randn([117, 300], { seed: 2 }), y = zeros([1, 117]);
    const c = ir.compile(logits.lower(x, w, y), { platform: "cpu" });
    const src = readFileSync(join(c.outputDir, "kernels", "program.cpp"), "utf8");
    const kernels = src.slice(src.indexOf("extern \"C\" void k_"));
    expect(kernels).toContain("tspto_pack_bt(");
    expect(kernels).toMatch(/transpose_t\w*: read by the matmul straight from the tensor/);
  });
});

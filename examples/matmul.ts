// Matrix multiplication (PyPTO examples/beginner/05_matmul.py): the cube path. Two device
// buffers made with pl.createTensor in the entry receive copies of a and b (one pl.at scope
// of load/store); a second scope loads them into Mat (L1), moves them to Left/Right (L0A/L0B)
// and multiplies into an Acc (L0C) tile. Memory moves are numerically the identity; the
// product accumulates in fp32. The second scope reads what the first wrote: the runtime
// orders the two tasks from their read/write sets.
//
//   npx tsx examples/matmul.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, matmulRef, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const matmul64 = pl.jit(function matmul64(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  const a1 = pl.createTensor([64, 64], pl.FP32);
  const b1 = pl.createTensor([64, 64], pl.FP32);
  // copy a -> a1 and b -> b1 (device to device through tiles)
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], a1);
    pl.store(pl.load(b, [0, 0], [64, 64]), [0, 0], b1);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileAL1 = pl.load(a1, [0, 0], [64, 64], { mem: pl.Mem.Mat });
    const tileBL1 = pl.load(b1, [0, 0], [64, 64], { mem: pl.Mem.Mat });
    const tileAL0a = pl.move(tileAL1, pl.Mem.Left);
    const tileBL0b = pl.move(tileBL1, pl.Mem.Right);
    const tileCL0c = pl.matmul(tileAL0a, tileBL0b);
    pl.store(tileCL0c, [0, 0], c);
  });
  return c;
});

/** float16 inputs, fp32 accumulation and result. */
const matmulHalf = pl.jit(function matmulHalf(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.move(pl.load(a, [0, 0], [64, 32], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const tb = pl.move(pl.load(b, [0, 0], [32, 48], { mem: pl.Mem.Mat }), pl.Mem.Right);
    pl.store(pl.matmul(ta, tb), [0, 0], c);
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`matmul on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([64, 64], { seed: 0 }), b = randn([64, 64], { seed: 1 }), c = zeros([64, 64]);
  matmul64(a, b, c, cfg);
  check("matmul64: c = a @ b (via createTensor copies, Mat -> Left/Right)", c, ref(matmulRef(a.toArray(), b.toArray(), 64, 64, 64), [64, 64]), 1e-4);

  const h = randn([64, 32], { seed: 2, dtype: "float16" }), w = randn([32, 48], { seed: 3, dtype: "float16" }), o = zeros([64, 48]);
  matmulHalf(h, w, o, cfg);
  check("matmulHalf: float16 inputs, fp32 result", o, ref(matmulRef(h.toArray(), w.toArray(), 64, 32, 48), [64, 48]), 1e-3);
}
runIfMain(import.meta.url, main);

// Fused linear layer (PyPTO examples/intermediate/01_fused_linear.py): a program of several
// kernels. pl.jit.incore sub-kernels (a cube matmul, a vector bias-add, a bias-add + relu)
// are called from the entry; pl.createTensor makes the intermediate device buffer;
// `mm = matmulKernel(a, b, mm)` binds the kernel's returned Out tensor. Each call is a task;
// the bias kernel reads what the matmul wrote, so the runtime orders them.
//
//   npx tsx examples/fused_linear.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, matmulRef, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const matmulKernel64 = pl.jit.incore(function matmulKernel64(a: pl.Tensor, b: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileAL1 = pl.load(a, [0, 0], [64, 64], { mem: pl.Mem.Mat });
  const tileBL1 = pl.load(b, [0, 0], [64, 64], { mem: pl.Mem.Mat });
  const tileC = pl.matmul(pl.move(tileAL1, pl.Mem.Left), pl.move(tileBL1, pl.Mem.Right));
  pl.store(tileC, [0, 0], output);
  return output;
});

const addBiasKernel64 = pl.jit.incore(function addBiasKernel64(x: pl.Tensor, bias: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileX = pl.load(x, [0, 0], [64, 64]);
  const tileBias = pl.load(bias, [0, 0], [64, 64]);
  pl.store(pl.add(tileX, tileBias), [0, 0], output);
  return output;
});

const addBiasReluKernel64 = pl.jit.incore(function addBiasReluKernel64(x: pl.Tensor, bias: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileBiased = pl.add(pl.load(x, [0, 0], [64, 64]), pl.load(bias, [0, 0], [64, 64]));
  pl.store(pl.relu(tileBiased), [0, 0], output);
  return output;
});

/** c = a @ b + bias */
const fusedMatmulBias = pl.jit(function fusedMatmulBias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, c: pl.Out<pl.Tensor>) {
  let mmOut = pl.createTensor([64, 64], pl.FP32);
  mmOut = matmulKernel64(a, b, mmOut);
  return addBiasKernel64(mmOut, bias, c);
});

/** y = relu(x @ w + bias) */
const fusedLinearRelu = pl.jit(function fusedLinearRelu(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out<pl.Tensor>) {
  let mmOut = pl.createTensor([64, 64], pl.FP32);
  mmOut = matmulKernel64(x, w, mmOut);
  return addBiasReluKernel64(mmOut, bias, y);
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`fused_linear on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([64, 64], { seed: 0 }), b = randn([64, 64], { seed: 1 }), bias = randn([64, 64], { seed: 2 });
  const mm = matmulRef(a.toArray(), b.toArray(), 64, 64, 64), bv = bias.toArray();
  const c = zeros([64, 64]);
  fusedMatmulBias(a, b, bias, c, cfg);
  check("fusedMatmulBias: a @ b + bias", c, ref(mm.map((v, i) => v + bv[i]), [64, 64]), 1e-4);
  const y = zeros([64, 64]);
  fusedLinearRelu(a, b, bias, y, cfg);
  check("fusedLinearRelu: relu(x @ w + bias)", y, ref(mm.map((v, i) => Math.max(0, v + bv[i])), [64, 64]), 1e-4);
}
runIfMain(import.meta.url, main);

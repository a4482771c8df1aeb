// A small FFN (PyPTO examples/models/01_ffn.py): gate projection -> activation -> down
// projection, with one module-level pl.jit.incore matmul kernel shared by three entries
// (GELU, SwiGLU, ReLU) and pl.createTensor for the intermediates. Each kernel call is a task;
// the chain is ordered by the buffers it passes along.
//
//   npx tsx examples/ffn.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, matmulRef, ref, runIfMain, say, sigmoid, platformFromEnv, type Platform } from "./_shared.js";

const matmulKernel = pl.jit.incore(function matmulKernel(a: pl.Tensor, b: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileA = pl.move(pl.load(a, [0, 0], [64, 64], { mem: pl.Mem.Mat }), pl.Mem.Left);
  const tileB = pl.move(pl.load(b, [0, 0], [64, 64], { mem: pl.Mem.Mat }), pl.Mem.Right);
  pl.store(pl.matmul(tileA, tileB), [0, 0], output);
  return output;
});

/** sigmoid as an inline helper, spliced into each kernel that calls it. */
const sigmoidTile = pl.jit.inline(function sigmoidTile(t: pl.Tile) {
  return pl.recip(pl.add(pl.exp(pl.mul(t, -1.0)), 1.0));
});

const geluKernel = pl.jit.incore(function geluKernel(x: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileX = pl.load(x, [0, 0], [64, 64]);
  pl.store(pl.mul(tileX, sigmoidTile(pl.mul(tileX, 1.702))), [0, 0], output);
  return output;
});

const swigluKernel = pl.jit.incore(function swigluKernel(gate: pl.Tensor, up: pl.Tensor, output: pl.Out<pl.Tensor>) {
  const tileGate = pl.load(gate, [0, 0], [64, 64]);
  const tileUp = pl.load(up, [0, 0], [64, 64]);
  pl.store(pl.mul(pl.mul(tileGate, sigmoidTile(tileGate)), tileUp), [0, 0], output);
  return output;
});

const reluKernel = pl.jit.incore(function reluKernel(x: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.store(pl.relu(pl.load(x, [0, 0], [64, 64])), [0, 0], output);
  return output;
});

const ffnGelu = pl.jit(function ffnGelu(hidden: pl.Tensor, gateW: pl.Tensor, downW: pl.Tensor, output: pl.Out<pl.Tensor>) {
  let gate = pl.createTensor([64, 64], pl.FP32);
  gate = matmulKernel(hidden, gateW, gate);
  let activated = pl.createTensor([64, 64], pl.FP32);
  activated = geluKernel(gate, activated);
  return matmulKernel(activated, downW, output);
});

const ffnSwiglu = pl.jit(function ffnSwiglu(hidden: pl.Tensor, gateW: pl.Tensor, upW: pl.Tensor, downW: pl.Tensor, output: pl.Out<pl.Tensor>) {
  let gate = pl.createTensor([64, 64], pl.FP32);
  gate = matmulKernel(hidden, gateW, gate);
  let up = pl.createTensor([64, 64], pl.FP32);
  up = matmulKernel(hidden, upW, up);
  let activated = pl.createTensor([64, 64], pl.FP32);
  activated = swigluKernel(gate, up, activated);
  return matmulKernel(activated, downW, output);
});

const ffnRelu = pl.jit(function ffnRelu(hidden: pl.Tensor, gateW: pl.Tensor, downW: pl.Tensor, output: pl.Out<pl.Tensor>) {
  let gate = pl.createTensor([64, 64], pl.FP32);
  gate = matmulKernel(hidden, gateW, gate);
  let activated = pl.createTensor([64, 64], pl.FP32);
  activated = reluKernel(gate, activated);
  return matmulKernel(activated, downW, output);
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`ffn on ${platform}`);
  const cfg = new RunConfig({ platform });
  const hidden = randn([64, 64], { seed: 0 }), gateW = randn([64, 64], { seed: 1 }), upW = randn([64, 64], { seed: 2 }), downW = randn([64, 64], { seed: 3 });
  const mm = (a: number[], b: number[]) => matmulRef(a, b, 64, 64, 64);
  const gate = mm(hidden.toArray(), gateW.toArray()), up = mm(hidden.toArray(), upW.toArray()), down = downW.toArray();
  const out = zeros([64, 64]);
  ffnGelu(hidden, gateW, downW, out, cfg);
  check("ffnGelu: gelu(h @ Wg) @ Wd", out, ref(mm(gate.map((g) => g * sigmoid(1.702 * g)), down), [64, 64]), 3e-3);
  ffnSwiglu(hidden, gateW, upW, downW, out, cfg);
  check("ffnSwiglu: swiglu(h @ Wg, h @ Wu) @ Wd", out, ref(mm(gate.map((g, i) => g * sigmoid(g) * up[i]), down), [64, 64]), 3e-3);
  ffnRelu(hidden, gateW, downW, out, cfg);
  check("ffnRelu: relu(h @ Wg) @ Wd", out, ref(mm(gate.map((g) => Math.max(0, g)), down), [64, 64]), 3e-3);
}
runIfMain(import.meta.url, main);

// Activation functions (PyPTO examples/beginner/04_activation.py), built from elementwise
// primitives: relu(a + b); SiLU x * sigmoid(x); GELU (fast) x * sigmoid(1.702 x); SwiGLU
// gate * sigmoid(gate) * up; GeGLU gate * sigmoid(1.702 gate) * up. sigmoid(x) is
// recip(1 + exp(-x)); the chain of tile ops fuses into one loop in the generated C++.
//
//   npx tsx examples/activation.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, sigmoid, platformFromEnv, type Platform } from "./_shared.js";

const fusedAddRelu = pl.jit(function fusedAddRelu(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileSum = pl.add(pl.load(a, [0, 0], [128, 128]), pl.load(b, [0, 0], [128, 128]));
    pl.store(pl.relu(tileSum), [0, 0], c);
  });
  return c;
});

const silu = pl.jit(function silu(x: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 128]);
    const xNeg = pl.mul(tileX, -1.0);
    const expNeg = pl.exp(xNeg);
    const denom = pl.add(expNeg, 1.0);
    const sig = pl.recip(denom);
    pl.store(pl.mul(tileX, sig), [0, 0], output);
  });
  return output;
});

const gelu = pl.jit(function gelu(x: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 128]);
    const xScaled = pl.mul(tileX, 1.702);
    const sig = pl.recip(pl.add(pl.exp(pl.mul(xScaled, -1.0)), 1.0));
    pl.store(pl.mul(tileX, sig), [0, 0], output);
  });
  return output;
});

const swiglu = pl.jit(function swiglu(gate: pl.Tensor, up: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileGate = pl.load(gate, [0, 0], [32, 128]);
    const tileUp = pl.load(up, [0, 0], [32, 128]);
    const sig = pl.recip(pl.add(pl.exp(pl.mul(tileGate, -1.0)), 1.0));
    const swish = pl.mul(tileGate, sig);
    pl.store(pl.mul(swish, tileUp), [0, 0], output);
  });
  return output;
});

const geglu = pl.jit(function geglu(gate: pl.Tensor, up: pl.Tensor, output: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileGate = pl.load(gate, [0, 0], [32, 128]);
    const tileUp = pl.load(up, [0, 0], [32, 128]);
    const sig = pl.recip(pl.add(pl.exp(pl.mul(pl.mul(tileGate, 1.702), -1.0)), 1.0));
    const geluGate = pl.mul(tileGate, sig);
    pl.store(pl.mul(geluGate, tileUp), [0, 0], output);
  });
  return output;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`activation on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([128, 128], { seed: 1 }), b = randn([128, 128], { seed: 2 }), c = zeros([128, 128]);
  fusedAddRelu(a, b, c, cfg);
  const av = a.toArray(), bv = b.toArray();
  check("fusedAddRelu: relu(a + b)", c, ref(av.map((x, i) => Math.max(0, x + bv[i])), [128, 128]), 1e-5);

  const x = randn([32, 128], { seed: 3 }), xv = x.toArray();
  const out = zeros([32, 128]);
  silu(x, out, cfg);
  check("silu: x * sigmoid(x)", out, ref(xv.map((v) => v * sigmoid(v)), [32, 128]), 1e-5);
  gelu(x, out, cfg);
  check("gelu: x * sigmoid(1.702 x)", out, ref(xv.map((v) => v * sigmoid(1.702 * v)), [32, 128]), 1e-5);

  const gate = randn([32, 128], { seed: 4 }), up = randn([32, 128], { seed: 5 });
  const g = gate.toArray(), u = up.toArray();
  swiglu(gate, up, out, cfg);
  check("swiglu: gate * sigmoid(gate) * up", out, ref(g.map((v, i) => v * sigmoid(v) * u[i]), [32, 128]), 1e-5);
  geglu(gate, up, out, cfg);
  check("geglu: gate * sigmoid(1.702 gate) * up", out, ref(g.map((v, i) => v * sigmoid(1.702 * v) * u[i]), [32, 128]), 1e-5);
}
runIfMain(import.meta.url, main);

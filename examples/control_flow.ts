// Control flow in kernels and in the orchestration: pl.range(start, stop, step), while,
// break, continue, if/else on scalar parameters and loop variables, and loop-carried values
// — tiles in a kernel, tensors (ping-pong buffers) in the orchestration. Loops are real loops
// in the IR (not unrolled); a `let` rebound in a loop becomes a loop-carried value.
//
//   npx tsx examples/control_flow.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const R = 16, C = 64;

/**
 * out[0:16]  = sum over i in range(1, 9, 2), i != 5, of (mode > 0 ? +x_i : -x_i)
 * out[16:32] = x_0 + x_1 + ... until k == stopAt (a while loop with break)
 * (x_i: rows [16 i, 16 i + 16) of x)
 */
const kernelFlow = pl.jit(function kernelFlow(x: pl.Tensor, out: pl.Out<pl.Tensor>, mode: number, stopAt: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.full([R, C], pl.FP32, 0.0);
    for (const i of pl.range(1, 9, 2)) {
      if (i === 5) continue;
      const t = pl.load(x, [i * R, 0], [R, C]);
      if (mode > 0) {
        acc = pl.add(acc, t);
      } else {
        acc = pl.sub(acc, t);
      }
    }
    pl.store(acc, [0, 0], out);
    let k = 0;
    let run = pl.full([R, C], pl.FP32, 0.0);
    while (k < 8) {
      if (k === stopAt) break;
      run = pl.add(run, pl.load(x, [k * R, 0], [R, C]));
      k = k + 1;
    }
    pl.store(run, [R, 0], out);
  });
  return out;
});

/** y = 2 * x (one task) */
const double = pl.jit.incore(function double(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], y);
  return y;
});
/** y = x + 1 (one task) */
const plusOne = pl.jit.incore(function plusOne(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.store(pl.add(pl.load(x, [0, 0], [R, C]), 1.0), [0, 0], y);
  return y;
});

/**
 * Orchestration: `steps` rounds over ping-pong buffers; even rounds double, odd rounds add
 * one (an if on the loop variable); the buffers swap every round (loop-carried tensors). A
 * while loop then adds one at most 3 times, leaving early (break) after `limit` rounds.
 */
const orchFlow = pl.jit(function orchFlow(x: pl.Tensor, out: pl.Out<pl.Tensor>, steps: number, limit: number) {
  let src = pl.createTensor([R, C], pl.FP32);
  let dst = pl.createTensor([R, C], pl.FP32);
  src = plusOne(x, src);
  for (const i of pl.range(steps)) {
    if (i % 2 === 0) {
      dst = double(src, dst);
    } else {
      dst = plusOne(src, dst);
    }
    const t = src;
    src = dst;
    dst = t;
  }
  let j = 0;
  while (j < 3) {
    if (j >= limit) break;
    dst = plusOne(src, dst);
    const t = src;
    src = dst;
    dst = t;
    j = j + 1;
  }
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(src, [0, 0], [R, C]), [0, 0], out);
  });
  return out;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`control_flow on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([8 * R, C], { seed: 0 }), xv = x.toArray();
  const block = (i: number, e: number) => xv[i * R * C + e];
  const f = Math.fround;
  for (const [mode, stopAt] of [[1, 6], [-1, 3]]) {
    const out = zeros([2 * R, C]);
    kernelFlow(x, out, mode, stopAt, cfg);
    const want: number[] = [];
    for (let e = 0; e < R * C; e++) {
      let s = 0;
      for (let i = 1; i < 9; i += 2) if (i !== 5) s = f(mode > 0 ? s + block(i, e) : s - block(i, e));
      want.push(s);
    }
    for (let e = 0; e < R * C; e++) {
      let s = 0;
      for (let k = 0; k < Math.min(8, stopAt); k++) s = f(s + block(k, e));
      want.push(s);
    }
    check(`kernelFlow mode=${mode} stopAt=${stopAt}`, out, ref(want, [2 * R, C]), 1e-5);
  }

  const y = randn([R, C], { seed: 1 }), yv = y.toArray();
  for (const [steps, limit] of [[5, 2], [2, 9]]) {
    const out = zeros([R, C]);
    orchFlow(y, out, steps, limit, cfg);
    const want = yv.map((v) => {
      let s = f(v + 1);
      for (let i = 0; i < steps; i++) s = i % 2 === 0 ? f(s * 2) : f(s + 1);
      for (let j = 0; j < Math.min(3, limit); j++) s = f(s + 1);
      return s;
    });
    check(`orchFlow steps=${steps} limit=${limit}`, out, ref(want, [R, C]), 1e-5);
  }
}
runIfMain(import.meta.url, main);

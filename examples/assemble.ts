// Tile assemble (PyPTO examples/kernels/08_assemble.py): write a source tile into a target
// tile at an offset. pl.assemble(target, src, offset) returns the updated target, so in a
// loop the target is a loop-carried tile; pl.slice extracts sub-tiles (with loop-variable
// offsets). Variants: a matmul result (Acc) into a Mat target, a single Vec insert, row by
// row, a double loop, column broadcast, quadrants. Added: the tensor form, which writes a
// tensor expression into a window of a tensor.
//
//   npx tsx examples/assemble.ts
import { pl, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { check, matmulRef, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const tileAssembleAccMat = pl.jit(function tileAssembleAccMat(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 32], { mem: pl.Mem.Mat });
    const tileA = pl.move(pl.load(a, [0, 0], [32, 16], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const tileB = pl.move(pl.load(b, [0, 0], [16, 16], { mem: pl.Mem.Mat }), pl.Mem.Right);
    const tileSrc = pl.matmul(tileA, tileB);
    // insert the product into the right half of x
    const result = pl.assemble(tileX, tileSrc, [0, 16]);
    pl.store(pl.move(result, pl.Mem.Vec), [0, 0], y);
  });
  return y;
});

const tileAssembleVec = pl.jit(function tileAssembleVec(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tileX = pl.load(x, [0, 0], [32, 32]);
    const tileSrc = pl.load(src, [0, 0], [32, 16]);
    pl.store(pl.assemble(tileX, tileSrc, [0, 0]), [0, 0], y);
  });
  return y;
});

const tileAssembleRowByRow = pl.jit(function tileAssembleRowByRow(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let tileX = pl.load(x, [0, 0], [32, 32]);
    const tileSrc = pl.load(src, [0, 0], [32, 16]);
    for (const i of pl.range(32)) {
      const row = pl.slice(tileSrc, [1, 16], [i, 0]);
      tileX = pl.assemble(tileX, row, [i, 0]);
    }
    pl.store(tileX, [0, 0], y);
  });
  return y;
});

const tileAssembleDoubleLoop = pl.jit(function tileAssembleDoubleLoop(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let tileX = pl.load(x, [0, 0], [32, 32]);
    const tileSrc = pl.load(src, [0, 0], [32, 16]);
    for (const b of pl.range(4)) {
      for (const i of pl.range(8)) {
        const row = b * 8 + i;
        const tileRow = pl.slice(tileSrc, [1, 16], [row, 0]);
        tileX = pl.assemble(tileX, tileRow, [row, 0]);
      }
    }
    pl.store(tileX, [0, 0], y);
  });
  return y;
});

const tileAssembleLoopColBroadcast = pl.jit(function tileAssembleLoopColBroadcast(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let tileX = pl.load(x, [0, 0], [32, 32]);
    const tileSrc = pl.load(src, [0, 0], [32, 8]);
    for (const c of pl.range(4)) tileX = pl.assemble(tileX, tileSrc, [0, c * 8]);
    pl.store(tileX, [0, 0], y);
  });
  return y;
});

const tileAssembleDoubleLoopBroadcast = pl.jit(function tileAssembleDoubleLoopBroadcast(x: pl.Tensor, src: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let tileX = pl.load(x, [0, 0], [32, 32]);
    const tileSrc = pl.load(src, [0, 0], [16, 16]);
    for (const b of pl.range(2)) {
      for (const c of pl.range(2)) tileX = pl.assemble(tileX, tileSrc, [b * 16, c * 16]);
    }
    pl.store(tileX, [0, 0], y);
  });
  return y;
});

/** Tensor form: y[8:24, 4:32] = x[0:16, 0:28] * 2 (the rest of y is x). */
const tensorAssemble = pl.jit(function tensorAssemble(x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, x);
    pl.assemble(y, pl.mul(pl.slice(x, [16, 28], [0, 0]), 2), [8, 4]);
  });
  return y;
});

/** The reference: a copy of `x` [rows, cols] with `src(r, c)` written over the given windows. */
function assembled(x: HostTensor, cols: number, windows: { r0: number; c0: number; h: number; w: number; src: (r: number, c: number) => number }[]): number[] {
  const out = x.toArray();
  for (const { r0, c0, h, w, src } of windows) for (let r = 0; r < h; r++) for (let c = 0; c < w; c++) out[(r0 + r) * cols + c0 + c] = src(r, c);
  return out;
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`assemble on ${platform}`);
  const cfg = new RunConfig({ platform });
  const x = randn([32, 32], { seed: 0 }), y = zeros([32, 32]);
  const src16 = randn([32, 16], { seed: 1 }), s16 = src16.toArray();

  const a = randn([32, 16], { seed: 2 }), b = randn([16, 16], { seed: 3 });
  tileAssembleAccMat(x, a, b, y, cfg);
  const prod = matmulRef(a.toArray(), b.toArray(), 32, 16, 16);
  check("Acc -> Mat: a matmul result into the right half", y, ref(assembled(x, 32, [{ r0: 0, c0: 16, h: 32, w: 16, src: (r, c) => prod[r * 16 + c] }]), [32, 32]), 1e-4);

  const left = [{ r0: 0, c0: 0, h: 32, w: 16, src: (r: number, c: number) => s16[r * 16 + c] }];
  tileAssembleVec(x, src16, y, cfg);
  check("Vec -> Vec: single insert", y, ref(assembled(x, 32, left), [32, 32]), 1e-5);
  tileAssembleRowByRow(x, src16, y, cfg);
  check("row by row (slice + assemble in a loop)", y, ref(assembled(x, 32, left), [32, 32]), 1e-5);
  tileAssembleDoubleLoop(x, src16, y, cfg);
  check("double loop", y, ref(assembled(x, 32, left), [32, 32]), 1e-5);

  const src8 = randn([32, 8], { seed: 4 }), s8 = src8.toArray();
  tileAssembleLoopColBroadcast(x, src8, y, cfg);
  check("column broadcast", y, ref(assembled(x, 32, [0, 1, 2, 3].map((k) => ({ r0: 0, c0: 8 * k, h: 32, w: 8, src: (r: number, c: number) => s8[r * 8 + c] }))), [32, 32]), 1e-5);

  const quad = randn([16, 16], { seed: 5 }), q = quad.toArray();
  tileAssembleDoubleLoopBroadcast(x, quad, y, cfg);
  check("quadrants", y, ref(assembled(x, 32, [0, 1, 2, 3].map((k) => ({ r0: 16 * (k >> 1), c0: 16 * (k & 1), h: 16, w: 16, src: (r: number, c: number) => q[r * 16 + c] }))), [32, 32]), 1e-5);

  const xv = x.toArray();
  tensorAssemble(x, y, cfg);
  check("tensor form: pl.assemble(y, 2 * x[0:16, 0:28], [8, 4])", y, ref(assembled(x, 32, [{ r0: 8, c0: 4, h: 16, w: 28, src: (r, c) => 2 * xv[r * 32 + c] }]), [32, 32]), 1e-5);
}
runIfMain(import.meta.url, main);

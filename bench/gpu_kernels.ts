// Kernels of the GPU benchmark (bench/gpu.ts). Loops sit inside pl.at so that one InCore
// function covers the whole tensor and the SPMD split makes one thread block per iteration.
import { pl } from "tspto";

/** 2^28 float32 elements. */
export const ADD_ROWS = 16384, ADD_COLS = 16384;
export const gpuAdd = pl.jit(function gpuAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

export const SMX_ROWS = 16384, SMX_COLS = 4096, SMX_TILE = 2;
export const gpuSoftmax = pl.jit(function gpuSoftmax(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const r of pl.range(0, SMX_ROWS, SMX_TILE)) {
      const t = pl.load(a, [r, 0], [SMX_TILE, SMX_COLS]);
      const maxTmp = pl.createTile([SMX_TILE, SMX_COLS], pl.FP32, pl.Mem.Vec);
      const mx: pl.Tile<[2, 1], pl.FP32> = pl.rowMax(t, maxTmp);
      const e = pl.exp(pl.rowExpandSub(t, mx));
      const sumTmp = pl.createTile([SMX_TILE, SMX_COLS], pl.FP32, pl.Mem.Vec);
      const s: pl.Tile<[2, 1], pl.FP32> = pl.rowSum(e, sumTmp);
      pl.store(pl.rowExpandDiv(e, s), [r, 0], out);
    }
  });
  return out;
});

export const GMM = 8192, GMT = 64;
/** bf16 inputs, fp32 output: one block per band of GMT rows of c (WMMA on the tensor cores). */
export const gpuMatmul = pl.jit(function gpuMatmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, GMM, GMT)) {
      for (const j of pl.range(0, GMM, GMT)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [GMT, GMT]), pl.load(b, [0, j], [GMT, GMT]));
        for (const k of pl.range(GMT, GMM, GMT)) {
          acc = pl.matmulAcc(acc, pl.load(a, [i, k], [GMT, GMT]), pl.load(b, [k, j], [GMT, GMT]));
        }
        pl.store(acc, [i, j], c);
      }
    }
  });
  return c;
});

/** A tiny kernel for the dispatch row. */
export const tinyAdd = pl.jit(function tinyAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [8, 8]), pl.load(b, [0, 0], [8, 8])), [0, 0], out);
  });
  return out;
});

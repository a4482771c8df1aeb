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

/** Decode GEMV: x [GV_ROWS, GV_K] @ W [GV_K, GV_N] bf16 (128 MiB of weights), fp32 out (the v2 GEMV). */
export const GV_ROWS = 1, GV_K = 8192, GV_N = 8192, GV_TILE = 256;
export const gpuGemv = pl.jit(function gpuGemv(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, GV_ROWS, GV_ROWS)) {
      for (const j of pl.range(0, GV_N, GV_TILE)) {
        let acc = pl.matmul(pl.load(x, [i, 0], [GV_ROWS, GV_TILE]), pl.load(w, [0, j], [GV_TILE, GV_TILE]));
        for (const k of pl.range(GV_TILE, GV_K, GV_TILE)) acc = pl.matmulAcc(acc, pl.load(x, [i, k], [GV_ROWS, GV_TILE]), pl.load(w, [k, j], [GV_TILE, GV_TILE]));
        pl.store(acc, [i, j], y);
      }
    }
  });
  return y;
});

/**
 * Small contractions for the GPU checks of the v2 matmul kernels against interp: a 64-row band
 * (the TMA GEMM, 256-wide consumer tiles), 128-row tiles (two wgmma rows, 128-wide) and a
 * 4-row GEMV. Shapes: a [CK_M, CK_K] @ b [CK_K, CK_N] (GEMV: [4, CK_K]).
 */
export const CK_M = 256, CK_K = 320, CK_N = 512;
export const checkGemm64 = pl.jit(function checkGemm64(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, CK_M, 64)) {
      for (const j of pl.range(0, CK_N, 64)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [64, 64]), pl.load(b, [0, j], [64, 64]));
        for (const k of pl.range(64, CK_K, 64)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [64, 64]), pl.load(b, [k, j], [64, 64]));
        pl.store(acc, [i, j], c);
      }
    }
  });
  return c;
});
export const checkGemm128 = pl.jit(function checkGemm128(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, CK_M, 128)) {
      for (const j of pl.range(0, CK_N, 128)) {
        let acc = pl.matmul(pl.load(a, [i, 0], [128, 64]), pl.load(b, [0, j], [64, 128]));
        for (const k of pl.range(64, CK_K, 64)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [128, 64]), pl.load(b, [k, j], [64, 128]));
        pl.store(acc, [i, j], c);
      }
    }
  });
  return c;
});
export const checkGemv4 = pl.jit(function checkGemv4(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(0, 4, 4)) {
      for (const j of pl.range(0, CK_N, 64)) {
        let acc = pl.matmul(pl.load(x, [i, 0], [4, 64]), pl.load(w, [0, j], [64, 64]));
        for (const k of pl.range(64, CK_K, 64)) acc = pl.matmulAcc(acc, pl.load(x, [i, k], [4, 64]), pl.load(w, [k, j], [64, 64]));
        pl.store(acc, [i, j], y);
      }
    }
  });
  return y;
});
/** The check programs with their argument specs (dtype of a and b; c is fp32). */
export const V2_MATMUL_CHECKS = [
  { name: "checkGemm64 (bf16)", fn: checkGemm64, a: [CK_M, CK_K], b: [CK_K, CK_N], c: [CK_M, CK_N], dtype: "bfloat16" },
  { name: "checkGemm128 (f16)", fn: checkGemm128, a: [CK_M, CK_K], b: [CK_K, CK_N], c: [CK_M, CK_N], dtype: "float16" },
  { name: "checkGemv4 (bf16)", fn: checkGemv4, a: [4, CK_K], b: [CK_K, CK_N], c: [4, CK_N], dtype: "bfloat16" },
] as const;

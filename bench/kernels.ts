// The kernels of the benchmark suite (bench/run.ts).
import { pl } from "tspto";

export const EW = 4096;
/** 1. Elementwise: a whole-tensor add (TensorToTile + the SPMD split spread it over the cores). */
export const ewAdd = pl.jit(function ewAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

/** 1d. The same add with a dynamic first dimension (one program for every row count, issue 11). */
export const ewAddDyn = pl.jit(function ewAddDyn(a: pl.Tensor<["M", 4096], pl.FP32>, b: pl.Tensor<["M", 4096], pl.FP32>, out: pl.Out<pl.Tensor<["M", 4096], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

export const SM_ROWS = 4096, SM_COLS = 1024, SM_TILE = 32;
/** 2. Softmax over rows: one task per band of SM_TILE rows. */
export const softmaxRows = pl.jit(function softmaxRows(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, SM_ROWS, SM_TILE)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [SM_TILE, SM_COLS]);
      const maxTmp = pl.createTile([SM_TILE, SM_COLS], pl.FP32, pl.Mem.Vec);
      const mx: pl.Tile<[32, 1], pl.FP32> = pl.rowMax(t, maxTmp);
      const e = pl.exp(pl.rowExpandSub(t, mx));
      const sumTmp = pl.createTile([SM_TILE, SM_COLS], pl.FP32, pl.Mem.Vec);
      const s: pl.Tile<[32, 1], pl.FP32> = pl.rowSum(e, sumTmp);
      pl.store(pl.rowExpandDiv(e, s), [r, 0], out);
    });
  }
  return out;
});

/**
 * TM x TN: the output tile of a task ([256, 512]: 8 tasks; per k step a task reads a [256, 128]
 * window of a and a [128, 512] window of b, each element once per 512 or 256 outputs); KT: the
 * k step. The accumulator is the task's only scratch (512 KiB): the operand windows are read
 * straight from a and b (PlanMemory gives them no scratch on cpu).
 */
export const MM = 1024, TM = 256, TN = 512, KT = 128;
/** 3. Matmul: one task per [TM, TN] output tile, accumulating over K in KT steps. */
export const matmul1k = pl.jit(function matmul1k(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, MM, TM)) {
    for (const j of pl.range(0, MM, TN)) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const a0 = pl.move(pl.load(a, [i, 0], [TM, KT], { mem: pl.Mem.Mat }), pl.Mem.Left);
        const b0 = pl.move(pl.load(b, [0, j], [KT, TN], { mem: pl.Mem.Mat }), pl.Mem.Right);
        let acc = pl.matmul(a0, b0);
        for (const k of pl.range(KT, MM, KT)) {
          const ak = pl.move(pl.load(a, [i, k], [TM, KT], { mem: pl.Mem.Mat }), pl.Mem.Left);
          const bk = pl.move(pl.load(b, [k, j], [KT, TN], { mem: pl.Mem.Mat }), pl.Mem.Right);
          acc = pl.matmulAcc(acc, ak, bk);
        }
        pl.store(acc, [i, j], c);
      });
    }
  }
  return c;
});

/** 4. Dispatch: the smallest useful launch. */
export const add8 = pl.jit(function add8(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [8, 8]);
    const tb = pl.load(b, [0, 0], [8, 8]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

export const LN_ROWS = 4096, LN_COLS = 1024, LN_TILE = 32, LN_EPS = 1e-5, LN_INV = 1 / 1024;
/** 7. LayerNormalization over rows (scale and bias of one row): one task per band of LN_TILE rows. */
export const layerNormRows = pl.jit(function layerNormRows(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, LN_ROWS, LN_TILE)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(x, [r, 0], [LN_TILE, LN_COLS]);
      const g = pl.load(gamma, [0, 0], [1, LN_COLS]);
      const b = pl.load(beta, [0, 0], [1, LN_COLS]);
      const tmp = pl.createTile([LN_TILE, LN_COLS], pl.FP32, pl.Mem.Vec);
      const mean = pl.mul(pl.rowSum(t, tmp), LN_INV);
      const centered = pl.rowExpandSub(t, mean);
      const variance = pl.mul(pl.rowSum(pl.mul(centered, centered), tmp), LN_INV);
      const std = pl.sqrt(pl.add(variance, LN_EPS));
      const scaled = pl.colExpandMul(pl.rowExpandDiv(centered, std), g);
      pl.store(pl.add(scaled, pl.colExpand(scaled, b)), [r, 0], out);
    });
  }
  return out;
});

/** 2b. The same softmax written on whole tensors (row reductions inside the expression; TensorToTile tiles whole rows). */
export const softmaxTensor = pl.jit(function softmaxTensor(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(a, pl.rowMax(a)));
    pl.assign(out, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
  return out;
});

/** 8b. The same layer norm written on whole tensors. */
export const layerNormTensor = pl.jit(function layerNormTensor(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const mean = pl.mul(pl.rowSum(x), LN_INV);
    const centered = pl.rowExpandSub(x, mean);
    const variance = pl.mul(pl.rowSum(pl.mul(centered, centered)), LN_INV);
    pl.assign(out, pl.add(pl.mul(pl.rowExpandDiv(centered, pl.sqrt(pl.add(variance, LN_EPS))), gamma), beta));
  });
  return out;
});

export const TS_ROWS = 4096, TS_COLS = 1024, TS_BAND = 64;
/** 8. The issue-12 loop: two pl.at scopes over disjoint 64-row windows (region dependencies). */
export const twoScopes = pl.jit(function twoScopes(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, TS_ROWS, TS_BAND)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [TS_BAND, TS_COLS]);
      pl.store(pl.exp(pl.mul(t, 0.5)), [r, 0], mid);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [r, 0], [TS_BAND, TS_COLS]);
      pl.store(pl.sub(pl.mul(t, t), 1), [r, 0], out);
    });
  }
  return out;
});

// ------------------------------------------------------------------ sweeps (cost curves)
/** Softmax over rows of [rows, 1024]: one task per band of min(32, rows) rows. */
export function softmaxOf(rows: number) {
  const TR = Math.min(32, rows), ROWS = rows;
  return pl.jit(function softmaxSweep(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    for (const r of pl.range(0, ROWS, TR)) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const t = pl.load(a, [r, 0], [TR, 1024]);
        const tmp = pl.createTile([TR, 1024], pl.FP32, pl.Mem.Vec);
        const mx = pl.rowMax(t, tmp);
        const e = pl.exp(pl.rowExpandSub(t, mx));
        pl.store(pl.rowExpandDiv(e, pl.rowSum(e, tmp)), [r, 0], out);
      });
    }
    return out;
  }, { scope: { ROWS: rows, TR } });
}

/**
 * Matmul n x n x n: one task per [tm, tn] output tile, k in kt steps: [256, 512] tiles from
 * 1024 on (row 3's kernel), [t, t] with t = min(128, n) below (at least 4 tasks from 256 on).
 */
export function matmulOf(n: number) {
  const big = n >= 1024, TMS = big ? 256 : Math.min(128, n), TNS = big ? 512 : Math.min(128, n), K = Math.min(128, n), N = n;
  return pl.jit(function matmulSweep(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
    for (const i of pl.range(0, N, TMS)) {
      for (const j of pl.range(0, N, TNS)) {
        pl.at(pl.Level.CORE_GROUP, () => {
          const a0 = pl.move(pl.load(a, [i, 0], [TMS, K], { mem: pl.Mem.Mat }), pl.Mem.Left);
          const b0 = pl.move(pl.load(b, [0, j], [K, TNS], { mem: pl.Mem.Mat }), pl.Mem.Right);
          let acc = pl.matmul(a0, b0);
          for (const k of pl.range(K, N, K)) {
            const ak = pl.move(pl.load(a, [i, k], [TMS, K], { mem: pl.Mem.Mat }), pl.Mem.Left);
            const bk = pl.move(pl.load(b, [k, j], [K, TNS], { mem: pl.Mem.Mat }), pl.Mem.Right);
            acc = pl.matmulAcc(acc, ak, bk);
          }
          pl.store(acc, [i, j], c);
        });
      }
    }
    return c;
  }, { scope: { N: n, TMS, TNS, K } });
}

// The kernels of the benchmark suite (bench/run.ts).
import { pl } from "tspto";

export const EW = 4096;
/** 1. Elementwise: a whole-tensor add (TensorToTile + the SPMD split spread it over the cores). */
export const ewAdd = pl.jit(function ewAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
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

export const MM = 1024, MT = 128;
/** 3. Matmul: one task per [MT, MT] output tile, accumulating over K in MT steps. */
export const matmul1k = pl.jit(function matmul1k(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, MM, MT)) {
    for (const j of pl.range(0, MM, MT)) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const a0 = pl.move(pl.load(a, [i, 0], [MT, MT], { mem: pl.Mem.Mat }), pl.Mem.Left);
        const b0 = pl.move(pl.load(b, [0, j], [MT, MT], { mem: pl.Mem.Mat }), pl.Mem.Right);
        let acc = pl.matmul(a0, b0);
        for (const k of pl.range(MT, MM, MT)) {
          const ak = pl.move(pl.load(a, [i, k], [MT, MT], { mem: pl.Mem.Mat }), pl.Mem.Left);
          const bk = pl.move(pl.load(b, [k, j], [MT, MT], { mem: pl.Mem.Mat }), pl.Mem.Right);
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

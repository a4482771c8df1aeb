// Matmul with accumulation (PyPTO examples/intermediate/04_matmul_acc.py): K = 64 split into
// two K = 32 chunks — pl.matmul for the first, pl.matmulAcc adds the second into the same
// accumulator. Added here: split-K as a loop, the Acc tile carried from one iteration to the
// next (`acc = pl.matmulAcc(acc, ...)` inside pl.range).
//
//   npx tsx examples/matmul_acc.ts
import { pl, RunConfig, randn, zeros } from "tspto";
import { check, matmulRef, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const matmulAcc64 = pl.jit(function matmulAcc64(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // first K chunk: A[:, 0:32] @ B[0:32, :]
    const a0 = pl.move(pl.load(a, [0, 0], [64, 32], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const b0 = pl.move(pl.load(b, [0, 0], [32, 64], { mem: pl.Mem.Mat }), pl.Mem.Right);
    let acc: pl.Tile<[64, 64], pl.FP32, pl.Mem.Acc> = pl.matmul(a0, b0);
    // second K chunk: A[:, 32:64] @ B[32:64, :], accumulated
    const a1 = pl.move(pl.load(a, [0, 32], [64, 32], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const b1 = pl.move(pl.load(b, [32, 0], [32, 64], { mem: pl.Mem.Mat }), pl.Mem.Right);
    acc = pl.matmulAcc(acc, a1, b1);
    pl.store(acc, [0, 0], c);
  });
  return c;
});

const K = 256, KC = 32;
/** c[64, 48] = a[64, 256] @ b[256, 48], eight K chunks in a loop. */
const splitK = pl.jit(function splitK(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.createTile([64, 48], pl.FP32, pl.Mem.Acc);
    for (const k of pl.range(0, K, KC)) {
      const ak = pl.move(pl.load(a, [0, k], [64, KC], { mem: pl.Mem.Mat }), pl.Mem.Left);
      const bk = pl.move(pl.load(b, [k, 0], [KC, 48], { mem: pl.Mem.Mat }), pl.Mem.Right);
      acc = pl.matmulAcc(acc, ak, bk);
    }
    pl.store(acc, [0, 0], c);
  });
  return c;
});

export function main(platform: Platform = platformFromEnv()): void {
  say(`matmul_acc on ${platform}`);
  const cfg = new RunConfig({ platform });
  const a = randn([64, 64], { seed: 0 }), b = randn([64, 64], { seed: 1 }), c = zeros([64, 64]);
  matmulAcc64(a, b, c, cfg);
  check("matmulAcc64: two K chunks", c, ref(matmulRef(a.toArray(), b.toArray(), 64, 64, 64), [64, 64]), 1e-4);
  const x = randn([64, K], { seed: 2 }), w = randn([K, 48], { seed: 3 }), y = zeros([64, 48]);
  splitK(x, w, y, cfg);
  check(`splitK: ${K / KC} K chunks in a loop`, y, ref(matmulRef(x.toArray(), w.toArray(), 64, K, 48), [64, 48]), 1e-3);
}
runIfMain(import.meta.url, main);

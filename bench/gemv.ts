// Section 17: products of one row (decode) against the machine's streaming read, side by side in
// one run: y = x @ w with w resident ([K, N], and [N, K] read through bTrans), fp32; the weight
// bytes over the median launch time (copies rotated so the bytes come from DRAM), against a
// native streaming read of 1 GiB on every core (bench/gpt2/bench.ts NativeRead) measured in the
// same rounds.
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { pl, ChipWorker, RunConfig, randn, zeros } from "../src/index.js";
import { NativeRead } from "./gpt2/bench.js";

export interface GemvRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null; limit?: string }

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

const kn = pl.jit(function gemvKN(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w)); });
});
const nk = pl.jit(function gemvNK(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w, { bTrans: true })); });
});

// GPT-2's programs serve the prompt and every decode step with one compile: S is a run-time
// dimension, and M = 1 takes the streamed wide tile through a branch on S
const knDyn = pl.jit(function gemvQkvDyn(x: pl.Tensor<["S", 768], pl.FP32>, w: pl.Tensor<[768, 2304], pl.FP32>, y: pl.Out<pl.Tensor<["S", 2304], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w)); });
});

/** Copies of the weights rotated through so that their bytes (≥ 256 MiB in all) come from DRAM, not the last-level cache. */
const ROTATE_BYTES = 256 << 20;

export async function gemvBench(work: string, rounds: number, log: (s: string) => void): Promise<GemvRow[]> {
  const threads = availableParallelism();
  const reader = new NativeRead(join(work, "gemv_read"), 1 << 30, threads);
  const worker = new ChipWorker(new RunConfig({}));
  const cases = [
    { id: "17a", K: 4096, N: 4096, bT: false, what: "[1, 4096] x [4096, 4096] (64 MiB, w as [K, N])" },
    { id: "17b", K: 4096, N: 4096, bT: true, what: "[1, 4096] x [4096, 4096]ᵀ (64 MiB, w as [N, K], bTrans)" },
    { id: "17c", K: 768, N: 3072, bT: false, what: "[1, 768] x [768, 3072] (9 MiB, GPT-2's MLP up, [K, N])" },
    { id: "17d", K: 768, N: 50257, bT: true, what: "[1, 768] x [50257, 768]ᵀ (147 MiB, GPT-2's tied logits, bTrans)" },
    { id: "17e", K: 768, N: 2304, bT: false, dyn: true, what: "[S = 1, 768] x [768, 2304] (7 MiB, GPT-2's qkv product under a run-time S, [K, N])" },
  ];
  const rows: GemvRow[] = [];
  try {
    for (const c of cases) {
      const x = randn([1, c.K], { seed: 1 });
      const host = randn(c.bT ? [c.N, c.K] : [c.K, c.N], { seed: 2 });
      const bytes = c.K * c.N * 4;
      const copies = Math.max(1, Math.ceil(ROTATE_BYTES / bytes));
      const ws = Array.from({ length: copies }, () => worker.allocTensor(host.shape as number[], "float32", { init: host }));
      const y = worker.allocTensor([1, c.N], "float32");
      const compiled = ("dyn" in c ? knDyn : c.bT ? nk : kn).compile(x, host, zeros([1, c.N]));
      const mine: number[] = [], read: number[] = [];
      for (let r = 0; r < rounds; r++) {
        // each launch reads the next copy (launch wall time, host included), the median of 20 launches
        const per: number[] = [];
        for (let i = 0; i < Math.max(20, copies) + 3; i++) {
          const t0 = performance.now();
          worker.run(compiled, x, ws[i % copies], y);
          if (i >= 3) per.push(performance.now() - t0);
        }
        mine.push(bytes / (median(per) * 1e6));
        read.push(await reader.measure());
      }
      for (const w of ws) worker.freeTensor(w);
      worker.freeTensor(y);
      const g = median(mine), rd = median(read), f = g / rd;
      log(`${c.id}: ${g.toFixed(1)} GB/s vs read ${rd.toFixed(1)} GB/s (${f.toFixed(2)})`);
      rows.push({
        id: c.id, what: `M = 1 product ${c.what} fp32 vs a native streaming read on ${threads} cores`, tspto: `${g.toFixed(1)} GB/s`, peer: `${rd.toFixed(1)} GB/s`,
        result: `${f.toFixed(2)} of the read`, goal: "≥ 0.85", met: f >= 0.85,
        limit: (copies > 1 ? `${copies} copies of the weights rotated (≥ 256 MiB: from DRAM); ` : "") +
          (c.bT ? "b stored [N, K]: 16 rows at a time, each read contiguously, transposed 16 x 16 in registers (tspto_gemv_bt); the transposes cost ALU work per element read"
            : "b as [K, N]: wide column tiles, b read row by row; what is left is the split (one band per core) and the output rows' round trip through L1"),
      });
    }
  } finally {
    reader.close();
    worker.close();
  }
  return rows;
}

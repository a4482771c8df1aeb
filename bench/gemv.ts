// Section 17: products of one row (decode) against the machine's streaming read, side by side in
// one run: y = x @ w with w resident ([K, N], and [N, K] read through bTrans), fp32; the weight
// bytes over the product's median time, against a native streaming read of 1 GiB on every core
// (bench/gpt2/bench.ts NativeRead) measured in the same rounds.
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { pl, ChipWorker, RunConfig, benchmark, randn, zeros } from "../src/index.js";
import { NativeRead } from "./gpt2/bench.js";

export interface GemvRow { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null; limit?: string }

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };

const kn = pl.jit(function gemvKN(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w)); });
});
const nk = pl.jit(function gemvNK(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.matmul(x, w, { bTrans: true })); });
});

export async function gemvBench(work: string, rounds: number, log: (s: string) => void): Promise<GemvRow[]> {
  const threads = availableParallelism();
  const reader = new NativeRead(join(work, "gemv_read"), 1 << 30, threads);
  const worker = new ChipWorker(new RunConfig({}));
  const cases = [
    { id: "17a", K: 4096, N: 4096, bT: false, what: "[1, 4096] x [4096, 4096] (64 MiB, w as [K, N])" },
    { id: "17b", K: 4096, N: 4096, bT: true, what: "[1, 4096] x [4096, 4096]ᵀ (64 MiB, w as [N, K], bTrans)" },
    { id: "17c", K: 768, N: 3072, bT: false, what: "[1, 768] x [768, 3072] (9 MiB, GPT-2's MLP up, [K, N])" },
    { id: "17d", K: 768, N: 50257, bT: true, what: "[1, 768] x [50257, 768]ᵀ (147 MiB, GPT-2's tied logits, bTrans)" },
  ];
  const rows: GemvRow[] = [];
  try {
    for (const c of cases) {
      const x = randn([1, c.K], { seed: 1 });
      const host = randn(c.bT ? [c.N, c.K] : [c.K, c.N], { seed: 2 });
      const w = worker.allocTensor(host.shape as number[], "float32", { init: host });
      const y = worker.allocTensor([1, c.N], "float32");
      const compiled = (c.bT ? nk : kn).compile(x, host, zeros([1, c.N]));
      const bytes = c.K * c.N * 4;
      const mine: number[] = [], read: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const s = benchmark(compiled, [x, w, y], { rounds: 20, warmup: 3, worker } as never);
        mine.push(bytes / (s.deviceUsMedian * 1e3));
        read.push(await reader.measure());
      }
      worker.freeTensor(w);
      worker.freeTensor(y);
      const g = median(mine), rd = median(read), f = g / rd;
      log(`${c.id}: ${g.toFixed(1)} GB/s vs read ${rd.toFixed(1)} GB/s (${f.toFixed(2)})`);
      rows.push({
        id: c.id, what: `M = 1 product ${c.what} fp32 vs a native streaming read on ${threads} cores`, tspto: `${g.toFixed(1)} GB/s`, peer: `${rd.toFixed(1)} GB/s`,
        result: `${f.toFixed(2)} of the read`, goal: "≥ 0.85", met: f >= 0.85,
        limit: (c.K * c.N * 4 < 32 << 20 ? "the weights (under 32 MiB) can stay in this CPU's last-level cache between rounds: a cache-resident figure, not a DRAM one; " : "") +
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

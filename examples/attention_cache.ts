// Multi-head attention over a dynamic-length KV cache, written on whole tensors (GPT-2 small's
// shapes: 12 heads of 64 = 768). The k and v caches are [1024, 768] DeviceTensors that stay on
// the device; each step appends a row to each (copyTo a one-row view) and passes the first L
// rows, `cache.narrow(0, 0, L)`, where the kernel declares `pl.Tensor<["L", 768]>`. Per head h the
// kernel takes the column window `pl.slice(k, [pl.dim(k, 0), 64], [0, 64 * h])`, scores
// `matmul(q_h, k_h, { bTrans: true }) * scale` with a causal mask from `iota` + `cmp` + `sel`
// (query i sits at position L - S + i), a softmax along the run-time L, and `matmul(p, v_h)`
// into its columns of the output. One compile serves every S and L.
//
//   npx tsx examples/attention_cache.ts          (TSPTO_PLATFORM=interp for the reference interpreter)
import { pl, ChipWorker, RunConfig, randn, zeros, benchmark, type HostTensor } from "tspto";
import { check, ref, runIfMain, say, platformFromEnv, type Platform } from "./_shared.js";

const HEADS = 12, HEAD_DIM = 64, D = 768, MAX_LEN = 1024;
const SCALE = 0.125; // 1 / sqrt(64)

export const attention = pl.jit(function attention(q: pl.Tensor<["S", 768], pl.FP32>, k: pl.Tensor<["L", 768], pl.FP32>, v: pl.Tensor<["L", 768], pl.FP32>,
  out: pl.Out<pl.Tensor<["S", 768], pl.FP32>>) {
  const scores = pl.createTensor(["S", "L"], pl.FP32);
  pl.at(pl.Level.CORE_GROUP, () => {
    const past = pl.dim(k, 0) - pl.dim(q, 0); // cache rows before the first query
    for (const h of pl.range(HEADS)) {
      const qh = pl.slice(q, [pl.dim(q, 0), HEAD_DIM], [0, HEAD_DIM * h]);
      const kh = pl.slice(k, [pl.dim(k, 0), HEAD_DIM], [0, HEAD_DIM * h]);
      const vh = pl.slice(v, [pl.dim(v, 0), HEAD_DIM], [0, HEAD_DIM * h]);
      // query i (position past + i) sees the cache rows j <= past + i
      const visible = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
      pl.assign(scores, pl.sel(visible, pl.mul(pl.matmul(qh, kh, { bTrans: true }), SCALE), -1e30));
      const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
      pl.assign(scores, pl.rowExpandDiv(e, pl.rowSum(e)));
      pl.assemble(out, pl.matmul(scores, vh), [0, HEAD_DIM * h]);
    }
  });
  return out;
});

/** softmax(mask(q kᵀ · scale)) v per head, in float64 over the first L rows of the caches. */
function reference(q: Float32Array, k: Float32Array, v: Float32Array, S: number, L: number): number[] {
  const out = new Array<number>(S * D).fill(0);
  for (let h = 0; h < HEADS; h++) {
    for (let i = 0; i < S; i++) {
      const seen = L - S + i + 1;
      const s = Array.from({ length: seen }, (_, j) => {
        let t = 0;
        for (let c = 0; c < HEAD_DIM; c++) t += q[i * D + h * HEAD_DIM + c] * k[j * D + h * HEAD_DIM + c];
        return t * SCALE;
      });
      const m = Math.max(...s), e = s.map((x) => Math.exp(x - m)), z = e.reduce((a, b) => a + b, 0);
      for (let c = 0; c < HEAD_DIM; c++) {
        let t = 0;
        for (let j = 0; j < seen; j++) t += (e[j] / z) * v[j * D + h * HEAD_DIM + c];
        out[i * D + h * HEAD_DIM + c] = t;
      }
    }
  }
  return out;
}

export function main(platform: Platform = platformFromEnv()): void {
  say(`attention_cache on ${platform}`);
  const cfg = new RunConfig({ platform });
  attention.clearCache();
  // one program for every S and L, compiled from sample shapes
  const compiled = attention.compile(randn([1, D]), randn([2, D]), randn([2, D]), zeros([1, D]), cfg);
  using w = new ChipWorker(cfg);
  const kCache = w.allocTensor([MAX_LEN, D], "float32"), vCache = w.allocTensor([MAX_LEN, D], "float32");
  const kHost = new Float32Array(MAX_LEN * D), vHost = new Float32Array(MAX_LEN * D);
  /** Append `rows` rows of keys and values at position `at` (a one-step copy into a view of each cache). */
  const append = (at: number, rows: number, seed: number) => {
    const nk = randn([rows, D], { seed }), nv = randn([rows, D], { seed: seed + 1 });
    w.copyTo(kCache.narrow(0, at, rows), nk, rows * D * 4);
    w.copyTo(vCache.narrow(0, at, rows), nv, rows * D * 4);
    kHost.set(nk.data as Float32Array, at * D);
    vHost.set(nv.data as Float32Array, at * D);
  };
  const step = (S: number, L: number, seed: number, what: string) => {
    const q = randn([S, D], { seed }), out = zeros([S, D]);
    w.run(compiled, q, kCache.narrow(0, 0, L), vCache.narrow(0, 0, L), out);
    const want = reference(q.data as Float32Array, kHost, vHost, S, L);
    check(`${what}: S = ${S}, L = ${L}`, out, ref(want, [S, D]), 1e-4);
    return out;
  };
  // prefill 5 tokens (causal among themselves), then decode one token at a time
  append(0, 5, 100);
  step(5, 5, 1, "prefill");
  const lengths = platform === "interp" ? [6, 7, 40] : [6, 7, 40, 300];
  let L = 5;
  for (const target of lengths) {
    append(L, target - L, 200 + target);
    L = target;
    step(1, L, 2 + L, "decode");
  }
  // a second prefill chunk on top of the cache: 3 queries after L - 3 cached rows
  step(3, L, 9, "chunked prefill");
  if (attention.cacheSize !== 1) throw new Error(`attention_cache: expected one compiled program for every S and L, got ${attention.cacheSize}`);
  say(`  ${lengths.length + 2} launches over S in {1, 3, 5}, L up to ${L}: ${attention.cacheSize} compile`);
  if (platform === "cpu" && process.env.TSPTO_EXAMPLES_QUIET !== "1") {
    // decode time per cache length (the worker's own timing; noisy on a shared machine)
    for (const n of [64, 256, 1024]) {
      if (n > L) append(L, n - L, 300 + n), (L = n);
      const q: HostTensor = randn([1, D], { seed: n }), out = zeros([1, D]);
      const st = benchmark(compiled, [q, kCache.narrow(0, 0, n), vCache.narrow(0, 0, n), out], { rounds: 20, warmup: 3, worker: w });
      say(`  decode step, L = ${n}: device ${st.deviceUsMedian.toFixed(0)} us (median of 20)`);
    }
  }
  w.freeTensor(kCache);
  w.freeTensor(vCache);
}
runIfMain(import.meta.url, main);

// Section 12: multi-head attention over a dynamic-length KV cache (examples/attention_cache.ts:
// 12 heads of 64, resident [1024, 768] k / v caches passed as narrow(0, 0, L) views), one decode
// step (S = 1) per L, against the same attention in plain JS loops over Float32Arrays. The two
// contenders alternate within each round; medians of the rounds. Also the three stages of the
// tspto step alone (scores = q_h · k_hᵀ, softmax, p · v_h), to say where the time goes.
import { ChipWorker, RunConfig, randn, zeros, pl } from "tspto";
import { attention } from "../examples/attention_cache.js";

export interface AttentionRow { L: number; tsptoMs: number; jsMs: number; stages: { scores: number; softmax: number; pv: number } }

const D = 768, H = 12, HD = 64;
const scoresOnly = pl.jit(function scoresOnly(q: pl.Tensor<[1, 768], pl.FP32>, k: pl.Tensor<["L", 768], pl.FP32>, s: pl.Out<pl.Tensor<[12, "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const h of pl.range(12)) {
      pl.assemble(s, pl.mul(pl.matmul(pl.slice(q, [1, 64], [0, 64 * h]), pl.slice(k, [pl.dim(k, 0), 64], [0, 64 * h]), { bTrans: true }), 0.125), [h, 0]);
    }
  });
});
const softmaxOnly = pl.jit(function softmaxOnly(s: pl.InOut<pl.Tensor<[12, "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.rowExpandSub(s, pl.rowMax(s)));
    pl.assign(s, pl.rowExpandDiv(e, pl.rowSum(e)));
  });
});
const pvOnly = pl.jit(function pvOnly(p: pl.Tensor<[12, "L"], pl.FP32>, v: pl.Tensor<["L", 768], pl.FP32>, out: pl.Out<pl.Tensor<[1, 768], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const h of pl.range(12)) {
      pl.assemble(out, pl.matmul(pl.slice(p, [1, pl.dim(p, 1)], [h, 0]), pl.slice(v, [pl.dim(v, 0), 64], [0, 64 * h])), [0, 64 * h]);
    }
  });
});

/** One decode step in plain JS (the peer). */
function jsAttention(q: Float32Array, k: Float32Array, v: Float32Array, L: number, out: Float32Array, s: Float32Array): void {
  for (let h = 0; h < H; h++) {
    let m = -Infinity;
    for (let j = 0; j < L; j++) {
      let t = 0;
      for (let c = 0; c < HD; c++) t += q[h * HD + c] * k[j * D + h * HD + c];
      s[j] = t * 0.125;
      if (s[j] > m) m = s[j];
    }
    let z = 0;
    for (let j = 0; j < L; j++) { s[j] = Math.exp(s[j] - m); z += s[j]; }
    for (let c = 0; c < HD; c++) out[h * HD + c] = 0;
    for (let j = 0; j < L; j++) { const p = s[j] / z; for (let c = 0; c < HD; c++) out[h * HD + c] += p * v[j * D + h * HD + c]; }
  }
}

export function attentionBench(rounds: number, lengths: readonly number[] = [64, 256, 1024]): AttentionRow[] {
  const cfg = new RunConfig({ platform: "cpu" });
  const w = new ChipWorker(cfg);
  try {
    const K = randn([1024, D], { seed: 1 }), V = randn([1024, D], { seed: 2 });
    const kc = w.allocTensor([1024, D], "float32", { init: K }), vc = w.allocTensor([1024, D], "float32", { init: V });
    const full = w.register(attention.compile(randn([1, D]), randn([2, D]), randn([2, D]), zeros([1, D]), cfg));
    const sc = w.register(scoresOnly.compile(randn([1, D]), randn([2, D]), zeros([12, 2]), cfg));
    const sm = w.register(softmaxOnly.compile(randn([12, 2]), cfg));
    const pv = w.register(pvOnly.compile(randn([12, 2]), randn([2, D]), zeros([1, D]), cfg));
    const out: AttentionRow[] = [];
    const now = () => Number(process.hrtime.bigint()) / 1e6;
    const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
    for (const L of lengths) {
      const q = randn([1, D], { seed: L }), o = zeros([1, D]), jo = new Float32Array(D), js = new Float32Array(L), s = randn([12, L], { seed: 3 });
      const kv = kc.narrow(0, 0, L), vv = vc.narrow(0, 0, L);
      full(q, kv, vv, o);
      jsAttention(q.data as Float32Array, K.data as Float32Array, V.data as Float32Array, L, jo, js);
      let err = 0;
      (o.data as Float32Array).forEach((x, i) => { err = Math.max(err, Math.abs(x - jo[i])); });
      if (err > 1e-4) throw new Error(`attention bench: tspto and JS differ by ${err} at L = ${L}`);
      const t = { tspto: [] as number[], js: [] as number[], sc: [] as number[], sm: [] as number[], pv: [] as number[] };
      for (let r = -2; r < rounds; r++) {
        let a = now(); full(q, kv, vv, o); const x = now() - a;
        a = now(); jsAttention(q.data as Float32Array, K.data as Float32Array, V.data as Float32Array, L, jo, js); const y = now() - a;
        sc(q, kv, s); const s1 = w.lastDeviceNs; sm(s); const s2 = w.lastDeviceNs; pv(s, vv, o); const s3 = w.lastDeviceNs;
        if (r >= 0) { t.tspto.push(x); t.js.push(y); t.sc.push(s1 / 1e6); t.sm.push(s2 / 1e6); t.pv.push(s3 / 1e6); }
      }
      out.push({ L, tsptoMs: median(t.tspto), jsMs: median(t.js), stages: { scores: median(t.sc), softmax: median(t.sm), pv: median(t.pv) } });
    }
    return out;
  } finally {
    w.close();
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split("/").pop()!)) {
  for (const r of attentionBench(Number(process.env.BENCH_ROUNDS ?? 15))) {
    console.log(`L=${r.L}: tspto ${r.tsptoMs.toFixed(3)} ms, JS ${r.jsMs.toFixed(3)} ms (${(r.jsMs / r.tsptoMs).toFixed(2)}x); stages: scores ${r.stages.scores.toFixed(3)}, softmax ${r.stages.softmax.toFixed(3)}, p.v ${r.stages.pv.toFixed(3)} ms`);
  }
}

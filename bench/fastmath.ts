// Benchmarks of the vectorized transcendental functions (section "gelu") and of run-time valid
// regions bounding the work (section "valid"), hooked into bench/run.ts:
//   BENCH_ONLY=gelu npm run bench     BENCH_ONLY=valid npm run bench
// Contenders alternate within every round; medians of the rounds.
import { ChipWorker, RunConfig, pl, randn, zeros } from "tspto";

/** What a section needs from bench/run.ts. */
export interface BenchHost {
  readonly rounds: number;
  row(r: { id: string; what: string; tspto: string; peer: string; result: string; goal: string; met: boolean | null }, limit?: string): void;
  note(s: string): void;
  log(s: string): void;
}
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

/** Time the handles side by side: each round runs every contender once, in order. */
function sideBySide(rounds: number, runs: (() => void)[]): number[] {
  const t = runs.map(() => [] as number[]);
  for (let r = -3; r < rounds; r++) {
    runs.forEach((run, k) => { const s = nowMs(); run(); const e = nowMs() - s; if (r >= 0) t[k].push(e); });
  }
  return t.map(median);
}

// ------------------------------------------------------------------ GELU: tanh vs exp (vs erf, sigmoid)
export const GELU_ROWS = 128, GELU_COLS = 3072;
const C = 0.7978845608028654, A3 = 0.044715;
/** GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
export const geluTanh = pl.jit(function geluTanh(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(pl.mul(x, 0.5), pl.add(pl.tanh(pl.mul(pl.add(x, pl.mul(pl.mul(pl.mul(x, x), x), A3)), C)), 1)));
  });
  return out;
});
/** The same function through exp: x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3). */
export const geluExp = pl.jit(function geluExp(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.div(x, pl.add(pl.exp(pl.mul(pl.add(x, pl.mul(pl.mul(pl.mul(x, x), x), A3)), -2 * C)), 1)));
  });
  return out;
});
/** Through sigmoid: x sigmoid(2u). */
export const geluSigmoid = pl.jit(function geluSigmoid(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(x, pl.sigmoid(pl.mul(pl.add(x, pl.mul(pl.mul(pl.mul(x, x), x), A3)), 2 * C))));
  });
  return out;
});
/** The exact GELU: 0.5 x (1 + erf(x / sqrt 2)). */
export const geluErf = pl.jit(function geluErf(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(pl.mul(x, 0.5), pl.add(pl.erf(pl.mul(x, 0.7071067811865476)), 1)));
  });
  return out;
});

export function geluBench(h: BenchHost): void {
  h.log("gelu. GELU via tanh vs via exp");
  const shape = [GELU_ROWS, GELU_COLS];
  const X = randn(shape, { seed: 31 });
  const w = new ChipWorker(new RunConfig());
  try {
    const kernels = [geluTanh, geluExp, geluSigmoid, geluErf];
    const hs = kernels.map((k) => w.register(k.compile(X, zeros(shape))));
    const rx = w.allocTensor(shape, "float32", { init: X });
    const outs = kernels.map(() => w.allocTensor(shape, "float32"));
    // the forms agree (tanh / exp / sigmoid within fp32 rounding; erf is the exact GELU: within 1e-3)
    hs.forEach((hd, k) => hd(rx, outs[k]));
    const vals = outs.map((o) => { const t = zeros(shape); w.copyFrom(t, o, o.nbytes); return t.data as Float32Array; });
    const diff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);
    const dExp = diff(vals[0], vals[1]), dSig = diff(vals[0], vals[2]), dErf = diff(vals[0], vals[3]);
    if (!(dExp < 1e-5 && dSig < 1e-5 && dErf < 1e-3)) throw new Error(`GELU forms disagree: |tanh - exp| ${dExp}, |tanh - sigmoid| ${dSig}, |tanh - erf| ${dErf}`);
    const [tTanh, tExp, tSig, tErf] = sideBySide(h.rounds, hs.map((hd, k) => () => hd(rx, outs[k])));
    h.note(`gelu. GELU over [${GELU_ROWS}, ${GELU_COLS}] f32 (tensor level, one fused elementwise loop per tile): tanh form ${fmt(tTanh, 3)} ms, exp form ${fmt(tExp, 3)} ms, sigmoid form ${fmt(tSig, 3)} ms, exact (erf) ${fmt(tErf, 3)} ms; max |tanh - exp| = ${dExp.toExponential(1)}, |tanh - erf| = ${dErf.toExponential(1)}. tanh, sigmoid and erf are the prelude's vectorized fp32 functions (before: libm in double, the tanh form 13x the exp form).`);
    h.row({ id: "gelu", what: `GELU [${GELU_ROWS}, ${GELU_COLS}] f32 via tanh vs via exp`, tspto: `${fmt(tTanh, 3)} ms`, peer: `${fmt(tExp, 3)} ms (exp)`, result: `${fmt(tTanh / tExp)}× the exp form`, goal: "≤ 1.5×", met: tTanh / tExp <= 1.5 },
      "tanh is exp plus a polynomial branch, a division and blends: about one more exp's worth of vector work per element");
  } finally {
    w.close();
  }
}

// ------------------------------------------------------------------ valid regions: one attention decode step
export const ATT_CACHE = 1024, ATT_HEADS = 12, ATT_DIM = 64;
/**
 * One decode step of a 12-head attention layer over a KV cache of [1024, 768] rows of which the
 * first L are real (GPT-2 small's shape): per head, K and V tiles [1024, 64] loaded with
 * validShape [L, 64], s = q kᵀ / 8, a softmax over the L columns, o = p v.
 */
export const attnStep = pl.jit(function attnStep(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, L: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const h of pl.range(ATT_HEADS)) {
      const qt = pl.load(q, [0, h * ATT_DIM], [1, ATT_DIM]);
      const kt = pl.load(k, [0, h * ATT_DIM], [ATT_CACHE, ATT_DIM], { validShape: [L, ATT_DIM] });
      const vt = pl.load(v, [0, h * ATT_DIM], [ATT_CACHE, ATT_DIM], { validShape: [L, ATT_DIM] });
      const s = pl.mul(pl.matmul(qt, kt, { bTrans: true }), 0.125);
      const tmp = pl.createTile([1, ATT_CACHE], pl.FP32);
      const e = pl.exp(pl.rowExpandSub(s, pl.rowMax(s, tmp)));
      pl.store(pl.matmul(pl.rowExpandDiv(e, pl.rowSum(e, tmp)), vt), [0, h * ATT_DIM], out);
    }
  });
  return out;
});

export function validBench(h: BenchHost): void {
  h.log("valid. attention decode step over a KV cache with validShape [L, 64]");
  const width = ATT_HEADS * ATT_DIM;
  const Q = randn([1, width], { seed: 51 }), K = randn([ATT_CACHE, width], { seed: 52 }), V = randn([ATT_CACHE, width], { seed: 53 });
  const w = new ChipWorker(new RunConfig());
  try {
    const hd = w.register(attnStep.compile(Q, K, V, 1, zeros([1, width])));
    const rq = w.allocTensor([1, width], "float32", { init: Q }), rk = w.allocTensor([ATT_CACHE, width], "float32", { init: K });
    const rv = w.allocTensor([ATT_CACHE, width], "float32", { init: V }), ro = w.allocTensor([1, width], "float32");
    const lengths = [1, 128, 1024];
    const t = sideBySide(h.rounds, lengths.map((L) => () => hd(rq, rk, rv, L, ro)));
    h.note(`valid. one decode step of ${ATT_HEADS}-head attention over a [${ATT_CACHE}, ${width}] f32 KV cache (per head: K, V tiles [${ATT_CACHE}, ${ATT_DIM}] with validShape [L, ${ATT_DIM}], q kᵀ, softmax, p v; one task): ${lengths.map((L, i) => `L = ${L}: ${fmt(t[i], 3)} ms`).join(", ")}. The loads copy, the elementwise loops, reductions and matmuls run over the L valid rows only (before, every L cost the L = 1024 time: the pad was zeroed and computed over).`);
    h.row({ id: "valid", what: `attention decode step, ${ATT_HEADS} heads, KV cache [${ATT_CACHE}, ${width}] with validShape [L, ${ATT_DIM}]: L = 1 vs L = 1024`, tspto: `${fmt(t[0], 3)} ms (L = 1)`, peer: `${fmt(t[2], 3)} ms (L = 1024)`, result: `${fmt(t[2] / t[0], 1)}× less work at L = 1`, goal: "≥ 10×", met: t[2] / t[0] >= 10 },
      "the work per head is a fixed cost (task dispatch, the q load, the loops' set-up) plus L rows");
  } finally {
    w.close();
  }
}

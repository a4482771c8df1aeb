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

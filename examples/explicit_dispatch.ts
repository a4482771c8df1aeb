// Explicit dispatch: programs compiled once, registered once on a ChipWorker, and then
// dispatched by name from a table of handles — the shape of a serving or training loop.
// The model weight stays resident on the device (a DeviceTensor) for the whole loop: only the
// batch crosses host -> device, and nothing is copied back until we ask for it.
//
//   npx tsx examples/explicit_dispatch.ts
import { pl, ir, ChipWorker, RunConfig, randn, zeros, tensor, assertClose, type HostTensor } from "tspto";

const N = 64, D = 256;   // a batch of N rows, D features
const LR = 0.05;

// One SGD step of an elementwise linear model pred = w * x, loss = mean((pred - y)^2):
// w <- w - LR * 2 * (w * x - y) * x   (w is read and written: InOut)
const sgdStep = pl.jit(function sgdStep(w: pl.InOut<pl.Tensor>, x: pl.Tensor, y: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tw = pl.load(w, [0, 0], [N, D]);
    const tx = pl.load(x, [0, 0], [N, D]);
    const ty = pl.load(y, [0, 0], [N, D]);
    const err = pl.sub(pl.mul(tw, tx), ty);
    const grad = pl.mul(pl.mul(err, tx), 2 * LR);
    pl.store(pl.sub(tw, grad), [0, 0], w);
  });
  return w;
});

// pred = w * x
const predict = pl.jit(function predict(w: pl.Tensor, x: pl.Tensor, pred: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(w, [0, 0], [N, D]), pl.load(x, [0, 0], [N, D])), [0, 0], pred);
  });
  return pred;
});

const PLATFORM = (process.env.TSPTO_PLATFORM ?? "cpu") as "cpu" | "interp";
const sample = zeros([N, D]);
const programs = {
  sgdStep: ir.compile(sgdStep.lower(sample, sample, sample), { platform: PLATFORM }),
  predict: ir.compile(predict.lower(sample, sample, sample), { platform: PLATFORM }),
};

// The "true" weight the loop should learn, and a noisy starting point.
const wTrue = randn([N, D], { seed: 7 });
const wInit = randn([N, D], { seed: 8 });

{
  using worker = new ChipWorker(new RunConfig({ platform: PLATFORM }));
  // register once: each library is loaded a single time, however often it is called
  const handles = Object.fromEntries(Object.entries(programs).map(([name, c]) => [name, worker.register(c)]));
  const dispatch = (name: keyof typeof programs, ...args: unknown[]) => handles[name](...args);

  const w = worker.allocTensor([N, D], "float32", { init: wInit });   // resident weight
  const steps = 40;
  for (let step = 0; step < steps; step++) {
    const x = randn([N, D], { seed: 100 + step });
    // targets y = wTrue * x, computed on the host
    const y = wTrue.mul(x);
    dispatch("sgdStep", w, x, y);
  }
  const before = worker.stats;

  // read the weight back once, explicitly
  const learned = zeros([N, D]);
  worker.copyFrom(learned, w, w.nbytes);
  const err0 = meanAbs(wInit.sub(wTrue)), err1 = meanAbs(learned.sub(wTrue));
  console.log(`explicit dispatch on "${PLATFORM}": ${steps} SGD steps with a resident weight`);
  console.log(`  mean |w - wTrue|: ${err0.toFixed(4)} -> ${err1.toFixed(4)}`);
  if (!(err1 < err0 * 0.5)) throw new Error("the training loop did not converge");

  // predictions with the learned weight agree with a host computation
  const x = randn([N, D], { seed: 999 });
  const pred = zeros([N, D]);
  dispatch("predict", w, x, pred);
  assertClose(pred, learned.mul(x), { rtol: 1e-5, atol: 1e-5 });

  const batchBytes = N * D * 4;
  console.log(`  launches ${before.launches}; H2D ${before.h2dBytes} bytes (= ${before.h2dBytes / batchBytes} batch tensors: x and y per step, plus the weight's init);` +
    ` D2H ${before.d2hBytes} bytes (the weight never came back during the loop)`);
  if (PLATFORM === "cpu") console.log(`  libraries loaded: ${worker.deviceStats!.moduleLoads} for ${before.launches + 1} launches (register loads once)`);
  worker.freeTensor(w);
}

function meanAbs(t: HostTensor): number {
  let s = 0;
  for (const v of t.data as Float32Array) s += Math.abs(v);
  return s / t.data.length;
}
void tensor;

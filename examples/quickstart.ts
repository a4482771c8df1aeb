// The seed example of tspto (API.md §1), as written there, plus a printout of the result.
// Run it with `npm start` (or `npx tsx examples/quickstart.ts`).
import { pl, ir, ChipWorker, RunConfig, randn, zeros, assertClose } from "tspto";

const ROWS = 128, COLS = 128;
const PLATFORM = "cpu";

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

const A = randn([ROWS, COLS], { seed: 0 });
const B = randn([ROWS, COLS], { seed: 1 });

// A DeviceTensor carries no shape/dtype for the jit specializer to read, so the
// resident-weight pattern runs a *compiled* program rather than the jit entry.
const compiled = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: PLATFORM });
const cfg = new RunConfig({ platform: PLATFORM });

{
  using w = new ChipWorker(cfg);
  const resident = w.allocTensor([ROWS, COLS], "float32", { init: B }); // stays on device
  for (let i = 0; i < 3; i++) {                                          // three "batches"
    const out = zeros([ROWS, COLS]);
    w.run(compiled, A, resident, out);
    assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
  }
  w.freeTensor(resident);
}

// explicit dispatch with a registration handle (hot loop)
const worker = new ChipWorker(new RunConfig({ platform: PLATFORM }));
try {
  const handle = worker.register(compiled);   // eager registration: load once
  const out = zeros([ROWS, COLS]);
  for (let i = 0; i < 3; i++) handle(A, B, out);
  assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
} finally {
  worker.close();                             // registrations + leaked DeviceTensors released
}

// implicit dispatch: specialize, compile, cache, launch
const out = zeros([ROWS, COLS]);
addKernel(A, B, out);                         // default config: platform "cpu"
addKernel(A, B, out, cfg);                    // a trailing RunConfig is the call's config

assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
console.log(`addKernel: out = A + B over [${ROWS}, ${COLS}] float32 on platform "${PLATFORM}"`);
console.log(`  out[0, 0..4] = ${out.toArray().slice(0, 4).map((x) => x.toFixed(4)).join(", ")}`);
console.log(`  A[0, 0..4] + B[0, 0..4] = ${A.add(B).toArray().slice(0, 4).map((x) => x.toFixed(4)).join(", ")}`);
console.log(`  compiled artifacts: ${compiled.outputDir}`);
console.log("quickstart: OK");

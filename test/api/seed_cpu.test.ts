// API.md §1 verbatim: the module body below is the seed example; it runs at
// import, and the tests then check what it produced. Generated from ../shared/API.md.
import { describe, it, expect } from "vitest";
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

describe("API.md §1 seed example on cpu", () => {
  it("produced A + B through every dispatch path", () => {
    assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
    expect(compiled.platform).toBe("cpu");
    expect(worker.closed).toBe(true);
    expect(worker.stats.liveTensors).toBe(0);
  });
  it("agrees with the other platform", () => {
    const other = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: "interp" });
    const o2 = zeros([ROWS, COLS]);
    other.run(A, B, o2);
    assertClose(out, o2, { rtol: 1e-6, atol: 1e-6 });
  });
});

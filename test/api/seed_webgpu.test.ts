// API.md §1 with PLATFORM = "webgpu", in its async forms (webgpu launches and read-backs
// are asynchronous: API.md §4), and what the synchronous forms do there: a launch whose
// results stay on the device is enqueued; one that would have to wait throws E_ASYNC naming
// the async form. Skipped, saying why, where no WebGPU device opens (no Dawn, no adapter).
import { describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, RunConfig, randn, zeros, assertClose, benchmark, benchmarkAsync, TsptoRuntimeError } from "tspto";
import { titled, webgpuUnavailable } from "../targets/webgpu/helpers.js";

const ROWS = 128, COLS = 128;
const PLATFORM = "webgpu";

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu seed tests skipped: ${why}`);

/** The seed example of API.md §1, each launch in its async form. */
async function seedExample() {
  const A = randn([ROWS, COLS], { seed: 0 });
  const B = randn([ROWS, COLS], { seed: 1 });
  const compiled = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: PLATFORM });
  const cfg = new RunConfig({ platform: PLATFORM });
  {
    using w = new ChipWorker(cfg);
    const resident = w.allocTensor([ROWS, COLS], "float32", { init: B }); // stays on device
    for (let i = 0; i < 3; i++) {                                          // three "batches"
      const out = zeros([ROWS, COLS]);
      await w.runAsync(compiled, A, resident, out);
      assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
    }
    w.freeTensor(resident);
  }
  const worker = new ChipWorker(new RunConfig({ platform: PLATFORM }));
  try {
    const handle = worker.register(compiled);
    const out = zeros([ROWS, COLS]);
    for (let i = 0; i < 3; i++) await handle.callAsync(A, B, out);
    assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
  } finally {
    worker.close();
  }
  const out = zeros([ROWS, COLS]);
  await addKernel.callAsync(A, B, out, cfg);
  return { A, B, compiled, cfg, out, worker };
}

describe.skipIf(!!why)(titled("API.md §1 seed example on webgpu (async forms)", why), () => {
  it("produces A + B through every dispatch path", async () => {
    const { A, B, compiled, out, worker } = await seedExample();
    assertClose(out, A.add(B), { rtol: 1e-4, atol: 1e-4 });
    expect(compiled.platform).toBe("webgpu");
    expect(worker.closed).toBe(true);
    expect(worker.stats.liveTensors).toBe(0);
    // and bit for bit what interp computes (fp32 adds are correctly rounded on both)
    const ref = zeros([ROWS, COLS]);
    ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: "interp" }).run(A, B, ref);
    assertClose(out, ref, { rtol: 0, atol: 0 });
  });

  it("synchronous forms that would wait throw E_ASYNC naming the async form; launches whose results stay on the device are enqueued", async () => {
    const A = randn([ROWS, COLS], { seed: 2 }), B = randn([ROWS, COLS], { seed: 3 });
    const compiled = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: PLATFORM });
    const cfg = new RunConfig({ platform: PLATFORM });
    const w = new ChipWorker(cfg);
    try {
      const catchSync = (f: () => unknown): TsptoRuntimeError => {
        try { f(); } catch (e) { return e as TsptoRuntimeError; }
        throw new Error("no error");
      };
      const run = catchSync(() => w.run(compiled, A, B, zeros([ROWS, COLS])));
      expect(run).toBeInstanceOf(TsptoRuntimeError);
      expect(run.code).toBe("E_ASYNC");
      expect(run.message).toContain("a launch of 'addKernel' with a host output ('out') has to wait for the GPU on the webgpu platform, so it has no synchronous form");
      expect(run.message).toContain("await worker.runAsync(compiled, ...args), await handle.callAsync(...args) or await kernel.callAsync(...args)");
      const h = w.register(compiled);
      expect(catchSync(() => h(A, B, zeros([ROWS, COLS]))).code).toBe("E_ASYNC");
      const jit = catchSync(() => addKernel(A, B, zeros([ROWS, COLS]), cfg));
      expect(jit.code).toBe("E_ASYNC");
      expect(jit.message).toContain("await kernel.callAsync(...args)");
      const bench = catchSync(() => benchmark(compiled, [A, B, zeros([ROWS, COLS])], { worker: w, rounds: 1 }));
      expect(bench.code).toBe("E_ASYNC");
      expect(bench.message).toContain("use await benchmarkAsync(compiled, args, opts)");
      // results on the device: enqueued synchronously, read back with copyFromAsync
      const dA = w.allocTensor([ROWS, COLS], "float32", { init: A });
      const dOut = w.allocTensor([ROWS, COLS], "float32");
      expect(w.run(compiled, dA, B, dOut)).toBe(dOut);
      const copy = catchSync(() => w.copyFrom(new Float32Array(ROWS * COLS), dOut, ROWS * COLS * 4));
      expect(copy.code).toBe("E_ASYNC");
      expect(copy.message).toContain("use await worker.copyFromAsync(host, devPtr, nbytes)");
      const host = zeros([ROWS, COLS]);
      await w.copyFromAsync(host, dOut, ROWS * COLS * 4);
      assertClose(host, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      // copyToAsync then a queued launch then a read: in order
      await w.copyToAsync(dA, B, ROWS * COLS * 4);
      w.run(compiled, dA, B, dOut);
      await w.copyFromAsync(host, dOut, ROWS * COLS * 4);
      assertClose(host, B.add(B), { rtol: 1e-6, atol: 1e-6 });
      const s = w.stats;
      expect(s.h2dBytes).toBe(4 * ROWS * COLS * 4); // init, B twice (host In), copyToAsync
      expect(s.d2hBytes).toBe(2 * ROWS * COLS * 4);
    } finally {
      w.close();
    }
  });

  it("examples/async_dispatch.ts runs on webgpu", async () => {
    process.env.TSPTO_EXAMPLES_QUIET = "1";
    const { main } = await import("../../examples/async_dispatch.js");
    await main("webgpu");
  });

  it("benchmarkAsync times launches (timestamp queries where the adapter has them)", async () => {
    const A = randn([ROWS, COLS], { seed: 4 }), B = randn([ROWS, COLS], { seed: 5 });
    const compiled = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform: PLATFORM });
    const w = await new ChipWorker(new RunConfig({ platform: PLATFORM })).initAsync();
    try {
      const s = await benchmarkAsync(compiled, [A, B, zeros([ROWS, COLS])], { worker: w, rounds: 3, warmup: 1 });
      expect(s.deviceWallUs).toHaveLength(3);
      expect(s.hostWallUs).toHaveLength(3);
      for (const d of s.deviceWallUs) expect(d).toBeGreaterThan(0);
    } finally {
      w.close();
    }
  });
});

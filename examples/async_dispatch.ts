// The seed program (API.md §1) in its asynchronous forms, which run on every platform and are
// the only ones on webgpu, where launches and read-backs wait for the GPU: a resident weight
// with runAsync, a registered handle with callAsync, a jit call with callAsync, and a launch
// whose output stays on the device (enqueued at once) read back with copyFromAsync.
//
//   npx tsx examples/async_dispatch.ts                    (cpu)
//   TSPTO_PLATFORM=webgpu npx tsx examples/async_dispatch.ts
import { pl, ir, ChipWorker, RunConfig, randn, zeros } from "tspto";
import { check, runIfMain, say, type Platform } from "./_shared.js";

const ROWS = 128, COLS = 128;

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

/** (a plain function returning the Promise: the example runners look for `export function main(`) */
export function main(platform: Platform = "cpu"): Promise<void> {
  return run(platform);
}

async function run(platform: Platform): Promise<void> {
  const A = randn([ROWS, COLS], { seed: 0 });
  const B = randn([ROWS, COLS], { seed: 1 });
  const want = A.add(B);
  const compiled = ir.compile(addKernel.lower(A, B, zeros([ROWS, COLS])), { platform });
  const cfg = new RunConfig({ platform });
  const worker = await new ChipWorker(cfg).initAsync();        // webgpu: the adapter and device are open
  try {
    const resident = worker.allocTensor([ROWS, COLS], "float32", { init: B });
    for (let i = 0; i < 3; i++) {
      const out = zeros([ROWS, COLS]);
      await worker.runAsync(compiled, A, resident, out);       // host output: awaited
      check(`runAsync with a resident weight, batch ${i}`, out, want, 1e-6);
    }
    const handle = worker.register(compiled);
    const out = zeros([ROWS, COLS]);
    await handle.callAsync(A, B, out);
    check("handle.callAsync", out, want, 1e-6);
    // an output that stays on the device: the launch is enqueued, the read back awaited
    const dOut = worker.allocTensor([ROWS, COLS], "float32");
    worker.run(compiled, A, resident, dOut);
    const back = zeros([ROWS, COLS]);
    await worker.copyFromAsync(back, dOut, dOut.nbytes);
    check("a launch into a DeviceTensor, then copyFromAsync", back, want, 1e-6);
    worker.freeTensor(dOut);
    worker.freeTensor(resident);
  } finally {
    worker.close();
  }
  const out = zeros([ROWS, COLS]);
  await addKernel.callAsync(A, B, out, cfg);                   // the jit: specialize, compile, cache, launch
  check("addKernel.callAsync", out, want, 1e-6);
  say(`async_dispatch: OK on platform "${platform}"`);
}

runIfMain(import.meta.url, main);

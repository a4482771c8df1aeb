// The tspto demo page (examples/web): three kernels run on webgpu in the page, each checked
// against interp (the reference) in the same page, timed with benchmarkAsync, and the swimlane
// of a recorded launch drawn. Results are left in globalThis.__tspto for the browser test
// (test/browser/demo.test.ts) and shown in the page.
import { ChipWorker, RunConfig, assertClose, benchmarkAsync, dfxSwimlane, randn, zeros, type HostTensor } from "tspto";
import { C, D, F, K, M, N, R, S, linearRelu, softmax, transformerBlock } from "./kernels.js";

const t0 = performance.now();
interface Row { ok: boolean; maxAbsErr: number; deviceUs: number; hostUs: number; error?: string }
type Kernel = { (...a: unknown[]): unknown; callAsync(...a: unknown[]): Promise<unknown>; compile(...a: unknown[]): { outputDir: string; name: string } };
const cases: { name: string; kernel: Kernel; args: () => HostTensor[]; out: number }[] = [
  { name: "softmax", kernel: softmax as unknown as Kernel, args: () => [randn([R, C], { seed: 1 }), zeros([R, C])], out: 1 },
  { name: "linearRelu", kernel: linearRelu as unknown as Kernel, args: () => [randn([M, K], { seed: 2 }), randn([K, N], { seed: 3 }), randn([1, N], { seed: 4 }), zeros([M, N])], out: 3 },
  {
    name: "transformerBlock", kernel: transformerBlock as unknown as Kernel, out: 13,
    args: () => {
      const w = (shape: number[], seed: number, s = 0.25) => {
        const t = randn(shape, { seed });
        const d = t.data as Float32Array;
        for (let i = 0; i < d.length; i++) d[i] *= s;
        return t;
      };
      return [w([S, D], 10, 1), w([1, D], 11, 0.1), w([1, D], 12, 0.1), w([D, D], 13), w([D, D], 14), w([D, D], 15), w([D, D], 16),
        w([1, D], 17, 0.1), w([1, D], 18, 0.1), w([D, F], 19), w([1, F], 20, 0.1), w([F, D], 21), w([1, D], 22, 0.1), zeros([S, D])];
    },
  },
];

const $ = (id: string) => document.getElementById(id)!;

async function main(): Promise<void> {
  const gpuCfg = new RunConfig({ platform: "webgpu" });
  const gpu = await new ChipWorker(gpuCfg).initAsync();
  const adapter = (gpu.device as unknown as { adapter: string }).adapter;
  $("adapter").textContent = adapter;
  const results: Record<string, Row> = {};
  let firstResultMs = -1;
  for (const c of cases) {
    const tr = document.createElement("tr");
    try {
      const ref = c.args();
      c.kernel(...ref, new RunConfig({ platform: "interp" }));          // the reference, in this page
      const args = c.args();
      const compiled = c.kernel.compile(...args, gpuCfg);
      await gpu.runAsync(compiled as never, ...args);                 // webgpu: results come back awaited
      if (firstResultMs < 0) firstResultMs = performance.now() - t0;
      const got = args[c.out], want = ref[c.out];
      const a = got.data as Float32Array, b = want.data as Float32Array;
      let maxAbsErr = 0;
      for (let i = 0; i < a.length; i++) maxAbsErr = Math.max(maxAbsErr, Math.abs(a[i] - b[i]));
      assertClose(got, want, { rtol: 2e-3, atol: 2e-3 });
      const st = await benchmarkAsync(compiled as never, args, { rounds: 5, warmup: 1, worker: gpu });
      results[c.name] = { ok: true, maxAbsErr, deviceUs: st.deviceUsMedian, hostUs: st.hostUsMedian };
    } catch (e) {
      results[c.name] = { ok: false, maxAbsErr: NaN, deviceUs: NaN, hostUs: NaN, error: String((e as Error)?.message ?? e) };
    }
    const r = results[c.name];
    tr.innerHTML = `<td>${c.name}</td><td class="${r.ok ? "ok" : "bad"}">${r.ok ? "agrees with interp" : r.error}</td>` +
      `<td>${r.maxAbsErr.toExponential(2)}</td><td>${r.deviceUs.toFixed(0)}</td><td>${r.hostUs.toFixed(0)}</td>`;
    $("results").appendChild(tr);
  }
  // the swimlane of one recorded launch of the transformer block (a bar per dispatch on the GPU queue)
  const block = cases[2];
  const args = block.args();
  const compiled = block.kernel.compile(...args, gpuCfg);
  await gpu.runAsync(compiled as never, ...args, new RunConfig({ platform: "webgpu", enableChipSwimlane: 1 }));
  const lane = dfxSwimlane(compiled, "Swimlane: transformerBlock on webgpu");
  ($("swimlane") as HTMLIFrameElement).srcdoc = lane.html;
  const tasks = lane.model.tracks.reduce((n, t) => n + t.tasks.length, 0);
  $("status").textContent = `done on ${adapter}: first result ${firstResultMs.toFixed(0)} ms after load; swimlane of ${tasks} dispatches`;
  (globalThis as { __tspto?: unknown }).__tspto = { adapter, firstResultMs, results, swimlaneTasks: tasks };
}

main().catch((e: unknown) => {
  (globalThis as { __tspto?: unknown }).__tspto = { error: String((e as Error)?.stack ?? e) };
  $("status").textContent = `failed: ${String(e)}`;
  console.error(e);
});

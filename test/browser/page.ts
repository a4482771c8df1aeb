// The page of test/browser/webgpu_page.test.ts (bundled by esbuild for the browser from
// src/browser.ts): each case is a program lowered for webgpu in Node (its program.json) with
// its inputs; the page generates the WGSL, runs the entry on navigator.gpu and leaves the
// outputs, the adapter and the time to the first result in window.__tspto.
import { ArgKind, BrowserWebGpu } from "../../src/browser.js";

interface Case {
  name: string;
  program: object;
  /** Bytes of every parameter (float32 tensors), its input data (null for outputs). */
  params: { nbytes: number; data: number[] | null; out: boolean }[];
}
type Result = { adapter: string; firstResultMs: number; outputs: Record<string, Record<number, number[]>> } | { error: string };
const w = globalThis as unknown as { __tspto?: Result };
// the DOM this page uses (the project's tsconfig has no "dom" lib)
interface El { textContent: string | null; innerHTML: string; appendChild(n: El): void }
declare const document: { getElementById(id: string): El | null; createElement(tag: string): El };

async function run(): Promise<void> {
  const t0 = performance.now();
  const cases = (await (await fetch("./cases.json")).json()) as Case[];
  const gpu = new BrowserWebGpu();
  await gpu.device.ready();
  const dev = gpu.device;
  const outputs: Record<string, Record<number, number[]>> = {};
  let firstResultMs = -1;
  const table = document.getElementById("results")!;
  for (const c of cases) {
    const m = dev.load(gpu.add(c.program));
    const addrs = c.params.map((p) => dev.alloc(p.nbytes));
    c.params.forEach((p, i) => { if (p.data) dev.h2d(addrs[i], new Float32Array(p.data), p.nbytes); });
    dev.launch(m, addrs, Uint8Array.from(addrs.map(() => ArgKind.Device)));
    outputs[c.name] = {};
    for (const [i, p] of c.params.entries()) {
      if (!p.out) continue;
      const v = new Float32Array(p.nbytes / 4);
      await dev.d2hAsync(v, addrs[i], p.nbytes);
      outputs[c.name][i] = Array.from(v);
      if (firstResultMs < 0) firstResultMs = performance.now() - t0;
    }
    for (const a of addrs) dev.free(a);
    const row = document.createElement("tr");
    row.innerHTML = `<td>${c.name}</td><td>ran on webgpu</td>`;
    table.appendChild(row);
  }
  w.__tspto = { adapter: dev.adapter, firstResultMs, outputs };
  document.getElementById("status")!.textContent = `done on ${dev.adapter}`;
}

run().catch((e: unknown) => {
  w.__tspto = { error: String((e as Error)?.stack ?? e) };
  console.error(e);
});

// The bench page of section 16 (bench/browser.ts): tspto and onnxruntime-web's WebGPU backend
// running softmax and MatMul on the same shapes, in this page, on the same adapter
// (navigator.gpu). Each timed call is end to end from the host: inputs uploaded, the kernel
// dispatched, outputs read back (tspto: worker.runAsync; onnxruntime-web: session.run with CPU
// tensors). Rounds alternate between the two. Results go to globalThis.__bench.
import { ChipWorker, RunConfig, pl, randn, zeros, type HostTensor } from "tspto";

export const SR = 32, SC = 256, MM = 64;
const softmax = pl.jit(function softmax(x: pl.Tensor<[32, 256], pl.FP32>, out: pl.Out<pl.Tensor<[32, 256], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const e = pl.exp(pl.sub(x, pl.rowMax(x)));
    pl.assign(out, pl.div(e, pl.rowSum(e)));
  });
});
const matmul = pl.jit(function matmul(a: pl.Tensor<[64, 64], pl.FP32>, b: pl.Tensor<[64, 64], pl.FP32>, out: pl.Out<pl.Tensor<[64, 64], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(a, b)); });
});

interface OrtTensor { data: Float32Array }
interface Ort {
  env: { wasm: { wasmPaths: string; numThreads: number }; logLevel: string };
  Tensor: new (type: "float32", data: Float32Array, dims: number[]) => OrtTensor;
  InferenceSession: { create(model: Uint8Array, o: object): Promise<{ run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> }> };
}
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };

async function main(): Promise<void> {
  const rounds = Number(new URLSearchParams((globalThis as unknown as { location: { search: string } }).location.search).get("rounds") ?? 20);
  const ortUrl = "/ort/ort.webgpu.min.mjs";
  const ort = (await import(/* @vite-ignore */ ortUrl)) as Ort;
  ort.env.wasm.wasmPaths = "/ort/";
  ort.env.wasm.numThreads = 1;
  const gpu = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync();
  const adapter = (gpu.device as unknown as { adapter: string }).adapter;
  const out: Record<string, { tsptoUs: number; ortUs: number; maxAbsDiff: number }> = {};
  const cases: { name: string; kernel: unknown; args: HostTensor[]; out: number; model: string; feeds: string[] }[] = [
    { name: "softmax", kernel: softmax, args: [randn([SR, SC], { seed: 1 }), zeros([SR, SC])], out: 1, model: "/softmax.onnx", feeds: ["x"] },
    { name: "matmul", kernel: matmul, args: [randn([MM, MM], { seed: 2 }), randn([MM, MM], { seed: 3 }), zeros([MM, MM])], out: 2, model: "/matmul.onnx", feeds: ["a", "b"] },
  ];
  for (const c of cases) {
    const k = c.kernel as { compile(...a: unknown[]): unknown };
    const compiled = k.compile(...c.args, new RunConfig({ platform: "webgpu" }));
    const model = new Uint8Array(await (await fetch(c.model)).arrayBuffer());
    const session = await ort.InferenceSession.create(model, { executionProviders: ["webgpu"] });
    const feeds: Record<string, OrtTensor> = {};
    c.feeds.forEach((f, i) => { feeds[f] = new ort.Tensor("float32", c.args[i].data as Float32Array, [...c.args[i].shape]); });
    let ortOut: Float32Array = new Float32Array(0);
    const tt: number[] = [], to: number[] = [];
    for (let r = 0; r < rounds + 2; r++) {
      let t = performance.now();
      await gpu.runAsync(compiled as never, ...c.args);
      const a = performance.now() - t;
      t = performance.now();
      const res = await session.run(feeds);
      const b = performance.now() - t;
      ortOut = Object.values(res)[0].data;
      if (r >= 2) { tt.push(a * 1000); to.push(b * 1000); }
    }
    const mine = c.args[c.out].data as Float32Array;
    let d = 0;
    for (let i = 0; i < mine.length; i++) d = Math.max(d, Math.abs(mine[i] - ortOut[i]));
    out[c.name] = { tsptoUs: median(tt), ortUs: median(to), maxAbsDiff: d };
  }
  (globalThis as { __bench?: unknown }).__bench = { adapter, rounds, results: out };
}

main().catch((e: unknown) => {
  (globalThis as { __bench?: unknown }).__bench = { error: String((e as Error)?.stack ?? e) };
  console.error(e);
});

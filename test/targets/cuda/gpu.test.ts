// With a GPU (hasCudaGpu; skipped elsewhere): the seed program, every corpus program and
// every example run on cuda and agree with interp (or the examples' own JS references)
// within dtype tolerances; DeviceTensors cross PCIe zero times; close() frees GPU memory.
import { describe, expect, it, beforeAll } from "vitest";
import { ChipWorker, RunConfig, assertClose, ir, randn, tensor, zeros, type HostTensor } from "tspto";
import type { Program } from "../../../src/ir/index.js";
import { hasCudaGpu } from "./gpu.js";
import { CudaDevice } from "../../../src/targets/cuda/index.js";
import { corpusPrograms, exampleFiles, runExample, seedProgram } from "./corpus.js";

const TOL: Record<string, number> = { float32: 2e-3, float16: 1e-2, bfloat16: 3e-2 };

/** Seeded inputs for a compiled program's parameters (floats: randn; integers: small values). */
function inputsFor(params: readonly { kind: string; dtype: string; shape?: number[]; direction: string; value?: number | boolean }[], seed: number): unknown[] {
  return params.map((p, i) => {
    if (p.kind === "scalar") return p.value ?? (p.dtype === "bool" ? true : p.dtype.startsWith("float") ? 0.5 : 3);
    const shape = p.shape!;
    if (p.dtype.startsWith("float") || p.dtype === "bfloat16") return randn(shape, { seed: seed + i, dtype: p.dtype as "float32" });
    const n = shape.reduce((a, b) => a * b, 1);
    let s = (seed * 7919 + i * 104729) >>> 0;
    const vals = Array.from({ length: n }, () => { s = (s * 1103515245 + 12345) >>> 0; return p.dtype === "bool" ? (s >> 16) & 1 : ((s >> 16) % 17) - (p.dtype === "uint8" ? 0 : 8); });
    return tensor(vals.map((v) => (p.dtype === "uint8" ? Math.abs(v) : v)), { shape, dtype: p.dtype as "int32" });
  });
}

describe.runIf(hasCudaGpu)("cuda on a GPU", () => {
  let corpus: Map<string, Program>;
  beforeAll(async () => { corpus = await corpusPrograms(); }, 600_000);

  it("the seed program: resident weights, three batches, registered handle", () => {
    const A = randn([128, 128], { seed: 0 }), B = randn([128, 128], { seed: 1 });
    const compiled = ir.compile(seedProgram(), { platform: "cuda" });
    const w = new ChipWorker(new RunConfig({ platform: "cuda" }));
    try {
      const resident = w.allocTensor([128, 128], "float32", { init: B });
      const before = { ...w.stats };
      for (let i = 0; i < 3; i++) {
        const out = zeros([128, 128]);
        w.run(compiled, A, resident, out);
        assertClose(out, A.add(B), { rtol: 1e-5, atol: 1e-5 });
      }
      // per launch: A up (64 KiB) and out down (64 KiB); the resident tensor crosses nothing
      expect(w.stats.h2dBytes - before.h2dBytes).toBe(3 * 128 * 128 * 4);
      expect(w.stats.d2hBytes - before.d2hBytes).toBe(3 * 128 * 128 * 4);
      w.freeTensor(resident);
      const h = w.register(compiled);
      const out = zeros([128, 128]);
      for (let i = 0; i < 3; i++) h(A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-5, atol: 1e-5 });
    } finally {
      w.close();
    }
  });

  it("every corpus program agrees with interp", () => {
    const bad: string[] = [];
    for (const [name, p] of corpus) {
      const c = ir.compile(p, { platform: "cuda" }), r = ir.compile(p, { platform: "interp" });
      const params = c.meta.params;
      const a = inputsFor(params, 11), b = inputsFor(params, 11);
      try {
        new ChipWorker(new RunConfig({ platform: "cuda" })).run(c, ...a);
        new ChipWorker(new RunConfig({ platform: "interp" })).run(r, ...b);
        params.forEach((q, i) => {
          if (q.kind !== "tensor" || q.direction === "in") return;
          const tol = TOL[q.dtype] ?? 0;
          assertClose(a[i] as HostTensor, b[i] as HostTensor, { rtol: tol, atol: tol });
        });
      } catch (e) {
        bad.push(`${name}: ${(e as Error).message.split("\n").slice(0, 3).join(" ")}`);
      }
    }
    expect(bad).toEqual([]);
  });

  for (const file of exampleFiles()) {
    it(`example ${file} on cuda`, async () => { await runExample(file, "cuda"); });
  }

  it("close() frees GPU memory: workers that each hold 30% of it, one after another", () => {
    const probe = new CudaDevice({ deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 20, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 });
    const cap = probe.stats().capacity;
    probe.close();
    const n = Math.floor((0.3 * cap) / 4 / (1 << 20)) * (1 << 20);
    for (let k = 0; k < 5; k++) {
      const w = new ChipWorker(new RunConfig({ platform: "cuda" }));
      w.allocTensor([n], "float32");
      expect(w.stats.deviceBytesInUse).toBeGreaterThanOrEqual(n * 4);
      w.close(); // forgot freeTensor: close releases it
    }
  });
});

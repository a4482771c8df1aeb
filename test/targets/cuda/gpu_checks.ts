// The GPU checks, as a plain list: test/targets/cuda/gpu.test.ts registers each as a vitest
// test (describe.runIf(hasCudaGpu)), and the GPU pack's runner (scripts/gpu_check.ts) runs
// them without vitest and prints "N passed, M failed". Each throws on a failure.
import { ChipWorker, HostTensor, RunConfig, assertClose, ir, randn, tensor, zeros } from "tspto";
import type { Program } from "../../../src/ir/index.js";
import { ArgKind } from "../../../src/targets/target.js";
import { CudaDevice } from "../../../src/targets/cuda/index.js";
import { corpusPrograms, cudaExampleFiles, runExample, seedProgram } from "./corpus.js";
import { V2_MATMUL_CHECKS } from "../../../bench/gpu_kernels.js";

export interface Check { name: string; run: () => void | Promise<void> }

const TOL: Record<string, number> = { float32: 2e-3, float16: 1e-2, bfloat16: 3e-2 };
const DEV_OPTS = { deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 20, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 };

function expectEq(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

/** Seeded inputs for a compiled program's parameters (floats: randn; integers: small values). */
export function inputsFor(params: readonly { kind: string; dtype: string; shape?: number[]; direction: string; value?: number | boolean }[], seed: number): unknown[] {
  return params.map((p, i) => {
    if (p.kind === "scalar") return p.value ?? (p.dtype === "bool" ? true : p.dtype.startsWith("float") ? 0.5 : 3);
    const shape = p.shape!;
    if (p.dtype === "float32" || p.dtype === "float16" || p.dtype === "bfloat16") return randn(shape, { seed: seed + i, dtype: p.dtype });
    const n = shape.reduce((a, b) => a * b, 1);
    let s = (seed * 7919 + i * 104729) >>> 0;
    const vals = Array.from({ length: n }, () => { s = (s * 1103515245 + 12345) >>> 0; return p.dtype === "bool" ? (s >> 16) & 1 : p.dtype === "uint8" ? (s >> 16) % 17 : ((s >> 16) % 17) - 8; });
    return tensor(vals, { shape, dtype: p.dtype as "int32" });
  });
}

let corpus: Promise<Map<string, Program>> | null = null;

export function gpuChecks(): Check[] {
  const checks: Check[] = [
    {
      name: "device: zero-filled alloc, h2d / d2d / d2h, counters, free, close",
      run() {
        const d = new CudaDevice(DEV_OPTS);
        const a = d.alloc(4096), b = d.alloc(4096);
        const z = new Uint8Array(4096);
        d.d2h(z, a, 4096);
        if (!z.every((x) => x === 0)) throw new Error("alloc is not zero-filled");
        const src = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7 + 3) & 255);
        d.h2d(a, src, 4096);
        d.d2d(b, a, 4096);
        const out = new Uint8Array(4096);
        d.d2h(out, b, 4096);
        if (!out.every((x, i) => x === src[i])) throw new Error("d2d / d2h returned other bytes");
        const s = d.stats();
        expectEq([s.h2dBytes, s.d2hBytes, s.liveAllocations], [4096, 8192, 2], "h2d, d2h, live allocations");
        d.free(a);
        expectEq(d.isLive(a), false, "isLive after free");
        d.close();
        expectEq(d.closed, true, "closed");
      },
    },
    {
      name: "launch safety (docs/semantics.md) on the GPU: host views checked against argBytes, bad addresses, a free deferred by a queued launch",
      async run() {
        const compiled = ir.compile(seedProgram(), { platform: "cuda" });
        const shape = compiled.meta.params[0].shape as number[];
        const n = shape.reduce((x, y) => x * y, 1);
        const A = randn(shape, { seed: 3 }), B = randn(shape, { seed: 4 });
        const d = new CudaDevice(DEV_OPTS);
        const codeOf = (f: () => unknown): string => { try { f(); } catch (e) { return String((e as { code?: string }).code); } return "no error"; };
        const pending = () => (d.stats() as { pendingFrees?: number }).pendingFrees;
        try {
          const m = d.load(compiled);
          const b = d.alloc(n * 4);
          d.h2d(b, B.data as Float32Array, n * 4);
          const K = Uint8Array.of(ArgKind.HostIn, ArgKind.Device, ArgKind.HostOut);
          expectEq(codeOf(() => d.launch(m, [new Float32Array(n - 1), b, new Float32Array(n)], K)), "E_HOST_VIEW", "a host In view one element short");
          expectEq(codeOf(() => d.launch(m, [A.data, b, new Float32Array(n - 1)], K)), "E_HOST_VIEW", "a host Out view one element short");
          const freed = d.alloc(64);
          d.free(freed);
          expectEq(codeOf(() => d.launch(m, [A.data, freed, new Float32Array(n)], K)), "E_ADDRESS", "a freed device tensor");
          expectEq(codeOf(() => d.launch(m, [A.data, b + 64n, new Float32Array(n)], K)), "E_ADDRESS", "an interior device address");
          const out = new Float32Array(n);
          const p = d.launchAsync(m, [A.data, b, out], K);
          d.free(b);  // the queued launch holds b: dead at once, released when it completes
          expectEq([d.isLive(b), pending()], [false, 1], "isLive / pendingFrees after a free under a queued launch");
          await p;
          expectEq(pending(), 0, "pendingFrees after the launch");
          assertClose(new HostTensor(out, shape, "float32"), A.add(B), { rtol: 1e-5, atol: 1e-5 });
        } finally {
          d.close();
        }
      },
    },
    {
      name: "seed program (API.md §1): resident weights, three batches, registered handle",
      run() {
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
          // per launch: A up and out down (64 KiB each); the resident tensor crosses nothing
          expectEq([w.stats.h2dBytes - before.h2dBytes, w.stats.d2hBytes - before.d2hBytes], [3 * 65536, 3 * 65536], "bytes moved by three launches");
          w.freeTensor(resident);
          const h = w.register(compiled);
          const out = zeros([128, 128]);
          for (let i = 0; i < 3; i++) h(A, B, out);
          assertClose(out, A.add(B), { rtol: 1e-5, atol: 1e-5 });
        } finally {
          w.close();
        }
      },
    },
    {
      name: "DeviceTensor views on the GPU: a narrow of a resident [256, 128] tensor is the seed program's b; copyTo through a one-row view; a view dies with its base",
      run() {
        const A = randn([128, 128], { seed: 2 }), B = randn([256, 128], { seed: 3 });
        const compiled = ir.compile(seedProgram(), { platform: "cuda" });
        const w = new ChipWorker(new RunConfig({ platform: "cuda" }));
        try {
          const t = w.allocTensor([256, 128], "float32", { init: B });
          const bottom = t.narrow(0, 128, 128);
          const out = zeros([128, 128]);
          w.run(compiled, A, bottom, out);
          const want = new HostTensor((B.data as Float32Array).slice(128 * 128), [128, 128], "float32");
          assertClose(out, A.add(want), { rtol: 1e-5, atol: 1e-5 });
          const row = new Float32Array(128).fill(5);
          w.copyTo(t.narrow(0, 200, 1), row, 512);
          const back = new Float32Array(128);
          w.copyFrom(back, t.view([256 * 128]).narrow(0, 200 * 128, 128), 512);
          expectEq(Array.from(back), Array.from(row), "a row written and read back through views");
          w.freeTensor(t);
          let code = "no error";
          try { w.run(compiled, A, bottom, zeros([128, 128])); } catch (e) { code = String((e as { code?: string }).code); }
          expectEq(code, "E_FREED", "a launch with a view of a freed tensor");
        } finally {
          w.close();
        }
      },
    },
    {
      name: "every corpus program agrees with interp",
      async run() {
        corpus ??= corpusPrograms();
        const bad: string[] = [];
        const cw = new ChipWorker(new RunConfig({ platform: "cuda" })), iw = new ChipWorker(new RunConfig({ platform: "interp" }));
        try {
          for (const [name, p] of await corpus) {
            try {
              const c = ir.compile(p, { platform: "cuda" }), r = ir.compile(p, { platform: "interp" });
              const params = c.meta.params;
              const a = inputsFor(params, 11), b = inputsFor(params, 11);
              cw.run(c, ...a);
              iw.run(r, ...b);
              params.forEach((q, i) => {
                if (q.kind !== "tensor" || q.direction === "in") return;
                const tol = TOL[q.dtype] ?? 0;
                assertClose(a[i] as HostTensor, b[i] as HostTensor, { rtol: tol, atol: tol });
              });
            } catch (e) {
              bad.push(`${name}: ${(e as Error).message.split("\n").slice(0, 3).join(" ")}`);
            }
          }
        } finally {
          cw.close();
          iw.close();
        }
        if (bad.length) throw new Error(`${bad.length} programs differ:\n  ${bad.join("\n  ")}`);
      },
    },
    {
      // (v2 on sm_90a: the TMA GEMM at 64- and 128-row tiles and the decode GEMV; v1: the tile lowering)
      name: "matmul kernels (v2: TMA GEMM, GEMV) agree with interp: bf16 / f16 [256, 320] @ [320, 512] and a 4-row GEMV",
      run() {
        const cfg = new RunConfig({ platform: "cuda" }), icfg = new RunConfig({ platform: "interp" });
        const bad: string[] = [];
        for (const k of V2_MATMUL_CHECKS) {
          const A = randn([...k.a], { seed: 21, dtype: k.dtype }), B = randn([...k.b], { seed: 22, dtype: k.dtype });
          const C = zeros([...k.c]), R = zeros([...k.c]);
          k.fn(A, B, C, cfg);
          k.fn(A, B, R, icfg);
          try { assertClose(C, R, { rtol: 2e-3, atol: 2e-3 }); } catch (e) { bad.push(`${k.name}: ${(e as Error).message.split("\n")[0]}`); }
        }
        if (bad.length) throw new Error(bad.join("\n  "));
      },
    },
    ...cudaExampleFiles().map((file) => ({ name: `example ${file} on cuda`, run: () => runExample(file, "cuda") })),
    {
      name: "close() frees GPU memory: five workers that each hold 30% of it, one after another",
      run() {
        const probe = new CudaDevice(DEV_OPTS);
        const cap = probe.stats().capacity;
        probe.close();
        const n = Math.floor((0.3 * cap) / 4 / (1 << 20)) * (1 << 20);
        for (let k = 0; k < 5; k++) {
          const w = new ChipWorker(new RunConfig({ platform: "cuda" }));
          w.allocTensor([n], "float32");
          if (w.stats.deviceBytesInUse < n * 4) throw new Error(`deviceBytesInUse ${w.stats.deviceBytesInUse} < ${n * 4}`);
          w.close(); // freeTensor forgotten: close releases it
        }
      },
    },
  ];
  return checks;
}

/** Runs every check, printing one line each and the summary; returns the failure count. */
export async function runChecks(checks: readonly Check[], out: (s: string) => void = (s) => process.stdout.write(`${s}\n`)): Promise<{ passed: number; failed: number }> {
  let passed = 0, failed = 0;
  for (const c of checks) {
    const t0 = performance.now();
    try {
      await c.run();
      passed++;
      out(`  ok    ${c.name} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (e) {
      failed++;
      out(`  FAIL  ${c.name}: ${(e as Error).message}`);
    }
  }
  out(`${passed} passed, ${failed} failed`);
  return { passed, failed };
}

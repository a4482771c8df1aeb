// The webgpu device's semantics and error paths: kernel failure records, arguments that share
// a buffer, frees and reuse under queued launches, operations queued before the device opens,
// one uniform slice per dispatch (many dispatches in one launch), close(), unaligned copies,
// the DFX swimlane of dispatches, and opening without an adapter. Skipped, saying why, where no
// WebGPU device opens (the code generator's own checks: ../../codegen/wgsl.test.ts).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pl, ir, ChipWorker, RunConfig, randn, zeros, assertClose, tensor, TsptoError, type HostTensor } from "tspto";
import { titled, webgpuUnavailable } from "./helpers.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu device tests skipped: ${why}`);

const dynLoad = pl.jit(function dynLoad(a: pl.Tensor, out: pl.Out<pl.Tensor>, row: pl.Scalar<pl.INT32>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [row, 0], [4, 16]);
    pl.store(pl.mul(t, 2), [0, 0], out);
  });
  return out;
});

const addTwice = pl.jit(function addTwice(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], out);
  });
  return out;
});

/** 200 calls in one launch, each with its own scalar: out[i] = x * i + i for i < 200 (rows of out). */
const STEPS = 200;
const manySteps = pl.jit(function manySteps(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const i of pl.range(STEPS)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(x, [0, 0], [1, 64]);
      pl.store(pl.add(pl.mul(t, i), i), [i, 0], out);
    });
  }
  return out;
});

describe.skipIf(!!why)(titled("webgpu device", why), () => {
  let w: ChipWorker;
  beforeAll(async () => { w = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync(); });
  afterAll(() => w?.close());

  it("a run-time window out of bounds is an E_KERNEL with the message the cpu platform gives; the worker stays usable", async () => {
    const a = randn([8, 16], { seed: 1 });
    const c = ir.compile(dynLoad.lower(a, zeros([4, 16]), 2), { platform: "webgpu" });
    let cpuMsg = "";
    try { ir.compile(dynLoad.lower(a, zeros([4, 16]), 2), { platform: "cpu" }).run(a, zeros([4, 16]), 6); } catch (e) { cpuMsg = (e as Error).message; }
    let err: unknown;
    try { await w.runAsync(c, a, zeros([4, 16]), 6); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoError);
    expect((err as TsptoError).code).toBe("E_KERNEL");
    const msg = (err as Error).message;
    expect(msg).toMatch(/kernel failure: .*device\.test\.ts:\d+:\d+: load window \[6, 0\] \+ \[4, 16\] is outside tensor 'a' of shape \[8, 16\] \(axis 0\)/);
    // the cpu platform says the same (and names its task)
    expect(cpuMsg).toContain(msg.split("\n")[0].replace(/^\[E_KERNEL\] /, ""));
    const out = zeros([4, 16]);
    await w.runAsync(c, a, out, 3);
    assertClose(out, tensor(Array.from(a.data as Float32Array).slice(3 * 16, 7 * 16).map((v) => 2 * v), { shape: [4, 16] }), { rtol: 0, atol: 0 });
  });

  it("one DeviceTensor as two parameters (every tensor is a range of one binding: nothing aliases for WebGPU)", async () => {
    const x = randn([16, 32], { seed: 2 });
    const c = ir.compile(addTwice.lower(x, x, zeros([16, 32])), { platform: "webgpu" });
    const d = w.allocTensor([16, 32], "float32", { init: x });
    const out = zeros([16, 32]);
    await w.runAsync(c, d, d, out);
    assertClose(out, x.add(x), { rtol: 0, atol: 0 });
    // in place: the same tensor as input and output
    w.run(c, d, d, d);
    const back = zeros([16, 32]);
    await w.copyFromAsync(back, d, d.nbytes);
    assertClose(back, x.add(x), { rtol: 0, atol: 0 });
    w.freeTensor(d);
  });

  it("a freed tensor's memory reused under a queued launch: the queue runs the launch first", async () => {
    const x = randn([16, 32], { seed: 3 }), y = randn([16, 32], { seed: 4 });
    const c = ir.compile(addTwice.lower(x, x, zeros([16, 32])), { platform: "webgpu" });
    const dx = w.allocTensor([16, 32], "float32", { init: x });
    const out = w.allocTensor([16, 32], "float32");
    w.run(c, dx, x, out);            // queued
    w.freeTensor(dx);                // its range is free now
    const other = w.allocTensor([16, 32], "float32", { init: y }); // and reused at once
    expect(other.dataPtr).not.toBe(dx.dataPtr);                     // addresses are never handed out twice
    const back = zeros([16, 32]);
    await w.copyFromAsync(back, out, out.nbytes);
    assertClose(back, x.add(x), { rtol: 0, atol: 0 });
    const o2 = zeros([16, 32]);
    await w.copyFromAsync(o2, other, other.nbytes);
    assertClose(o2, y, { rtol: 0, atol: 0 });
    w.freeTensor(other); w.freeTensor(out);
  });

  it("operations called before the device is open are queued in order", async () => {
    const x = randn([16, 32], { seed: 5 });
    const c = ir.compile(addTwice.lower(x, x, zeros([16, 32])), { platform: "webgpu" });
    const fresh = new ChipWorker(new RunConfig({ platform: "webgpu" })); // requestAdapter still pending
    try {
      const d = fresh.allocTensor([16, 32], "float32", { init: x });
      const out = fresh.allocTensor([16, 32], "float32");
      fresh.run(c, d, d, out);
      fresh.copyDevice(d, out, out.nbytes);
      const back = zeros([16, 32]);
      await fresh.copyFromAsync(back, d, d.nbytes);
      assertClose(back, x.add(x), { rtol: 0, atol: 0 });
    } finally {
      fresh.close();
    }
  });

  it(`${STEPS} dispatches in one launch, each with its own uniform slice (loop index and scalars)`, async () => {
    const x = randn([1, 64], { seed: 6 });
    const c = ir.compile(manySteps.lower(x, zeros([STEPS, 64])), { platform: "webgpu" });
    const out = zeros([STEPS, 64]);
    await w.runAsync(c, x, out);
    const want = zeros([STEPS, 64]);
    for (let i = 0; i < STEPS; i++) for (let j = 0; j < 64; j++) (want.data as Float32Array)[i * 64 + j] = Math.fround(Math.fround(x.data[j] as number * i) + i);
    assertClose(out, want, { rtol: 0, atol: 0 });
    expect(w.deviceStats!.tasksRun).toBeGreaterThanOrEqual(STEPS);
  });

  it("copies: device to device (also overlapping and unaligned), and a clear error for an unaligned write", async () => {
    const bytes = new Uint8Array(Array.from({ length: 40 }, (_, i) => i + 1));
    const d = w.allocTensor([40], "uint8", { init: tensor(bytes, { dtype: "uint8" }) });
    w.copyDevice(d.dataPtr + 5n, d.dataPtr + 2n, 17);   // overlapping, odd offsets
    const back = new Uint8Array(40);
    await w.copyFromAsync(back, d, 40);
    const want = bytes.slice();
    want.copyWithin(5, 2, 19);
    expect(Array.from(back)).toEqual(Array.from(want));
    let err: unknown;
    try { w.copyTo(d.dataPtr + 1n, new Uint8Array(2), 2); } catch (e) { err = e; }
    expect((err as TsptoError).code).toBe("E_ALIGN");
    expect((err as Error).message).toContain("webgpu writes device memory in 4-byte words; the range [1, 3) of an allocation of 40 bytes is not word-aligned");
    w.freeTensor(d);
  });

  it("close() releases every tensor and registration; later use is E_CLOSED", async () => {
    const x = randn([16, 32], { seed: 7 });
    const c = ir.compile(addTwice.lower(x, x, zeros([16, 32])), { platform: "webgpu" });
    const v = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync();
    v.allocTensor([16, 32], "float32", { init: x });
    const h = v.register(c);
    await h.callAsync(x, x, zeros([16, 32]));
    v.close();
    expect(v.stats.released).toEqual({ deviceBytes: 2048, tensors: 1, registrations: 1 });
    await expect(h.callAsync(x, x, zeros([16, 32]))).rejects.toThrow(/E_HANDLE_CLOSED/);
    expect(() => v.allocTensor([4], "float32")).toThrow(/E_CLOSED/);
  });

  it("a swimlane of dispatches (DFX) from timestamp queries, and the other DFX files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-webgpu-dfx-"));
    const x = randn([1, 64], { seed: 8 });
    const c = ir.compile(manySteps.lower(x, zeros([STEPS, 64])), { platform: "webgpu", outputDir: dir });
    const v = await new ChipWorker(new RunConfig({ platform: "webgpu", enableChipSwimlane: 1, enableDepGen: true, enablePmu: 1, enableScopeStats: true })).initAsync();
    try {
      await v.runAsync(c, x, zeros([STEPS, 64]));
      const file = join(dir, "dfx_outputs", "swimlane.json");
      expect(existsSync(file)).toBe(true);
      const lane = JSON.parse(readFileSync(file, "utf8")) as { traceEvents: { ph: string; name: string; dur?: number }[] };
      const tasks = lane.traceEvents.filter((e) => e.ph === "X");
      expect(tasks.length).toBe(STEPS);
      expect(tasks[0].name).toContain("k_manySteps_incore_0");
      if ((v.device as unknown as { timestamps: boolean }).timestamps) expect(tasks.some((t) => (t.dur ?? 0) > 0)).toBe(true);
      // the other files: what the device knows (dispatches; no counters, no accesses)
      for (const f of ["deps.json", "pmu.csv", "scope_stats.jsonl"]) expect(existsSync(join(dir, "dfx_outputs", f)), f).toBe(true);
      expect(readFileSync(join(dir, "dfx_outputs", "pmu.csv"), "utf8")).toContain("no hardware counters on webgpu");
    } finally {
      v.close();
    }
  });
});

describe("webgpu without an adapter", () => {
  it.skipIf(!!why && !why.includes("adapter"))("is one E_NO_GPU error that says what to install", () => {
    // a child process whose Vulkan loader finds no driver at all
    const dir = mkdtempSync(join(tmpdir(), "tspto-webgpu-none-"));
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const script = join(dir, "open.mts");
    writeFileSync(script, `import { ChipWorker, RunConfig } from ${JSON.stringify(join(root, "src/index.ts"))};
const w = new ChipWorker(new RunConfig({ platform: "webgpu" }));
try { await w.initAsync(); console.log("OPENED"); } catch (e) { console.log(String(e.code) + " " + e.message); } finally { w.close(); }
`);
    const r = spawnSync(process.execPath, ["--import", "tsx", script], {
      cwd: root, encoding: "utf8", timeout: 60_000,
      env: { ...process.env, VK_ICD_FILENAMES: join(dir, "none.json"), VK_DRIVER_FILES: join(dir, "none.json") },
    });
    const out = `${r.stdout}${r.stderr}`;
    expect(out).toContain("E_NO_GPU");
    expect(out).toContain("WebGPU found no adapter (no GPU driver Dawn can use)");
    expect(out).toContain("hint: run on a machine with a GPU and its Vulkan (Linux), Metal (macOS) or D3D12 (Windows) driver");
  });
});

export type { HostTensor };

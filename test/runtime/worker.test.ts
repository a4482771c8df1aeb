// ChipWorker, DeviceTensor, RegistrationHandle, CompiledProgram, benchmark: the dispatch,
// transfer and residency rules of SEMANTICS.md, on cpu and interp, and every error path.
import { describe, it, expect, afterAll } from "vitest";
import { mkdtempSync, writeFileSync, rmSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, ir, ChipWorker, RunConfig, DeviceTensor, CompiledProgram, benchmark, randn, zeros, full, assertClose, tensor } from "tspto";

const R = 32, C = 64;

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [R, C]);
    const tb = pl.load(b, [0, 0], [R, C]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

// acc <- acc * 2 + x  (InOut)
const accumulate = pl.jit(function accumulate(acc: pl.InOut<pl.Tensor>, x: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(acc, [0, 0], [R, C]);
    pl.store(pl.add(pl.mul(t, 2), pl.load(x, [0, 0], [R, C])), [0, 0], acc);
  });
  return acc;
});

const A = randn([R, C], { seed: 11 }), B = randn([R, C], { seed: 12 });
const BYTES = R * C * 4;
const compiledFor = (platform: "cpu" | "interp") => ({
  add: ir.compile(addKernel.lower(A, B, zeros([R, C])), { platform }),
  acc: ir.compile(accumulate.lower(A, B), { platform }),
});
const programs = { cpu: compiledFor("cpu"), interp: compiledFor("interp") };
const open: ChipWorker[] = [];
const newWorker = (platform: "cpu" | "interp") => { const w = new ChipWorker(new RunConfig({ platform })); open.push(w); return w; };
afterAll(() => open.forEach((w) => w.close()));

for (const platform of ["cpu", "interp"] as const) {
  const P = programs[platform];
  describe(`ChipWorker on ${platform}`, () => {
    it("counts transfers per launch by direction and residency", () => {
      const w = newWorker(platform);
      const out = zeros([R, C]);
      w.run(P.add, A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      let s = w.stats;
      expect(s).toMatchObject({ launches: 1, h2dBytes: 2 * BYTES, d2hBytes: BYTES }); // In H2D only, Out D2H only

      const resident = w.allocTensor([R, C], "float32", { init: B });
      expect(w.stats.h2dBytes).toBe(2 * BYTES + BYTES); // the explicit init upload
      const before = w.stats;
      w.run(P.add, A, resident, out);                      // DeviceTensor: 0 bytes each way
      s = w.stats;
      expect(s.h2dBytes - before.h2dBytes).toBe(BYTES);
      expect(s.d2hBytes - before.d2hBytes).toBe(BYTES);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });

      const acc = A.clone();
      const b2 = w.stats;
      w.run(P.acc, acc, B);                                // InOut: both ways
      const s2 = w.stats;
      expect(s2.h2dBytes - b2.h2dBytes).toBe(2 * BYTES);
      expect(s2.d2hBytes - b2.d2hBytes).toBe(BYTES);
      assertClose(acc, A.mul(tensor(new Float32Array(R * C).fill(2), { shape: [R, C] })).add(B), { rtol: 1e-6, atol: 1e-6 });

      // an InOut DeviceTensor is updated in place on the device and never copied back
      const dacc = w.allocTensor([R, C], "float32", { init: A });
      const b3 = w.stats;
      for (let i = 0; i < 3; i++) w.run(P.acc, dacc, resident);
      expect(w.stats.h2dBytes).toBe(b3.h2dBytes);
      expect(w.stats.d2hBytes).toBe(b3.d2hBytes);
      const back = zeros([R, C]);
      w.copyFrom(back, dacc, dacc.nbytes);
      let expected = A;
      for (let i = 0; i < 3; i++) expected = expected.add(expected).add(B);
      assertClose(back, expected, { rtol: 1e-5, atol: 1e-5 });
      expect(w.stats.liveTensors).toBe(2);
      w.close();
      expect(w.stats.liveTensors).toBe(0);
      expect(w.stats.deviceBytesInUse).toBe(0);
      expect(w.stats.launches).toBe(6);
    });

    it("a pure Out starts zeroed on the device (its host contents are not uploaded)", () => {
      const w = newWorker(platform);
      const out = randn([R, C], { seed: 3 });     // garbage in the host buffer
      const h = w.stats.h2dBytes;
      w.run(P.add, A, B, out);
      expect(w.stats.h2dBytes - h).toBe(2 * BYTES);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    });

    it("register loads once; handles are callable; close releases everything", () => {
      const w = newWorker(platform);
      const h = w.register(P.add);
      expect(w.register(P.add)).toBe(h);
      expect(h.compiled).toBe(P.add);
      const out = zeros([R, C]);
      for (let i = 0; i < 5; i++) h(A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      if (platform === "cpu") expect(w.deviceStats!.moduleLoads).toBe(1);
      const leaked = w.allocTensor([4, 4], "float32");
      expect(leaked.live).toBe(true);
      w.close();
      w.close(); // idempotent
      expect(h.closed).toBe(true);
      expect(w.stats).toMatchObject({ liveTensors: 0, deviceBytesInUse: 0, launches: 5 });
      expect(() => h(A, B, out)).toThrow(/registration of 'addKernel' is closed[\s\S]*register the program again/);
      expect(() => w.run(P.add, A, B, out)).toThrow(/ChipWorker is closed/);
      w.freeTensor(leaked); // after close: a no-op
    });

    it("unregister closes one handle; register again works", () => {
      const w = newWorker(platform);
      const h = w.register(P.add);
      h.unregister();
      expect(h.closed).toBe(true);
      expect(() => h(A, B, zeros([R, C]))).toThrow(/register the program again/);
      const h2 = w.register(P.add);
      expect(h2).not.toBe(h);
      const out = zeros([R, C]);
      h2(A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    });

    it("runAsync and callAsync resolve with the same results off the JS thread", async () => {
      const w = newWorker(platform);
      const out = zeros([R, C]);
      const r = await w.runAsync(P.add, A, B, out);
      expect(r).toBe(out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      const out2 = zeros([R, C]);
      await w.register(P.add).callAsync(A, B, out2);
      assertClose(out2, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      await expect(w.runAsync(P.add, A, B)).rejects.toThrow(/takes 3 arguments \(a, b, out\), got 2/);
    });

    it("runAsync and callAsync copy their In/InOut host inputs when called: changing them afterwards does not change the result", async () => {
      const w = newWorker(platform);
      const a = full([R, C], 1), b = full([R, C], 1), out = zeros([R, C]);
      const p = w.runAsync(P.add, a, b, out);
      (a.data as Float32Array).fill(100);                 // after the call, before it completes
      await p;
      assertClose(out, full([R, C], 2), { rtol: 0, atol: 0 });
      const out2 = zeros([R, C]);
      const q = w.register(P.add).callAsync(a, b, out2);
      (b.data as Float32Array).fill(-7);
      await q;
      assertClose(out2, full([R, C], 101), { rtol: 0, atol: 0 });
      // InOut: the value read is the one at call time; the result is written back on completion
      const acc = full([R, C], 3), x = full([R, C], 1);
      const r = w.runAsync(P.acc, acc, x);
      (acc.data as Float32Array).fill(1000); (x.data as Float32Array).fill(1000);
      await r;
      assertClose(acc, full([R, C], 7), { rtol: 0, atol: 0 });
    });

    it("rejects bad arguments with clear messages and keeps working", () => {
      const w = newWorker(platform);
      const out = zeros([R, C]);
      expect(() => w.run(P.add, A, B)).toThrow(/'addKernel' takes 3 arguments \(a, b, out\), got 2/);
      expect(() => w.run(P.add, A, zeros([R, C + 1]), out)).toThrow(/argument 'b' \(#2\) of 'addKernel': expected a float32 tensor of shape \[32, 64\], got float32 of shape \[32, 65\]/);
      expect(() => w.run(P.add, A, zeros([R, C], "int32"), out)).toThrow(/expected a float32 tensor of shape \[32, 64\], got int32 of shape \[32, 64\]/);
      expect(() => w.run(P.add, A, "nope", out)).toThrow(/must be a tensor/);
      // errors name the user's file
      expect(() => w.run(P.add, A, B)).toThrow(/worker\.test\.ts:\d+:\d+/);
      // still works
      w.run(P.add, A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    });

    it("DeviceTensor: bound to its worker, freed tensors rejected, freeTensor twice is a no-op", () => {
      const w1 = newWorker(platform), w2 = newWorker(platform);
      const t = w1.allocTensor([R, C], "float32", { init: B });
      expect(t).toBeInstanceOf(DeviceTensor);
      expect(typeof t.dataPtr).toBe("bigint");
      expect(t.nbytes).toBe(BYTES);
      const out = zeros([R, C]);
      expect(() => w2.run(P.add, A, t, out)).toThrow(/DeviceTensor belongs to another ChipWorker/);
      w1.freeTensor(t);
      w1.freeTensor(t);
      expect(() => w1.run(P.add, A, t, out)).toThrow(/DeviceTensor is not a live allocation owned by this ChipWorker/);
      expect(() => w2.freeTensor(t)).toThrow(/belongs to another ChipWorker/);
      const t3 = w1.allocTensor([R, C], "float32", { init: B });
      w1.close();
      expect(() => w1.copyFrom(zeros([R, C]), t3, t3.nbytes)).toThrow(/ChipWorker is closed/);
      w2.run(P.add, A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    });

    it("allocTensor validates the shape first and init after, leaking nothing", () => {
      const w = newWorker(platform);
      expect(() => w.allocTensor([], "float32")).toThrow(/shape must be a non-empty list of positive integers, got \[\]/);
      expect(() => w.allocTensor([4, 0], "float32")).toThrow(/got \[4,0\]/);
      expect(() => w.allocTensor([4, 2.5], "float32")).toThrow(/positive integers/);
      expect(() => w.allocTensor([4, 4], "float64" as never)).toThrow(/unknown dtype "float64"/);
      expect(() => w.allocTensor([4, 8], "float32", { init: zeros([4, 4]) })).toThrow("init must have shape=[4, 8] dtype=float32, got shape=[4, 4] dtype=float32");
      expect(() => w.allocTensor([4, 8], "float32", { init: zeros([4, 8], "int32") })).toThrow("init must have shape=[4, 8] dtype=float32, got shape=[4, 8] dtype=int32");
      expect(w.stats).toMatchObject({ liveTensors: 0, deviceBytesInUse: 0 });
      const ok = w.allocTensor([4, 8], "int32", { init: tensor(Int32Array.from({ length: 32 }, (_, i) => i * 3 - 7), { shape: [4, 8], dtype: "int32" }) });
      const back = new Int32Array(32);
      w.copyFrom(back, ok, ok.nbytes);
      expect(Array.from(back)).toEqual(Array.from({ length: 32 }, (_, i) => i * 3 - 7));
    });

    it("rejects a program built for another platform before any launch", () => {
      const w = newWorker(platform);
      const other = platform === "cpu" ? programs.interp.add : programs.cpu.add;
      const q = platform === "cpu" ? "interp" : "cpu";
      expect(() => w.run(other, A, B, zeros([R, C]))).toThrow(
        `CompiledProgram.platform='${q}' does not match ChipWorker.platform='${platform}'. Compile for the matching platform, or construct ChipWorker(new RunConfig({ platform: '${q}' })).`);
      expect(() => w.register(other)).toThrow(/does not match ChipWorker\.platform/);
      expect(w.stats.launches).toBe(0);
    });

    it("benchmark reports device and host times", () => {
      const w = newWorker(platform);
      const s = benchmark(P.add, [A, B, zeros([R, C])], { rounds: 5, warmup: 2, config: new RunConfig({ platform }) });
      expect(s.rounds).toBe(5);
      expect(s.deviceWallUs.length).toBe(5);
      expect(s.hostWallUs.length).toBe(5);
      expect(s.deviceUsMedian).toBeGreaterThan(0);
      expect(s.hostUsMedian).toBeGreaterThanOrEqual(s.deviceUsMin);
      expect(s.toString()).toMatch(/device us: median/);
      void w;
    });
  });
}

describe("device memory", () => {
  it("out of memory names requested, in use and capacity, and the worker still works", () => {
    const w = newWorker("cpu");
    const t = w.allocTensor([1024], "float32");
    expect(() => w.allocTensor([2 ** 20, 2 ** 20, 64], "float32")).toThrow(/device out of memory: requested \d+ bytes, \d+ bytes in use of \d+ bytes capacity/);
    expect(w.stats.liveTensors).toBe(1);
    w.freeTensor(t);
    const out = zeros([R, C]);
    w.run(programs.cpu.add, A, B, out);
    assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
  });
});

describe("CompiledProgram", () => {
  it("exposes the call shape and rebuilds from its directory", () => {
    const c = programs.cpu.add;
    expect(c.paramNames).toEqual(["a", "b", "out"]);
    expect(c.outputIndices).toEqual([2]);
    expect(c.hasReturn).toBe(true);
    expect(c.platform).toBe("cpu");
    expect(c.program).not.toBeNull();
    expect(c.chipCallable).toBe(c.chipCallable);
    const d = CompiledProgram.fromDir(c.outputDir);
    expect(d.program).toBeNull();
    expect(d.paramNames).toEqual(["a", "b", "out"]);
    const out = zeros([R, C]);
    d.run(A, B, out);
    assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    expect(() => CompiledProgram.fromDir(c.outputDir, { platform: "interp" })).toThrow(/built for platform 'cpu', not 'interp'/);
  });

  it("fromDir names the file and the problem for a missing or malformed compiled_meta.json", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-meta-"));
    try {
      expect(() => CompiledProgram.fromDir(dir)).toThrow(/compiled_meta\.json: cannot read compiled_meta\.json \(ENOENT\)/);
      writeFileSync(join(dir, "compiled_meta.json"), "{ not json");
      expect(() => CompiledProgram.fromDir(dir)).toThrow(/compiled_meta\.json/);
      const good = join(dir, "good");
      cpSync(programs.cpu.add.outputDir, good, { recursive: true });
      const meta = JSON.parse(JSON.stringify(programs.cpu.add.meta));
      delete meta.params;
      writeFileSync(join(good, "compiled_meta.json"), JSON.stringify(meta));
      expect(() => CompiledProgram.fromDir(good)).toThrow(/compiled_meta\.json[\s\S]*params/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

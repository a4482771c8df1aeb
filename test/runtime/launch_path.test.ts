// One launch path: a jit call (first and repeated), worker.run, a registration handle and
// runAsync/callAsync all end in ChipWorker.launch with arguments a Binder packed; and what
// that path guarantees: live host views, DeviceTensors held by in-flight launches, stats
// after close, user directories never deleted, artifacts loaded only from private places.
import { describe, it, expect, afterAll, afterEach, vi } from "vitest";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, ir, ChipWorker, RunConfig, CompiledProgram, TsptoError, randn, zeros, assertClose, HostTensor } from "tspto";
import { Registration } from "../../src/runtime/worker.js";

const R = 32, C = 64;
const add = pl.jit(function launchPathAdd(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [R, C]), pl.load(b, [0, 0], [R, C])), [0, 0], out);
  });
  return out;
});

const A = randn([R, C], { seed: 21 }), B = randn([R, C], { seed: 22 });
const open: ChipWorker[] = [];
const dirs: string[] = [];
const worker = (platform: "cpu" | "interp") => { const w = new ChipWorker(new RunConfig({ platform })); open.push(w); return w; };
const tmp = (tag: string) => { const d = mkdtempSync(join(tmpdir(), `tspto-lp-${tag}-`)); dirs.push(d); return d; };
afterAll(() => { open.forEach((w) => w.close()); dirs.forEach((d) => rmSync(d, { recursive: true, force: true })); });
afterEach(() => vi.restoreAllMocks());

const caught = (f: () => unknown): TsptoError => {
  try { f(); } catch (e) { expect(e).toBeInstanceOf(TsptoError); return e as TsptoError; }
  throw new Error("expected a TsptoError");
};

for (const platform of ["cpu", "interp"] as const) {
  describe(`one launch path on ${platform}`, () => {
    const compiled = ir.compile(add.lower(A, B, zeros([R, C])), { platform });

    it("jit calls (slow and fast path), run, a handle, runAsync and callAsync all go through ChipWorker.launch", async () => {
      const spy = vi.spyOn(ChipWorker.prototype, "launch");
      const cfg = new RunConfig({ platform });
      const out1 = zeros([R, C]), out2 = zeros([R, C]);
      add.clearCache();
      add(A, B, out1, cfg);   // full path: bind, compile, run
      add(A, B, out2, cfg);   // fast path: hash, binder.tryPack, launch
      expect(spy).toHaveBeenCalledTimes(2);
      const w = worker(platform);
      const out3 = zeros([R, C]), out4 = zeros([R, C]), out5 = zeros([R, C]), out6 = zeros([R, C]);
      w.run(compiled, A, B, out3);
      const h = w.register(compiled);
      h(A, B, out4);
      await w.runAsync(compiled, A, B, out5);
      await h.callAsync(A, B, out6);
      expect(spy).toHaveBeenCalledTimes(6);
      for (const call of spy.mock.calls) expect(call[0]).toBeInstanceOf(Registration);
      // the worker's four forms share one registration (loaded once)
      const regs = new Set(spy.mock.calls.slice(2).map((c) => c[0]));
      expect(regs.size).toBe(1);
      expect(spy.mock.calls.slice(4).map((c) => c[2])).toEqual([true, true]);
      for (const o of [out1, out2, out3, out4, out5, out6]) assertClose(o, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    });

    it("a detached or shrunk host buffer is a TsptoError naming the argument, and device memory stays intact", () => {
      const w = worker(platform);
      const resident = w.allocTensor([R, C], "float32", { init: B });
      const buf = new ArrayBuffer(R * C * 4);
      const out = new HostTensor(new Float32Array(buf), [R, C], "float32");
      structuredClone(buf, { transfer: [buf] }); // detaches out's buffer
      const e = caught(() => w.run(compiled, A, resident, out));
      expect(e.code).toBe("E_HOST_VIEW");
      expect(e.message).toContain("argument 'out' (#3) of 'launchPathAdd' is a host view of 0 bytes, but the program uses 8192 bytes (its ArrayBuffer is detached (transferred))");
      const back = zeros([R, C]);
      w.copyFrom(back, resident, R * C * 4);
      assertClose(back, B, { rtol: 0, atol: 0 });
      // a shrunk resizable buffer (an In argument)
      // (resizable ArrayBuffers are ES2024: typed loosely for the ES2022 lib)
      const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer & { resize(n: number): void };
      const rb = new Resizable(R * C * 4, { maxByteLength: R * C * 4 });
      const a2 = new HostTensor(new Float32Array(rb), [R, C], "float32");
      rb.resize(16);
      expect(caught(() => w.run(compiled, a2, B, zeros([R, C]))).message).toContain("argument 'a' (#1) of 'launchPathAdd' is a host view of 16 bytes, but the program uses 8192 bytes (a shrunk resizable ArrayBuffer, or a view that is too short)");
      w.freeTensor(resident);
    });

    it("the jit fast path also refuses a detached In buffer", () => {
      const cfg = new RunConfig({ platform });
      const out = zeros([R, C]);
      add(A, B, out, cfg);
      const buf = new ArrayBuffer(R * C * 4);
      const a = new HostTensor(new Float32Array(buf), [R, C], "float32");
      structuredClone(buf, { transfer: [buf] });
      expect(caught(() => add(a, B, out, cfg)).code).toBe("E_HOST_VIEW");
    });

    it("freeing a DeviceTensor with async launches in flight waits for them: no launch reads reallocated memory", async () => {
      const w = worker(platform);
      const dB = w.allocTensor([R, C], "float32", { init: B });
      const outs = Array.from({ length: 1000 }, () => zeros([R, C]));
      const pending = outs.map((o) => w.runAsync(compiled, A, dB, o));
      const addr = dB.dataPtr;
      w.freeTensor(dB);
      // new tensors must not take dB's memory while launches use it
      const others = Array.from({ length: 8 }, () => w.allocTensor([R, C], "float32", { init: A }));
      expect(others.map((t) => t.dataPtr)).not.toContain(addr);
      await Promise.all(pending);
      for (const o of outs) assertClose(o, A.add(B), { rtol: 1e-6, atol: 1e-6 });
      expect(caught(() => w.run(compiled, A, dB, zeros([R, C]))).code).toBe("E_FREED");
      for (const t of others) w.freeTensor(t);
      expect(w.stats.liveTensors).toBe(0);
      expect(w.deviceStats!.liveAllocations).toBe(0); // dB's memory was released after the launches
    });

    it("stats after close() say what close released", () => {
      const w = worker(platform);
      w.register(compiled);
      w.allocTensor([R, C], "float32");
      w.allocTensor([4, 4], "int32");
      w.run(compiled, A, B, zeros([R, C]));
      const inUse = w.stats.deviceBytesInUse;
      expect(inUse).toBeGreaterThan(0);
      w.close();
      expect(w.stats).toMatchObject({ launches: 1, deviceBytesInUse: 0, liveTensors: 0, released: { deviceBytes: inUse, tensors: 2, registrations: 1 } });
    });
  });
}

describe("targets and artifacts", () => {
  it("an unknown platform names the known ones", () => {
    const p = add.lower(A, B, zeros([R, C]));
    const e = caught(() => ir.compile(p, { platform: "tpu" }));
    expect(e.code).toBe("E_PLATFORM");
    expect(e.message).toContain('unknown platform "tpu" (known: "cpu", "interp", "cuda", "webgpu")');
    expect(() => new RunConfig({ platform: "tpu" })).toThrow('RunConfig.platform must be one of "cpu", "interp", "cuda", "webgpu", got "tpu"');
  });

  it("never deletes what a user put in outputDir", () => {
    const dir = tmp("user");
    writeFileSync(join(dir, "notes.txt"), "mine");
    const p = add.lower(A, B, zeros([R, C]));
    const e = caught(() => ir.compile(p, { platform: "interp", outputDir: dir }));
    expect(e.code).toBe("E_ARTIFACT");
    expect(e.message).toContain(`outputDir ${dir} holds files tspto did not write (notes.txt); tspto never deletes them`);
    expect(readFileSync(join(dir, "notes.txt"), "utf8")).toBe("mine");
    // an empty directory, or one holding an artifact, is fine (and replaced)
    const empty = tmp("empty");
    const c1 = ir.compile(p, { platform: "interp", outputDir: empty });
    expect(existsSync(join(c1.outputDir, "compiled_meta.json"))).toBe(true);
    expect(ir.compile(p, { platform: "cpu", outputDir: empty }).platform).toBe("cpu");
    const file = join(tmp("file"), "f");
    writeFileSync(file, "x");
    expect(caught(() => ir.compile(p, { platform: "interp", outputDir: file })).message).toContain(`outputDir ${file} exists and is not a directory`);
  });

  it("default artifacts go under the user's private cache directory", () => {
    const root = tmp("cache");
    const prev = process.env.TSPTO_CACHE_DIR;
    process.env.TSPTO_CACHE_DIR = root;
    try {
      const c = ir.compile(add.lower(A, B, zeros([R, C])), { platform: "cpu" });
      expect(c.outputDir.startsWith(join(root, "artifacts") + "/")).toBe(true);
      const w = worker("cpu");
      const out = zeros([R, C]);
      w.run(c, A, B, out);
      assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    } finally {
      if (prev === undefined) delete process.env.TSPTO_CACHE_DIR; else process.env.TSPTO_CACHE_DIR = prev;
    }
  });

  it("a library in a directory other users can write is never loaded", () => {
    const dir = join(tmp("shared"), "art");
    const c = ir.compile(add.lower(A, B, zeros([R, C])), { platform: "cpu", outputDir: dir });
    chmodSync(join(dir, "build"), 0o777);
    const fresh = CompiledProgram.fromDir(dir);
    const e = caught(() => worker("cpu").run(fresh, A, B, zeros([R, C])));
    expect(e.code).toBe("E_UNSAFE_PATH");
    expect(e.message).toContain(`refused: ${join(dir, "build", "libprogram.so")} not loaded: ${join(dir, "build")} can be written by other users (mode 777); tspto never loads, includes or compiles what another user can write`);
    chmodSync(join(dir, "build"), 0o755);
    const out = zeros([R, C]);
    worker("cpu").run(CompiledProgram.fromDir(dir), A, B, out);
    assertClose(out, A.add(B), { rtol: 1e-6, atol: 1e-6 });
    void c;
  });

  it("a modified library is refused before it is loaded", () => {
    const dir = join(tmp("mod"), "art");
    const c = ir.compile(add.lower(A, B, zeros([R, C])), { platform: "cpu", outputDir: dir });
    const lib = join(dir, c.meta.library!);
    const bytes = readFileSync(lib);
    bytes[bytes.length >> 1] ^= 0xff;
    writeFileSync(lib, bytes);
    const e = caught(() => worker("cpu").run(CompiledProgram.fromDir(dir), A, B, zeros([R, C])));
    expect(e.message).toMatch(/library hash [0-9a-f]{12}… does not match compiled_meta\.json/);
    mkdirSync(join(dir, "x"), { recursive: true });
  });
});

describe("runtime errors are TsptoErrors with codes", () => {
  it("a ChipWorker needs a RunConfig; benchmark checks rounds and warmup; allocTensor shows bigints", async () => {
    const { benchmark } = await import("tspto");
    const e1 = caught(() => new ChipWorker({ platform: "cpu" } as unknown as RunConfig));
    expect(e1.code).toBe("E_ARG");
    expect(e1.message).toContain("ChipWorker: config must be a RunConfig, got Object");
    const c = ir.compile(add.lower(A, B, zeros([R, C])), { platform: "interp" });
    expect(caught(() => benchmark(c, [A, B, zeros([R, C])], { rounds: 0 })).message).toContain("benchmark: rounds must be an integer >= 1, got 0");
    expect(caught(() => benchmark(c, [A, B, zeros([R, C])], { warmup: -1 })).message).toContain("benchmark: warmup must be an integer >= 0, got -1");
    const w = worker("interp");
    const e2 = caught(() => w.allocTensor([2, 4n] as unknown as number[]));
    expect(e2.code).toBe("E_SHAPE");
    expect(e2.message).toContain('allocTensor: shape must be a non-empty list of positive integers, got [2,"4n"]');
  });

  it("a dynamic scalar rejects values its dtype cannot hold before the device sees them", () => {
    const scale = pl.jit(function launchPathScale(a: pl.Tensor, out: pl.Out<pl.Tensor>, k: pl.Scalar<pl.INT32>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        pl.store(pl.mul(pl.load(a, [0, 0], [R, C]), k), [0, 0], out);
      });
      return out;
    });
    const ai = new HostTensor(Int32Array.from({ length: R * C }, (_, i) => (i * 7919) % 1000 - 500), [R, C], "int32");
    const out = new HostTensor(new Int32Array(R * C), [R, C], "int32");
    const cpl = ir.compile(scale.lower(ai, out, 3), { platform: "cpu" });
    const w = worker("cpu");
    w.run(cpl, ai, out, -3);
    expect([...out.data]).toEqual([...(ai.data as Int32Array)].map((x) => (x * -3) | 0));
    for (const bad of [1.5, Number.NaN, true, 2 ** 31]) {
      const e = caught(() => w.run(cpl, ai, out, bad));
      expect(e.code).toBe("E_SCALAR");
      expect(e.message).toContain("argument 'k' (#3) of 'launchPathScale' must be an integer in [-2147483648, 2147483647] (int32 scalar), got ");
    }
  });
});

describe("closing under async launches", () => {
  it("close() and unregister() with launches queued: every launch completes or fails with E_CLOSED, never an unknown module", async () => {
    const compiled = ir.compile(add.lower(A, B, zeros([R, C])), { platform: "cpu" });
    for (let round = 0; round < 5; round++) {
      const w = new ChipWorker(new RunConfig({ platform: "cpu" }));
      const h = w.register(compiled);
      const outs = Array.from({ length: 300 }, () => zeros([R, C]));
      const pending = outs.map((o, i) => (i % 2 ? h.callAsync(A, B, o) : w.runAsync(compiled, A, B, o)));
      if (round % 2) h.unregister(); else w.close();
      const results = await Promise.allSettled(pending);
      for (const [i, r] of results.entries()) {
        if (r.status === "fulfilled") assertClose(outs[i], A.add(B), { rtol: 1e-6, atol: 1e-6 });
        else {
          expect(r.reason).toBeInstanceOf(TsptoError);
          expect((r.reason as TsptoError).code).toBe("E_CLOSED");
        }
      }
      w.close();
    }
  });
});

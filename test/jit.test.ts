// JitFunction: specialization, the in-memory cache, implicit dispatch, and its errors.
import { describe, it, expect } from "vitest";
import { pl, ChipWorker, RunConfig, CompiledProgram, randn, zeros, assertClose, tensor } from "tspto";
import { defaultWorker } from "../src/runtime/worker.js";

const scale = pl.jit(function scale(a: pl.Tensor, out: pl.Out<pl.Tensor>, k: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.mul(a, k));
  });
  return out;
});

const pair = pl.jit(function pair(a: pl.Tensor, b: pl.Tensor, s: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(s, pl.add(a, b));
    pl.assign(d, pl.sub(a, b));
  });
  return [s, d];
});

describe("JitFunction", () => {
  it("compile() returns the identical object for the same key; cacheSize grows only for new keys", () => {
    scale.clearCache();
    expect(scale.cacheSize).toBe(0);
    const a = randn([16, 32], { seed: 1 });
    const c1 = scale.compile(a, zeros([16, 32]), 2);
    expect(c1).toBeInstanceOf(CompiledProgram);
    expect(scale.compile(randn([16, 32], { seed: 9 }), zeros([16, 32]), 2)).toBe(c1); // same shapes, dtypes, scalar
    expect(scale.cacheSize).toBe(1);
    const c2 = scale.compile(randn([8, 32], { seed: 2 }), zeros([8, 32]), 2);       // new shape
    expect(c2).not.toBe(c1);
    expect(scale.cacheSize).toBe(2);
    expect(scale.compile(a, zeros([16, 32]), 3)).not.toBe(c1);                       // new scalar value
    expect(scale.cacheSize).toBe(3);
    expect(scale.compile(zeros([16, 32], "int32"), zeros([16, 32], "int32"), 2)).not.toBe(c1); // new dtype
    expect(scale.cacheSize).toBe(4);
    const interp = scale.compile(a, zeros([16, 32]), 2, new RunConfig({ platform: "interp" }));
    expect(interp.platform).toBe("interp");                                          // platform is in the key
    expect(scale.cacheSize).toBe(5);
    // calls hit the cache
    const out = zeros([16, 32]);
    scale(a, out, 2);
    scale(a, out, 2);
    expect(scale.cacheSize).toBe(5);
    assertClose(out, a.add(a), { rtol: 0, atol: 0 });
    scale.clearCache();
    expect(scale.cacheSize).toBe(0);
  });

  it("lower() specializes and runs the passes without touching the cache", () => {
    scale.clearCache();
    const p = scale.lower(randn([4, 8], { seed: 3 }), zeros([4, 8]), 5);
    expect(scale.cacheSize).toBe(0);
    expect(p.entryFunction.attrs.lowered).toBe(true);
    expect(p.asText()).toContain("pl.Tensor<[4, 8], pl.FP32>");
    expect(p.asText()).toContain("pl.mul(");
    expect(p.asText()).toContain("5");
  });

  it("returns what the kernel returns (one tensor, or a list)", () => {
    const a = randn([8, 8], { seed: 4 }), b = randn([8, 8], { seed: 5 });
    const out = zeros([8, 8]);
    expect(scale(a, out, 1)).toBe(out);
    const s = zeros([8, 8]), d = zeros([8, 8]);
    const r = pair(a, b, s, d) as unknown[];
    expect(r).toEqual([s, d]);
    expect(r[0]).toBe(s);
    assertClose(s, a.add(b), { rtol: 0, atol: 0 });
    assertClose(d, a.sub(b), { rtol: 0, atol: 0 });
  });

  it("accepts tensor-likes ({ data, dims, type } and { data, shape }) without copying", () => {
    const a = randn([4, 16], { seed: 6 });
    const ortLike = { data: new Float32Array(a.data as Float32Array), dims: [4, 16], type: "float32" };
    const outLike = { data: new Float32Array(64), shape: [4, 16] };
    scale(ortLike, outLike, 3);
    const want = (a.data as Float32Array).map((x) => Math.fround(x * 3));
    expect(Array.from(outLike.data)).toEqual(Array.from(want));
  });

  it("implicit dispatch reuses one default worker per (platform, deviceId)", () => {
    const a = randn([8, 8], { seed: 7 });
    scale(a, zeros([8, 8]), 2);
    const w = defaultWorker(new RunConfig());
    const launches = w.stats.launches;
    scale(a, zeros([8, 8]), 2);
    scale(a, zeros([8, 8]), 2, new RunConfig({ platform: "cpu" }));
    expect(defaultWorker(new RunConfig())).toBe(w);
    expect(w.stats.launches).toBe(launches + 2);
    expect(defaultWorker(new RunConfig({ platform: "interp" }))).not.toBe(w);
  });

  it("wrong arity names the parameters and the call site", () => {
    const a = randn([8, 8], { seed: 8 });
    // @ts-expect-error wrong arity is a type error too (the run-time error is checked)
    expect(() => scale(a, zeros([8, 8]))).toThrow(/'scale' takes 3 arguments \(a, out, k\), got 2/);
    // @ts-expect-error wrong arity
    expect(() => scale(a, zeros([8, 8]))).toThrow(/jit\.test\.ts:\d+:\d+/);
    // @ts-expect-error a string for a tensor
    expect(() => scale(a, "x", 2)).toThrow(/argument 'out' \(#2\) of 'scale' must be a tensor or a number/);
  });

  it("a DeviceTensor at a jit entry asks for a compiled program", () => {
    using w = new ChipWorker(new RunConfig());
    const dt = w.allocTensor([8, 8], "float32", { init: randn([8, 8], { seed: 9 }) });
    // @ts-expect-error a DeviceTensor carries no metadata for the specializer (the run-time error is checked)
    expect(() => scale(dt, zeros([8, 8]), 2)).toThrow("missing inferred tensor metadata for parameter 'a'");
    // @ts-expect-error a DeviceTensor at a jit entry
    expect(() => scale(dt, zeros([8, 8]), 2)).toThrow(/jit\.test\.ts:\d+:\d+[\s\S]*compile the program from samples/);
    // the advised route works
    const compiled = scale.compile(zeros([8, 8]), zeros([8, 8]), 2);
    const out = zeros([8, 8]);
    w.run(compiled, dt, out, 2);
    const back = zeros([8, 8]);
    w.copyFrom(back, dt, dt.nbytes);
    assertClose(out, back.add(back), { rtol: 0, atol: 0 });
    // the program was specialized on k = 2: another value is refused, not silently ignored
    expect(() => w.run(compiled, dt, out, 3)).toThrow(/argument 'k' \(#3\) of 'scale' is 3, but the program was compiled for k=2[\s\S]*pl\.Scalar/);
    expect(compiled.meta.params[2]).toEqual({ name: "k", kind: "scalar", direction: "in", dtype: "int64", value: 2 });
  });

  it("the same kernel on interp agrees with cpu", () => {
    const a = randn([33, 17], { seed: 10 });
    const o1 = zeros([33, 17]), o2 = zeros([33, 17]);
    scale(a, o1, 0.25);
    scale(a, o2, 0.25, new RunConfig({ platform: "interp" }));
    assertClose(o1, o2, { rtol: 0, atol: 0 });
    assertClose(o1, a.mul(tensor(new Float32Array(33 * 17).fill(0.25), { shape: [33, 17] })), { rtol: 1e-7, atol: 0 });
  });
});

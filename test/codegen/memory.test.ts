// load / store: windows at offsets, validShape (the valid region only), rank 1 and 3, dynamic windows
// checked at run time (rt->fail with the span and the window), static windows at compile time.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { INDEX, TsptoCompileError, mkCall, mkFor, mkList, mkVar, tileT, type Span } from "../../src/ir/index.js";
import { generateCpp } from "../../src/codegen/index.js";
import { compileArtifact } from "./helpers.js";
import { B, c, call, expectExact, load, mulberry32, run, scalarVar, singleKernelProgram, store, tensorVar, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const build = (p: Parameters<typeof compileArtifact>[0]) =>
  compileArtifact(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("mem"), "a") }).outputDir;
const rand = (seed: number, n: number) => { const r = mulberry32(seed); return Float32Array.from({ length: n }, () => Math.round((r() * 4 - 2) * 64) / 64 || 0.5); };
const SPAN: Span = { file: "/home/user/kernels/scale.ts", line: 12, col: 7 };

describe("load / store windows", () => {
  it("load with validShape copies the valid region; fillpad gives the pad its zeros; store writes the valid region only", () => {
    const a = tensorVar("a", [40, 64]), o1 = tensorVar("o1", [16, 32]), o2 = tensorVar("o2", [20, 40]);
    const p = singleKernelProgram("valid", [[a, "in"], [o1, "out"], [o2, "inout"]], (b, [ka, k1, k2]) => {
      const t = b.let("t", load(ka, [c(8), c(16)], [16, 32], [10, 20]));
      // full (no validShape) + fillpad(t): the whole tile, the pad zero (a load leaves the pad
      // unwritten: the harness's 0xff scratch would show through t itself)
      const z = b.let("z", call("tile.full", [], { shape: [16, 32], dtype: "float32", value: 0 }));
      const whole = b.let("whole", call("tile.add", [z, b.let("tp", call("tile.fillpad", [t], { padValue: "zero" }))]));
      b.eval(store(whole, [c(0), c(0)], k1));
      // t + 1 keeps t's validShape: only [10, 20] lands in o2
      const t1 = b.let("t1", call("tile.add", [t, c(1)]));
      b.eval(store(t1, [c(2), c(3)], k2));
    });
    const dir = build(p);
    const A = rand(21, 40 * 64);
    const O2 = new Float32Array(20 * 40).fill(-7);
    const r = run(dir, [{ tensor: A }, { tensor: new Float32Array(16 * 32).fill(5) }, { tensor: O2 }]);
    expect(r.rc).toBe(0);
    const e1 = new Float32Array(16 * 32);
    for (let i = 0; i < 10; i++) for (let j = 0; j < 20; j++) e1[i * 32 + j] = A[(8 + i) * 64 + 16 + j];
    expectExact(r.tensors[1] as Float32Array, e1, "padded tile");
    const e2 = new Float32Array(20 * 40).fill(-7);
    for (let i = 0; i < 10; i++) for (let j = 0; j < 20; j++) e2[(2 + i) * 40 + 3 + j] = Math.fround(A[(8 + i) * 64 + 16 + j] + 1);
    expectExact(r.tensors[2] as Float32Array, e2, "store of the valid region");
  });

  it("rank 1 and rank 3 windows, integer and 16-bit tensors", () => {
    const v = tensorVar("v", [100], "int16"), ov = tensorVar("ov", [80], "int16");
    const x = tensorVar("x", [4, 6, 8], "bfloat16"), ox = tensorVar("ox", [3, 5, 8], "bfloat16");
    const p = singleKernelProgram("ranks", [[v, "in"], [ov, "out"], [x, "in"], [ox, "out"]], (b, [kv, kov, kx, kox]) => {
      const t = b.let("t", load(kv, [c(37)], [32], [30]));
      const t2 = b.let("t2", call("tile.mul", [t, c(2)]));
      // a store's value is its tensor: storing through that alias writes the same buffer
      const alias = b.let("ov_after", store(t2, [c(10)], kov));
      b.eval(store(t2, [c(45)], alias));
      const u = b.let("u", load(kx, [c(1), c(2), c(0)], [2, 3, 8]));
      b.eval(store(u, [c(1), c(1), c(0)], kox));
    });
    const dir = build(p);
    const V = Int16Array.from({ length: 100 }, (_, i) => (i * 997) % 30000 - 15000);
    const X = Uint16Array.from({ length: 4 * 6 * 8 }, (_, i) => 0x3f80 + i);
    const r = run(dir, [{ tensor: V }, { tensor: new Int16Array(80).fill(9) }, { tensor: X }, { tensor: new Uint16Array(3 * 5 * 8) }]);
    const ev = new Int16Array(80).fill(9);
    for (let i = 0; i < 30; i++) ev[10 + i] = ev[45 + i] = Math.max(-32768, Math.min(32767, V[37 + i] * 2));
    expectExact(r.tensors[1] as Int16Array, ev, "rank 1 int16");
    const ex = new Uint16Array(3 * 5 * 8);
    for (let i = 0; i < 2; i++) for (let j = 0; j < 3; j++) for (let k = 0; k < 8; k++) ex[((1 + i) * 5 + 1 + j) * 8 + k] = X[((1 + i) * 6 + 2 + j) * 8 + k];
    expectExact(r.tensors[3] as Uint16Array, ex, "rank 3 bf16");
  });

  it("a window from a scalar parameter is checked at run time: rt->fail with the span and the window, then the kernel stops", () => {
    const a = tensorVar("a", [128, 64]), row = scalarVar("row"), out = tensorVar("out", [128, 64]);
    const p = singleKernelProgram("dyn_window", [[a, "in"], [row, "in"], [out, "inout"]], (b, [ka, kr, ko]) => {
      const t = b.let("t", load(ka, [kr, c(0)], [32, 64], undefined, SPAN));
      b.eval(store(b.let("t2", call("tile.mul", [t, c(2)])), [call("scalar.sub", [kr, c(8)]), c(0)], ko, { ...SPAN, line: 13 }));
    });
    const dir = build(p);
    const A = rand(22, 128 * 64);
    const ok = run(dir, [{ tensor: A }, { int: 96 }, { tensor: new Float32Array(128 * 64) }]);
    expect(ok.rc).toBe(0);
    expect(ok.fails).toEqual([]);
    const e = new Float32Array(128 * 64);
    for (let i = 88 * 64; i < 120 * 64; i++) e[i] = Math.fround(A[i + 8 * 64] * 2);
    expectExact(ok.tensors[2] as Float32Array, e, "in bounds");

    const bad = run(dir, [{ tensor: A }, { int: 100 }, { tensor: new Float32Array(128 * 64).fill(3) }]);
    expect(bad.rc).not.toBe(0);
    expect(bad.fails).toEqual(["/home/user/kernels/scale.ts:12:7: load window [100, 0] + [32, 64] is outside tensor 'a' of shape [128, 64] (axis 0)"]);
    expect(Array.from(bad.tensors[2] as Float32Array).every((x) => x === 3)).toBe(true);

    const neg = run(dir, [{ tensor: A }, { int: 4 }, { tensor: new Float32Array(128 * 64) }]);
    expect(neg.fails).toEqual(["/home/user/kernels/scale.ts:13:7: store window [-4, 0] + [32, 64] is outside tensor 'out' of shape [128, 64] (axis 0)"]);
  });

  it("a loop-variable window that leaves the tensor fails at run time after the in-bounds iterations", () => {
    const a = tensorVar("a", [128, 64]), out = tensorVar("out", [160, 64]);
    const p = singleKernelProgram("loop_window", [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
      const i = mkVar("i", INDEX);
      const body = new B(b.plan);
      const off = body.let("off", call("scalar.mul", [i, c(32)]));
      const t = body.let("t", load(ka, [off, c(0)], [32, 64], undefined, { file: "k.ts", line: 3, col: 14 }));
      body.eval(store(body.let("t2", call("tile.add", [t, t])), [off, c(0)], ko));
      b.push(mkFor({ loopVar: i, start: c(0), stop: c(5), step: c(1), iterArgs: [], inits: [], body: body.stmts, results: [] }));
    });
    const dir = build(p);
    const A = rand(23, 128 * 64);
    const r = run(dir, [{ tensor: A }, { tensor: new Float32Array(160 * 64) }]);
    expect(r.rc).not.toBe(0);
    expect(r.fails).toEqual(["k.ts:3:14: load window [128, 0] + [32, 64] is outside tensor 'a' of shape [128, 64] (axis 0)"]);
    const e = new Float32Array(160 * 64);
    for (let k = 0; k < 128 * 64; k++) e[k] = Math.fround(A[k] + A[k]);
    expectExact(r.tensors[1] as Float32Array, e, "the four in-bounds chunks");
  });

  it("a static window outside the tensor is a compile error", () => {
    const a = tensorVar("a", [64, 64]), out = tensorVar("out", [64, 64]);
    const p = singleKernelProgram("static_oob", [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
      const offs = mkList([c(48), c(0)]);
      // bypass the registry's own static check to reach codegen's
      const t = b.let("t", mkCall("tile.load", [ka, offs], { shape: [32, 64] }, tileT([32, 64], "float32"), SPAN));
      b.eval(store(t, [c(0), c(0)], ko));
    }, { verify: false });
    let err: unknown;
    try { generateCpp(p); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect((err as TsptoCompileError).code).toBe("E_WINDOW");
    expect((err as Error).message).toContain("load window [48, 0] + [32, 64] is outside tensor 'a' of shape [64, 64] (axis 0)");
    expect((err as Error).message).toContain("/home/user/kernels/scale.ts:12:7");
  });
});

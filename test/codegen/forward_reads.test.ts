// Loads read in place (forwardableReads, src/passes/forward_loads.ts; cpu code generation): a
// load whose readers all read it element by element, before anything writes a tensor, is not
// copied into scratch; its window is still checked where the load was (same message at run
// time). A store between the load and a later reader keeps the copy (the tile's values are the
// ones loaded, even when the store overwrites the window).
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { INDEX, mkFor, mkList, mkVar, type Span } from "../../src/ir/index.js";
import { B, c, call, cleanup, compileArtifact, expectClose, expectExact, load, mulberry32, run, singleKernelProgram, store, tensorVar, tmpDir } from "./helpers.js";

afterAll(cleanup);

const build = (p: Parameters<typeof compileArtifact>[0]) =>
  compileArtifact(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("fwr"), "a") }).outputDir;
const rand = (seed: number, n: number) => { const r = mulberry32(seed); return Float32Array.from({ length: n }, () => Math.round((r() * 4 - 2) * 64) / 64 || 0.5); };
const source = (dir: string) => readFileSync(join(dir, "kernels", "program.cpp"), "utf8");
const SPAN: Span = { file: "k.ts", line: 3, col: 14 };

/** Row sums the way rowSum adds them (8 fp64 lanes), rounded to fp32. */
function rowSum8(x: Float32Array, off: number, n: number): number {
  const l = new Array<number>(8).fill(0);
  for (let j = 0; j < n; j++) l[j % 8] += x[off + j];
  return Math.fround(((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])));
}

describe("loads read in place", () => {
  it("a row read by its sum and by the store of its own window is not copied; the values are exact", () => {
    const a = tensorVar("a", [4, 100]), out = tensorVar("out", [4, 100]);
    const p = singleKernelProgram("rows", [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
      const t = b.let("t", load(ka, [c(2), c(0)], [1, 100]));
      const tmp = b.let("tmp", call("tile.create", [], { shape: [1, 100], dtype: "float32" }));
      const s = b.let("s", call("tile.rowSum", [t, tmp]));
      b.eval(store(call("tile.div", [t, call("tile.read", [s, mkList([c(0), c(0)])])]), [c(2), c(0)], ko));
    });
    const dir = build(p);
    const src = source(dir);
    expect(src).toContain("// t: load read in place by its readers; window check");
    expect(src).toMatch(/\/\/ t \(forwarded load\)/);
    expect(src).not.toContain("// t = tile.load");
    const A = rand(1, 400);
    const r = run(dir, [{ tensor: A }, { tensor: new Float32Array(400) }]);
    expect(r.rc).toBe(0);
    const s = rowSum8(A, 200, 100);
    const want = new Float32Array(400);
    for (let j = 0; j < 100; j++) want[200 + j] = Math.fround(A[200 + j] / s);
    expectExact(r.tensors[1] as Float32Array, want, "t / rowSum(t)");
  });

  it("a store into the loaded window before the last reader keeps the copy: the reader sees the loaded values", () => {
    const a = tensorVar("a", [2, 64]), out = tensorVar("out", [2, 64]);
    const p = singleKernelProgram("overwrite", [[a, "inout"], [out, "out"]], (b, [ka, ko]) => {
      const t = b.let("t", load(ka, [c(0), c(0)], [1, 64]));
      const tmp = b.let("tmp", call("tile.create", [], { shape: [1, 64], dtype: "float32" }));
      const s = b.let("s", call("tile.rowSum", [t, tmp]));
      b.eval(store(call("tile.mul", [t, c(2)]), [c(0), c(0)], ka));
      b.eval(store(call("tile.div", [t, call("tile.read", [s, mkList([c(0), c(0)])])]), [c(0), c(0)], ko));
    });
    const dir = build(p);
    expect(source(dir)).toContain("// t = tile.load");
    const A = rand(2, 128);
    const r = run(dir, [{ tensor: A.slice() }, { tensor: new Float32Array(128) }]);
    expect(r.rc).toBe(0);
    const s = rowSum8(A, 0, 64);
    const wantOut = new Float32Array(128), wantA = A.slice();
    for (let j = 0; j < 64; j++) { wantOut[j] = Math.fround(A[j] / s); wantA[j] = Math.fround(A[j] * 2); }
    expectExact(r.tensors[1] as Float32Array, wantOut, "out = loaded t / sum, not 2t / sum");
    expectExact(r.tensors[0] as Float32Array, wantA, "a's first row doubled");
  });

  it("the window of a load read in place is checked at run time with the load's message", () => {
    const a = tensorVar("a", [128, 64]), out = tensorVar("out", [128, 64]); // same shapes: the store reads t in place too
    const p = singleKernelProgram("loop_rows", [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
      const i = mkVar("i", INDEX);
      const body = new B(b.plan);
      const off = body.let("off", call("scalar.mul", [i, c(32)]));
      const t = body.let("t", load(ka, [off, c(0)], [1, 64], undefined, SPAN));
      const tmp = body.let("tmp", call("tile.create", [], { shape: [1, 64], dtype: "float32" }));
      const m = body.let("m", call("tile.rowMax", [t, tmp]));
      body.eval(store(call("tile.sub", [t, call("tile.read", [m, mkList([c(0), c(0)])])]), [off, c(0)], ko));
      b.push(mkFor({ loopVar: i, start: c(0), stop: c(5), step: c(1), iterArgs: [], inits: [], body: body.stmts, results: [] }));
    });
    const dir = build(p);
    expect(source(dir)).toContain("// t: load read in place by its readers; window check");
    const A = rand(3, 128 * 64);
    const r = run(dir, [{ tensor: A }, { tensor: new Float32Array(128 * 64) }]);
    expect(r.rc).not.toBe(0);
    expect(r.fails).toEqual(["k.ts:3:14: load window [128, 0] + [1, 64] is outside tensor 'a' of shape [128, 64] (axis 0)"]);
    const e = new Float32Array(128 * 64);
    for (let k = 0; k < 4; k++) {
      let m = -Infinity;
      for (let j = 0; j < 64; j++) m = Math.max(m, A[k * 32 * 64 + j]);
      for (let j = 0; j < 64; j++) e[k * 32 * 64 + j] = Math.fround(A[k * 32 * 64 + j] - m);
    }
    expectClose(r.tensors[1] as Float32Array, e, 0, 0, "the four in-bounds rows");
  });
});


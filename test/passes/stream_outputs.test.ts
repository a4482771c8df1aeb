// StreamOutputs (src/passes/stream_outputs.ts): kernel parameters that are write-only outputs
// of the whole launch get `streamOut`; the cpu code generator stores large ones with
// non-temporal stores (src/codegen/cpp/emitters/memory.ts, STREAM_MIN_BYTES). Checked: the
// analysis on programs where the output is and is not read in the launch, the generated code
// on both sides of the size threshold (static and dynamic), and results against formulas.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pl, RunConfig, randn, zeros } from "tspto";
import type { Program } from "../../src/ir/index.js";
import { STREAM_MIN_BYTES } from "../../src/codegen/cpp/emitters/memory.js";

/** Per kernel, the names of its streamed parameters (null: none). */
const streamOf = (p: Program): Record<string, string[] | null> =>
  Object.fromEntries(p.functions.filter((f) => f.fnKind === "incore").map((f) => {
    const idx = f.attrs.streamOut as number[] | undefined;
    return [f.name, idx ? idx.map((i) => f.params[i].var.name) : null];
  }));

const add = pl.jit(function add(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});
// mid is an Out parameter that the second scope reads: not write-only
const twoSteps = pl.jit(function twoSteps(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(mid, pl.exp(a)); });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(mid, 2)); });
  return out;
});
const inPlace = pl.jit(function inPlace(x: pl.InOut<pl.Tensor>, y: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(x, pl.add(x, y)); });
  return x;
});
// one kernel, two call sites: once into the output, once into a launch buffer it reads back
const shared = pl.jit.incore(function sharedNeg(a: pl.Tensor, o: pl.Out<pl.Tensor>) {
  pl.assign(o, pl.neg(a));
});
const twoSites = pl.jit(function twoSites(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  const tmp = pl.createTensor([64, 64], pl.FP32);
  shared(a, tmp);
  shared(tmp, out);
  return out;
});
const addDyn = pl.jit(function addDyn(a: pl.Tensor<["M", 2048], pl.FP32>, b: pl.Tensor<["M", 2048], pl.FP32>, out: pl.Out<pl.Tensor<["M", 2048], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

describe("StreamOutputs: write-only outputs of the launch", () => {
  it("an Out parameter only written: its kernel parameter streams", () => {
    expect(streamOf(add.lower(zeros([64, 64]), zeros([64, 64]), zeros([64, 64])))).toEqual({ add_incore_0: ["out"] });
  });
  it("an Out parameter a later task reads does not; the last output does", () => {
    const s = streamOf(twoSteps.lower(zeros([64, 64]), zeros([64, 64]), zeros([64, 64])));
    expect(Object.values(s)).toEqual([null, ["out"]]);
  });
  it("an InOut parameter (read and written) does not", () => {
    expect(Object.values(streamOf(inPlace.lower(zeros([64, 64]), zeros([64, 64]))))).toEqual([null]);
  });
  it("a kernel whose parameter is an output at one call site and a launch buffer at another does not", () => {
    expect(Object.values(streamOf(twoSites.lower(zeros([64, 64]), zeros([64, 64]))))).toEqual([null]);
  });
});

describe("streaming stores on cpu", () => {
  const codeOf = (outputDir: string) => readFileSync(join(outputDir, "kernels", "program.cpp"), "utf8");
  it(`an output of at least ${STREAM_MIN_BYTES >> 20} MiB is streamed, a smaller one is not; both add correctly`, () => {
    const rows = STREAM_MIN_BYTES / 4 / 2048;  // exactly the threshold, float32 [rows, 2048]
    for (const [r, streamed] of [[rows, true], [64, false]] as const) {
      const A = randn([r, 2048], { seed: 1 }), B = randn([r, 2048], { seed: 2 }), O = zeros([r, 2048]);
      const compiled = add.compile(A, B, O);
      const code = codeOf(compiled.outputDir);
      expect(code.includes("tspto_stream_store(&"), `${r} rows`).toBe(streamed);
      if (streamed) expect(code).toMatch(/tspto_stream_fence\(\);\s*\n\}/);  // once, before the kernel returns
      add(A, B, O);
      const a = A.data as Float32Array, b = B.data as Float32Array, o = O.data as Float32Array;
      for (let i = 0; i < o.length; i += 997) expect(o[i]).toBe(Math.fround(a[i] + b[i]));
      let bad = 0;
      for (let i = 0; i < o.length; i++) if (o[i] !== Math.fround(a[i] + b[i])) bad++;
      expect(bad).toBe(0);
    }
  });
  it("a dynamic output decides at run time; both paths give the exact sums (and interp's)", () => {
    const rows = STREAM_MIN_BYTES / 4 / 2048;
    const compiled = addDyn.compile(randn([8, 2048]), randn([8, 2048]), zeros([8, 2048]));
    const code = codeOf(compiled.outputDir);
    expect(code).toContain(`>= ${STREAM_MIN_BYTES}) {  // streamed when large (STREAM_MIN_BYTES)`);
    for (const r of [rows + 3, 5]) {
      const A = randn([r, 2048], { seed: r }), B = randn([r, 2048], { seed: r + 1 }), O = zeros([r, 2048]);
      addDyn(A, B, O);
      const a = A.data as Float32Array, b = B.data as Float32Array, o = O.data as Float32Array;
      let bad = 0;
      for (let i = 0; i < o.length; i++) if (o[i] !== Math.fround(a[i] + b[i])) bad++;
      expect(bad, `${r} rows`).toBe(0);
    }
    const A = randn([5, 2048], { seed: 9 }), B = randn([5, 2048], { seed: 10 }), cpu = zeros([5, 2048]), interp = zeros([5, 2048]);
    addDyn(A, B, cpu);
    addDyn(A, B, interp, new RunConfig({ platform: "interp" }));
    expect(cpu.data).toEqual(interp.data);
  });
});

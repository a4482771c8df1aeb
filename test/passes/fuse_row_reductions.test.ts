// FuseRowReductions (src/passes/fuse_row_reductions.ts) and the loads read in place
// (forwardableReads, src/passes/forward_loads.ts): softmax makes three passes over a row (the
// max reads the input tensor; exp(t - max) and its sum in one rowSumKeep loop; scale and store),
// layer norm three (sum; sum of (t - mean)^2; the output). The pass dump shows the fused form;
// interp gives the same bits with and without the pass; cpu agrees with interp (bit for bit on
// the normalizations, within 1e-6 relative on softmax) and with a float64 JS reference on seeded
// data with large magnitudes (±80 scale), -inf-ish values and rows of an odd width (37 x 1000).
import { afterAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { selectIsa } from "../../src/targets/cpu/isa.js";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, ir, RunConfig, ChipWorker, randn, tensor, zeros, type HostTensor } from "tspto";
import { DEFAULT_PASSES, lowerProgram, fuseRowReductionsPass, fuseRowsPass } from "../../src/passes/index.js";
import { Program, TsptoTypeError } from "../../src/ir/index.js";

const R = 37, C = 1000, EPS = 1e-5, INV = 1 / C;

const softmax = pl.jit(function softmax(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [R, C]);
    const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
    const mx: pl.Tile<[37, 1], pl.FP32> = pl.rowMax(t, tmp);
    const e = pl.exp(pl.rowExpandSub(t, mx));
    const sumTmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
    const s: pl.Tile<[37, 1], pl.FP32> = pl.rowSum(e, sumTmp);
    pl.store(pl.rowExpandDiv(e, s), [0, 0], out);
  });
  return out;
});

const layerNorm = pl.jit(function layerNorm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tx = pl.load(x, [0, 0], [R, C]);
    const g = pl.load(gamma, [0, 0], [1, C]);
    const b = pl.load(beta, [0, 0], [1, C]);
    const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
    const mean = pl.mul(pl.rowSum(tx, tmp), INV);
    const centered = pl.rowExpandSub(tx, mean);
    const variance = pl.mul(pl.rowSum(pl.mul(centered, centered), tmp), INV);
    const std = pl.sqrt(pl.add(variance, EPS));
    const scaled = pl.colExpandMul(pl.rowExpandDiv(centered, std), g);
    pl.store(pl.add(scaled, pl.colExpand(scaled, b)), [0, 0], out);
  });
  return out;
});

const rmsNorm = pl.jit(function rmsNorm(x: pl.Tensor, gamma: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tx = pl.load(x, [0, 0], [R, C]);
    const g = pl.load(gamma, [0, 0], [1, C]);
    const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
    const sumSq: pl.Tile<[37, 1], pl.FP32> = pl.rowSum(pl.mul(tx, tx), tmp);
    const rms = pl.sqrt(pl.add(pl.mul(sumSq, INV), EPS));
    pl.store(pl.colExpandMul(pl.rowExpandDiv(tx, rms), g), [0, 0], out);
  });
  return out;
});

/** An [8, 203] block that FuseRows is not run on (see `withoutFuseRows`): rowSumKeep over 8 rows, an odd width. */
const KR = 8, KC = 203;
const keepRows = pl.jit(function keepRows(a: pl.Tensor, out: pl.Out<pl.Tensor>, sums: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [KR, KC]);
    const tmp = pl.createTile([KR, KC], pl.FP32, pl.Mem.Vec);
    const e = pl.exp(pl.mul(t, 0.5));
    const s: pl.Tile<[8, 1], pl.FP32> = pl.rowSum(e, tmp);
    pl.store(pl.rowExpandMul(e, s), [0, 0], out);
    pl.store(s, [0, 0], sums);
  });
  return out;
});

/** e's first reader is not the sum: no rowSumKeep (the max reads e in between). */
const maxThenSum = pl.jit(function maxThenSum(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [KR, KC]);
    const tmp = pl.createTile([KR, KC], pl.FP32, pl.Mem.Vec);
    const e = pl.exp(t);
    const m: pl.Tile<[8, 1], pl.FP32> = pl.rowMax(e, tmp);
    const s: pl.Tile<[8, 1], pl.FP32> = pl.rowSum(e, tmp);
    pl.store(pl.rowExpandSub(pl.rowExpandDiv(e, s), m), [0, 0], out);
  });
  return out;
});

/** rowSumKeep written by hand, on int32 (sums accumulate in int64 and saturate). */
const keepInt = pl.jit(function keepInt(a: pl.Tensor, out: pl.Out<pl.Tensor>, sums: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [4, 21]);
    const [e, s] = pl.rowSumKeep(pl.mul(t, 3));
    pl.store(pl.sub(e, 1), [0, 0], out);
    pl.store(s, [0, 0], sums);
  });
  return out;
});

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
const tmp = () => { const d = mkdtempSync(join(tmpdir(), "tspto-frr-")); dirs.push(d); return d; };

/** The pass dump texts of a compile, by pass name. */
function dumps(fn: { lower(...a: unknown[]): Program }, args: unknown[], platform = "interp"): { byPass: Map<string, string>; outputDir: string } {
  const c = ir.compile(fn.lower(...args), { platform, dumpPasses: true, outputDir: tmp() });
  const d = join(c.outputDir, "passes_dump");
  const byPass = new Map<string, string>();
  for (const f of readdirSync(d)) { const m = /^\d+_after_(\w+)\.ts$/.exec(f); if (m) byPass.set(m[1], readFileSync(join(d, f), "utf8")); }
  return { byPass, outputDir: c.outputDir };
}
/** The InCore function's text in a dump. */
const kernelText = (text: string): string => { const s = text.indexOf("pl.jit.incore"); return text.slice(s, text.indexOf("\n});", s)); };
/** The source program (before any pass). */
function sourceOf(fn: { lower(...a: unknown[]): Program }, args: unknown[]): Program {
  const c = ir.compile(fn.lower(...args), { platform: "interp", dumpPasses: true, outputDir: tmp() });
  return Program.fromJSON(readFileSync(join(c.outputDir, "passes_dump", "00_after_Input.json"), "utf8"));
}
/** Run a lowered program on a platform with fresh copies of the arguments; returns them. */
function runLowered(p: Program, platform: string, args: HostTensor[]): HostTensor[] {
  const copies = args.map((t) => tensor((t.data as Float32Array).slice(), { shape: t.shape, dtype: t.dtype }));
  const w = new ChipWorker(new RunConfig({ platform }));
  try { w.run(ir.compile(p, { platform }), ...copies); } finally { w.close(); }
  return copies;
}
const f32 = (t: HostTensor) => Array.from(t.data as Float32Array);

/** Seeded rows at a ±80 scale, with -inf-ish entries (-1e30, -3e38), a constant row and a row of -3e38 but one value. */
function hardRows(seed: number, rows = R, cols = C): HostTensor {
  const base = randn([rows, cols], { seed }).data as Float32Array;
  const x = Float32Array.from(base, (v) => v * 80);
  for (let j = 0; j < cols; j += 7) x[3 * cols + j] = -1e30;
  for (let j = 0; j < cols; j += 11) x[5 * cols + j] = -3e38;
  x.fill(2.5, 7 * cols, 8 * cols);
  x.fill(-3e38, 9 * cols, 10 * cols); x[9 * cols + cols - 1] = 17;
  return tensor(x, { shape: [rows, cols] });
}

function softmaxRef(x: Float32Array, rows: number, cols: number): Float64Array {
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    let m = -Infinity;
    for (let j = 0; j < cols; j++) m = Math.max(m, x[r * cols + j]);
    let s = 0;
    for (let j = 0; j < cols; j++) s += Math.exp(x[r * cols + j] - m);
    for (let j = 0; j < cols; j++) out[r * cols + j] = Math.exp(x[r * cols + j] - m) / s;
  }
  return out;
}
function layerNormRef(x: Float32Array, g: Float32Array, b: Float32Array | null, rms: boolean): Float64Array {
  const out = new Float64Array(R * C);
  for (let r = 0; r < R; r++) {
    let mean = 0;
    if (!rms) { for (let j = 0; j < C; j++) mean += x[r * C + j]; mean /= C; }
    let v = 0;
    for (let j = 0; j < C; j++) v += (x[r * C + j] - mean) ** 2;
    const sd = Math.sqrt(v / C + EPS);
    for (let j = 0; j < C; j++) out[r * C + j] = ((x[r * C + j] - mean) / sd) * g[j] + (b ? b[j] : 0);
  }
  return out;
}

describe("FuseRowReductions", () => {
  it("is in the default pipeline after FlattenTiles and before PlanMemory", () => {
    const names = DEFAULT_PASSES.map((p) => p.name);
    expect(names.indexOf("FuseRowReductions")).toBe(names.indexOf("FlattenTiles") + 1);
    expect(names.indexOf("FuseRowReductions")).toBeLessThan(names.indexOf("PlanMemory"));
  });

  it("softmax: the dump shows exp(t - max) and its sum as one rowSumKeep, the sum's scratch tile gone", () => {
    const { byPass } = dumps(softmax, [hardRows(1), zeros([R, C])]);
    const before = kernelText(byPass.get("FlattenTiles")!), after = kernelText(byPass.get("FuseRowReductions")!);
    expect(before).toMatch(/const s = pl\.rowSum\(e, sumTmp\);/);
    expect(after).toContain(`for (const row of pl.range(0, ${R}, 1))`);
    expect(after).toMatch(/const \[e, s\] = pl\.rowSumKeep\(pl\.exp\(pl\.sub\(t, pl\.read\(mx, \[0, 0\]\)\)\)\);/);
    expect(after).not.toMatch(/pl\.rowSum\(|sumTmp/);
    expect(after).toMatch(/pl\.store\(pl\.div\(e, pl\.read\(s, \[0, 0\]\)\), \[row, 0\], out\);/);
  });

  it("layer norm: t - mean is computed where it is read (the sum of squares and the output), the output chain inside the store", () => {
    const { byPass } = dumps(layerNorm, [hardRows(2), randn([1, C], { seed: 3 }), randn([1, C], { seed: 4 }), zeros([R, C])]);
    const before = kernelText(byPass.get("FlattenTiles")!), after = kernelText(byPass.get("FuseRowReductions")!);
    expect(before).toMatch(/const centered = /);
    expect(before).toMatch(/const scaled = /);
    expect(after).not.toMatch(/const (centered|scaled|variance) = /);
    expect(after).toMatch(/pl\.rowSum\(pl\.mul\(pl\.sub\(tx, pl\.read\(mean, \[0, 0\]\)\), pl\.sub\(tx, pl\.read\(mean, \[0, 0\]\)\)\), tmp\)/);
    expect(after).toMatch(/pl\.store\(pl\.add\(pl\.mul\(pl\.div\(pl\.sub\(tx, pl\.read\(mean, \[0, 0\]\)\), pl\.read\(std, \[0, 0\]\)\), g\), b\), \[row, 0\], out\);/);
  });

  it("softmax on cpu: three loops per row (the max reads the input tensor, exp + sum, scale + store), 512-bit vectors where the machine has them", () => {
    const { outputDir } = dumps(softmax, [hardRows(1), zeros([R, C])], "cpu");
    const src = readFileSync(join(outputDir, "kernels", "program.cpp"), "utf8");
    const body = src.slice(src.indexOf("for (int64_t row_"), src.indexOf("// ==== orchestration"));
    const blocks = [...body.matchAll(/\{ {2}\/\/ (.*)$/gm)].map((m) => m[1].replace(/ \(.*$/, ""));
    expect(blocks).toEqual([
      "t: load read in place by its readers; window check",
      "mx = tile.rowMax",
      "[e, s] = tile.rowSumKeep(tile.exp(tile.sub(t, tile.read(mx, [...]))))",
      "tile.store",
    ]);
    expect(body).toMatch(/const float\* __restrict \w+ = \(const float\*\)a_\d+ \+ .*\/\/ t \(forwarded load\)/);
    // the library: when the build's ISA path has AVX-512 (and objdump is there), the kernel uses zmm registers
    const cpu = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
    const isa = selectIsa(cpu);
    let asm = "";
    try { asm = execFileSync("objdump", ["-d", "--no-show-raw-insn", join(outputDir, "build", "libprogram.so")], { encoding: "utf8", maxBuffer: 64 << 20 }); } catch { asm = ""; }
    if (isa !== null && isa !== "avx2" && asm) {
      const k = asm.slice(asm.indexOf("<k_softmax_incore_0>:"));
      expect(k.slice(0, k.indexOf("\n\n"))).toMatch(/%zmm\d+/);
    }
  });

  it("softmax: interp gives the same bits with and without the pass; cpu agrees with interp and with a float64 reference (±80, -inf-ish, 37 x 1000)", () => {
    const args = [hardRows(1), zeros([R, C])];
    const src = sourceOf(softmax, args);
    const withPass = runLowered(lowerProgram(src).program, "interp", args)[1];
    const without = runLowered(lowerProgram(src, { passes: DEFAULT_PASSES.filter((p) => p !== fuseRowReductionsPass) }).program, "interp", args)[1];
    expect(f32(withPass)).toEqual(f32(without));
    const cpu = [hardRows(1), zeros([R, C])];
    softmax(...(cpu as [never, never]));
    const got = cpu[1].data as Float32Array, want = withPass.data as Float32Array;
    const ref = softmaxRef(args[0].data as Float32Array, R, C);
    let bad = 0;
    for (let i = 0; i < got.length; i++) {
      if (!(Math.abs(got[i] - want[i]) <= 1e-6 * Math.abs(want[i]) + 1e-12)) bad++;
      if (!(Math.abs(got[i] - ref[i]) <= 1e-5 * ref[i] + 1e-40)) bad++;
    }
    expect(bad).toBe(0);
    for (let r = 0; r < R; r++) {
      let s = 0;
      for (let j = 0; j < C; j++) s += got[r * C + j];
      expect(Math.abs(s - 1)).toBeLessThan(1e-5);
    }
    expect(got[7 * C]).toBe(Math.fround(1 / C)); // the constant row
    expect(got[9 * C + C - 1]).toBe(1);          // one finite value among -3e38
  });

  for (const [name, fn, rms] of [["layer norm", layerNorm, false], ["rms norm", rmsNorm, true]] as const) {
    it(`${name}: interp gives the same bits with and without the pass; cpu equals interp bit for bit and a float64 reference within 1e-4`, () => {
      const mk = () => rms
        ? [(hardRows(5).data as Float32Array).map((v) => Math.max(-1e3, v)), randn([1, C], { seed: 6 }), zeros([R, C])]
        : [(hardRows(2).data as Float32Array).map((v) => Math.max(-1e3, v)), randn([1, C], { seed: 3 }), randn([1, C], { seed: 4 }), zeros([R, C])];
      const build = () => mk().map((v, k) => (k === 0 ? tensor(v as Float32Array, { shape: [R, C] }) : v as HostTensor));
      const args = build();
      const out = args.length - 1;
      const src = sourceOf(fn as never, args);
      const withPass = runLowered(lowerProgram(src).program, "interp", args)[out];
      const without = runLowered(lowerProgram(src, { passes: DEFAULT_PASSES.filter((p) => p !== fuseRowReductionsPass) }).program, "interp", args)[out];
      expect(f32(withPass)).toEqual(f32(without));
      const cpu = build();
      (fn as (...a: unknown[]) => unknown)(...cpu);
      expect(f32(cpu[out])).toEqual(f32(withPass));
      const ref = layerNormRef(args[0].data as Float32Array, args[1].data as Float32Array, rms ? null : args[2].data as Float32Array, rms);
      const got = cpu[out].data as Float32Array;
      let worst = 0;
      for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - ref[i]) / (1 + Math.abs(ref[i])));
      expect(worst).toBeLessThan(1e-4);
    });
  }

  it("is general: on an [8, 203] block (FuseRows not run) the sum of exp(t / 2) is kept over 8 rows; cpu matches interp", () => {
    const a = randn([KR, KC], { seed: 11 });
    const src = sourceOf(keepRows as never, [a, zeros([KR, KC]), zeros([KR, 1])]);
    const r = lowerProgram(src, { passes: DEFAULT_PASSES.filter((p) => p !== fuseRowsPass), dump: true });
    const text = kernelText(r.dumps.find((d) => d.pass === "FuseRowReductions")!.text);
    expect(text).toMatch(/const \[e, s\] = pl\.rowSumKeep\(pl\.exp\(pl\.mul\(t, 0\.5\)\)\);/);
    expect(text).not.toContain("const row of");
    const want = runLowered(r.program, "interp", [a, zeros([KR, KC]), zeros([KR, 1])]);
    const got = runLowered(r.program, "cpu", [a, zeros([KR, KC]), zeros([KR, 1])]);
    const x = a.data as Float32Array;
    for (const k of [1, 2]) {
      const g = got[k].data as Float32Array, w = want[k].data as Float32Array;
      for (let i = 0; i < g.length; i++) expect(Math.abs(g[i] - w[i])).toBeLessThanOrEqual(2e-6 * Math.abs(w[i]));
    }
    // the sums against float64
    const sums = got[2].data as Float32Array;
    for (let i = 0; i < KR; i++) {
      let s = 0;
      for (let j = 0; j < KC; j++) s += Math.exp(x[i * KC + j] * 0.5);
      expect(Math.abs(sums[i] - s)).toBeLessThanOrEqual(1e-6 * s);
    }
  });

  it("keeps nothing when another reader of e comes before the sum; the result is unchanged", () => {
    const a = randn([KR, KC], { seed: 12 });
    const text = kernelText(dumps(maxThenSum as never, [a, zeros([KR, KC])]).byPass.get("FuseRowReductions")!);
    expect(text).not.toContain("rowSumKeep");
    expect(text).toMatch(/const e = pl\.exp\(t\);/);
    const got = zeros([KR, KC]), want = zeros([KR, KC]);
    maxThenSum(a, got);
    maxThenSum(a, want, new RunConfig({ platform: "interp" }));
    const g = got.data as Float32Array, w = want.data as Float32Array;
    for (let i = 0; i < g.length; i++) expect(Math.abs(g[i] - w[i])).toBeLessThanOrEqual(1e-6 * Math.abs(w[i]) + 1e-6);
  });

  it("pl.rowSumKeep by hand on int32: the kept tile and saturating int64 sums, cpu equal to interp", () => {
    const x = Int32Array.from({ length: 4 * 21 }, (_, i) => (i % 5 === 0 ? 2 ** 30 : (i * 7919) % 1000 - 500));
    const mk = () => [tensor(x, { shape: [4, 21], dtype: "int32" }), zeros([4, 21], "int32"), zeros([4, 1], "int32")];
    const cpu = mk(), ref = mk();
    keepInt(...(cpu as [never, never, never]));
    keepInt(...(ref as [never, never, never]), new RunConfig({ platform: "interp" }));
    expect(Array.from(cpu[1].data as Int32Array)).toEqual(Array.from(ref[1].data as Int32Array));
    expect(Array.from(cpu[2].data as Int32Array)).toEqual(Array.from(ref[2].data as Int32Array));
    // row 0 holds 2^30 (x3 saturates to INT32_MAX per element, then the sum saturates)
    expect((cpu[2].data as Int32Array)[0]).toBe(2147483647);
    const row1 = Array.from(x.slice(21, 42), (v) => Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, v * 3)));
    expect((cpu[2].data as Int32Array)[1]).toBe(Math.max(-(2 ** 31), Math.min(2 ** 31 - 1, row1.reduce((s, v) => s + v, 0))));
  });

  it("pl.rowSumKeep of a bool tile is a type error", () => {
    const bad = pl.jit(function badKeep(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        const t = pl.load(a, [0, 0], [4, 8]);
        const [e, s] = pl.rowSumKeep(pl.cmp(t, 0, "gt"));
        pl.store(pl.cast(e, pl.FP32), [0, 0], out);
        void s;
      });
      return out;
    });
    let err: unknown;
    try { bad.lower(zeros([4, 8]), zeros([4, 8])); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoTypeError);
    expect((err as TsptoTypeError).code).toBe("E_TYPE");
    expect((err as Error).message).toContain("pl.rowSumKeep: cannot reduce a bool tile");
  });
});

// FuseRows (src/passes/fuse_rows.ts): softmax, layer norm and RMS norm blocks over [R, C]
// tiles become a loop over the R rows with [1, C] tiles, row broadcasts folded into their
// consumers (t - read(max, [0, 0])) and column broadcasts into elementwise ops with the [1, C]
// tile. The pass dump shows the fused form; interp gives the same bits with and without the
// pass (each element is computed by the same operations); cpu agrees with interp bit for bit
// on the normalizations (only + - * / sqrt) and within 1e-6 relative on softmax (tspto_expf is
// within 1 ulp of interp's exp; the sum and division carry that through); a block that is not
// row-wise stays as it was.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, ir, RunConfig, randn, zeros, ChipWorker } from "tspto";
import { DEFAULT_PASSES, lowerProgram, fuseRowsPass } from "../../src/passes/index.js";
import { Program } from "../../src/ir/index.js";

const R = 64, C = 256, EPS = 1e-5, INV = 1 / C;

const softmax = pl.jit(function softmax(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, 2 * R, R)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [R, C]);
      const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
      const mx: pl.Tile<[64, 1], pl.FP32> = pl.rowMax(t, tmp);
      const e = pl.exp(pl.rowExpandSub(t, mx));
      const s: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(e, tmp);
      pl.store(pl.rowExpandDiv(e, s), [r, 0], out);
    });
  }
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
    const sumSq: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(pl.mul(tx, tx), tmp);
    const rms = pl.reshape(pl.sqrt(pl.add(pl.mul(pl.reshape(sumSq, [1, R]), INV), EPS)), [R, 1]);
    pl.store(pl.colExpandMul(pl.rowExpandDiv(tx, rms), g), [0, 0], out);
  });
  return out;
});

/** Column sums: not a row-wise block (stays as it was). */
const colSums = pl.jit(function colSums(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [R, C]);
    const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
    pl.store(pl.colSum(t, tmp), [0, 0], out);
  });
  return out;
});

/** One pl.at over all rows: the row-block loop is still split into bands across cores. */
const softmaxBands = pl.jit(function softmaxBands(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const r of pl.range(0, 8 * R, R)) {
      const t = pl.load(a, [r, 0], [R, C]);
      const tmp = pl.createTile([R, C], pl.FP32, pl.Mem.Vec);
      const mx: pl.Tile<[64, 1], pl.FP32> = pl.rowMax(t, tmp);
      const e = pl.exp(pl.rowExpandSub(t, mx));
      const s: pl.Tile<[64, 1], pl.FP32> = pl.rowSum(e, tmp);
      pl.store(pl.rowExpandDiv(e, s), [r, 0], out);
    }
  });
  return out;
});

type Case = { name: string; fn: typeof softmax; args: () => ReturnType<typeof randn>[]; out: number; exact: boolean };
const cases: Case[] = [
  { name: "softmax", fn: softmax, args: () => [randn([2 * R, C], { seed: 1 }), zeros([2 * R, C])], out: 1, exact: false },
  { name: "layerNorm", fn: layerNorm as never, args: () => [randn([R, C], { seed: 2 }), randn([1, C], { seed: 3 }), randn([1, C], { seed: 4 }), zeros([R, C])], out: 3, exact: true },
  { name: "rmsNorm", fn: rmsNorm as never, args: () => [randn([R, C], { seed: 5 }), randn([1, C], { seed: 6 }), zeros([R, C])], out: 2, exact: true },
];

const dirs: string[] = [];
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** The passes_dump directory of a compile of fn on these arguments. */
function dumpDir(fn: typeof softmax, args: unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), "tspto-fuse-"));
  dirs.push(dir);
  const c = ir.compile(fn.lower(...args), { platform: "interp", dumpPasses: true, outputDir: dir });
  return join(c.outputDir, "passes_dump");
}
/** The program after FuseRows, as the passes_dump file shows it. */
function fusedDump(fn: typeof softmax, args: unknown[]): string {
  const d = dumpDir(fn, args);
  const files = readdirSync(d).filter((f) => /_after_FuseRows\.ts$/.test(f));
  expect(files).toHaveLength(1);
  return readFileSync(join(d, files[0]), "utf8");
}
/** The program before any pass (the parsed kernel). */
function sourceOf(fn: typeof softmax, args: unknown[]): Program {
  return Program.fromJSON(readFileSync(join(dumpDir(fn, args), "00_after_Input.json"), "utf8"));
}

const bits = (t: { data: unknown }) => Array.from(t.data as Float32Array);

describe("FuseRows", () => {
  it("is in the default pipeline after TensorToTile and before FlattenTiles", () => {
    const names = DEFAULT_PASSES.map((p) => p.name);
    expect(names.indexOf("FuseRows")).toBeGreaterThan(names.indexOf("TensorToTile"));
    expect(names.indexOf("FuseRows")).toBeLessThan(names.indexOf("FlattenTiles"));
  });

  for (const c of cases) {
    it(`${c.name}: the dump shows one loop over the rows with [1, ${C}] tiles and no row broadcast`, () => {
      const text = fusedDump(c.fn, c.args());
      const start = text.indexOf("{", text.indexOf("pl.jit.incore"));
      const kernel = text.slice(start, text.indexOf("});", start));
      expect(kernel).toMatch(/for \(const row of pl\.range\(0, 64, 1\)\)/);
      expect(kernel).toMatch(new RegExp(`pl\\.load\\(\\w+, \\[(\\w+ \\+ )?row, 0\\], \\[1, ${C}\\]\\)`));
      expect(kernel).toMatch(/pl\.read\(\w+, \[0, 0\]\)/);
      expect(kernel).not.toMatch(/rowExpand|colExpand/);
      expect(kernel).not.toMatch(new RegExp(`\\[${R}, ${C}\\]`));
    });

    it(`${c.name}: interp gives the same bits with and without the pass; cpu agrees with interp`, () => {
      const without = DEFAULT_PASSES.filter((p) => p !== fuseRowsPass);
      const w = new ChipWorker(new RunConfig({ platform: "interp" }));
      const argsF = c.args(), argsU = c.args();
      const src = sourceOf(c.fn, argsF);
      w.run(ir.compile(lowerProgram(src).program, { platform: "interp" }), ...argsF);
      w.run(ir.compile(lowerProgram(src, { passes: without }).program, { platform: "interp" }), ...argsU);
      w.close();
      expect(bits(argsF[c.out])).toEqual(bits(argsU[c.out]));
      const cpuArgs = c.args();
      c.fn(...(cpuArgs as [never, never]));
      const got = cpuArgs[c.out].data as Float32Array, want = argsF[c.out].data as Float32Array;
      if (c.exact) expect(Array.from(got)).toEqual(Array.from(want));
      // softmax: exp within 1 ulp of interp's, then a sum and a division: within 1e-6 relative
      else for (let i = 0; i < got.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-6 * Math.abs(want[i]) + 1e-12);
    });
  }

  it("a loop of row blocks in one pl.at: fused inside, still split into per-core bands (SplitParallelLoops)", () => {
    const a = randn([8 * R, C], { seed: 7 });
    const p = softmaxBands.lower(a, zeros([8 * R, C]));
    expect(p.asText()).toMatch(/"spmd": \{ "lo": 2, "hi": 3, "start": 0, "stop": 512, "step": 64/);
    expect(p.asText()).toMatch(/for \(const row of pl\.range\(0, 64, 1\)\)/);
    const got = zeros([8 * R, C]), want = zeros([8 * R, C]);
    softmaxBands(a, got);
    softmaxBands(a, want, new RunConfig({ platform: "interp" }));
    const g = got.data as Float32Array, w = want.data as Float32Array;
    for (let i = 0; i < g.length; i++) expect(Math.abs(g[i] - w[i])).toBeLessThanOrEqual(1e-6 * Math.abs(w[i]) + 1e-12);
  });

  it("a folded row broadcast is computed in float (the element of a float tile is exact in fp32): exp(t - max) is one fp32 loop", () => {
    const dir = mkdtempSync(join(tmpdir(), "tspto-fuse-"));
    dirs.push(dir);
    const c = ir.compile(softmax.lower(randn([2 * R, C], { seed: 1 }), zeros([2 * R, C])), { platform: "cpu", outputDir: dir });
    const src = readFileSync(join(c.outputDir, "kernels", "program.cpp"), "utf8");
    expect(src).toMatch(/= tspto_expf\(\(\w+\[[^\]]+\] - \(float\)\w+\)\);/);
  });

  it("a block that is not row-wise (a column reduction) is left as it was", () => {
    const text = fusedDump(colSums as never, [randn([R, C], { seed: 9 }), zeros([1, C])]);
    expect(text).not.toMatch(/const row of/);
    expect(text).toContain(`pl.load(a, [0, 0], [${R}, ${C}])`);
  });
});

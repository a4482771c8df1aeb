// A partial tile's pad read through a window op (slice, concat, assemble) or an elementwise op
// with a smaller operand never gives an earlier launch's data (docs/semantics.md, Partial tiles):
// on cpu such a kernel starts from zeroed scratch (passes/flatten_tiles.ts readsPad), so the pad
// reads 0, as on interp; kernels that never read a pad do not clear anything.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, full, zeros, RunConfig, type HostTensor } from "tspto";

const values = (t: HostTensor) => Array.from(t.data as Float32Array);
const interp = new RunConfig({ platform: "interp" });
const source = (dir: string): string => readFileSync(join(dir, "kernels", readdirSync(join(dir, "kernels")).find((f) => f.endsWith(".cpp"))!), "utf8");

const viaSlice = pl.jit(function viaSlice(x: pl.Tensor<[4, 8], pl.FP32>, v: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<[2, 8], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [4, 8], { validShape: [v, 8] });
    pl.store(pl.slice(t, [2, 8], [2, 0]), [0, 0], out);
  });
});
const viaConcat = pl.jit(function viaConcat(x: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 16], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [4, 8], { validShape: [4, 3] });
    pl.store(pl.concat(t, t), [0, 0], out);
  });
});
const viaAssemble = pl.jit(function viaAssemble(x: pl.Tensor<[4, 8], pl.FP32>, y: pl.Tensor<[2, 2], pl.FP32>, out: pl.Out<pl.Tensor<[4, 8], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [4, 8], { validShape: [1, 8] });
    pl.store(pl.fillpad(pl.assemble(t, pl.load(y, [0, 0], [2, 2]), [2, 2])), [0, 0], out);
  });
});
const viaAdd = pl.jit(function viaAdd(x: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 8], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const a = pl.load(x, [0, 0], [4, 8]);
    const b = pl.load(x, [0, 0], [4, 8], { validShape: [2, 8] });
    pl.store(pl.add(a, b), [0, 0], out);
  });
});
const noPad = pl.jit(function noPad(x: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 1], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.rowSum(pl.load(x, [0, 0], [4, 8], { validShape: [4, 5] }), pl.createTile([4, 8], pl.FP32)), [0, 0], out);
  });
});

/** Run `f` on cpu a few times with sevens (filling the cores' scratch), then with `x`; and on interp. */
function after7s(f: (...a: never[]) => unknown, args: (x: HostTensor) => unknown[], x: HostTensor, outShape: number[]): [number[], number[]] {
  for (let i = 0; i < 8; i++) (f as (...a: unknown[]) => unknown)(...args(full(x.shape as number[], 7)), zeros(outShape));
  const got = zeros(outShape), want = zeros(outShape);
  (f as (...a: unknown[]) => unknown)(...args(x), got);
  (f as (...a: unknown[]) => unknown)(...args(x), want, interp);
  return [values(got), values(want)];
}

describe("pad reads never return another launch's data", () => {
  it("a slice over the pad of a run-time valid region reads 0, not the rows an earlier launch loaded", () => {
    const [got, want] = (() => {
      for (let i = 0; i < 8; i++) viaSlice(full([4, 8], 7), 4, zeros([2, 8]));
      const g = zeros([2, 8]), w = zeros([2, 8]);
      viaSlice(full([4, 8], 1), 2, g);
      viaSlice(full([4, 8], 1), 2, w, interp);
      return [values(g), values(w)];
    })();
    expect(got).toEqual(new Array(16).fill(0));
    expect(got).toEqual(want);
  });

  it("concat and assemble of partial tiles, and an elementwise op with a smaller operand, read the pad as 0", () => {
    const x = full([4, 8], 1);
    const [c, ci] = after7s(viaConcat as never, (t) => [t], x, [4, 16]);
    expect(c).toEqual(ci);
    expect(c.filter((v) => v === 7)).toEqual([]);
    expect(c.slice(0, 16)).toEqual([1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0]);
    const [a, ai] = after7s(viaAssemble as never, (t) => [t, full([2, 2], 3)], x, [4, 8]);
    expect(a).toEqual(ai);
    expect(a.filter((v) => v === 7)).toEqual([]);
    const [s, si] = after7s(viaAdd as never, (t) => [t], x, [4, 8]);
    expect(s).toEqual(si);
    expect(s).toEqual([...new Array(16).fill(2), ...new Array(16).fill(1)]);
  });

  it("only kernels that may read a pad clear their scratch", () => {
    const x = full([4, 8], 1);
    expect(source(viaSlice.compile(x, 2, zeros([2, 8])).outputDir)).toContain("this kernel may read a pad");
    expect(source(viaAdd.compile(x, zeros([4, 8])).outputDir)).toContain("this kernel may read a pad");
    expect(source(noPad.compile(x, zeros([4, 1])).outputDir)).not.toContain("this kernel may read a pad");
  });
});

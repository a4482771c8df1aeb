// The pad of a tile with a run-time validShape is never touched on cpu (docs/semantics.md,
// Partial tiles): the generated kernel runs in the codegen harness, whose scratch arena starts
// as 0xff bytes and is dumped after the task; every byte outside the valid region of every tile
// the memory plan placed there must still be 0xff — no load (no zero fill), elementwise loop,
// reduction, broadcast, transpose, matmul or store wrote it. Before the valid extents bounded
// the loops, a load zeroed the whole tile and every op computed over it. The generated code
// says the same: no memset, loops bounded by the extent's local.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pl, ir, randn, zeros } from "tspto";
import { forEachStmt, numel, tileElemBytes, type Program, type TileType, type Var } from "../../src/ir/index.js";
import { cleanup, run, tmpDir } from "./helpers.js";

afterAll(cleanup);

const S = 256, D = 64;
const everyOp = pl.jit(function everyOp(q: pl.Tensor, k: pl.Tensor, v: pl.Tensor, L: pl.Scalar<pl.INT64>, y: pl.InOut<pl.Tensor>, red: pl.InOut<pl.Tensor>,
  cols: pl.InOut<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const qt = pl.load(q, [0, 0], [1, D]);
    const kt = pl.load(k, [0, 0], [S, D], { validShape: [L, D] });
    const vt = pl.load(v, [0, 0], [S, D], { validShape: [L, D] });
    const e = pl.sub(pl.mul(kt, vt), 0.5);
    pl.store(e, [0, 0], y);
    const tmp = pl.createTile([S, D], pl.FP32);
    pl.store(pl.rowSum(e, tmp), [0, 0], red);
    pl.store(pl.rowMax(kt, tmp), [0, 1], red);
    pl.store(pl.rowProd(vt), [0, 2], red);
    pl.store(pl.cast(pl.rowArgmax(kt), pl.FP32), [0, 3], red);
    pl.store(pl.colSum(e), [0, 0], cols);
    pl.store(pl.colMin(kt), [1, 0], cols);
    const s = pl.mul(pl.matmul(qt, kt, { bTrans: true }), 0.125);   // transpose + matmul: [1, S], L valid
    const t1 = pl.createTile([1, S], pl.FP32);
    const p = pl.exp(pl.rowExpandSub(s, pl.rowMax(s, t1)));
    const pn = pl.rowExpandDiv(p, pl.rowSum(p, t1));
    pl.store(pl.matmul(pn, vt), [0, 0], out);                        // K = L
    pl.store(pl.colExpandMul(vt, pl.load(q, [0, 0], [1, D])), [0, 0], y);
  });
  return out;
});

/** Tile variables with a scratch address in the program's kernels. */
function plannedTiles(p: Program): Var[] {
  const out: Var[] = [];
  for (const fn of p.functions) {
    if (fn.fnKind !== "incore") continue;
    forEachStmt(fn.body, (s) => {
      if (s.kind === "assign") out.push(...s.targets);
      if (s.kind === "for") out.push(...s.iterArgs, ...s.results);
    });
  }
  return out.filter((v) => v.type.kind === "tile" && typeof (v.type as TileType).addr === "number");
}

/** The bytes of scratch some tile may hold data in: the valid region ("?" = L) of every planned tile. */
function validBytes(tiles: readonly Var[], L: number, size: number): Uint8Array {
  const ok = new Uint8Array(size);
  for (const v of tiles) {
    const t = v.type as TileType;
    const shape = t.shape as number[], valid = (t.validShape ?? shape).map((d) => (typeof d === "number" ? d : L));
    const eb = tileElemBytes(t.dtype), strides = shape.map((_, ax) => shape.slice(ax + 1).reduce((a, b) => a * b, 1));
    const idx = new Array<number>(shape.length).fill(0);
    for (let n = 0; n < numel(shape); n++) {
      let rest = n;
      shape.forEach((d, ax) => { idx[ax] = Math.floor(rest / strides[ax]) % d; });
      rest = 0;
      if (idx.every((x, ax) => x < valid[ax])) ok.fill(1, t.addr! + n * eb, t.addr! + (n + 1) * eb);
    }
  }
  return ok;
}

describe("the pad of a run-time valid region is not touched (cpu)", () => {
  const Q = randn([1, D], { seed: 1 }), K = randn([S, D], { seed: 2 }), V = randn([S, D], { seed: 3 });
  const outs = () => [zeros([S, D]), zeros([S, 4]), zeros([2, D]), zeros([1, D])];
  const program = everyOp.lower(Q, K, V, 5, ...outs());
  const dir = join(tmpDir("valid"), "a");
  ir.compile(program, { platform: "cpu", outputDir: dir });
  const tiles = plannedTiles(program);

  it("no memset of a partial tile; the loops run to the valid extents' locals", () => {
    const src = readFileSync(join(dir, "kernels", "program.cpp"), "utf8");
    const kernel = src.slice(src.indexOf("extern \"C\" void k_"), src.indexOf("// ==== orchestration"));
    expect(kernel).not.toMatch(/std::memset/);
    // the fused elementwise loop over k's valid rows: one flat loop of L * 64 elements
    expect(kernel).toMatch(/for \(int64_t _i\d+ = 0; _i\d+ < \(_valid\d+\) \* 64; \+\+_i\d+\) _d\d+\[_i\d+\] = \(\(_x\d+\[_i\d+\] \* _x\d+\[_i\d+\]\) - \(float\)0\.5\);/);
    // the matmul p·v sums k < min(L, L)
    expect(kernel).toMatch(/_k\d+ < \(std::min<int64_t>\(_valid\d+, _valid\d+\)\)/);
    expect(tiles.some((v) => (v.type as TileType).validShape?.includes("?"))).toBe(true);
  });

  for (const L of [0, 5, 100, S]) {
    it(`every scratch byte outside the tiles' valid regions keeps the harness's 0xff (L = ${L})`, () => {
      const dump = join(tmpDir("scratch"), "scratch.bin");
      const args = [Q, K, V].map((t) => ({ tensor: t.data as Float32Array })) as { tensor: Float32Array }[];
      const r = run(dir, [...args, { int: L }, ...outs().map((t) => ({ tensor: t.data as Float32Array }))], { scratchDump: dump });
      expect(r.rc).toBe(0);
      expect(r.fails).toEqual([]);
      const scratch = new Uint8Array(readFileSync(dump));
      expect(scratch.length).toBe(1 << 20);
      const ok = validBytes(tiles, L, scratch.length);
      let touched = 0, first = -1;
      for (let i = 0; i < scratch.length; i++) if (!ok[i] && scratch[i] !== 0xff) { touched++; if (first < 0) first = i; }
      const owner = first < 0 ? "" : tiles.filter((v) => { const t = v.type as TileType; return first >= t.addr! && first < t.addr! + numel(t.shape as number[]) * tileElemBytes(t.dtype); }).map((v) => v.name).join(", ");
      expect({ touched, first, owner }).toEqual({ touched: 0, first: -1, owner: "" });
      // and the valid results are there: o = softmax(q kᵀ / 8) v over the L rows
      if (L > 0) expect(Array.from((r.tensors[7] as Float32Array)).some((x) => x !== 0)).toBe(true);
    });
  }
});

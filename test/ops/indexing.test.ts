// iota, gather (tile and tensor forms) and batchMatmul with aTrans / bTrans (API.md §2 Indexing,
// Matmul): values on cpu and interp against independent JS formulas (static and dynamic
// shapes, partial tiles, int32 and int64 indices, an index vector in every orientation), the
// run-time E_KERNEL for an index outside the table (naming the index and the bounds; nothing is
// read outside), and the compile-time errors with their locations.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, tensor, zeros, type HostTensor } from "tspto";
import { TsptoError } from "../../src/ir/index.js";
import { E, S, V, bmmB, bmmTile, bmmTrans, causalStatic, embed, ids, iotas, pickCols, tileGather } from "./fixtures/indexing.js";

const FILE = fileURLToPath(import.meta.url);
const FIXTURE = fileURLToPath(new URL("./fixtures/indexing.ts", import.meta.url));
const PLATFORMS = ["cpu", "interp"] as const;
const cfgOf = (platform: string) => new RunConfig({ platform });
const f32 = (t: HostTensor) => Array.from(t.data as Float32Array);
const num = (t: HostTensor) => Array.from(t.data as ArrayLike<number | bigint>, Number);
function where(file: string, marker: string, token: string): string {
  const lines = readFileSync(file, "utf8").split(/\r?\n/);
  const i = lines.findIndex((l) => l.includes(marker));
  return `${file}:${i + 1}:${lines[i].indexOf(token) + 1}`;
}
function caught(f: () => unknown): TsptoError {
  try { f(); } catch (e) { if (e instanceof TsptoError) return e; throw e; }
  throw new Error("no error");
}
const i32 = (v: number[], shape: number[]) => tensor(Int32Array.from(v), { shape, dtype: "int32" });
const i64 = (v: number[], shape: number[]) => tensor(BigInt64Array.from(v.map(BigInt)), { shape, dtype: "int64" });

// dynamic: an embedding of S tokens (S at run time) and a causal mask at run-time S and L
const embedDyn = pl.jit(function embedDyn(wte: pl.Tensor<[50, 96], pl.FP32>, tok: pl.Tensor<[1, "S"], pl.INT64>, out: pl.Out<pl.Tensor<["S", 96], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(pl.gather(wte, tok), 2.0)); });  // MARK:embedDyn
});
const causal = pl.jit(function causal(s: pl.Tensor<["S", "L"], pl.FP32>, past: pl.Scalar<pl.INT64>, out: pl.Out<pl.Tensor<["S", "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const keep = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
    pl.assign(out, pl.sel(keep, s, -1e9));
  });
});
// a broadcast iota: [1, L] column indices against [S, L]
const colIndex = pl.jit(function colIndex(x: pl.Tensor<[5, "L"], pl.FP32>, out: pl.Out<pl.Tensor<[5, "L"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(x, pl.cast(pl.iota([1, "L"], 1, pl.INT32), pl.FP32))); });
});

describe("iota", () => {
  for (const platform of PLATFORMS) {
    const cfg = cfgOf(platform);
    it(`${platform}: tiles of int32, float32 and int8 (saturating at 127)`, () => {
      const a = zeros([4, 9], "int32"), b = zeros([4, 9]), c = zeros([3, 200], "int8");
      iotas(a, b, c, cfg);
      expect(num(a)).toEqual(Array.from({ length: 36 }, (_, e) => e % 9));
      expect(f32(b)).toEqual(Array.from({ length: 36 }, (_, e) => Math.floor(e / 9)));
      expect(num(c)).toEqual(Array.from({ length: 600 }, (_, e) => Math.min(127, e % 200)));
    });
    it(`${platform}: a causal mask from two iotas (static [37, 300]: partial tiles; dynamic S, L with an offset)`, () => {
      const s = randn([37, 300], { seed: 1 }), out = zeros([37, 300]);
      causalStatic(s, out, cfg);
      expect(f32(out)).toEqual(f32(s).map((v, e) => ((e % 300) <= Math.floor(e / 300) ? v : Math.fround(-1e9))));
      causal.clearCache();
      for (const [Sq, L] of [[1, 1], [1, 40], [4, 4], [9, 333]]) {
        const x = randn([Sq, L], { seed: L }), y = zeros([Sq, L]);
        causal(x, L - Sq, y, cfg);
        expect(f32(y)).toEqual(f32(x).map((v, e) => ((e % L) <= L - Sq + Math.floor(e / L) ? v : Math.fround(-1e9))));
      }
      expect(causal.cacheSize).toBe(1);
    });
    it(`${platform}: an iota of extent 1 on the other axis broadcasts (column indices added to every row)`, () => {
      for (const L of [3, 700]) {
        const x = randn([5, L], { seed: 2 }), y = zeros([5, L]);
        colIndex(x, y, cfg);
        expect(f32(y)).toEqual(f32(x).map((v, e) => Math.fround(v + (e % L))));
      }
    });
  }
});

describe("gather", () => {
  for (const platform of PLATFORMS) {
    const cfg = cfgOf(platform);
    it(`${platform}: an embedding lookup plus a position table in one expression (tensor form, int32 [N, 1] ids)`, () => {
      const wte = randn([V, E], { seed: 3 }), wpe = randn([16, E], { seed: 4 }), tok = ids(S), out = zeros([S, E]);
      embed(wte, wpe, tok, out, cfg);
      const t = num(tok), w = f32(wte), p = f32(wpe);
      expect(f32(out)).toEqual(Array.from({ length: S * E }, (_, e) => Math.fround(w[t[Math.floor(e / E)] * E + (e % E)] + p[e])));
    });
    it(`${platform}: int64 ids as a [1, S] row over a run-time S; columns of a table (axis 1)`, () => {
      const wte = randn([V, E], { seed: 5 });
      embedDyn.clearCache();
      const w = f32(wte); // (once: converting the table for each expected element held the event loop 12 s on a slow machine)
      for (const n of [1, 7, 300]) {
        const v = Array.from({ length: n }, (_, i) => (i * 31 + 7) % V), out = zeros([n, E]);
        embedDyn(wte, i64(v, [1, n]), out, cfg);
        expect(f32(out)).toEqual(Array.from({ length: n * E }, (_, e) => Math.fround(2 * w[v[Math.floor(e / E)] * E + (e % E)])));
      }
      expect(embedDyn.cacheSize).toBe(1);
      const t = randn([7, 40], { seed: 6 }), out = zeros([7, 5]), cv = [0, 39, 5, 5, 20];
      pickCols(t, i64(cv, [1, 5]), out, cfg);
      expect(f32(out)).toEqual(Array.from({ length: 35 }, (_, e) => f32(t)[Math.floor(e / 5) * 40 + cv[e % 5]]));
    });
    it(`${platform}: the tile form, rows and columns`, () => {
      const t = randn([8, 16], { seed: 7 }), rows = zeros([5, 16]), cols = zeros([8, 3]);
      const r = ids(5, "int32", 8), rv = num(r), cv = [15, 0, 7];
      tileGather(t, r, i64(cv, [1, 3]), rows, cols, cfg);
      expect(f32(rows)).toEqual(Array.from({ length: 80 }, (_, e) => f32(t)[rv[Math.floor(e / 16)] * 16 + (e % 16)]));
      expect(f32(cols)).toEqual(Array.from({ length: 24 }, (_, e) => f32(t)[Math.floor(e / 3) * 16 + cv[e % 3]]));
    });
    it(`${platform}: an index outside the table is an E_KERNEL naming the index and the bounds, at the gather`, () => {
      const wte = randn([V, E], { seed: 8 }), wpe = randn([16, E], { seed: 9 });
      const bad = ids(S);
      (bad.data as Int32Array)[4] = V;
      const out = zeros([S, E]);
      const e1 = caught(() => embed(wte, wpe, bad, out, cfg));
      expect(e1.code).toBe("E_KERNEL");
      expect(e1.message).toContain(`gather index ${V} is outside [0, ${V}) on axis 0 of`);
      expect(e1.message).toContain(`of shape [${V}, ${E}]`);
      expect(e1.message).toContain(where(FIXTURE, "MARK:embed", "pl.gather"));
      expect(f32(out).every((x) => x === 0)).toBe(true); // Out buffers are not written by a failed launch
      const neg = caught(() => embedDyn(wte, i64([3, -1], [1, 2]), zeros([2, E]), cfg));
      expect(neg.message).toContain(`gather index -1 is outside [0, ${V}) on axis 0`);
      const r = ids(5, "int32", 8);
      (r.data as Int32Array)[2] = 8;
      const e2 = caught(() => tileGather(randn([8, 16]), r, i64([1, 2, 3], [1, 3]), zeros([5, 16]), zeros([8, 3]), cfg));
      expect(e2.message).toContain("gather index 8 (element 2 of the indices) is outside [0, 8) on axis 0 of the table tile");
      expect(e2.message).toContain(where(FIXTURE, "MARK:tileGather", "pl.gather"));
    });
  }

  it("compile-time errors: float indices, a matrix of indices, an axis other than 0 / 1, a tile table with tensor indices", () => {
    const floatIdx = pl.jit(function floatIdx(t: pl.Tensor<[8, 4], pl.FP32>, i: pl.Tensor<[3, 1], pl.FP32>, out: pl.Out<pl.Tensor<[3, 4], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.gather(t, i)); });  // MARK:floatIdx
    });
    const e1 = caught(() => floatIdx.lower(randn([8, 4]), randn([3, 1]), zeros([3, 4])));
    expect(e1.code).toBe("E_TYPE");
    expect(e1.message).toContain("pl.gather: the indices must be int32 or int64, got float32 ('i', Tensor<[3, 1], float32>)");
    expect(e1.message).toContain(where(FILE, "MARK:floatIdx", "pl.gather"));
    expect(e1.hint).toContain('pl.cast(i, "int32")');
    const matIdx = pl.jit(function matIdx(t: pl.Tensor<[8, 4], pl.FP32>, i: pl.Tensor<[3, 2], pl.INT32>, out: pl.Out<pl.Tensor<[6, 4], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.gather(t, i)); });
    });
    expect(caught(() => matIdx.lower(randn([8, 4]), zeros([3, 2], "int32"), zeros([6, 4]))).message)
      .toContain("pl.gather: the indices must be a vector ([N], [N, 1] or [1, N]), got Tensor<[3, 2], int32> for 'i'");
    const axis2 = pl.jit(function axis2(t: pl.Tensor<[8, 4], pl.FP32>, i: pl.Tensor<[3, 1], pl.INT32>, out: pl.Out<pl.Tensor<[3, 4], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.gather(t, i, 2 as 0)); });
    });
    expect(caught(() => axis2.lower(randn([8, 4]), zeros([3, 1], "int32"), zeros([3, 4]))).message).toContain("pl.gather: axis must be 0 (rows) or 1 (columns), got 2");
    const boolIota = pl.jit(function boolIota(out: pl.Out<pl.Tensor<[4, 4], pl.BOOL>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.iota([4, 4], 0, pl.BOOL), [0, 0], out); });
    });
    expect(caught(() => boolIota.lower(zeros([4, 4], "bool"))).message).toContain("pl.iota: iota needs a numeric dtype, got bool");
    const badAxis = pl.jit(function badAxis(out: pl.Out<pl.Tensor<[4, 4], pl.INT32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.iota([4, 4], 2, pl.INT32), [0, 0], out); });
    });
    expect(caught(() => badAxis.lower(zeros([4, 4], "int32"))).message).toContain("pl.iota: axis must be an axis of the shape (0 to 1), got 2");
    const mixed = pl.jit(function mixed(t: pl.Tensor<[8, 4], pl.FP32>, i: pl.Tensor<[3, 1], pl.INT32>, out: pl.Out<pl.Tensor<[3, 4], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.gather(pl.load(t, [0, 0], [8, 4]), i as never), [0, 0], out); });
    });
    expect(caught(() => mixed.lower(randn([8, 4]), zeros([3, 1], "int32"), zeros([3, 4]))).message).toContain("pl.gather: the indices of gather must be a tile, got Tensor<[3, 1], int32>");
  });
});

describe("batchMatmul with aTrans / bTrans", () => {
  /** out[z] = op(a[z]) @ op(b[z]) in float64. */
  function ref(a: number[], b: number[], B: number, ar: number, ac: number, br: number, bc: number, aT: boolean, bT: boolean): number[] {
    const [m, k] = aT ? [ac, ar] : [ar, ac], n = bT ? br : bc;
    const out: number[] = [];
    for (let z = 0; z < B; z++) for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
      let t = 0;
      for (let q = 0; q < k; q++) t += a[z * ar * ac + (aT ? q * ac + i : i * ac + q)] * b[z * br * bc + (bT ? j * bc + q : q * bc + j)];
      out.push(t);
    }
    return out;
  }
  const close = (got: number[], want: number[]) => { let w = 0; want.forEach((v, i) => { w = Math.max(w, Math.abs(got[i] - v) / (1 + Math.abs(v))); }); return w; };
  for (const platform of PLATFORMS) {
    const cfg = cfgOf(platform);
    it(`${platform}: tensors (both transposed; b transposed) and tiles (a transposed), partial tiles on M, N, K`, () => {
      const a1 = randn([3, 37, 21], { seed: 1 }), b1 = randn([3, 45, 37], { seed: 2 }), o1 = zeros([3, 21, 45]);
      bmmTrans(a1, b1, o1, cfg);
      expect(close(f32(o1), ref(f32(a1), f32(b1), 3, 37, 21, 45, 37, true, true))).toBeLessThan(1e-5);
      const a2 = randn([2, 19, 33], { seed: 3 }), b2 = randn([2, 27, 33], { seed: 4 }), o2 = zeros([2, 19, 27]);
      bmmB(a2, b2, o2, cfg);
      expect(close(f32(o2), ref(f32(a2), f32(b2), 2, 19, 33, 27, 33, false, true))).toBeLessThan(1e-5);
      const a3 = randn([2, 8, 4], { seed: 5 }), b3 = randn([2, 8, 6], { seed: 6 }), o3 = zeros([2, 4, 6]);
      bmmTile(a3, b3, o3, cfg);
      expect(close(f32(o3), ref(f32(a3), f32(b3), 2, 8, 4, 8, 6, true, false))).toBeLessThan(1e-5);
    });
  }
  it("inner dimensions that differ after the transposes are a type error saying so", () => {
    const bad = pl.jit(function bad(a: pl.Tensor<[2, 4, 8], pl.FP32>, b: pl.Tensor<[2, 6, 4], pl.FP32>, out: pl.Out<pl.Tensor<[2, 8, 6], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.batchMatmul(a, b, { aTrans: true })); });
    });
    const e = caught(() => bad.lower(randn([2, 4, 8]), randn([2, 6, 4]), zeros([2, 8, 6])));
    expect(e.code).toBe("E_TYPE");
    expect(e.message).toContain("pl.batchMatmul: inner dimensions differ: 'a' is Tensor<[2, 4, 8], float32> (K = 4) but 'b' is Tensor<[2, 6, 4], float32> (K = 6)");
    expect(e.hint).toContain("after the transposes aTrans / bTrans ask for");
  });
});

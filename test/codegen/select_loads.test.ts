// pl.sel and the other selects of generated C++ load both operands unconditionally, then
// blend. g++ 12 at -O3 -march=native miscompiles a vectorized `m[i] != 0 ? a[i] : b[i]` loop
// over small tiles (the masked loads of the second and later vectors reuse the first
// vector's mask): a bool [4, 8] mask `i % 3 == 0` gave row 1 = [0, 0, -11, 0, 0, -14, 0, 0].
// Checked here on cpu and interp against the formula, at tile and tensor level, with masks
// loaded and made by cmp, on the shapes that showed it.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, tensor, zeros, type HostTensor } from "tspto";

const PLATFORMS = ["cpu", "interp"] as const;
const cfg = (platform: string) => new RunConfig({ platform });

const selTile = pl.jit(function selTile(m: pl.Tensor, a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, rows: number, cols: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const tm = pl.load(m, [0, 0], [rows, cols]);
    const ta = pl.load(a, [0, 0], [rows, cols]);
    const tb = pl.load(b, [0, 0], [rows, cols]);
    pl.store(pl.sel(tm, ta, tb), [0, 0], out);
  });
  return out;
});

const selTensor = pl.jit(function selTensor(m: pl.Tensor, a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, _rows: number, _cols: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.sel(m, a, b));
  });
  return out;
});

/** The mask made in the kernel: a < b, then a or b (the loaded operands selected). */
const cmpSelTile = pl.jit(function cmpSelTile(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, rows: number, cols: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [rows, cols]);
    const tb = pl.load(b, [0, 0], [rows, cols]);
    pl.store(pl.sel(pl.cmp(ta, tb, "lt"), ta, tb), [0, 0], out);
  });
  return out;
});

const cmpSelTensor = pl.jit(function cmpSelTensor(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>, _rows: number, _cols: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.sel(pl.cmp(a, b, "lt"), a, b));
  });
  return out;
});

function issueCase(rows: number, cols: number): { m: HostTensor; a: HostTensor; b: HostTensor; want: number[] } {
  const n = rows * cols;
  const mv = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 1 : 0));
  const av = Array.from({ length: n }, (_, i) => i + 1);
  const bv = Array.from({ length: n }, (_, i) => -(i + 1));
  return {
    m: tensor(mv, { shape: [rows, cols], dtype: "bool" }),
    a: tensor(av, { shape: [rows, cols] }),
    b: tensor(bv, { shape: [rows, cols] }),
    want: mv.map((x, i) => (x ? av[i] : bv[i])),
  };
}

/** a and b interleaved so that a < b holds on an irregular pattern of elements. */
function cmpCase(rows: number, cols: number): { a: HostTensor; b: HostTensor; want: number[] } {
  const n = rows * cols;
  const av = Array.from({ length: n }, (_, i) => ((i * 7) % 11) - 5);
  const bv = Array.from({ length: n }, (_, i) => ((i * 5) % 13) - 6);
  return { a: tensor(av, { shape: [rows, cols] }), b: tensor(bv, { shape: [rows, cols] }), want: av.map((x, i) => (x < bv[i] ? x : bv[i])) };
}

describe("sel loads both operands (no conditional loads for the C++ compiler to get wrong)", () => {
  for (const platform of PLATFORMS) {
    it(`${platform}: the issue's bool [4, 8] mask, tile and tensor level`, () => {
      const { m, a, b, want } = issueCase(4, 8);
      expect(want.slice(8, 16)).toEqual([-9, 10, -11, -12, 13, -14, -15, 16]);
      for (const k of [selTile, selTensor]) {
        const out = zeros([4, 8]);
        k(m, a, b, out, 4, 8, cfg(platform));
        expect(Array.from(out.data as Float32Array), k.name).toEqual(want);
      }
    });

    it(`${platform}: loaded and cmp-made masks on [4, 15], [12, 5], [8, 5], [6, 10], [4, 8], [3, 33]`, () => {
      for (const [r, c] of [[4, 15], [12, 5], [8, 5], [6, 10], [4, 8], [3, 33]]) {
        const s = issueCase(r, c);
        for (const k of [selTile, selTensor]) {
          const out = zeros([r, c]);
          k(s.m, s.a, s.b, out, r, c, cfg(platform));
          expect(Array.from(out.data as Float32Array), `${k.name} [${r}, ${c}]`).toEqual(s.want);
        }
        const t = cmpCase(r, c);
        for (const k of [cmpSelTile, cmpSelTensor]) {
          const out = zeros([r, c]);
          k(t.a, t.b, out, r, c, cfg(platform));
          expect(Array.from(out.data as Float32Array), `${k.name} [${r}, ${c}]`).toEqual(t.want);
        }
      }
    });
  }
});

// pl.sel and the other selects of generated C++ load both operands unconditionally, then
// blend. g++ 12 at -O3 -march=native miscompiles a vectorized `m[i] != 0 ? a[i] : b[i]` loop
// over small tiles (the masked loads of the second and later vectors reuse the first
// vector's mask): a bool [4, 8] mask `i % 3 == 0` gave row 1 = [0, 0, -11, 0, 0, -14, 0, 0].
// Checked here on cpu and interp against the formula, at tile and tensor level, with masks
// loaded and made by cmp, on the shapes that showed it.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, tensor, zeros, type HostTensor } from "tspto";
import { generateCpp } from "../../src/codegen/index.js";

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

    it(`${platform}: loaded and cmp-made masks on [4, 15], [12, 5], [8, 5], [6, 10], [4, 8], [3, 33]`, async () => {
      const shapes = [[4, 15], [12, 5], [8, 5], [6, 10], [4, 8], [3, 33]];
      // the programs built off the event loop first (seconds of g++ together)
      await Promise.all(shapes.flatMap(([r, c]) => [
        ...[selTile, selTensor].map((k) => k.compileAsync(zeros([r, c], "bool"), zeros([r, c]), zeros([r, c]), zeros([r, c]), r, c, cfg(platform))),
        ...[cmpSelTile, cmpSelTensor].map((k) => k.compileAsync(zeros([r, c]), zeros([r, c]), zeros([r, c]), r, c, cfg(platform))),
      ]));
      for (const [r, c] of shapes) {
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

// ------------------------------------------------------------------ no conditional loads anywhere
// The mechanism behind the fix, checked on the generated source of every select-making op:
// no conditional expression (`c ? a : b`) has an arm that reads memory (`[`), which is what
// makes the vectorizer emit masked loads. Selects go through tspto_blend (both operands
// evaluated first); regions that must not be read are split into loops or statement branches.

/** The `?:` expressions of generated kernel code whose arms index memory (string literals and comments removed). */
export function conditionalLoads(source: string): string[] {
  const start = source.indexOf('extern "C" void k_');
  const code = source.slice(start < 0 ? 0 : start).replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\/\/[^\n]*/g, "");
  const found: string[] = [];
  for (let q = code.indexOf("?"); q >= 0; q = code.indexOf("?", q + 1)) {
    // the arms: from '?' to the end of the enclosing expression (a ';', ',' or unmatched ')' / '}' at depth 0)
    let depth = 0, k = q + 1;
    for (; k < code.length; k++) {
      const ch = code[k];
      if (ch === "(" || ch === "[" || ch === "{") depth++;
      else if (ch === ")" || ch === "]" || ch === "}") { if (depth === 0) break; depth--; }
      else if ((ch === ";" || ch === ",") && depth === 0) break;
    }
    const arms = code.slice(q + 1, k);
    if (arms.includes("[")) found.push(code.slice(Math.max(0, code.lastIndexOf("\n", q) + 1), k + 1).trim());
  }
  return found;
}

const selectsEverywhere = pl.jit(function selectsEverywhere(a: pl.Tensor, b: pl.Tensor, s: pl.Tensor, m: pl.Tensor, i: pl.Tensor, w: pl.Tensor,
  o1: pl.Out<pl.Tensor>, o2: pl.Out<pl.Tensor>, o3: pl.Out<pl.Tensor>, o4: pl.Out<pl.Tensor>, o5: pl.Out<pl.Tensor>, o6: pl.Out<pl.Tensor>, o7: pl.Out<pl.Tensor>, v: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [8, 24]);
    const tb = pl.load(b, [0, 0], [8, 24]);
    pl.store(pl.prelu(ta, pl.load(s, [0, 0], [8, 1])), [0, 0], o1);
    pl.store(pl.lrelu(ta, 0.25), [0, 0], o2);
    pl.store(pl.sel(pl.load(m, [0, 0], [8, 24]), ta, tb), [0, 0], o3);
    pl.store(pl.fillpad(pl.load(a, [0, 0], [8, 24], { validShape: [v, 19] }), "min"), [0, 0], o4);
    pl.store(pl.div(pl.load(i, [0, 0], [8, 24]), 2.5), [0, 0], o5);
    pl.store(pl.relu(pl.maximum(pl.minimum(ta, tb), pl.neg(ta))), [0, 0], o6);
  });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(o7, pl.add(pl.matmul(a, w), pl.sel(pl.cmp(a, 0.0, "gt"), a, b))); });
  return o1;
});

describe("generated C++ reads no operand in one arm of a conditional expression", () => {
  it("the lint finds one (it is not vacuous)", () => {
    const found = conditionalLoads('extern "C" void k_x(const int64_t* args) { o[i] = m[i] != 0 ? a[i] : b[i]; x = c ? 1 : 2; y = f(c ? 1 : 2, q[i]); }');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/o\[i\] = m\[i\] != 0 \? a\[i\] : b\[i\];$/);
  });

  it("prelu, lrelu, sel, fillpad, integer division by a float scalar, max/min/relu, matmul with an epilogue: none", () => {
    const f = (shape: number[], d = "float32") => zeros(shape, d as "float32");
    const p = selectsEverywhere.lower(f([8, 24]), f([8, 24]), f([8, 1]), f([8, 24], "bool"), f([8, 24], "int32"), f([24, 24]),
      f([8, 24]), f([8, 24]), f([8, 24]), f([8, 24]), f([8, 24], "int32"), f([8, 24]), f([8, 24]), 5);
    const src = generateCpp(p).source;
    for (const op of ["tspto_blend<float>", "tspto_blend<double>"]) expect(src).toContain(op);
    expect(conditionalLoads(src)).toEqual([]);
  });
});

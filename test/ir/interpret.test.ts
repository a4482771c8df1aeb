// The reference interpreter's loop shortcut (src/ir/interpret.ts guardedBound): a loop whose
// whole body is `if (j + x < b)` stops at b - x instead of testing every trip. Checked on the
// shapes that make it (the row-by-row tail of a dynamic axis) and on hand-written loops where
// it must and must not apply, against cpu and an independent formula.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, assertClose } from "tspto";

const interp = new RunConfig({ platform: "interp" });
const cpu = new RunConfig({ platform: "cpu" });

const expRows = pl.jit(function expRows(x: pl.Tensor<["S", "S"], pl.FP32>, out: pl.Out<pl.Tensor<["S", "S"], pl.FP32>>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(pl.exp(x), pl.rowSum(x))); });
  return out;
});

/** out row j (j < 8): 1 + j + x where the guard holds; the guard's forms: j + x < b, x + j < b, j < b. */
const guarded = pl.jit(function guarded(out: pl.Out<pl.Tensor>, x: number, b: number, form: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const j of pl.range(0, 8, 1)) {
      if (form === 0) {
        for (const k of pl.range(j, 8, 1)) {
          if (k + x < b) pl.store(pl.add(pl.full([1, 4], pl.FP32, 1.0), k + x), [k, 0], out);
        }
      } else if (form === 1) {
        for (const k of pl.range(j, 8, 1)) {
          if (x + k < b) pl.store(pl.add(pl.full([1, 4], pl.FP32, 1.0), k + x), [k, 0], out);
        }
      } else if (form === 2) {
        for (const k of pl.range(j, 8, 1)) {
          if (k < b) pl.store(pl.add(pl.full([1, 4], pl.FP32, 1.0), k + x), [k, 0], out);
        }
      } else {
        // not the shortcut's shape: an else arm runs on the trips the guard fails
        for (const k of pl.range(j, 8, 1)) {
          if (k + x < b) pl.store(pl.add(pl.full([1, 4], pl.FP32, 1.0), k + x), [k, 0], out);
          else pl.store(pl.full([1, 4], pl.FP32, -1.0), [k, 0], out);
        }
      }
    }
  });
  return out;
});

function want(x: number, b: number, form: number): number[] {
  const v: number[] = [];
  for (let k = 0; k < 8; k++) {
    const ok = form === 2 ? k < b : k + x < b;
    for (let c = 0; c < 4; c++) v.push(ok ? 1 + k + x : form === 3 ? -1 : 0);
  }
  return v;
}

describe("interp: loops whose body is one guard", () => {
  it("dynamic [S, S] tails (row by row over a whole dynamic-width tile) match cpu at S = 1, 45, 200", () => {
    for (const s of [1, 45, 200]) {
      const x = randn([s, s], { seed: s });
      const a = zeros([s, s]), b = zeros([s, s]);
      expRows(x, a, interp);
      expRows(x, b, cpu);
      assertClose(a, b, { rtol: 1e-5, atol: 1e-5 });
      const xd = x.toArray(), ad = a.toArray();
      for (const i of [0, s - 1]) {
        let sum = 0;
        for (let j = 0; j < s; j++) sum += xd[i * s + j];
        expect(ad[i * s + s - 1]).toBeCloseTo(Math.exp(xd[i * s + s - 1]) * sum, 3);
      }
    }
  });

  it("each guard form stops where the guard fails, and a loop with an else arm is not cut short", () => {
    for (const form of [0, 1, 2, 3]) for (const [x, b] of [[0, 5], [2, 5], [3, 0], [0, 20], [-2, 3]]) {
      const o = zeros([8, 4]);
      guarded(o, x, b, form, interp);
      expect(Array.from(o.toArray()), `form ${form}, x ${x}, b ${b}`).toEqual(want(x, b, form));
    }
  });
});

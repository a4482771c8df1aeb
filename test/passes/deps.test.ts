// DeriveDeps: each task's accesses carry the window of its tensor arguments it reads and
// writes, as affine bounds over the call's scalar arguments (src/passes/deps.ts); windows
// that cannot be bounded fall back to the whole tensor.
import { describe, expect, it } from "vitest";
import { pl, randn, zeros } from "tspto";
import { forEachExpr, type Call, type Program } from "../../src/ir/index.js";
import type { AccessAttr } from "../../src/passes/index.js";

const R = 256, C = 128, B = 64;

const twoScopes = pl.jit(function twoScopes(a: pl.Tensor, mid: pl.Out<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, R, B)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r, 0], [B, C]);
      pl.store(pl.mul(t, 2), [r, 0], mid);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(mid, [r, 0], [B, C]);
      pl.store(pl.add(t, 1), [r, 0], out);
    });
  }
  return out;
});

/** A kernel looping over column blocks of one row band: its window is the band's hull. */
const innerLoop = pl.jit(function innerLoop(a: pl.Tensor, out: pl.InOut<pl.Tensor>) {
  for (const r of pl.range(0, R, B)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      for (const c of pl.range(0, C, 32)) {
        const t = pl.load(a, [r + 1, c], [B, 32]);
        const u = pl.load(out, [r, c], [B, 32]);
        pl.store(pl.add(u, t), [r, c], out);
      }
    });
  }
  return out;
});

/** A window offset the analysis cannot bound (a product of two variables): whole tensors. */
const nonAffine = pl.jit(function nonAffine(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  for (const r of pl.range(0, 4)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const t = pl.load(a, [r * r * B, 0], [B, C]);
      pl.store(t, [r * B, 0], out);
    });
  }
  return out;
});

function calls(p: Program): Call[] {
  const out: Call[] = [];
  forEachExpr(p.entryFunction.body, (e) => { if (e.kind === "call" && e.op === "call") out.push(e); });
  return out;
}
const accessesOf = (c: Call) => c.attrs.accesses as unknown as AccessAttr[];

describe("DeriveDeps windows", () => {
  it("two pl.at scopes over 64-row windows: each access is the window [r, 0] + [64, 128]", () => {
    const p = twoScopes.lower(randn([R, C]), zeros([R, C]), zeros([R, C]));
    const cs = calls(p);
    expect(cs).toHaveLength(2);
    for (const c of cs) {
      const acc = accessesOf(c);
      expect(acc.map((x) => x.mode)).toEqual(["read", "write"]);
      // the loop variable r is the call's scalar argument 2
      const ri = c.args.findIndex((a) => a.kind === "var" && a.name === "r");
      expect(ri).toBeGreaterThanOrEqual(0);
      for (const x of acc) {
        expect(x.window).toEqual({ lo: [[{ c: 0, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
      }
    }
  });

  it("offsets over the kernel's own loop are bounded over its range; reads and writes of one tensor are separate windows", () => {
    const p = innerLoop.lower(randn([R + 1, C]), zeros([R, C]));
    const [c] = calls(p);
    const ri = c.args.findIndex((a) => a.kind === "var" && a.name === "r");
    const acc = accessesOf(c);
    expect(acc.map((x) => [x.arg, x.mode])).toEqual([[0, "read"], [1, "read"], [1, "write"]]);
    // a: rows r+1 .. r+65 (exclusive), columns 0 .. 96+32
    expect(acc[0].window).toEqual({ lo: [[{ c: 1, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B + 1, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
    expect(acc[2].window).toEqual({ lo: [[{ c: 0, t: [[ri, 1]] }], [{ c: 0, t: [] }]], hi: [[{ c: B, t: [[ri, 1]] }], [{ c: C, t: [] }]] });
  });

  it("a non-affine offset gives a whole-tensor access", () => {
    const p = nonAffine.lower(randn([16 * B, C]), zeros([4 * B, C]));
    const acc = accessesOf(calls(p)[0]);
    expect(acc[0]).toEqual({ arg: 0, mode: "read" });
    // the store's offset r * 64 is affine: still a window
    expect(acc[1].mode).toBe("write");
    expect(acc[1].window).toBeDefined();
  });
});

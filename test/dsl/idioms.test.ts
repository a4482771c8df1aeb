// PyPTO's idioms: `y = kernel(x, w, y)` rebinding a tensor parameter in orchestration; an Out
// parameter rebound to a computed value warns (OutParamWriteDropped) with the fix; an inline
// helper called inside pl.at with a call expression as its argument.
import { afterEach, describe, expect, it, vi } from "vitest";
import { pl, RunConfig, randn, zeros } from "tspto";

const PLATFORMS = ["cpu", "interp"] as const;
const f = Math.fround;

const matmulK = pl.jit.incore(function matmulK(x: pl.Tensor, w: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.store(pl.matmul(pl.load(x, [0, 0], [16, 16]), pl.load(w, [0, 0], [16, 16])), [0, 0], out);
  return out;
});
const reluK = pl.jit.incore(function reluK(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.store(pl.relu(pl.load(x, [0, 0], [16, 16])), [0, 0], out);
  return out;
});
/** PyPTO's fused_linear_relu orchestration, written as PyPTO writes it: y is rebound twice. */
const fusedLinearRelu = pl.jit(function fusedLinearRelu(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
  y = matmulK(x, w, y);
  y = reluK(y, y);
  return y;
});

const dropped = pl.jit(function dropped(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    out = pl.add(a, b); // MARK:dropped
  });
  return out;
});

const once = pl.jit.inline(function once(t: pl.AnyTile) {
  return pl.mul(t, 2.0);
});
const inlineArg = pl.jit(function inlineArg(x: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(once(pl.add(pl.load(x, [0, 0], [8, 8]), 1.0)), [0, 0], out);
  });
  return out;
});

afterEach(() => vi.restoreAllMocks());

describe("PyPTO idioms", () => {
  for (const platform of PLATFORMS) {
    it(`y = kernel(x, w, y) rebinds a parameter in orchestration (${platform})`, () => {
      const x = randn([16, 16], { seed: 1 }), w = randn([16, 16], { seed: 2 });
      const y = zeros([16, 16]);
      fusedLinearRelu(x, w, y, new RunConfig({ platform, fpContract: "off" })); // the reference rounds products and sums separately
      const a = x.toArray(), b = w.toArray();
      const want: number[] = [];
      for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) { let s = 0; for (let k = 0; k < 16; k++) s = f(s + f(a[i * 16 + k] * b[k * 16 + j])); want.push(Math.max(0, s)); }
      expect(y.toArray()).toEqual(want);
    });
    it(`an inline helper called with a call expression inside pl.at (${platform})`, () => {
      const x = randn([8, 8], { seed: 3 });
      const out = zeros([8, 8]);
      inlineArg(x, out, new RunConfig({ platform }));
      expect(out.toArray()).toEqual(x.toArray().map((v) => f(f(v + 1) * 2)));
    });
  }
  it("out = pl.add(a, b) on an Out parameter warns OutParamWriteDropped with the fix", () => {
    const spy = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    dropped.lower(randn([8, 8], { seed: 4 }), randn([8, 8], { seed: 5 }), zeros([8, 8]));
    const call = spy.mock.calls.find((c) => (c[1] as { code?: string } | undefined)?.code === "OutParamWriteDropped");
    expect(call, "an OutParamWriteDropped warning").toBeDefined();
    const msg = String(call![0]);
    expect(msg).toMatch(/idioms\.test\.ts:\d+:\d+: assigning to Out parameter 'out' of kernel 'dropped' only rebinds the name; the tensor is not written/);
    expect(msg).toContain("Write it with pl.assign(out, pl.add(a, b))");
  });
});

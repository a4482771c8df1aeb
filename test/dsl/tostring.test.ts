// Kernels without their source file (issue 23: a bundle or a page without the build plugin):
// the front end parses fn.toString() — types gone, so directions are inferred and shapes come
// from the call; a bundler's renaming of the `pl` import is recognised; errors say that the
// build plugin keeps the original source and gives better ones.
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, assertClose, TsptoError } from "tspto";
import { setNextSite } from "../../src/dsl/index.js";

const NOWHERE = { file: "/nonexistent/bundle/assets/index-3f2a.js", line: 1, col: 1 };
const interp = new RunConfig({ platform: "interp" });

describe("a kernel parsed from fn.toString()", () => {
  it("runs with types gone: the output's direction is inferred, shapes come from the call, a renamed pl is pl", () => {
    const US = pl; // what a minifier makes of `pl`
    setNextSite(NOWHERE);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const k = pl.jit(function (x: any, out: any) {
      US.at(US.Level.CORE_GROUP, () => {
        const e = US.exp(US.sub(x, US.rowMax(x)));
        US.assign(out, US.div(e, US.rowSum(e)));
      });
    });
    const x = randn([4, 16], { seed: 3 });
    const out = zeros([4, 16]);
    k(x, out, interp);
    const d = x.data as Float32Array, want = new Float32Array(64);
    for (let r = 0; r < 4; r++) {
      let m = -Infinity, s = 0;
      for (let c = 0; c < 16; c++) m = Math.max(m, d[r * 16 + c]);
      for (let c = 0; c < 16; c++) s += Math.exp(d[r * 16 + c] - m);
      for (let c = 0; c < 16; c++) want[r * 16 + c] = Math.exp(d[r * 16 + c] - m) / s;
    }
    assertClose(out, { data: want, shape: [4, 16] }, { rtol: 1e-5, atol: 1e-6 });
  });

  it("its errors point into the toString text and say the build plugin gives better ones", () => {
    setNextSite(NOWHERE);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const k = pl.jit(function (x: any, out: any) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, (globalThis as any).notAnOp(x)); });
    });
    let err: unknown;
    try { k(randn([2, 8], { seed: 1 }), zeros([2, 8]), interp); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoError);
    const msg = String((err as Error).message);
    expect(msg).toContain("<fn.toString>:");
    expect(msg).toContain("parsed from fn.toString()");
    expect(msg).toContain("the tspto build plugin (tspto/vite, tspto/rollup or tspto/esbuild) keeps the original source and gives better errors");
  });
});

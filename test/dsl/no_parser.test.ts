// A page built by a tspto build plugin without the run-time parser (the plugin replaces the
// browser build's `typescript` import with a stub): a kernel that has to be parsed fails with
// E_NO_PARSER saying how to precompile it or ship the parser. And dfxSwimlane before a recorded
// launch is E_DFX.
import { describe, expect, it, vi } from "vitest";
import { RunConfig, dfxSwimlane, pl, randn, zeros, TsptoError } from "tspto";

vi.mock("typescript", () => ({ __tsptoNoParser: true, default: { __tsptoNoParser: true } }));

describe("the browser build's parser stub", () => {
  it("E_NO_PARSER names the plugin's two ways out", async () => {
    const { ts, typescriptLoaded } = await import("../../src/dsl/typescript.browser.js");
    expect(typescriptLoaded()).toBe(false);
    let err: unknown;
    try { void ts.createSourceFile; } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoError);
    const e = err as TsptoError;
    expect(e.code).toBe("E_NO_PARSER");
    expect(e.message).toContain("not precompiled by the tspto build plugin");
    expect(e.message).toContain("pl.Tensor<[M, N], pl.FP32>");
    expect(e.message).toContain("{ parser: true }");
  });
});

describe("dfxSwimlane", () => {
  it("E_DFX before a launch recorded one; the trace and its HTML after", () => {
    const k = pl.jit(function twice(x: pl.Tensor<[4, 8], pl.FP32>, out: pl.Out<pl.Tensor<[4, 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, 2)); });
    });
    const x = randn([4, 8], { seed: 1 }), out = zeros([4, 8]);
    const cfg = new RunConfig({ platform: "cpu" });
    const compiled = k.compile(x, out, cfg);
    let err: unknown;
    try { dfxSwimlane({ outputDir: `${compiled.outputDir}-none` }); } catch (e) { err = e; }
    expect((err as TsptoError).code).toBe("E_DFX");
    expect((err as Error).message).toContain("enableChipSwimlane: 1");
    k(x, out, new RunConfig({ platform: "cpu", enableChipSwimlane: 1 }));
    const lane = dfxSwimlane(compiled, "twice");
    expect(lane.model.tracks.some((t) => t.tasks.length > 0)).toBe(true);
    expect(lane.html).toContain("<html");
  });
});

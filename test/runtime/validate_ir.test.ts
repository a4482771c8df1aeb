// CompiledProgram.validateIr: runs the program after every pass through the interpreter and
// reports the first pass whose result departs from the expected outputs.
import { describe, it, expect } from "vitest";
import { pl, ir, randn, zeros } from "tspto";
import { mapStmtExprs, mkCall, type Func, type Program } from "../../src/ir/index.js";
import { DEFAULT_PASSES, type Pass } from "../../src/passes/index.js";

const N = 16;
const k = pl.jit(function k(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [N, N]), pl.load(b, [0, 0], [N, N])), [0, 0], out);
  });
  return out;
});

/** A deliberately wrong pass: every add becomes a sub. */
const brokenPass: Pass = {
  name: "BrokenAddToSub",
  run(p: Program) {
    return p.withFunctions(p.functions.map((f) => Object.freeze({
      ...f,
      body: mapStmtExprs(f.body, (e) => (e.kind === "call" && e.op.endsWith(".add") && e.op !== "scalar.add" ? mkCall(e.op.replace(".add", ".sub"), e.args, e.attrs, e.type, e.span) : undefined)),
    }) as Func));
  },
};

describe("validateIr", () => {
  const a = randn([N, N], { seed: 1 }), b = randn([N, N], { seed: 2 });
  const expected = [a.add(b)];

  it("finds no bad pass in the default pipeline", () => {
    const c = ir.compile(k.lower(a, b, zeros([N, N])), { platform: "cpu", dumpPasses: true });
    const r = c.validateIr([a, b, zeros([N, N])], expected, { rtol: 1e-6, atol: 1e-6 });
    expect(r.firstBadPass).toBeNull();
    expect(r.passes.map((p) => p.pass)).toEqual(["Input", ...DEFAULT_PASSES.map((p) => p.name)]);
  });

  it("names an injected broken pass as the first to depart", () => {
    const passes = [...DEFAULT_PASSES.slice(0, 3), brokenPass, ...DEFAULT_PASSES.slice(3)];
    const c = ir.compile(rawProgram(), { platform: "interp", dumpPasses: true, passes });
    const r = c.validateIr([a, b, zeros([N, N])], expected, { rtol: 1e-6, atol: 1e-6 });
    expect(r.firstBadPass).toBe("BrokenAddToSub");
    expect(r.passes.find((p) => p.pass === "Simplify")!.ok).toBe(true);
    expect(r.passes.find((p) => p.pass === "BrokenAddToSub")!.message).toMatch(/assertClose: \d+ of 256 elements differ/);
  });

  it("needs pass dumps", () => {
    const c = ir.compile(k.lower(a, b, zeros([N, N])), { platform: "interp", outputDir: `${process.env.TMPDIR ?? "/tmp"}/tspto-nodump-${process.pid}` });
    expect(() => c.validateIr([a, b, zeros([N, N])], expected)).toThrow(/no pass dumps\n  hint: compile with ir\.compile\(program, \{ dumpPasses: true \}\)/);
  });
});

/** The kernel parsed but not lowered (ir.parse of its source form). */
function rawProgram(): Program {
  return ir.parse(`
import * as pl from "tspto/language";
const k_incore = pl.jit.incore(function k_incore(a: pl.Tensor<[16, 16], pl.FP32>, b: pl.Tensor<[16, 16], pl.FP32>, out: pl.Out<pl.Tensor<[16, 16], pl.FP32>>): void {
  pl.store(pl.add(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16])), [0, 0], out);
});
const k = pl.jit(function k(a: pl.Tensor<[16, 16], pl.FP32>, b: pl.Tensor<[16, 16], pl.FP32>, out: pl.Out<pl.Tensor<[16, 16], pl.FP32>>): pl.Tensor<[16, 16], pl.FP32> {
  k_incore(a, b, out);
  return out;
});
`);
}

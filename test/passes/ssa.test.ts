// The SSA pass on hand-built pre-SSA programs: the interpreter (which runs both forms) must
// give the same results before and after, and the result must verify as SSA.
import { describe, it, expect } from "vitest";
import {
  Program, mkVar, mkConst, mkCall, mkAssign, mkFor, mkWhile, mkIf, mkBreak, mkContinue, mkReturn, mkFunc, mkEval,
  getOp, inferCall, verifyProgram, INDEX, scalarT, type Expr, type Stmt, forEachStmt,
} from "../../src/ir/index.js";
import { ssaPass, simplifyPass, DEFAULT_SCRATCH_CAPACITY } from "../../src/passes/index.js";
import { interpret } from "../../src/ir/interpret.js";

const ctx = { scratchCapacity: DEFAULT_SCRATCH_CAPACITY, platform: "cpu" };
const op = (name: string, ...args: Expr[]) => mkCall(name, args, {}, inferCall(getOp(name), args, {}, { file: "t", line: 1, col: 1 }));
const c = (v: number) => mkConst(v);

/** sum over i in [0, n) of i, skipping multiples of 3, stopping once sum > limit; also counts iterations. */
function loopProgram(): Program {
  const n = mkVar("n", INDEX), limit = mkVar("limit", INDEX);
  const sum = mkVar("sum", INDEX), count = mkVar("count", INDEX), i = mkVar("i", INDEX);
  const body: Stmt[] = [
    mkAssign([count], op("scalar.add", count, c(1))),
    mkIf({ cond: op("scalar.eq", op("scalar.mod", i, c(3)), c(0)), then: [mkContinue()], else: [], results: [] }),
    mkAssign([sum], op("scalar.add", sum, i)),
    mkIf({ cond: op("scalar.gt", sum, limit), then: [mkBreak()], else: [], results: [] }),
  ];
  const k = mkVar("k", INDEX);
  const fn = mkFunc({
    name: "f", fnKind: "orchestration", params: [{ var: n, dir: "in" }, { var: limit, dir: "in" }], returnTypes: [INDEX, INDEX, INDEX],
    body: [
      mkAssign([sum], c(0)), mkAssign([count], c(0)),
      mkFor({ loopVar: i, start: c(0), stop: n, step: c(1), iterArgs: [], inits: [], body, results: [] }),
      // while (k < 100) k = k * 2 + 1
      mkAssign([k], c(1)),
      mkWhile({ iterArgs: [], inits: [], cond: op("scalar.lt", k, c(100)), body: [mkAssign([k], op("scalar.add", op("scalar.mul", k, c(2)), c(1)))], results: [] }),
      mkReturn([sum, count, k]),
    ],
  });
  return new Program("f", "f", [fn]);
}

function reference(n: number, limit: number): number[] {
  let sum = 0, count = 0;
  for (let i = 0; i < n; i++) { count++; if (i % 3 === 0) continue; sum += i; if (sum > limit) break; }
  let k = 1; while (k < 100) k = k * 2 + 1;
  return [sum, count, k];
}

describe("SSA pass", () => {
  it("keeps loop semantics with continue/break and while", () => {
    const p = loopProgram();
    const q = ssaPass.run(p, ctx);
    verifyProgram(q, { ssa: true });
    for (const [n, limit] of [[10, 1000], [50, 40], [0, 5], [7, 3]]) {
      expect(interpret(p, [n, limit])).toEqual(reference(n, limit));
      expect(interpret(q, [n, limit])).toEqual(reference(n, limit));
    }
  });

  it("turns rebound variables into iterArgs, yields and results", () => {
    const q = ssaPass.run(loopProgram(), ctx);
    const loops: Stmt[] = [];
    forEachStmt(q.entryFunction.body, (s) => { if (s.kind === "for" || s.kind === "while") loops.push(s); });
    expect(loops.map((l) => (l.kind === "for" || l.kind === "while" ? l.iterArgs.map((v) => v.name) : []))).toEqual([["sum", "count"], ["k"]]);
    const text = q.asText();
    expect(text).toContain("pl.forRange(0, n, 1, [");
    expect(text).toContain("pl.break(");
    expect(text).toContain("pl.continue(");
    expect(text).toContain("pl.whileLoop(");
  });

  it("is the identity on a program already in SSA form", () => {
    const q = ssaPass.run(loopProgram(), ctx);
    const r = ssaPass.run(q, ctx);
    expect(r.structurallyEqual(q)).toBe(true);
  });

  it("merges if-branches through results", () => {
    const x = mkVar("x", INDEX), flag = mkVar("flag", scalarT("bool"));
    const fn = mkFunc({
      name: "g", fnKind: "orchestration", params: [{ var: flag, dir: "in" }], returnTypes: [INDEX],
      body: [mkAssign([x], c(1)), mkIf({ cond: flag, then: [mkAssign([x], c(5))], else: [mkAssign([x], op("scalar.add", x, c(10)))], results: [] }), mkReturn([x])],
    });
    const p = new Program("g", "g", [fn]);
    const q = ssaPass.run(p, ctx);
    verifyProgram(q, { ssa: true });
    expect(interpret(q, [true])).toEqual([5]);
    expect(interpret(q, [false])).toEqual([11]);
    // simplify folds a constant condition away
    const k = mkFunc({ ...fn, name: "g", params: [], body: [mkAssign([x], c(1)), mkIf({ cond: mkConst(false), then: [mkAssign([x], c(5))], else: [mkAssign([x], op("scalar.add", x, c(10)))], results: [] }), mkReturn([x])] });
    const s = simplifyPass.run(ssaPass.run(new Program("g", "g", [k]), ctx), ctx);
    expect(s.entryFunction.body.some((st) => st.kind === "if")).toBe(false);
    expect(interpret(s, [])).toEqual([11]);
    void mkEval;
  });
});

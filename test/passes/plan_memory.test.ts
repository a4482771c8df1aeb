// PlanMemory's coalescing of loop-carried tiles (src/passes/plan_memory.ts): a K loop
// `acc = matmulAcc(acc, a, b)` gets one address for the initial value, the iterArg, the
// yielded matmulAcc and the loop result (no copies), and nothing is coalesced where a value
// is still needed: the old accumulator read after the matmulAcc, an initial value used after
// the loop, one initial value for two iterArgs, a yielded value from an op that is not in place.
import { describe, expect, it } from "vitest";
import { INDEX, Program, exprType, mkAssign, mkEval, mkFor, mkFunc, mkVar, mkYield, type Expr, type Func, type Stmt, type TileType, type Var } from "../../src/ir/index.js";
import { IN_PLACE, memoryPlanPass } from "../../src/passes/plan_memory.js";
import { c, call, load, tensorVar } from "../codegen/helpers.js";

const N = 16;
const let_ = (stmts: Stmt[], name: string, value: Expr): Var => { const v = mkVar(name, exprType(value)); stmts.push(mkAssign([v], value)); return v; };

/** Plans one kernel built by `body` and returns the planned address of every named tile. */
function plan(body: (stmts: Stmt[], a: Var, b: Var, out: Var) => void): Map<string, number> {
  const a = tensorVar("a", [N, 4 * N]), b = tensorVar("b", [4 * N, N]), out = tensorVar("out", [N, N]);
  const stmts: Stmt[] = [];
  body(stmts, a, b, out);
  const k: Func = mkFunc({ name: "k", fnKind: "incore", params: [{ var: a, dir: "in" }, { var: b, dir: "in" }, { var: out, dir: "out" }], returnTypes: [], body: stmts });
  const p = memoryPlanPass.run(new Program("p", "k", [k]), { scratchCapacity: 1 << 20 });
  const addrs = new Map<string, number>();
  const visit = (ss: readonly Stmt[]) => {
    for (const s of ss) {
      if (s.kind === "assign") for (const t of s.targets) if (t.type.kind === "tile") addrs.set(t.name, (t.type as TileType).addr!);
      if (s.kind === "for") {
        s.iterArgs.forEach((v) => addrs.set(v.name, (v.type as TileType).addr!));
        s.results.forEach((v) => addrs.set(v.name, (v.type as TileType).addr!));
        visit(s.body);
      }
    }
  };
  visit(p.functions[0].body);
  return addrs;
}

/**
 * acc0 = matmul(a[:, 0:N], b[0:N, :]); for k in 1..3: y = matmulAcc(acc, a[:, k], b[k, :]);
 * `extra` may add statements after y; yields `yielded(y, acc)`; then stores res (+ `after`).
 */
function kLoop(opts: { extra?: (s: Stmt[], y: Var, acc: Var) => void; yielded?: (s: Stmt[], y: Var, acc: Var) => Var; after?: (s: Stmt[], res: Var, acc0: Var) => Var } = {}) {
  return plan((s, a, b, out) => {
    const a0 = let_(s, "a0", load(a, [c(0), c(0)], [N, N]));
    const b0 = let_(s, "b0", load(b, [c(0), c(0)], [N, N]));
    const acc0 = let_(s, "acc0", call("tile.matmul", [a0, b0]));
    const i = mkVar("i", INDEX);
    const accT = exprType(call("tile.matmul", [a0, b0]));
    const acc = mkVar("acc", accT), res = mkVar("res", accT);
    const body: Stmt[] = [];
    const ak = let_(body, "ak", load(a, [c(0), call("scalar.mul", [i, c(N)])], [N, N]));
    const bk = let_(body, "bk", load(b, [call("scalar.mul", [i, c(N)]), c(0)], [N, N]));
    const y = let_(body, "y", call("tile.matmulAcc", [acc, ak, bk]));
    opts.extra?.(body, y, acc);
    body.push(mkYield([opts.yielded ? opts.yielded(body, y, acc) : y]));
    s.push(mkFor({ loopVar: i, start: c(1), stop: c(4), step: c(1), iterArgs: [acc], inits: [acc0], body, results: [res] }));
    const fin = opts.after ? opts.after(s, res, acc0) : res;
    s.push(mkEval(call("tile.store", [fin, { kind: "list", items: [c(0), c(0)], span: fin.span } as never, out])));
  });
}

describe("PlanMemory: loop-carried tiles", () => {
  it("matmulAcc is the in-place op (accumulator argument 0)", () => {
    expect(IN_PLACE.get("tile.matmulAcc")).toBe(0);
    expect(IN_PLACE.has("tile.add")).toBe(false);
  });

  it("a K loop of matmulAcc: initial value, iterArg, yielded value and result share one address", () => {
    const m = kLoop();
    expect(new Set([m.get("acc0"), m.get("acc"), m.get("y"), m.get("res")]).size).toBe(1);
    // the operands keep their own addresses
    expect(m.get("ak")).not.toBe(m.get("acc"));
    expect(m.get("bk")).not.toBe(m.get("acc"));
  });

  it("the old accumulator read after the matmulAcc: the yielded value gets its own address", () => {
    const m = kLoop({ extra: (s, y, acc) => { let_(s, "d", call("tile.sub", [y, acc])); } });
    expect(m.get("y")).not.toBe(m.get("acc"));
    expect(m.get("acc0")).toBe(m.get("acc")); // the initial value still shares
  });

  it("a yielded value computed by an op that is not in place is not coalesced", () => {
    const m = kLoop({ yielded: (s, y, acc) => let_(s, "z", call("tile.add", [acc, y])) });
    expect(m.get("z")).not.toBe(m.get("acc"));
  });

  it("an initial value used after the loop keeps its own address", () => {
    const m = kLoop({ after: (s, res, acc0) => let_(s, "fin", call("tile.add", [res, acc0])) });
    expect(m.get("acc0")).not.toBe(m.get("acc"));
    expect(m.get("y")).toBe(m.get("acc"));
  });

  it("one initial value for two iterArgs is coalesced with neither", () => {
    const m = plan((s, a, b, out) => {
      const x = let_(s, "x", load(a, [c(0), c(0)], [N, N]));
      const t = exprType(x);
      const p = mkVar("p", t), q = mkVar("q", t), pr = mkVar("pr", t), qr = mkVar("qr", t);
      const i = mkVar("i", INDEX);
      const body: Stmt[] = [];
      const p1 = let_(body, "p1", call("tile.add", [p, q]));
      body.push(mkYield([p1, q]));
      s.push(mkFor({ loopVar: i, start: c(0), stop: c(2), step: c(1), iterArgs: [p, q], inits: [x, x], body, results: [pr, qr] }));
      const fin = let_(s, "fin", call("tile.add", [pr, qr]));
      s.push(mkEval(call("tile.store", [fin, { kind: "list", items: [c(0), c(0)], span: fin.span } as never, out])));
      void b;
    });
    expect(m.get("p")).not.toBe(m.get("q"));
    expect(m.get("x")).not.toBe(m.get("p"));
    expect(m.get("x")).not.toBe(m.get("q"));
  });
});

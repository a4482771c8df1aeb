// Control flow: loops with loop-carried tiles and scalars, if on a scalar parameter, while
// with break / continue, in kernels and in the orchestration.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  INDEX, Program, mkAssign, mkBreak, mkContinue, mkEval, mkFor, mkFunc, mkIf, mkReturn, mkVar, mkWhile, mkYield, scalarT, tileT, verifyProgram,
  type Var,
} from "../../src/ir/index.js";
import { compileArtifact } from "./helpers.js";
import { B, Planner, c, call, expectClose, kernel, launch, load, mulberry32, run, scalarVar, singleKernelProgram, store, tensorVar, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const rand = (seed: number, n: number) => { const r = mulberry32(seed); return Float32Array.from({ length: n }, () => r() * 4 - 2); };
const build = (p: Program) => compileArtifact(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("ctl"), "a") }).outputDir;
const f = Math.fround;

/** for i in range(start, stop, step): acc += load(a, i) * k; k += 1  -> out = acc + k_final */
function accumulate(name: string, sameAddr: boolean, start: number, stop: number, step: number): Program {
  const a = tensorVar("a", [256, 64]), out = tensorVar("out", [32, 64]);
  return singleKernelProgram(name, [[a, "in"], [out, "out"]], (b, [ka, ko]) => {
    const plan = b.plan;
    const acc0 = b.let("acc0", call("tile.full", [], { shape: [32, 64], dtype: "float32", value: 0 }));
    const accT = tileT([32, 64], "float32");
    const addr0 = (acc0.type as { addr: number }).addr;
    const acc = mkVar("acc", { ...accT, addr: sameAddr ? addr0 : plan.alloc(accT) });
    const k = mkVar("k", INDEX);
    const i = mkVar("i", INDEX);
    const body = new B(plan);
    const t = body.let("t", load(ka, [call("scalar.mul", [i, c(32)]), c(0)], [32, 64]));
    const ts = body.let("ts", call("tile.mul", [t, k]));
    const acc1 = body.let("acc1", call("tile.add", [acc, ts]), sameAddr ? addr0 : undefined);
    const k1 = body.let("k1", call("scalar.add", [k, c(1)]));
    body.push(mkYield([acc1, k1]));
    const res = mkVar("res", { ...accT, addr: sameAddr ? addr0 : plan.alloc(accT) });
    const kres = mkVar("kres", INDEX);
    b.push(mkFor({ loopVar: i, start: c(start), stop: c(stop), step: c(step), iterArgs: [acc, k], inits: [acc0, c(1)], body: body.stmts, results: [res, kres] }));
    const fin = b.let("fin", call("tile.add", [res, kres]));
    b.eval(store(fin, [c(0), c(0)], ko));
  });
}

function accumulateRef(A: Float32Array, start: number, stop: number, step: number): Float32Array {
  const acc = new Float32Array(32 * 64);
  let k = 1;
  for (let i = start; i < stop; i += step) {
    for (let e = 0; e < 32 * 64; e++) acc[e] = f(acc[e] + f(A[i * 32 * 64 + e] * k));
    k++;
  }
  return acc.map((x) => f(x + k));
}

describe("kernel control flow", () => {
  for (const sameAddr of [true, false]) {
    it(`for loop with a loop-carried accumulator tile and scalar (${sameAddr ? "one address" : "copies between addresses"})`, () => {
      const A = rand(11, 256 * 64);
      for (const [start, stop, step] of [[0, 8, 1], [1, 8, 2]]) {
        const dir = build(accumulate(`acc_${sameAddr}_${start}_${step}`, sameAddr, start, stop, step));
        const r = run(dir, [{ tensor: A }, { tensor: new Float32Array(32 * 64) }]);
        expect(r.rc).toBe(0);
        expectClose(r.tensors[1] as Float32Array, accumulateRef(A, start, stop, step), 0, 0, `acc ${start}:${stop}:${step}`);
      }
    });
  }

  it("if on a scalar parameter, with tile and scalar results", () => {
    const a = tensorVar("a", [32, 64]), flag = scalarVar("flag"), out = tensorVar("out", [32, 64]);
    const p = singleKernelProgram("if_param", [[a, "in"], [flag, "in"], [out, "out"]], (b, [ka, kf, ko]) => {
      const ta = b.let("ta", load(ka, [c(0), c(0)], [32, 64]));
      const rT = tileT([32, 64], "float32");
      const rAddr = b.plan.alloc(rT);
      const th = new B(b.plan), el = new B(b.plan);
      const r1 = th.let("r1", call("tile.exp", [ta]), rAddr); // in place of the result
      th.push(mkYield([r1, c(2.0, "float32")]));
      const r2 = el.let("r2", call("tile.neg", [ta])); // elsewhere: copied
      el.push(mkYield([r2, c(-3.0, "float32")]));
      const r = mkVar("r", { ...rT, addr: rAddr }), s = mkVar("s", scalarT("float32"));
      b.push(mkIf({ cond: call("scalar.gt", [kf, c(0)]), then: th.stmts, else: el.stmts, results: [r, s] }));
      const fin = b.let("fin", call("tile.mul", [r, s]));
      b.eval(store(fin, [c(0), c(0)], ko));
    });
    const dir = build(p);
    const A = rand(12, 32 * 64);
    const on = run(dir, [{ tensor: A }, { int: 1 }, { tensor: new Float32Array(32 * 64) }]);
    expectClose(on.tensors[2] as Float32Array, A.map((x) => f(f(Math.exp(x)) * 2)), 1e-6, 0, "flag=1");
    const off = run(dir, [{ tensor: A }, { int: 0 }, { tensor: new Float32Array(32 * 64) }]);
    expectClose(off.tensors[2] as Float32Array, A.map((x) => f(-x * -3)), 0, 0, "flag=0");
  });

  it("while with break and continue carrying a tile and a scalar", () => {
    const a = tensorVar("a", [256, 64]), limit = scalarVar("limit"), out = tensorVar("out", [32, 64]);
    const p = singleKernelProgram("while_break", [[a, "in"], [limit, "in"], [out, "out"]], (b, [ka, kl, ko]) => {
      const accT = tileT([32, 64], "float32");
      const acc0 = b.let("acc0", call("tile.create", [], { shape: [32, 64], dtype: "float32" }));
      const i = mkVar("i", INDEX), acc = mkVar("acc", { ...accT, addr: b.plan.alloc(accT) });
      const body = new B(b.plan);
      body.push(mkIf({ cond: call("scalar.ge", [i, kl]), then: [mkBreak([i, acc])], else: [], results: [] }));
      const skip = new B(b.plan);
      const i1 = skip.let("i1", call("scalar.add", [i, c(1)]));
      skip.push(mkContinue([i1, acc]));
      body.push(mkIf({ cond: call("scalar.eq", [call("scalar.mod", [i, c(2)]), c(1)]), then: skip.stmts, else: [], results: [] }));
      const t = body.let("t", load(ka, [call("scalar.mul", [i, c(32)]), c(0)], [32, 64]));
      const acc2 = body.let("acc2", call("tile.add", [acc, t]));
      const i2 = body.let("i2", call("scalar.add", [i, c(1)]));
      body.push(mkYield([i2, acc2]));
      const iend = mkVar("iend", INDEX), accEnd = mkVar("accEnd", { ...accT, addr: b.plan.alloc(accT) });
      b.push(mkWhile({ iterArgs: [i, acc], inits: [c(0), acc0], cond: call("scalar.lt", [i, c(8)]), body: body.stmts, results: [iend, accEnd] }));
      const fin = b.let("fin", call("tile.add", [accEnd, iend]));
      b.eval(store(fin, [c(0), c(0)], ko));
    });
    const dir = build(p);
    const A = rand(13, 256 * 64);
    for (const lim of [5, 100, 0]) {
      const acc = new Float32Array(32 * 64);
      let i = 0;
      for (; i < 8; i++) {
        if (i >= lim) break;
        if (i % 2 === 1) continue;
        for (let e = 0; e < acc.length; e++) acc[e] = f(acc[e] + A[i * 2048 + e]);
      }
      const r = run(dir, [{ tensor: A }, { int: lim }, { tensor: new Float32Array(32 * 64) }]);
      expect(r.rc).toBe(0);
      expectClose(r.tensors[2] as Float32Array, acc.map((x) => f(x + i)), 0, 0, `limit=${lim}`);
    }
  });

  it("swapping two loop-carried tiles goes through temporaries", () => {
    // for 3 iterations: (x, y) = (y, x + 1)  -> after 3: x = y0 + 1 + ... computed below
    const a = tensorVar("a", [16, 16]), bT = tensorVar("b", [16, 16]), out = tensorVar("out", [16, 16]);
    const p = singleKernelProgram("swap", [[a, "in"], [bT, "in"], [out, "out"]], (b, [ka, kb, ko]) => {
      const T = tileT([16, 16], "float32");
      const x0 = b.let("x0", load(ka, [c(0), c(0)], [16, 16]));
      const y0 = b.let("y0", load(kb, [c(0), c(0)], [16, 16]));
      const ax = (x0.type as { addr: number }).addr, ay = (y0.type as { addr: number }).addr;
      const x = mkVar("x", { ...T, addr: ax }), y = mkVar("y", { ...T, addr: ay }), i = mkVar("i", INDEX);
      // yield (y, x + 1): y goes to x's slot and x + 1 to y's slot, reading x
      b.push(mkFor({ loopVar: i, start: c(0), stop: c(3), step: c(1), iterArgs: [x, y], inits: [x0, y0],
        body: [mkYield([y, call("tile.add", [x, c(1)])])], results: [mkVar("xr", { ...T, addr: ax }), mkVar("yr", { ...T, addr: ay })] }));
      const fs = (b.stmts[b.stmts.length - 1] as unknown as { results: Var[] }).results;
      const d = b.let("d", call("tile.sub", [fs[0], call("tile.mul", [fs[1], c(10)])]));
      b.eval(store(d, [c(0), c(0)], ko));
    });
    const dir = build(p);
    const A = rand(14, 256), Bv = rand(15, 256);
    const r = run(dir, [{ tensor: A }, { tensor: Bv }, { tensor: new Float32Array(256) }]);
    const exp = A.map((_, e) => {
      let x = A[e], y = Bv[e];
      for (let k = 0; k < 3; k++) [x, y] = [y, f(x + 1)];
      return f(x - f(y * 10));
    });
    expectClose(r.tensors[2] as Float32Array, exp, 0, 0, "swap");
  });
});

describe("orchestration control flow", () => {
  it("for / while / if with break and continue submit the right tasks with scalar arguments", () => {
    // kernel: out[row:row+32] = (negate ? -1 : 1) * a[row:row+32] * s
    const ka = tensorVar("a", [128, 64]), ko = tensorVar("out", [128, 64]);
    const row = scalarVar("row"), s = scalarVar("s", "float32"), neg = scalarVar("negate", "bool");
    const kb = new B(new Planner());
    const t = kb.let("t", load(ka, [row, c(0)], [32, 64]));
    const m = kb.let("m", call("tile.mul", [t, s]));
    const rT = tileT([32, 64], "float32");
    const res = mkVar("res", { ...rT, addr: kb.plan.alloc(rT) });
    const th = new B(kb.plan);
    const n = th.let("n", call("tile.neg", [m]));
    th.push(mkYield([n]));
    kb.push(mkIf({ cond: neg, then: th.stmts, else: [mkYield([m])], results: [res] }));
    kb.eval(store(res, [row, c(0)], ko));
    const k = kernel("scale_rows", [[ka, "in"], [ko, "inout"], [row, "in"], [s, "in"], [neg, "in"]], kb);

    const a = tensorVar("a", [128, 64]), out = tensorVar("out", [128, 64]);
    const scale = scalarVar("scale", "float32"), mode = scalarVar("mode"), flag = scalarVar("flag", "bool");
    const body: import("../../src/ir/index.js").Stmt[] = [];
    // part 1: for j in 0..2: k(a, out, j * 32, scale * (j + 1), flag)
    const j = mkVar("j", INDEX);
    body.push(mkFor({ loopVar: j, start: c(0), stop: c(2), step: c(1), iterArgs: [], inits: [], results: [], body: [
      mkEval(launch(k, [a, out, call("scalar.mul", [j, c(32)]), call("scalar.mul", [scale, call("scalar.add", [j, c(1)])]), flag], 0)),
    ] }));
    // part 2: j2 = 2; while (j2 < 10) { if (j2 >= 4) break; if (j2 == mode) continue j2 + 1; k(...); j2 += 1 }
    const j2 = mkVar("j2", INDEX);
    const nxt = mkVar("nxt", INDEX);
    const j3 = mkVar("j3", INDEX);
    const wbody = [
      mkIf({ cond: call("scalar.ge", [j2, c(4)]), then: [mkBreak([j2])], else: [], results: [] }),
      mkIf({ cond: call("scalar.eq", [j2, mode]), then: [mkAssign([nxt], call("scalar.add", [j2, c(1)])), mkContinue([nxt])], else: [], results: [] }),
      mkEval(launch(k, [a, out, call("scalar.mul", [j2, c(32)]), scale, call("scalar.not", [flag])], 1)),
      mkYield([call("scalar.add", [j2, c(1)])]),
    ];
    body.push(mkWhile({ iterArgs: [j2], inits: [c(2)], cond: call("scalar.lt", [j2, c(10)]), body: wbody, results: [j3] }));
    body.push(mkReturn([out]));
    const entry = mkFunc({ name: "orch", fnKind: "orchestration", params: [
      { var: a, dir: "in" }, { var: out, dir: "inout" }, { var: scale, dir: "in" }, { var: mode, dir: "in" }, { var: flag, dir: "in" }],
    returnTypes: [out.type], body });
    const p = new Program("orch", "orch", [entry, k]);
    verifyProgram(p, { ssa: true, outlined: true });
    const { outputDir: dir, meta } = compileArtifact(p, { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("orch"), "a") });
    expect(meta.outputIndices).toEqual([1]);
    expect(meta.returns).toEqual([1]);
    expect(meta.params.map((q) => [q.name, q.kind, q.dtype])).toEqual([["a", "tensor", "float32"], ["out", "tensor", "float32"], ["scale", "scalar", "float32"], ["mode", "scalar", "int64"], ["flag", "scalar", "bool"]]);

    const A = rand(16, 128 * 64);
    for (const [flagV, modeV] of [[true, 3], [false, 2]] as const) {
      const O = new Float32Array(128 * 64).fill(7);
      const r = run(dir, [{ tensor: A }, { tensor: O }, { float: 0.3 }, { int: modeV }, { bool: flagV }]);
      expect(r.rc).toBe(0);
      const launched = modeV === 3 ? [2] : [3];
      expect(r.tasks.map((x) => [x.name, x.scope])).toEqual([["scale_rows", 0], ["scale_rows", 0], ...launched.map(() => ["scale_rows", 1])]);
      expect(r.tasks[0].accesses).toEqual([{ param: 0, nbytes: 128 * 64 * 4, mode: 1 }, { param: 1, nbytes: 128 * 64 * 4, mode: 3 }]);
      expect(r.tasks[0].nargs).toBe(5);
      const exp = new Float32Array(128 * 64).fill(7);
      const put = (chunk: number, sc: number, negate: boolean) => {
        for (let e = chunk * 2048; e < (chunk + 1) * 2048; e++) { const v = f(A[e] * sc); exp[e] = negate ? -v : v; }
      };
      put(0, 0.3 * 1, flagV);
      put(1, 0.3 * 2, flagV);
      for (const ch of launched) put(ch, 0.3, !flagV);
      expectClose(r.tensors[1] as Float32Array, exp, 0, 0, `flag=${flagV} mode=${modeV}`);
    }
  });
});

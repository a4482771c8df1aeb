// PlanMemory's coalescing of loop-carried tiles (src/passes/plan_memory.ts): a K loop
// `acc = matmulAcc(acc, a, b)` gets one address for the initial value, the iterArg, the
// yielded matmulAcc and the loop result (no copies), and nothing is coalesced where a value
// is still needed: the old accumulator read after the matmulAcc, an initial value used after
// the loop, one initial value for two iterArgs, a yielded value from an op that is not in place.
import { describe, expect, it } from "vitest";
import { INDEX, Program, exprType, mkAssign, mkEval, mkFor, mkFunc, mkVar, mkYield, type Expr, type Func, type Stmt, type TileType, type Var } from "../../src/ir/index.js";
import { IN_PLACE, memoryPlanPass } from "../../src/passes/plan_memory.js";
import { c, call, load, tensorVar } from "../codegen/helpers.js";
import { pl, RunConfig, randn, zeros } from "tspto";
import { readArtifact } from "../../src/artifact/index.js";
import { replanMemory } from "../../src/passes/index.js";
import { generateCuda } from "../../src/codegen/cuda/index.js";

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

// Matmul operands that the cpu code generator reads straight from their tensor window
// (forwardableMatmulOperands) take no scratch where the target says so
// (DeviceDescription.matmulOperandsInPlace): only the accumulator counts against the capacity.
describe("PlanMemory: matmul operands read in place", () => {
  const kernel = (twiceUsed: boolean) => {
    const a = tensorVar("a", [N, 4 * N]), b = tensorVar("b", [4 * N, N]), out = tensorVar("out", [N, N]);
    const s: Stmt[] = [];
    const a0 = let_(s, "a0", load(a, [c(0), c(0)], [N, N]));
    const b0 = let_(s, "b0", load(b, [c(0), c(0)], [N, N]));
    const acc0 = let_(s, "acc0", call("tile.matmul", [a0, b0]));
    // a second use of a0 makes it an ordinary tile (materialized in scratch)
    const fin = twiceUsed ? let_(s, "fin", call("tile.add", [acc0, a0])) : acc0;
    s.push(mkEval(call("tile.store", [fin, { kind: "list", items: [c(0), c(0)], span: fin.span } as never, out])));
    return new Program("p", "k", [mkFunc({ name: "k", fnKind: "incore", params: [{ var: a, dir: "in" }, { var: b, dir: "in" }, { var: out, dir: "out" }], returnTypes: [], body: s })]);
  };
  const planned = (p: Program, inPlace: boolean) => {
    const f = memoryPlanPass.run(p, { scratchCapacity: 1 << 20, matmulOperandsInPlace: inPlace }).functions[0];
    const addrs = new Map<string, number | null | undefined>();
    for (const st of f.body) if (st.kind === "assign") for (const t of st.targets) addrs.set(t.name, (t.type as TileType).addr);
    return { addrs, bytes: f.attrs.scratchBytes };
  };
  const tile = N * N * 4;

  it("in place: the operand loads get no address and the accumulator alone is the scratch", () => {
    const { addrs, bytes } = planned(kernel(false), true);
    expect(addrs.get("a0") ?? null).toBeNull();
    expect(addrs.get("b0") ?? null).toBeNull();
    expect(addrs.get("acc0")).toBe(0);
    expect(bytes).toBe(tile);
  });
  it("a target without it (cuda): every tile has an address", () => {
    const { addrs, bytes } = planned(kernel(false), false);
    for (const n of ["a0", "b0", "acc0"]) expect(typeof addrs.get(n)).toBe("number");
    expect(bytes).toBe(3 * tile);
  });
  it("an operand used twice is not read in place: it keeps its scratch", () => {
    const { addrs } = planned(kernel(true), true);
    expect(typeof addrs.get("a0")).toBe("number");
    expect(addrs.get("b0") ?? null).toBeNull();
  });

  // [256, 512] accumulator with [256, 128] and [128, 512] operand windows: 512 KiB of scratch on
  // cpu (the operands are read from a and b), 1.25 MiB with staged operands; still E_SCRATCH where operands are
  // staged (a 1 MiB target without in-place reads, through the pass pipeline directly).
  const big = pl.jit(function bigTile(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const a0 = pl.move(pl.load(a, [0, 0], [256, 128], { mem: pl.Mem.Mat }), pl.Mem.Left);
      const b0 = pl.move(pl.load(b, [0, 0], [128, 512], { mem: pl.Mem.Mat }), pl.Mem.Right);
      let acc = pl.matmul(a0, b0);
      for (const k of pl.range(128, 256, 128)) {
        const ak = pl.move(pl.load(a, [0, k], [256, 128], { mem: pl.Mem.Mat }), pl.Mem.Left);
        const bk = pl.move(pl.load(b, [k, 0], [128, 512], { mem: pl.Mem.Mat }), pl.Mem.Right);
        acc = pl.matmulAcc(acc, ak, bk);
      }
      pl.store(acc, [0, 0], out);
    });
    return out;
  });
  it("end to end: a [256, 512] accumulator fits on cpu and interp and matches an fp64 reference", () => {
    const A = randn([256, 256], { seed: 31 }), B = randn([256, 512], { seed: 32 });
    const ref = new Float64Array(256 * 512);
    const ad = A.data as Float32Array, bd = B.data as Float32Array;
    for (let i = 0; i < 256; i++) for (let k = 0; k < 256; k++) { const x = ad[i * 256 + k]; for (let j = 0; j < 512; j++) ref[i * 512 + j] += x * bd[k * 512 + j]; }
    const outs: Float32Array[] = [];
    for (const platform of ["cpu", "interp"]) {
      const out = zeros([256, 512]);
      const compiled = big.compile(A, B, out, new RunConfig({ platform }));
      expect(readArtifact(compiled.outputDir).meta.scratchBytes).toBe(256 * 512 * 4);
      big(A, B, out, new RunConfig({ platform }));
      const o = out.data as Float32Array;
      let worst = 0;
      for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(o[i] - ref[i]) / (1 + Math.abs(ref[i])));
      expect(worst).toBeLessThan(5e-5);  // fp32 sums of 256 products
      outs.push(o);
    }
    // interp models the cpu's fused multiply-adds in the same k order: the same bits
    expect(outs[0]).toEqual(outs[1]);
    // the same kernel handed to a 1 MiB target that stages its operands (as ir.compile does)
    expect(() => replanMemory(big.lower(A, B, zeros([256, 512])), { scratchCapacity: 1 << 20, matmulOperandsInPlace: false })).toThrow(/\[E_SCRATCH\] tiles of kernel 'bigTile_incore_0' need 1310720 bytes of on-chip scratch, capacity is 1048576 bytes; live here: acc: Tile<\[256, 512\], float32, Acc> 512 KiB, b0: Tile<\[128, 512\], float32, Right> 256 KiB, a0/);
  });

  const small = pl.jit(function smallMm(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      const a0 = pl.move(pl.load(a, [0, 0], [64, 64], { mem: pl.Mem.Mat }), pl.Mem.Left);
      const b0 = pl.move(pl.load(b, [0, 0], [64, 64], { mem: pl.Mem.Mat }), pl.Mem.Right);
      pl.store(pl.matmul(a0, b0), [0, 0], out);
    });
    return out;
  });
  it("replanMemory: a program lowered for cpu gets every tile an address for a target that stages operands; unchanged otherwise", () => {
    const lowered = small.lower(randn([64, 64]), randn([64, 64]), zeros([64, 64]));
    const kernelOf = (p: Program) => p.functions.find((f) => f.fnKind === "incore")!;
    expect(kernelOf(lowered).attrs.operandsInPlace).toBe(true);
    expect(kernelOf(lowered).attrs.scratchBytes).toBe(64 * 64 * 4);
    expect(replanMemory(lowered, { scratchCapacity: 1 << 20, matmulOperandsInPlace: true })).toBe(lowered);
    const again = replanMemory(lowered, { scratchCapacity: 1 << 20, matmulOperandsInPlace: false });
    const k = kernelOf(again);
    expect(k.attrs.operandsInPlace).toBeUndefined();
    expect(k.attrs.scratchBytes).toBeGreaterThan(64 * 64 * 4);
    for (const st of k.body) if (st.kind === "assign") for (const t of st.targets) if (t.type.kind === "tile") expect(typeof (t.type as TileType).addr, t.name).toBe("number");
    // the cuda code generator takes it (it stages operands in scratch)
    expect(generateCuda(again).source).toContain("k_");
    expect(() => generateCuda(lowered)).toThrow(/has no scratch address/);
  });
});


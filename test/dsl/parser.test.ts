import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as pl from "../../src/language.js";
import { paramInfo, parseKernel, roundTrip, sourceHash } from "../../src/dsl/index.js";
import {
  exprType, scalarT, tensorT, tileT, typeEqual, verifyProgram,
  type Assign, type Call, type Const, type For, type If, type Scope, type Stmt, type Var, type While,
} from "../../src/ir/index.js";
import { zeros } from "../../src/runtime/host/index.js";
import { FIX_SCALE, FIX_SHAPE, FIX_TILE } from "./fixtures/consts.js";
import { RE_TILE } from "./fixtures/reexport.js";
import { fixtureCopy } from "./fixtures/kernels.js";
import { viaAlias, viaRoot } from "./fixtures/aliases.js";
import { inferDirs } from "./fixtures/plain.js";
import { defOf, f32, fn, opsOf, parse, stmtKinds, where } from "./helpers.js";

const FILE = fileURLToPath(import.meta.url);
const ROWS = 128, COLS = 128;
const TILE = ROWS / 2; // folded: 64
const HALF_COLS = COLS / 2;
const EPS = 1e-5;
const OFFSETS = [0, 0];

// The seed example (API.md §1).
const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]); // MARK:add-load-a
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out); // MARK:add-store
  });
  return out; // MARK:add-return
});

const T = f32(ROWS, COLS);

describe("the seed kernel", () => {
  const p = parse(addKernel, T, T, T);
  const f = fn(p);

  it("is an orchestration entry with a pl.at scope of tile ops", () => {
    expect(p.entry).toBe("addKernel");
    expect(p.name).toBe("addKernel");
    expect(p.functions.map((x) => x.name)).toEqual(["addKernel"]);
    expect(f.fnKind).toBe("orchestration");
    expect(stmtKinds(f)).toEqual(["scope", "assign", "assign", "eval", "return"]);
    expect(opsOf(f)).toEqual(["tile.load", "tile.load", "tile.add", "tile.store"]);
    expect((f.body[0] as Scope).level).toBe("CORE_GROUP");
    verifyProgram(p);
  });

  it("types params, directions, tiles and the return", () => {
    expect(f.params.map((q) => [q.var.name, q.dir])).toEqual([["a", "in"], ["b", "in"], ["out", "out"]]);
    for (const q of f.params) expect(typeEqual(q.var.type, T)).toBe(true);
    const load = (f.body[0] as Scope).body[0] as Assign;
    expect(load.targets[0].name).toBe("ta");
    expect(typeEqual(load.targets[0].type, tileT([ROWS, COLS], "float32"))).toBe(true);
    const call = load.value as Call;
    expect(call.attrs).toEqual({ shape: [128, 128] });
    expect(call.args[1].kind).toBe("list");
    expect(f.returnTypes.length).toBe(1);
    expect(typeEqual(f.returnTypes[0], T)).toBe(true);
  });

  it("puts spans into this test file", () => {
    const scope = f.body[0] as Scope;
    const load = scope.body[0] as Assign;
    expect(load.span.file).toBe(FILE);
    expect(load.span.line).toBe(where(FILE, "MARK:add-load-a", "const ta").line);
    expect(load.span.col).toBe(where(FILE, "MARK:add-load-a", "const ta").col);
    expect(load.value.span.col).toBe(where(FILE, "MARK:add-load-a", "pl.load").col);
    expect(load.targets[0].span.col).toBe(where(FILE, "MARK:add-load-a", "ta =").col);
    expect(scope.body[2].span.line).toBe(where(FILE, "MARK:add-store", "pl.store").line);
    expect(f.body[1].span).toMatchObject({ file: FILE, ...where(FILE, "MARK:add-return", "return") });
    expect(f.span.line).toBe(where(FILE, "function addKernel(", "function").line);
    expect(defOf(addKernel).site).toMatchObject({ file: FILE, line: where(FILE, "function addKernel(", "pl.jit").line });
  });

  it("reports its parameters without parsing the body", () => {
    const info = paramInfo(defOf(addKernel));
    expect(info.map((i) => [i.name, i.kind, i.dir ?? null, i.annotated])).toEqual([
      ["a", "tensor", null, null], ["b", "tensor", null, null], ["out", "tensor", "out", null],
    ]);
    expect(paramInfo(defOf(addKernel))).toBe(info); // cached
  });

  it("specializes on shapes and dtypes", () => {
    const q = parse(addKernel, f32(256, 128), f32(256, 128), f32(256, 128));
    expect(typeEqual(fn(q).params[0].var.type, f32(256, 128))).toBe(true);
    const h = parseKernel(defOf(addKernel), [T, T, T].map((t, i) => ({ name: `p${i}`, type: tensorT([128, 128], "float16") })));
    expect(exprType(((fn(h).body[0] as Scope).body[0] as Assign).value)).toEqual(tileT([128, 128], "float16"));
    roundTrip(h);
  });
});

// ---------------------------------------------------------------- constants

let scoped = 16; // a let: only reachable through opts.scope
const constKernel = pl.jit(function constKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, OFFSETS, [TILE, HALF_COLS]);
    const u = pl.load(a, [TILE, HALF_COLS], [TILE, COLS / 2]);
    const v = pl.mul(pl.add(t, u), EPS * 2);
    const w = pl.load(a, [FIX_TILE, RE_TILE + scoped], FIX_SHAPE);
    pl.store(pl.mul(w, FIX_SCALE), [0, 0], out);
    pl.store(v, [Math.max(TILE, 2) - 64, ROWS % 7 - 2], out);
  });
}, { scope: { scoped } });

describe("constant folding", () => {
  const p = parse(constKernel, T, T);
  const body = (fn(p).body[0] as Scope).body;
  const value = (i: number) => (body[i] as Assign).value as Call;

  it("folds module consts and their arithmetic into attrs and constants", () => {
    expect(value(0).attrs.shape).toEqual([64, 64]);
    expect(value(1).attrs.shape).toEqual([64, 64]);
    const offs = value(1).args[1];
    expect(offs.kind === "list" && offs.items.map((c) => [(c as Const).value, (c as Const).dtype])).toEqual([[64, "int64"], [64, "int64"]]);
    const offs0 = value(0).args[1];
    expect(offs0.kind === "list" && offs0.items.map((c) => (c as Const).value)).toEqual([0, 0]);
    const scale = value(2).args[1] as Const;
    expect(scale).toMatchObject({ kind: "const", value: 2e-5, dtype: "float32" });
  });

  it("folds imported, re-exported and scoped consts", () => {
    const w = value(3);
    expect(w.attrs.shape).toEqual([16, 32]);
    const offs = w.args[1];
    expect(offs.kind === "list" && offs.items.map((c) => (c as Const).value)).toEqual([16, 32]);
    expect((((body[4] as Stmt & { expr: Call }).expr.args[0]) as Call).args[1]).toMatchObject({ value: 0.25, dtype: "float32" });
  });

  it("folds Math and % on constants", () => {
    const store = (body[5] as Stmt & { expr: Call }).expr;
    const offs = store.args[1];
    expect(offs.kind === "list" && offs.items.map((c) => [(c as Const).kind, (c as Const).value])).toEqual([["const", 0], ["const", 0]]);
  });

  it("reads opts.scope values at definition time", () => {
    scoped = 99; // the kernel keeps the value it was given
    const q = parse(constKernel, T, T);
    const w = ((fn(q).body[0] as Scope).body[3] as Assign).value as Call;
    const offs = w.args[1];
    expect(offs.kind === "list" && (offs.items[1] as Const).value).toBe(32);
  });
});

// ---------------------------------------------------------------- scalars

const scalarKernel = pl.jit(function scalarKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>, rows: number, bias: pl.Scalar<pl.INT32>, flag: boolean) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(rows / TILE)) {
      const t = pl.load(a, [i * TILE, 0], [TILE, COLS]);
      if (flag) {
        pl.store(pl.add(t, bias), [i * TILE, 0], out);
      }
    }
  });
});

describe("scalar parameters", () => {
  it("folds specialized values and keeps annotated scalars dynamic", () => {
    const p = parse(scalarKernel, T, T, 128, scalarT("int32"), true);
    const f = fn(p);
    expect(f.params.map((q) => [q.var.name, q.var.type.kind === "scalar" && q.var.type.dtype, q.dir])).toEqual([
      ["a", false, "in"], ["out", false, "out"], ["rows", "int64", "in"], ["bias", "int32", "in"], ["flag", "bool", "in"],
    ]);
    const loop = (f.body[0] as Scope).body[0] as For;
    expect(loop.stop).toMatchObject({ kind: "const", value: 2, dtype: "int64" });
    const iff = loop.body[1] as If;
    expect(iff.cond).toMatchObject({ kind: "const", value: true });
    const add = ((iff.then[0] as Stmt & { expr: Call }).expr.args[0]) as Call;
    expect(add.op).toBe("tile.add");
    expect((add.args[1] as Var).name).toBe("bias");
    expect(exprType(add.args[1])).toEqual(scalarT("int32"));
  });

  it("reports annotated scalar types in paramInfo", () => {
    const info = paramInfo(defOf(scalarKernel));
    expect(info.map((i) => [i.name, i.kind, i.annotated])).toEqual([
      ["a", "tensor", null], ["out", "tensor", null], ["rows", "scalar", null], ["bias", "scalar", scalarT("int32")], ["flag", "scalar", null],
    ]);
  });
});

// ---------------------------------------------------------------- control flow

const accKernel = pl.jit(function accKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.full([TILE, COLS], pl.FP32, 0.0); // MARK:acc-init
    for (const i of pl.range(ROWS / TILE)) {
      const t = pl.load(a, [i * TILE, 0], [TILE, COLS]);
      acc = pl.add(acc, t); // MARK:acc-rebind
    }
    pl.store(acc, [0, 0], out);
  });
});

const branchKernel = pl.jit(function branchKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>, n: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let t = pl.load(a, [0, 0], [TILE, COLS]);
    if (n > 0) {
      t = pl.exp(t);
    } else if (n === 0 || !(n < -5)) {
      t = pl.neg(t);
    } else {
      t = pl.relu(t);
    }
    pl.store(t, [0, 0], out);
  });
});

const loopKernel = pl.jit(function loopKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>, limit: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.full([TILE, COLS], pl.FP32, 0.0);
    let k = 0;
    while (k < limit) {
      k += 1;
      if (k === 2) continue;
      const t = pl.load(a, [(k * TILE) % ROWS, 0], [TILE, COLS]);
      acc = pl.add(acc, t);
      if (k > 3) {
        break;
      }
    }
    for (const j of pl.range(0, 8, 2)) {
      k++;
      if (j === 4) break;
    }
    pl.store(acc, [Math.min(k, 0), 0], out);
  });
});

describe("control flow (pre-SSA)", () => {
  it("rebinding a let in a range loop assigns the same Var", () => {
    const p = parse(accKernel, T, T);
    const [init, loop] = (fn(p).body[0] as Scope).body as [Assign, For];
    expect(loop.kind).toBe("for");
    expect(loop.iterArgs).toEqual([]);
    expect(loop.results).toEqual([]);
    expect([loop.start, loop.stop, loop.step].map((e) => (e as Const).value)).toEqual([0, 2, 1]);
    expect(loop.loopVar.type).toEqual(scalarT("int64"));
    const rebind = loop.body[1] as Assign;
    expect(rebind.targets[0]).toBe(init.targets[0]);
    expect(rebind.span.line).toBe(where(FILE, "MARK:acc-rebind", "acc =").line);
    const offs = ((loop.body[0] as Assign).value as Call).args[1];
    expect(offs.kind === "list" && (offs.items[0] as Call).op).toBe("scalar.mul");
  });

  it("if / else if / else becomes nested Ifs assigning one Var", () => {
    const p = parse(branchKernel, T, T, scalarT("int64"));
    const body = (fn(p).body[0] as Scope).body;
    const outer = body[1] as If;
    expect(outer.results).toEqual([]);
    expect((outer.cond as Call).op).toBe("scalar.gt");
    const inner = outer.else[0] as If;
    expect(inner.kind).toBe("if");
    expect((inner.cond as Call).op).toBe("scalar.or");
    const t = (body[0] as Assign).targets[0];
    for (const s of [outer.then[0], inner.then[0], inner.else[0]]) expect((s as Assign).targets[0]).toBe(t);
    expect(opsOf(fn(p))).toContain("scalar.not");
  });

  it("while with break and continue; compound assignment and ++", () => {
    const p = parse(loopKernel, T, T, scalarT("int64"));
    const body = (fn(p).body[0] as Scope).body;
    const w = body[2] as While;
    expect(w.kind).toBe("while");
    expect((w.cond as Call).op).toBe("scalar.lt");
    const k = (body[1] as Assign).targets[0];
    const inc = w.body[0] as Assign;
    expect(inc.targets[0]).toBe(k);
    expect((inc.value as Call).op).toBe("scalar.add");
    expect(((w.body[1] as If).then[0]).kind).toBe("continue");
    expect(((w.body[4] as If).then[0]).kind).toBe("break");
    const loop = body[3] as For;
    expect([loop.start, loop.stop, loop.step].map((e) => (e as Const).value)).toEqual([0, 8, 2]);
    expect(((loop.body[1] as If).then[0]).kind).toBe("break");
    expect(opsOf(fn(p))).toContain("scalar.min");
  });
});

// ---------------------------------------------------------------- sub-kernels

const scaleTile = pl.jit.inline(function scaleTile(t: pl.Tile, s: number) {
  return pl.mul(t, s);
});

const addTiles = pl.jit.incore(function addTiles(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  const ta = pl.load(a, [0, 0], [TILE, COLS]);
  const tb = pl.load(b, [0, 0], [TILE, COLS]);
  pl.store(scaleTile(pl.add(ta, tb), 0.5), [0, 0], out);
  return out;
}, { attrs: { priority: 2, tags: ["x"] } });

const twoResults = pl.jit.incore(function twoResults(a: pl.Tensor, b: pl.Tensor) {
  return [b, a];
});

const entryWithSubs = pl.jit(function entryWithSubs(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, out: pl.Out<pl.Tensor>, out2: pl.Out<pl.Tensor>) {
  addTiles(a, b, out); // MARK:call-addTiles
  addTiles(a, a, out);
  addTiles(c, c, out2);
  const [x, y] = twoResults(a, b);
  fixtureCopy(y, out2);
  return [out, x];
});

describe("sub-kernels", () => {
  const C = f32(64, 128);
  const p = parse(entryWithSubs, T, T, C, T, C);

  it("are found by name and specialized per type signature", () => {
    expect(p.functions.map((x) => [x.name, x.fnKind]).sort()).toEqual([
      ["addTiles", "incore"], ["addTiles_1", "incore"], ["entryWithSubs", "orchestration"], ["fixtureCopy", "incore"],
      ["scaleTile", "inline"], ["twoResults", "incore"],
    ]);
    expect(opsOf(fn(p))).toEqual(["call:addTiles", "call:addTiles", "call:addTiles_1", "call:twoResults", "call:fixtureCopy"]);
    expect(typeEqual(fn(p, "addTiles_1").params[0].var.type, C)).toBe(true);
    verifyProgram(p);
  });

  it("calls carry the callee's return type, tuples destructure", () => {
    const f = fn(p);
    const call = (f.body[0] as Stmt & { expr: Call }).expr;
    expect(call.attrs).toEqual({ callee: "addTiles" });
    expect(typeEqual(call.type, T)).toBe(true);
    expect(call.span.line).toBe(where(FILE, "MARK:call-addTiles", "addTiles").line);
    const d = f.body[3] as Assign;
    expect(d.targets.map((v) => v.name)).toEqual(["x", "y"]);
    expect(exprType(d.value).kind).toBe("tuple");
    expect(fn(p, "twoResults").returnTypes.length).toBe(2);
  });

  it("records attrs, infers directions through callees, and spans into each kernel's file", () => {
    expect(fn(p, "addTiles").attrs).toEqual({ priority: 2, tags: ["x"] });
    expect(fn(p, "addTiles").params.map((q) => q.dir)).toEqual(["in", "in", "out"]);
    // entry params: bare pl.Tensor = In, pl.Out = Out
    expect(fn(p).params.map((q) => q.dir)).toEqual(["in", "in", "in", "out", "out"]);
    expect(fn(p, "fixtureCopy").params.map((q) => q.dir)).toEqual(["in", "out"]);
    expect(fn(p, "fixtureCopy").span.file).toMatch(/test\/dsl\/fixtures\/kernels\.ts$/);
    expect(fn(p, "scaleTile").params[1].var.type).toEqual(scalarT("float32"));
  });
});

// ---------------------------------------------------------------- direction inference

const bareIn = pl.jit(function bareIn(a: pl.Tensor, out: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(a, [0, 0], [TILE, COLS]), [0, 0], out); // MARK:bare-in-store
  });
});

describe("directions", () => {
  it("plain JavaScript: stored-to = out, stored-to and read = inout, else in", () => {
    const p = parse(inferDirs, T, T, T, T, T, T);
    expect(fn(p).params.map((q) => [q.var.name, q.dir])).toEqual([
      ["a", "in"], ["unused", "in"], ["acc", "inout"], ["out", "out"], ["viaAlias", "out"], ["whole", "out"],
    ]);
    expect(opsOf(fn(p))).toContain("tensor.assign");
    expect(opsOf(fn(p))).toContain("tensor.exp");
  });

  it("a bare pl.Tensor annotation is In (API.md): writing it is an error that says to annotate pl.Out", () => {
    const p = parse(bareIn, T, T);
    expect(fn(p).params.map((q) => q.dir)).toEqual(["in", "in"]);
    expect(() => bareIn.lower(zeros([ROWS, COLS]), zeros([ROWS, COLS]))).toThrow(/E_WRITE_IN[\s\S]*out[\s\S]*parser\.test\.ts:\d+:\d+[\s\S]*pl\.Out/);
  });
});

// ---------------------------------------------------------------- decorators

class Kernels {
  @pl.jit
  static scale(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.store(pl.mul(pl.load(a, [0, 0], [ROWS, COLS]), 2.0), [0, 0], out); // MARK:decorated-store
    });
  }

  @pl.jit({ scope: { K: 3 } })
  static shift(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      // @ts-expect-error -- K comes from opts.scope
      pl.store(pl.add(pl.load(a, [0, 0], [ROWS, COLS]), K), [0, 0], out);
    });
  }
}

// Type-checks under tsc --strict (never called: it would dispatch).
export const typecheckDecorated = () => {
  Kernels.scale(zeros([ROWS, COLS]), zeros([ROWS, COLS]));
  Kernels.scale({ data: new Float32Array(4), dims: [2, 2] }, { data: new Float32Array(4), shape: [2, 2] });
  addKernel(zeros([2, 2]), zeros([2, 2]), zeros([2, 2]));
};

describe("decorated static methods", () => {
  it("record a def and parse the method from the file", () => {
    const def = defOf(Kernels.scale);
    expect(def).toMatchObject({ kind: "orchestration", name: "scale", decorated: true });
    expect(def.site?.file).toBe(FILE);
    const p = parse(Kernels.scale, T, T);
    const f = fn(p);
    expect(f.name).toBe("scale");
    expect(f.params.map((q) => q.dir)).toEqual(["in", "out"]);
    expect(opsOf(f)).toEqual(["tile.load", "tile.mul", "tile.store"]);
    const store = (f.body[0] as Scope).body[0];
    expect(store.span).toMatchObject({ file: FILE, ...where(FILE, "MARK:decorated-store", "pl.store") });
    expect(((((store as Stmt & { expr: Call }).expr.args[0]) as Call).args[1] as Const)).toMatchObject({ value: 2, dtype: "float32" });
  });

  it("accept options in the decorator factory form", () => {
    const p = parse(Kernels.shift, T, T);
    const add = (((fn(p).body[0] as Scope).body[0] as Stmt & { expr: Call }).expr.args[0]) as Call;
    expect(add.args[1]).toMatchObject({ kind: "const", value: 3 });
  });
});

// ---------------------------------------------------------------- annotations

const annotated = pl.jit(function annotated(a: pl.Tensor<[128, 128], pl.FP32>, d: pl.Tensor<["N", 128], pl.FP32>, out: pl.InOut<pl.Tensor<[128, 128], "float32">>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t: pl.Tile<[64, 128], pl.FP32> = pl.load(a, [0, 0], [TILE, COLS]);
    const u: pl.Tile<[64, 128], pl.FP32, pl.Mem.Vec, { validShape: [32, 128] }> = pl.load(d, [0, 0], [TILE, COLS], { validShape: [32, 128] });
    const m = pl.move(pl.cast(pl.add(u, t), pl.FP16, "rint"), pl.Mem.Mat);
    pl.store(pl.cast(pl.move(m, pl.Mem.Vec), "float32"), [0, 0], out);
  });
});

describe("annotations", () => {
  it("check shapes/dtypes, keep symbolic dims, read tile and option annotations", () => {
    const p = parse(annotated, T, f32(256, 128), T);
    const f = fn(p);
    expect(f.params.map((q) => q.dir)).toEqual(["in", "in", "inout"]);
    expect(f.params[1].var.type).toEqual(tensorT(["N", 128], "float32"));
    const [t, u, m] = (f.body[0] as Scope).body as Assign[];
    expect(t.targets[0].type).toEqual(tileT([64, 128], "float32"));
    expect(u.targets[0].type).toEqual(tileT([64, 128], "float32", "Vec", [32, 128]));
    expect((u.value as Call).attrs).toEqual({ shape: [64, 128], validShape: [32, 128] });
    expect(m.targets[0].type).toEqual(tileT([64, 128], "float16", "Mat", [32, 128]));
    expect(opsOf(f)).toEqual(["tile.load", "tile.load", "tile.add", "tile.cast", "tile.move", "tile.move", "tile.cast", "tile.store"]);
    const info = paramInfo(defOf(annotated));
    expect(info.map((i) => [i.annotated, i.dir ?? null])).toEqual([
      [tensorT([128, 128], "float32"), null], [tensorT(["N", 128], "float32"), null], [tensorT([128, 128], "float32"), "inout"],
    ]);
  });
});

// ---------------------------------------------------------------- SSA text forms in kernels

const ssaKernel = pl.jit(function ssaKernel(a: pl.Tensor, out: pl.Out<pl.Tensor>, n: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const init = pl.full([TILE, COLS], pl.FP32, 0.0);
    const [acc, cnt] = pl.forRange(0, 2, 1, [init, 0], (i, s, c) => {
      const t = pl.load(a, [i * TILE, 0], [TILE, COLS]);
      pl.yield(pl.add(s, t), c + 1);
    });
    const [w] = pl.whileLoop([cnt], (k) => k < n, (k) => {
      pl.yield(k * 2);
    });
    const [r] = pl.ifElse(w > 4, () => {
      pl.yield(pl.exp(acc));
    }, () => {
      pl.yield(acc);
    });
    pl.store(r, [0, 0], out);
  });
});

describe("SSA forms in kernel source", () => {
  it("build For/While/If with carried values and results", () => {
    const p = parse(ssaKernel, T, T, scalarT("int64"));
    const [, f, w, i] = (fn(p).body[0] as Scope).body as [Assign, For, While, If];
    expect(f.iterArgs.map((v) => v.name)).toEqual(["s", "c"]);
    expect(f.results.map((v) => v.name)).toEqual(["acc", "cnt"]);
    expect(f.inits.length).toBe(2);
    expect(f.body[f.body.length - 1].kind).toBe("yield");
    expect(w.iterArgs.length).toBe(1);
    expect(w.results[0].name).toBe("w");
    expect((w.cond as Call).args[0]).toBe(w.iterArgs[0]);
    expect(i.results.length).toBe(1);
    expect(typeEqual(i.results[0].type, tileT([64, 128], "float32"))).toBe(true);
    verifyProgram(p);
  });
});

// ---------------------------------------------------------------- kernels local to a test, arrows

describe("lexical scoping and anonymous kernels", () => {
  it("resolves consts and sub-kernels declared in an enclosing function", () => {
    const LOCAL = 32;
    const localHelper = pl.jit.inline((t: pl.Tile) => pl.exp(t));
    const localEntry = pl.jit((a: pl.Tensor, out: pl.Out<pl.Tensor>) => {
      pl.at(pl.Level.CORE_GROUP, () => {
        pl.store(localHelper(pl.load(a, [0, 0], [LOCAL, LOCAL])), [0, 0], out);
      });
    });
    expect(defOf(localEntry).name).toBe("localEntry");
    expect(defOf(localHelper).name).toBe("localHelper");
    const p = parse(localEntry, T, T);
    expect(p.functions.map((x) => x.name).sort()).toEqual(["localEntry", "localHelper"]);
    expect(fn(p, "localHelper").returnTypes).toEqual([tileT([32, 32], "float32")]);
  });

  it("an expression-bodied arrow returns its value", () => {
    const ident = pl.jit.incore((a: pl.Tensor) => a);
    const p = parseKernel(defOf(ident), [{ name: "a", type: T }]);
    expect(fn(p).fnKind).toBe("incore");
    expect(fn(p).body.map((s) => s.kind)).toEqual(["return"]);
    roundTrip(p);
  });
});

// ---------------------------------------------------------------- source hash

describe("sourceHash", () => {
  it("is stable and differs between kernels and their dependencies", () => {
    const h = sourceHash(defOf(addKernel));
    expect(h).toMatch(/^[0-9a-f]{32}$/);
    expect(sourceHash(defOf(addKernel))).toBe(h);
    expect(sourceHash(defOf(accKernel))).not.toBe(h);
    // an identical function text with another scope value hashes differently
    const mk = (v: number) => pl.jit(function same(a: pl.Tensor) {
      // @ts-expect-error -- V comes from opts.scope
      return pl.add(a, V);
    }, { scope: { V: v } });
    expect(sourceHash(defOf(mk(1)))).not.toBe(sourceHash(defOf(mk(2))));
    expect(sourceHash(defOf(mk(1)))).toBe(sourceHash(defOf(mk(1))));
    expect(sourceHash(defOf(entryWithSubs))).not.toBe(sourceHash(defOf(addKernel)));
  });
});

// ---------------------------------------------------------------- how pl is imported

describe("the pl namespace under other names", () => {
  it("import { pl as P } from \"tspto\" and import { pl } from a relative index.ts", () => {
    const p = parse(viaAlias, f32(8, 8), f32(8, 8));
    expect(opsOf(fn(p))).toEqual(["tile.load", "tile.exp", "tile.store"]);
    const q = parse(viaRoot, f32(8, 8), tensorT([8, 8], "float16"));
    expect(opsOf(fn(q))).toEqual(["tile.load", "tile.cast", "tile.store"]);
    expect(fn(q).span.file).toMatch(/fixtures\/aliases\.ts$/);
  });
});

// IR text round trip: programs hand-built with the src/ir constructors (SSA and pre-SSA) print
// to kernel source that parseProgramText reads back to a structurally equal program.
import { describe, expect, it } from "vitest";
import { parseProgramText, roundTrip } from "../../src/dsl/index.js";
import {
  getOp, inferCall, INDEX, mkAssign, mkBreak, mkCall, mkConst, mkContinue, mkEval, mkFor, mkFunc, mkIf, mkList, mkReturn,
  mkScope, mkVar, mkWhile, mkYield, NO_SPAN, opForMath, opForOperator, Program, scalarT, tensorT, tileT, tupleT, verifyProgram,
  TsptoSyntaxError, voidT, type Attrs, type Call, type Expr, type Func, type Stmt, type Type, type Var,
} from "../../src/ir/index.js";

// ---------------------------------------------------------------- builders

const op = (name: string, args: Expr[], attrs: Attrs = {}) => mkCall(name, args, attrs, inferCall(getOp(name), args, attrs, NO_SPAN));
const bin = (o: string, a: Expr, b: Expr) => { const d = opForOperator(o, 2)!; return mkCall(d.name, [a, b], {}, inferCall(d, [a, b], {}, NO_SPAN)); };
const un = (o: string, a: Expr) => { const d = opForOperator(o, 1)!; return mkCall(d.name, [a], {}, inferCall(d, [a], {}, NO_SPAN)); };
const math = (f: string, ...a: Expr[]) => { const d = opForMath(f)!; return mkCall(d.name, a, {}, inferCall(d, a, {}, NO_SPAN)); };
const i64 = (v: number) => mkConst(v, "int64");
const list = (...xs: (number | Expr)[]) => mkList(xs.map((x) => (typeof x === "number" ? i64(x) : x)));
const call = (callee: string, args: Expr[], ret: Type) => mkCall("call", args, { callee }, ret);
const assign = (v: Var, e: Expr) => mkAssign([v], e);

function program(entry: string, ...fns: Func[]): Program {
  return new Program(`prog_${entry}`, entry, fns);
}

/** Print, parse back, compare; and the reparsed program prints identically. */
function check(p: Program): Program {
  roundTrip(p);
  const q = parseProgramText(p.asText());
  expect(q.asText()).toBe(p.asText());
  expect(q.name).toBe(p.name);
  expect(q.entry).toBe(p.entry);
  return q;
}

const F = tensorT([128, 128], "float32");
const TILE = tileT([64, 128], "float32");

// ---------------------------------------------------------------- SSA programs

/** An InCore kernel with For/While/If carrying values, yields, breaks/continues with values, two returns. */
function ssaKernel(): Func {
  const a = mkVar("a", F), out = mkVar("out", F);
  const init = mkVar("init", TILE);
  const i = mkVar("i", INDEX), acc = mkVar("acc", TILE), cnt = mkVar("cnt", INDEX);
  const t = mkVar("t", TILE), acc2 = mkVar("acc", TILE), c2 = mkVar("c", INDEX);
  const accR = mkVar("accR", TILE), cntR = mkVar("cntR", INDEX);
  const w = mkVar("w", INDEX), nw = mkVar("nw", INDEX), wR = mkVar("wR", INDEX);
  const e = mkVar("e", TILE), r = mkVar("r", TILE), flag = mkVar("flag", scalarT("bool"));
  const loop = mkFor({
    loopVar: i, start: i64(0), stop: i64(2), step: i64(1), iterArgs: [acc, cnt], inits: [init, i64(0)],
    body: [
      assign(t, op("tile.load", [a, list(bin("*", i, i64(64)), 0)], { shape: [64, 128] })),
      assign(acc2, op("tile.add", [acc, t])),
      assign(c2, bin("+", cnt, i64(1))),
      mkIf({ cond: bin(">", c2, i64(5)), then: [mkBreak([acc2, c2])], else: [], results: [] }),
      mkYield([acc2, c2]),
    ],
    results: [accR, cntR],
  });
  const wl = mkWhile({
    iterArgs: [w], inits: [cntR], cond: bin("<", w, i64(10)),
    body: [
      assign(nw, bin("*", w, i64(2))),
      mkIf({ cond: bin("===", nw, i64(8)), then: [mkContinue([nw])], else: [], results: [] }),
      mkYield([nw]),
    ],
    results: [wR],
  });
  const br = mkIf({
    cond: bin("&&", bin(">", wR, i64(4)), flag),
    then: [assign(e, op("tile.exp", [accR])), mkYield([e])],
    else: [mkYield([accR])],
    results: [r],
  });
  return mkFunc({
    name: "kernel", fnKind: "incore", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }, { var: flag, dir: "in" }],
    returnTypes: [F, INDEX],
    body: [
      assign(init, op("tile.full", [], { shape: [64, 128], dtype: "float32", value: 0 })),
      loop, wl, br,
      mkEval(op("tile.store", [r, list(0, 0), out])),
      mkReturn([out, wR]),
    ],
    attrs: { scratchBytes: 65536, core: "vec", flags: [true, null, 1.5], nested: { a: [1, 2], b: "x" } },
  });
}

function ssaEntry(): Func {
  const a = mkVar("a", F), out = mkVar("out", F);
  const o = mkVar("o", F), n = mkVar("n", INDEX);
  return mkFunc({
    name: "main", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }], returnTypes: [F],
    body: [mkAssign([o, n], call("kernel", [a, out, mkConst(true, "bool")], tupleT([F, INDEX]))), mkReturn([o])],
  });
}

describe("SSA programs round-trip", () => {
  it("loops and branches with carried values, breaks/continues with values, multiple returns, attrs", () => {
    const p = program("main", ssaKernel(), ssaEntry());
    verifyProgram(p);
    const q = check(p);
    const k = q.getFunction("kernel")!;
    expect(k.attrs).toEqual({ scratchBytes: 65536, core: "vec", flags: [true, null, 1.5], nested: { a: [1, 2], b: "x" } });
    expect(k.returnTypes.length).toBe(2);
    const text = p.asText();
    expect(text).toContain("= pl.forRange(0, 2, 1, [init, 0], (i: pl.Scalar<pl.INT64>, acc: pl.Tile<[64, 128], pl.FP32, pl.Mem.Vec>, cnt: pl.Scalar<pl.INT64>) => {");
    expect(text).toContain("pl.break(acc_1, c);");
    expect(text).toContain("pl.continue(nw);");
    expect(text).toContain("= pl.whileLoop([cntR], (w: pl.Scalar<pl.INT64>) => w < 10, (w: pl.Scalar<pl.INT64>) => {");
    expect(text).toContain("= pl.ifElse(wR > 4 && flag, () => {");
    expect(text).toContain("const [o, n] = kernel(a, out, true);");
    expect(text).toContain("return [out, wR];");
  });

  it("a difference is detected (the check can fail)", () => {
    const p = program("main", ssaKernel(), ssaEntry());
    const text = p.asText().replace("w < 10", "w <= 10");
    const diff = p.structuralDiff(parseProgramText(text));
    expect(diff).toMatch(/scalar\.lt vs scalar\.le/);
  });
});

describe("constants, types and names", () => {
  it("tiles with addresses and validShape, dtype constants, floats, negatives", () => {
    const a = mkVar("a", tensorT(["N", 128], "float16"));
    const s = mkVar("s", scalarT("float32"));
    const x = mkVar("x", tileT([32, 128], "float16", "Vec", [16, 128], 4096));
    const y = mkVar("y", tileT([32, 128], "float16", "Mat", [16, 128], 8192));
    const m = mkVar("m", tileT([32, 128], "float16", "Acc", ["M", 128], null));
    const k = mkVar("k", scalarT("int32")), f = mkVar("f", scalarT("float32")), g = mkVar("g", scalarT("float32"));
    const neg = mkVar("neg", INDEX), b = mkVar("b", scalarT("bool")), h = mkVar("h", scalarT("float16"));
    const body: Stmt[] = [
      assign(x, op("tile.load", [a, list(0, 0)], { shape: [32, 128], validShape: [16, 128] })),
      assign(y, op("tile.move", [x], { mem: "Mat" })),
      assign(k, bin("+", mkConst(7, "int32"), mkConst(-3, "int32"))),
      assign(f, bin("*", bin("+", mkConst(2, "float32"), s), mkConst(1e-5, "float32"))),
      assign(g, bin("-", mkConst(-0.5, "float32"), bin("-", mkConst(-0, "float32"), mkConst(Infinity, "float32")))),
      assign(neg, un("-", un("-", mkConst(-1, "int64")))),
      assign(neg, un("-", mkConst(1, "int64"))),
      assign(neg, un("-", un("-", neg))),
      assign(b, un("!", bin("||", mkConst(true, "bool"), bin("<", mkConst(1, "bool"), mkConst(NaN, "float32"))))),
      assign(h, mkConst(1.5, "float16")),
      mkEval(op("tile.store", [op("tile.cast", [op("tile.move", [y], { mem: "Vec" }), ], { dtype: "float16", mode: "floor" }), list(mkConst(0, "int32"), neg), a])),
      mkReturn([]),
    ];
    const fn = mkFunc({ name: "consts", fnKind: "inline", params: [{ var: a, dir: "inout" }, { var: s, dir: "in" }, { var: m, dir: "in" }], returnTypes: [], body });
    const p = new Program('a "quoted" name', "consts", [fn]);
    check(p);
    const text = p.asText();
    expect(text).toContain("const x: pl.Tile<[32, 128], pl.FP16, pl.Mem.Vec, { validShape: [16, 128]; addr: 4096 }> = pl.load(a, [0, 0], [32, 128], { validShape: [16, 128] });");
    expect(text).toContain("pl.const(7, pl.INT32) + pl.const(-3, pl.INT32)");
    expect(text).toContain("(2.0 + s) * 0.00001");
    expect(text).toContain("neg = -(-(-1));");
    expect(text).toContain("neg = -(1);");
    expect(text).toContain("neg = -(-neg);");
    expect(text).toContain("m: pl.Tile<[32, 128], pl.FP16, pl.Mem.Acc, { validShape: [\"M\", 128] }>");
    expect(text).toContain("a: pl.InOut<pl.Tensor<[\"N\", 128], pl.FP16>>");
  });

  it("operator precedence and Math functions", () => {
    const a = mkVar("a", INDEX), b = mkVar("b", INDEX), c = mkVar("c", INDEX), r = mkVar("r", INDEX), q = mkVar("q", scalarT("bool"));
    const fn = mkFunc({
      name: "prec", fnKind: "incore", params: [a, b, c].map((v) => ({ var: v, dir: "in" as const })), returnTypes: [INDEX, scalarT("bool")],
      body: [
        assign(r, bin("-", a, bin("-", b, c))),
        assign(r, bin("*", bin("+", a, b), c)),
        assign(r, bin("%", math("min", a, bin("+", b, c)), math("floor", bin("/", a, b)))),
        assign(q, bin("||", bin("&&", bin("<", a, b), un("!", bin("===", b, c))), bin("!==", a, c))),
        assign(q, bin("&&", q, bin("||", q, q))),
        mkReturn([r, q]),
      ],
    });
    check(program("prec", fn));
    expect(program("prec", fn).asText()).toContain("r = a - (b - c);");
  });
});

describe("pre-SSA programs round-trip", () => {
  it("let rebinding in loops, scopes, calls of inline helpers, lists in variables", () => {
    const a = mkVar("a", F), out = mkVar("out", F), n = mkVar("n", INDEX);
    const acc = mkVar("acc", TILE), i = mkVar("i", INDEX), t = mkVar("t", TILE), k = mkVar("k", INDEX), offs = mkVar("offs", tupleT([]));
    void offs;
    const helperT = mkVar("t", TILE);
    const helper = mkFunc({ name: "helper", fnKind: "inline", params: [{ var: helperT, dir: "in" }], returnTypes: [TILE], body: [mkReturn([op("tile.relu", [helperT])])] });
    const body: Stmt[] = [
      mkScope("CORE_GROUP", [
        assign(acc, op("tile.full", [], { shape: [64, 128], dtype: "float32", value: 0.5 })),
        mkFor({
          loopVar: i, start: i64(0), stop: n, step: i64(1), iterArgs: [], inits: [], results: [],
          body: [
            assign(t, op("tile.load", [a, list(bin("*", i, i64(64)), 0)], { shape: [64, 128] })),
            mkIf({ cond: bin("===", i, i64(1)), then: [mkContinue()], else: [], results: [] }),
            assign(acc, op("tile.add", [acc, call("helper", [t], TILE)])),
          ],
        }),
        assign(k, i64(0)),
        mkWhile({ iterArgs: [], inits: [], cond: bin("<", k, n), results: [], body: [assign(k, bin("+", k, i64(1))), mkIf({ cond: bin(">", k, i64(3)), then: [mkBreak()], else: [assign(k, bin("+", k, i64(1)))], results: [] })] }),
        mkEval(op("tile.store", [acc, list(0, 0), out])),
      ]),
      mkReturn([out]),
    ];
    const main = mkFunc({ name: "main", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }, { var: n, dir: "in" }], returnTypes: [F], body });
    const p = program("main", main, helper);
    verifyProgram(p);
    check(p);
    expect(p.asText()).toContain("let acc = pl.full([64, 128], pl.FP32, 0.5);");
  });

  it("hoists lets first assigned inside a branch and multi-target rebinding", () => {
    const a = mkVar("a", F), c = mkVar("c", scalarT("bool"));
    const x = mkVar("x", INDEX), y = mkVar("y", INDEX), u = mkVar("u", F), v = mkVar("v", F);
    const pair = mkFunc({ name: "pair", fnKind: "incore", params: [{ var: mkVar("p", F), dir: "in" }], returnTypes: [F, F], body: [] });
    const pp = pair.params[0].var;
    const pairFn = mkFunc({ ...pair, params: pair.params, body: [mkReturn([pp, pp])] });
    const body: Stmt[] = [
      mkIf({ cond: c, then: [assign(x, i64(1)), assign(y, i64(2))], else: [assign(x, i64(3)), assign(y, i64(4))], results: [] }),
      assign(x, bin("+", x, y)),
      mkAssign([u, v], call("pair", [a], tupleT([F, F]))),
      mkAssign([u, v], call("pair", [u], tupleT([F, F]))),
      mkReturn([v]),
    ];
    const main = mkFunc({ name: "main", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: c, dir: "in" }], returnTypes: [F], body });
    const p = program("main", main, pairFn);
    check(p);
    const text = p.asText();
    expect(text).toContain("  let x: pl.Scalar<pl.INT64>;\n  let y: pl.Scalar<pl.INT64>;\n  let u: pl.Tensor<[128, 128], pl.FP32>;");
    expect(text).toContain("[u, v] = pair(a);");
    expect(text).toContain("[u, v] = pair(u);");
  });

  it("a void function, a function with no params, an Eval of a call", () => {
    const nothing = mkFunc({ name: "nothing", fnKind: "incore", params: [], returnTypes: [], body: [] });
    const main = mkFunc({ name: "main", fnKind: "orchestration", params: [], returnTypes: [], body: [mkEval(call("nothing", [], voidT)), mkReturn([])] });
    check(program("main", main, nothing));
  });
});

describe("attributes added by passes", () => {
  it("ride along in pl.withAttrs on calls, ops and scalar operators", () => {
    const a = mkVar("a", F), out = mkVar("out", F), i = mkVar("i", INDEX);
    const k = mkFunc({ name: "k", fnKind: "incore", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }], returnTypes: [], body: [] });
    const t = mkVar("t", TILE);
    const withExtra = (c: Call, extra: Attrs) => mkCall(c.op, c.args, { ...c.attrs, ...extra }, c.type);
    const main = mkFunc({
      name: "main", fnKind: "orchestration", params: [{ var: a, dir: "in" }, { var: out, dir: "out" }], returnTypes: [],
      body: [
        mkEval(withExtra(call("k", [a, out], voidT), { scopeId: 0, accesses: [{ arg: 0, mode: "read" }, { arg: 1, mode: "write" }] })),
        assign(i, withExtra(bin("+", i64(1), i64(2)), { folded: false })),
        mkScope("CORE_GROUP", [
          assign(t, withExtra(op("tile.load", [a, list(i, 0)], { shape: [64, 128], mem: "Vec" }), { fused: "chain0", note: null })),
          mkEval(op("tile.store", [t, list(0, 0), out])),
        ]),
      ],
    });
    const p = program("main", main, k);
    check(p);
    const text = p.asText();
    expect(text).toContain(`pl.withAttrs(k(a, out), { "scopeId": 0, "accesses": [{ "arg": 0, "mode": "read" }, { "arg": 1, "mode": "write" }] });`);
    expect(text).toContain(`pl.withAttrs(1 + 2, { "folded": false })`);
    expect(text).toContain(`pl.withAttrs(pl.load(a, [i, 0], [64, 128], { mem: pl.Mem.Vec }), { "fused": "chain0" })`);
  });
});

describe("parseProgramText errors", () => {
  it("locates problems in the text (<ir>:line:col)", () => {
    const bad = `import * as pl from "tspto/language";\nconst f = 3;\n`;
    expect(() => parseProgramText(bad)).toThrow(TsptoSyntaxError);
    expect(() => parseProgramText(bad)).toThrow(/<ir>:2:7/);
    const unann = `const f = pl.jit(function f(a: pl.Tensor): void {\n});\n`;
    expect(() => parseProgramText(unann, "x.ts")).toThrow(/parameter 'a' must be fully annotated in IR text/);
    const undef = `const f = pl.jit(function f(a: pl.Scalar<pl.INT64>): void {\n  g(a);\n});\n`;
    expect(() => parseProgramText(undef)).toThrow(/cannot resolve identifier 'g' in kernel 'f'[^]*<ir>:2:3/);
  });
});

// Every user-facing front-end error: its class, code and message, and that it points at the
// right place of this file (file:line:col, the source line, a caret) with a hint.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as pl from "../../src/language.js";
import { defineKernel, parseKernel, paramInfo } from "../../src/dsl/index.js";
import { scalarT, tensorT, TsptoCompileError, TsptoError, TsptoRuntimeError, TsptoSyntaxError, TsptoTypeError, type Type } from "../../src/ir/index.js";
import { FIX_MUTABLE } from "./fixtures/consts.js";
import { bindings, defOf, expectError, parse } from "./helpers.js";

const FILE = fileURLToPath(import.meta.url);
const T = tensorT([128, 128], "float32");
const parseWith = (k: unknown, ...args: (Type | number | boolean)[]) => () => parseKernel(defOf(k), bindings(args));
const at = (marker: string, token: string) => ({ file: FILE, marker, token });

declare const FOO: number;
let mutableRows = 4;
function plainHelper(x: unknown) {
  return x;
}

// ---------------------------------------------------------------- misplaced ops

const misplacedTensor = pl.jit(function misplacedTensor(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.assign(out, pl.add(a, b)); // MARK:misplaced-tensor
  return out;
});
const misplacedTile = pl.jit(function misplacedTile(a: pl.Tensor) {
  if (true) {
    const t = pl.load(a, [0, 0], [4, 4]); // MARK:misplaced-tile
  }
});

describe("E_MISPLACED", () => {
  it("a tensor op in an orchestration function outside pl.at", () => {
    const e = expectError(parseWith(misplacedTensor, T, T, T), {
      cls: TsptoCompileError, code: "E_MISPLACED", ...at("MARK:misplaced-tensor", "pl.add"),
      message: "Misplaced tensor op 'tensor.add' in Orchestration function (should be inside InCore block)",
      hint: "pl.at(pl.Level.CORE_GROUP",
    });
    expect(e.detail).toBe("Misplaced tensor op 'tensor.add' in Orchestration function (should be inside InCore block)");
  });
  it("a tile op, also nested in control flow", () => {
    const e = expectError(parseWith(misplacedTile, T), {
      cls: TsptoCompileError, code: "E_MISPLACED", ...at("MARK:misplaced-tile", "pl.load"),
      message: "Misplaced tensor op 'tile.load' in Orchestration function (should be inside InCore block)", hint: "pl.jit.incore",
    });
    expect(e).toBeInstanceOf(TsptoError);
  });
});

// ---------------------------------------------------------------- unresolved identifiers

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [FOO, 128]); // MARK:unresolved
    const tb = pl.load(b, [0, 0], [128, 128]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});
const usesLet = pl.jit(function usesLet(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    for (const i of pl.range(mutableRows)) { // MARK:unresolved-let
      pl.exp(a);
    }
  });
});
const usesImportedLet = pl.jit(function usesImportedLet(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, FIX_MUTABLE], [4, 4]); // MARK:unresolved-import
  });
});

describe("E_UNRESOLVED", () => {
  it("names the identifier and the kernel, and says how to fix it", () => {
    const e = expectError(parseWith(addKernel, T, T, T), {
      cls: TsptoSyntaxError, code: "E_UNRESOLVED", ...at("MARK:unresolved", "FOO"),
      message: "cannot resolve identifier 'FOO' in kernel 'addKernel'",
      hint: "declare it as a module-level const with a constant value, or pass it through pl.jit(fn, { scope: { FOO } })",
    });
    expect(e.hint).toBe("declare it as a module-level const with a constant value, or pass it through pl.jit(fn, { scope: { FOO } })");
  });
  it("a module-level let is not folded", () => {
    expectError(parseWith(usesLet, T), {
      cls: TsptoSyntaxError, code: "E_UNRESOLVED", ...at("MARK:unresolved-let", "mutableRows"),
      message: "cannot resolve identifier 'mutableRows' in kernel 'usesLet' (it is a let/var variable",
    });
  });
  it("nor an exported let of another module", () => {
    expectError(parseWith(usesImportedLet, T), {
      cls: TsptoSyntaxError, code: "E_UNRESOLVED", ...at("MARK:unresolved-import", "FIX_MUTABLE"),
      message: "cannot resolve identifier 'FIX_MUTABLE' in kernel 'usesImportedLet'",
    });
  });
  it("opts.scope fixes it", () => {
    const k = pl.jit(function scoped(a: pl.Tensor) {
      pl.at(pl.Level.CORE_GROUP, () => {
        pl.exp(pl.load(a, [0, 0], [FOO, 8]));
      });
    }, { scope: { FOO: 8 } });
    expect(() => parseWith(k, T)()).not.toThrow();
  });
});

// ---------------------------------------------------------------- unknown ops, arity

const unknownOp = pl.jit(function unknownOp(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [4, 4]);
    // @ts-expect-error -- an op that does not exist
    pl.ad(t, t); // MARK:unknown-op
  });
});
const arity = pl.jit(function arity(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error -- missing the shape
    pl.load(a, [0, 0]); // MARK:arity
  });
});
const subKernel = pl.jit.incore(function subKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.store(pl.load(a, [0, 0], [4, 4]), [0, 0], out);
});
const subArity = pl.jit(function subArity(a: pl.Tensor, b: pl.Tensor) {
  // @ts-expect-error -- one argument short
  subKernel(a, b); // MARK:sub-arity
});

describe("E_UNKNOWN_OP and E_ARITY", () => {
  it("unknown pl op, with the closest names", () => {
    expectError(parseWith(unknownOp, T), {
      cls: TsptoSyntaxError, code: "E_UNKNOWN_OP", ...at("MARK:unknown-op", "pl.ad"), message: "unknown op 'pl.ad'", hint: /did you mean .*pl\.add/,
    });
  });
  it("an op with too few arguments", () => {
    expectError(parseWith(arity, T), {
      cls: TsptoTypeError, code: "E_ARITY", ...at("MARK:arity", "pl.load"), message: "pl.load takes 3 to 4 arguments, got 2",
      hint: "pl.load(tensor, offsets, shape, opts?)",
    });
  });
  it("a sub-kernel called with the wrong number of arguments", () => {
    expectError(parseWith(subArity, T, T), {
      cls: TsptoTypeError, code: "E_ARITY", ...at("MARK:sub-arity", "subKernel"), message: "kernel 'subKernel' takes 3 arguments (a, b, out), got 2",
    });
  });
});

// ---------------------------------------------------------------- unsupported syntax

const cFor = pl.jit(function cFor(a: pl.Tensor) {
  for (let i = 0; i < 4; i++) { // MARK:c-for
    pl.at(pl.Level.CORE_GROUP, () => {});
  }
});
const closure = pl.jit(function closure(a: pl.Tensor) {
  const f = (x: number) => x + 1; // MARK:closure
});
const usesVar = pl.jit(function usesVar(a: pl.Tensor) {
  var x = 1; // MARK:var
});
const callsPlain = pl.jit(function callsPlain(a: pl.Tensor) {
  plainHelper(a); // MARK:plain-call
});
const ternary = pl.jit(function ternary(a: pl.Tensor, n: pl.Scalar<pl.INT64>) {
  const m = n > 0 ? n : 0; // MARK:ternary
});
const switchStmt = pl.jit(function switchStmt(a: pl.Tensor, n: pl.Scalar<pl.INT64>) {
  switch (n) { // MARK:switch
    default:
  }
});
const badLevel = pl.jit(function badLevel(a: pl.Tensor) {
  pl.at("VECTOR" as unknown as pl.Level, () => {}); // MARK:bad-level
});
const returnInAt = pl.jit(function returnInAt(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    return; // MARK:return-in-at
  });
});
const yieldOutside = pl.jit(function yieldOutside(a: pl.Tensor) {
  pl.yield(a); // MARK:yield-outside
});
const breakOutside = pl.jit(function breakOutside(a: pl.Tensor) {
  pl.break(); // MARK:break-outside
});
const badAnnotation = pl.jit(function badAnnotation(a: string) { // MARK:bad-annotation
  return a;
});

describe("E_SYNTAX", () => {
  const cases: [string, unknown, string, string, string | RegExp][] = [
    ["C-style for", cFor, "for (let", "C-style for loops are not supported in kernels", "for (const i of pl.range(start, stop, step))"],
    ["closures", closure, "(x: number) =>", "closures are not supported in kernels", "pl.jit.inline"],
    ["var", usesVar, "var x", "'var' is not supported in kernels", "let"],
    ["calling a plain function", callsPlain, "plainHelper(a)", "cannot call 'plainHelper' in a kernel: it is not a kernel", "pl.jit.inline(function plainHelper"],
    ["conditional expressions", ternary, "n > 0 ?", "conditional expressions (c ? a : b) are not supported in kernels", "if (c)"],
    ["switch", switchStmt, "switch", "'switch' statements are not supported in kernels", "if/else"],
    ["pl.at with another level", badLevel, "\"VECTOR\"", "pl.at supports only pl.Level.CORE_GROUP", "pl.at(pl.Level.CORE_GROUP"],
    ["return inside pl.at", returnInAt, "return;", "return inside pl.at(...) would return from the arrow function", "after the pl.at"],
    ["pl.yield outside the SSA forms", yieldOutside, "pl.yield", "pl.yield is only allowed in the bodies of pl.forRange", "let"],
  ];
  for (const [what, k, token, message, hint] of cases) {
    it(what, () => {
      const marker = `MARK:${{ "C-style for": "c-for", closures: "closure", var: "var", "calling a plain function": "plain-call",
        "conditional expressions": "ternary", switch: "switch", "pl.at with another level": "bad-level", "return inside pl.at": "return-in-at",
        "pl.yield outside the SSA forms": "yield-outside" }[what]}`;
      const args: Type[] = k === ternary || k === switchStmt ? [T, scalarT("int64")] : [T];
      expectError(parseWith(k, ...args), { cls: TsptoSyntaxError, code: "E_SYNTAX", ...at(marker, token), message, hint });
    });
  }
  it("pl.break outside a loop", () => {
    expectError(parseWith(breakOutside, T), { cls: TsptoSyntaxError, code: "E_SYNTAX", ...at("MARK:break-outside", "pl.break"), message: "pl.break outside a loop" });
  });
  it("an unsupported parameter annotation (also from paramInfo)", () => {
    const x = { cls: TsptoSyntaxError, code: "E_SYNTAX", ...at("MARK:bad-annotation", "string"), message: "unsupported type annotation 'string' in a kernel", hint: "pl.Tensor" };
    expectError(() => paramInfo(defOf(badAnnotation)), x);
    expectError(parseWith(badAnnotation, T), x);
  });
});

// ---------------------------------------------------------------- entries, recursion

const callsEntry = pl.jit(function callsEntry(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  // @ts-expect-error an entry takes host tensors, not a kernel's pl.Tensor (the parser's error is checked)
  addKernel(a, b, out); // MARK:entry-call
});
const rec = pl.jit.incore(function rec(a: pl.Tensor): void {
  rec(a); // MARK:recursion
});
const callsRec = pl.jit(function callsRec(a: pl.Tensor) {
  rec(a);
});

describe("calls", () => {
  it("E_ENTRY_CALL: an entry calling an entry", () => {
    expectError(parseWith(callsEntry, T, T, T), {
      cls: TsptoSyntaxError, code: "E_ENTRY_CALL", ...at("MARK:entry-call", "addKernel"),
      message: "cannot call entry kernel 'addKernel' from kernel 'callsEntry'", hint: "make 'addKernel' a device kernel with pl.jit.incore",
    });
  });
  it("recursion", () => {
    expectError(parseWith(callsRec, T), {
      cls: TsptoSyntaxError, code: "E_SYNTAX", ...at("MARK:recursion", "rec(a)"), message: "kernel 'rec' calls itself; recursion is not supported",
    });
  });
});

// ---------------------------------------------------------------- variables

const possiblyUnassigned = pl.jit(function possiblyUnassigned(a: pl.Tensor, out: pl.Out<pl.Tensor>, n: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let t: pl.Tile;
    if (n > 0) {
      t = pl.load(a, [0, 0], [4, 4]);
    }
    // @ts-expect-error -- possibly unassigned on purpose
    pl.store(t, [0, 0], out); // MARK:possibly-unassigned
  });
});
const unassignedInLoop = pl.jit(function unassignedInLoop(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let t: pl.Tile;
    for (const i of pl.range(2)) {
      t = pl.load(a, [i, 0], [4, 4]);
    }
    // @ts-expect-error -- possibly unassigned on purpose
    pl.store(t, [0, 0], out); // MARK:loop-unassigned
  });
});
const assignedBothWays = pl.jit(function assignedBothWays(a: pl.Tensor, out: pl.Out<pl.Tensor>, n: pl.Scalar<pl.INT64>) {
  let k;
  if (n > 0) {
    k = 1;
  } else {
    return out;
  }
  let m: number;
  if (n > 1) {
    m = 2;
  } else {
    m = 3;
  }
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(a, [0, 0], [4, 4]), k + m), [0, 0], out);
  });
  return out;
});
const assignParam = pl.jit(function assignParam(a: pl.Tensor, b: pl.Tensor) {
  a = b; // MARK:assign-param
});
const assignConst = pl.jit(function assignConst(a: pl.Tensor) {
  const x = 1;
  // @ts-expect-error -- assigning a const on purpose
  x = 2; // MARK:assign-const
});
const retype = pl.jit(function retype(a: pl.Tensor) {
  let s = 0;
  s = 1.5; // MARK:retype
});

describe("variables", () => {
  it("E_UNASSIGNED: reading a let that is possibly unassigned (branch)", () => {
    expectError(parseWith(possiblyUnassigned, T, T, scalarT("int64")), {
      cls: TsptoSyntaxError, code: "E_UNASSIGNED", ...at("MARK:possibly-unassigned", "t, [0"), message: "'t' is possibly unassigned here",
      hint: "let t = ...",
    });
  });
  it("E_UNASSIGNED: assigned only in a loop body", () => {
    expectError(parseWith(unassignedInLoop, T, T), {
      cls: TsptoSyntaxError, code: "E_UNASSIGNED", ...at("MARK:loop-unassigned", "t, [0"), message: "'t' is possibly unassigned here",
    });
  });
  it("a let assigned on every path (or left by return) is definitely assigned", () => {
    const p = parse(assignedBothWays, T, T, scalarT("int64")); // round-trips: the printer hoists `let k: ...;`
    expect(p.asText()).toMatch(/let k: pl\.Scalar<pl\.INT64>;/);
  });
  it("assigning to a parameter", () => {
    expectError(parseWith(assignParam, T, T), {
      cls: TsptoSyntaxError, code: "E_ASSIGN", ...at("MARK:assign-param", "a = b"), message: "cannot assign to parameter 'a' of kernel 'assignParam'",
      hint: "parameters are read-only",
    });
  });
  it("assigning to a const", () => {
    expectError(parseWith(assignConst, T), { cls: TsptoSyntaxError, code: "E_ASSIGN", ...at("MARK:assign-const", "x = 2"), message: "cannot assign to const 'x'" });
  });
  it("rebinding a let with another type", () => {
    expectError(parseWith(retype, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:retype", "s = 1.5"), message: "cannot assign Scalar<float32> to 's' of type Scalar<int64>",
      hint: "s = 0.0",
    });
  });
});

// ---------------------------------------------------------------- types

const signature = pl.jit(function signature(a: pl.Tensor<[64, 64], pl.FP32>) { // MARK:signature
  return a;
});
const shapes = pl.jit(function shapes(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [4, 4]);
    const u = pl.load(a, [0, 0], [8, 4]);
    pl.store(pl.add(t, u), [0, 0], out); // MARK:shapes
  });
});
const window = pl.jit(function window(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.exp(pl.load(a, [120, 0], [16, 16])); // MARK:window
  });
});
const dynShape = pl.jit(function dynShape(a: pl.Tensor, n: pl.Scalar<pl.INT64>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.exp(pl.load(a, [0, 0], [n, 4])); // MARK:dyn-shape
  });
});
const badOption = pl.jit(function badOption(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error -- an option that does not exist
    pl.exp(pl.load(a, [0, 0], [4, 4], { fill: 1 })); // MARK:bad-option
  });
});
const badTileAnnotation = pl.jit(function badTileAnnotation(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t: pl.Tile<[8, 8], pl.FP32> = pl.load(a, [0, 0], [4, 4]); // MARK:bad-tile
  });
});
const tileArith = pl.jit(function tileArith(a: pl.Tensor) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [4, 4]);
    // @ts-expect-error -- operators are for scalars
    const u = t + 1; // MARK:tile-arith
  });
});

describe("type errors", () => {
  it("E_SIGNATURE: an annotation the argument does not match", () => {
    expectError(parseWith(signature, T), {
      cls: TsptoTypeError, code: "E_SIGNATURE", ...at("MARK:signature", "pl.Tensor<[64"),
      message: "parameter 'a' of kernel 'signature' is annotated Tensor<[64, 64], float32> but the argument is Tensor<[128, 128], float32>",
    });
    expect(parseWith(signature, tensorT([64, 64], "float32"))).not.toThrow();
    expectError(parseWith(signature, tensorT([64, 64], "float16")), {
      cls: TsptoTypeError, code: "E_SIGNATURE", ...at("MARK:signature", "pl.Tensor<[64"), message: "but the argument is Tensor<[64, 64], float16>",
    });
  });
  it("E_TYPE from op type inference, located at the op", () => {
    expectError(parseWith(shapes, T, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:shapes", "pl.add"), message: "pl.add: shapes differ: Tile<[4, 4], float32, Vec> and Tile<[8, 4], float32, Vec>",
    });
  });
  it("a static window outside the tensor", () => {
    expectError(parseWith(window, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:window", "pl.load"), message: "is outside tensor 'a' of shape [128, 128]",
    });
  });
  it("a shape that is not constant", () => {
    expectError(parseWith(dynShape, T, scalarT("int64")), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:dyn-shape", "[n, 4]"), message: "pl.load: 'shape' must be a list of constant integers",
    });
  });
  it("an unknown op option", () => {
    expectError(parseWith(badOption, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:bad-option", "fill"), message: "pl.load: unknown option 'fill' (expected validShape, mem)",
    });
  });
  it("a tile annotation that does not match the value", () => {
    expectError(parseWith(badTileAnnotation, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:bad-tile", "pl.Tile<[8"), message: "does not match the value's type Tile<[4, 4], float32, Vec>",
    });
  });
  it("operators on tiles", () => {
    expectError(parseWith(tileArith, T), {
      cls: TsptoTypeError, code: "E_TYPE", ...at("MARK:tile-arith", "t + 1"), message: "operator '+' applies to scalars", hint: "pl.add(a, b)",
    });
  });
});

// ---------------------------------------------------------------- run time

describe("calling pl at run time", () => {
  it("every op and statement helper throws E_NOT_RUNNABLE", () => {
    const calls: [string, () => unknown][] = [
      ["add", () => pl.add({}, 1)], ["load", () => pl.load({}, [0], [1])], ["at", () => pl.at(pl.Level.CORE_GROUP, () => {})],
      ["range", () => pl.range(4)], ["yield", () => pl.yield()], ["const", () => pl.const(1, pl.INT32)],
      ["forRange", () => pl.forRange(0, 1, 1, [], () => {})],
    ];
    for (const [name, f] of calls) {
      let err: unknown;
      try { f(); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(TsptoRuntimeError);
      expect((err as TsptoError).code).toBe("E_NOT_RUNNABLE");
      expect((err as TsptoError).detail).toBe(
        `pl.${name} was called at run time; kernels are parsed, not run — wrap the function with pl.jit and call the jit function`);
    }
  });

  it("@pl.jit on a non-static method is rejected where the class is defined", () => {
    let err: unknown;
    try {
      class Bad {
        @pl.jit
        f(a: pl.Tensor) { return a; } // MARK:non-static
      }
      void Bad;
    } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoSyntaxError);
    expect((err as TsptoError).message).toContain("@pl.jit decorates static methods");
    expect((err as TsptoError).message).toContain(`test/dsl/errors.test.ts:`);
  });

  it("pl.jit rejects a non-function and bad options", () => {
    expect(() => pl.jit(42 as unknown as () => void, {})).toThrow(/pl\.jit expects a function, got number/);
    expect(() => pl.jit(function k() {}, { scope: 3 as unknown as Record<string, unknown> })).toThrow(/opts\.scope must be an object/);
  });

  it("a kernel whose source cannot be found", () => {
    const bound = function nowhere() {}.bind(null);
    const def = defineKernel("orchestration", bound, {}, "nowhere", null);
    expect(() => paramInfo(def)).toThrow(/cannot find the source of kernel 'nowhere'/);
  });
});

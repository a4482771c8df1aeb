// Bad input to the op set and to multi-kernel programs: each error's class, code, message,
// hint, and that it points at the right place (file:line:col, the source line, a caret).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pl, ir, RunConfig, zeros, randn, TsptoError, TsptoTypeError, TsptoCompileError, TsptoSyntaxError } from "tspto";
import { parseProgramText } from "../../src/dsl/index.js";

const FILE = fileURLToPath(import.meta.url);
const FIXTURE = fileURLToPath(new URL("./fixtures/write_in.ir.txt", import.meta.url));

/** 1-based line/col of `token` on the line of `file` holding `marker`. */
function where(file: string, marker: string, token: string): { line: number; col: number; text: string } {
  const lines = readFileSync(file, "utf8").split(/\r?\n/);
  const i = lines.findIndex((l) => l.includes(marker));
  if (i < 0) throw new Error(`marker ${marker} not found`);
  const col = lines[i].indexOf(token);
  if (col < 0) throw new Error(`token ${token} not on the line of ${marker}`);
  return { line: i + 1, col: col + 1, text: lines[i] };
}

interface Want { cls: new (...a: never[]) => TsptoError; code: string; message: string; marker: string; token: string; hint?: string; file?: string }
function expectError(f: () => unknown, w: Want): TsptoError {
  let err: unknown;
  try { f(); } catch (e) { err = e; }
  expect(err, `expected ${w.code}`).toBeInstanceOf(w.cls);
  const e = err as TsptoError;
  expect(e.code).toBe(w.code);
  expect(e.detail).toContain(w.message);
  const file = w.file ?? FILE;
  const { line, col, text } = where(file, w.marker, w.token);
  expect(e.message).toContain(`${file}:${line}:${col}`);
  expect(e.message).toContain(`${line} | ${text}`);
  const caret = e.message.split("\n").find((l) => /^\s+\| *\^+$/.test(l));
  expect(caret, "a caret line").toBeDefined();
  expect(caret!.indexOf("^") - caret!.indexOf("|") - 2).toBe(col - 1);
  expect(e.span).toMatchObject({ file, line, col });
  if (w.hint !== undefined) expect(e.hint).toContain(w.hint);
  return e;
}

const T = (r: number, c: number, dtype: "float32" | "int32" = "float32") => zeros([r, c], dtype);

// ------------------------------------------------------------------ kernels with mistakes
const noScratch = pl.jit(function noScratch(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    // @ts-expect-error -- the scratch tile is missing
    pl.store(pl.rowMax(x), [0, 0], out); // MARK:no-scratch
  });
  return out;
});
const wrongScratch = pl.jit(function wrongScratch(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.rowSum(x, pl.createTile([8, 8], pl.FP32)), [0, 0], out); // MARK:wrong-scratch
  });
  return out;
});
const shapeMismatch = pl.jit(function shapeMismatch(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]), y = pl.load(a, [0, 0], [4, 16]);
    pl.store(pl.mul(x, y), [0, 0], out); // MARK:shape-mismatch
  });
  return out;
});
const dtypeMismatch = pl.jit(function dtypeMismatch(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.sub(pl.load(a, [0, 0], [8, 16]), pl.load(b, [0, 0], [8, 16])), [0, 0], out); // MARK:dtype-mismatch
  });
  return out;
});
const tensorShapeMismatch = pl.jit(function tensorShapeMismatch(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(out, pl.add(a, b)); // MARK:tensor-shapes
  });
  return out;
});
const innerDims = pl.jit(function innerDims(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.move(pl.load(a, [0, 0], [16, 32], { mem: pl.Mem.Mat }), pl.Mem.Left);
    const tb = pl.move(pl.load(b, [0, 0], [16, 16], { mem: pl.Mem.Mat }), pl.Mem.Right);
    pl.store(pl.matmul(ta, tb), [0, 0], out); // MARK:inner-dims
  });
  return out;
});
const sliceOut = pl.jit(function sliceOut(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.slice(x, [4, 8], [2, 12]), [0, 0], out); // MARK:slice-out
  });
  return out;
});
const assembleOut = pl.jit(function assembleOut(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.assemble(x, pl.load(a, [0, 0], [4, 4]), [6, 0]), [0, 0], out); // MARK:assemble-out
  });
  return out;
});
const tensorAssembleOut = pl.jit(function tensorAssembleOut(a: pl.Tensor, out: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assemble(out, pl.exp(a), [0, 1]); // MARK:tensor-assemble-out
  });
  return out;
});
const loadOut = pl.jit(function loadOut(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(a, [4, 0], [8, 16]), [0, 0], out); // MARK:load-out
  });
  return out;
});
const concatRows = pl.jit(function concatRows(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 8]), y = pl.load(a, [0, 8], [4, 8]);
    pl.store(pl.concat(x, y), [0, 0], out); // MARK:concat-rows
  });
  return out;
});
const badCast = pl.jit(function badCast(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error -- not a dtype
    pl.store(pl.cast(pl.load(a, [0, 0], [8, 16]), "float8"), [0, 0], out); // MARK:bad-cast
  });
  return out;
});
const innerEntry = pl.jit(function innerEntry(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.load(a, [0, 0], [8, 16]), [0, 0], out); });
  return out;
});
const outerEntry = pl.jit(function outerEntry(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  // @ts-expect-error an entry takes host tensors, not a kernel's pl.Tensor (the parser's error is checked)
  return innerEntry(a, out); // MARK:entry-call
});
const tensorInScope = pl.jit(function tensorInScope(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.createTensor([8, 16], pl.FP32); // MARK:create-in-scope
    pl.assign(out, pl.add(a, t));
  });
  return out;
});
const readOut = pl.jit(function readOut(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.mul(x, pl.read(x, [8, 0])), [0, 0], out); // MARK:read-out
  });
  return out;
});
/** The offset is a loop variable: checked at run time. */
const dynamicSlice = pl.jit(function dynamicSlice(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    for (const i of pl.range(4)) {
      pl.store(pl.slice(x, [4, 16], [i * 2, 0]), [0, 0], out); // MARK:dynamic-slice
    }
  });
  return out;
});

describe("bad input to ops", () => {
  it("a row reduction without its scratch tile", () => {
    expectError(() => noScratch.lower(T(8, 16), T(8, 1)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:no-scratch", token: "pl.rowMax",
      message: "pl.rowMax: needs a scratch tile of the input's shape [8,16] as its second operand (PyPTO's contract)",
      hint: "const tmp = pl.createTile([8, 16], pl.FP32); pl.rowMax(x, tmp)",
    });
    expectError(() => wrongScratch.lower(T(8, 16), T(8, 1)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:wrong-scratch", token: "pl.rowSum",
      message: "the scratch tile must be a tile of the input's shape and dtype (Tile<[8,16], float32>), got Tile<[8, 8], float32, Vec>",
    });
  });

  it("binary ops on mismatched shapes or dtypes (tiles and tensors)", () => {
    expectError(() => shapeMismatch.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:shape-mismatch", token: "pl.mul",
      message: "pl.mul: shapes differ: Tile<[8, 16], float32, Vec> and Tile<[4, 16], float32, Vec>", hint: "equal shapes",
    });
    expectError(() => dtypeMismatch.lower(T(8, 16), T(8, 16, "int32"), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:dtype-mismatch", token: "pl.sub",
      message: "pl.sub: dtypes differ: float32 and int32", hint: `pl.cast(x, "float32")`,
    });
    expectError(() => tensorShapeMismatch.lower(T(8, 16), T(16, 8), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:tensor-shapes", token: "pl.add",
      message: "pl.add: shapes do not broadcast: Tensor<[8, 16], float32> and Tensor<[16, 8], float32>", hint: "[M,N] with [1,N] or [M,1]",
    });
  });

  it("matmul with different inner dimensions", () => {
    expectError(() => innerDims.lower(T(16, 32), T(16, 16), T(16, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:inner-dims", token: "pl.matmul",
      message: "pl.matmul: inner dimensions differ: 'ta' is Tile<[16, 32], float32, Left> (K = 32) but 'tb' is Tile<[16, 16], float32, Right> (K = 16)",
      hint: "a[M, K] @ b[K, N]",
    });
  });

  it("slice, assemble and load windows out of bounds", () => {
    expectError(() => sliceOut.lower(T(8, 16), T(4, 8)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:slice-out", token: "pl.slice",
      message: "pl.slice: slice window [2, 12] + [4, 8] is outside tile 'x' of shape [8, 16] (axis 1: 12..20 > 16)",
    });
    expectError(() => assembleOut.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:assemble-out", token: "pl.assemble",
      message: "assemble window [6, 0] + [4, 4] is outside tile 'x' of shape [8, 16] (axis 0: 6..10 > 8)",
    });
    expectError(() => tensorAssembleOut.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:tensor-assemble-out", token: "pl.assemble",
      message: "assemble window [0, 1] + [8, 16] is outside tensor 'out' of shape [8, 16] (axis 1: 1..17 > 16)",
    });
    expectError(() => loadOut.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:load-out", token: "pl.load",
      message: "load window [4, 0] + [8, 16] is outside tensor 'a' of shape [8, 16] (axis 0: 4..12 > 8)",
    });
    expectError(() => readOut.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:read-out", token: "pl.read",
      message: "pl.read: index 8 is out of bounds for axis 0 of Tile<[8, 16], float32, Vec> 'x'", hint: "0 to 7",
    });
  });

  for (const platform of ["cpu", "interp"] as const) {
    it(`a slice window that leaves the tile at run time fails the launch (${platform})`, () => {
      let err: unknown;
      try { dynamicSlice(randn([8, 16], { seed: 1 }), T(4, 16), new RunConfig({ platform })); } catch (e) { err = e; }
      expect(String((err as Error)?.message)).toMatch(/slice window \[6, 0\] \+ \[4, 16\] is outside (tile 'x' of shape|a tile of shape) \[8, 16\]/);
      const { line } = where(FILE, "MARK:dynamic-slice", "pl.slice");
      if (platform === "cpu") expect(String((err as Error).message)).toContain(`${FILE}:${line}:`);
    });
  }

  it("concat of tiles with different row counts", () => {
    expectError(() => concatRows.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:concat-rows", token: "pl.concat",
      message: "pl.concat: row counts differ: 'x' has 8 rows (Tile<[8, 8], float32, Vec>) but 'y' has 4 (Tile<[4, 8], float32, Vec>)",
      hint: "same number of rows",
    });
  });

  it("cast to an unknown dtype", () => {
    expectError(() => badCast.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-cast", token: "pl.cast",
      message: `pl.cast: unknown dtype "float8" for 'dtype'`, hint: "pl.FP32, pl.FP16, pl.BF16",
    });
  });
});

// A sub-kernel whose bare pl.Tensor parameter (= In, API.md) is written.
const writesIn = pl.jit.incore(function writesIn(a: pl.Tensor, y: pl.Tensor) {
  const t = pl.load(a, [0, 0], [8, 16]);
  pl.store(t, [0, 0], y); // MARK:writes-in
});
const callsWritesIn = pl.jit(function callsWritesIn(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  writesIn(a, out);
  return out;
});

describe("bad multi-kernel programs", () => {
  it("an entry calling an entry", () => {
    expectError(() => outerEntry.lower(T(8, 16), T(8, 16)), {
      cls: TsptoSyntaxError, code: "E_ENTRY_CALL", marker: "MARK:entry-call", token: "innerEntry",
      message: "cannot call entry kernel 'innerEntry' from kernel 'outerEntry'", hint: "pl.jit.incore",
    });
  });

  it("createTensor inside pl.at", () => {
    expectError(() => tensorInScope.lower(T(8, 16), T(8, 16)), {
      cls: TsptoCompileError, code: "E_MISPLACED", marker: "MARK:create-in-scope", token: "pl.createTensor",
      message: "pl.createTensor creates an orchestration-level device tensor and is only allowed in an entry (pl.jit), outside pl.at",
      hint: "before the pl.at scope",
    });
  });

  it("a sub-kernel that writes a parameter it does not declare Out (E_WRITE_IN at the write)", () => {
    const p = parseProgramText(readFileSync(FIXTURE, "utf8"), FIXTURE);
    const e = expectError(() => ir.compile(p, { platform: "interp" }), {
      cls: TsptoCompileError, code: "E_WRITE_IN", file: FIXTURE, marker: "pl.store(t, [0, 0], x)", token: "pl.store",
      message: "kernel 'scale' writes parameter 'x', which it does not declare Out or InOut", hint: "pl.InOut<pl.Tensor>",
    });
    const decl = where(FIXTURE, "function scale(", "x: pl.Tensor");
    expect(e.detail).toContain(`(declared at ${FIXTURE}:${decl.line}:${decl.col})`);
  });

  it("the same from jit source: a pl.jit.incore kernel writing its bare pl.Tensor parameter", () => {
    expectError(() => callsWritesIn.lower(T(8, 16), T(8, 16)), {
      cls: TsptoCompileError, code: "E_WRITE_IN", marker: "MARK:writes-in", token: "pl.store",
      message: "kernel 'writesIn' writes parameter 'y', which it does not declare Out or InOut", hint: "pl.Out<pl.Tensor>",
    });
  });
});

// ------------------------------------------------------------------ the PyPTO op catalog: bad input
const bitOnFloat = pl.jit(function bitOnFloat(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.shl(x, 2), [0, 0], out); // MARK:bit-float
  });
  return out;
});
const floatShift = pl.jit(function floatShift(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.shr(x, 1.5), [0, 0], out); // MARK:float-shift
  });
  return out;
});
const tanhOnInt = pl.jit(function tanhOnInt(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.tanh(pl.load(a, [0, 0], [8, 16])), [0, 0], out); // MARK:tanh-int
  });
  return out;
});
const badCmp = pl.jit(function badCmp(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    // @ts-expect-error -- not a compare mode
    pl.store(pl.cmp(x, 0, "lte"), [0, 0], out); // MARK:bad-cmp
  });
  return out;
});
const badSel = pl.jit(function badSel(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    pl.store(pl.sel(x, x, 0), [0, 0], out); // MARK:bad-sel
  });
  return out;
});
const allNumbers = pl.jit(function allNumbers(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const m = pl.cmp(pl.load(a, [0, 0], [8, 16]), 0, "gt");
    // @ts-expect-error -- one of a, b must be a tile
    pl.store(pl.sel(m, 1.0, 0.0), [0, 0], out); // MARK:all-numbers
  });
  return out;
});
const badTranspose = pl.jit(function badTranspose(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.transpose(pl.load(a, [0, 0], [8, 16]), 0, 2), [0, 0], out); // MARK:bad-transpose
  });
  return out;
});
const badTrans = pl.jit(function badTrans(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const x = pl.load(a, [0, 0], [8, 16]);
    const y = pl.load(b, [0, 0], [16, 8]);
    pl.store(pl.matmul(x, y, { aTrans: true }), [0, 0], out); // MARK:trans-flag
  });
  return out;
});
const badAtomic = pl.jit(function badAtomic(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error -- only "add"
    pl.store(pl.load(a, [0, 0], [8, 16]), [0, 0], out, { atomic: "mul" }); // MARK:bad-atomic
  });
  return out;
});
const badDim = pl.jit(function badDim(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(a, [0, 0], [8, 16]), pl.dim(a, 2)), [0, 0], out); // MARK:bad-dim
  });
  return out;
});
const badPrelu = pl.jit(function badPrelu(a: pl.Tensor, s: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.prelu(pl.load(a, [0, 0], [8, 16]), pl.load(s, [0, 0], [1, 16])), [0, 0], out); // MARK:bad-prelu
  });
  return out;
});

describe("bad input to the PyPTO op catalog", () => {
  it("bitwise ops and shifts need integers; transcendental ops need floats", () => {
    expectError(() => bitOnFloat.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bit-float", token: "pl.shl",
      message: "pl.shl: needs an integer operand, got float32", hint: `pl.cast(x, "int32")`,
    });
    expectError(() => floatShift.lower(T(8, 16, "int32"), T(8, 16, "int32")), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:float-shift", token: "pl.shr",
      message: "pl.shr: the second operand 'n' must be an integer, got Scalar<float32>",
    });
    expectError(() => tanhOnInt.lower(T(8, 16, "int32"), T(8, 16, "int32")), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:tanh-int", token: "pl.tanh",
      message: "pl.tanh: needs a floating-point operand, got int32", hint: `pl.cast(x, "float32")`,
    });
  });
  it("cmp modes, sel masks, sel without a tile", () => {
    expectError(() => badCmp.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-cmp", token: "pl.cmp",
      message: `pl.cmp: unknown compare mode "lte"`, hint: `"eq", "ne", "lt", "le", "gt", "ge"`,
    });
    expectError(() => badSel.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-sel", token: "pl.sel",
      message: "pl.sel: the mask 'mask' must be a bool tile, got Tile<[8, 16], float32, Vec>", hint: "pl.cmp(a, b, mode)",
    });
    expectError(() => allNumbers.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:all-numbers", token: "pl.sel",
      message: "pl.sel: needs a tile among its operands (a, b), got only numbers", hint: "pl.full(shape, dtype, value)",
    });
  });
  it("transpose axes, matmul flags, atomic stores, dim axes, prelu slopes", () => {
    expectError(() => badTranspose.lower(T(8, 16), T(16, 8)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-transpose", token: "pl.transpose",
      message: "pl.transpose: axis2 must be an axis of Tile<[8, 16], float32, Vec> (0 to 1), got 2",
    });
    expectError(() => badTrans.lower(T(8, 16), T(16, 8), T(8, 8)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:trans-flag", token: "pl.matmul",
      message: "pl.matmul: inner dimensions differ: 'x' is Tile<[16, 8], float32, Vec> (K = 8) but 'y' is Tile<[16, 8], float32, Vec> (K = 16)",
    });
    expectError(() => badAtomic.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-atomic", token: "pl.store",
      message: `pl.store: unknown atomic mode "mul"`, hint: `{ atomic: "add" }`,
    });
    expectError(() => badDim.lower(T(8, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-dim", token: "pl.dim",
      message: "pl.dim: axis must be an axis of Tensor<[8, 16], float32> (0 to 1), got 2",
    });
    expectError(() => badPrelu.lower(T(8, 16), T(1, 16), T(8, 16)), {
      cls: TsptoTypeError, code: "E_TYPE", marker: "MARK:bad-prelu", token: "pl.prelu",
      message: "pl.prelu: the vector 'slope' must have shape [8, 1]",
    });
  });
});

// pl.matmulQuant's errors (src/ir/ops/quant.ts): bits not 4 / 8, a group size that does not
// divide K, scales of the wrong shape or dtype, a weight of the wrong dtype / shape, each a
// TsptoTypeError at the call (file:line:col, the line, a caret) with a fix; and the refusal on
// the SIMT platforms (cuda, webgpu: E_PLATFORM naming the platform, at the call).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { pl, ir, zeros, TsptoError, TsptoTypeError, TsptoCompileError } from "tspto";

const FILE = fileURLToPath(import.meta.url);

function where(marker: string, token: string): { line: number; col: number; text: string } {
  const lines = readFileSync(FILE, "utf8").split(/\r?\n/);
  const i = lines.findIndex((l) => l.includes(marker) && !l.includes("expectError"));
  if (i < 0) throw new Error(`marker ${marker} not found`);
  const col = lines[i].indexOf(token);
  return { line: i + 1, col: col + 1, text: lines[i] };
}
function expectError(f: () => unknown, w: { cls: new (...a: never[]) => TsptoError; code: string; message: string; marker: string; hint?: string; token?: string }): void {
  let err: unknown;
  try { f(); } catch (e) { err = e; }
  expect(err, `expected ${w.code}`).toBeInstanceOf(w.cls);
  const e = err as TsptoError;
  expect(e.code).toBe(w.code);
  expect(e.detail).toContain(w.message);
  const { line, col, text } = where(w.marker, w.token ?? "pl.matmulQuant(");
  expect(e.message).toContain(`${FILE}:${line}:${col}`);
  expect(e.message).toContain(`${line} | ${text}`);
  const caret = e.message.split("\n").find((l) => /^\s+\| *\^+$/.test(l));
  expect(caret, "a caret line").toBeDefined();
  if (w.hint !== undefined) expect(e.hint).toContain(w.hint);
}

const K = 96, N = 8;
const badBits = pl.jit(function badBits(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    // @ts-expect-error -- bits must be 4 or 8
    pl.assign(y, pl.matmulQuant(x, w, s, { bits: 3, groupSize: 32 })); // MARK:bits
  });
  return y;
});
const badGroup = pl.jit(function badGroup(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.matmulQuant(x, w, s, { bits: 8, groupSize: 40 })); // MARK:group
  });
  return y;
});
const tileQ = pl.jit(function tileQ(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmulQuant(pl.load(x, [0, 0], [1, K]), pl.load(w, [0, 0], [N, K / 2]), pl.load(s, [0, 0], [N, 3]), { bits: 4, groupSize: 32 }), [0, 0], y); // MARK:tile
  });
  return y;
});
const good = pl.jit(function good(x: pl.Tensor, w: pl.Tensor, s: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.assign(y, pl.matmulQuant(x, w, s, { bits: 8, groupSize: 32 })); // MARK:good
  });
  return y;
});

const x = zeros([1, K]), y = zeros([1, N]);
describe("pl.matmulQuant errors", () => {
  it("bits other than 4 / 8", () => {
    expectError(() => badBits.lower(x, zeros([N, K], "int8"), zeros([N, 3]), y), { cls: TsptoTypeError, code: "E_TYPE", message: "pl.matmulQuant: bits must be 4 or 8, got 3", marker: "MARK:bits", hint: "{ bits: 8, groupSize }" });
  });
  it("a group size that does not divide K", () => {
    expectError(() => badGroup.lower(x, zeros([N, K], "int8"), zeros([N, 3]), y), { cls: TsptoTypeError, code: "E_TYPE", message: "groupSize must be a positive integer that divides K = 96, got 40", marker: "MARK:group", hint: "divisors of 96" });
  });
  it("scales of the wrong shape, or dtype", () => {
    expectError(() => good.lower(x, zeros([N, K], "int8"), zeros([N, 4]), y), { cls: TsptoTypeError, code: "E_TYPE", message: "the scales 's' must be a [8, 3] (N, K / groupSize) float32, float16 or bfloat16 tensor, got Tensor<[8, 4], float32>", marker: "MARK:good" });
    expectError(() => good.lower(x, zeros([N, K], "int8"), zeros([N, 3], "int32"), y), { cls: TsptoTypeError, code: "E_TYPE", message: "got Tensor<[8, 3], int32>", marker: "MARK:good" });
  });
  it("a weight of the wrong dtype or packing (tile form)", () => {
    expectError(() => good.lower(x, zeros([N, K], "uint8"), zeros([N, 3]), y), { cls: TsptoTypeError, code: "E_TYPE", message: "the 8-bit weight 'w' must be a int8 [N, K] = [N, 96] tensor", marker: "MARK:good", hint: "tspto.quantize" });
    expectError(() => tileQ.lower(x, zeros([N, K / 2], "int8"), zeros([N, 3]), y), { cls: TsptoTypeError, code: "E_TYPE", message: "the 4-bit weight '<expr>' must be a uint8 [N, K/2] = [N, 48] tile for x Tile<[1, 96], float32, Vec> (K = 96), got Tile<[8, 48], int8, Vec>", marker: "MARK:tile", hint: "low nibble" });
  });
  for (const platform of ["cuda", "webgpu"]) {
    it(`is refused on ${platform} with E_PLATFORM at the call`, () => {
      const p = good.lower(x, zeros([N, K], "int8"), zeros([N, 3]), y);
      expectError(() => ir.compile(p, { platform }), { cls: TsptoCompileError, code: "E_PLATFORM", message: `pl.matmulQuant (weight-only quantized matmul) is not supported on the ${platform} platform yet`, marker: "MARK:good", hint: "cpu", token: "pl.assign(" }); // the statement the op was lowered from
    });
  }
});

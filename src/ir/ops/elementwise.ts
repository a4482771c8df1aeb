// Elementwise ops, tile-level and tensor-level: binary (tile/tile, tile/scalar), unary, cast.
// Arithmetic is done in float64 and the result rounded to the operand dtype (for float16 /
// bfloat16 that is fp32 arithmetic rounded to nearest-even, as SEMANTICS.md says).
import { registerOp, type InferCtx, type OpDef, type OpParam, type OpRow } from "../registry.js";
import type { Attrs } from "../nodes.js";
import { isFloat, isInt, tensorT, tileT, typeStr, dimsEqual, type Dim, type DType, type TileType, type TensorType, type Type } from "../types.js";
import { mkTile, readElem, writeElem, toDType, castToDType, type TensorValue, type TileValue, type Value } from "../values.js";
import { expectDType } from "./common.js";

export type BinaryFn = (a: number, b: number, dtype: DType) => number;
export type UnaryFn = (a: number, dtype: DType) => number;

const intDiv = (a: number, b: number) => (b === 0 ? 0 : Math.trunc(a / b));
export const BINARY: Record<string, { fn: BinaryFn; doc: string }> = {
  add: { fn: (a, b) => a + b, doc: "a + b" },
  sub: { fn: (a, b) => a - b, doc: "a - b" },
  mul: { fn: (a, b) => a * b, doc: "a * b" },
  div: { fn: (a, b, d) => (isInt(d) ? intDiv(a, b) : a / b), doc: "a / b (integers: truncating)" },
  maximum: { fn: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b)), doc: "max(a, b)" },
  minimum: { fn: (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b)), doc: "min(a, b)" },
};
const f32 = Math.fround;
export const UNARY: Record<string, { fn: UnaryFn; floatOnly: boolean; doc: string }> = {
  exp: { fn: (a) => Math.exp(a), floatOnly: true, doc: "e^x" },
  log: { fn: (a) => Math.log(a), floatOnly: true, doc: "natural logarithm" },
  sqrt: { fn: (a) => Math.sqrt(a), floatOnly: true, doc: "square root" },
  rsqrt: { fn: (a) => 1 / f32(Math.sqrt(a)), floatOnly: true, doc: "1 / sqrt(x)" },
  recip: { fn: (a) => 1 / a, floatOnly: true, doc: "1 / x" },
  neg: { fn: (a) => -a, floatOnly: false, doc: "-x" },
  abs: { fn: (a) => Math.abs(a), floatOnly: false, doc: "|x|" },
  relu: { fn: (a) => (a > 0 ? a : 0), floatOnly: false, doc: "max(x, 0)" },
};

type Operand = TileType | TensorType;

function withDType(t: Operand, dtype: DType): Type {
  return t.kind === "tile" ? tileT(t.shape, dtype, t.mem, t.validShape) : tensorT(t.shape, dtype);
}

/** The NumPy broadcast of two shapes of equal rank (null when they do not broadcast). */
function broadcastShape(a: readonly Dim[], b: readonly Dim[]): Dim[] | null {
  if (a.length !== b.length) return null;
  const out: Dim[] = [];
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i] || b[i] === 1) out.push(a[i]);
    else if (a[i] === 1) out.push(b[i]);
    else return null;
  }
  return out;
}

/** Apply fn to every element of the tile/tensor operands (numbers broadcast), producing a new value of `type`. */
function mapValues(inputs: readonly Value[], type: Type, fn: (xs: number[]) => number): Value {
  const out = type as TileType | TensorType;
  const firstArr = inputs.find((v) => typeof v !== "number" && typeof v !== "boolean") as TileValue | TensorValue;
  const outShape = out.kind === "tensor" ? (out.shape as number[]) : firstArr.shape;
  const n = outShape.reduce((x, y) => x * y, 1);
  const outStrides = outShape.map((_, i) => outShape.slice(i + 1).reduce((x, y) => x * y, 1));
  const read = inputs.map((v) => {
    if (typeof v === "number" || typeof v === "boolean") { const c = Number(v); return () => c; }
    const tv = v as TileValue | TensorValue;
    const get = tv.kind === "tile" ? (i: number) => tv.data[i] : (i: number) => readElem(tv, i);
    if (tv.kind === "tile" || tv.shape.every((d, ax) => d === outShape[ax])) return get;
    // a broadcast tensor operand: dims of 1 read index 0
    const st = tv.shape.map((_, i) => tv.shape.slice(i + 1).reduce((x, y) => x * y, 1));
    return (i: number) => {
      let k = 0;
      for (let ax = 0; ax < outShape.length; ax++) if (tv.shape[ax] !== 1) k += (Math.floor(i / outStrides[ax]) % outShape[ax]) * st[ax];
      return get(k);
    };
  });
  const xs = new Array<number>(inputs.length);
  if (out.kind === "tile") {
    const res = mkTile(out.shape, out.dtype, out.mem, out.validShape as number[] | null);
    for (let i = 0; i < n; i++) { for (let k = 0; k < read.length; k++) xs[k] = read[k](i); res.data[i] = toDType(fn(xs), out.dtype); }
    return res;
  }
  const res = newTensor(outShape, out.dtype);
  for (let i = 0; i < n; i++) { for (let k = 0; k < read.length; k++) xs[k] = read[k](i); writeElem(res, i, toDType(fn(xs), out.dtype)); }
  return res;
}

export function newTensor(shape: readonly number[], dtype: DType): TensorValue {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = dtype === "float32" ? new Float32Array(n) : dtype === "float16" || dtype === "bfloat16" ? new Uint16Array(n)
    : dtype === "int8" ? new Int8Array(n) : dtype === "int16" ? new Int16Array(n) : dtype === "int32" ? new Int32Array(n)
    : dtype === "int64" ? new BigInt64Array(n) : new Uint8Array(n);
  return { kind: "tensor", shape: [...shape], dtype, data };
}

// ------------------------------------------------------------------ one elementwise op = one spec

/** The dtypes an elementwise op accepts for its (data) operands. */
export type DTypeFamily = "any" | "float" | "int";

/**
 * An elementwise op: `pl.<name>(operands..., attrs...)` on tiles (tile.<name>) and tensors
 * (tensor.<name>, lowered to tile.<name> tile by tile). Any operand may be a number instead
 * of a tile/tensor (a number first: `pl.sub(1.0, x)`), as long as one is a tile/tensor; tile
 * operands need equal shapes and dtypes. `ref` is the reference semantics: the element value
 * (computed in float64 from the operands' values) before it is rounded to the result dtype.
 * A target adds one formula per op (the cpu one in src/codegen/cpp/emitters/).
 */
export interface ElementwiseSpec {
  readonly name: string;
  /** Value operand names, in order. */
  readonly operands: readonly string[];
  /** Trailing attribute params (cmp's mode). */
  readonly attrs?: readonly OpParam[];
  readonly family: DTypeFamily;
  /** The result dtype: the operands' (default) or bool (cmp). */
  readonly result?: "same" | "bool";
  /** An operand that is a bool mask (sel): not part of the dtype rules. */
  readonly mask?: number;
  /** Operands that must be numbers (expands' value). */
  readonly scalarOnly?: readonly number[];
  /** Check attributes (fail with ctx.fail). */
  readonly checkAttrs?: (ctx: InferCtx, dtype: DType) => void;
  readonly ref: (xs: readonly number[], dtype: DType, attrs: Attrs) => number;
  readonly doc: string;
  /** `pl` signatures (default: derived from the operand count). */
  readonly decl?: readonly string[];
  readonly row?: OpRow;
}

const FAMILY_WORD: Record<DTypeFamily, string> = { any: "", float: "a floating-point", int: "an integer" };
const inFamily = (f: DTypeFamily, d: DType) => f === "any" || (f === "float" ? isFloat(d) : isInt(d));
const ORD = ["first", "second", "third", "fourth"];

function defaultDecl(n: number): string[] {
  if (n === 1) return ["<T extends TileOrTensor>(x: T): T"];
  if (n === 2) return ["<T extends TileOrTensor>(a: T, b: Operand<T> | number): T", "<T extends TileOrTensor>(a: number, b: T): T"];
  return [`<T extends TileOrTensor>(${Array.from({ length: n }, (_, i) => `x${i}: T | number`).join(", ")}): T`];
}

function inferElementwise(ctx: InferCtx, spec: ElementwiseSpec, level: "tile" | "tensor"): Type {
  const n = spec.operands.length;
  const what = (i: number) => (n === 1 ? "the operand" : `the ${ORD[i]} operand '${spec.operands[i]}'`);
  let lead: Operand | undefined;
  for (let i = 0; i < n; i++) {
    const t = ctx.argTypes[i];
    if (!t) ctx.fail(`${what(i)} is missing`);
    if (t.kind === "scalar") continue;
    if (spec.scalarOnly?.includes(i)) ctx.fail(`${what(i)} must be a number, got ${typeStr(t)}`);
    if (t.kind !== level) {
      ctx.fail(`${what(i)} must be a ${level}${n > 1 ? " or a number" : ""}, got ${typeStr(t)}`,
        level === "tile" && t.kind === "tensor" ? "load it into a tile with pl.load, or apply the op to tensors only" : undefined);
    }
    if (i !== spec.mask && !lead) lead = t as Operand;
  }
  const maskT = spec.mask !== undefined ? ctx.argTypes[spec.mask] : undefined;
  if (!lead) {
    ctx.fail(n === 1 ? `the operand must be a ${level}` : `needs a ${level} among its operands (${spec.operands.filter((_, i) => i !== spec.mask).join(", ")}), got only numbers`,
      n > 1 ? `make one operand a ${level}, e.g. pl.full(shape, dtype, value)` : undefined);
  }
  // tensors broadcast NumPy-style: [M,N] with [1,N], [M,1] (equal ranks, 1 stretches)
  let shape: readonly Dim[] = lead.shape;
  if (level === "tensor") {
    for (let i = 0; i < n; i++) {
      const t = ctx.argTypes[i];
      if (t.kind !== "tensor") continue;
      const b = broadcastShape(shape, t.shape);
      if (!b) {
        ctx.fail(`shapes do not broadcast: ${typeStr(lead)} and ${typeStr(t)}`,
          "tensor operands need equal shapes, or a dimension of 1 that stretches ([M,N] with [1,N] or [M,1]), or a number");
      }
      shape = b;
    }
    if (!dimsEqual(shape, lead.shape)) lead = tensorT(shape, lead.dtype);
  }
  const d = lead.dtype;
  if (!inFamily(spec.family, d)) {
    ctx.fail(`needs ${FAMILY_WORD[spec.family]} operand, got ${d}`,
      spec.family === "float" ? `cast first: pl.cast(x, "float32")` : `cast first: pl.cast(x, "int32")`);
  }
  for (let i = 0; i < n; i++) {
    const t = ctx.argTypes[i];
    if (t.kind === "scalar") {
      if (spec.family === "int" && isFloat(t.dtype)) ctx.fail(`${what(i)} must be an integer, got ${typeStr(t)}`, "use an integer number, e.g. 3 rather than 3.0");
      if (i === spec.mask && t.dtype !== "bool") ctx.fail(`the mask '${spec.operands[i]}' must be a bool tile, got ${typeStr(t)}`, "make it with pl.cmp(a, b, mode)");
      continue;
    }
    const tt = t as Operand;
    if (level === "tile" && !dimsEqual(tt.shape, lead.shape)) {
      ctx.fail(`shapes differ: ${typeStr(lead)} and ${typeStr(tt)}`,
        "elementwise ops need equal shapes (or a number as an operand)");
    }
    if (i === spec.mask) {
      if (tt.dtype !== "bool") ctx.fail(`the mask '${spec.operands[i]}' must be a bool ${level}, got ${typeStr(tt)}`, "make it with pl.cmp(a, b, mode)");
    } else if (tt.dtype !== d) {
      ctx.fail(`dtypes differ: ${d} and ${tt.dtype}`, `cast one operand first, e.g. pl.cast(x, "${d}")`);
    }
  }
  void maskT;
  spec.checkAttrs?.(ctx, d);
  return withDType(lead, spec.result === "bool" ? "bool" : d);
}

export const ELEMENTWISE = new Map<string, ElementwiseSpec>();

/** Register tile.<name> and tensor.<name> for an elementwise spec. */
export function defineElementwise(spec: ElementwiseSpec): void {
  ELEMENTWISE.set(spec.name, spec);
  const params: OpParam[] = [...spec.operands.map((name) => ({ name, kind: "value" as const })), ...(spec.attrs ?? [])];
  for (const level of ["tile", "tensor"] as const) {
    registerOp({
      name: `${level}.${spec.name}`, pl: spec.name, level, pure: true, doc: spec.doc, params,
      decl: level === "tile" ? spec.decl ?? defaultDecl(spec.operands.length) : undefined,
      row: spec.row,
      infer: (ctx) => inferElementwise(ctx, spec, level),
      effects: level === "tensor" ? (args) => ({ reads: args.map((a, i) => (a.kind !== "const" && a.type.kind === "tensor" ? i : -1)).filter((i) => i >= 0), writes: [] }) : undefined,
      evaluate(args, attrs, _env, call) {
        const lead = args.find((v, i) => i !== spec.mask && typeof v !== "number" && typeof v !== "boolean") as TileValue | TensorValue;
        const d = lead.dtype;
        return mapValues(args, call.type, (xs) => spec.ref(xs, d, attrs));
      },
    });
  }
}

const BINARY_ROW: OpRow = { key: "binary", call: "add sub mul div maximum minimum (a, b)", does: "elementwise; `a`, `b` of the same shape and dtype, or either a number (integer `div` truncates)" };
for (const [name, { fn, doc }] of Object.entries(BINARY)) {
  defineElementwise({
    name, operands: ["lhs", "rhs"], family: "any", row: BINARY_ROW,
    doc: `${name}(a, b): ${doc}; either operand may be a number`,
    ref: ([x, y], d) => fn(x, y, d),
  });
}
const UNARY_ROW: OpRow = { key: "unary", call: "exp log sqrt rsqrt recip neg abs relu (x)", does: "elementwise; `exp`, `log`: float dtypes, the reference in fp64 rounded once, the cpu's vectorized fp32 functions within 1 ulp of it" };
for (const [name, { fn, floatOnly, doc }] of Object.entries(UNARY)) {
  defineElementwise({
    name, operands: ["x"], family: floatOnly ? "float" : "any", row: UNARY_ROW,
    doc: `${name}(x): ${doc}`,
    ref: ([x], d) => fn(x, d),
  });
}

function expectOperand(ctx: InferCtx, i: number, level: "tile" | "tensor", what: string): Operand {
  const t = ctx.argTypes[i];
  if (!t || t.kind !== level) {
    ctx.fail(`${what} must be a ${level}, got ${t ? typeStr(t) : "nothing"}`,
      level === "tile" && t?.kind === "tensor" ? "load it into a tile with pl.load, or apply the op to tensors only" : undefined);
  }
  return t as Operand;
}

for (const level of ["tile", "tensor"] as const) {
  registerOp({
    name: `${level}.cast`, pl: "cast", level, pure: true,
    doc: `cast(x, dtype, mode = "round"): convert; the mode (round, rint, floor, ceil, trunc) rounds every narrowing, to an integer and to float32/float16/bfloat16`,
    decl: level === "tile" ? [
      "<D extends DType>(x: AnyTile, dtype: D, mode?: RoundMode): AnyTile<D>",
      "<D extends DType>(x: Tensor, dtype: D, mode?: RoundMode): Tensor<any, D>",
    ] : undefined,
    row: { key: "cast", call: "cast(x, dtype, mode = \"round\")", does: "convert; the mode rounds every narrowing conversion, to an integer or to a float format (float32 → float16/bfloat16, int32 → float32, ...): `round` (half away from zero), `rint` (half to even), `floor`, `ceil`, `trunc` (for a float format: drops the low mantissa bits); integers saturate" },
    params: [{ name: "x", kind: "value" }, { name: "dtype", kind: "dtype" }, { name: "mode", kind: "string", optional: true }],
    infer(ctx) {
      const a = expectOperand(ctx, 0, level, "the operand");
      const d = expectDType(ctx, "dtype", ctx.attrs.dtype);
      const mode = ctx.attrs.mode ?? "round";
      if (!["round", "rint", "floor", "ceil", "trunc"].includes(String(mode))) {
        ctx.fail(`unknown rounding mode ${JSON.stringify(mode)}`, `use "round", "rint", "floor", "ceil" or "trunc"`);
      }
      return withDType(a, d);
    },
    effects: level === "tensor" ? () => ({ reads: [0], writes: [] }) : undefined,
    evaluate(args, attrs, _env, call) {
      const dtype = (call.type as TileType).dtype;
      const mode = (attrs.mode ?? "round") as "round";
      // the mode rounds every narrowing, to a float format as to an integer (castToDType)
      return mapValues(args, call.type, ([x]) => castToDType(x, dtype, mode));
    },
  });
}

export type { OpDef };

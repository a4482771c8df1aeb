// Elementwise ops, tile-level and tensor-level: binary (tile/tile, tile/scalar), unary, cast.
// Arithmetic is done in float64 and the result rounded to the operand dtype (for float16 /
// bfloat16 that is fp32 arithmetic rounded to nearest-even, as SEMANTICS.md says).
import { registerOp, type InferCtx, type OpDef } from "../registry.js";
import { isDType, isFloat, isInt, tensorT, tileT, typeStr, dimsEqual, type DType, type TileType, type TensorType, type Type } from "../types.js";
import { mkTile, readElem, writeElem, toDType, roundToDType, type TensorValue, type TileValue, type Value } from "../values.js";
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
const operandKinds = (level: "tile" | "tensor") => (level === "tile" ? ["tile"] : ["tensor"]);

function expectOperand(ctx: InferCtx, i: number, level: "tile" | "tensor", what: string): Operand {
  const t = ctx.argTypes[i];
  if (!t || !operandKinds(level).includes(t.kind)) {
    ctx.fail(`${what} must be a ${level}, got ${t ? typeStr(t) : "nothing"}`,
      level === "tile" && t?.kind === "tensor" ? "load it into a tile with pl.load, or apply the op to tensors only" : undefined);
  }
  return t as Operand;
}

function withDType(t: Operand, dtype: DType): Type {
  return t.kind === "tile" ? tileT(t.shape, dtype, t.mem, t.validShape) : tensorT(t.shape, dtype);
}

/** Apply fn to every element of a tile or tensor value, producing a new value of `type`. */
function mapValues(inputs: readonly Value[], type: Type, fn: (xs: number[]) => number): Value {
  const out = type as TileType | TensorType;
  const n = (inputs[0] as TileValue | TensorValue).data.length;
  const read = inputs.map((v) => {
    if (typeof v === "number" || typeof v === "boolean") { const c = Number(v); return () => c; }
    const tv = v as TileValue | TensorValue;
    return tv.kind === "tile" ? (i: number) => tv.data[i] : (i: number) => readElem(tv, i);
  });
  const xs = new Array<number>(inputs.length);
  if (out.kind === "tile") {
    const res = mkTile(out.shape, out.dtype, out.mem, out.validShape as number[] | null);
    for (let i = 0; i < n; i++) { for (let k = 0; k < read.length; k++) xs[k] = read[k](i); res.data[i] = toDType(fn(xs), out.dtype); }
    return res;
  }
  const shape = (inputs[0] as TensorValue).shape;
  const res = newTensor(shape, out.dtype);
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

for (const level of ["tile", "tensor"] as const) {
  for (const [name, { fn, doc }] of Object.entries(BINARY)) {
    registerOp({
      name: `${level}.${name}`, pl: name, level, pure: true,
      doc: `${name}(a, b): ${doc}; b may be a ${level} of the same shape and dtype or a number`,
      params: [{ name: "lhs", kind: "value" }, { name: "rhs", kind: "value" }],
      infer(ctx) {
        const a = expectOperand(ctx, 0, level, "the first operand");
        const b = ctx.argTypes[1];
        if (b.kind === "scalar") return withDType(a, a.dtype);
        const bb = expectOperand(ctx, 1, level, "the second operand");
        if (!dimsEqual(a.shape, bb.shape)) {
          ctx.fail(`shapes differ: ${typeStr(a)} and ${typeStr(bb)}`, "binary elementwise ops need equal shapes (or a number as the second operand)");
        }
        if (a.dtype !== bb.dtype) {
          ctx.fail(`dtypes differ: ${a.dtype} and ${bb.dtype}`, `cast one operand first, e.g. pl.cast(x, "${a.dtype}")`);
        }
        return withDType(a, a.dtype);
      },
      effects: level === "tensor" ? (args) => ({ reads: args.map((a, i) => (a.kind !== "const" && a.type.kind === "tensor" ? i : -1)).filter((i) => i >= 0), writes: [] }) : undefined,
      evaluate(args, _attrs, _env, call) {
        const dtype = (call.type as TileType).dtype;
        return mapValues(args, call.type, ([x, y]) => fn(x, y, dtype));
      },
    });
  }
  for (const [name, { fn, floatOnly, doc }] of Object.entries(UNARY)) {
    registerOp({
      name: `${level}.${name}`, pl: name, level, pure: true, doc: `${name}(x): ${doc}`,
      params: [{ name: "x", kind: "value" }],
      infer(ctx) {
        const a = expectOperand(ctx, 0, level, "the operand");
        if (floatOnly && !isFloat(a.dtype)) ctx.fail(`needs a floating-point operand, got ${a.dtype}`, `cast first: pl.cast(x, "float32")`);
        return withDType(a, a.dtype);
      },
      effects: level === "tensor" ? () => ({ reads: [0], writes: [] }) : undefined,
      evaluate(args, _attrs, _env, call) {
        const dtype = (call.type as TileType).dtype;
        return mapValues(args, call.type, ([x]) => fn(x, dtype));
      },
    });
  }
  registerOp({
    name: `${level}.cast`, pl: "cast", level, pure: true,
    doc: `cast(x, dtype, mode = "round"): convert (modes round, rint, floor, ceil, trunc)`,
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
      return mapValues(args, call.type, ([x]) => roundToDType(x, dtype, mode));
    },
  });
}

export const isDTypeAttr = isDType;
export type { OpDef };

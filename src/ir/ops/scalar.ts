// Scalar ops: index arithmetic and conditions, written in kernels as TypeScript operators
// (`i * 64`, `n > 0 && !done`) or Math functions. Integers compute as int64, floats as
// double, comparisons give bool.
import { registerOp, type InferCtx } from "../registry.js";
import { isFloat, scalarT, typeStr, type DType, type Type } from "../types.js";

function scalarDType(ctx: InferCtx, i: number): DType {
  const t = ctx.argTypes[i];
  if (t.kind !== "scalar") ctx.fail(`operand ${i + 1} must be a scalar, got ${typeStr(t)}`, "tile and tensor arithmetic uses pl.add/pl.mul/... inside pl.at");
  return t.dtype;
}
const arith = (ctx: InferCtx): Type => {
  const a = scalarDType(ctx, 0), b = scalarDType(ctx, 1);
  return scalarT(isFloat(a) || isFloat(b) ? "float32" : "int64");
};
const floaty = (ctx: InferCtx): Type => { scalarDType(ctx, 0); if (ctx.args.length > 1) scalarDType(ctx, 1); return scalarT("float32"); };
const toInt = (ctx: InferCtx): Type => { scalarDType(ctx, 0); return scalarT("int64"); };
const same = (ctx: InferCtx): Type => { const a = scalarDType(ctx, 0); return scalarT(a === "bool" ? "int64" : isFloat(a) ? "float32" : "int64"); };
const bool = (ctx: InferCtx): Type => { for (let i = 0; i < ctx.args.length; i++) scalarDType(ctx, i); return scalarT("bool"); };
const num = (v: unknown) => Number(v);

type Def = { op: string; operator?: string; mathFn?: string; arity: 1 | 2; infer: (ctx: InferCtx) => Type; fn: (a: number, b: number, isInt: boolean) => number | boolean; doc: string };
const DEFS: Def[] = [
  { op: "add", operator: "+", arity: 2, infer: arith, fn: (a, b) => a + b, doc: "a + b" },
  { op: "sub", operator: "-", arity: 2, infer: arith, fn: (a, b) => a - b, doc: "a - b" },
  { op: "mul", operator: "*", arity: 2, infer: arith, fn: (a, b) => a * b, doc: "a * b" },
  { op: "div", operator: "/", arity: 2, infer: floaty, fn: (a, b) => a / b, doc: "a / b (true division)" },
  { op: "mod", operator: "%", arity: 2, infer: arith, fn: (a, b) => a % b, doc: "a % b (sign of a)" },
  { op: "lt", operator: "<", arity: 2, infer: bool, fn: (a, b) => a < b, doc: "a < b" },
  { op: "le", operator: "<=", arity: 2, infer: bool, fn: (a, b) => a <= b, doc: "a <= b" },
  { op: "gt", operator: ">", arity: 2, infer: bool, fn: (a, b) => a > b, doc: "a > b" },
  { op: "ge", operator: ">=", arity: 2, infer: bool, fn: (a, b) => a >= b, doc: "a >= b" },
  { op: "eq", operator: "===", arity: 2, infer: bool, fn: (a, b) => a === b, doc: "a === b" },
  { op: "ne", operator: "!==", arity: 2, infer: bool, fn: (a, b) => a !== b, doc: "a !== b" },
  { op: "and", operator: "&&", arity: 2, infer: bool, fn: (a, b) => Boolean(a) && Boolean(b), doc: "a && b" },
  { op: "or", operator: "||", arity: 2, infer: bool, fn: (a, b) => Boolean(a) || Boolean(b), doc: "a || b" },
  { op: "not", operator: "!", arity: 1, infer: bool, fn: (a) => !a, doc: "!a" },
  { op: "neg", operator: "-", arity: 1, infer: same, fn: (a) => -a, doc: "-a" },
  { op: "min", mathFn: "min", arity: 2, infer: arith, fn: (a, b) => Math.min(a, b), doc: "Math.min(a, b)" },
  { op: "max", mathFn: "max", arity: 2, infer: arith, fn: (a, b) => Math.max(a, b), doc: "Math.max(a, b)" },
  { op: "floor", mathFn: "floor", arity: 1, infer: toInt, fn: (a) => Math.floor(a), doc: "Math.floor(a)" },
  { op: "ceil", mathFn: "ceil", arity: 1, infer: toInt, fn: (a) => Math.ceil(a), doc: "Math.ceil(a)" },
  { op: "trunc", mathFn: "trunc", arity: 1, infer: toInt, fn: (a) => Math.trunc(a), doc: "Math.trunc(a)" },
];

for (const d of DEFS) {
  registerOp({
    name: `scalar.${d.op}`, operator: d.operator, mathFn: d.mathFn, level: "scalar", pure: true, doc: d.doc,
    params: d.arity === 2 ? [{ name: "a", kind: "value" }, { name: "b", kind: "value" }] : [{ name: "a", kind: "value" }],
    infer: d.infer,
    evaluate(args, _attrs, _env, call) {
      const r = d.fn(num(args[0]), num(args[1]), false);
      if (typeof r === "boolean") return r;
      const t = call.type;
      // int64 results: integer semantics (truncate toward zero for % and /-free ops)
      return t.kind === "scalar" && !isFloat(t.dtype) ? Math.trunc(r) : r;
    },
  });
}

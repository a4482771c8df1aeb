// Scalar ops (scalar.*): C++ expressions over int64_t / double / bool.
import type { Call } from "../../../ir/index.js";
import { type CExpr, type ScalarCType, scalarCType } from "./ctypes.js";
import { type ScalarEmitter, def } from "./table.js";

const asDouble = (a: CExpr) => (a.ctype === "double" ? a.code : `(double)${a.code}`);
const asInt = (a: CExpr) => (a.ctype === "int64_t" ? a.code : `(int64_t)${a.code}`);
const resultCType = (call: Call): ScalarCType => (call.type.kind === "scalar" ? scalarCType(call.type.dtype) : "int64_t");
const arith = (op: string) => (call: Call, [a, b]: readonly CExpr[]): CExpr => {
  const ct = resultCType(call);
  return ct === "double" ? { code: `(${asDouble(a)} ${op} ${asDouble(b)})`, ctype: ct } : { code: `(${asInt(a)} ${op} ${asInt(b)})`, ctype: "int64_t" };
};
const cmp = (op: string) => (_call: Call, [a, b]: readonly CExpr[]): CExpr => ({ code: `(${a.code} ${op} ${b.code})`, ctype: "bool" });
const toInt = (fn: string) => (_call: Call, [a]: readonly CExpr[]): CExpr =>
  ({ code: a.ctype === "double" ? `tspto_d2i64(std::${fn}(${a.code}))` : asInt(a), ctype: "int64_t" });
const minmax = (fn: "min" | "max") => (call: Call, [a, b]: readonly CExpr[]): CExpr =>
  resultCType(call) === "double"
    ? { code: `tspto_f${fn}<double>(${asDouble(a)}, ${asDouble(b)})`, ctype: "double" }
    : { code: `tspto_i${fn}(${asInt(a)}, ${asInt(b)})`, ctype: "int64_t" };

const SCALAR_CPP: Record<string, ScalarEmitter["emit"]> = {
  add: arith("+"), sub: arith("-"), mul: arith("*"),
  div: (_c, [a, b]) => ({ code: `(${asDouble(a)} / ${asDouble(b)})`, ctype: "double" }),
  mod: (call, [a, b]) => resultCType(call) === "double"
    ? { code: `std::fmod(${asDouble(a)}, ${asDouble(b)})`, ctype: "double" }
    : { code: `tspto_imod(${asInt(a)}, ${asInt(b)})`, ctype: "int64_t" },
  lt: cmp("<"), le: cmp("<="), gt: cmp(">"), ge: cmp(">="), eq: cmp("=="), ne: cmp("!="),
  and: (_c, [a, b]) => ({ code: `((bool)(${a.code}) && (bool)(${b.code}))`, ctype: "bool" }),
  or: (_c, [a, b]) => ({ code: `((bool)(${a.code}) || (bool)(${b.code}))`, ctype: "bool" }),
  not: (_c, [a]) => ({ code: `(!(${a.code}))`, ctype: "bool" }),
  neg: (call, [a]) => (resultCType(call) === "double" ? { code: `(-${asDouble(a)})`, ctype: "double" } : { code: `(-${asInt(a)})`, ctype: "int64_t" }),
  min: minmax("min"), max: minmax("max"),
  floor: toInt("floor"), ceil: toInt("ceil"), trunc: toInt("trunc"),
};
for (const [name, emit] of Object.entries(SCALAR_CPP)) def(`scalar.${name}`, { kind: "scalar", emit });

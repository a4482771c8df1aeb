// Helpers of the cpu code generator (generate.ts, fused.ts, call.ts): internal errors, C
// identifiers and comments, tile / tensor byte sizes, scalar C conversions, expression walks.
import type { CExpr, ScalarCType } from "./emitters/index.js";
import { DTYPE_BYTES, TsptoCompileError, numel, tileElemBytes, typeStr, type Expr, type Span, type TensorType, type TileType, type Var } from "../../ir/index.js";

export const internal = (msg: string, span?: Span, hint?: string): never => {
  throw new TsptoCompileError("E_CODEGEN", `internal: ${msg}`, span, hint);
};

/** A C identifier fragment from an IR name. */
export function ident(name: string): string {
  let s = name.replace(/[^A-Za-z0-9_]/g, "_");
  if (!/^[A-Za-z]/.test(s)) s = `v${s}`;
  return s;
}

export const tileDataBytes = (t: TileType): number => numel(t.shape) * tileElemBytes(t.dtype);

export type StaticTensor = TensorType & { shape: readonly number[] };
/** A tensor type with a static shape, or an E_DYNAMIC error naming the platform that needs one. */
export function staticTensor(t: TensorType, what: string, span: Span, platform: string): StaticTensor {
  if (t.shape.some((d) => typeof d !== "number")) {
    throw new TsptoCompileError("E_DYNAMIC", `dynamic dimensions are not supported on the ${platform} platform yet (${what}: ${typeStr(t)})`, span,
      "give the tensor a static shape, or use the interp platform");
  }
  return t as StaticTensor;
}

export const comment = (s: string): string => s.replace(/[\r\n\\]/g, "/");


export function describe(e: Expr): string {
  if (e.kind === "var") return e.name;
  if (e.kind === "const") return String(e.value);
  if (e.kind === "call") return `${e.op}(${e.args.map(describe).join(", ")})`;
  return "[...]";
}

/** Planned tiles an expression reads. */
export function tileLeaves(e: Expr): Var[] {
  const out: Var[] = [];
  const visit = (x: Expr) => {
    if (x.kind === "var") { if (x.type.kind === "tile") out.push(x); return; }
    if (x.kind === "call" && x.type.kind === "tile") x.args.forEach(visit);
  };
  visit(e);
  return out;
}

/** A scalar C++ expression converted to `to`; `trunc` names the float truncation (CUDA device code: "trunc"). */
export function convertScalar(c: CExpr, to: ScalarCType, trunc = "std::trunc"): string {
  if (c.ctype === to) return c.code;
  if (to === "double") return `(double)${c.code}`;
  if (to === "bool") return `(bool)(${c.code})`;
  return toInt64(c, trunc);
}
export function toInt64(c: CExpr, trunc = "std::trunc"): string {
  return c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(${trunc}(${c.code}))` : `(int64_t)${c.code}`;
}

// The statement walk's spelling in WGSL (../cpp/walk.ts, WalkSyntax): `let` / `var`
// declarations, i32 indices and integer scalars, f32 float scalars (WGSL has neither 64-bit
// integers nor doubles), `loop { if (!(c)) { break; } ... }` for while loops, select() for the
// one conditional expression the walk makes, and literals that say their type.
import { TsptoCompileError, type Span } from "../../ir/index.js";
import type { CExpr, ScalarCType } from "../cpp/emitters/index.js";
import type { WalkSyntax } from "../cpp/walk.js";

const I32_MIN = -(2 ** 31), I32_MAX = 2 ** 31 - 1, F32_MAX = 3.4028234663852886e38;

/** The WGSL type of a scalar kind. */
export const wgslScalarType = (ct: ScalarCType): string => (ct === "double" ? "f32" : ct === "bool" ? "bool" : "i32");

/** An i32 literal; a value out of i32 range is a compile error (WGSL has no 64-bit integers). */
export function i32Lit(v: number, span?: Span): string {
  if (!Number.isInteger(v) || v < I32_MIN || v > I32_MAX) {
    throw new TsptoCompileError("E_DTYPE", `the integer constant ${v} does not fit the 32-bit integers of the webgpu platform (WGSL has no 64-bit integers)`, span,
      "keep integer constants, loop bounds and indices of kernels within [-2147483648, 2147483647], or run on the cpu / interp platform");
  }
  if (v === I32_MIN) return "(-2147483647i - 1i)";
  return v < 0 ? `(${v}i)` : `${v}i`;
}

/** An f32 literal (NaN and infinities from the prelude's tspto_nan / tspto_inf; beyond fp32's range: infinite, as the conversion rounds). */
export function f32Lit(v: number): string {
  if (Number.isNaN(v)) return "tspto_nan()";
  const r = Math.fround(v);
  if (r === Infinity || v > F32_MAX) return "tspto_inf()";
  if (r === -Infinity || v < -F32_MAX) return "(-tspto_inf())";
  if (Object.is(r, -0)) return "(-0.0f)";
  // the shortest decimal that reads back as this fp32 value and stays within fp32's range
  // (WGSL rejects a literal beyond it even when it would round to the largest fp32: 3.4028235e38)
  let s = String(r);
  for (let p = 1; p <= 17; p++) {
    const t = r.toPrecision(p);
    if (Math.fround(Number(t)) === r && Math.abs(Number(t)) <= F32_MAX) { s = t; break; }
  }
  if (!/[.eE]/.test(s)) s = `${s}.0`;
  else if (/^-?\d+e/.test(s)) s = s.replace("e", ".0e");
  return r < 0 ? `(${s}f)` : `${s}f`;
}

export function wgslConvert(c: CExpr, to: ScalarCType): string {
  if (c.ctype === to) return c.code;
  if (to === "double") return `f32(${c.code})`;
  if (to === "bool") return `(${c.code} != ${c.ctype === "double" ? "0.0" : "0"})`;
  return c.ctype === "double" ? `tspto_f2i(${c.code})` : `select(0i, 1i, ${c.code})`;
}

export const WGSL_SYNTAX: WalkSyntax = {
  scalarType: wgslScalarType,
  constDecl: (t, n, v) => `let ${n}: ${t} = ${v};`,
  mutDecl: (t, n, v) => `var ${n}: ${t} = ${v};`,
  zero: (ct) => (ct === "bool" ? "false" : ct === "double" ? "0.0f" : "0i"),
  floatLit: (v) => f32Lit(v),
  intLit: (v, span) => i32Lit(v, span),
  boolLit: (v) => (v ? "true" : "false"),
  convert: wgslConvert,
  loopBounds: ([a, b, c], [x, y, z]) => `let ${a}: i32 = ${x}; let ${b}: i32 = ${y}; let ${c}: i32 = ${z};`,
  forOpen: (i, lo, cond, st) => `for (var ${i}: i32 = ${lo}; ${cond}; ${i} += ${st}) {`,
  dynamicStepCond: (i, hi, st) => `select(${st} < 0 && ${i} > ${hi}, ${i} < ${hi}, ${st} > 0)`,
  whileOpen: "loop {",
  whileTest: (cond) => `if (!(${cond})) { break; }`,
  discard: (code) => `_ = ${code};`,
  tempDecl: (n, code) => `let ${n} = ${code};`,
  paramValue: (ct, raw) => (ct === "double" ? `bitcast<f32>(${raw})` : ct === "bool" ? `(${raw} != 0)` : raw),
};

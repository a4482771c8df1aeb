// TsptoAccess initializers of a task (native/include/tspto_abi.h): a whole tensor as a byte
// range, or the window the DeriveDeps pass bounded (src/passes/deps.ts) as a rank-N tensor
// window whose bounds are evaluated from the call's argument slots at submission.
import { DTYPE_BYTES, TsptoCompileError, type Span } from "../../ir/index.js";
import { type TensorRef, cdim, cmul, cnumel } from "./emitters/index.js";
import type { AccessAttr, AffineAttr, WindowAttr } from "../../passes/index.js";

const int = (n: number): string => `INT64_C(${n})`;

/** C++ of an affine form over the call's slots. */
function affine(a: AffineAttr, slots: readonly string[], span: Span): string {
  const parts: string[] = [];
  for (const [i, coef] of a.t) {
    const s = slots[i];
    if (s === undefined) throw new TsptoCompileError("E_CODEGEN", `internal: window bound refers to argument ${i}, which the call does not have`, span);
    parts.push(coef === 1 ? `(${s})` : `${int(coef)} * (${s})`);
  }
  if (a.c !== 0 || parts.length === 0) parts.push(int(a.c));
  return parts.join(" + ");
}

/** min (or max) of the forms; an upper bound's form with caps is the least of it and them. */
function extreme(forms: readonly AffineAttr[], upper: boolean, slots: readonly string[], span: Span): string {
  const capped = (f: AffineAttr): string => (f.min ?? []).reduce((acc, c) => `std::min<int64_t>(${acc}, ${affine(c, slots, span)})`, affine(f, slots, span));
  const cs = forms.map(capped);
  return cs.reduce((acc, c) => `std::${upper ? "max" : "min"}<int64_t>(${acc}, ${c})`);
}

export function checkWindow(w: unknown, rank: number): w is WindowAttr {
  const isAff = (a: unknown): boolean => {
    const o = a as AffineAttr;
    return !!o && typeof o.c === "number" && Array.isArray(o.t) && o.t.every((x) => Array.isArray(x) && x.length === 2 && Number.isInteger(x[0]) && typeof x[1] === "number") &&
      (o.min === undefined || (Array.isArray(o.min) && o.min.every(isAff)));
  };
  const o = w as WindowAttr;
  return !!o && Array.isArray(o.lo) && Array.isArray(o.hi) && o.lo.length === rank && o.hi.length === rank &&
    [...o.lo, ...o.hi].every((l) => Array.isArray(l) && l.length > 0 && l.every(isAff));
}

/**
 * The initializer of one TsptoAccess of tensor `tr` (its address and extents as C++), `slots` the
 * C++ slot expressions of the call (window bounds refer to them by argument index).
 */
export function accessInit(acc: AccessAttr, tr: TensorRef, mode: string, slots: readonly string[], span: Span): string {
  const { ptr, type } = tr;
  const bytes = cdim(cmul(cnumel(tr.dims), DTYPE_BYTES[type.dtype]));
  if (!acc.window) return `{ ${ptr}, ${bytes}, ${mode}, 0 }`;
  const rank = type.shape.length;
  if (!checkWindow(acc.window, rank)) throw new TsptoCompileError("E_CODEGEN", `internal: bad window ${JSON.stringify(acc.window)} for argument ${acc.arg}`, span);
  const w = acc.window;
  const lo = w.lo.map((f) => extreme(f, false, slots, span));
  const hi = w.hi.map((f) => extreme(f, true, slots, span));
  const pad = (xs: string[]) => xs.join(", ");
  // extents may come out negative for a loop that runs no iteration: the runtime clamps them
  const ext = lo.map((l, d) => (w.lo[d].length === 1 && w.hi[d].length === 1 && !w.hi[d][0].min && sameTerms(w.lo[d][0], w.hi[d][0])
    ? int(w.hi[d][0].c - w.lo[d][0].c) : `(${hi[d]}) - (${l})`));
  return `{ 0, 0, ${mode}, ${rank}, ${ptr}, ${DTYPE_BYTES[type.dtype]}, { ${pad(tr.dims.map((d) => (typeof d === "number" ? int(d) : d)))} }, { ${pad(lo)} }, { ${pad(ext)} } }`;
}

const sameTerms = (a: AffineAttr, b: AffineAttr): boolean => JSON.stringify(a.t) === JSON.stringify(b.t);

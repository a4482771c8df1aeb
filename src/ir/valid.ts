// Runtime valid extents: where each axis of a tile op's validShape comes from. A validShape
// extent is a constant, or RUNTIME_DIM ("?"): known only at run time. A runtime extent is
// introduced by an op's "dims" option (load's / broadcastTo's validShape: its value is an
// operand of the call) and then flows through the ops that keep it, as their `infer` says.
// Which operand axis a result axis comes from is read off `infer` itself: it runs on operand
// types whose runtime extents are replaced by unique placeholders, and each placeholder found
// in the result names its source. One mechanism for every op (the interpreter and the code
// generators use it); no per-op table.
import { TsptoCompileError } from "./errors.js";
import { exprType, mkVar, type Call, type Expr } from "./nodes.js";
import { getOp, inferCall, runtimeDims } from "./registry.js";
import { hasRuntimeValid, shapeStr, type TileType } from "./types.js";

/** Where one axis of a result's validShape comes from. */
export type ValidSource =
  | { readonly kind: "static"; readonly n: number }
  /** The same extent as axis `axis` of operand `arg` (a tile with a runtime extent there). */
  | { readonly kind: "operand"; readonly arg: number; readonly axis: number }
  /** A runtime extent of the call itself: the scalar expression `expr` (a "dims" option item). */
  | { readonly kind: "own"; readonly expr: Expr };

const PLACEHOLDER = /^\u0000valid:(\d+):(\d+)$/;
const placeholder = (arg: number, axis: number) => `\u0000valid:${arg}:${axis}`;

const cache = new WeakMap<Call, readonly ValidSource[] | null>();

/**
 * For a tile-valued call whose type has runtime valid extents: the source of each axis of its
 * validShape. Null when the result is not a tile or all its extents are static. Throws
 * E_DYNAMIC when an op computes a runtime extent in a way that cannot be tracked.
 */
export function validSources(call: Call): readonly ValidSource[] | null {
  if (cache.has(call)) return cache.get(call)!;
  const r = compute(call);
  cache.set(call, r);
  return r;
}

function compute(call: Call): readonly ValidSource[] | null {
  const t = call.type;
  if (t.kind !== "tile" || !hasRuntimeValid(t)) return null;
  if (call.op === "call") throw new TsptoCompileError("E_DYNAMIC", "a function call cannot return a tile with a runtime validShape", call.span);
  const op = getOp(call.op);
  const valid = t.validShape!;
  // the op's own runtime extents (validShape: [n - i, 64]): they are its result's validShape
  const { lists } = runtimeDims(op, call.args, call.attrs);
  const own = lists.get("validShape");
  if (own) {
    let k = 0;
    return valid.map((d) => (typeof d === "number" ? { kind: "static", n: d } : { kind: "own", expr: own.items[k++] }));
  }
  // derived from operands: infer on placeholder types names the source axis of each extent
  const fake = call.args.map((a, i): Expr => {
    const at = exprType(a);
    if (at.kind !== "tile" || !hasRuntimeValid(at)) return a;
    const vt: TileType = { ...at, validShape: at.validShape!.map((d, ax) => (typeof d === "number" ? d : placeholder(i, ax))) };
    return mkVar(a.kind === "var" ? a.name : `arg${i}`, vt, a.span);
  });
  let rt;
  try {
    rt = inferCall(op, fake, call.attrs, call.span);
  } catch (e) {
    throw new TsptoCompileError("E_DYNAMIC", `${describeOp(call)} cannot take an operand with a runtime validShape (${(e as Error).message})`, call.span,
      "pad the tile first (pl.fillpad(x)) to make it fully valid");
  }
  const rv = rt.kind === "tile" ? rt.validShape : null;
  if (!rv || rv.length !== valid.length) {
    throw new TsptoCompileError("E_DYNAMIC", `${describeOp(call)}: cannot track the runtime validShape ${shapeStr(valid)} of its result`, call.span);
  }
  return rv.map((d, ax) => {
    if (typeof d === "number") return { kind: "static", n: d };
    const m = PLACEHOLDER.exec(d);
    if (!m) {
      throw new TsptoCompileError("E_DYNAMIC", `${describeOp(call)} computes a runtime valid extent (axis ${ax} of ${shapeStr(valid)}) from its operands' runtime extents, which is not supported`, call.span,
        "pad the operands first (pl.fillpad(x)) to make them fully valid");
    }
    return { kind: "operand", arg: Number(m[1]), axis: Number(m[2]) };
  });
}

const describeOp = (call: Call): string => {
  const op = getOp(call.op);
  return `pl.${op.pl ?? op.name}`;
};

/**
 * Check a runtime extent against its tile dimension: the message both the interpreter and the
 * generated code give (`load validShape [70, 64] does not fit the tile shape [64, 64] (axis 0)`).
 */
export function validRangeMessage(call: Call, extents: readonly (number | string)[], shape: readonly number[], axis: number): string {
  return `${describeOp(call).slice(3)} validShape [${extents.join(", ")}] does not fit the tile shape [${shape.join(", ")}] (axis ${axis})`;
}

// split parallel loops (SPMD by rows): an InCore function whose body is one `for` loop over
// independent tiles (no loop-carried values, every written tensor addressed by the loop
// variable on its first axis) gets two extra int64 parameters, the bounds of its loop. Each
// call of it receives the full range as constants plus an `spmd` attribute that lets the
// cpu code generator submit the call as several tasks, one per band of iterations, each
// declaring only the rows it touches (TsptoAccess base/nbytes of the band), so the scheduler
// runs them on different cores.
//
// The program stays valid as written (the interpreter runs the one call over the full
// range). The split is exact: each band runs the same iterations with the same arithmetic,
// and bands whose declared regions overlap (tiles taller than the step, aliased arguments)
// are ordered by the scheduler in submission order, i.e. in the loop's order.
import {
  DTYPE_BYTES, INDEX, mkCall, mkConst, mkFor, mkFunc, mkVar, mapExpr, mapStmtExprs,
  type AttrValue, type Call, type Expr, type For, type Func, type Program, type Stmt, type TensorType, type TileType,
} from "../ir/index.js";
import type { Pass } from "./manager.js";

/** The least work (bytes of the banded tensors) worth one extra task. */
export const SPMD_MIN_CHUNK_BYTES = 128 * 1024;
/** At most this many bands per call (the runtime uses min(this, core threads)). */
const SPMD_MAX_CHUNKS = 256;

/** What a call's `spmd` attribute holds (read by src/codegen/cpp/spmd.ts). */
export interface SpmdAttr {
  /** Argument positions of the loop bounds. */
  readonly lo: number;
  readonly hi: number;
  readonly start: number;
  /** The loop's end; null when it is only known at run time (a dynamic dimension): the hi slot holds it. */
  readonly stop: number | null;
  readonly step: number;
  /** Upper bound on bands (by work size and trip count). */
  readonly maxChunks: number;
  /** Tensor arguments whose accesses narrow to the band's rows (rows -1: a dynamic first dimension). */
  readonly bands: readonly { readonly arg: number; readonly rows: number; readonly rowBytes: number; readonly extent: number }[];
}

/** stopAt: the loop's end as an expression of the callee's parameters (a dynamic end), else null. */
interface Plan { fn: Func; attr: Omit<SpmdAttr, "lo" | "hi">; stopAt: Expr | null }

const intConst = (e: Expr): number | null => (e.kind === "const" && typeof e.value === "number" && Number.isInteger(e.value) ? e.value : null);

/** Why `f` cannot be split (null: it can), and the plan. */
function planFor(f: Func): Plan | null {
  if (f.fnKind !== "incore") return null;
  // (window checks of run-time slices, TensorToTile's checkWindow, run in every band: they read no data)
  const body = f.body.filter((s) => !(s.kind === "return" && s.values.length === 0) && !(s.kind === "eval" && s.expr.kind === "call" && s.expr.op === "tile.checkWindow"));
  if (body.length !== 1 || body[0].kind !== "for") return null;
  const loop = body[0];
  if (loop.iterArgs.length || loop.results.length) return null;
  const start = intConst(loop.start), stop = intConst(loop.stop), step = intConst(loop.step);
  const params = new Map<number, number>(); // var id -> param index
  f.params.forEach((p, i) => params.set(p.var.id, i));
  // a dynamic end: pl.dim of a parameter tensor, which the call site can evaluate too
  const dynStop = stop === null && loop.stop.kind === "call" && loop.stop.op === "tensor.dim" && loop.stop.args[0].kind === "var" && params.has(loop.stop.args[0].id);
  if (start === null || (stop === null && !dynStop) || step === null || step <= 0) return null;
  const trips = stop === null ? SPMD_MAX_CHUNKS : Math.ceil((stop - start) / step);
  if (trips < 2) return null;

  const extent = new Map<number, number>(); // param index -> largest window extent on axis 0 (-1: not bandable)
  let ok = true;
  const topLevelJump = (ss: readonly Stmt[]): boolean => ss.some((s) =>
    s.kind === "break" || s.kind === "continue" || s.kind === "return" ||
    (s.kind === "if" && (topLevelJump(s.then) || topLevelJump(s.else))));
  if (topLevelJump(loop.body)) return null;

  const innerLast = new Map<number, number>(); // inner loop var -> its last value (constant bounds)
  const visitExpr = (e: Expr): void => {
    if (!ok) return;
    if (e.kind === "list") { e.items.forEach(visitExpr); return; }
    if (e.kind !== "call") {
      // a tensor used as a plain value (aliased, passed around): do not band it
      if (e.kind === "var" && e.type.kind === "tensor") {
        const pi = params.get(e.id);
        if (pi === undefined) ok = false; else extent.set(pi, -1);
      }
      return;
    }
    if (e.op === "tensor.dim") return; // reads a shape, not data
    let tensorArg = -1, rowExtent = -1;
    if (e.op === "tile.load") {
      tensorArg = 0;
      const shp = e.attrs.shape;
      rowExtent = Array.isArray(shp) && typeof shp[0] === "number" ? shp[0] : -1;
    } else if (e.op === "tile.store") {
      tensorArg = 2;
      const tt = e.args[0].kind === "const" ? null : (e.args[0] as Exclude<Expr, { kind: "const" }>).type;
      rowExtent = tt && tt.kind === "tile" ? Number((tt as TileType).shape[0]) : -1;
    }
    e.args.forEach((a, k) => {
      if (k === tensorArg) return;
      visitExpr(a);
    });
    if (tensorArg < 0) return;
    const t = e.args[tensorArg];
    const pi = t.kind === "var" ? params.get(t.id) : undefined;
    if (pi === undefined) { ok = false; return; }
    const offs = e.args[1];
    const first = offs.kind === "list" ? offs.items[0] : undefined;
    offs.kind === "list" && offs.items.forEach(visitExpr);
    // the first offset is the loop variable, or the loop variable plus the variable of an
    // inner loop over [0, n) with a constant bound (the row loop of FuseRows): rows lv .. lv + n - 1 + extent
    let inner = 0;
    const isLv = (x: Expr | undefined) => x !== undefined && x.kind === "var" && x.id === loop.loopVar.id;
    let ok0 = isLv(first);
    if (!ok0 && first?.kind === "call" && first.op === "scalar.add" && isLv(first.args[0]) && first.args[1].kind === "var") {
      const last = innerLast.get(first.args[1].id);
      if (last !== undefined) { ok0 = true; inner = last; }
    }
    if (ok0 && inner > 0) rowExtent += inner;
    const banded = ok0 && Number.isInteger(rowExtent) && rowExtent > 0;
    const prev = extent.get(pi);
    if (!banded) extent.set(pi, -1);
    else if (prev === undefined) extent.set(pi, rowExtent);
    else if (prev >= 0) extent.set(pi, Math.max(prev, rowExtent));
  };
  const visit = (ss: readonly Stmt[]): void => {
    for (const s of ss) {
      if (!ok) return;
      switch (s.kind) {
        case "assign":
          // a tensor-valued result (a store's alias) would escape the analysis
          if (s.targets.some((v) => v.type.kind === "tensor")) { ok = false; return; }
          visitExpr(s.value); break;
        case "eval": visitExpr(s.expr); break;
        case "for": {
          [s.start, s.stop, s.step, ...s.inits].forEach(visitExpr);
          const a = intConst(s.start), b = intConst(s.stop), st = intConst(s.step);
          if (a !== null && b !== null && st !== null && a >= 0 && st > 0 && b > a) innerLast.set(s.loopVar.id, a + Math.floor((b - a - 1) / st) * st);
          visit(s.body);
          break;
        }
        case "while": s.inits.forEach(visitExpr); visitExpr(s.cond); visit(s.body); break;
        case "if": visitExpr(s.cond); visit(s.then); visit(s.else); break;
        case "yield": case "break": case "continue": case "return": s.values.forEach(visitExpr); break;
        case "scope": ok = false; return;
      }
    }
  };
  visit(loop.body);
  if (!ok) return null;

  const bands: { arg: number; rows: number; rowBytes: number; extent: number }[] = [];
  let bandBytes = 0;
  for (let i = 0; i < f.params.length; i++) {
    const p = f.params[i];
    if (p.var.type.kind !== "tensor") continue;
    const t = p.var.type as TensorType;
    const ext = extent.get(i);
    const writes = p.dir !== "in";
    if (ext === undefined || ext < 0) {
      if (writes) return null; // a written tensor that is not banded: bands would serialize
      continue;
    }
    // rows may be dynamic (the band is clamped to the run-time extent); a row's bytes must be static
    const rest = t.shape.slice(1);
    if (!rest.every((d): d is number => typeof d === "number")) return null;
    const rowBytes = rest.reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype];
    const rows = typeof t.shape[0] === "number" ? t.shape[0] : -1;
    bands.push({ arg: i, rows, rowBytes, extent: ext });
    bandBytes += rows < 0 ? Infinity : rows * rowBytes;
  }
  if (!bands.some((b) => f.params[b.arg].dir !== "in")) return null;
  // with a dynamic end the work is known at run time only: the generated code limits the bands then
  const maxChunks = Math.min(trips, SPMD_MAX_CHUNKS, Math.floor(bandBytes / SPMD_MIN_CHUNK_BYTES));
  if (maxChunks < 2) return null;

  const lo = mkVar("spmd_lo", INDEX, loop.span), hi = mkVar("spmd_hi", INDEX, loop.span);
  const newLoop: For = mkFor({ ...loop, start: lo, stop: hi });
  const newBody = f.body.map((s) => (s === loop ? newLoop : s));
  const fn = mkFunc({
    name: f.name, fnKind: f.fnKind, params: [...f.params, { var: lo, dir: "in" }, { var: hi, dir: "in" }],
    returnTypes: f.returnTypes, body: newBody, attrs: f.attrs, span: f.span,
  });
  return { fn, attr: { start, stop, step, maxChunks, bands }, stopAt: stop === null ? loop.stop : null };
}

export const spmdPass: Pass = {
  name: "SplitParallelLoops",
  run(p: Program) {
    const plans = new Map<string, Plan>();
    for (const f of p.functions) {
      const plan = planFor(f);
      if (plan) plans.set(f.name, plan);
    }
    if (plans.size === 0) return p;
    return p.withFunctions(p.functions.map((f) => {
      const plan = plans.get(f.name);
      if (plan) return plan.fn;
      if (f.fnKind !== "orchestration") return f;
      const body = mapStmtExprs(f.body, (e) => {
        if (e.kind !== "call" || e.op !== "call") return undefined;
        const pl = plans.get(String(e.attrs.callee));
        if (!pl) return undefined;
        const n = e.args.length;
        const spmd: SpmdAttr = { lo: n, hi: n + 1, ...pl.attr };
        // the end: a constant, or the callee's pl.dim(param, axis) evaluated on the call's argument
        const callee = p.getFunction(String(e.attrs.callee))!;
        const stopExpr = pl.stopAt
          ? mapExpr(pl.stopAt, (x) => (x.kind === "var" ? e.args[callee.params.findIndex((q) => q.var.id === x.id)] : undefined))
          : mkConst(pl.attr.stop!, "int64", e.span);
        const args = [...e.args, mkConst(pl.attr.start, "int64", e.span), stopExpr];
        return mkCall("call", args, { ...e.attrs, spmd: spmd as unknown as AttrValue }, (e as Call).type, e.span);
      });
      return Object.freeze({ ...f, body: Object.freeze(body) });
    }));
  },
};

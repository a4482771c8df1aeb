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
  /**
   * Tensor arguments whose accesses narrow to the band: along `axis` (absent: 0), `rows` its
   * extent (-1: dynamic), `rowBytes` the bytes of one index along it, `extent` the largest
   * window an iteration touches along it. Each task declares the windows DeriveDeps bounded
   * (evaluated on its band); `byteRange` (the offset along axis 0 is the loop variable itself):
   * without such a window the band's rows as one byte range.
   */
  readonly bands: readonly SpmdBand[];
}
export interface SpmdBand {
  readonly arg: number; readonly rows: number; readonly rowBytes: number; readonly extent: number;
  readonly axis?: number; readonly byteRange?: boolean;
  /** The bytes of the tensor one iteration touches (its largest window): the work estimate. */
  readonly iterBytes?: number;
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

  // param index -> the axis its windows move along with the loop variable, the largest window
  // extent along it, and whether that offset is the loop variable itself (extent -1: not bandable)
  const extent = new Map<number, { axis: number; ext: number; plain: boolean; bytes: number }>();
  const NOT = { axis: 0, ext: -1, plain: false, bytes: 0 };
  let ok = true;
  const topLevelJump = (ss: readonly Stmt[]): boolean => ss.some((s) =>
    s.kind === "break" || s.kind === "continue" || s.kind === "return" ||
    (s.kind === "if" && (topLevelJump(s.then) || topLevelJump(s.else))));
  if (topLevelJump(loop.body)) return null;

  const innerLast = new Map<number, number>(); // inner loop var -> its last value (constant bounds)
  // the trips of the inner loops around the access being visited (constant bounds; a run-time
  // bound counts once): a window loaded in a k loop of 48 trips is 48 windows of work
  let trips0 = 1;
  const visitExpr = (e: Expr): void => {
    if (!ok) return;
    if (e.kind === "list") { e.items.forEach(visitExpr); return; }
    if (e.kind !== "call") {
      // a tensor used as a plain value (aliased, passed around): do not band it
      if (e.kind === "var" && e.type.kind === "tensor") {
        const pi = params.get(e.id);
        if (pi === undefined) ok = false; else extent.set(pi, NOT);
      }
      return;
    }
    if (e.op === "tensor.dim") return; // reads a shape, not data
    let tensorArg = -1, shape: readonly unknown[] = [];
    if (e.op === "tile.load") {
      tensorArg = 0;
      const shp = e.attrs.shape;
      shape = Array.isArray(shp) ? shp : [];
    } else if (e.op === "tile.store") {
      tensorArg = 2;
      const tt = e.args[0].kind === "const" ? null : (e.args[0] as Exclude<Expr, { kind: "const" }>).type;
      shape = tt && tt.kind === "tile" ? (tt as TileType).shape : [];
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
    offs.kind === "list" && offs.items.forEach(visitExpr);
    // The offset along some axis moves with the loop: the loop variable; plus the variable of an
    // inner loop over [0, n) with a constant bound (the row loop of FuseRows): lv .. lv + n - 1 +
    // extent; or plus a constant or a scalar parameter (a window of a pl.slice): the first such axis.
    const isLv = (x: Expr | undefined) => x !== undefined && x.kind === "var" && x.id === loop.loopVar.id;
    const invariant = (x: Expr) => x.kind === "const" || (x.kind === "var" && x.type.kind === "scalar" && params.has(x.id));
    let use: { axis: number; ext: number; plain: boolean; bytes: number } = NOT;
    const items = offs.kind === "list" ? offs.items : [];
    const tt = t.kind === "var" ? t.type : null;
    const numel = shape.every((d) => typeof d === "number") ? (shape as number[]).reduce((a, b) => a * b, 1) : 0;
    const elem = tt && tt.kind === "tensor" ? DTYPE_BYTES[(tt as TensorType).dtype] : 0;
    for (let ax = 0; ax < items.length && use.ext < 0; ax++) {
      const o = items[ax], tileExt = shape[ax];
      if (typeof tileExt !== "number" || !Number.isInteger(tileExt) || tileExt <= 0) continue;
      const bytes = (ext: number) => (numel / tileExt) * ext * elem * trips0;
      if (isLv(o)) { use = { axis: ax, ext: tileExt, plain: true, bytes: bytes(tileExt) }; break; }
      if (o.kind !== "call" || o.op !== "scalar.add") continue;
      const [x, y] = o.args;
      const [l, r] = isLv(x) ? [x, y] : isLv(y) ? [y, x] : [null, null];
      if (!l || !r) continue;
      const last = r.kind === "var" ? innerLast.get(r.id) : undefined;
      if (last !== undefined) use = { axis: ax, ext: tileExt + last, plain: ax === 0, bytes: bytes(tileExt + last) };
      else if (invariant(r)) use = { axis: ax, ext: tileExt, plain: false, bytes: bytes(tileExt) };
    }
    const prev = extent.get(pi);
    if (use.ext < 0 || (prev !== undefined && (prev.ext < 0 || prev.axis !== use.axis))) extent.set(pi, NOT);
    else if (prev === undefined) extent.set(pi, use);
    else extent.set(pi, { axis: use.axis, ext: Math.max(prev.ext, use.ext), plain: prev.plain && use.plain, bytes: Math.max(prev.bytes, use.bytes) });
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
          const constant = a !== null && b !== null && st !== null && a >= 0 && st > 0 && b > a;
          if (constant) innerLast.set(s.loopVar.id, a + Math.floor((b - a - 1) / st) * st);
          const outer = trips0;
          if (constant) trips0 *= Math.ceil((b - a) / st);
          visit(s.body);
          trips0 = outer;
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

  const bands: SpmdBand[] = [];
  let bandBytes = 0;
  for (let i = 0; i < f.params.length; i++) {
    const p = f.params[i];
    if (p.var.type.kind !== "tensor") continue;
    const t = p.var.type as TensorType;
    const use = extent.get(i);
    const writes = p.dir !== "in";
    if (use === undefined || use.ext < 0) {
      if (writes) return null; // a written tensor that is not banded: bands would serialize
      continue;
    }
    // the banded axis may be dynamic (the band is clamped to the run-time extent); a byte-range
    // band (axis 0) needs the bytes of one row to be static (0: unknown, no byte range)
    const rest = t.shape.filter((_, ax) => ax !== use.axis);
    const staticRest = rest.every((d): d is number => typeof d === "number");
    if (!staticRest && use.axis === 0) return null;
    const rowBytes = staticRest ? (rest as number[]).reduce((a, b) => a * b, 1) * DTYPE_BYTES[t.dtype] : 0;
    const along = t.shape[use.axis];
    const rows = typeof along === "number" ? along : -1;
    bands.push({ arg: i, rows, rowBytes, extent: use.ext, iterBytes: use.bytes, ...(use.axis ? { axis: use.axis } : {}), ...(use.plain && use.axis === 0 && staticRest ? { byteRange: true } : {}) });
    // the work: what the iterations touch (a dynamic end: known at run time only)
    bandBytes += stop === null ? Infinity : trips * use.bytes;
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

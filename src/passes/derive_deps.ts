// derive task dependencies: every call of an InCore function from the orchestration is a
// task. Its read/write set is recorded on the call as `accesses`, with a `scopeId` naming the
// call site; the runtime orders tasks whose regions overlap with a write. Also checks that a
// kernel writes only Out/InOut params.
//
// Each access names a tensor argument, a mode and, where the kernel's loads and stores can be
// bounded, the *window* it touches: per axis a lower bound (the least of `lo`) and an
// exclusive upper bound (the greatest of `hi`), each an affine form over the call's integer
// scalar arguments (`{ c, t: [[argIndex, coef], ...] }`). Offsets that use the kernel's own
// loop variables are bounded over the loop's range (start .. stop - 1). A tensor touched in a
// way the analysis cannot bound (a non-affine offset, a whole-tensor op, an unknown alias)
// gets no window: the whole tensor. So a loop of pl.at scopes over disjoint row windows
// yields tasks with disjoint windows, which the scheduler runs on different cores.
import {
  TsptoCompileError, dimSymbolsOf, effectsOf, exprType, forEachExpr, getOp, isFloat, mapStmtExprs, mkCall,
  type AttrValue, type Expr, type Func, type Program, type Span, type Stmt,
} from "../ir/index.js";
import type { Pass } from "./manager.js";
import { tensorAccess } from "./outline_scopes.js";

/** Tensors of higher rank get whole-tensor accesses (TSPTO_MAX_RANK of the native ABI). */
export const MAX_WINDOW_RANK = 4;

/**
 * An affine form over the call's arguments: c + sum(coef * arg[index]); `min` (upper bounds
 * only): the value is the least of the form and these (a bound known from an `if` guard).
 */
export interface AffineAttr { readonly c: number; readonly t: readonly (readonly [number, number])[]; readonly min?: readonly AffineAttr[] }
/** The window of one access: per axis, lower bound = min(lo[axis]), upper bound (exclusive) = max(hi[axis]). */
export interface WindowAttr { readonly lo: readonly (readonly AffineAttr[])[]; readonly hi: readonly (readonly AffineAttr[])[] }
/** One entry of a call's `accesses` attribute. */
export interface AccessAttr { readonly arg: number; readonly mode: "read" | "write" | "readwrite"; readonly window?: WindowAttr }

export const depsPass: Pass = {
  name: "DeriveDeps",
  run(p) {
    for (const f of p.functions) if (f.fnKind === "incore") checkKernelWrites(p, f);
    const memo = new Map<string, AccessAttr[]>();
    let scopeId = 0;
    return p.withFunctions(p.functions.map((f) => {
      if (f.fnKind !== "orchestration") return f;
      const body = mapStmtExprs(f.body, (e) => {
        if (e.kind !== "call" || e.op !== "call") return undefined;
        const callee = p.getFunction(String(e.attrs.callee));
        if (!callee || callee.fnKind !== "incore") return undefined;
        let accesses = memo.get(callee.name);
        if (!accesses) { accesses = kernelAccesses(callee); memo.set(callee.name, accesses); }
        return mkCall("call", e.args, { ...e.attrs, scopeId: scopeId++, accesses: accesses as unknown as AttrValue }, e.type, e.span);
      });
      return Object.freeze({ ...f, body: Object.freeze(body), attrs: Object.freeze({ ...f.attrs, lowered: true, tasks: scopeId }) });
    }));
  },
};

// ---------------------------------------------------------------- affine forms
/** Keys: `p<i>` a scalar parameter, `v<id>` a loop variable of the kernel. */
type Aff = { c: number; t: Map<string, number> };
const affConst = (c: number): Aff => ({ c, t: new Map() });
function affAdd(a: Aff, b: Aff, sb = 1): Aff {
  const t = new Map(a.t);
  for (const [k, v] of b.t) {
    const n = (t.get(k) ?? 0) + sb * v;
    if (n === 0) t.delete(k); else t.set(k, n);
  }
  return { c: a.c + sb * b.c, t };
}
const affScale = (a: Aff, s: number): Aff => (s === 0 ? affConst(0) : { c: a.c * s, t: new Map([...a.t].map(([k, v]) => [k, v * s])) });

interface Loop { start: Aff; last: Aff }
/** An upper bound: the least of `form` and `caps` (bounds from enclosing `if` guards). */
type Upper = { form: Aff; caps: Aff[] };
type Box = { lo: Aff[]; hi: Upper[] };
/** Inside the then-branch of `if (x <= e)` (or `x < e`, as x <= e - 1): x's value is at most e. */
interface Guard { x: Aff; e: Aff }
interface ParamUse { whole: boolean; boxes: Box[] }

/** The accesses of one kernel, in parameter order (reads before writes of the same parameter). */
export function kernelAccesses(f: Func): AccessAttr[] {
  const paramIndex = new Map<number, number>();
  f.params.forEach((p, i) => paramIndex.set(p.var.id, i));
  const scalars = new Map<number, Aff>();  // SSA scalar var -> affine form
  const loops = new Map<string, Loop | null>();
  const alias = new Map<number, number>(); // tensor var -> param index
  f.params.forEach((p, i) => {
    if (p.var.type.kind === "tensor") alias.set(p.var.id, i);
    else if (p.var.type.kind === "scalar" && !isFloat(p.var.type.dtype) && p.var.type.dtype !== "bool") scalars.set(p.var.id, { c: 0, t: new Map([[`p${i}`, 1]]) });
  });
  const reads = new Map<number, ParamUse>(), writes = new Map<number, ParamUse>();
  let unknown = false;
  const use = (m: Map<number, ParamUse>, i: number): ParamUse => {
    let u = m.get(i);
    if (!u) { u = { whole: false, boxes: [] }; m.set(i, u); }
    return u;
  };

  // a dynamic dimension is the call's slot after the parameters (in order of first appearance)
  const dimSyms = dimSymbolsOf(f.params.map((p) => (p.var.type.kind === "tensor" ? p.var.type.shape : null)));
  const aff = (e: Expr): Aff | null => {
    if (e.kind === "const") return typeof e.value === "number" && Number.isInteger(e.value) ? affConst(e.value) : null;
    if (e.kind === "call" && e.op === "tensor.dim" && e.args[0]?.kind === "var") {
      const pi = alias.get(e.args[0].id), ax = e.attrs.axis;
      const t = pi === undefined ? null : f.params[pi].var.type;
      if (!t || t.kind !== "tensor" || typeof ax !== "number") return null;
      const d = t.shape[ax];
      if (typeof d === "number") return affConst(d);
      const k = dimSyms.indexOf(String(d));
      return k < 0 ? null : { c: 0, t: new Map([[`p${f.params.length + k}`, 1]]) };
    }
    if (e.kind === "var") {
      const s = scalars.get(e.id);
      if (s) return s;
      return loops.has(`v${e.id}`) ? { c: 0, t: new Map([[`v${e.id}`, 1]]) } : null;
    }
    if (e.kind !== "call" || e.type.kind !== "scalar" || isFloat(e.type.dtype)) return null;
    const a = e.args[0] ? aff(e.args[0]) : null, b = e.args[1] ? aff(e.args[1]) : null;
    switch (e.op) {
      case "scalar.add": return a && b ? affAdd(a, b) : null;
      case "scalar.sub": return a && b ? affAdd(a, b, -1) : null;
      case "scalar.neg": return a ? affScale(a, -1) : null;
      case "scalar.mul":
        if (a && b && b.t.size === 0) return affScale(a, b.c);
        if (a && b && a.t.size === 0) return affScale(b, a.c);
        return null;
      default: return null;
    }
  };
  /** Lower (upper) bound of `a` over every loop variable's range, in parameters only. */
  const bound = (a: Aff, upper: boolean, depth = 0): Aff | null => {
    if (depth > 64) return null;
    let out: Aff = { c: a.c, t: new Map() };
    for (const [k, coef] of a.t) {
      if (k.startsWith("p")) { out = affAdd(out, { c: 0, t: new Map([[k, coef]]) }); continue; }
      const l = loops.get(k);
      if (!l) return null;
      const end = (coef > 0) === upper ? l.last : l.start;
      const b = bound(end, (coef > 0) === upper, depth + 1);
      if (!b) return null;
      out = affAdd(out, affScale(b, coef));
    }
    return out;
  };
  const tensorParam = (e: Expr | undefined): number | undefined => (e && e.kind === "var" ? alias.get(e.id) : undefined);
  const guards: Guard[] = [];
  /**
   * The upper bound of `a + extent` over the loops, and what the active guards add: a guard
   * x <= e with a = x + d (d a constant) bounds a + extent by e + d + extent. Constant
   * candidates fold to their least; others stay as caps (the least taken at run time).
   */
  const upper = (a: Aff, extent: number): Upper | null => {
    const hi = bound(a, true);
    if (!hi) return null;
    let form = affAdd(hi, affConst(extent));
    const caps: Aff[] = [];
    for (const g of guards) {
      const d = affAdd(a, g.x, -1);
      if (d.t.size !== 0) continue;
      const cap = bound(affAdd(g.e, affConst(d.c + extent)), true);
      if (!cap) continue;
      if (cap.t.size === 0 && form.t.size === 0) form = affConst(Math.min(form.c, cap.c));
      else if (!caps.some((c) => c.c === cap.c && sameAff(c, cap))) caps.push(cap);
    }
    return { form, caps: caps.filter((c) => !(c.t.size === 0 && form.t.size === 0 && c.c >= form.c)) };
  };
  const record = (m: Map<number, ParamUse>, t: Expr | undefined, offsets: Expr | undefined, shape: readonly number[] | null): void => {
    const pi = tensorParam(t);
    if (pi === undefined) { unknown = true; return; }
    const u = use(m, pi);
    const tt = f.params[pi].var.type;
    if (u.whole || !shape || tt.kind !== "tensor" || tt.shape.length !== shape.length || shape.length > MAX_WINDOW_RANK || shape.length === 0 ||
        !offsets || offsets.kind !== "list" || offsets.items.length !== shape.length) { u.whole = true; return; }
    const box: Box = { lo: [], hi: [] };
    for (let d = 0; d < shape.length; d++) {
      const a = aff(offsets.items[d]);
      const lo = a && bound(a, false), hi = a && upper(a, shape[d]);
      if (!lo || !hi) { u.whole = true; return; }
      box.lo.push(lo);
      box.hi.push(hi);
    }
    u.boxes.push(box);
  };
  const shapeOf = (v: unknown): number[] | null => (Array.isArray(v) && v.every((x) => typeof x === "number" && Number.isInteger(x)) ? v as number[] : null);
  /** The region a load reads or a store writes: the static valid extents where the tile has them (the rest is pad, never touched). */
  const regionOf = (shape: unknown, valid: unknown): number[] | null => {
    const s = shapeOf(shape), v = shapeOf(valid);
    return s && v && v.length === s.length ? v.map((x, i) => Math.min(x, s[i])) : s;
  };
  /** `if (x <= e)` / `x < e` / `e >= x` / `e > x` on integers: the guard of the then-branch, or null. */
  const guardOf = (c: Expr): Guard | null => {
    if (c.kind !== "call" || c.args.length !== 2) return null;
    const [l, r] = [aff(c.args[0]), aff(c.args[1])];
    if (!l || !r) return null;
    switch (c.op) {
      case "scalar.le": return { x: l, e: r };
      case "scalar.lt": return { x: l, e: affAdd(r, affConst(-1)) };
      case "scalar.ge": return { x: r, e: l };
      case "scalar.gt": return { x: r, e: affAdd(l, affConst(-1)) };
      default: return null;
    }
  };

  const expr = (e: Expr): void => {
    if (e.kind === "list") { e.items.forEach(expr); return; }
    if (e.kind !== "call") return;
    e.args.forEach(expr);
    if (e.op === "tile.load") { record(reads, e.args[0], e.args[1], regionOf(e.attrs.shape, e.attrs.validShape)); return; }
    if (e.op === "tile.store") {
      const tile = e.args[0] ? e.args[0] : undefined;
      const tt = tile && (tile.kind === "var" || tile.kind === "call") ? tile.type : undefined;
      record(writes, e.args[2], e.args[1], tt && tt.kind === "tile" ? regionOf(tt.shape, tt.validShape) : null);
      return;
    }
    if (e.op === "call") { unknown = true; return; }
    const eff = effectsOf(getOp(e.op), e.args, e.attrs);
    for (const i of eff.reads) if (e.args[i] && exprType(e.args[i]).kind === "tensor") { const pi = tensorParam(e.args[i]); if (pi === undefined) unknown = true; else use(reads, pi).whole = true; }
    for (const i of eff.writes) if (e.args[i] && exprType(e.args[i]).kind === "tensor") { const pi = tensorParam(e.args[i]); if (pi === undefined) unknown = true; else use(writes, pi).whole = true; }
  };
  const bindAlias = (v: { id: number; type: { kind: string } }, from: Expr | undefined): void => {
    if (v.type.kind !== "tensor") return;
    let pi: number | undefined;
    if (from?.kind === "var") pi = alias.get(from.id);
    else if (from?.kind === "call" && from.op === "tile.store") pi = tensorParam(from.args[2]);
    if (pi !== undefined) alias.set(v.id, pi);
  };
  const lastYield = (ss: readonly Stmt[]): readonly Expr[] | undefined => { const l = ss[ss.length - 1]; return l?.kind === "yield" ? l.values : undefined; };
  const stmts = (ss: readonly Stmt[]): void => {
    for (const s of ss) {
      switch (s.kind) {
        case "assign":
          expr(s.value);
          if (s.targets.length === 1) {
            const t = s.targets[0];
            if (t.type.kind === "scalar") { const a = aff(s.value); if (a) scalars.set(t.id, a); }
            else bindAlias(t, s.value);
          }
          break;
        case "eval": expr(s.expr); break;
        case "for": {
          [s.start, s.stop, s.step, ...s.inits].forEach(expr);
          const start = aff(s.start), stop = aff(s.stop), step = s.step.kind === "const" && typeof s.step.value === "number" ? s.step.value : 0;
          // the last value is stop - 1 at most; exactly start + k*step when the bounds are constants
          let last = stop && affAdd(stop, affConst(-1));
          if (start && stop && start.t.size === 0 && stop.t.size === 0 && step > 0 && stop.c > start.c) {
            last = affConst(start.c + Math.floor((stop.c - start.c - 1) / step) * step);
          }
          loops.set(`v${s.loopVar.id}`, start && last && step > 0 ? { start, last } : null);
          s.iterArgs.forEach((v, k) => bindAlias(v, s.inits[k]));
          stmts(s.body);
          s.results.forEach((v, k) => bindAlias(v, s.inits[k]));
          break;
        }
        case "while":
          [...s.inits, s.cond].forEach(expr);
          s.iterArgs.forEach((v, k) => bindAlias(v, s.inits[k]));
          stmts(s.body);
          s.results.forEach((v, k) => bindAlias(v, s.inits[k]));
          break;
        case "if": {
          expr(s.cond);
          const g = guardOf(s.cond);
          if (g) guards.push(g);
          stmts(s.then);
          if (g) guards.pop();
          stmts(s.else);
          const y = lastYield(s.then) ?? lastYield(s.else);
          s.results.forEach((v, k) => bindAlias(v, y?.[k]));
          break;
        }
        case "yield": case "break": case "continue": case "return": s.values.forEach(expr); break;
        case "scope": stmts(s.body); break;
      }
    }
  };
  stmts(f.body);

  const out: AccessAttr[] = [];
  f.params.forEach((p, i) => {
    if (p.var.type.kind !== "tensor") return;
    if (unknown) {
      // an access the analysis could not attribute: every tensor parameter, whole, by direction
      out.push({ arg: i, mode: p.dir === "in" ? "read" : p.dir === "out" ? "write" : "readwrite" });
      return;
    }
    const r = reads.get(i), w = writes.get(i);
    if (r && w && (r.whole || w.whole)) { out.push({ arg: i, mode: "readwrite" }); return; }
    const shape = (p.var.type as { shape: readonly (number | unknown)[] }).shape;
    for (const [u, mode] of [[r, "read"], [w, "write"]] as const) {
      if (!u) continue;
      const win = u.whole ? undefined : hull(u.boxes);
      out.push(win && !coversAll(win, shape) ? { arg: i, mode, window: win } : { arg: i, mode });
    }
  });
  return out;
}

/** A window with constant bounds spanning the whole tensor says nothing more than the tensor. */
function coversAll(w: WindowAttr, shape: readonly unknown[]): boolean {
  return w.lo.every((l) => l.some((a) => a.t.length === 0 && a.c <= 0)) &&
    w.hi.every((h, d) => typeof shape[d] === "number" && h.some((a) => a.t.length === 0 && !a.min && a.c >= (shape[d] as number)));
}

const sameAff = (a: Aff, b: Aff): boolean => a.t.size === b.t.size && [...a.t].every(([k, v]) => b.t.get(k) === v);
const toAttr = (a: Aff): AffineAttr => ({ c: a.c, t: [...a.t].map(([k, v]) => [Number(k.slice(1)), v] as const).sort((x, y) => x[0] - y[0]) });
const upperAttr = (u: Upper): AffineAttr => (u.caps.length ? { ...toAttr(u.form), min: u.caps.map(toAttr) } : toAttr(u.form));

/**
 * One window covering every box: per axis the distinct bounds, forms differing only in their
 * constant folded (upper bounds with the same caps; a capped bound is kept apart).
 */
function hull(boxes: readonly Box[]): WindowAttr {
  const rank = boxes[0].lo.length;
  const fold = (forms: AffineAttr[], upper: boolean): AffineAttr[] => {
    const byTerms = new Map<string, AffineAttr>();
    for (const a of forms) {
      const key = JSON.stringify([a.t, a.min ?? null]);
      const prev = byTerms.get(key);
      if (!prev || (upper ? a.c > prev.c : a.c < prev.c)) byTerms.set(key, a);
    }
    return [...byTerms.values()];
  };
  const lo: AffineAttr[][] = [], hi: AffineAttr[][] = [];
  for (let d = 0; d < rank; d++) {
    lo.push(fold(boxes.map((b) => toAttr(b.lo[d])), false));
    hi.push(fold(boxes.map((b) => upperAttr(b.hi[d])), true));
  }
  return { lo, hi };
}

function checkKernelWrites(p: Program, f: Func): void {
  const { writes } = tensorAccess(p, f.body);
  for (const prm of f.params) {
    if (prm.dir === "in" && writes.has(prm.var.id)) {
      // point at the first op that writes it (the parameter's declaration goes in the message)
      let at: Span | undefined;
      forEachExpr(f.body, (e) => {
        if (at || e.kind !== "call" || e.op === "call") return;
        const eff = effectsOf(getOp(e.op), e.args, e.attrs);
        if (eff.writes.some((i) => { const a = e.args[i]; return a?.kind === "var" && a.id === prm.var.id; })) at = e.span;
      });
      const decl = prm.var.span;
      throw new TsptoCompileError("E_WRITE_IN",
        `kernel '${f.name}' writes parameter '${prm.var.name}', which it does not declare Out or InOut` +
        (at && decl.line ? ` (declared at ${decl.file}:${decl.line}:${decl.col})` : ""), at ?? decl,
        `annotate it pl.Out<pl.Tensor> (written only) or pl.InOut<pl.Tensor> (read and written)`);
    }
  }
}

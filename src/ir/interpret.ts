// The IR's meaning, executable: evaluates a program in TypeScript from the op registry's
// reference semantics (the interp platform's device runs it). Works on any stage of the pipeline (pre- or post-SSA, before or after
// outlining), which is what makes it the golden reference and what validateIr uses.
import "./ops/index.js";
import { getOp } from "./registry.js";
import { TsptoRuntimeError, formatSpan } from "./errors.js";
import type { Expr, Func, Span, Stmt } from "./nodes.js";
import type { Program } from "./program.js";
import type { EvalEnv, TileValue, Value } from "./values.js";
import type { TileType } from "./types.js";
import { validRangeMessage, validSources } from "./valid.js";

type Signal =
  | { kind: "normal" }
  | { kind: "yield" | "break" | "continue" | "return"; values: Value[] };
const NORMAL: Signal = { kind: "normal" };

const baseEnv: EvalEnv = {
  fail(message: string, span: Span): never {
    throw new TsptoRuntimeError("E_KERNEL", `kernel failure: ${message}`, span.line ? span : undefined);
  },
};

export interface InterpStats { tasks: number }

/** Run the entry function of `p` on `args` (TensorValues are read and written in place). */
export function interpret(p: Program, args: readonly Value[], stats?: InterpStats): Value[] {
  return callFunc(p, p.entryFunction, args, stats);
}

function callFunc(p: Program, f: Func, args: readonly Value[], stats?: InterpStats): Value[] {
  if (args.length !== f.params.length) {
    throw new TsptoRuntimeError("E_ARITY", `'${f.name}' takes ${f.params.length} arguments, got ${args.length}`, f.span.line ? f.span : undefined);
  }
  if (f.fnKind === "incore" && stats) stats.tasks++;
  // the extents of the parameters' dynamic dimensions (createTensor(["S", ...]) reads them)
  let env = baseEnv;
  f.params.forEach((prm, i) => {
    const t = prm.var.type, v = args[i] as { shape?: readonly number[] } | undefined;
    if (t.kind !== "tensor" || !v?.shape) return;
    t.shape.forEach((d, k) => {
      if (typeof d !== "string") return;
      if (env === baseEnv) env = { fail: baseEnv.fail, dims: new Map() };
      (env.dims as Map<string, number>).set(d, v.shape![k]);
    });
  });
  const vars = new Map<number, Value>();
  f.params.forEach((prm, i) => vars.set(prm.var.id, args[i]));

  const ev = (e: Expr): Value => {
    switch (e.kind) {
      case "var": {
        if (!vars.has(e.id)) throw new Error(`internal: interp read of unbound variable '${e.name}' (#${e.id}) at ${formatSpan(e.span)}`);
        return vars.get(e.id);
      }
      case "const": return e.value;
      case "list": return e.items.map(ev);
      case "call": {
        const a = e.args.map(ev);
        if (e.op === "call") {
          const callee = p.getFunction(String(e.attrs.callee));
          if (!callee) throw new Error(`internal: call of unknown function '${String(e.attrs.callee)}'`);
          const r = callFunc(p, callee, a, stats);
          return r.length === 0 ? undefined : r.length === 1 ? r[0] : r;
        }
        // a runtime validShape: the op's semantics see this launch's extents (src/ir/valid.ts)
        const sources = validSources(e);
        if (!sources) return getOp(e.op).evaluate(a, e.attrs, env, e);
        const type = e.type as TileType;
        const extents = sources.map((src, ax) => {
          if (src.kind === "static") return src.n;
          if (src.kind === "operand") return (a[src.arg] as TileValue).validShape?.[src.axis] ?? (a[src.arg] as TileValue).shape[src.axis];
          return Number(ev(src.expr));
        });
        sources.forEach((src, ax) => {
          const v = extents[ax];
          if (src.kind === "own" && !(Number.isInteger(v) && v >= 0 && v <= type.shape[ax])) env.fail(validRangeMessage(e, extents, type.shape, ax), e.span);
        });
        return getOp(e.op).evaluate(a, e.attrs, env, { type: { ...type, validShape: extents }, span: e.span });
      }
    }
  };
  const bindAll = (vs: readonly { id: number }[], values: readonly Value[]) => vs.forEach((v, i) => vars.set(v.id, values[i]));

  const block = (ss: readonly Stmt[]): Signal => {
    for (const s of ss) {
      const sig = stmt(s);
      if (sig.kind !== "normal") return sig;
    }
    return NORMAL;
  };
  const loop = (iterArgs: readonly { id: number }[], init: Value[], next: () => boolean, body: readonly Stmt[]): Signal | Value[] => {
    let cur = init;
    for (;;) {
      bindAll(iterArgs, cur);
      if (!next()) return cur;
      const sig = block(body);
      if (sig.kind === "return") return sig;
      if (sig.kind === "break") return sig.values.length ? sig.values : iterArgs.map((v) => vars.get(v.id));
      if (sig.kind === "yield" || sig.kind === "continue") cur = sig.values.length || iterArgs.length === 0 ? sig.values : iterArgs.map((v) => vars.get(v.id));
      else cur = iterArgs.map((v) => vars.get(v.id));
    }
  };
  const stmt = (s: Stmt): Signal => {
    switch (s.kind) {
      case "assign": {
        const v = ev(s.value);
        if (s.targets.length === 1) vars.set(s.targets[0].id, v);
        else bindAll(s.targets, v as Value[]);
        return NORMAL;
      }
      case "eval": ev(s.expr); return NORMAL;
      case "scope": return block(s.body);
      case "yield": case "break": case "continue": case "return": return { kind: s.kind, values: s.values.map(ev) };
      case "if": {
        const sig = block(ev(s.cond) ? s.then : s.else);
        if (sig.kind === "yield") { bindAll(s.results, sig.values); return NORMAL; }
        return sig;
      }
      case "for": {
        const start = Number(ev(s.start)), step = Number(ev(s.step));
        let stop = Number(ev(s.stop));
        if (step === 0) env.fail("pl.range step must not be 0", s.span);
        // A loop whose whole body is `if (j + x < b) { ... }` (the row-by-row tail of a dynamic
        // axis: tensor_to_tile) does nothing once j >= b - x: stop there instead of testing
        // every remaining trip (a tail over a 131072-wide tile is 131072 tests per row).
        const guard = step > 0 ? guardedBound(s) : null;
        if (guard) stop = Math.min(stop, Number(ev(guard.bound)) - (guard.offset ? Number(ev(guard.offset)) : 0));
        let i = start;
        let first = true;
        const r = loop(s.iterArgs, s.inits.map(ev), () => {
          if (!first) i += step;
          first = false;
          if (step > 0 ? i >= stop : i <= stop) return false;
          vars.set(s.loopVar.id, i);
          return true;
        }, s.body);
        if (!Array.isArray(r)) return r as Signal;
        bindAll(s.results, r);
        return NORMAL;
      }
      case "while": {
        const r = loop(s.iterArgs, s.inits.map(ev), () => Boolean(ev(s.cond)), s.body);
        if (!Array.isArray(r)) return r as Signal;
        bindAll(s.results, r);
        return NORMAL;
      }
    }
  };
  const sig = block(f.body);
  return sig.kind === "return" ? sig.values : [];
}

/**
 * For `for j ...: if (j + x < b) { ... }` (or `j < b`, `x + j < b`) with no else, no results,
 * no loop-carried values, and x, b free of j: the bound b and the offset x (null for none),
 * whose values cannot change inside the loop (the IR is SSA: the body binds new variables, it
 * never rebinds x's or b's), so every trip with j >= b - x skips its body.
 */
function guardedBound(s: Extract<Stmt, { kind: "for" }>): { bound: Expr; offset: Expr | null } | null {
  if (s.iterArgs.length || s.body.length !== 1) return null;
  const g = s.body[0];
  if (g.kind !== "if" || g.else.length || g.results.length || g.cond.kind !== "call" || g.cond.op !== "scalar.lt") return null;
  const [lhs, bound] = g.cond.args;
  const j = s.loopVar.id;
  const isJ = (e: Expr) => e.kind === "var" && e.id === j;
  let offset: Expr | null;
  if (isJ(lhs)) offset = null;
  else if (lhs.kind === "call" && lhs.op === "scalar.add" && lhs.args.length === 2 && (isJ(lhs.args[0]) || isJ(lhs.args[1]))) offset = isJ(lhs.args[1]) ? lhs.args[0] : lhs.args[1];
  else return null;
  const mentions = (e: Expr): boolean => (e.kind === "var" ? e.id === j : e.kind === "call" ? e.args.some(mentions) : e.kind === "list" ? e.items.some(mentions) : false);
  if (mentions(bound) || (offset && mentions(offset))) return null;
  return { bound, offset };
}

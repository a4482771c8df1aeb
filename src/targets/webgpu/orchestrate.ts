// The webgpu platform's orchestration: the entry function of a lowered program (program.json)
// runs in JavaScript, between dispatches. It is compiled once per module load into closures
// over a frame of slots (no IR walk per launch, no eval: a page with a strict Content Security
// Policy runs it too): loops, ifs and whiles with their carried values, scalars (the op
// registry's reference semantics, so they compute exactly as on interp), createTensor
// (device buffers of the launch) and calls, each of which becomes a dispatch the launch records
// into its command encoder. Nothing here waits for the GPU or reads device memory (the code
// generator rejects an orchestration that would: src/codegen/wgsl/generate.ts).
import { TsptoRuntimeError, getOp, returnedParams, type DType, type EvalEnv, type Expr, type Program, type Span, type Stmt, type Value } from "../../ir/index.js";
import type { SpmdAttr } from "../../passes/index.js";

/** A tensor of the launch: a range of device memory from byte `offset`. */
export interface OrchTensor { readonly offset: number; readonly dtype: DType; readonly shape: readonly number[] }
export type OrchValue = OrchTensor | number | boolean | undefined;

export interface OrchHooks {
  /** A zero-filled device tensor that lives until the launch completes. */
  create(dtype: DType, shape: readonly number[], span: Span): OrchTensor;
  /** One call of kernel `kernel` (index in the program's kernel table). */
  call(kernel: number, args: readonly OrchValue[], spmd: SpmdAttr | undefined, span: Span): void;
}

export type Orchestration = (args: readonly OrchValue[], hooks: OrchHooks) => void;

type Frame = OrchValue[];
type Ev = (f: Frame) => OrchValue;
type Signal = 0 | { kind: "yield" | "break" | "continue" | "return"; values: OrchValue[] };
type Run = (f: Frame, h: OrchHooks) => Signal;

const ENV: EvalEnv = {
  fail(message: string, span: Span): never {
    throw new TsptoRuntimeError("E_KERNEL", `kernel failure: ${message}`, span.line ? span : undefined);
  },
};

/** Compiles the entry of `program`; `kernelIndex` maps each InCore function to its kernel table index. */
export function compileOrchestration(program: Program, kernelIndex: ReadonlyMap<string, number>): Orchestration {
  const entry = program.entryFunction;
  const slots = new Map<number, number>();
  const slot = (id: number): number => {
    let s = slots.get(id);
    if (s === undefined) { s = slots.size; slots.set(id, s); }
    return s;
  };
  entry.params.forEach((p) => slot(p.var.id));

  const expr = (e: Expr): Ev => {
    switch (e.kind) {
      case "const": { const v = e.value; return () => v; }
      case "var": { const s = slot(e.id); return (f) => f[s]; }
      case "list": { const items = e.items.map(expr); return (f) => items.map((x) => x(f)) as unknown as OrchValue; }
      case "call": {
        if (e.op === "tensor.dim") {
          const t = expr(e.args[0]), axis = Number(e.attrs.axis);
          return (f) => (t(f) as OrchTensor).shape[axis];
        }
        if (e.op === "call") throw new TsptoRuntimeError("E_CODEGEN", "internal: a kernel call used as a value in the webgpu orchestration", e.span);
        const op = getOp(e.op);
        const args = e.args.map(expr);
        const call = e;
        if (args.length === 1) { const [a] = args; return (f) => op.evaluate([a(f) as Value], call.attrs, ENV, call) as OrchValue; }
        if (args.length === 2) { const [a, b] = args; return (f) => op.evaluate([a(f) as Value, b(f) as Value], call.attrs, ENV, call) as OrchValue; }
        return (f) => op.evaluate(args.map((a) => a(f) as Value), call.attrs, ENV, call) as OrchValue;
      }
    }
  };

  /** A call statement: the dispatch, then its results bound to the argument tensors it returns. */
  const callStmt = (call: Extract<Expr, { kind: "call" }>, targets: readonly number[]): Run => {
    const name = String(call.attrs.callee);
    const callee = program.getFunction(name);
    const k = kernelIndex.get(name);
    if (!callee || k === undefined) throw new TsptoRuntimeError("E_CODEGEN", `internal: call of '${name}', which is not a kernel of the program`, call.span);
    const args = call.args.map(expr);
    const spmd = call.attrs.spmd as unknown as SpmdAttr | undefined;
    const returned = returnedParams(callee, program);
    const outs = targets.map((s, i) => {
      const pi = returned[i];
      if (pi === undefined) throw new TsptoRuntimeError("E_CODEGEN", `internal: '${name}' does not return a parameter tensor at position ${i}`, call.span);
      return [s, pi] as const;
    });
    const span = call.span;
    return (f, h) => {
      const vals = args.map((a) => a(f));
      h.call(k, vals, spmd, span);
      for (const [s, pi] of outs) f[s] = vals[pi];
      return 0;
    };
  };

  const block = (ss: readonly Stmt[]): Run => {
    const runs = ss.map(stmt);
    return (f, h) => {
      for (let i = 0; i < runs.length; i++) {
        const sig = runs[i](f, h);
        if (sig !== 0) return sig;
      }
      return 0;
    };
  };

  const bindAll = (dst: readonly number[], values: readonly OrchValue[], f: Frame) => { for (let i = 0; i < dst.length; i++) f[dst[i]] = values[i]; };

  /** A loop over `next()`: iterArgs get inits, then each iteration's yield / continue values; break leaves with its values. */
  const loop = (iter: readonly number[], inits: readonly Ev[], next: (f: Frame, first: boolean) => boolean, body: Run) =>
    (f: Frame, h: OrchHooks): Signal | OrchValue[] => {
      let cur = inits.map((x) => x(f));
      for (let first = true; ; first = false) {
        bindAll(iter, cur, f);
        if (!next(f, first)) return cur;
        const sig = body(f, h);
        if (sig !== 0 && sig.kind === "return") return sig;
        if (sig !== 0 && sig.kind === "break") return sig.values.length ? sig.values : iter.map((s) => f[s]);
        cur = sig !== 0 && (sig.values.length || iter.length === 0) ? sig.values : iter.map((s) => f[s]);
      }
    };

  function stmt(s: Stmt): Run {
    switch (s.kind) {
      case "assign": {
        const v = s.value;
        if (v.kind === "call" && v.op === "call") return callStmt(v, s.targets.map((t) => slot(t.id)));
        if (v.kind === "call" && v.op === "tensor.create") {
          const t = slot(s.targets[0].id);
          const type = v.type as { dtype: DType; shape: readonly (number | string)[] };
          const shape = type.shape.map(Number);
          const span = v.span;
          return (f, h) => { f[t] = h.create(type.dtype, shape, span); return 0; };
        }
        const x = expr(v);
        if (s.targets.length === 1) { const t = slot(s.targets[0].id); return (f) => { f[t] = x(f); return 0; }; }
        const ts = s.targets.map((t) => slot(t.id));
        return (f) => { bindAll(ts, x(f) as unknown as OrchValue[], f); return 0; };
      }
      case "eval": {
        const e = s.expr;
        if (e.kind === "call" && e.op === "call") return callStmt(e, []);
        const x = expr(e);
        return (f) => { x(f); return 0; };
      }
      case "scope": return block(s.body);
      case "yield": case "break": case "continue": case "return": {
        const kind = s.kind;
        const vals = s.values.map(expr);
        return (f) => ({ kind, values: vals.map((x) => x(f)) });
      }
      case "if": {
        const cond = expr(s.cond), then = block(s.then), els = block(s.else);
        const results = s.results.map((r) => slot(r.id));
        return (f, h) => {
          const sig = cond(f) ? then(f, h) : els(f, h);
          if (sig !== 0 && sig.kind === "yield") { bindAll(results, sig.values, f); return 0; }
          return sig;
        };
      }
      case "for": {
        const start = expr(s.start), stop = expr(s.stop), step = expr(s.step);
        const iv = slot(s.loopVar.id);
        const iter = s.iterArgs.map((a) => slot(a.id)), results = s.results.map((r) => slot(r.id));
        const span = s.span;
        const body = block(s.body);
        let i = 0, hi = 0, st = 0;
        const run = loop(iter, s.inits.map(expr), (f, first) => {
          if (first) {
            i = Number(start(f)); hi = Number(stop(f)); st = Number(step(f));
            if (st === 0) ENV.fail("pl.range step must not be 0", span);
          } else {
            i += st;
          }
          if (st > 0 ? i >= hi : i <= hi) return false;
          f[iv] = i;
          return true;
        }, body);
        return (f, h) => {
          const r = run(f, h);
          if (!Array.isArray(r)) return r;
          bindAll(results, r, f);
          return 0;
        };
      }
      case "while": {
        const cond = expr(s.cond);
        const iter = s.iterArgs.map((a) => slot(a.id)), results = s.results.map((r) => slot(r.id));
        const run = loop(iter, s.inits.map(expr), (f) => Boolean(cond(f)), block(s.body));
        return (f, h) => {
          const r = run(f, h);
          if (!Array.isArray(r)) return r;
          bindAll(results, r, f);
          return 0;
        };
      }
    }
  }

  const body = block(entry.body);
  const np = entry.params.length;
  return (args, hooks) => {
    const f: Frame = new Array(slots.size);
    for (let i = 0; i < np; i++) f[i] = args[i];
    body(f, hooks);
  };
}


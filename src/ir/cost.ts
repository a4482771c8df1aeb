// What a launch of a lowered program costs, counted from its IR (the roofline's counts; the
// runtime joins them with measured task times and the machine's limits, src/runtime/roofline.ts).
//
// Per InCore function (a task kernel), summed over every call the orchestration makes in one
// launch:
//   bytes  moved between tensors (global memory) and tiles: each tile.load / gatherLoad reads its
//          tile's valid region from its tensor, each tile.store writes its tile's valid region
//          (an atomic add store reads it too), a tensor-level read is one element. Operands a
//          code generator reads in place (forwarded loads, matmul operands) are still one load:
//          what the program asks for, not what a cache hierarchy makes of it.
//   flops  arithmetic ops: an elementwise tile op (cast, cmp, sel included) one per valid element
//          of its result; a reduction one per valid element it reads; row/col broadcast
//          arithmetic one per output element (Expdif two: the subtraction and the exp); matmul
//          and matmulAcc 2·M·N·K (matmulBias + M·N; batchMatmul per batch); matmulQuant
//          2·M·N·K; data movement between tiles (move, reshape, slice, transpose, concat,
//          assemble, fillpad, broadcast copies, createTile, full, iota, a gather of tile rows)
//          and scalar index arithmetic none. Each op says so in its registry entry (`cost`), an
//          elementwise one by default.
//   unit   which unit can do a matmul's flops: bf16 operands with fpContract "fast" a bf16 dot
//          unit, int8/uint8 an int8 one, everything else the vector (FMA) pipes.
//
// A count follows the program's control flow with the launch's values: loop trip counts, the
// scalar arguments of each call (an SPMD call's whole range: the runtime's split of it into
// band tasks sums to the same counts), dynamic dimensions bound from the argument shapes,
// runtime validShapes (partial edge tiles). A loop whose body costs the same every trip is
// counted once and multiplied; one whose cost depends on its index is walked trip by trip. A
// count that needs a value only the running kernel has (data read from memory, a branch on it
// whose sides differ, a while loop on it) is not guessed: the kernel's count is `unknown`, with
// the reason.
import "./ops/index.js";
import { getOp, type CostCtx, type CostUnit, type OpCost } from "./registry.js";
import { exprType, type Call, type Expr, type Func, type Span, type Stmt } from "./nodes.js";
import type { Program } from "./program.js";
import { numel, type Type } from "./types.js";
import { validSources } from "./valid.js";
import type { EvalEnv } from "./values.js";

/** Bytes and flops (by unit) of some calls. */
export interface Cost {
  readBytes: number;
  writeBytes: number;
  /** Flops on the vector (FMA) pipes. */
  vectorFlops: number;
  /** Flops a bf16 dot-product unit can do (bf16 matmuls with fpContract "fast"). */
  dotBf16Flops: number;
  /** Integer multiply-add ops (×2) an int8 dot-product unit can do (int8/uint8 matmuls). */
  dotInt8Flops: number;
}

/** One task kernel's counts over a launch. */
export interface KernelCost extends Cost {
  /** The InCore function's name (the kernel name tasks carry in DFX). */
  readonly kernel: string;
  /** How many times the orchestration calls it in one launch (an SPMD call counts once, however many band tasks it becomes). */
  calls: number;
  /** Why the counts are not known (they need a value only the run has); null when they are. */
  unknown: string | null;
}

export interface ProgramCost {
  /** One entry per InCore function the launch calls, in the order of their first call. */
  readonly kernels: readonly KernelCost[];
  /** Why nothing could be counted (the orchestration itself needs a value only the run has); null when counted. */
  readonly unknown: string | null;
}

/** The launch's arguments as far as a count needs them: a tensor's shape, a scalar's value (by entry parameter position). */
export type CostArg = readonly number[] | number | boolean | null | undefined;

export const totalBytes = (c: Cost): number => c.readBytes + c.writeBytes;
export const totalFlops = (c: Cost): number => c.vectorFlops + c.dotBf16Flops + c.dotInt8Flops;

/** Trips walked one by one (loops whose cost depends on their index) before a count gives up. */
const STEP_BUDGET = 2_000_000;

/** A value the count needed but does not have. */
class Missing extends Error {}

type Val = number | boolean | readonly number[] | readonly Val[] | undefined;

const zero = (): Cost => ({ readBytes: 0, writeBytes: 0, vectorFlops: 0, dotBf16Flops: 0, dotInt8Flops: 0 });
const UNIT_FIELD: Record<CostUnit, keyof Cost> = { vector: "vectorFlops", dotBf16: "dotBf16Flops", dotInt8: "dotInt8Flops" };
const KEYS: readonly (keyof Cost)[] = ["readBytes", "writeBytes", "vectorFlops", "dotBf16Flops", "dotInt8Flops"];

/** Costs per kernel (and calls), scaled and added as loops are counted. */
class Acc {
  readonly by = new Map<string, { cost: Cost; calls: number }>();
  entry(k: string) {
    let e = this.by.get(k);
    if (!e) { e = { cost: zero(), calls: 0 }; this.by.set(k, e); }
    return e;
  }
  add(o: Acc, times: number): void {
    for (const [k, v] of o.by) {
      const e = this.entry(k);
      e.calls += v.calls * times;
      for (const f of KEYS) e.cost[f] += v.cost[f] * times;
    }
  }
  equals(o: Acc): boolean {
    if (this.by.size !== o.by.size) return false;
    for (const [k, v] of this.by) {
      const w = o.by.get(k);
      if (!w || w.calls !== v.calls || KEYS.some((f) => w.cost[f] !== v.cost[f])) return false;
    }
    return true;
  }
}

type Signal = { kind: "normal" } | { kind: "yield" | "break" | "continue" | "return"; values: Val[] };
const NORMAL: Signal = { kind: "normal" };

const where = (s: Span): string => (s.line ? ` at ${s.file.split(/[\\/]/).pop()}:${s.line}` : "");
const isNums = (v: Val): v is readonly number[] => Array.isArray(v) && v.every((x) => typeof x === "number");
const env: EvalEnv = { fail: () => { throw new Missing("a scalar expression fails at run time"); } };

/**
 * Counts one launch of `program` (lowered: InCore functions called from its entry) with the
 * entry's arguments `args` (tensor shapes bind dynamic dimensions; scalars their values). Static
 * programs need no `args`.
 */
export function programCost(program: Program, args: readonly CostArg[] = []): ProgramCost {
  const counter = new Counter(program);
  const entry = program.entryFunction;
  const acc = new Acc();
  const bound = entry.params.map((p, i) => {
    const a = args[i], t = p.var.type;
    if (t.kind === "tensor") return Array.isArray(a) ? a as readonly number[] : staticShape(t.shape);
    return typeof a === "number" || typeof a === "boolean" ? a : undefined;
  });
  let unknown: string | null = null;
  try {
    counter.call(entry, bound, acc, null);
  } catch (e) {
    if (!(e instanceof Missing)) throw e;
    unknown = e.message;
  }
  const kernels: KernelCost[] = [];
  for (const [kernel, { cost, calls }] of acc.by) kernels.push({ kernel, calls, ...cost, unknown: counter.unknown.get(kernel) ?? null });
  for (const [kernel, why] of counter.unknown) if (!acc.by.has(kernel)) kernels.push({ kernel, calls: 0, ...zero(), unknown: why });
  return { kernels: unknown ? [] : kernels, unknown };
}

const staticShape = (shape: readonly (number | string)[]): readonly number[] | undefined =>
  shape.every((d) => typeof d === "number") ? shape as number[] : undefined;

class Counter {
  steps = 0;
  /** Loops being counted with their index unknown (a failure there is retried trip by trip, not final). */
  probing = 0;
  /** Kernels whose count needed a value the run only has: why. */
  readonly unknown = new Map<string, string>();
  constructor(readonly program: Program) {}

  /** Runs function `f` with `args`, accumulating into `acc` (`kernel`: the task kernel being counted, null in the orchestration). */
  call(f: Func, args: readonly Val[], acc: Acc, kernel: string | null): Val[] {
    const vars = new Map<number, Val>();
    const dims = new Map<string, number>();
    f.params.forEach((p, i) => {
      let v = args[i];
      const t = p.var.type;
      if (t.kind === "tensor") {
        if (isNums(v)) t.shape.forEach((d, k) => { if (typeof d === "string") dims.set(d, (v as number[])[k]); });
        else v = staticShape(t.shape);
      }
      vars.set(p.var.id, v);
    });
    const fr = new Frame(this, vars, dims, kernel);
    const sig = fr.block(f.body, acc);
    return sig.kind === "return" ? sig.values : [];
  }

  kernelCall(callee: Func, args: readonly Val[], acc: Acc): void {
    const k = callee.name;
    acc.entry(k).calls++;
    if (this.unknown.has(k)) return;
    const own = new Acc();
    try {
      this.call(callee, args, own, k);
    } catch (e) {
      if (!(e instanceof Missing) || this.probing > 0) throw e;
      this.unknown.set(k, e.message);
      return;
    }
    const e = own.by.get(k);
    if (e) for (const f of KEYS) acc.entry(k).cost[f] += e.cost[f];
  }

  step(span: Span): void {
    if (++this.steps > STEP_BUDGET) throw new Missing(`its loops${where(span)} take over ${STEP_BUDGET} trips whose costs differ: too many to count one by one`);
  }
}

class Frame {
  constructor(readonly c: Counter, readonly vars: Map<number, Val>, readonly dims: Map<string, number>, readonly kernel: string | null) {}

  /** The value of `e`, adding the cost of every op call in it to `acc`. */
  ev(e: Expr, acc: Acc): Val {
    switch (e.kind) {
      case "const": return e.value;
      case "var": return this.vars.get(e.id);
      case "list": return e.items.map((x) => this.ev(x, acc));
      case "call": return this.call(e, acc);
    }
  }

  need(v: Val, what: string, span: Span): number {
    if (typeof v === "number") return v;
    if (typeof v === "boolean") return v ? 1 : 0;
    throw new Missing(`${what}${where(span)} is known only at run time`);
  }

  call(e: Call, acc: Acc): Val {
    const a = e.args.map((x) => this.ev(x, acc));
    if (e.op === "call") {
      const callee = this.c.program.getFunction(String(e.attrs.callee));
      if (!callee) throw new Error(`internal: call of unknown function '${String(e.attrs.callee)}'`);
      if (callee.fnKind === "incore" && this.kernel === null) {
        this.c.kernelCall(callee, a, acc);
        return this.shapeOf(e.type);
      }
      const r = this.c.call(callee, a, acc, this.kernel);
      return r.length === 0 ? undefined : r.length === 1 ? r[0] : r;
    }
    const op = getOp(e.op);
    if (op.level === "scalar") {
      if (!a.every((v) => typeof v === "number" || typeof v === "boolean" || isNums(v))) return undefined;
      try {
        return op.evaluate(a.map((v) => (isNums(v) ? { shape: v } : v)) as never, e.attrs, env, e) as Val;
      } catch (err) {
        if (err instanceof Missing) return undefined;
        throw err;
      }
    }
    const extents = this.extentsOf(e, a);
    if (this.kernel !== null) this.addCost(e, a, extents, acc);
    if (e.type.kind === "tuple") return e.type.elems.map((t) => this.shapeOf(t));
    return e.type.kind === "scalar" ? undefined : extents ?? undefined;
  }

  /** The extents of a tile or tensor type when they are static or dynamic dimensions bound here. */
  shapeOf(t: Type): Val {
    if (t.kind === "tile") return t.validShape ? (t.validShape.every((d) => typeof d === "number") ? t.validShape as number[] : undefined) : t.shape;
    if (t.kind === "tensor") {
      const s = t.shape.map((d) => (typeof d === "number" ? d : this.dims.get(d)));
      return s.every((d) => d !== undefined) ? s as number[] : undefined;
    }
    return undefined;
  }

  /** A tile result's valid extents for this launch (runtime validShapes resolved where the values are known), a tensor's shape. */
  extentsOf(e: Call, a: readonly Val[]): readonly number[] | null {
    const t = e.type;
    if (t.kind === "tile" && t.validShape && !t.validShape.every((d) => typeof d === "number")) {
      const src = validSources(e);
      if (!src) return null;
      const out: number[] = [];
      for (const s of src) {
        if (s.kind === "static") out.push(s.n);
        else if (s.kind === "operand") { const v = a[s.arg]; if (!isNums(v)) return null; out.push(v[s.axis]); }
        else { const v = this.ev(s.expr, new Acc()); if (typeof v !== "number") return null; out.push(v); }
      }
      return out;
    }
    const v = this.shapeOf(t);
    return isNums(v) ? v : null;
  }

  addCost(e: Call, a: readonly Val[], extents: readonly number[] | null, acc: Acc): void {
    const op = getOp(e.op);
    let rule = op.cost;
    if (!rule) {
      if (op.level !== "tile" || op.fusable === false) throw new Missing(`op ${op.name}${where(e.span)} has no cost rule`);
      rule = (c) => ({ flops: numel(c.extents) });
    }
    const span = e.span;
    const need = (v: readonly number[] | null, what: string): readonly number[] => {
      if (!v) throw new Missing(`the extents of ${what} of ${op.pl ? `pl.${op.pl}` : op.name}${where(span)} are known only at run time`);
      return v;
    };
    const ctx: CostCtx = {
      args: e.args, attrs: e.attrs, type: e.type,
      get extents() { return e.type.kind === "tile" || e.type.kind === "tensor" ? need(extents, "the result") : []; },
      operand: (i: number) => {
        const t = exprType(e.args[i]);
        if (t.kind !== "tile" && t.kind !== "tensor") return null;
        return need(isNums(a[i]) ? a[i] as readonly number[] : null, `operand ${i + 1}`);
      },
    };
    const c: OpCost = rule(ctx);
    const k = acc.entry(this.kernel!).cost;
    k.readBytes += c.readBytes ?? 0;
    k.writeBytes += c.writeBytes ?? 0;
    if (c.flops) k[UNIT_FIELD[c.unit ?? "vector"]] += c.flops;
  }

  bindAll(vs: readonly { id: number }[], values: readonly Val[] | undefined): void {
    vs.forEach((v, i) => this.vars.set(v.id, values?.[i]));
  }

  block(ss: readonly Stmt[], acc: Acc): Signal {
    for (const s of ss) {
      const sig = this.stmt(s, acc);
      if (sig.kind !== "normal") return sig;
    }
    return NORMAL;
  }

  stmt(s: Stmt, acc: Acc): Signal {
    switch (s.kind) {
      case "assign": {
        const v = this.ev(s.value, acc);
        if (s.targets.length === 1) this.vars.set(s.targets[0].id, v);
        else this.bindAll(s.targets, Array.isArray(v) && v.length === s.targets.length ? v as Val[] : undefined);
        return NORMAL;
      }
      case "eval": this.ev(s.expr, acc); return NORMAL;
      case "scope": return this.block(s.body, acc);
      case "yield": case "break": case "continue": case "return": return { kind: s.kind, values: s.values.map((v) => this.ev(v, acc)) };
      case "if": {
        const cond = this.ev(s.cond, acc);
        if (cond !== undefined && !Array.isArray(cond)) {
          const sig = this.block(cond ? s.then : s.else, acc);
          if (sig.kind === "yield") { this.bindAll(s.results, sig.values); return NORMAL; }
          return sig;
        }
        // a branch on a value known only at run time: fine when both sides cost the same
        const t = new Acc(), f = new Acc();
        const st = this.block(s.then, t), sf = this.block(s.else, f);
        if (!t.equals(f) || st.kind !== sf.kind || (st.kind !== "normal" && st.kind !== "yield")) {
          throw new Missing(`the branch taken${where(s.span)} depends on a value known only at run time, and its sides cost differently`);
        }
        acc.add(t, 1);
        if (st.kind === "yield" && sf.kind === "yield") this.bindAll(s.results, st.values.map((v, i) => (same(v, sf.values[i]) ? v : undefined)));
        return NORMAL;
      }
      case "for": return this.forLoop(s, acc);
      case "while": {
        let cur = s.inits.map((x) => this.ev(x, acc));
        for (;;) {
          this.bindAll(s.iterArgs, cur);
          if (!this.need(this.ev(s.cond, acc), "the condition of a while loop", s.span)) break;
          this.c.step(s.span);
          const sig = this.block(s.body, acc);
          if (sig.kind === "return") return sig;
          if (sig.kind === "break") { cur = sig.values.length ? sig.values : s.iterArgs.map((v) => this.vars.get(v.id)); break; }
          cur = (sig.kind === "yield" || sig.kind === "continue") && (sig.values.length || s.iterArgs.length === 0) ? sig.values : s.iterArgs.map((v) => this.vars.get(v.id));
        }
        this.bindAll(s.results, cur);
        return NORMAL;
      }
    }
  }

  forLoop(s: Extract<Stmt, { kind: "for" }>, acc: Acc): Signal {
    const start = this.need(this.ev(s.start, acc), "the start of a loop", s.span);
    const stop = this.need(this.ev(s.stop, acc), "the bound of a loop", s.span);
    const step = this.need(this.ev(s.step, acc), "the step of a loop", s.span);
    if (step === 0) throw new Missing(`a loop${where(s.span)} has step 0`);
    const trips = Math.max(0, Math.ceil((stop - start) / step));
    const inits = s.inits.map((x) => this.ev(x, acc));
    if (trips === 0) { this.bindAll(s.results, inits); return NORMAL; }
    // the same cost every trip: count one with the index (and loop-carried scalars) unknown
    if (!exits(s.body)) {
      const one = new Acc();
      const saved = new Map(this.vars);
      this.c.probing++;
      try {
        this.vars.set(s.loopVar.id, undefined);
        this.bindAll(s.iterArgs, inits.map((v) => (isNums(v) ? v : undefined)));
        const sig = this.block(s.body, one);
        acc.add(one, trips);
        const out = sig.kind === "yield" ? sig.values.map((v, i) => (isNums(v) ? v : same(v, inits[i]) ? v : undefined)) : s.iterArgs.map(() => undefined);
        this.bindAll(s.results, out);
        return NORMAL;
      } catch (e) {
        if (!(e instanceof Missing)) throw e;
        for (const [k, v] of saved) this.vars.set(k, v);
      } finally {
        this.c.probing--;
      }
    }
    // trip by trip
    let cur = inits;
    for (let i = start, n = 0; n < trips; n++, i += step) {
      this.c.step(s.span);
      this.bindAll(s.iterArgs, cur);
      this.vars.set(s.loopVar.id, i);
      const sig = this.block(s.body, acc);
      if (sig.kind === "return") return sig;
      if (sig.kind === "break") { cur = sig.values.length ? sig.values : s.iterArgs.map((v) => this.vars.get(v.id)); break; }
      cur = (sig.kind === "yield" || sig.kind === "continue") && (sig.values.length || s.iterArgs.length === 0) ? sig.values : s.iterArgs.map((v) => this.vars.get(v.id));
    }
    this.bindAll(s.results, cur);
    return NORMAL;
  }
}

const same = (x: Val, y: Val): boolean => JSON.stringify(x) === JSON.stringify(y);

/** Does a loop body leave its trip early (break / continue / return outside a nested loop)? */
function exits(ss: readonly Stmt[]): boolean {
  return ss.some((s) => s.kind === "break" || s.kind === "continue" || s.kind === "return" ||
    (s.kind === "if" && (exits(s.then) || exits(s.else))) || (s.kind === "scope" && exits(s.body)) ||
    ((s.kind === "for" || s.kind === "while") && s.body.some((x) => x.kind === "return")));
}

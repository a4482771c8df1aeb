// One call of an InCore function in the orchestration: its argument slots, its tensor
// accesses, and the submit (rt->submit, spmd row bands, or a target's SubmitHook).
import type { Call, Program, Var } from "../../ir/index.js";
import { DTYPE_BYTES, dimSymbolsOf, returnedParams, typeStr } from "../../ir/index.js";
import type { AccessAttr } from "../../passes/index.js";
import { type KernelCtx, type TensorRef, cdim, cmul, cnumel, cstr, scalarCType, spanWhere } from "./emitters/index.js";
import { emitSpmdSubmit, type SpmdSubmit } from "./spmd.js";
import { accessInit } from "./access.js";
import { comment, convertScalar, internal } from "./cexpr.js";

/** Bytes of a tensor as C++ (a number for a static shape). */
const bytesOf = (tr: TensorRef): string => cdim(cmul(cnumel(tr.dims), DTYPE_BYTES[tr.type.dtype]));

/**
 * How the orchestration submits one call of an InCore function. The cpu platform uses the
 * built-in form (one rt->submit, or row bands for `spmd` calls); another target (cuda) passes
 * its own to reuse this generator for a host-side entry.
 */
export type SubmitHook = (g: KernelCtx, s: SpmdSubmit) => void;

/** What the call code needs from the orchestration generator besides KernelCtx. */
export interface CallHost extends KernelCtx {
  readonly program: Program;
  readonly symbols: ReadonlyMap<string, string>;
  readonly submitHook?: SubmitHook;
  readonly tensors: Map<number, TensorRef>;
}

export function callStmt(g: CallHost, call: Call, targets: readonly Var[]): void {
  const calleeName = String(call.attrs.callee);
  const callee = g.program.getFunction(calleeName);
  const sym = g.symbols.get(calleeName);
  if (!callee || !sym) return internal(`call of '${calleeName}', which is not an InCore function of the program`, call.span);
  if (callee.params.length !== call.args.length) internal(`call of '${calleeName}' with ${call.args.length} args, expects ${callee.params.length}`, call.span);
  const slots: string[] = [];
  const tensorArgs = new Map<number, TensorRef>();
  callee.params.forEach((p, k) => {
    const a = call.args[k];
    const pt = p.var.type;
    if (pt.kind === "tensor") {
      const tr = g.tensor(a);
      tensorArgs.set(k, tr);
      slots.push(tr.ptr);
    } else if (pt.kind === "scalar") {
      const c = g.scalar(a);
      const ct = scalarCType(pt.dtype);
      const v = convertScalar(c, ct);
      slots.push(ct === "double" ? `tspto_dbits(${v})` : ct === "bool" ? `(int64_t)(${v} ? 1 : 0)` : v);
    } else {
      internal(`parameter '${p.var.name}' of '${calleeName}' has type ${typeStr(pt)}`, p.var.span);
    }
  });
  // the callee's dynamic dimensions follow its parameters: each the extent of its first occurrence
  for (const d of dimSymbolsOf(callee.params.map((p) => (p.var.type.kind === "tensor" ? p.var.type.shape : null)))) {
    const k = callee.params.findIndex((p) => p.var.type.kind === "tensor" && p.var.type.shape.includes(d));
    const ax = (callee.params[k].var.type as { shape: readonly unknown[] }).shape.indexOf(d);
    slots.push(cdim(tensorArgs.get(k)!.dims[ax]));
  }
  const MODES: Record<string, string> = { read: "TSPTO_ACCESS_READ", write: "TSPTO_ACCESS_WRITE", readwrite: "TSPTO_ACCESS_READWRITE" };
  let accesses: AccessAttr[];
  const attr = call.attrs.accesses;
  if (Array.isArray(attr)) {
    accesses = attr.map((a) => {
      const o = a as unknown as AccessAttr;
      if (typeof o?.arg !== "number" || !tensorArgs.has(o.arg) || typeof o.mode !== "string" || !(o.mode in MODES)) {
        return internal(`bad access ${JSON.stringify(a)} in the call of '${calleeName}'`, call.span);
      }
      return o;
    });
  } else {
    accesses = [...tensorArgs.keys()].map((k) => {
      const dir = callee.params[k].dir;
      return { arg: k, mode: dir === "in" ? "read" : dir === "out" ? "write" : "readwrite" };
    });
  }
  const scope = Number(call.attrs.scopeId ?? 0) | 0;
  if (g.submitHook) {
    g.submitHook(g, { call, symbol: sym, name: calleeName, scope, slots, accesses: accesses.map((x) => {
      const tr = tensorArgs.get(x.arg)!;
      return { arg: x.arg, ptr: tr.ptr, bytes: bytesOf(tr), mode: MODES[x.mode], rows: cdim(tr.dims[0] ?? 1) };
    }) });
  } else if (call.attrs.spmd !== undefined) {
    // split into row bands, one task per core (src/codegen/cpp/spmd.ts)
    emitSpmdSubmit(g, { call, symbol: sym, name: calleeName, scope, slots, accesses: accesses.map((x) => {
      const tr = tensorArgs.get(x.arg)!;
      return { arg: x.arg, ptr: tr.ptr, bytes: bytesOf(tr), mode: MODES[x.mode], rows: cdim(tr.dims[0] ?? 1),
        init: x.window ? (bandSlots: readonly string[]) => accessInit(x, tr, MODES[x.mode], bandSlots, call.span) : undefined };
    }) });
  } else {
    const s = g.fresh("slots"), a = g.fresh("acc");
    g.open(`{  // ${comment(calleeName)}(${call.args.map((x) => (x.kind === "var" ? comment(x.name) : "...")).join(", ")}) (${comment(spanWhere(call.span))})`);
    g.line(`const int64_t ${s}[${Math.max(1, slots.length)}] = { ${slots.join(", ") || "0"} };`);
    const accs = accesses.map((x) => {
      const tr = tensorArgs.get(x.arg)!;
      return accessInit(x, tr, MODES[x.mode], slots.map((_, k) => `${s}[${k}]`), call.span);
    });
    g.line(`const TsptoAccess ${a}[${Math.max(1, accs.length)}] = { ${accs.join(", ") || "{ 0, 0, 0, 0 }"} };`);
    g.line(`if (rt->submit(rt->ctx, ${sym}, ${cstr(calleeName)}, ${scope}, ${s}, ${slots.length}, ${a}, ${accs.length}) != 0) ${g.failExit}`);
    g.close();
  }
  if (targets.length) {
    const returned = returnedParams(callee, g.program);
    targets.forEach((t, k) => {
      if (t.type.kind !== "tensor") return internal(`result '${t.name}' of the call of '${calleeName}' is not a tensor`, t.span);
      const pi = returned[k];
      if (pi === undefined) return internal(`'${calleeName}' does not return a parameter tensor at position ${k}`, call.span);
      g.tensors.set(t.id, { ...tensorArgs.get(pi)!, label: t.name });
    });
  }
}

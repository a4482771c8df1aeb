// Submission of a call split into row bands (the `spmd` attribute of the SplitParallelLoops
// pass, src/passes/split_parallel_loops.ts): the orchestration submits min(maxChunks, rt->core_count) tasks
// of the same kernel, each over a contiguous range of loop iterations passed in the loop
// bound slots, and each declaring only the rows of the banded tensors it touches.
import { TsptoCompileError, type Call } from "../../ir/index.js";
import { SPMD_MIN_CHUNK_BYTES, type SpmdAttr } from "../../passes/index.js";
import { cstr, type KernelCtx } from "./emitters/index.js";

export interface SpmdSubmit {
  readonly call: Call;
  readonly symbol: string;
  readonly name: string;
  readonly scope: number;
  /** C++ expressions of the slots, in callee parameter order. */
  readonly slots: readonly string[];
  /** Accesses of the unsplit call: argument, base pointer expression, bytes, mode macro. */
  readonly accesses: readonly { arg: number; ptr: string; bytes: number | string; mode: string;
    /** The tensor's first extent as C++ (clamps a band when the attribute's rows is -1: dynamic). */
    rows: string;
    /** The access's window initializer for a band's slots (DeriveDeps bounded it), else undefined. */
    init?: (slots: readonly string[]) => string }[];
}

const int = (n: number): string => `INT64_C(${n})`;

export function checkSpmdAttr(call: Call): SpmdAttr {
  const a = call.attrs.spmd as unknown as SpmdAttr;
  const okInt = (x: unknown, min: number) => typeof x === "number" && Number.isInteger(x) && x >= min;
  if (!a || typeof a !== "object" || !okInt(a.lo, 0) || !okInt(a.hi, 0) || !okInt(a.step, 1) || !okInt(a.maxChunks, 1) ||
      !Number.isInteger(a.start) || !(a.stop === null || Number.isInteger(a.stop)) || !Array.isArray(a.bands) ||
      !a.bands.every((b) => okInt(b.arg, 0) && (b.rows === -1 || okInt(b.rows, 1)) && okInt(b.rowBytes, 0) && okInt(b.extent, 1) &&
        (b.axis === undefined || okInt(b.axis, 0)) && (b.byteRange === undefined || typeof b.byteRange === "boolean") && (b.iterBytes === undefined || okInt(b.iterBytes, 0)))) {
    throw new TsptoCompileError("E_CODEGEN", `internal: bad spmd attribute ${JSON.stringify(call.attrs.spmd)} on the call of '${String(call.attrs.callee)}'`, call.span);
  }
  return a;
}

/** Emits the banded submission loop into the orchestration. */
export function emitSpmdSubmit(g: KernelCtx, s: SpmdSubmit): void {
  const a = checkSpmdAttr(s.call);
  const bandOf = new Map(a.bands.map((b) => [b.arg, b]));
  const nc = g.fresh("nc"), c = g.fresh("c"), t0 = g.fresh("t0"), t1 = g.fresh("t1"), lo = g.fresh("lo"), hi = g.fresh("hi");
  const sl = g.fresh("slots"), ac = g.fresh("acc"), stop = g.fresh("stop"), tr = g.fresh("trips");
  g.open(`{  // ${s.name}: ${a.stop === null ? "a run-time number of" : Math.ceil((a.stop - a.start) / a.step)} iterations split into row bands, one task per core (SPMD)`);
  // the loop's end: a constant, or the hi slot's run-time value (a dynamic dimension)
  g.line(`const int64_t ${stop} = ${a.stop === null ? s.slots[a.hi] : int(a.stop)};`);
  g.line(`const int64_t ${tr} = ${stop} > ${int(a.start)} ? (${stop} - ${int(a.start)} + ${int(a.step - 1)}) / ${int(a.step)} : 0;`);
  g.line(`int64_t ${nc} = (int64_t)rt->core_count;`);
  g.line(`if (${nc} > ${int(a.maxChunks)}) ${nc} = ${int(a.maxChunks)};`);
  if (a.stop === null) {
    // the work is known now: at most one band per iteration, and per SPMD_MIN_CHUNK_BYTES of banded rows
    const iterBytes = a.bands.reduce((x, b) => x + (b.iterBytes ?? a.step * b.rowBytes), 0);
    g.line(`if (${nc} > ${tr}) ${nc} = ${tr};`);
    g.line(`if (${nc} > ${tr} * ${int(iterBytes)} / ${int(SPMD_MIN_CHUNK_BYTES)}) ${nc} = ${tr} * ${int(iterBytes)} / ${int(SPMD_MIN_CHUNK_BYTES)};`);
  }
  g.line(`if (${nc} < 1) ${nc} = 1;`);
  g.open(`for (int64_t ${c} = 0; ${c} < ${nc}; ++${c}) {`);
  g.line(`const int64_t ${t0} = ${tr} * ${c} / ${nc}, ${t1} = ${tr} * (${c} + 1) / ${nc};`);
  g.line(`const int64_t ${lo} = ${int(a.start)} + ${t0} * ${int(a.step)};`);
  g.line(`const int64_t ${hi} = ${c} + 1 == ${nc} ? ${stop} : ${int(a.start)} + ${t1} * ${int(a.step)};`);
  const slots = s.slots.map((x, k) => (k === a.lo ? lo : k === a.hi ? hi : x));
  g.line(`const int64_t ${sl}[${Math.max(1, slots.length)}] = { ${slots.join(", ") || "0"} };`);
  // The band's last iteration: DeriveDeps bounds the loop variable by hi - 1, so its windows are
  // evaluated with hi = last + 1, exact for every band (the next band starts at last + step).
  const lastIt = g.fresh("last");
  g.line(`const int64_t ${lastIt} = ${lo} + (${t1} - ${t0} - 1) * ${int(a.step)};`);
  const winSlots = slots.map((_, k) => (k === a.hi ? `(${lastIt} + 1)` : `${sl}[${k}]`));
  const accs = s.accesses.map((x) => {
    const b = bandOf.get(x.arg);
    // a window (DeriveDeps bounded it, guards and valid extents included); else a banded
    // tensor's rows as a byte range; else the whole tensor
    if (x.init) return x.init(winSlots);
    if (!b || b.byteRange !== true) return `{ ${x.ptr}, ${x.bytes}, ${x.mode}, 0 }`;
    // rows [lo, last iteration + extent), clamped to the tensor
    const last = `${lastIt} + ${int(b.extent)}`;
    const rows = b.rows < 0 ? x.rows : int(b.rows);
    const end = `(${last} < ${rows} ? ${last} : ${rows})`;
    return `{ ${x.ptr} + ${lo} * ${int(b.rowBytes)}, (${end} - ${lo}) * ${int(b.rowBytes)}, ${x.mode}, 0 }`;
  });
  g.line(`const TsptoAccess ${ac}[${Math.max(1, accs.length)}] = { ${accs.join(", ") || "{ 0, 0, 0, 0 }"} };`);
  g.line(`if (rt->submit(rt->ctx, ${s.symbol}, ${cstr(s.name)}, ${s.scope}, ${sl}, ${slots.length}, ${ac}, ${accs.length}) != 0) ${g.failExit}`);
  g.close();
  g.close();
}

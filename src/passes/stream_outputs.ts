// StreamOutputs: which kernel parameters are write-only outputs of the whole launch.
//
// An Out parameter of the entry that no task of the launch reads (every access DeriveDeps
// recorded for it is a write, and the orchestration itself only passes it on or returns it)
// is written once and read only after the launch, by the host or by a later launch. A kernel
// whose parameter is such a tensor at every call site gets `streamOut: [param indices]`: the
// cpu code generator may then store it with non-temporal stores (straight to memory, no
// read-for-ownership of each line and no eviction of the caches' working data; see
// src/codegen/cpp/emitters/memory.ts for the size from which it does). Values and their
// order are unchanged; only where the written lines go.
import type { AttrValue, Expr, Func, Program } from "../ir/index.js";
import { forEachExpr } from "../ir/index.js";
import type { Pass } from "./manager.js";
import type { AccessAttr } from "./derive_deps.js";

export const streamOutputsPass: Pass = {
  name: "StreamOutputs",
  run(p) {
    const streams = streamOutParams(p);
    if (streams.size === 0) return p;
    return p.withFunctions(p.functions.map((f) => {
      const s = streams.get(f.name);
      return s ? (Object.freeze({ ...f, attrs: Object.freeze({ ...f.attrs, streamOut: s as unknown as AttrValue }) }) as Func) : f;
    }));
  },
};

/** Kernel name -> indices of its parameters that are write-only outputs of the launch at every call site. */
export function streamOutParams(p: Program): Map<string, number[]> {
  const entry = p.entryFunction;
  const outs = new Set(entry.params.filter((q) => q.dir === "out" && q.var.type.kind === "tensor").map((q) => q.var.id));
  const read = new Set<number>();
  const sites = new Map<string, { args: readonly Expr[]; accesses: readonly AccessAttr[] }[]>();
  let foreign = false;  // a kernel call outside the entry: no streaming at all (not analysed)
  for (const f of p.functions) {
    if (f.fnKind === "incore") continue;
    forEachExpr(f.body, (e) => {
      if (e.kind !== "call") return;
      if (e.op === "call") {
        if (f !== entry) { foreign = true; return; }
        const accesses = (e.attrs.accesses ?? []) as unknown as AccessAttr[];
        const callee = String(e.attrs.callee);
        sites.set(callee, [...(sites.get(callee) ?? []), { args: e.args, accesses }]);
        for (const a of accesses) {
          const x = e.args[a.arg];
          if (a.mode !== "write" && x?.kind === "var") read.add(x.id);
        }
        return;
      }
      // any other orchestration op on an output (not a shape query) counts as a read
      if (e.op === "tensor.dim") return;
      for (const x of e.args) if (x.kind === "var") read.add(x.id);
    });
  }
  const out = new Map<string, number[]>();
  if (foreign) return out;
  for (const [callee, calls] of sites) {
    const k = p.getFunction(callee);
    if (!k || k.fnKind !== "incore") continue;
    const idx = k.params.flatMap((_, i) => (calls.every((c) => {
      const x = c.args[i];
      const acc = c.accesses.filter((a) => a.arg === i);
      return x?.kind === "var" && outs.has(x.id) && !read.has(x.id) && acc.length > 0 && acc.every((a) => a.mode === "write");
    }) ? [i] : []));
    if (idx.length) out.set(callee, idx);
  }
  return out;
}

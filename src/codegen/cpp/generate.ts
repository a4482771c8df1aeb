// Lowered Program -> one C++17 translation unit for the cpu platform (see
// native/include/tspto_abi.h for the contract with the runtime):
//   - every InCore function becomes `extern "C" void k_<name>(const int64_t* args)`;
//   - the orchestration becomes `extern "C" int tspto_entry(rt, args)`, which runs the scalar
//     control flow and submits one task per call.
// The C++ of each function is function.ts's FnGen (the statement walk of walk.ts, shared with
// the cuda generator, with the cpu's hooks), with fused.ts (tiles), call.ts (orchestration
// calls) and cexpr.ts (helpers).
import type { Program } from "../../ir/index.js";
import { preludeFor } from "./prelude.js";
import { FnGen } from "./function.js";
import { type SubmitHook } from "./call.js";
import { comment, ident, internal, staticTensor } from "./cexpr.js";

// ident and SubmitHook moved to ./cexpr.ts and ./call.ts; re-exported here for ./index.ts
export { ident } from "./cexpr.js";
export type { SubmitHook } from "./call.js";

export interface KernelInfo { name: string; symbol: string; scratchBytes: number }
/**
 * A part of the source that compiles on its own: unit 0 is the orchestration (tspto_entry,
 * tspto_abi_version), unit i >= 1 the i-th kernel. Compiled with -DTSPTO_UNITS and
 * -DTSPTO_UNIT_<i> for each unit it should hold, the source is that part of the library (a
 * large program builds as several objects in parallel, src/targets/cpu/toolchain.ts);
 * without TSPTO_UNITS it is the whole library.
 */
export interface CppUnit {
  readonly index: number;
  readonly name: string;
  /** bytes of its source: a rough cost of compiling it */
  readonly weight: number;
  /** its part of the source (inside its guard): with the prelude and the flags, all its object depends on */
  readonly text?: string;
}
export interface GeneratedCpp {
  /** The whole translation unit. */
  source: string;
  /** One per InCore function, in program order. */
  kernels: KernelInfo[];
  /** The largest per-core scratch arena any kernel needs. */
  scratchBytes: number;
  /** The parts of `source` that compile separately (CppUnit). */
  units: CppUnit[];
  /** The prelude header `source` includes (prelude.ts): its file name and text. */
  prelude: { header: string; text: string };
}

/** The guard of unit i's part of the source (CppUnit). */
const unitGuard = (i: number) => `#if !defined(TSPTO_UNITS) || defined(TSPTO_UNIT_${i})`;

/** Markers around the orchestration in the generated source (build.ts copies it to orchestration/). */
export const ENTRY_BEGIN = "// ==== orchestration (tspto_entry) ====";
export const ENTRY_END = "// ==== end of orchestration ====";


/**
 * Only the orchestration (`tspto_entry`) of a lowered program, with the prelude: used by
 * targets whose kernels are not C++ functions (cuda). `symbols` maps each InCore function to
 * the C++ expression passed to rt->submit as its TsptoKernelFn. `platform` names the target in
 * the E_DYNAMIC message (such targets take static shapes only).
 */
export function generateEntryCpp(program: Program, symbols: ReadonlyMap<string, string>, submit: SubmitHook, platform: string): string {
  const entry = program.getFunction(program.entry);
  if (!entry) return internal(`program '${program.name}' has no entry function '${program.entry}'`);
  if (entry.fnKind !== "orchestration") internal(`the entry '${entry.name}' is a ${entry.fnKind} function, expected orchestration`, entry.span);
  for (const p of entry.params) if (p.var.type.kind === "tensor") staticTensor(p.var.type, `parameter '${p.var.name}' of '${entry.name}'`, p.var.span, platform);
  return [ENTRY_BEGIN, new FnGen(program, entry, "entry", symbols, submit).generate(), ENTRY_END, ""].join("\n");
}

export function generateCpp(program: Program): GeneratedCpp {
  const entry = program.getFunction(program.entry);
  if (!entry) return internal(`program '${program.name}' has no entry function '${program.entry}'`);
  if (entry.fnKind !== "orchestration") internal(`the entry '${entry.name}' is a ${entry.fnKind} function, expected orchestration`, entry.span);
  const symbols = kernelSymbols(program);
  const parts: string[] = [];
  const kernels: KernelInfo[] = [];
  const units: CppUnit[] = [];
  for (const f of program.functions) {
    if (f === entry) continue;
    const g = new FnGen(program, f, "kernel", symbols);
    const text = g.generate();
    kernels.push({ name: f.name, symbol: symbols.get(f.name)!, scratchBytes: g.scratchBytes });
    units.push({ index: kernels.length, name: f.name, weight: text.length, text });
    parts.push(unitGuard(kernels.length), text, "#endif  // unit", "");
  }
  const decls = kernels.map((k) => `extern "C" void ${k.symbol}(const int64_t* args);`);
  const orchestration = new FnGen(program, entry, "entry", symbols).generate();
  const entryText = [...decls, ENTRY_BEGIN, orchestration, ENTRY_END, "extern \"C\" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }"].join("\n");
  units.unshift({ index: 0, name: entry.name, weight: orchestration.length, text: entryText });
  parts.push(unitGuard(0), entryText, "#endif  // unit", "");
  const body = parts.join("\n");
  const prelude = preludeFor(body);
  const source = [
    `// Generated by tspto (src/codegen/cpp) for program '${comment(program.name)}'. Do not edit.`,
    `#include "${prelude.header}"  // the prelude (src/codegen/cpp/prelude.ts), precompiled once per toolchain`,
    "",
    body,
  ].join("\n");
  return { source, kernels, scratchBytes: kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0), units, prelude };
}

import { kernelSymbols } from "./symbols.js";
export { kernelSymbols };

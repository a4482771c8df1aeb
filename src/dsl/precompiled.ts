// Kernels precompiled at build time by the tspto build plugins (src/plugin/): what parsing the
// kernel gave in Node — its parameters, its source hash and its parsed IR for the bindings its
// annotations fix — attached to its definition, so that a page calling it with those bindings
// parses nothing (and needs no TypeScript compiler). Any other binding parses as usual.
import { Program, type ProgramJSON } from "../ir/index.js";
import type { KernelDef } from "./kernel.js";
import type { ParamBinding, ParamInfo } from "./parser.js";

/** The plugin's record of one kernel (JSON). */
export interface Precompiled {
  readonly format: "tspto-precompiled-1";
  readonly params: readonly ParamInfo[];
  readonly hash: string;
  readonly programs: readonly { readonly bindings: readonly ParamBinding[]; readonly program: ProgramJSON }[];
}

let hits = 0;
/** How many specializations were served by precompiled IR in this process (tests). */
export const precompiledHits = (): number => hits;

const attached = new WeakMap<KernelDef, Precompiled>();

export function attachPrecompiled(def: KernelDef, pre: unknown): void {
  const p = pre as Precompiled;
  if (p && p.format === "tspto-precompiled-1") attached.set(def, p);
}

export function precompiledOf(def: KernelDef): Precompiled | undefined {
  return attached.get(def);
}

const bindingKey = (b: readonly ParamBinding[]): string => JSON.stringify(b.map((x) => [x.name, x.type, x.value ?? null]));

/** The precompiled IR of `def` for these bindings, or null (then the kernel is parsed). */
export function precompiledProgram(def: KernelDef, bindings: readonly ParamBinding[]): Program | null {
  const p = attached.get(def);
  if (!p) return null;
  const k = bindingKey(bindings);
  const hit = p.programs.find((x) => bindingKey(x.bindings) === k);
  if (!hit) return null;
  hits++;
  return Program.fromJSON(hit.program);
}

export { bindingKey };

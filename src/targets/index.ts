// The target registry: one entry per platform. Adding a platform = adding a folder under
// src/targets/<name>/ that exports a `Target`, and one line here. Nothing outside the
// targets compares platform names.
import { TsptoRuntimeError, type Span } from "../ir/index.js";
import { cpuTarget } from "./cpu/index.js";
import { interpTarget } from "./interp/index.js";
import { cudaTarget } from "./cuda/index.js";
import { webgpuTarget } from "./webgpu/index.js";
import type { Target } from "./target.js";

export * from "./target.js";

const TARGETS: ReadonlyMap<string, Target> = new Map([cpuTarget, interpTarget, cudaTarget, webgpuTarget].map((t) => [t.name, t]));

/** The default platform. */
export const DEFAULT_PLATFORM = cpuTarget.name;

/** The registered platform names, in registration order. */
export function platformNames(): string[] {
  return [...TARGETS.keys()];
}

/** The Target of a platform; an unknown name is an E_PLATFORM error listing the known ones. */
export function getTarget(name: string, span?: Span): Target {
  const t = TARGETS.get(name);
  if (t) return t;
  throw new TsptoRuntimeError("E_PLATFORM", `unknown platform ${JSON.stringify(name)} (known: ${platformNames().map((n) => JSON.stringify(n)).join(", ")})`, span,
    `use one of ${platformNames().join(", ")}`);
}

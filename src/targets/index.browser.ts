// The platform registry of tspto's browser build (scripts/build-browser.mjs uses it for
// ./index.ts): webgpu over navigator.gpu and interp, the reference, in the page. cpu, cuda and
// the native runtime stay behind the package's "node" condition. The default platform is webgpu.
import { TsptoRuntimeError, type Span } from "../ir/index.js";
import { interpTarget } from "./interp/index.js";
import { webgpuTarget } from "./webgpu/index.js";
import type { Target } from "./target.js";

export * from "./target.js";

const TARGETS: ReadonlyMap<string, Target> = new Map([webgpuTarget, interpTarget].map((t) => [t.name, t]));
const NODE_ONLY = new Set(["cpu", "cuda"]);

/** The default platform in a page. */
export const DEFAULT_PLATFORM = webgpuTarget.name;

export function platformNames(): string[] {
  return [...TARGETS.keys()];
}

export function getTarget(name: string, span?: Span): Target {
  const t = TARGETS.get(name);
  if (t) return t;
  throw new TsptoRuntimeError("E_PLATFORM", `${NODE_ONLY.has(name) ? `platform ${JSON.stringify(name)} runs in Node only, not in tspto's browser build` : `unknown platform ${JSON.stringify(name)}`} (known here: ${platformNames().map((n) => JSON.stringify(n)).join(", ")})`, span,
    `use one of ${platformNames().join(", ")} in a page`);
}

// The TypeScript compiler in tspto's browser build (scripts/build-browser.mjs uses this module
// for ./typescript.ts): `typescript` stays an import of dist/browser, which the application's
// bundler resolves. The tspto build plugins (tspto/vite, tspto/rollup, tspto/esbuild) precompile
// kernels to IR and replace that import with a stub (src/plugin/no_parser.ts), so a page whose
// kernels are precompiled ships no compiler; parsing a kernel there is E_NO_PARSER.
import * as TSmod from "typescript";
import type * as TS from "typescript";
import { TsptoSyntaxError } from "../ir/errors.js";

const mod = TSmod as unknown as { default?: typeof TS; __tsptoNoParser?: boolean } & typeof TS;
const noParser = mod.__tsptoNoParser === true || (mod.default as { __tsptoNoParser?: boolean } | undefined)?.__tsptoNoParser === true;

/** (Node only: a page's compiler is whatever its bundle holds.) */
export function setTypescriptLoader(_f: () => typeof TS | null): void {}

export function typescriptLoaded(): boolean {
  return !noParser;
}

function typescript(): typeof TS {
  if (noParser) {
    throw new TsptoSyntaxError("E_NO_PARSER", "this kernel was not precompiled by the tspto build plugin, and the page has no TypeScript parser (the plugin left it out)", undefined,
      "keep the kernel's parameters annotated with static shapes (pl.Tensor<[M, N], pl.FP32>) so that the plugin precompiles it, or pass { parser: true } to the plugin to ship the run-time parser");
  }
  return ((mod as { createSourceFile?: unknown }).createSourceFile !== undefined ? mod : mod.default!) as typeof TS;
}

export const ts: typeof TS = new Proxy({} as typeof TS, {
  get: (_t, key) => (typescript() as unknown as Record<string | symbol, unknown>)[key],
  has: (_t, key) => key in typescript(),
});

/// <reference lib="esnext.disposable" preserve="true" />
// `pl`, as users import it (`import { pl } from "tspto"`, `import * as pl from "tspto/language"`):
// the kernel language's declarations (src/dsl/language.ts) plus `pl.jit`, which records a
// kernel definition and returns its JitFunction (src/jit.ts). Kept out of src/dsl so that the
// front end never imports the jit (the rooms import one way).
import { TsptoSyntaxError } from "./ir/index.js";
import type { AttrValue } from "./ir/index.js";
import { captureSite, defineKernel, nameFromSource, takeNextSite, type KernelDef, type KernelKind, type KernelSite } from "./dsl/index.js";
import { attachPrecompiled } from "./dsl/precompiled.js";
import { createJitFunction, type JitFunction } from "./jit.js";

export * from "./dsl/language.js";

// ---------------------------------------------------------------- jit

export interface JitOptions {
  /** Values for free identifiers the parser cannot resolve statically. */
  readonly scope?: Readonly<Record<string, unknown>>;
  /** Attributes recorded on the IR function. */
  readonly attrs?: Readonly<Record<string, AttrValue>>;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type KernelFn = (...args: any[]) => any;
/** A `pl.jit.incore` / `pl.jit.inline` kernel: callable from kernels (typed as the function), carrying its def. */
export type SubKernel<F extends KernelFn> = F & { readonly def: KernelDef };

export interface Jit {
  /** `@pl.jit static f(...) {...}`: a TC39 method decorator. */
  <F extends KernelFn>(method: F, context: ClassMethodDecoratorContext): F;
  /** `pl.jit(function f(...) {...}, opts?)`: an entry (orchestration) kernel. */
  <F extends KernelFn>(fn: F, opts?: JitOptions): JitFunction<F>;
  /** `@pl.jit({ scope })`: the decorator with options. */
  (opts: JitOptions): <F extends KernelFn>(method: F, context: ClassMethodDecoratorContext) => F;
  /** A device kernel (InCore) called from an entry; needs no `pl.at`. */
  incore<F extends KernelFn>(fn: F, opts?: JitOptions): SubKernel<F>;
  /** A helper spliced into each call site. */
  inline<F extends KernelFn>(fn: F, opts?: JitOptions): SubKernel<F>;
}

function isMethodContext(x: unknown): x is ClassMethodDecoratorContext {
  return typeof x === "object" && x !== null && "kind" in x && "name" in x && "static" in x &&
    typeof (x as { kind: unknown }).kind === "string";
}

function checkOptions(opts: unknown, who: string, site: KernelSite | null): JitOptions {
  if (opts === undefined) return {};
  if (typeof opts !== "object" || opts === null || Array.isArray(opts)) {
    throw new TsptoSyntaxError("E_SYNTAX", `${who}: options must be an object like { scope: {...} }, got ${opts === null ? "null" : typeof opts}`,
      site ? { file: site.file, line: site.line, col: site.col } : undefined);
  }
  const o = opts as JitOptions;
  if (o.scope !== undefined && (typeof o.scope !== "object" || o.scope === null)) {
    throw new TsptoSyntaxError("E_SYNTAX", `${who}: opts.scope must be an object mapping names to values`,
      site ? { file: site.file, line: site.line, col: site.col } : undefined);
  }
  return o;
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
function define(entry: Function, kind: KernelKind, fn: unknown, opts: unknown, who: string, decorator?: ClassMethodDecoratorContext): KernelDef {
  // a build plugin (tspto/vite, ...) names the site in the original source; else the stack does
  const captured = takeNextSite();
  const site: KernelSite | null = captured ? { file: captured.file, line: captured.line, col: captured.col, ...(captured.version ? { version: captured.version } : {}) } : captureSite(entry);
  const span = site ? { file: site.file, line: site.line, col: site.col } : undefined;
  if (typeof fn !== "function") {
    throw new TsptoSyntaxError("E_SYNTAX", `${who} expects a function, got ${fn === null ? "null" : typeof fn}`, span,
      "write pl.jit(function name(a: pl.Tensor, ...) { ... })");
  }
  const o = checkOptions(opts, who, site);
  let name: string;
  if (decorator) {
    if (decorator.kind !== "method" || !decorator.static) {
      throw new TsptoSyntaxError("E_SYNTAX", `@pl.jit decorates static methods, not ${decorator.static ? "static " : ""}${decorator.kind}s`, span,
        "write class K { @pl.jit static f(...) { ... } }");
    }
    name = String(decorator.name);
  } else {
    name = (site && nameFromSource(site, kind, fn.name)) || fn.name || "kernel";
  }
  const def = defineKernel(kind, fn as KernelFn, o, name, site, decorator !== undefined);
  if (captured?.pre) attachPrecompiled(def, captured.pre);
  return def;
}

function jitImpl(fnOrOpts: unknown, second?: unknown): unknown {
  if (typeof fnOrOpts === "object" && fnOrOpts !== null && !Array.isArray(fnOrOpts)) {
    // @pl.jit({ scope }) — the decorator factory form
    const opts = fnOrOpts;
    const decorate = (method: unknown, context: ClassMethodDecoratorContext): unknown =>
      createJitFunction(define(decorate, "orchestration", method, opts, "@pl.jit", context));
    return decorate;
  }
  if (isMethodContext(second)) return createJitFunction(define(jitImpl, "orchestration", fnOrOpts, undefined, "@pl.jit", second));
  return createJitFunction(define(jitImpl, "orchestration", fnOrOpts, second, "pl.jit"));
}

function subKernel(kind: "incore" | "inline") {
  const wrap = (fn: unknown, opts?: unknown): unknown => createJitFunction(define(wrap, kind, fn, opts, `pl.jit.${kind}`));
  return wrap;
}

/** Wrap a kernel: `pl.jit(fn, opts?)`, `@pl.jit`, `pl.jit.incore(fn)`, `pl.jit.inline(fn)`. */
export const jit: Jit = Object.assign(jitImpl, { incore: subKernel("incore"), inline: subKernel("inline") }) as unknown as Jit;

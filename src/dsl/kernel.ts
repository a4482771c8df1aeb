// KernelDef: what `pl.jit`, `pl.jit.incore`, `pl.jit.inline` and the `@pl.jit` decorator record
// about a kernel when it is defined: its kind, its name, the function object, the options and
// the call site (the user's file, line and column, taken from the stack and source-mapped by
// tsx/vitest). Parsing happens later, on first use (src/dsl/parser.ts).
//
// Every definition is also kept in a global registry by (file, name), so that an entry kernel
// can find the `pl.jit.incore` / `pl.jit.inline` sub-kernels it calls by name.
import { isAbsolute, resolve as resolvePath, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Attrs } from "../ir/nodes.js";
import { isOwnFile } from "../ir/package_root.js";

export type KernelKind = "orchestration" | "incore" | "inline";

/** Where a kernel was defined: 1-based line and column in `file` (an absolute path). */
export interface KernelSite {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  /** The version of the file's text a build plugin captured (src/capture.ts); absent: the file on disk. */
  readonly version?: string;
}

/** Where a site's text is found: the file, or the captured version of it (src/dsl/source.ts captureSource). */
export const siteKey = (s: KernelSite): string => (s.version ? `${s.file}\0${s.version}` : s.file);

export interface KernelOptions {
  /** Values for free identifiers the parser cannot resolve statically (numbers, booleans, arrays, kernels). */
  readonly scope?: Readonly<Record<string, unknown>>;
  /** Function attributes recorded on the IR function (printed as `{ attrs: {...} }`). */
  readonly attrs?: Attrs;
}

export interface KernelDef {
  readonly kind: KernelKind;
  /** The kernel's name: the function's name, the method's name, or the const it is bound to. */
  readonly name: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly fn: (...args: any[]) => unknown;
  readonly opts: KernelOptions;
  /** The definition call site (the `pl.jit(` call or the decorated method), or null when unknown. */
  readonly site: KernelSite | null;
  /** Defined with the method-decorator form `@pl.jit static name(...) {...}`. */
  readonly decorated: boolean;
  /** Unique per definition (definition order). */
  readonly id: number;
}

// ---------------------------------------------------------------- call sites


/** Helpers that decorator down-levelling (esbuild, tsc) puts between the decorator and the class. */
const DECORATOR_HELPER = /^(?:__decorateElement|__decorate|__esDecorate|__runInitializers|Reflect\.decorate|_ts_decorate)\b/;

const FRAME = /^\s*at (?:(.*?) \()?(.+?):(\d+):(\d+)\)?\s*$/;

/** Normalize a stack-frame location to an absolute file path (file:// URLs converted). */
function framePath(loc: string): string | null {
  if (loc.startsWith("file://")) {
    try {
      return fileURLToPath(loc);
    } catch {
      return null;
    }
  }
  if (loc.startsWith("node:") || loc.startsWith("internal/") || loc === "native" || loc === "<anonymous>") return null;
  return isAbsolute(loc) ? loc : resolvePath(loc);
}

/**
 * The user's call site of the DSL function that is running: the first stack frame below
 * `entry` (the public function the user called, when given) outside tspto's src/ and dist/,
 * node_modules and decorator helpers. Under tsx and vitest frames are source-mapped to the
 * original `.ts` file. `entry` matters when tspto is inlined into the user's bundle: its
 * frames are then in the user's file too, and only V8's frame cut tells them apart.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function captureSite(entry?: Function): KernelSite | null {
  const saved = Error.stackTraceLimit;
  Error.stackTraceLimit = 30;
  const holder: { stack?: string } = {};
  if (entry) Error.captureStackTrace(holder, entry);
  const stack = entry ? `Error\n${holder.stack?.split("\n").slice(1).join("\n") ?? ""}` : new Error().stack ?? "";
  Error.stackTraceLimit = saved;
  for (const line of stack.split("\n").slice(1)) {
    const m = FRAME.exec(line);
    if (!m) continue;
    const fnName = m[1] ?? "";
    if (DECORATOR_HELPER.test(fnName.replace(/^(?:Object|Function)\./, ""))) continue;
    const file = framePath(m[2]);
    if (!file) continue;
    if (isOwnFile(file) || file.includes(`${sep}node_modules${sep}`)) continue;
    return { file, line: Number(m[3]), col: Number(m[4]) };
  }
  return null;
}

// ---------------------------------------------------------------- registry

/**
 * What a build plugin said about the next definition (src/capture.ts): its site in the
 * original source, and its IR precompiled at build time. A bundle's stack frames name the
 * bundle, not the user's file, so a captured kernel takes its site from here.
 */
export interface CapturedSite extends KernelSite {
  readonly pre?: unknown;
}
let nextSite: CapturedSite | null = null;

/** Set the site of the next kernel definition (called by plugin-generated code just before it). */
export function setNextSite(site: CapturedSite): void {
  nextSite = site;
}

/** The site a plugin set for this definition, once. */
export function takeNextSite(): CapturedSite | null {
  const s = nextSite;
  nextSite = null;
  return s;
}

const byFile = new Map<string, KernelDef[]>();
const anywhere: KernelDef[] = [];
let nextId = 1;

/** Record a definition (called by pl.jit and friends). */
export function defineKernel(
  kind: KernelKind,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  fn: (...args: any[]) => unknown,
  opts: KernelOptions,
  name: string,
  site: KernelSite | null,
  decorated = false,
): KernelDef {
  const def: KernelDef = Object.freeze({ kind, name, fn, opts: Object.freeze({ ...opts }), site, decorated, id: nextId++ });
  anywhere.push(def);
  if (site) {
    const list = byFile.get(siteKey(site)) ?? [];
    list.push(def);
    byFile.set(siteKey(site), list);
  }
  return def;
}

/** Every kernel defined in `file` (definition order). */
export function kernelDefsIn(file: string): readonly KernelDef[] {
  return byFile.get(file) ?? [];
}

/** Kernels named `name` defined in `file` (or anywhere, when file is null), most recent last. */
export function findKernelDefs(name: string, file: string | null): KernelDef[] {
  return (file === null ? anywhere : kernelDefsIn(file)).filter((d) => d.name === name);
}

/** Every kernel defined so far. */
export function allKernelDefs(): readonly KernelDef[] {
  return anywhere;
}

/** The KernelDef carried by a jit function / sub-kernel wrapper (its `def` property), if any. */
export function kernelDefOf(x: unknown): KernelDef | undefined {
  if ((typeof x !== "function" && (typeof x !== "object" || x === null)) || !("def" in x)) return undefined;
  const d = (x as { def: unknown }).def;
  return isKernelDef(d) ? d : undefined;
}

export function isKernelDef(x: unknown): x is KernelDef {
  if (typeof x !== "object" || x === null) return false;
  const d = x as Partial<KernelDef>;
  return (d.kind === "orchestration" || d.kind === "incore" || d.kind === "inline") && typeof d.name === "string" &&
    typeof d.fn === "function" && typeof d.id === "number";
}

// Ahead of time (API.md §4, `tspto precompile`): compiles every kernel an application declares
// into a cache folder it ships, so that with TSPTO_CACHE_DIR pointing there a first call is a
// cache hit and runs no C++ compiler (and no TypeScript parser: the front end's memo is there too).
//
// The application's modules are imported (as a test runner imports test files), so each kernel is
// the definition a later process makes: its function text and call site key the cache. Then each
// `pl.jit` entry whose annotations fix its parameters (`pl.Tensor<[M, N], pl.FP32>`; a named
// dimension such as "S" serves every extent, so any sample extent will do; `pl.Scalar<...>`) is
// compiled as the jit would compile it on a call, and every specialization a shapes file lists
// (for the rest). The entries are keyed without the toolchain (cache.ts diskKey, portable), so a
// machine without a compiler finds them; the CPU must match (the code is built for this one's).
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { TsptoConfigError, type Type } from "./ir/index.js";
import { allKernelDefs, kernelDefOf, siteKey, type KernelDef } from "./dsl/index.js";
import { paramInfo } from "./front_memo.js";
import { PRECOMPILE_ENV, createJitFunction } from "./jit.js";
import { RunConfig } from "./runtime/config.js";
import { zeros } from "./runtime/host/factories.js";
import type { DType } from "./ir/index.js";

/** One specialization of a shapes file: the kernel by name (and file), one sample per parameter. */
export interface PrecompileSpec {
  readonly kernel: string;
  /** The module that defines it (resolved against the shapes file's folder); optional when the name is unique. */
  readonly file?: string;
  /** Per parameter: a tensor `{ shape, dtype? }` (dtype default float32) or a number / boolean. */
  readonly args: readonly ({ readonly shape: readonly number[]; readonly dtype?: DType } | number | boolean)[];
  readonly platform?: string;
}

export interface PrecompileOptions {
  /** The cache folder to fill (default: $TSPTO_CACHE_DIR, else the user's cache). */
  readonly out?: string;
  /** Specializations to compile besides the annotated ones: a JSON file of PrecompileSpec[], or the list. */
  readonly shapes?: string | readonly PrecompileSpec[];
  /** The platform to build for (default "cpu"). */
  readonly platform?: string;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface PrecompiledEntry {
  readonly kernel: string;
  readonly file: string;
  readonly line: number;
  /** The artifact directory in the cache folder; absent when skipped. */
  readonly outputDir?: string;
  /** Why it was not compiled (a parameter no annotation fixes and no shapes entry covers). */
  readonly skipped?: string;
  readonly ms: number;
}

const SCRIPTS = new Set([".ts", ".mts", ".js", ".mjs", ".cts", ".cjs", ".tsx", ".jsx"]);

/** The modules of `entries`: files as given, folders walked (node_modules, dotted names and *.d.ts left out). */
export function precompileModules(entries: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    const st = statSync(p);
    if (st.isDirectory()) {
      for (const n of readdirSync(p).sort()) if (n !== "node_modules" && !n.startsWith(".")) walk(join(p, n));
    } else if (SCRIPTS.has(extname(p)) && !p.endsWith(".d.ts")) out.push(p);
  };
  for (const e of entries) {
    const p = resolve(e);
    if (!existsSync(p)) throw new TsptoConfigError("E_CONFIG", `tspto precompile: ${e} does not exist`, undefined, "give the application's entry module or a folder of its modules");
    if (statSync(p).isDirectory()) walk(p); else out.push(p);
  }
  return out;
}

/** A sample argument for a type an annotation fixes, or null (the type does not fix it). */
function sample(t: Type | null): unknown {
  if (!t) return null;
  if (t.kind === "tensor") return zeros(t.shape.map((d) => (typeof d === "number" ? d : 1)), t.dtype);
  if (t.kind === "scalar") return t.dtype === "bool" ? false : 0;
  return null;
}

function readShapes(shapes: PrecompileOptions["shapes"]): { specs: readonly PrecompileSpec[]; base: string } {
  if (shapes === undefined) return { specs: [], base: process.cwd() };
  if (typeof shapes !== "string") return { specs: shapes, base: process.cwd() };
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(shapes, "utf8"));
  } catch (e) {
    throw new TsptoConfigError("E_CONFIG", `tspto precompile: cannot read the shapes file ${shapes}: ${(e as Error).message}`, undefined,
      "a JSON array of { \"kernel\": name, \"file\"?: module, \"args\": [{ \"shape\": [..], \"dtype\"?: \"float32\" } | number, ...] }");
  }
  if (!Array.isArray(v) || !v.every((s) => s && typeof s === "object" && typeof s.kernel === "string" && Array.isArray(s.args))) {
    throw new TsptoConfigError("E_CONFIG", `tspto precompile: the shapes file ${shapes} is not a list of { kernel, args }`, undefined,
      "a JSON array of { \"kernel\": name, \"file\"?: module, \"args\": [{ \"shape\": [..], \"dtype\"?: \"float32\" } | number, ...] }");
  }
  return { specs: v as PrecompileSpec[], base: resolve(shapes, "..") };
}

/**
 * Imports the application's modules and compiles its kernels into the cache folder (see the
 * header). Returns one record per kernel specialization, compiled or skipped.
 */
export async function precompile(entries: readonly string[], opts: PrecompileOptions = {}): Promise<PrecompiledEntry[]> {
  const files = precompileModules(entries);
  const { specs, base } = readShapes(opts.shapes);
  const saved = { cache: process.env.TSPTO_CACHE_DIR, pre: process.env[PRECOMPILE_ENV] };
  if (opts.out) process.env.TSPTO_CACHE_DIR = resolve(opts.out);
  // (an environment variable, not module state: the application may have imported another copy of tspto, e.g. through a link)
  process.env[PRECOMPILE_ENV] = "1";
  const log = opts.log ?? (() => {});
  const results: PrecompiledEntry[] = [];
  try {
    const before = new Set(allKernelDefs());
    /** The kernels: this copy's registry, and the exported jit entries of each module (whatever copy made them). */
    const found = new Map<string, { def: KernelDef; fn: { compile(...a: unknown[]): { outputDir: string } } | null }>();
    const add = (def: KernelDef, fn: { compile(...a: unknown[]): { outputDir: string } } | null) => {
      if (def.kind !== "orchestration" || !def.site) return;
      const k = `${siteKey(def.site)}:${def.site.line}:${def.site.col}:${def.name}`;
      if (!found.has(k) || (fn && !found.get(k)!.fn)) found.set(k, { def, fn });
    };
    for (const f of files) {
      const m = (await import(pathToFileURL(f).href)) as Record<string, unknown>;
      for (const v of Object.values(m)) {
        const d = kernelDefOf(v);
        if (d) add(d, v as { compile(...a: unknown[]): { outputDir: string } });
      }
    }
    const fileSet = new Set(files);
    for (const d of allKernelDefs()) if (d.site && (fileSet.has(siteKey(d.site)) || !before.has(d))) add(d, null);
    const defs = [...found.values()].map((x) => x.def);
    const platform = opts.platform ?? "cpu";
    const build = (def: KernelDef, args: unknown[], p: string): PrecompiledEntry => {
      const t0 = performance.now();
      const own = found.get(`${siteKey(def.site!)}:${def.site!.line}:${def.site!.col}:${def.name}`)?.fn;
      // the application's own entry where it exported one: the copy of tspto it imports builds it
      // (the key a later run of the application computes); a config only where that copy is this one
      const mine = allKernelDefs().includes(def);
      const c = own && (p === "cpu" || mine) ? (mine ? own.compile(...args, new RunConfig({ platform: p })) : own.compile(...args))
        : createJitFunction(def).compile(...args, new RunConfig({ platform: p }));
      const r = { kernel: def.name, file: siteKey(def.site!), line: def.site!.line, outputDir: c.outputDir, ms: performance.now() - t0 };
      log(`precompiled ${def.name} (${r.file}:${r.line}) for ${p} in ${r.ms.toFixed(0)} ms`);
      return r;
    };
    for (const def of defs) {
      const params = paramInfo(def);
      const args = params.map((p) => sample(p.annotated));
      const open = params.filter((_, i) => args[i] === null).map((p) => p.name);
      const listed = specs.some((s) => s.kernel === def.name);
      if (open.length) {
        if (!listed) {
          const why = `parameter${open.length > 1 ? "s" : ""} ${open.map((n) => `'${n}'`).join(", ")} not fixed by an annotation (list its specializations in a shapes file)`;
          results.push({ kernel: def.name, file: siteKey(def.site!), line: def.site!.line, skipped: why, ms: 0 });
          log(`skipped ${def.name} (${siteKey(def.site!)}:${def.site!.line}): ${why}`);
        }
        continue;
      }
      results.push(build(def, args, platform));
    }
    for (const s of specs) {
      const want = s.file ? resolve(base, s.file) : null;
      const hits = defs.filter((d) => d.name === s.kernel && (!want || siteKey(d.site!) === want));
      if (hits.length !== 1) {
        throw new TsptoConfigError("E_CONFIG", `tspto precompile: the shapes entry for '${s.kernel}'${want ? ` in ${want}` : ""} matches ${hits.length} pl.jit entries of the modules imported`,
          undefined, hits.length ? "add \"file\" to the entry to say which" : `define it in one of: ${files.join(", ")}`);
      }
      const args = s.args.map((a) => (typeof a === "object" && a !== null ? zeros(a.shape, a.dtype ?? "float32") : a));
      results.push(build(hits[0], args, s.platform ?? platform));
    }
  } finally {
    for (const [k, v] of [["TSPTO_CACHE_DIR", saved.cache], [PRECOMPILE_ENV, saved.pre]] as const) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
  }
  return results;
}

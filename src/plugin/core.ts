// The tspto build plugins' one implementation (tspto/vite, tspto/rollup, tspto/esbuild are thin
// adapters over it). At build time, in Node, for each user module (.ts/.js) holding `pl.jit`,
// `pl.jit.incore`, `pl.jit.inline` or `@pl.jit` kernels it
//  - puts the module's original text (with its types) and that of the modules it imports
//    relatively (the constants a kernel folds) in front of the module (`tspto/capture` source()),
//  - wraps each kernel's `pl.jit` in `site(file, line, col, pre, pl.jit)`, so the definition
//    takes its place in that text (a bundle's stack names the bundle),
//  - precompiles (opts.precompile, default on) each entry whose parameters' annotations fix every
//    type (static shapes, dtypes, pl.Scalar) to IR with the Node front end: its parameters,
//    source hash and parsed program travel as `pre` (src/dsl/precompiled.ts), so the page parses
//    nothing for calls with those types.
// The plugin also answers the browser build's `typescript` import with a stub unless
// opts.parser is true (src/dsl/typescript.browser.ts), so such a page ships no TypeScript compiler.
import { existsSync, readFileSync } from "node:fs";
import { dirname, extname, resolve } from "node:path";
import { tensorT, type Type } from "../ir/index.js";
import { isOwnFile } from "../ir/package_root.js";
import { ts } from "../dsl/typescript.js";
import { defineKernel, loadSourceFile, parseKernel, paramInfo, sourceHash, type KernelDef, type KernelKind, type ParamBinding } from "../dsl/index.js";
import { fnOfJitCall, isJitDecorator, jitCalls, lineCol } from "../dsl/source.js";
import type { Precompiled } from "../dsl/precompiled.js";

export interface TsptoPluginOptions {
  /** Precompile entries whose annotations fix every parameter's type (default true). */
  readonly precompile?: boolean;
  /** Ship the TypeScript compiler so that the page can parse kernels at run time (default false). */
  readonly parser?: boolean;
  /** Which module ids to look at (default: .ts/.tsx/.js/.jsx/.mts/.mjs outside node_modules). */
  readonly include?: (id: string) => boolean;
}

/** The stub that replaces `typescript` for the browser build when opts.parser is false. */
export const NO_PARSER_ID = "\0tspto-no-parser";
export const NO_PARSER_CODE = "export const __tsptoNoParser = true;\nexport default { __tsptoNoParser: true };\n";

const SCRIPT = /\.(?:[cm]?[jt]sx?)$/;
const defaultInclude = (id: string) => SCRIPT.test(id.split("?")[0]) && !/[\\/]node_modules[\\/]/.test(id) && !id.startsWith("\0") && !isOwnFile(id);

/** Whether `importer` is tspto's browser build (its `typescript` import is the one to stub). */
export function isTsptoBrowserBuild(importer: string | undefined): boolean {
  return !!importer && /[\\/](?:dist[\\/]browser|src[\\/]dsl[\\/]typescript\.browser\.ts)/.test(importer);
}

interface Found { at: number; kind: KernelKind; decorated: boolean; line: number; col: number; name: string; opts: boolean; insertEnd: number }

/** The kernels of one module's text, in source order. */
function findKernels(file: string, text: string): { found: Found[]; sf: ts.SourceFile } {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const src = { file, sf, text, offset: 0, hash: "", fromFile: true, lineStarts: lineStartsOf(text) };
  const found: Found[] = [];
  for (const c of jitCalls(src)) {
    const fn = fnOfJitCall(c.call);
    const p = c.call.parent;
    const name = (fn && fn.name && ts.isIdentifier(fn.name) ? fn.name.text : null) ?? (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name) ? p.name.text : "kernel");
    const at = c.call.expression.getStart(sf);
    const lc = lineCol(src, c.call.getStart(sf));
    found.push({ at, kind: c.kind, decorated: false, line: lc.line, col: lc.col, name, opts: c.call.arguments.length > 1, insertEnd: c.call.expression.getEnd() });
  }
  const visit = (n: ts.Node) => {
    if (ts.isMethodDeclaration(n) && n.name && ts.isIdentifier(n.name)) {
      for (const d of ts.getDecorators(n) ?? []) {
        if (!isJitDecorator(d)) continue;
        const lc = lineCol(src, d.getStart(sf));
        found.push({ at: d.expression.getStart(sf), kind: "orchestration", decorated: true, line: lc.line, col: lc.col, name: n.name.text, opts: ts.isCallExpression(d.expression), insertEnd: d.expression.getEnd() });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  found.sort((a, b) => a.at - b.at);
  return { found, sf };
}

function lineStartsOf(text: string): number[] {
  const s = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) s.push(i + 1);
  return s;
}

/** The files a module imports relatively (their module constants may be folded into kernels). */
function relativeImports(file: string, sf: ts.SourceFile): string[] {
  const out: string[] = [];
  for (const s of sf.statements) {
    if (!(ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) || !s.moduleSpecifier || !ts.isStringLiteral(s.moduleSpecifier)) continue;
    const spec = s.moduleSpecifier.text;
    if (!spec.startsWith(".")) continue;
    const base = resolve(dirname(file), spec);
    const stem = base.replace(/\.[cm]?js$/, "");
    const hit = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${stem}.js`, `${stem}/index.ts`, `${stem}/index.js`].find((f) => extname(f) && existsSync(f));
    if (hit && !out.includes(hit)) out.push(hit);
  }
  return out;
}

/** A binding fixed by an annotation (as the jit binds an argument of that type), or null. */
function fixedBinding(name: string, t: Type | null): ParamBinding | null {
  if (!t) return null;
  if (t.kind === "tensor") {
    if (t.shape.some((d) => typeof d !== "number")) return null;
    return { name, type: tensorT(t.shape as number[], t.dtype) };
  }
  if (t.kind === "scalar") return { name, type: t };
  return null;
}

/** Precompiles the kernels of `file` (its text on disk is `text`); per kernel, its record or null. */
export function precompileFile(file: string, text: string, found: readonly Found[]): (Precompiled | null)[] {
  if (!loadSourceFile(file)) return found.map(() => null);
  const noop = function () { /* a build-time stand-in: the front end reads the kernel from its file */ };
  const defs: KernelDef[] = found.map((f) => defineKernel(f.kind, noop, {}, f.name, { file, line: f.line, col: f.col }, f.decorated));
  return found.map((f, i) => {
    if (f.opts) return null; // opts.scope values exist only when the module runs
    const def = defs[i];
    try {
      const params = paramInfo(def);
      const hash = sourceHash(def);
      const programs: Precompiled["programs"][number][] = [];
      if (f.kind === "orchestration") {
        const bindings = params.map((p) => fixedBinding(p.name, p.annotated));
        if (bindings.every((b): b is ParamBinding => b !== null)) programs.push({ bindings, program: parseKernel(def, bindings).toJSON() });
      }
      return { format: "tspto-precompiled-1", params, hash, programs };
    } catch {
      return null; // the page parses it and reports the error where the kernel is called
    }
  });
}

/** The transformed module, or null when it holds no kernels. */
export function transformKernels(code: string, id: string, opts: TsptoPluginOptions = {}): { code: string; kernels: number; precompiled: number } | null {
  const file = id.split("?")[0];
  if (!(opts.include ?? defaultInclude)(file) || !code.includes("jit")) return null;
  const { found, sf } = findKernels(file, code);
  if (!found.length) return null;
  const onDisk = existsSync(file) ? readFileSync(file, "utf8") : null;
  const pre = opts.precompile !== false && onDisk === code ? precompileFile(file, code, found) : found.map(() => null);
  let out = code;
  // from the end, so that earlier offsets stay valid
  for (let i = found.length - 1; i >= 0; i--) {
    const f = found[i];
    const args = [JSON.stringify(file), f.line, f.col, pre[i] ? JSON.stringify(pre[i]) : "undefined"].join(", ");
    out = `${out.slice(0, f.at)}__tspto_site(${args}, ${out.slice(f.at, f.insertEnd)})${out.slice(f.insertEnd)}`;
  }
  const sources = [[file, code] as const, ...relativeImports(file, sf).map((f) => [f, readFileSync(f, "utf8")] as const)];
  // one line in front, so that the module's lines keep their numbers
  const head = `import { site as __tspto_site, source as __tspto_source } from "tspto/capture"; ${sources.map(([f, t]) => `__tspto_source(${JSON.stringify(f)}, ${JSON.stringify(t)});`).join(" ")} `;
  return { code: head + out, kernels: found.length, precompiled: pre.filter((p) => p && p.programs.length).length };
}

// The tspto build plugins' one implementation (tspto/vite, tspto/rollup, tspto/esbuild are thin
// adapters over it). At build time, in Node, for each user module holding `pl.jit`, `pl.jit.incore`,
// `pl.jit.inline` or `@pl.jit` kernels it
//  - puts in front of the module the part of its text the kernels need, and of the modules it
//    imports relatively the constants they fold (./redact.ts; `tspto/capture` source()), named
//    relative to the build root and versioned by content: no other text, no absolute path,
//  - wraps each kernel's `pl.jit` in `site(key, line, col, pre, pl.jit)`, so the definition takes
//    its place in that text (a bundle's stack names the bundle),
//  - precompiles (opts.precompile, default on) each entry whose parameters' annotations fix every
//    type to IR with the Node front end (src/dsl/precompiled.ts), so the page parses nothing for
//    calls with those types.
// The plugin also answers the browser build's `typescript` import with a stub unless
// opts.parser is true (src/dsl/typescript.browser.ts), so such a page ships no TypeScript compiler.
import { createHash } from "node:crypto";
import { tensorT, type Type } from "../ir/index.js";
import { isOwnFile } from "../ir/package_root.js";
import { ts } from "../dsl/typescript.js";
import { captureSource, defineKernel, parseKernel, parseTypeScript, paramInfo, sourceHash, type KernelDef, type KernelKind, type ParamBinding } from "../dsl/index.js";
import { fnOfJitCall, isJitDecorator, jitCalls, lineCol } from "../dsl/source.js";
import type { Precompiled } from "../dsl/precompiled.js";
import { captureModule, displayName, resolveRelative } from "./redact.js";

export interface TsptoPluginOptions {
  /** Precompile entries whose annotations fix every parameter's type (default true). */
  readonly precompile?: boolean;
  /** Ship the TypeScript compiler so that the page can parse kernels at run time (default false). */
  readonly parser?: boolean;
  /** Which module ids to look at (default: .ts/.tsx/.js/.jsx/.mts/.mjs outside node_modules). */
  readonly include?: (id: string) => boolean;
  /** The folder source names are made relative to (default: vite's root, else the working directory). */
  readonly root?: string;
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

interface Found { at: number; kind: KernelKind; decorated: boolean; line: number; col: number; name: string; opts: boolean; insertEnd: number; node: ts.Node }

/** The kernels of one module's text, in source order. */
function findKernels(file: string, text: string): { found: Found[]; sf: ts.SourceFile } {
  const sf = parseTypeScript(file, text);
  const src = { file, sf, text, offset: 0, hash: "", fromFile: true, lineStarts: lineStartsOf(text), key: file };
  const found: Found[] = [];
  for (const c of jitCalls(src)) {
    const fn = fnOfJitCall(c.call);
    const p = c.call.parent;
    const name = (fn && fn.name && ts.isIdentifier(fn.name) ? fn.name.text : null) ?? (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name) ? p.name.text : "kernel");
    const at = c.call.expression.getStart(sf);
    const lc = lineCol(src, c.call.getStart(sf));
    found.push({ at, kind: c.kind, decorated: false, line: lc.line, col: lc.col, name, opts: c.call.arguments.length > 1, insertEnd: c.call.expression.getEnd(), node: c.call });
  }
  const visit = (n: ts.Node) => {
    if (ts.isMethodDeclaration(n) && n.name && ts.isIdentifier(n.name)) {
      for (const d of ts.getDecorators(n) ?? []) {
        if (!isJitDecorator(d)) continue;
        const lc = lineCol(src, d.getStart(sf));
        found.push({ at: d.expression.getStart(sf), kind: "orchestration", decorated: true, line: lc.line, col: lc.col, name: n.name.text, opts: ts.isCallExpression(d.expression), insertEnd: d.expression.getEnd(), node: n });
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

/** Precompiles the kernels of `file` (its text is `text`, parsed as `sf`); per kernel, its record or null. */
export function precompileFile(file: string, text: string, sf: ts.SourceFile, found: readonly Found[]): (Precompiled | null)[] {
  // the front end reads exactly this text (not the file on disk, which may have changed since)
  // under a version of its own; its relative imports are read from disk
  const imports: Record<string, string> = {};
  for (const s of sf.statements) {
    if ((ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      const hit = resolveRelative(file, s.moduleSpecifier.text);
      if (hit) imports[s.moduleSpecifier.text] = hit;
    }
  }
  const version = `build-${createHash("sha256").update(text).update(JSON.stringify(imports)).digest("hex").slice(0, 16)}`;
  captureSource(`${file}\0${version}`, text, imports);
  const noop = function () { /* a build-time stand-in: the front end reads the kernel from its text */ };
  const defs: KernelDef[] = found.map((f) => defineKernel(f.kind, noop, {}, f.name, { file, line: f.line, col: f.col, version }, f.decorated));
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

/** A string literal that is safe inside an HTML script element too. */
const literal = (t: string): string => JSON.stringify(t).replace(/</g, "\\u003c").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");

/** The transformed module, or null when it holds no kernels. */
export function transformKernels(code: string, id: string, opts: TsptoPluginOptions = {}): { code: string; kernels: number; precompiled: number } | null {
  const file = id.split("?")[0];
  if (!(opts.include ?? defaultInclude)(file) || !code.includes("jit")) return null;
  const { found, sf } = findKernels(file, code);
  if (!found.length) return null;
  const root = opts.root ?? process.cwd();
  // what ships: the kernels' part of this module and of what it imports, versioned bottom-up
  const files = captureModule(file, code, sf, found.map((f) => f.node), root);
  const keys: string[] = new Array(files.length);
  const keyOf = (i: number): string => {
    if (keys[i] !== undefined) return keys[i];
    const f = files[i];
    const imports = Object.entries(f.imports).map(([spec, j]) => [spec, keyOf(j)] as const);
    const version = createHash("sha256").update(`${f.name}\0${f.text}\0${JSON.stringify(imports)}`).digest("hex").slice(0, 16);
    return (keys[i] = `${f.name}\0${version}`);
  };
  const key = keyOf(0);
  const pre = opts.precompile !== false ? precompileFile(file, code, sf, found) : found.map(() => null);
  const name = displayName(file, root);
  // the precompiled records name the file as the captured text does, never by its absolute path
  const preText = (p: Precompiled | null): string =>
    (p ? JSON.stringify(p).split(JSON.stringify(file).slice(1, -1)).join(JSON.stringify(name).slice(1, -1)).replace(/</g, "\\u003c") : "undefined");
  const parts: string[] = [];
  let at = 0;
  for (let i = 0; i < found.length; i++) {
    const f = found[i];
    const args = [literal(key), f.line, f.col, preText(pre[i])].join(", ");
    parts.push(code.slice(at, f.at), `__tspto_site(${args}, `, code.slice(f.at, f.insertEnd), ")");
    at = f.insertEnd;
  }
  parts.push(code.slice(at));
  const out = parts.join("");
  const sources = files.map((f, i) => {
    const imports = Object.entries(f.imports).map(([spec, j]) => [spec, keyOf(j)] as const);
    return `__tspto_source(${literal(keyOf(i))}, ${literal(f.text)}, {${imports.map(([s, k]) => `${literal(s)}: ${literal(k)}`).join(", ")}});`;
  });
  // one line in front, so that the module's lines keep their numbers
  const head = `import { site as __tspto_site, source as __tspto_source } from "tspto/capture"; ${sources.join(" ")} `;
  return { code: head + out, kernels: found.length, precompiled: pre.filter((p) => p && p.programs.length).length };
}

// Locating a kernel's source. `pl.jit` records the definition site (file, line, col); here the
// `.ts` file is read and parsed with the TypeScript compiler API (ts.createSourceFile: fast,
// no type checking), and the kernel's function node is found by position and name. When
// the file cannot be read or holds no matching node (bundled or generated code), the
// function's `toString()` is parsed instead. Parsed files are cached with their text hash.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { ts } from "./typescript.js";
import { TsptoSyntaxError, registerSource } from "../ir/errors.js";
import type { Span } from "../ir/nodes.js";
import { siteKey, type KernelDef, type KernelKind, type KernelSite } from "./kernel.js";

/** A parsed piece of source: a whole file, or a wrapped `fn.toString()` snippet. */
export interface SourceText {
  /** File name used in spans (an absolute path, or `<fn.toString>`, `<ir>`, ...). */
  readonly file: string;
  readonly sf: ts.SourceFile;
  /** sha256 of the user's text. */
  readonly hash: string;
  /** True when parsed from the file on disk. */
  readonly fromFile: boolean;
  /** Length of the wrapper prefix in front of the user's text (toString snippets). */
  readonly offset: number;
  /** Start offsets of the lines of the user's text. */
  readonly lineStarts: readonly number[];
  /** The user's text (without wrapper). */
  readonly text: string;
  /** What finds it again: the file, or `file\0version` for a captured text (captureSource). */
  readonly key: string;
  /** A captured text's relative imports: specifier → the key of the captured module. */
  readonly imports?: Readonly<Record<string, string>>;
}

/** The file name of a kernel parsed from its `fn.toString()`. */
export const TOSTRING_FILE = "<fn.toString>";
/** What errors about such a kernel add: its types and names are gone, the build plugin keeps them. */
export const TOSTRING_HINT = "this kernel was parsed from fn.toString() (its file is not readable here, as in a bundle or a page: types and names are gone, " +
  "directions are inferred and shapes come from the call); the tspto build plugin (tspto/vite, tspto/rollup or tspto/esbuild) keeps the original source and gives better errors";

/** A kernel function node in kernel source. */
export type KernelFnNode = ts.FunctionExpression | ts.ArrowFunction | ts.FunctionDeclaration | ts.MethodDeclaration;

export interface KernelSource {
  readonly src: SourceText;
  readonly node: KernelFnNode;
}

const hashText = (text: string): string => createHash("sha256").update(text).digest("hex");

function lineStartsOf(text: string): number[] {
  const starts = [0];
  // lines end at "\n" ("\r\n" included), as in the error excerpts (src/ir/errors.ts)
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return starts;
}

/** Where the brackets of `text` nest deepest (strings and comments are not skipped: a hint, not a parse). */
function deepestPoint(text: string): { depth: number; line: number; col: number } {
  let depth = 0, best = 0, at = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 40 || c === 91 || c === 123) { if (++depth > best) { best = depth; at = i; } } else if (c === 41 || c === 93 || c === 125) depth--;
  }
  const before = text.slice(0, at);
  const nl = before.lastIndexOf("\n");
  return { depth: best, line: before.split("\n").length, col: at - nl };
}

/**
 * `text` parsed by the TypeScript compiler (no type checking). Its parser recurses per nesting
 * level: text nested past what the stack holds is one E_NESTING error at the deepest point.
 */
export function parseTypeScript(file: string, text: string): ts.SourceFile {
  try {
    return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, /* setParentNodes */ true, ts.ScriptKind.TS);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    const d = deepestPoint(text);
    throw new TsptoSyntaxError("E_NESTING", `this module nests brackets ${d.depth} levels deep, more than the TypeScript parser that reads kernel modules can hold (${e.message})`,
      { file, line: d.line, col: d.col }, "move the deeply nested expression out of the module that defines kernels (into a module of its own), or flatten it");
  }
}

function makeSource(file: string, fullText: string, offset: number, userText: string, fromFile: boolean, key = file,
  imports?: Readonly<Record<string, string>>): SourceText {
  const sf = parseTypeScript(file, fullText);
  return { file, sf, hash: hashText(userText), fromFile, offset, lineStarts: lineStartsOf(userText), text: userText, key, imports };
}

/** Parse source text that is not on disk (IR text). Registers it for error excerpts. */
export function sourceFromText(text: string, file: string): SourceText {
  registerSource(file, text);
  return makeSource(file, text, 0, text, false);
}

// ---------------------------------------------------------------- captured texts

// What a build plugin captured of a module (src/capture.ts): the text its kernels need, under
// the file's name relative to the build root and a version (a hash of the text and of its
// imports' versions). Kernels find their text by file and version, so two texts of one path (a
// hot reload, two bundles) never mix.
interface Captured { readonly file: string; readonly text: string; readonly imports: Readonly<Record<string, string>>; src?: SourceText }
const captured = new Map<string, Captured>();

/** Register a captured text under `key` (`file\0version`); its imports map specifiers to keys. */
export function captureSource(key: string, text: string, imports: Readonly<Record<string, string>> = {}): void {
  const cut = key.indexOf("\0");
  if (cut <= 0 || captured.has(key)) return;
  captured.set(key, { file: key.slice(0, cut), text, imports: { ...imports } });
}

/** Whether `key` names a captured text (rather than a file on disk). */
export const isCapturedKey = (key: string): boolean => key.includes("\0");

/** The sha256 of a captured text, or null when `key` names none (src/front_memo.ts). */
export function capturedHash(key: string): string | null {
  const c = captured.get(key);
  return c ? hashText(c.text) : null;
}

function loadCaptured(key: string): SourceText | null {
  const c = captured.get(key);
  if (!c) return null;
  if (!c.src) {
    c.src = makeSource(c.file, c.text, 0, c.text, true, key, c.imports);
    registerSource(c.file, c.text);
  }
  return c.src;
}

/** The text (file or captured) a site names, or null. */
export function loadSiteSource(site: KernelSite): SourceText | null {
  return loadSourceFile(siteKey(site));
}

// ---------------------------------------------------------------- files

const fileCache = new Map<string, { mtimeMs: number; size: number; src: SourceText } | null>();
let reads: Set<string> | null = null;

/** Runs `f`, returning every file loadSourceFile was asked for meanwhile (src/dsl/memo.ts). */
export function trackSourceReads(f: () => void): string[] {
  const outer = reads;
  const mine = new Set<string>();
  reads = mine;
  try {
    f();
  } finally {
    reads = outer;
    if (outer) for (const x of mine) outer.add(x);
  }
  return [...mine];
}

/** The parsed `.ts` file at `file`, or null when it cannot be read. Re-parsed when its text changes. */
export function loadSourceFile(file: string): SourceText | null {
  reads?.add(file);
  if (isCapturedKey(file)) return loadCaptured(file);
  let st: { mtimeMs: number; size: number };
  try {
    st = statSync(file);
  } catch {
    fileCache.set(file, null);
    return null;
  }
  const hit = fileCache.get(file);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.src;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    fileCache.set(file, null);
    return null;
  }
  const hash = hashText(text);
  const src = hit && hit.src.hash === hash ? hit.src : makeSource(file, text, 0, text, true);
  registerSource(file, text);
  fileCache.set(file, { mtimeMs: st.mtimeMs, size: st.size, src });
  return src;
}

// ---------------------------------------------------------------- positions

/** 1-based line/column of a text offset in the user's text. */
export function lineCol(src: SourceText, pos: number): { line: number; col: number } {
  const p = Math.max(0, Math.min(pos - src.offset, src.text.length));
  const starts = src.lineStarts;
  let lo = 0, hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= p) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, col: p - starts[lo] + 1 };
}

/** The span of a node (first token to end) in the user's file. */
export function spanOf(src: SourceText, node: ts.Node): Span {
  const start = lineCol(src, node.getStart(src.sf));
  const end = lineCol(src, node.getEnd());
  return { file: src.file, line: start.line, col: start.col, endLine: end.line, endCol: end.col };
}

const startLine = (src: SourceText, node: ts.Node) => lineCol(src, node.getStart(src.sf)).line;

// ---------------------------------------------------------------- jit forms

/** The kernel kind a call's callee names: `X.jit(...)`, `X.jit.incore(...)`, `X.jit.inline(...)`, `jit(...)`. */
export function jitCallKind(call: ts.CallExpression): KernelKind | null {
  const c = call.expression;
  if (ts.isIdentifier(c)) return c.text === "jit" ? "orchestration" : null;
  if (!ts.isPropertyAccessExpression(c)) return null;
  const name = c.name.text;
  if (name === "jit") return "orchestration";
  if ((name === "incore" || name === "inline") && isJitRef(c.expression)) return name;
  return null;
}
const isJitRef = (e: ts.Expression) => (ts.isIdentifier(e) && e.text === "jit") || (ts.isPropertyAccessExpression(e) && e.name.text === "jit");

/** Whether a decorator is `@pl.jit` or `@pl.jit(opts)`. */
export function isJitDecorator(d: ts.Decorator): boolean {
  const e = ts.isCallExpression(d.expression) ? d.expression.expression : d.expression;
  return isJitRef(e);
}

/** The function a jit call wraps: its first argument (a function or arrow, or the name of a function declaration). */
export function fnOfJitCall(call: ts.CallExpression): KernelFnNode | null {
  const a = call.arguments[0];
  if (!a) return null;
  const inner = skipParens(a);
  if (ts.isFunctionExpression(inner) || ts.isArrowFunction(inner)) return inner;
  if (ts.isIdentifier(inner)) {
    const d = findDeclaration(inner.text, call);
    if (d?.kind === "function") return d.decl;
  }
  return null;
}

export function skipParens(e: ts.Expression): ts.Expression {
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  return e;
}

function forEachNode(node: ts.Node, f: (n: ts.Node) => void): void {
  const visit = (n: ts.Node) => { f(n); ts.forEachChild(n, visit); };
  visit(node);
}

type JitCall = { call: ts.CallExpression; kind: KernelKind; from: number; to: number };
const jitCallsOf = new WeakMap<ts.SourceFile, readonly JitCall[]>();
let walks = 0;
/** How many whole-file walks finding kernels took in this process (tests: one per parsed text, not per kernel). */
export const sourceWalks = (): number => walks;

/** Every jit call in a file, with the lines its head spans (from the call to its first argument); one walk per parsed text. */
export function jitCalls(src: SourceText): readonly JitCall[] {
  const hit = jitCallsOf.get(src.sf);
  if (hit) return hit;
  walks++;
  const out: JitCall[] = [];
  forEachNode(src.sf, (n) => {
    if (!ts.isCallExpression(n)) return;
    const kind = jitCallKind(n);
    if (!kind) return;
    const arg = n.arguments[0];
    out.push({ call: n, kind, from: startLine(src, n), to: arg ? startLine(src, arg) : startLine(src, n) });
  });
  jitCallsOf.set(src.sf, out);
  return out;
}

/** The jit call whose head covers `site` (nearest column when several do). */
function jitCallAt(src: SourceText, site: KernelSite, kind?: KernelKind): ts.CallExpression | null {
  const cands = jitCalls(src).filter((c) => (!kind || c.kind === kind) && c.from <= site.line && site.line <= c.to);
  if (!cands.length) return null;
  const dist = (c: { call: ts.CallExpression }) => Math.abs(lineCol(src, c.call.getStart(src.sf)).col - site.col);
  return cands.sort((a, b) => dist(a) - dist(b))[0].call;
}

const textCache = new Map<string, { mtimeMs: number; size: number; text: string } | null>();

/** The text of `file` (cached by mtime and size), or null when unreadable. Does not parse. */
function fileText(file: string): string | null {
  if (isCapturedKey(file)) return captured.get(file)?.text ?? null;
  let st: { mtimeMs: number; size: number };
  try { st = statSync(file); } catch { return null; }
  const hit = textCache.get(file);
  if (hit && hit.mtimeMs === st.mtimeMs && hit.size === st.size) return hit.text;
  try {
    const text = readFileSync(file, "utf8");
    textCache.set(file, { mtimeMs: st.mtimeMs, size: st.size, text });
    return text;
  } catch {
    return null;
  }
}

const JIT_HEAD = /\bjit\s*(?:\.\s*(?:incore|inline)\s*)?\(\s*(?:async\s+)?(function\b\s*\*?\s*([A-Za-z_$][\w$]*)?|\(|[A-Za-z_$][\w$]*\s*=>)/g;
const BINDING = /\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]*)?=\s*(?:[\w$]+\s*\.\s*)*$/;

/**
 * The kernel name at `site` read from the file's text without parsing it: the name of the
 * `function` a `jit(` call at the site wraps, else the `const` the call is bound to.
 * undefined when the text there is not of these forms (the caller then parses).
 */
function nameFromText(site: KernelSite): string | null | undefined {
  const text = fileText(siteKey(site));
  if (text === null) return undefined;
  let lineStart = 0;
  for (let l = 1; l < site.line; l++) {
    const nl = text.indexOf("\n", lineStart);
    if (nl < 0) return undefined;
    lineStart = nl + 1;
  }
  const at = lineStart + site.col - 1;
  const lineEnd = text.indexOf("\n", at) < 0 ? text.length : text.indexOf("\n", at);
  // the jit call nearest the site on its line
  JIT_HEAD.lastIndex = lineStart;
  let best: RegExpExecArray | null = null;
  for (let m = JIT_HEAD.exec(text); m && m.index <= lineEnd; m = JIT_HEAD.exec(text)) {
    if (!best || Math.abs(m.index - at) < Math.abs(best.index - at)) best = m;
  }
  if (!best) return undefined;
  if (best[2]) return best[2];
  const before = text.slice(lineStart, best.index);
  const bound = BINDING.exec(before);
  if (bound) return bound[1];
  return undefined;
}

/**
 * The name of the kernel defined at `site` as written in the source: its function's name,
 * else the const it is bound to (`const NAME = pl.jit((a) => ...)`). Preferred over
 * `fn.name`, which transpilers may rename (esbuild turns `const k = pl.jit(function k() {})`
 * into `function k2`).
 */
export function nameFromSource(site: KernelSite, kind?: KernelKind, fnName = ""): string | null {
  const scanned = nameFromText(site);
  if (scanned !== undefined) return scanned;
  // The text scan found no name: a fn.name is as good as the parse's answer would usually be,
  // and it keeps the compiler unloaded at definition time (see ./typescript.ts).
  if (fnName) return null;
  const src = loadSiteSource(site);
  if (!src) return null;
  const call = jitCallAt(src, site, kind);
  if (!call) return null;
  const fn = fnOfJitCall(call);
  if (fn?.name && ts.isIdentifier(fn.name)) return fn.name.text;
  const parent = call.parent;
  return ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name) ? parent.name.text : null;
}

// ---------------------------------------------------------------- lexical declarations

export type Declaration =
  | { readonly kind: "const"; readonly decl: ts.VariableDeclaration }
  | { readonly kind: "let"; readonly decl: ts.VariableDeclaration }
  | { readonly kind: "function"; readonly decl: ts.FunctionDeclaration }
  | { readonly kind: "class"; readonly decl: ts.ClassDeclaration }
  | { readonly kind: "import"; readonly decl: ts.ImportSpecifier; readonly spec: string; readonly imported: string }
  | { readonly kind: "namespace-import"; readonly decl: ts.NamespaceImport; readonly spec: string }
  | { readonly kind: "param"; readonly decl: ts.Node };

function declIn(statements: readonly ts.Statement[], name: string): Declaration | null {
  for (const s of statements) {
    if (ts.isVariableStatement(s)) {
      const isConst = (s.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const d of s.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.name.text === name) return { kind: isConst ? "const" : "let", decl: d };
      }
    } else if (ts.isFunctionDeclaration(s) && s.name?.text === name) {
      return { kind: "function", decl: s };
    } else if (ts.isClassDeclaration(s) && s.name?.text === name) {
      return { kind: "class", decl: s };
    } else if (ts.isImportDeclaration(s) && s.importClause && ts.isStringLiteral(s.moduleSpecifier)) {
      const spec = s.moduleSpecifier.text;
      const nb = s.importClause.namedBindings;
      if (nb && ts.isNamespaceImport(nb) && nb.name.text === name) return { kind: "namespace-import", decl: nb, spec };
      if (nb && ts.isNamedImports(nb)) {
        for (const el of nb.elements) {
          if (el.name.text === name) return { kind: "import", decl: el, spec, imported: (el.propertyName ?? el.name).text };
        }
      }
    }
  }
  return null;
}

function bindsName(b: ts.BindingName, name: string): boolean {
  if (ts.isIdentifier(b)) return b.text === name;
  return b.elements.some((e) => !ts.isOmittedExpression(e) && bindsName(e.name, name));
}

/**
 * The declaration `name` refers to at `from`, searching the enclosing scopes outward (block
 * statements, enclosing functions' parameters, the module's declarations and imports).
 * The search starts above `from`, so `from`'s own parameters and locals are not seen.
 */
export function findDeclaration(name: string, from: ts.Node): Declaration | null {
  for (let n: ts.Node | undefined = from.parent; n; n = n.parent) {
    if (ts.isSourceFile(n) || ts.isBlock(n) || ts.isModuleBlock(n) || ts.isCaseClause(n) || ts.isDefaultClause(n)) {
      const d = declIn(n.statements, name);
      if (d) return d;
    }
    if (ts.isFunctionLike(n)) {
      for (const p of n.parameters) if (bindsName(p.name, name)) return { kind: "param", decl: p };
      if ((ts.isFunctionExpression(n)) && n.name?.text === name) return { kind: "param", decl: n };
    }
    if ((ts.isForOfStatement(n) || ts.isForInStatement(n) || ts.isForStatement(n)) && n.initializer && ts.isVariableDeclarationList(n.initializer)) {
      for (const d of n.initializer.declarations) if (bindsName(d.name, name)) return { kind: "param", decl: d };
    }
    if (ts.isCatchClause(n) && n.variableDeclaration && bindsName(n.variableDeclaration.name, name)) {
      return { kind: "param", decl: n.variableDeclaration };
    }
  }
  return null;
}

// ---------------------------------------------------------------- locating kernels

const located = new WeakMap<KernelDef, { hash: string | null; ks: KernelSource }>();

/** Find the function node of a kernel: in its file by position and name, else from `fn.toString()`. */
export function locateKernel(def: KernelDef): KernelSource {
  const file = def.site ? loadSiteSource(def.site) : null;
  const hit = located.get(def);
  if (hit && hit.hash === (file?.hash ?? null)) return hit.ks;
  let ks: KernelSource | null = null;
  if (file && def.site) {
    const node = def.decorated ? findDecoratedMethod(file, def.site, def.name) : findJitFunction(file, def);
    if (node) ks = { src: file, node };
  }
  ks ??= fromToString(def);
  located.set(def, { hash: file?.hash ?? null, ks });
  return ks;
}

function findJitFunction(src: SourceText, def: KernelDef): KernelFnNode | null {
  const site = def.site!;
  const at = jitCallAt(src, site, def.kind);
  const fn = at && fnOfJitCall(at);
  if (fn) return fn;
  // Fall back to the nearest jit call of the right kind wrapping a function of the kernel's name.
  const named = jitCalls(src)
    .filter((c) => c.kind === def.kind)
    .map((c) => ({ c, fn: fnOfJitCall(c.call) }))
    .filter((x) => x.fn && ((x.fn.name && ts.isIdentifier(x.fn.name) && x.fn.name.text === def.name) ||
      (ts.isVariableDeclaration(x.c.call.parent) && ts.isIdentifier(x.c.call.parent.name) && x.c.call.parent.name.text === def.name)))
    .sort((a, b) => Math.abs(a.c.from - site.line) - Math.abs(b.c.from - site.line));
  return named[0]?.fn ?? null;
}

/**
 * The static method `name` decorated with @pl.jit nearest to the site line (the decorator
 * helper's frame points at or near it); in emitted JavaScript, the static method `name`.
 */
const decoratedOf = new WeakMap<ts.SourceFile, readonly ts.MethodDeclaration[]>();

/** The methods of a file decorated with @pl.jit (one walk per parsed text). */
function decoratedMethods(src: SourceText): readonly ts.MethodDeclaration[] {
  const hit = decoratedOf.get(src.sf);
  if (hit) return hit;
  walks++;
  const out: ts.MethodDeclaration[] = [];
  forEachNode(src.sf, (n) => {
    if (ts.isMethodDeclaration(n) && n.name && ts.isIdentifier(n.name) && (ts.getDecorators(n) ?? []).some(isJitDecorator)) out.push(n);
  });
  decoratedOf.set(src.sf, out);
  return out;
}

function findDecoratedMethod(src: SourceText, site: KernelSite, name: string): ts.MethodDeclaration | null {
  const cands: ts.MethodDeclaration[] = decoratedMethods(src).filter((n) => (n.name as ts.Identifier).text === name);
  // JavaScript emitted with the decorators lowered (tsc, esbuild: `__esDecorate` /
  // `__decorateElement` calls after the class) keeps the method without its decorator.
  if (!cands.length) {
    forEachNode(src.sf, (n) => {
      if (ts.isMethodDeclaration(n) && n.name && ts.isIdentifier(n.name) && n.name.text === name &&
        (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) cands.push(n);
    });
  }
  if (!cands.length) return null;
  const range = (m: ts.MethodDeclaration) => ({ from: lineCol(src, m.getStart(src.sf)).line, to: lineCol(src, m.getEnd()).line });
  const dist = (m: ts.MethodDeclaration) => {
    const r = range(m);
    return site.line >= r.from && site.line <= r.to ? 0 : site.line < r.from ? r.from - site.line : 1e6 + site.line - r.to;
  };
  return cands.sort((a, b) => dist(a) - dist(b))[0];
}

/** Parse `fn.toString()`: a function/arrow (wrapped in parentheses) or a method (wrapped in an object literal). */
function fromToString(def: KernelDef): KernelSource {
  const text = Function.prototype.toString.call(def.fn);
  const file = TOSTRING_FILE;
  for (const [pre, post] of [["(", ")"], ["({", "})"]] as const) {
    const src = makeSource(file, pre + text + post, pre.length, text, false);
    const stmt = src.sf.statements[0];
    if (src.sf.statements.length !== 1 || !stmt || !ts.isExpressionStatement(stmt)) continue;
    const e = skipParens(stmt.expression);
    if ((ts.isFunctionExpression(e) || ts.isArrowFunction(e)) && !hasParseErrors(src.sf)) return { src, node: e };
    if (ts.isObjectLiteralExpression(e) && e.properties.length === 1 && ts.isMethodDeclaration(e.properties[0]) && !hasParseErrors(src.sf)) {
      return { src, node: e.properties[0] };
    }
  }
  throw new Error(`tspto: cannot find the source of kernel '${def.name}'` +
    (def.site ? ` (defined at ${def.site.file}:${def.site.line}:${def.site.col})` : "") +
    `: its file is not readable and its toString() is not parseable: ${text.slice(0, 80)}`);
}

function hasParseErrors(sf: ts.SourceFile): boolean {
  const diags = (sf as unknown as { parseDiagnostics?: readonly unknown[] }).parseDiagnostics;
  return !!diags && diags.length > 0;
}

/** Make a snippet's text available for error excerpts (toString sources are registered when parsed). */
export function registerSnippet(src: SourceText): void {
  if (!src.fromFile) registerSource(src.file, src.text);
}

/** The text of a kernel's function node as the user wrote it. */
export function kernelText(ks: KernelSource): string {
  return ks.node.getText(ks.src.sf);
}

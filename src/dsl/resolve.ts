// Free identifiers of kernel source and compile-time constants.
//
// A kernel may name, besides its own parameters and locals:
//   - module-level (or enclosing-block) `const` bindings with constant initialisers: numbers,
//     strings, booleans, arrays/objects of them, arithmetic of other such consts — also when
//     imported from another `.ts` module (relative imports, one level of re-export or more);
//   - jit functions (`pl.jit.incore` / `pl.jit.inline` sub-kernels, or entries, which are an error
//     to call), found in the same file, by imported name, or as a value in `opts.scope`;
//   - anything passed through `opts.scope` (numbers, booleans, strings, arrays, kernels);
//   - `pl`, `Math`, `NaN`, `Infinity`.
// Everything else is unresolved; the parser reports it with a fix.
import * as language from "./language.js";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, resolve as resolvePath } from "node:path";
import { ts } from "./typescript.js";
import { DTYPE_CONST, MEMS, type DType } from "../ir/types.js";
import { findKernelDefs, kernelDefOf, kernelDefsIn, siteKey, type KernelDef, type KernelKind } from "./kernel.js";
import {
  findDeclaration, jitCallKind, kernelText, lineCol, loadSourceFile, locateKernel, skipParens,
  type Declaration, type SourceText,
} from "./source.js";

/** A compile-time constant. Numbers remember whether they are floats (literal `2.0`, `1e-5`, non-integer results). */
export type ConstVal =
  | { readonly k: "num"; readonly v: number; readonly float: boolean }
  | { readonly k: "bool"; readonly v: boolean }
  | { readonly k: "str"; readonly v: string }
  | { readonly k: "null" }
  | { readonly k: "arr"; readonly v: readonly ConstVal[] }
  | { readonly k: "obj"; readonly v: Readonly<Record<string, ConstVal>> };

/** What a free identifier refers to. */
export type FreeBinding =
  | { readonly kind: "const"; readonly value: ConstVal }
  | { readonly kind: "kernel"; readonly name: string; readonly kernelKind: KernelKind; readonly def?: KernelDef }
  | { readonly kind: "pl" }
  | { readonly kind: "math" }
  /** Declared, but not usable in a kernel (a let, a parameter, a non-kernel function, ...). */
  | { readonly kind: "other"; readonly what: string; readonly isFunction?: boolean }
  | null;

const num = (v: number, float = !Number.isInteger(v)): ConstVal => ({ k: "num", v, float });

// ---------------------------------------------------------------- the pl namespace's constants

const DTYPE_BY_CONST = new Map<string, DType>(Object.entries(DTYPE_CONST).map(([d, c]) => [c, d as DType]));
const PL_ENUMS: Record<string, readonly string[]> = { Mem: MEMS, Level: ["CORE_GROUP"] };

/** `pl.FP32` → "float32"; `pl.Mem.Vec` → "Vec"; `pl.Level.CORE_GROUP` → "CORE_GROUP". */
export function plConstant(path: readonly string[]): ConstVal | undefined {
  if (path.length === 1 && DTYPE_BY_CONST.has(path[0])) return { k: "str", v: DTYPE_BY_CONST.get(path[0])! };
  if (path.length === 2 && PL_ENUMS[path[0]]?.includes(path[1])) return { k: "str", v: path[1] };
  return undefined;
}

// ---------------------------------------------------------------- constant evaluation

/** Resolves identifiers during constant evaluation. */
export type ConstLookup = (name: string, at: ts.Node) => FreeBinding;

const MATH_FNS: Record<string, (...xs: number[]) => number> = {
  min: Math.min, max: Math.max, floor: Math.floor, ceil: Math.ceil, trunc: Math.trunc, round: Math.round,
  abs: Math.abs, sqrt: Math.sqrt, pow: Math.pow, log2: Math.log2, exp: Math.exp, log: Math.log,
};

function truthy(c: ConstVal): boolean {
  switch (c.k) {
    case "num": return c.v !== 0 && !Number.isNaN(c.v);
    case "bool": return c.v;
    case "str": return c.v !== "";
    case "null": return false;
    default: return true;
  }
}

function arith(op: ts.SyntaxKind, a: ConstVal, b: ConstVal): ConstVal | undefined {
  if (op === ts.SyntaxKind.PlusToken && (a.k === "str" || b.k === "str")) {
    const s = (c: ConstVal) => (c.k === "str" || c.k === "num" || c.k === "bool" ? String(c.v) : undefined);
    const x = s(a), y = s(b);
    return x !== undefined && y !== undefined ? { k: "str", v: x + y } : undefined;
  }
  if (op === ts.SyntaxKind.AmpersandAmpersandToken) return truthy(a) ? b : a;
  if (op === ts.SyntaxKind.BarBarToken) return truthy(a) ? a : b;
  if (op === ts.SyntaxKind.QuestionQuestionToken) return a.k === "null" ? b : a;
  if (op === ts.SyntaxKind.EqualsEqualsEqualsToken || op === ts.SyntaxKind.EqualsEqualsToken) {
    return { k: "bool", v: JSON.stringify(a) === JSON.stringify(b) || (a.k === "num" && b.k === "num" && a.v === b.v) };
  }
  if (op === ts.SyntaxKind.ExclamationEqualsEqualsToken || op === ts.SyntaxKind.ExclamationEqualsToken) {
    return { k: "bool", v: !(JSON.stringify(a) === JSON.stringify(b) || (a.k === "num" && b.k === "num" && a.v === b.v)) };
  }
  const n = (c: ConstVal) => (c.k === "num" ? c.v : c.k === "bool" ? Number(c.v) : undefined);
  const x = n(a), y = n(b);
  if (x === undefined || y === undefined) return undefined;
  const float = (a.k === "num" && a.float) || (b.k === "num" && b.float);
  const res = (v: number) => num(v, float || !Number.isInteger(v));
  switch (op) {
    case ts.SyntaxKind.PlusToken: return res(x + y);
    case ts.SyntaxKind.MinusToken: return res(x - y);
    case ts.SyntaxKind.AsteriskToken: return res(x * y);
    case ts.SyntaxKind.SlashToken: return res(x / y);
    case ts.SyntaxKind.PercentToken: return res(x % y);
    case ts.SyntaxKind.AsteriskAsteriskToken: return res(x ** y);
    case ts.SyntaxKind.LessThanToken: return { k: "bool", v: x < y };
    case ts.SyntaxKind.LessThanEqualsToken: return { k: "bool", v: x <= y };
    case ts.SyntaxKind.GreaterThanToken: return { k: "bool", v: x > y };
    case ts.SyntaxKind.GreaterThanEqualsToken: return { k: "bool", v: x >= y };
    case ts.SyntaxKind.BarToken: return num(x | y, false);
    case ts.SyntaxKind.AmpersandToken: return num(x & y, false);
    case ts.SyntaxKind.CaretToken: return num(x ^ y, false);
    case ts.SyntaxKind.LessThanLessThanToken: return num(x << y, false);
    case ts.SyntaxKind.GreaterThanGreaterThanToken: return num(x >> y, false);
    default: return undefined;
  }
}

/**
 * A numeric literal's value and float-ness (`2.0`, `1e-5` are floats; `0x10`, `128` are not),
 * from its source text (`NumericLiteral.text` is normalized: "2.0" reads as "2").
 */
export function numericLiteral(lit: ts.NumericLiteral): { v: number; float: boolean } {
  const t = lit.getText().replace(/_/g, "");
  const radix = /^0[xXbBoO]/.test(t);
  return { v: Number(t), float: !radix && /[.eE]/.test(t) };
}

/** The dotted path of a property-access chain rooted at an identifier (`pl.Mem.Vec` → ["pl","Mem","Vec"]). */
export function accessPath(e: ts.Expression): string[] | null {
  if (ts.isIdentifier(e)) return [e.text];
  if (ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.name)) {
    const p = accessPath(e.expression);
    return p ? [...p, e.name.text] : null;
  }
  return null;
}

/** Evaluate an expression as a compile-time constant, or undefined when it is not one. */
export function evalConst(e: ts.Expression, lookup: ConstLookup): ConstVal | undefined {
  const ev = (x: ts.Expression) => evalConst(x, lookup);
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isNonNullExpression(e) ||
    ts.isTypeAssertionExpression(e)) return ev(e.expression);
  if (ts.isNumericLiteral(e)) { const n = numericLiteral(e); return num(n.v, n.float); }
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return { k: "str", v: e.text };
  if (e.kind === ts.SyntaxKind.TrueKeyword) return { k: "bool", v: true };
  if (e.kind === ts.SyntaxKind.FalseKeyword) return { k: "bool", v: false };
  if (e.kind === ts.SyntaxKind.NullKeyword) return { k: "null" };
  if (ts.isIdentifier(e)) {
    const b = lookup(e.text, e);
    return b?.kind === "const" ? b.value : undefined;
  }
  if (ts.isArrayLiteralExpression(e)) {
    const items: ConstVal[] = [];
    for (const el of e.elements) {
      if (ts.isSpreadElement(el)) {
        const s = ev(el.expression);
        if (s?.k !== "arr") return undefined;
        items.push(...s.v);
        continue;
      }
      const v = ev(el);
      if (!v) return undefined;
      items.push(v);
    }
    return { k: "arr", v: items };
  }
  if (ts.isObjectLiteralExpression(e)) {
    const out: Record<string, ConstVal> = {};
    for (const p of e.properties) {
      if (ts.isPropertyAssignment(p) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name) || ts.isNumericLiteral(p.name))) {
        const v = ev(p.initializer);
        if (!v) return undefined;
        out[p.name.text] = v;
      } else if (ts.isShorthandPropertyAssignment(p)) {
        const v = ev(p.name);
        if (!v) return undefined;
        out[p.name.text] = v;
      } else return undefined;
    }
    return { k: "obj", v: out };
  }
  if (ts.isPrefixUnaryExpression(e)) {
    const v = ev(e.operand);
    if (!v) return undefined;
    switch (e.operator) {
      case ts.SyntaxKind.MinusToken: return v.k === "num" ? num(-v.v, v.float) : undefined;
      case ts.SyntaxKind.PlusToken: return v.k === "num" ? v : undefined;
      case ts.SyntaxKind.ExclamationToken: return { k: "bool", v: !truthy(v) };
      case ts.SyntaxKind.TildeToken: return v.k === "num" ? num(~v.v, false) : undefined;
      default: return undefined;
    }
  }
  if (ts.isBinaryExpression(e)) {
    const a = ev(e.left);
    const b = a && ev(e.right);
    return a && b ? arith(e.operatorToken.kind, a, b) : undefined;
  }
  if (ts.isConditionalExpression(e)) {
    const c = ev(e.condition);
    return c ? ev(truthy(c) ? e.whenTrue : e.whenFalse) : undefined;
  }
  if (ts.isPropertyAccessExpression(e)) {
    const path = accessPath(e);
    if (path) {
      const root = lookup(path[0], e);
      if (root?.kind === "pl") return plConstant(path.slice(1));
      if (root?.kind === "math" && path.length === 2) {
        const v = (Math as unknown as Record<string, unknown>)[path[1]];
        return typeof v === "number" ? num(v, true) : undefined;
      }
    }
    const obj = ev(e.expression);
    if (obj?.k === "arr" && e.name.text === "length") return num(obj.v.length, false);
    if (obj?.k === "str" && e.name.text === "length") return num(obj.v.length, false);
    if (obj?.k === "obj" && Object.hasOwn(obj.v, e.name.text)) return obj.v[e.name.text];
    return undefined;
  }
  if (ts.isElementAccessExpression(e)) {
    const obj = ev(e.expression);
    const idx = obj && ev(e.argumentExpression);
    if (obj?.k === "arr" && idx?.k === "num" && Number.isInteger(idx.v) && idx.v >= 0 && idx.v < obj.v.length) return obj.v[idx.v];
    if (obj?.k === "obj" && idx?.k === "str" && Object.hasOwn(obj.v, idx.v)) return obj.v[idx.v];
    return undefined;
  }
  if (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression)) {
    const path = accessPath(e.expression);
    if (path?.length === 2 && lookup(path[0], e)?.kind === "math" && MATH_FNS[path[1]]) {
      const args = e.arguments.map((a) => ev(a));
      if (args.some((a) => a?.k !== "num")) return undefined;
      const xs = args.map((a) => (a as { v: number }).v);
      const floatIn = args.some((a) => (a as { float: boolean }).float);
      const v = MATH_FNS[path[1]](...xs);
      const intOut = ["floor", "ceil", "trunc", "round"].includes(path[1]);
      return num(v, !intOut && (floatIn || !Number.isInteger(v)));
    }
  }
  return undefined;
}

/** A constant from a runtime value (opts.scope). */
function constFromValue(v: unknown, depth = 0): ConstVal | undefined {
  if (depth > 8) return undefined;
  if (typeof v === "number") return num(v);
  if (typeof v === "boolean") return { k: "bool", v };
  if (typeof v === "string") return { k: "str", v };
  if (v === null) return { k: "null" };
  if (Array.isArray(v)) {
    const items = v.map((x) => constFromValue(x, depth + 1));
    return items.every((x) => x !== undefined) ? { k: "arr", v: items as ConstVal[] } : undefined;
  }
  if (typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Record<string, ConstVal> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const c = constFromValue(x, depth + 1);
      if (!c) return undefined;
      out[k] = c;
    }
    return { k: "obj", v: out };
  }
  return undefined;
}

/** A constant as a plain JS value. */
export function constToValue(c: ConstVal): unknown {
  switch (c.k) {
    case "num": case "bool": case "str": return c.v;
    case "null": return null;
    case "arr": return c.v.map(constToValue);
    case "obj": return Object.fromEntries(Object.entries(c.v).map(([k, x]) => [k, constToValue(x)]));
  }
}

export function describeConst(c: ConstVal): string {
  return JSON.stringify(constToValue(c)) ?? String(c);
}

// ---------------------------------------------------------------- modules and declarations

const isLanguageModule = (spec: string) => spec === "tspto/language" || /(^|\/)language(\.[cm]?[jt]s)?$/.test(spec);

/** The `.ts` file a relative import specifier names, or null. */
function resolveModule(from: SourceText, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  // a captured text's imports were captured with it (src/plugin/redact.ts)
  if (from.imports) return Object.hasOwn(from.imports, spec) ? from.imports[spec] : null;
  const fromFile = from.key;
  const base = resolvePath(dirname(fromFile), spec);
  const stem = base.replace(/\.[cm]?[jt]sx?$/, "");
  const cands = [
    base.replace(/\.js$/, ".ts"), base.replace(/\.mjs$/, ".mts"), base.replace(/\.cjs$/, ".cts"), base.replace(/\.jsx$/, ".tsx"),
    `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${base}/index.ts`, base,
  ];
  for (const c of cands) if (existsSync(c) && !c.endsWith("/")) { try { if (loadSourceFile(c)) return c; } catch { /* not a file */ } }
  return null;
}

/** The kernel a jit call in `src` defined: matched by the recorded definition site. */
function defForJitCall(src: SourceText, call: ts.CallExpression): KernelDef | undefined {
  const from = lineCol(src, call.getStart(src.sf)).line;
  const arg = call.arguments[0];
  const to = arg ? lineCol(src, arg.getStart(src.sf)).line : from;
  const col = lineCol(src, call.getStart(src.sf)).col;
  const cands = kernelDefsIn(src.key).filter((d) => !d.decorated && d.site && d.site.line >= from && d.site.line <= to);
  if (!cands.length) return undefined;
  // nearest column; among equals (a definition run several times) the most recent
  let best = cands[0];
  for (const d of cands) if (Math.abs(d.site!.col - col) <= Math.abs(best.site!.col - col)) best = d;
  return best;
}

const MAX_DEPTH = 8;

/** What a declaration found in `src` means for a kernel. */
function fromDeclaration(d: Declaration, src: SourceText, name: string, depth: number): FreeBinding {
  if (depth > MAX_DEPTH) return { kind: "other", what: "a constant defined through too many levels of indirection" };
  switch (d.kind) {
    case "const": {
      const init = d.decl.initializer && skipParens(d.decl.initializer);
      if (!init) return { kind: "other", what: "a const without a value" };
      if (ts.isCallExpression(init)) {
        const kind = jitCallKind(init);
        if (kind) {
          const def = defForJitCall(src, init);
          return { kind: "kernel", name, kernelKind: kind, def };
        }
      }
      if (ts.isIdentifier(init)) {
        const inner = findDeclaration(init.text, init);
        if (inner) {
          const b = fromDeclaration(inner, src, init.text, depth + 1);
          if (b && b.kind === "kernel") return b;
        }
      }
      const v = evalConst(init, (n, at) => lookupIn(src, n, at, depth + 1));
      return v ? { kind: "const", value: v } : { kind: "other", what: "a const whose value is not a compile-time constant" };
    }
    case "let":
      if (isBundledLanguageNamespace(d.decl, src)) return { kind: "pl" };
      return { kind: "other", what: "a let/var variable (only const bindings are folded)" };
    case "function": return { kind: "other", what: "a plain function (not a kernel)", isFunction: true };
    case "class": return { kind: "other", what: "a class" };
    case "param": return { kind: "other", what: "a parameter or loop variable of an enclosing function" };
    case "namespace-import":
      return isLanguageModule(d.spec) ? { kind: "pl" } : { kind: "other", what: `a namespace import of "${d.spec}"` };
    case "import": {
      const file = resolveModule(src, d.spec);
      if (!file) {
        if (d.imported === "pl") return { kind: "pl" };
        return { kind: "other", what: `imported from "${d.spec}", which is not a relative .ts module` };
      }
      return resolveExport(file, d.imported, depth + 1);
    }
  }
}

/**
 * A bundler's namespace object for `pl` (tspto inlined into an application's bundle): esbuild
 * turns `pl.at(...)` into `language_exports.at(...)` with `var language_exports = {};
 * __export(language_exports, { at: () => at, jit: () => jit, load: () => load, ... })`. The
 * object is recognized by that shape: an empty object literal filled by one `__export` call
 * whose getters include the DSL's `jit`, `at`, `load` and `store`.
 */
function isBundledLanguageNamespace(decl: ts.VariableDeclaration, src: SourceText): boolean {
  if (!ts.isIdentifier(decl.name) || !decl.initializer || !ts.isObjectLiteralExpression(decl.initializer) ||
    decl.initializer.properties.length !== 0) return false;
  const name = decl.name.text;
  const stmts = decl.parent?.parent?.parent;
  if (!stmts || !("statements" in stmts)) return false;
  for (const st of (stmts as { statements: readonly ts.Statement[] }).statements) {
    if (!ts.isExpressionStatement(st) || !ts.isCallExpression(st.expression)) continue;
    const [target, all] = st.expression.arguments;
    if (!target || !all || !ts.isIdentifier(target) || target.text !== name || !ts.isObjectLiteralExpression(all)) continue;
    const keys = new Set(all.properties.map((p) => (p.name && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : "")));
    return ["jit", "at", "load", "store"].every((k) => keys.has(k));
  }
  return false;
}

/** The binding `name` exported by module `file` (following re-exports). */
function resolveExport(file: string, name: string, depth = 0): FreeBinding {
  if (depth > MAX_DEPTH) return { kind: "other", what: "an export re-exported through too many modules" };
  const src = loadSourceFile(file);
  if (!src) return { kind: "other", what: `exported by ${file.split("\0")[0]}, which cannot be read` };
  for (const s of src.sf.statements) {
    // export * as pl from "./dsl/language.js"
    if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamespaceExport(s.exportClause) && s.exportClause.name.text === name &&
      s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      return isLanguageModule(s.moduleSpecifier.text) ? { kind: "pl" } : { kind: "other", what: `a namespace re-export of "${s.moduleSpecifier.text}"` };
    }
    if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
      for (const el of s.exportClause.elements) {
        if (el.name.text !== name) continue;
        const local = (el.propertyName ?? el.name).text;
        if (s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
          const f = resolveModule(src, s.moduleSpecifier.text);
          return f ? resolveExport(f, local, depth + 1) : { kind: "other", what: `re-exported from "${s.moduleSpecifier.text}"` };
        }
        return lookupTop(src, local, depth);
      }
    }
  }
  const top = lookupTop(src, name, depth);
  if (top) return top;
  for (const s of src.sf.statements) {
    if (ts.isExportDeclaration(s) && !s.exportClause && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier)) {
      const f = resolveModule(src, s.moduleSpecifier.text);
      const b = f ? resolveExport(f, name, depth + 1) : null;
      if (b) return b;
    }
  }
  return null;
}

function lookupTop(src: SourceText, name: string, depth: number): FreeBinding {
  // a module-level declaration: search from the first statement's scope (the source file)
  const first = src.sf.statements[0];
  if (!first) return null;
  const d = findDeclaration(name, first);
  return d ? fromDeclaration(d, src, name, depth + 1) : null;
}

/** Resolve `name` as seen at `at` in `src` (enclosing scopes, then globals). */
function lookupIn(src: SourceText, name: string, at: ts.Node, depth: number): FreeBinding {
  const d = findDeclaration(name, at);
  if (d) return fromDeclaration(d, src, name, depth);
  return globalBinding(name);
}

function globalBinding(name: string): FreeBinding {
  switch (name) {
    case "pl": return { kind: "pl" };
    case "Math": return { kind: "math" };
    case "NaN": return { kind: "const", value: num(NaN, true) };
    case "Infinity": return { kind: "const", value: num(Infinity, true) };
    case "undefined": return { kind: "const", value: { k: "null" } };
    default: return null;
  }
}

function fromScopeValue(v: unknown, name: string): FreeBinding {
  const def = kernelDefOf(v);
  if (def) return { kind: "kernel", name, kernelKind: def.kind, def };
  const c = constFromValue(v);
  if (c) return { kind: "const", value: c };
  return { kind: "other", what: `opts.scope.${name}, a ${typeof v === "function" ? "function that is not a kernel" : typeof v} value`, isFunction: typeof v === "function" };
}

/**
 * Resolves the free identifiers of one kernel: `opts.scope` first, then the enclosing scopes
 * of its definition in its file (module consts, imports, jit functions), then globals. For
 * kernels parsed from `fn.toString()` (no file), jit functions are looked up by name in the
 * registry.
 */
export class Resolver {
  private readonly cache = new Map<string, FreeBinding>();
  constructor(private readonly def: KernelDef, private readonly src: SourceText, private readonly root: ts.Node) {}

  resolve(name: string, at: ts.Node = this.root): FreeBinding {
    const scope = this.def.opts.scope;
    if (scope && Object.hasOwn(scope, name)) return fromScopeValue(scope[name], name);
    // Free identifiers of the kernel all resolve from the kernel's own position.
    void at;
    if (this.cache.has(name)) return this.cache.get(name)!;
    let b: FreeBinding;
    if (this.src.fromFile) {
      b = lookupIn(this.src, name, this.root, 0);
    } else {
      b = globalBinding(name) ?? renamedPl(name, this.root);
      if (!b) {
        const defs = findKernelDefs(name, this.def.site ? siteKey(this.def.site) : null);
        const any = defs.length ? defs : findKernelDefs(name, null);
        const def = any[any.length - 1];
        if (def) b = { kind: "kernel", name, kernelKind: def.kind, def };
      }
    }
    this.cache.set(name, b);
    return b;
  }
}

/**
 * In `fn.toString()` text a bundler may have renamed the `pl` import (`US.exp(...)`): an
 * undeclared identifier used only as `name.member` with members that are all names of the
 * kernel language is taken for `pl`.
 */
function renamedPl(name: string, root: ts.Node): FreeBinding {
  const members: string[] = [];
  let other = false;
  const visit = (n: ts.Node) => {
    if (ts.isIdentifier(n) && n.text === name) {
      const p = n.parent;
      if (p && ts.isPropertyAccessExpression(p) && p.expression === n) members.push(p.name.text);
      else if (!(p && ts.isPropertyAccessExpression(p) && p.name === n)) other = true;
    }
    ts.forEachChild(n, visit);
  };
  visit(root);
  return !other && members.length > 0 && members.every((m) => Object.hasOwn(language, m)) ? { kind: "pl" } : null;
}

// ---------------------------------------------------------------- source hash

const hashes = new WeakMap<KernelDef, { key: string; hash: string }>();

/** Identifiers used in `node` that are not declared inside it (approximately: by name). */
function freeNames(node: ts.Node): string[] {
  const declared = new Set<string>();
  const used = new Set<string>();
  const visit = (n: ts.Node) => {
    if ((ts.isVariableDeclaration(n) || ts.isParameter(n) || ts.isBindingElement(n)) && ts.isIdentifier(n.name)) declared.add(n.name.text);
    if (ts.isIdentifier(n)) {
      const p = n.parent;
      const isMember = p && ((ts.isPropertyAccessExpression(p) && p.name === n) || (ts.isQualifiedName(p) && p.right === n) ||
        (ts.isPropertyAssignment(p) && p.name === n) || (ts.isPropertySignature(p) && p.name === n) ||
        ((ts.isFunctionExpression(p) || ts.isMethodDeclaration(p) || ts.isFunctionDeclaration(p)) && p.name === n));
      if (!isMember) used.add(n.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(node);
  return [...used].filter((n) => !declared.has(n)).sort();
}

/**
 * A hash of everything the kernel's IR depends on besides its arguments: the kernel's own
 * text, its kind and options, the values of the constants it names (module consts, imported
 * consts, opts.scope values) and, recursively, the source hashes of the sub-kernels it calls.
 * The jit cache key holds it, so editing a kernel, a constant it folds or a sub-kernel
 * invalidates cached programs, while editing unrelated code does not.
 */
let onHashed: ((def: KernelDef) => void) | null = null;

/** Runs `f`, calling `each` with every kernel whose source hash it takes (src/dsl/memo.ts). */
export function trackHashedDefs<T>(f: () => T, each: (def: KernelDef) => void): T {
  const outer = onHashed;
  onHashed = (d) => { each(d); outer?.(d); };
  try {
    return f();
  } finally {
    onHashed = outer;
  }
}

export function sourceHash(def: KernelDef, visiting: Set<KernelDef> = new Set()): string {
  onHashed?.(def);
  const ks = locateKernel(def);
  const memo = hashes.get(def);
  if (memo && memo.key === ks.src.hash && visiting.size === 0) return memo.hash;
  visiting.add(def);
  const h = createHash("sha256");
  h.update(`${def.kind}\0${def.name}\0${kernelText(ks)}\0${JSON.stringify(def.opts.attrs ?? {})}\0`);
  const r = new Resolver(def, ks.src, ks.node);
  for (const name of freeNames(ks.node)) {
    const b = r.resolve(name);
    if (!b) { h.update(`${name}:?\0`); continue; }
    switch (b.kind) {
      case "const": h.update(`${name}=${describeConst(b.value)}\0`); break;
      case "kernel":
        h.update(`${name}->${b.kernelKind}:${b.def && !visiting.has(b.def) ? sourceHash(b.def, visiting) : "?"}\0`);
        break;
      default: h.update(`${name}:${b.kind}\0`);
    }
  }
  visiting.delete(def);
  const hash = h.digest("hex").slice(0, 32);
  if (visiting.size === 0) hashes.set(def, { key: ks.src.hash, hash });
  return hash;
}

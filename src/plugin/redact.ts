// What a build plugin ships of a user's module: only the text its kernels need. The kernels'
// own statements, the declarations they name (transitively: consts, functions, imports), the
// exports of relatively imported modules they fold — every other character becomes blank, with
// newlines kept, so that each kept token has its line and column. Nothing else of a file (other
// code, comments, secrets, other imports' text) and no absolute path leaves the build.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, relative, resolve, sep } from "node:path";
import { ts } from "../dsl/typescript.js";
import { parseTypeScript } from "../dsl/index.js";

/** One captured file: its name relative to the build root, the kept text, its relative imports. */
export interface CapturedFile {
  readonly name: string;
  readonly text: string;
  /** import specifier → index (in the list captureModule returns) of the captured module. */
  readonly imports: Readonly<Record<string, number>>;
}

/** A build's display name of `file`: relative to `root`, with "/" separators; never absolute. */
export function displayName(file: string, root: string): string {
  const r = relative(root, file).split(sep).join("/");
  return r && !r.startsWith("/") ? r : file.split(/[\\/]/).pop()!;
}

/** Identifiers that may name a binding (not property names of accesses or literals). */
function namesIn(node: ts.Node, out: Set<string>): void {
  const stack: ts.Node[] = [node];
  while (stack.length) {
    const n = stack.pop()!;
    if (ts.isIdentifier(n)) {
      const p = n.parent;
      const member = p && ((ts.isPropertyAccessExpression(p) && p.name === n) || (ts.isQualifiedName(p) && p.right === n) ||
        (ts.isPropertyAssignment(p) && p.name === n) || (ts.isPropertySignature(p) && p.name === n));
      if (!member) out.add(n.text);
      continue;
    }
    n.forEachChild((c) => { stack.push(c); });
  }
}

function bindingNames(b: ts.BindingName, out: string[]): void {
  if (ts.isIdentifier(b)) { out.push(b.text); return; }
  for (const e of b.elements) if (!ts.isOmittedExpression(e)) bindingNames(e.name, out);
}

/** The names a statement declares in its scope (for export lists: the exported names). */
function declared(s: ts.Statement): string[] {
  const out: string[] = [];
  if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) bindingNames(d.name, out);
  else if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s) || ts.isEnumDeclaration(s) || ts.isInterfaceDeclaration(s) ||
    ts.isTypeAliasDeclaration(s) || ts.isModuleDeclaration(s)) && s.name && ts.isIdentifier(s.name)) out.push(s.name.text);
  else if (ts.isImportDeclaration(s) && s.importClause) {
    const c = s.importClause;
    if (c.name) out.push(c.name.text);
    const nb = c.namedBindings;
    if (nb && ts.isNamespaceImport(nb)) out.push(nb.name.text);
    if (nb && ts.isNamedImports(nb)) for (const el of nb.elements) out.push(el.name.text);
  } else if (ts.isImportEqualsDeclaration(s)) out.push(s.name.text);
  else if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) for (const el of s.exportClause.elements) out.push(el.name.text);
  return out;
}

/** The module file a relative specifier names, or null (as the front end resolves it). */
export function resolveRelative(fromFile: string, spec: string): string | null {
  if (!spec.startsWith(".")) return null;
  const base = resolve(dirname(fromFile), spec);
  const stem = base.replace(/\.[cm]?[jt]sx?$/, "");
  const cands = [base.replace(/\.js$/, ".ts"), base.replace(/\.mjs$/, ".mts"), base.replace(/\.cjs$/, ".cts"), base.replace(/\.jsx$/, ".tsx"),
    `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${base}/index.ts`, base, `${stem}.js`, `${base}/index.js`];
  for (const c of cands) {
    try { if (existsSync(c) && statSync(c).isFile()) return c; } catch { /* not a file */ }
  }
  return null;
}

/** One statement list being kept in part: which of its statements stay, which stay in part. */
interface Plan {
  readonly keep: [number, number][];
  /** Names the kept text refers to. */
  readonly needed: Set<string>;
  /** Relative import specifier → the names imported through it that are needed. */
  readonly fromImports: Map<string, Set<string>>;
}

/**
 * The ranges of `sf` to keep: `roots` (kernel nodes) whole, the statements enclosing them in
 * outline (a function's or class's header and braces), and every declaration, at any enclosing
 * level, of a name the kept text uses — to a fixpoint. `exportsNeeded` seeds an imported module:
 * its statements that declare those exported names.
 */
function plan(sf: ts.SourceFile, roots: readonly ts.Node[], exportsNeeded: ReadonlySet<string>): Plan {
  const keep: [number, number][] = [];
  const needed = new Set<string>(exportsNeeded);
  const fromImports = new Map<string, Set<string>>();
  const contains = (n: ts.Node) => roots.some((r) => r.getStart(sf) >= n.getStart(sf) && r.getEnd() <= n.getEnd());
  const isRoot = (n: ts.Node) => roots.includes(n);
  // statements not (yet) kept, kept whole once they declare a needed name
  const pending: ts.Statement[] = [];
  const keepWhole = (n: ts.Node) => { keep.push([n.getStart(sf), n.getEnd()]); namesIn(n, needed); };
  const reExports: ts.ExportDeclaration[] = [];
  const outline = (list: readonly ts.Statement[]) => {
    for (const s of list) {
      if (!contains(s)) {
        if (ts.isExportDeclaration(s) && !s.exportClause && s.moduleSpecifier) reExports.push(s); // export * from "./x"
        pending.push(s);
        continue;
      }
      const fnBody = ts.isFunctionDeclaration(s) && s.body && !isRoot(s) && contains(s.body) ? s.body : null;
      const cls = ts.isClassDeclaration(s) && !isRoot(s) ? s : null;
      if (fnBody) {
        keep.push([s.getStart(sf), fnBody.getStart(sf) + 1], [fnBody.getEnd() - 1, s.getEnd()]);
        for (const p of (s as ts.FunctionDeclaration).parameters) namesIn(p, needed);
        outline(fnBody.statements);
      } else if (cls) {
        const open = cls.members.pos; // just after "{"
        keep.push([cls.getStart(sf), open], [cls.getEnd() - 1, cls.getEnd()]);
        for (const h of cls.heritageClauses ?? []) namesIn(h, needed);
        for (const m of cls.members) if (contains(m)) keepWhole(m);
      } else {
        keepWhole(s);
      }
    }
  };
  outline(sf.statements);
  for (let changed = true; changed;) {
    changed = false;
    for (let i = 0; i < pending.length; i++) {
      const s = pending[i];
      const names = declared(s);
      if (!names.some((n) => needed.has(n))) continue;
      pending.splice(i--, 1);
      changed = true;
      if (ts.isImportDeclaration(s) && ts.isStringLiteral(s.moduleSpecifier)) {
        const spec = s.moduleSpecifier.text;
        const nb = s.importClause?.namedBindings;
        if (nb && ts.isNamedImports(nb) && !s.importClause!.name && !names.every((n) => needed.has(n))) {
          // only the needed names: `import { a, b } from "m"` → `import {    b } from "m"`
          keep.push([s.getStart(sf), nb.getStart(sf) + 1], [nb.getEnd() - 1, s.getEnd()]);
          for (const el of nb.elements) {
            if (!needed.has(el.name.text)) continue;
            const end = el.getEnd();
            const comma = /^\s*,/.exec(sf.text.slice(end));
            keep.push([el.getStart(sf), comma ? end + comma[0].length : end]);
          }
        } else keep.push([s.getStart(sf), s.getEnd()]);
        if (spec.startsWith(".") && nb && ts.isNamedImports(nb)) {
          const set = fromImports.get(spec) ?? new Set<string>();
          for (const el of nb.elements) if (needed.has(el.name.text)) set.add((el.propertyName ?? el.name).text);
          fromImports.set(spec, set);
        }
      } else if (ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause)) {
        keep.push([s.getStart(sf), s.getEnd()]);
        const spec = s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) ? s.moduleSpecifier.text : null;
        for (const el of s.exportClause.elements) {
          if (!needed.has(el.name.text)) continue;
          const local = (el.propertyName ?? el.name).text;
          if (spec?.startsWith(".")) {
            const set = fromImports.get(spec) ?? new Set<string>();
            set.add(local);
            fromImports.set(spec, set);
          } else needed.add(local);
        }
      } else {
        keepWhole(s);
      }
    }
  }
  // `export * from "./x"` in a module whose needed exports are not all its own
  if (exportsNeeded.size) {
    for (const s of reExports) {
      const spec = (s.moduleSpecifier as ts.StringLiteral).text;
      if (!spec.startsWith(".")) continue;
      keep.push([s.getStart(sf), s.getEnd()]);
      const set = fromImports.get(spec) ?? new Set<string>();
      for (const n of exportsNeeded) set.add(n);
      fromImports.set(spec, set);
    }
  }
  return { keep, needed, fromImports };
}

/** `text` with every character outside `keep` blank; a gap becomes its newlines and the spaces of its last line. */
export function keptText(text: string, keep: readonly (readonly [number, number])[]): string {
  const ranges = [...keep].filter(([a, b]) => b > a).sort((x, y) => x[0] - y[0]);
  let out = "", at = 0;
  const gap = (to: number) => {
    if (to <= at) return;
    const g = text.slice(at, to);
    const lines = g.split("\n");
    out += "\n".repeat(lines.length - 1) + " ".repeat(lines[lines.length - 1].length);
  };
  for (const [a, b] of ranges) {
    if (b <= at) continue;
    gap(a);
    out += text.slice(Math.max(a, at), b);
    at = b;
  }
  return out.replace(/\s+$/, (t) => t.replace(/[^\n]/g, ""));
}

/**
 * The files a kernel module ships: [0] the module itself (its kernels `roots` and what they
 * need), then every relatively imported module in the part its kernels fold.
 */
export function captureModule(file: string, text: string, sf: ts.SourceFile, roots: readonly ts.Node[], root: string): CapturedFile[] {
  const out: { name: string; text: string; imports: Record<string, number> }[] = [];
  const index = new Map<string, number>(); // file + needed names → index
  const visit = (f: string, fText: string, fSf: ts.SourceFile, fRoots: readonly ts.Node[], exportsNeeded: ReadonlySet<string>, depth: number): number => {
    const key = `${f}\0${[...exportsNeeded].sort().join(",")}`;
    const hit = index.get(key);
    if (hit !== undefined) return hit;
    const i = out.length;
    const p = plan(fSf, fRoots, exportsNeeded);
    const me = { name: displayName(f, root), text: keptText(fText, p.keep), imports: {} as Record<string, number> };
    out.push(me);
    index.set(key, i);
    if (depth >= 8) return i;
    for (const [spec, names] of p.fromImports) {
      if (!names.size) continue;
      const g = resolveRelative(f, spec);
      if (!g) continue;
      let gText: string;
      try { gText = readFileSync(g, "utf8"); } catch { continue; }
      const gSf = parseTypeScript(g, gText);
      me.imports[spec] = visit(g, gText, gSf, [], names, depth + 1);
    }
    return i;
  };
  visit(file, text, sf, roots, new Set(), 0);
  return out;
}

// The rooms of src/ (ARCHITECTURE.md) and the imports each may make. A file's room is its
// first folder under src/; files directly in src/ are the top room (jit, compile, cache,
// the package entry points), which may import every room. Imports are read with the
// TypeScript compiler's pre-processor (static imports, re-exports, `import type`, dynamic
// `import("…")`, `import type`): a type-only import counts for the direction (rooms import one
// way in types as well) but not for cycles (it does not exist at run time).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";

/** Room -> the rooms it may import (besides itself). */
export const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  ir: [],
  dsl: ["ir"],
  passes: ["ir"],
  artifact: ["ir"],
  codegen: ["ir", "passes", "artifact"],
  targets: ["ir", "passes", "codegen", "artifact"],
  runtime: ["ir", "artifact", "targets"],
  tools: ["ir", "artifact"],
  distributed: ["ir", "artifact", "targets", "runtime"],
  // the browser build's replacements of Node built-ins (scripts/build-browser.mjs maps them): no tspto room
  browser: [],
  // the build plugins (tspto/vite, tspto/rollup, tspto/esbuild): the front end, at build time in Node
  plugin: ["ir", "dsl"],
  top: ["ir", "dsl", "passes", "artifact", "codegen", "targets", "runtime", "tools", "distributed"],
};

export interface Violation { readonly kind: "backward" | "unknown-room" | "cycle"; readonly message: string }

/** Every .ts file under `dir` (relative paths with "/"), with its text. */
export function readTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.[cm]?ts$/.test(name) && !name.endsWith(".d.ts")) out.set(relative(dir, p).split(sep).join("/"), readFileSync(p, "utf8"));
    }
  };
  walk(dir);
  return out;
}

export function roomOf(file: string): string {
  const i = file.indexOf("/");
  return i < 0 ? "top" : file.slice(0, i);
}

export interface Import { readonly file: string; readonly typeOnly: boolean }

/** The files under the tree that `file` imports (relative specifiers only; .js -> .ts), and whether only types. */
export function importsOf(file: string, text: string, files: ReadonlySet<string>): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    if (!spec.startsWith(".")) return;
    const stem = resolve("/", dirname(file), spec).slice(1).replace(/\.[cm]?[jt]s$/, "");
    const cand = [`${stem}.ts`, `${stem}/index.ts`, `${stem}.mts`].find((c) => files.has(c));
    if (cand) out.push({ file: cand, typeOnly });
  };
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const typeOnly = !!c && (c.isTypeOnly || (!c.name && !!c.namedBindings && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(n.moduleSpecifier.text, typeOnly);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      const typeOnly = n.isTypeOnly || (!!n.exportClause && ts.isNamedExports(n.exportClause) && n.exportClause.elements.length > 0 && n.exportClause.elements.every((e) => e.isTypeOnly));
      add(n.moduleSpecifier.text, typeOnly);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) {
      add(n.arguments[0].text, false);
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      add(n.argument.literal.text, true);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** Backward imports between rooms, files in no known room, and import cycles between files. */
export function checkRooms(tree: ReadonlyMap<string, string>): Violation[] {
  const files = new Set(tree.keys());
  const graph = new Map<string, string[]>();
  const out: Violation[] = [];
  for (const [file, text] of tree) {
    const from = roomOf(file);
    if (!(from in ALLOWED)) { out.push({ kind: "unknown-room", message: `src/${file}: room '${from}' is not in the room table (test/architecture/rooms.ts)` }); continue; }
    const deps = importsOf(file, text, files);
    // a cycle through type-only imports does not exist at run time
    graph.set(file, deps.filter((d) => !d.typeOnly).map((d) => d.file));
    for (const { file: dep } of deps) {
      const to = roomOf(dep);
      if (to !== from && !ALLOWED[from].includes(to)) {
        out.push({ kind: "backward", message: `src/${file} (room ${from}) imports src/${dep} (room ${to}); ${from} may import only ${ALLOWED[from].join(", ") || "nothing"}` });
      }
    }
  }
  // cycles: depth-first search with colours; each cycle reported once by its smallest member
  const colour = new Map<string, 0 | 1 | 2>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const visit = (f: string) => {
    colour.set(f, 1);
    stack.push(f);
    for (const d of graph.get(f) ?? []) {
      const c = colour.get(d) ?? 0;
      if (c === 0) visit(d);
      else if (c === 1) {
        const cyc = stack.slice(stack.indexOf(d));
        const k = [...cyc].sort()[0];
        const rot = [...cyc.slice(cyc.indexOf(k)), ...cyc.slice(0, cyc.indexOf(k))];
        const key = rot.join(" -> ");
        if (!seen.has(key)) { seen.add(key); out.push({ kind: "cycle", message: `import cycle: ${[...rot, rot[0]].map((x) => `src/${x}`).join(" -> ")}` }); }
      }
    }
    stack.pop();
    colour.set(f, 2);
  };
  for (const f of [...graph.keys()].sort()) if (!colour.get(f)) visit(f);
  return out;
}

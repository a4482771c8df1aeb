// The webgpu target's device and its code generator are what a browser build loads
// (ARCHITECTURE.md: two builds of one package): from them no import may reach a Node built-in.
// Dawn, the file system and the artifact writer sit in src/targets/webgpu/node.ts and build.ts.
// The test follows every runtime import (type-only ones do not load) from those entry points.
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));
const BUILTIN = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
/** Known edges (none now: the IR's error formatter finds Node's fs through process.getBuiltinModule). */
const KNOWN = new Set<string>();

/** Runtime imports of a file: relative ones resolved to .ts paths, the others as written. */
function importsOf(file: string): { local: string[]; bare: string[] } {
  const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const local: string[] = [], bare: string[] = [];
  const add = (spec: string) => {
    if (!spec.startsWith(".")) { bare.push(spec); return; }
    const stem = resolve(dirname(file), spec).replace(/\.[cm]?js$/, "");
    local.push(stem.endsWith(".ts") ? stem : `${stem}.ts`);
  };
  const visit = (n: ts.Node) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const typeOnly = !!c && (c.isTypeOnly || (!c.name && !!c.namedBindings && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) add(n.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier) && !n.isTypeOnly) {
      add(n.moduleSpecifier.text);
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) {
      add(n.arguments[0].text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return { local, bare };
}

/** Every Node built-in reachable from `entry`, with the import chain that reaches it. */
function builtinsFrom(entry: string): string[] {
  const seen = new Map<string, string[]>();
  const out: string[] = [];
  const walk = (file: string, chain: string[]) => {
    if (seen.has(file)) return;
    seen.set(file, chain);
    let imp: ReturnType<typeof importsOf>;
    try { imp = importsOf(file); } catch { imp = importsOf(file.replace(/\.ts$/, "/index.ts")); }
    for (const b of imp.bare) {
      if (BUILTIN.has(b) && !KNOWN.has(`${relative(SRC, file)} -> ${b}`)) out.push(`${[...chain, file].map((f) => relative(SRC, f)).join(" -> ")} -> ${b}`);
    }
    for (const l of imp.local) walk(l, [...chain, file]);
  };
  walk(entry, []);
  return out;
}

describe("what a browser build of the webgpu platform loads", () => {
  it("reaches no Node built-in from the device, the orchestration, the WGSL code generator, the browser host and the browser entry (src/browser.ts)", () => {
    for (const entry of ["targets/webgpu/device.ts", "targets/webgpu/orchestrate.ts", "codegen/wgsl/index.ts", "targets/webgpu/browser.ts", "browser.ts"]) {
      expect(builtinsFrom(join(SRC, entry)), entry).toEqual([]);
    }
  });
  it("the node-only modules are where Dawn and the files are (the check sees them)", () => {
    expect(builtinsFrom(join(SRC, "targets/webgpu/node.ts")).some((c) => c.endsWith("node:fs"))).toBe(true);
  });
});

describe("the package's browser build (scripts/build-browser.mjs: the \"browser\" export condition of tspto and tspto/language)", () => {
  it("bundles for the browser with no Node built-in on any path, and without the cpu/cuda targets, the native addon or MPI", async () => {
    const { build } = await import("esbuild");
    const { browserOptions, BROWSER_ENTRIES } = (await import("../../scripts/build-browser.mjs")) as {
      browserOptions(extra: object): object; BROWSER_ENTRIES: Record<string, string>;
    };
    const r = await build({ ...browserOptions({ entryPoints: BROWSER_ENTRIES, splitting: true, outdir: "/tmp/unused", write: false, metafile: true }) } as Parameters<typeof build>[0]) as { metafile: { inputs: Record<string, { imports: { path: string; external?: boolean }[] }> } };
    const inputs = Object.keys(r.metafile.inputs).map((f) => f.replace(/\\/g, "/"));
    // every import was resolved inside the bundle (a built-in without a browser replacement fails the build), typescript aside
    const external = Object.values(r.metafile.inputs).flatMap((i) => i.imports.filter((x) => x.external && !x.path.startsWith(".") && !x.path.startsWith("/")).map((x) => x.path));
    expect([...new Set(external)]).toEqual(["typescript"]);
    expect(inputs.filter((f) => /^node:|^(fs|path|os|crypto|child_process)$/.test(f))).toEqual([]);
    for (const nodeOnly of ["src/targets/cpu/", "src/targets/cuda/", "src/targets/native.ts", "src/distributed/", "src/targets/webgpu/node.ts", "src/version.ts"]) {
      expect(inputs.filter((f) => f.includes(nodeOnly)), nodeOnly).toEqual([]);
    }
    for (const wanted of ["src/targets/webgpu/device.ts", "src/targets/interp/index.ts", "src/passes/manager.ts", "src/dsl/parser.ts", "src/runtime/worker.ts", "src/runtime/benchmark.ts", "src/runtime/dfx.ts", "src/browser/node/fs.ts"]) {
      expect(inputs.some((f) => f.endsWith(wanted)), wanted).toBe(true);
    }
  }, 120_000);
});

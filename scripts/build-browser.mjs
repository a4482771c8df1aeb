// tspto's browser build (the package's "browser" export condition): dist/browser/, bundled from
// src/ by esbuild for the browser, ES modules split into shared chunks so that `tspto`,
// `tspto/language` and `tspto/capture` share one copy of the kernel registry.
//  - A module X.ts with a sibling X.browser.ts is replaced by it (the platform registry without
//    cpu/cuda, the webgpu host over navigator.gpu, the package root and version without files).
//  - Node's built-ins are replaced by src/browser/node/*.ts: an in-memory volume for the files
//    tspto writes (artifacts, the jit cache, DFX traces), POSIX paths, a synchronous sha256, ...
//    A built-in without a replacement fails the build, naming the import chain.
//  - `lru-cache` is src/browser/lru-cache.ts (the jit needs a bounded Map, not the package).
//  - `typescript` stays an import (the application's bundler resolves it; the build plugins
//    replace it with a stub when every kernel is precompiled).
// Usage: node scripts/build-browser.mjs [outdir]   (npm run build runs it)
import { existsSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SHIMS = join(ROOT, "src", "browser", "node");
const BUILTIN = new Set(builtinModules);

/** The esbuild plugin that makes the browser graph (exported for the size bench and the tests). */
export function browserGraph() {
  return {
    name: "tspto-browser",
    setup(b) {
      b.onResolve({ filter: /.*/ }, (a) => {
        const bare = a.path.replace(/^node:/, "");
        if (a.path.startsWith("node:") || (BUILTIN.has(bare) && !a.path.startsWith("."))) {
          const shim = join(SHIMS, `${bare}.ts`);
          if (existsSync(shim)) return { path: shim };
          return { errors: [{ text: `Node built-in '${a.path}' imported by ${a.importer} has no browser replacement in src/browser/node/` }] };
        }
        if (a.path === "lru-cache") return { path: join(ROOT, "src", "browser", "lru-cache.ts") };
        if (!a.path.startsWith(".") || !a.importer.startsWith(join(ROOT, "src"))) return undefined;
        const stem = resolve(a.resolveDir, a.path).replace(/\.js$/, "");
        for (const cand of [`${stem}.browser.ts`, `${stem}/index.browser.ts`]) {
          if (existsSync(cand) && cand !== a.importer) return { path: cand };
        }
        return undefined;
      });
    },
  };
}

export function browserOptions(extra = {}) {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  return {
    bundle: true, platform: "browser", format: "esm", target: "es2022", logLevel: "error",
    plugins: [browserGraph()],
    inject: [join(SHIMS, "process.ts")],
    external: ["typescript"],
    define: { __TSPTO_VERSION__: JSON.stringify(pkg.version), __TSPTO_BUILD__: JSON.stringify(`${pkg.version}-browser`) },
    ...extra,
  };
}

export const BROWSER_ENTRIES = { index: join(ROOT, "src", "index.browser.ts"), language: join(ROOT, "src", "language.ts"), capture: join(ROOT, "src", "capture.browser.ts") };

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { build } = await import("esbuild");
  const outdir = resolve(process.argv[2] ?? join(ROOT, "dist", "browser"));
  await build(browserOptions({ entryPoints: BROWSER_ENTRIES, outdir, splitting: true, sourcemap: true, chunkNames: "chunks/[name]-[hash]" }));
  console.log(`tspto browser build: ${outdir}`);
}

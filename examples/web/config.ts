// The demo's vite configuration (examples/web/vite.config.ts and examples/web/run.ts use it).
// What a user's app needs is the plugin line: `plugins: [tspto()]`. The aliases are for this
// repository only, where `tspto` is the package itself (an app gets it from node_modules, whose
// "browser" export condition selects dist/browser).
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import tspto, { type TsptoPluginOptions } from "tspto/vite";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..", "..");

export function demoConfig(opts: { browserDist?: string; plugin?: TsptoPluginOptions; outDir?: string } = {}) {
  const dist = opts.browserDist ?? join(ROOT, "dist", "browser");
  return {
    root: HERE,
    logLevel: "warn" as const,
    plugins: [tspto(opts.plugin)],
    resolve: {
      alias: [
        { find: /^tspto$/, replacement: join(dist, "index.js") },
        { find: /^tspto\/language$/, replacement: join(dist, "language.js") },
        { find: /^tspto\/capture$/, replacement: join(dist, "capture.js") },
        // the run-time parser: tspto's own dependency (an app's node_modules has it next to tspto)
        ...(opts.plugin?.parser ? [{ find: /^typescript$/, replacement: join(ROOT, "node_modules", "typescript", "lib", "typescript.js") }] : []),
      ],
    },
    build: { outDir: opts.outDir ?? join(HERE, "dist"), emptyOutDir: true, target: "es2022", reportCompressedSize: false },
    server: { host: "127.0.0.1" },
  };
}

// `tspto/esbuild`: the tspto build plugin for esbuild (`plugins: [tspto()]`); see ./core.ts.
import { readFile } from "node:fs/promises";
import { NO_PARSER_CODE, isTsptoBrowserBuild, transformKernels, type TsptoPluginOptions } from "./core.js";

export type { TsptoPluginOptions };

type Loader = "ts" | "tsx" | "js" | "jsx";
interface EsbuildBuild {
  onResolve(o: { filter: RegExp }, cb: (a: { path: string; importer: string }) => { path: string; namespace: string } | undefined): void;
  onLoad(o: { filter: RegExp; namespace?: string }, cb: (a: { path: string }) => Promise<{ contents: string; loader: Loader } | undefined> | { contents: string; loader: Loader } | undefined): void;
}

export default function tspto(opts: TsptoPluginOptions = {}): { name: string; setup(b: EsbuildBuild): void } {
  return {
    name: "tspto",
    setup(b) {
      if (!opts.parser) {
        b.onResolve({ filter: /^typescript$/ }, (a) => (isTsptoBrowserBuild(a.importer) ? { path: "typescript", namespace: "tspto-no-parser" } : undefined));
        b.onLoad({ filter: /.*/, namespace: "tspto-no-parser" }, () => ({ contents: NO_PARSER_CODE, loader: "js" }));
      }
      b.onLoad({ filter: /\.(?:[cm]?[jt]sx?)$/ }, async (a) => {
        if (/[\\/]node_modules[\\/]/.test(a.path)) return undefined;
        const code = await readFile(a.path, "utf8");
        const r = transformKernels(code, a.path, opts);
        if (!r) return undefined;
        const ext = a.path.slice(a.path.lastIndexOf(".") + 1);
        const loader: Loader = /^[cm]?ts$/.test(ext) ? "ts" : ext === "tsx" ? "tsx" : ext === "jsx" ? "jsx" : "js";
        return { contents: r.code, loader };
      });
    },
  };
}

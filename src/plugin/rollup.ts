// `tspto/rollup`: the tspto build plugin for rollup (and anything taking rollup plugins); see ./core.ts.
import { NO_PARSER_CODE, NO_PARSER_ID, isTsptoBrowserBuild, transformKernels, type TsptoPluginOptions } from "./core.js";

export type { TsptoPluginOptions };

export interface RollupLikePlugin {
  name: string;
  enforce?: "pre";
  resolveId(id: string, importer?: string): string | null;
  load(id: string): string | null;
  transform(code: string, id: string): { code: string; map: null } | null;
}

/** The plugin object shared by the rollup and vite adapters. */
export function rollupPlugin(opts: TsptoPluginOptions = {}): RollupLikePlugin {
  return {
    name: "tspto",
    resolveId(id, importer) {
      return id === "typescript" && !opts.parser && isTsptoBrowserBuild(importer) ? NO_PARSER_ID : null;
    },
    load(id) {
      return id === NO_PARSER_ID ? NO_PARSER_CODE : null;
    },
    transform(code, id) {
      const r = transformKernels(code, id, opts);
      return r ? { code: r.code, map: null } : null;
    },
  };
}

export default function tspto(opts: TsptoPluginOptions = {}): RollupLikePlugin {
  return rollupPlugin(opts);
}

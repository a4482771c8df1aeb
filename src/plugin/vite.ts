// `tspto/vite`: the tspto build plugin for vite (`plugins: [tspto()]` in vite.config); see ./core.ts.
// It runs before vite's own TypeScript transform, so kernels are read with their types.
import { rollupPlugin, type RollupLikePlugin } from "./rollup.js";
import type { TsptoPluginOptions } from "./core.js";

export type { TsptoPluginOptions };

export default function tspto(opts: TsptoPluginOptions = {}): RollupLikePlugin & { enforce: "pre" } {
  return { ...rollupPlugin(opts), enforce: "pre" };
}

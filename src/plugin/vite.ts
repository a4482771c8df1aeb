// `tspto/vite`: the tspto build plugin for vite (`plugins: [tspto()]` in vite.config); see ./core.ts.
// It runs before vite's own TypeScript transform, so kernels are read with their types; source
// names are relative to vite's root unless opts.root says otherwise.
import { rollupPlugin, type RollupLikePlugin } from "./rollup.js";
import type { TsptoPluginOptions } from "./core.js";

export type { TsptoPluginOptions };

export default function tspto(opts: TsptoPluginOptions = {}): RollupLikePlugin & { enforce: "pre"; configResolved(c: { root: string }): void } {
  let root = opts.root;
  const inner = rollupPlugin({ ...opts, get root() { return root; } });
  return { ...inner, enforce: "pre", configResolved(c) { root ??= c.root; } };
}

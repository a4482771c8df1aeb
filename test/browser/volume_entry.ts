// The page-side half of test/browser/volume.test.ts, bundled for the browser (scripts/build-browser.mjs's
// graph: node:fs is the page's in-memory volume) and run in Node: compile many specializations of one
// kernel on interp, count what the volume holds, clear the jit's cache, count again.
import { pl, randn, RunConfig, zeros } from "../../src/index.browser.js";
import { readdirSync, statSync } from "node:fs";

function count(dir: string): { files: number; bytes: number } {
  let files = 0, bytes = 0;
  for (const name of readdirSync(dir)) {
    const p = dir === "/" ? `/${name}` : `${dir}/${name}`;
    const st = statSync(p);
    if (st.isDirectory()) { const c = count(p); files += c.files; bytes += c.bytes; } else { files++; bytes += st.size; }
  }
  return { files, bytes };
}

const k = pl.jit(function twice(x, out) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, 2)); });
});
const cfg = new RunConfig({ platform: "interp" });
const n = Number(process.argv[2] ?? 300);
const ms: number[] = [];
for (let i = 1; i <= n; i++) {
  const t = performance.now();
  k(randn([2, i], { seed: i }), zeros([2, i]), cfg);
  ms.push(performance.now() - t);
}
const held = count("/");
const cached = k.cacheSize;
k.clearCache();
const avg = (a: number[]) => a.reduce((s, x) => s + x, 0) / a.length;
console.log(`VOLUME ${JSON.stringify({ held, cached, cleared: count("/"), firstMs: avg(ms.slice(0, 50)), lastMs: avg(ms.slice(-50)) })}`);

// Child process of the compile benchmark (bench/run.ts), the package as an application runs
// it: plain Node, tspto from dist/ (npm run build), the quickstart kernel in plain JavaScript.
// Prints one JSON line: milliseconds from process start to the end of the import, and of the
// first call. TSPTO_CACHE_DIR comes from the parent (the second run of a directory is a hit).
const t0 = performance.now();
const { pl, randn, zeros } = await import("../dist/index.js");
const t1 = performance.now();
const ROWS = 128, COLS = 128;
const addKernel = pl.jit(function addKernel(a, b, out) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});
const A = randn([ROWS, COLS], { seed: 0 }), B = randn([ROWS, COLS], { seed: 1 });
const out = zeros([ROWS, COLS]);
const t2 = performance.now();
addKernel(A, B, out);
const t3 = performance.now();
const ok = out.data[5] === Math.fround(A.data[5] + B.data[5]);
const { createRequire } = await import("node:module");
const tsLoaded = Object.keys(createRequire(import.meta.url).cache).some((k) => /[\\/]typescript[\\/]lib[\\/]typescript\.js$/.test(k));
console.log(JSON.stringify({ startMs: t0, importMs: t1 - t0, firstCallMs: t3 - t2, toResultMs: t3, ok, tsLoaded }));

// Child process of the compile benchmark (bench/run.ts): the quickstart kernel's first call
// in a fresh process. Prints one JSON line: the first call's milliseconds (from the call to
// the result) and the process's time before it (start-up and imports). TSPTO_CACHE_DIR /
// TSPTO_LOG come from the parent.
import { pl, randn, zeros } from "tspto";

const t0 = 0; // performance.now() counts from the process's start
const ROWS = 128, COLS = 128;

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const ta = pl.load(a, [0, 0], [ROWS, COLS]);
    const tb = pl.load(b, [0, 0], [ROWS, COLS]);
    pl.store(pl.add(ta, tb), [0, 0], out);
  });
  return out;
});

const A = randn([ROWS, COLS], { seed: 0 }), B = randn([ROWS, COLS], { seed: 1 });
const out = zeros([ROWS, COLS]);
const t1 = performance.now();
addKernel(A, B, out);
const t2 = performance.now();
const ok = (out.data as Float32Array)[5] === Math.fround((A.data as Float32Array)[5] + (B.data as Float32Array)[5]);
console.log(JSON.stringify({ importMs: t1 - t0, firstCallMs: t2 - t1, ok }));

// The precompiled application's process (bench/run.ts, 5g): its first call, timed from the call to
// the result, with TSPTO_CACHE_DIR at the folder `tspto precompile` filled (and CXX at a failing
// compiler: nothing may be compiled). Prints one JSON line.
import { randn, zeros } from "tspto";
import { typescriptLoaded } from "../../src/dsl/typescript.js";
import { addKernel } from "./kernels.js";

const A = randn([128, 128], { seed: 0 }), B = randn([128, 128], { seed: 1 }), out = zeros([128, 128]);
const t0 = performance.now();
addKernel(A, B, out);
const t1 = performance.now();
const ok = (out.data as Float32Array)[5] === Math.fround((A.data as Float32Array)[5] + (B.data as Float32Array)[5]);
console.log(JSON.stringify({ firstResultMs: t1 - t0, beforeMs: t0, ok, tsLoaded: typescriptLoaded() }));

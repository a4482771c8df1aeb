// Child process of the GPT-2 cold-compile row (bench/gpt2/bench.ts): compiles GPT-2 small's
// programs in a fresh process (TSPTO_CACHE_DIR=off from the parent) and prints
// { compileMs } as one JSON line.
import { RunConfig } from "tspto";
import { GPT2_SMALL } from "../../examples/gpt2/weights.js";
import { compilePrograms } from "../../examples/gpt2/model.js";

const t0 = performance.now();
compilePrograms(GPT2_SMALL, new RunConfig({ platform: "cpu" }));
console.log(JSON.stringify({ compileMs: performance.now() - t0 }));

// Child process of the GPT-2 cold-compile row (bench/gpt2/bench.ts): compiles GPT-2 small's
// programs in a fresh process (an empty TSPTO_CACHE_DIR from the parent) as the CLI does
// (GPT2Model.create: the four programs' C++ compiles at the same time) and prints { compileMs }
// as one JSON line.
import { RunConfig } from "tspto";
import { GPT2_SMALL } from "../../examples/gpt2/weights.js";
import { compileProgramsAsync } from "../../examples/gpt2/model.js";

const t0 = performance.now();
await compileProgramsAsync(GPT2_SMALL, new RunConfig({ platform: "cpu" }));
console.log(JSON.stringify({ compileMs: performance.now() - t0 }));

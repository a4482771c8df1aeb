// Compiles one rank's programs of a GPT-2 shape for a `tp`-way run into the disk cache
// ($TSPTO_CACHE_DIR), in a child so the test worker's event loop stays free
// (gpt2_fixture.ts precompile).
//   node --import tsx test/examples/gpt2_precompile_child.ts CONFIG_JSON TP VOCAB_ROWS...
import { RunConfig } from "tspto";
import { compilePrograms } from "../../examples/gpt2/model.js";

const [config, tp, ...rows] = process.argv.slice(2);
for (const r of rows) compilePrograms(JSON.parse(config), new RunConfig({ platform: "cpu" }), Number(tp), Number(r));

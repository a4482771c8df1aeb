// Write synthetic DFX outputs of a tiled program (docs/dfx-formats.md) into <dir>/dfx_outputs/,
// e.g. to try the views or to regenerate docs/swimlane.png:
//   npx tsx test/tools/write_synthetic.ts /tmp/tiled_mlp --cores 2 --tiles 6
//   npx tspto inspect /tmp/tiled_mlp --trace
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { depsJson, synthesize, traceJson } from "./synthetic.js";

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const dir = args.find((a, i) => !a.startsWith("--") && !(i > 0 && args[i - 1].startsWith("--")));
if (!dir) {
  console.error("usage: tsx test/tools/write_synthetic.ts <dir> [--cores N] [--tiles N] [--seed N]");
  process.exit(2);
}
const cores = opt("cores", 2);
const tasks = synthesize({ cores, tiles: opt("tiles", 6), reduce: true, seed: opt("seed", 7) });
const out = join(resolve(dir), "dfx_outputs");
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "swimlane.json"), `${JSON.stringify(traceJson(tasks, cores), null, 1)}\n`);
writeFileSync(join(out, "deps.json"), `${JSON.stringify(depsJson(tasks), null, 1)}\n`);
console.log(`${tasks.length} tasks on ${cores} cores -> ${out}/{swimlane,deps}.json`);

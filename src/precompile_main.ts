// The process `tspto precompile` runs (src/tools/cli.ts): imports the application's modules
// and compiles their kernels (src/precompile.ts). argv[2] is the options as JSON, among them
// `tspto`: the tspto module the application imports (its kernels register with that copy, so
// precompile must be that copy's); progress goes to stderr, the records as one JSON line to stdout.
import type { precompile as Precompile } from "./precompile.js";

const o = JSON.parse(process.argv[2] ?? "{}") as { tspto?: string; entries: string[]; out?: string; shapes?: string; platform?: string };
const { precompile } = (o.tspto ? await import(o.tspto) : await import("./precompile.js")) as { precompile: typeof Precompile };
const records = await precompile(o.entries, { out: o.out, shapes: o.shapes, platform: o.platform, log: (l) => process.stderr.write(`tspto precompile: ${l}\n`) });
process.stdout.write(`${JSON.stringify(records)}\n`);

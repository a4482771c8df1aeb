// Child-process entry of the API-misuse fuzzer: `tsx test/fuzz/misuse_main.ts <seed> <calls>`
// prints one JSON MisuseReport line (prefixed "MISUSE_REPORT ") and exits 0; a crash or a hang
// is seen by the parent as such.
import { runMisuse } from "./misuse.js";

const seed = Number(process.argv[2] ?? 1);
const calls = Number(process.argv[3] ?? 1000);
const report = await runMisuse(seed, calls);
process.stdout.write(`MISUSE_REPORT ${JSON.stringify(report)}\n`);

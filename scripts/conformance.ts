// The ONNX conformance suite outside vitest: runs every ONNX backend node test (Debian's
// libonnx-testdata) through tspto kernels on cpu and interp and prints the counts;
// `--write` regenerates the table of docs/conformance.md (test/conformance/onnx.test.ts
// checks that it is current).
//   npx tsx scripts/conformance.ts [--write] [--filter REGEX] [--platforms cpu,interp]
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ONNX_NODE_DIR, cleanupOnnx, runOnnxNodeTests } from "../test/conformance/onnx_runner.js";
import { conformanceTable, withTable } from "../test/conformance/onnx_report.js";

const arg = (name: string) => { const i = process.argv.indexOf(`--${name}`); return i >= 0 ? process.argv[i + 1] : undefined; };
if (!existsSync(ONNX_NODE_DIR)) {
  console.log(`${ONNX_NODE_DIR} not found: install Debian's libonnx-testdata (apt-get install libonnx-testdata)`);
  process.exit(2);
}
const platforms = (arg("platforms") ?? "cpu,interp").split(",");
const filter = arg("filter") ? new RegExp(arg("filter")!) : undefined;
const t0 = Date.now();
const results = await runOnnxNodeTests(platforms, filter ? (n) => filter.test(n) : undefined);
cleanupOnnx();
for (const r of results) if (r.status === "fail") console.log(`FAIL ${r.name} (${r.op}): ${r.reason}`);
const n = (s: string) => results.filter((r) => r.status === s).length;
console.log(`${results.length} cases: ${n("pass")} pass on ${platforms.join(" and ")}, ${n("skip")} skipped, ${n("fail")} fail (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
if (process.argv.includes("--write")) {
  if (filter || platforms.join() !== "cpu,interp") { console.log("--write needs the whole suite on cpu,interp"); process.exit(2); }
  const doc = fileURLToPath(new URL("../docs/conformance.md", import.meta.url));
  writeFileSync(doc, withTable(readFileSync(doc, "utf8"), conformanceTable(results, platforms)));
  console.log(`wrote ${doc}`);
}
process.exit(n("fail") ? 1 : 0);

// The ONNX conformance run of test/conformance/onnx.test.ts, in a child process: its kernels
// compile batches of 40 cases synchronously (a C++ compile each), which would block the vitest
// worker's event loop for longer than vitest's worker RPC waits (60 s) on a busy machine.
//   node --import tsx test/conformance/onnx_child.ts OUT.json cpu,interp
import { writeFileSync } from "node:fs";
import { cleanupOnnx, runOnnxNodeTests } from "./onnx_runner.js";

const [out, platforms] = process.argv.slice(2);
try {
  writeFileSync(out, JSON.stringify(await runOnnxNodeTests(platforms.split(","))));
} finally {
  cleanupOnnx();
}

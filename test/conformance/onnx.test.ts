// The ONNX backend node tests (Debian's libonnx-testdata, ONNX 1.12) through tspto kernels on
// cpu and interp: every case tspto can express passes; the others are skipped with their
// reasons; the per-op table of docs/conformance.md is this run's. Skipped (with a message)
// where the package is not installed.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ONNX_NODE_DIR, cleanupOnnx, runOnnxNodeTests, type CaseResult } from "./onnx_runner.js";
import { conformanceTable, documentedTable } from "./onnx_report.js";

const have = existsSync(ONNX_NODE_DIR);
if (!have) console.log(`ONNX conformance suite skipped: ${ONNX_NODE_DIR} not found (install Debian's libonnx-testdata: apt-get install libonnx-testdata; .ci/run does)`);
const PLATFORMS = ["cpu", "interp"] as const;

describe.skipIf(!have)("ONNX backend node tests through tspto kernels (cpu, interp)", () => {
  let results: CaseResult[] = [];
  beforeAll(async () => { results = await runOnnxNodeTests(PLATFORMS); }, 1_500_000);
  afterAll(() => cleanupOnnx());

  it("every case tspto expresses passes on every platform", () => {
    expect(results.length).toBeGreaterThan(900);
    expect(results.filter((r) => r.status === "fail").map((r) => `${r.name} (${r.op}): ${r.status === "fail" ? r.reason : ""}`)).toEqual([]);
  });

  it("the ops of the issue's list have passing cases", () => {
    const passing = new Set(results.filter((r) => r.status === "pass").map((r) => r.op));
    const want = ["Add", "Sub", "Mul", "Div", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Erf",
      "Sin", "Cos", "Pow", "Max", "Min", "Mod", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where", "Not", "And", "Or", "Xor", "BitShift",
      "Cast", "MatMul", "Gemm", "Softmax", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin", "Transpose", "Reshape", "Concat", "Slice", "Expand"];
    expect(want.filter((op) => !passing.has(op))).toEqual([]);
  });

  it("docs/conformance.md's table is this run's (regenerate: npx tsx scripts/conformance.ts --write)", () => {
    const doc = readFileSync(fileURLToPath(new URL("../../docs/conformance.md", import.meta.url)), "utf8");
    expect(documentedTable(doc)).toBe(conformanceTable(results, PLATFORMS));
  });
});

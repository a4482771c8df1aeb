// The ONNX backend node tests (Debian's libonnx-testdata, ONNX 1.12) through tspto kernels on
// cpu and interp: every case tspto can express passes; the others are skipped with their
// reasons; the per-op table of docs/conformance.md is this run's. Skipped (with a message)
// where the package is not installed.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { ONNX_NODE_DIR, type CaseResult } from "./onnx_runner.js";
import { conformanceTable, documentedTable } from "./onnx_report.js";

const have = existsSync(ONNX_NODE_DIR);
if (!have) console.log(`ONNX conformance suite skipped: ${ONNX_NODE_DIR} not found (install Debian's libonnx-testdata: apt-get install libonnx-testdata; .ci/run does)`);
const PLATFORMS = ["cpu", "interp"] as const;

describe.skipIf(!have)("ONNX backend node tests through tspto kernels (cpu, interp)", () => {
  let results: CaseResult[] = [];
  // in a child (onnx_child.ts): its batches compile synchronously, which must not block this worker
  beforeAll(async () => { results = await runInChild(PLATFORMS); }, 1_500_000);

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

function runInChild(platforms: readonly string[]): Promise<CaseResult[]> {
  const dir = mkdtempSync(join(tmpdir(), "tspto-onnx-")), out = join(dir, "results.json");
  const child = fileURLToPath(new URL("./onnx_child.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", child, out, platforms.join(",")], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    p.stderr.setEncoding("utf8").on("data", (d: string) => { stderr += d; });
    p.on("error", reject);
    p.on("close", (status) => {
      try {
        if (status !== 0) throw new Error(`the conformance run exited ${status}:\n${stderr.slice(-4000)}`);
        resolve(JSON.parse(readFileSync(out, "utf8")) as CaseResult[]);
      } catch (e) { reject(e); } finally { rmSync(dir, { recursive: true, force: true }); }
    });
  });
}

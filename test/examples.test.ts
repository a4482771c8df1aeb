// Every ported example (examples/*.ts exporting main(platform)) runs on cpu and on interp
// in-process; each checks its results against an independent JavaScript reference and
// throws on a mismatch. The test setup verifies every program between passes and
// round-trips it through asText() -> parse.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { join } from "node:path";
import { describe, it, expect } from "vitest";

const dir = fileURLToPath(new URL("../examples/", import.meta.url));
const ported = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && !f.startsWith("_"))
  .filter((f) => /export function main\(/.test(readFileSync(join(dir, f), "utf8")))
  .sort();

process.env.TSPTO_EXAMPLES_QUIET = "1";

describe("examples", () => {
  it("the PyPTO corpus is all here", () => {
    for (const name of ["hello_world", "elementwise", "scalar_ops", "activation", "matmul", "concat", "fused_linear", "softmax",
      "normalization", "matmul_acc", "assemble", "dyn_valid_shape", "task_graph", "vector_dag", "ffn", "control_flow", "transformer_block"]) {
      expect(ported).toContain(`${name}.ts`);
    }
  });
  for (const file of ported) {
    for (const platform of ["cpu", "interp"] as const) {
      // interp is the JavaScript reference: a dynamic [S, S] program's row tails (tiles of a whole
      // dynamic width, a guarded loop over the tile's extent per row) take minutes there
      // (dynamic_attention.ts at S = 200), past the default limit on a loaded 2-core machine
      it(`${file} on ${platform}`, async () => {
        const mod = (await import(pathToFileURL(join(dir, file)).href)) as { main: (p: string) => void | Promise<void> };
        await mod.main(platform);
      }, platform === "interp" ? 600_000 : undefined);
    }
  }
});

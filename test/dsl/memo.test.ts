// The front end's memo (src/dsl/memo.ts): a new process that calls a kernel found in the disk
// cache parses nothing and does not load the TypeScript compiler; a change in any source file
// the parse read (here: an imported constant) makes the next process parse and compile again.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function fixture(scale: number): { dir: string; script: string; cache: string } {
  const dir = mkdtempSync(join(ROOT, "test/dsl/fixtures/tmp-memo-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, "consts.ts"), `export const SCALE = ${scale};\n`);
  const script = join(dir, "script.ts");
  writeFileSync(script, [
    `import { pl, randn, zeros } from "../../../../src/index.js";`,
    `import { typescriptLoaded } from "../../../../src/dsl/typescript.js";`,
    `import { SCALE } from "./consts.js";`,
    `const k = pl.jit(function k(a: pl.Tensor, out: pl.Out<pl.Tensor>) {`,
    `  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.mul(pl.load(a, [0, 0], [8, 8]), SCALE), [0, 0], out); });`,
    `  return out;`,
    `});`,
    `const a = randn([8, 8], { seed: 11 }), out = zeros([8, 8]);`,
    `k(a, out);`,
    `const data = a.data as Float32Array;`,
    `console.log(JSON.stringify({ ratio: (out.data as Float32Array)[3] / data[3], ts: typescriptLoaded() }));`,
  ].join("\n"));
  return { dir, script, cache: join(dir, "cache") };
}

function run(script: string, cache: string): { ratio: number; ts: boolean; log: string } {
  const out = execFileSync(join(ROOT, "node_modules/.bin/tsx"), [script], {
    cwd: ROOT, encoding: "utf8", timeout: 90_000, env: { ...process.env, TSPTO_CACHE_DIR: cache, TSPTO_LOG: "recompiles" }, stdio: ["ignore", "pipe", "pipe"],
  });
  return JSON.parse(out.trim().split("\n").pop()!) as { ratio: number; ts: boolean; log: string };
}

describe("front-end memo across processes", () => {
  it("a disk-cache hit in a new process loads no TypeScript compiler; an edited imported const is seen", () => {
    const { dir, script, cache } = fixture(3);
    const first = run(script, cache);
    expect(first.ratio).toBeCloseTo(3, 5);
    expect(first.ts).toBe(true);                      // parsed: the compiler was loaded
    expect(readdirSync(join(cache, "front")).length).toBe(1);
    const second = run(script, cache);
    expect(second.ratio).toBeCloseTo(3, 5);
    expect(second.ts).toBe(false);                    // memo + disk cache: nothing parsed
    writeFileSync(join(dir, "consts.ts"), "export const SCALE = 5;\n");
    const third = run(script, cache);
    expect(third.ratio).toBeCloseTo(5, 5);            // the memo saw consts.ts change
    expect(third.ts).toBe(true);
  }, 180_000);
});

// The TypeScript compiler loaded through V8's code cache (src/artifact/code_cache.ts, installed by
// src/front_memo.ts): a first parse writes the cache into the private cache root, the next
// process's first parse uses it, and a cache V8 rejects (damaged) costs only the usual compile.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { runChild } from "../setup/child.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function run(dir: string, cache: string): Promise<{ cc: { hit: boolean; wrote: boolean } | null; ok: boolean }> {
  const script = join(dir, "parse.ts");
  writeFileSync(script, [
    `import { pl, randn, zeros } from "../../../src/index.js";`,
    `import { lastCodeCache } from "../../../src/artifact/index.js";`,
    // a new kernel text each run: the front end's memo never hits, so each process parses
    `const k = pl.jit(function k(a: pl.Tensor, out: pl.Out<pl.Tensor>) { pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, ${Math.random()})); }); return out; });`,
    `const a = randn([4, 4], { seed: 1 });`,
    `k.lower(a, zeros([4, 4]));`,
    `console.log(JSON.stringify({ cc: lastCodeCache, ok: true }));`,
  ].join("\n"));
  const r = await runChild(join(ROOT, "node_modules/.bin/tsx"), [script], { cwd: ROOT, timeout: 90_000, env: { ...process.env, TSPTO_CACHE_DIR: cache } });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

describe("the TypeScript compiler's code cache", () => {
  it("written by the first parse, used by the next process; a damaged one is rejected and rewritten", async () => {
    const dir = mkdtempSync(join(ROOT, "test/artifact/fixtures-tmp-cc-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const cache = join(dir, "cache");
    const first = await run(dir, cache);
    expect(first.cc).toMatchObject({ hit: false, wrote: true });
    const files = readdirSync(join(cache, "v8"));
    expect(files).toHaveLength(1);
    expect((await run(dir, cache)).cc).toMatchObject({ hit: true, wrote: false });
    writeFileSync(join(cache, "v8", files[0]), Buffer.alloc(4096, 7));   // not V8's data: rejected
    expect((await run(dir, cache)).cc).toMatchObject({ hit: false, wrote: true });
    expect((await run(dir, cache)).cc).toMatchObject({ hit: true, wrote: false });
  }, 180_000);
});

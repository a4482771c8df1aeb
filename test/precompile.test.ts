// tspto precompile (src/precompile.ts, the CLI in src/tools/cli.ts): an application's kernels
// compiled into a folder ahead of time; a fresh process pointed at it gets its first result with a
// C++ compiler that fails (CXX=/bin/false) and without loading the TypeScript compiler.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";
import { precompile } from "../src/precompile.js";
import { runChild } from "./setup/child.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules/.bin/tsx");

/** An application: lib/kernels.ts (two annotated entries, one that needs a shapes file) and main.ts calling them. */
function app(salt: number): { dir: string; kernels: string; main: string; out: string } {
  const dir = mkdtempSync(join(ROOT, "test/fixtures-tmp-precompile-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "lib"));
  const kernels = join(dir, "lib", "kernels.ts");
  writeFileSync(kernels, [
    `import { pl } from "../../../src/index.js";`,
    `export const addK = pl.jit(function addK(a: pl.Tensor<[64, 32], pl.FP32>, b: pl.Tensor<[64, 32], pl.FP32>, out: pl.Out<pl.Tensor<[64, 32], pl.FP32>>) {`,
    `  pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.add(pl.add(pl.load(a, [0, 0], [64, 32]), pl.load(b, [0, 0], [64, 32])), ${salt}), [0, 0], out); });`,
    `  return out;`,
    `});`,
    `export const rowsK = pl.jit(function rowsK(x: pl.Tensor<["S", 16], pl.FP32>, out: pl.Out<pl.Tensor<["S", 16], pl.FP32>>) {`,
    `  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, 2)); });`,
    `  return out;`,
    `});`,
    `export const scaleK = pl.jit(function scaleK(x: pl.Tensor, out: pl.Out<pl.Tensor>, k: number) {`,
    `  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.mul(x, k)); });`,
    `  return out;`,
    `});`,
  ].join("\n"));
  const main = join(dir, "main.ts");
  writeFileSync(main, [
    `import { randn, zeros } from "../../src/index.js";`,
    `import { typescriptLoaded } from "../../src/dsl/typescript.js";`,
    `import { addK, rowsK, scaleK } from "./lib/kernels.js";`,
    `const a = randn([64, 32], { seed: 1 }), b = randn([64, 32], { seed: 2 }), o = zeros([64, 32]);`,
    `addK(a, b, o);`,
    `const x = randn([5, 16], { seed: 3 }), y = zeros([5, 16]);`,
    `rowsK(x, y);`,
    `const z = zeros([4, 8]);`,
    `scaleK(randn([4, 8], { seed: 4 }), z, 3);`,
    `const ok = Math.abs((o.data as Float32Array)[7] - ((a.data as Float32Array)[7] + (b.data as Float32Array)[7] + ${salt})) < 1e-3 && (y.data as Float32Array)[9] === 2 * (x.data as Float32Array)[9];`,
    `console.log(JSON.stringify({ ok, ts: typescriptLoaded() }));`,
  ].join("\n"));
  return { dir, kernels, main, out: join(dir, "cache") };
}

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runChild(process.execPath, [join(ROOT, "bin/tspto.mjs"), ...args], { cwd: ROOT, timeout: 180_000, env: { ...process.env, ...env } });

describe("tspto precompile", () => {
  it("compiles the annotated entries and the shapes file's; the application then runs with a failing C++ compiler and no TypeScript parser", async () => {
    const a = app(Date.now() % 9973);
    const shapes = join(a.dir, "shapes.json");
    writeFileSync(shapes, JSON.stringify([{ kernel: "scaleK", args: [{ shape: [4, 8] }, { shape: [4, 8] }, 3] }]));
    const r = await cli(["precompile", a.kernels, "--out", a.out, "--shapes", shapes]);
    expect(r.stderr).toContain("precompiled addK");
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`tspto precompile: 3 kernel specializations in ${a.out}`);
    expect(r.stdout).not.toContain("skipped");
    const run = await runChild(TSX, [a.main], { cwd: ROOT, timeout: 90_000, env: { ...process.env, TSPTO_CACHE_DIR: a.out, CXX: "/bin/false" } });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split("\n").pop()!)).toEqual({ ok: true, ts: false });
  }, 240_000);

  it("says which entries it skipped and why; without the folder, a failing compiler fails the call (the run above used nothing else)", async () => {
    const a = app(Date.now() % 9973 + 0.5);
    const r = await cli(["precompile", join(a.dir, "lib"), "--out", a.out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("2 kernel specializations");
    expect(r.stdout).toContain(`skipped scaleK (${a.kernels}:10): parameters 'x', 'out', 'k' not fixed by an annotation (list its specializations in a shapes file)`);
    const bad = await runChild(TSX, [a.main], { cwd: ROOT, timeout: 90_000, env: { ...process.env, TSPTO_CACHE_DIR: a.out, CXX: "/bin/false" } });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("[E_CXX] C++ compilation of program 'scaleK' failed: '/bin/false' exited with code 1");
  }, 240_000);

  it("errors: no entry (usage), a missing entry, a shapes entry naming no kernel", async () => {
    const none = await cli(["precompile"]);
    expect(none.status).toBe(2);
    expect(none.stderr.split("\n")[0]).toBe("tspto: precompile: missing <entry|dir> (the application's modules)");
    const opt = await cli(["precompile", "x.ts", "--out"]);
    expect(opt.status).toBe(2);
    expect(opt.stderr.split("\n")[0]).toBe("tspto: precompile: --out needs a value");
    const a = app(1);
    await expect(precompile([join(a.dir, "nope.ts")], { out: a.out })).rejects.toThrow(`tspto precompile: ${join(a.dir, "nope.ts")} does not exist`);
    await expect(precompile([a.kernels], { out: a.out, shapes: [{ kernel: "noSuchKernel", args: [] }] }))
      .rejects.toThrow("tspto precompile: the shapes entry for 'noSuchKernel' matches 0 pl.jit entries of the modules imported");
    const badShapes = join(a.dir, "bad.json");
    writeFileSync(badShapes, "{ not json");
    await expect(precompile([a.kernels], { out: a.out, shapes: badShapes })).rejects.toThrow(`tspto precompile: cannot read the shapes file ${badShapes}`);
    expect(readdirSync(a.dir)).not.toContain("nope.ts");
  }, 120_000);
});

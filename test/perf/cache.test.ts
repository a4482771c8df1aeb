// The jit's disk cache (src/cache.ts) and call path: a second process finds the first's
// build and compiles nothing; a corrupt entry is detected and rebuilt; the directory is
// private; TSPTO_LOG=recompiles names what changed; the fast call path gives the same results.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { pl, randn, zeros, assertClose, RunConfig, CompiledProgram } from "tspto";
import { defaultWorker } from "../../src/runtime/worker.js";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixtures/cache_kernel.ts", import.meta.url));
const TSX = join(ROOT, "node_modules", ".bin", "tsx");

const dirs: string[] = [];
const fresh = (tag: string) => { const d = mkdtempSync(join(tmpdir(), `tspto-cache-${tag}-`)); dirs.push(d); return d; };
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

async function child(cacheDir: string, log = "recompiles"): Promise<{ out: string; err: string }> {
  const { stdout, stderr } = await run(TSX, [FIXTURE], {
    cwd: ROOT, env: { ...process.env, TSPTO_CACHE_DIR: cacheDir, TSPTO_LOG: log, TSPTO_ROUNDTRIP: "", TSPTO_VERIFY: "" },
  });
  return { out: stdout, err: stderr };
}

describe("TSPTO_LOG=compile", () => {
  it("prints one line per compile phase with its time", async () => {
    const { err } = await child("off", "compile");
    const lines = err.split("\n").filter((l) => l.startsWith("tspto: compile cachedAdd:"));
    expect(lines.map((l) => l.replace(/ [\d.]+ ms$/, ""))).toEqual(
      ["parse", "passes", "codegen+artifact", "c++", "total"].map((p) => `tspto: compile cachedAdd: ${p}`));
  });
});

describe("disk cache across processes", () => {
  it("the second process against the same fresh cache directory compiles nothing", async () => {
    const dir = join(fresh("two"), "nested", "cache");
    const first = await child(dir);
    expect(first.err).toMatch(/tspto: compiling cachedAdd: first call, no disk cache entry/);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const second = await child(dir);
    expect(second.out).toBe(first.out);
    expect(second.err).toMatch(/tspto: cachedAdd: loaded from the disk cache/);
    expect(second.err).not.toMatch(/compiling/);
    expect(readdirSync(dir).filter((n) => n.startsWith("cachedAdd-"))).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------
const scaled = pl.jit(function scaled(a: pl.Tensor, out: pl.Out<pl.Tensor>, k: number) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(a, [0, 0], [16, 16]);
    pl.store(pl.mul(t, k), [0, 0], out);
  });
  return out;
});

const addKernel = pl.jit(function addKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.add(a, b)); });
  return out;
});

describe("disk cache in one process", () => {
  const saved = { dir: process.env.TSPTO_CACHE_DIR, log: process.env.TSPTO_LOG };
  let lines: string[] = [];
  beforeEach(() => {
    lines = [];
    vi.spyOn(process.stderr, "write").mockImplementation(((s: string | Uint8Array) => { lines.push(String(s)); return true; }) as never);
  });
  afterEach(() => {
    vi.restoreAllMocks();
    for (const [k, v] of [["TSPTO_CACHE_DIR", saved.dir], ["TSPTO_LOG", saved.log]] as const) {
      if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  });

  it("detects a corrupt entry (library or metadata) and rebuilds it", () => {
    process.env.TSPTO_CACHE_DIR = fresh("corrupt");
    process.env.TSPTO_LOG = "recompiles";
    scaled.clearCache();
    const a = randn([16, 16], { seed: 3 });
    const c1 = scaled.compile(a, zeros([16, 16]), 3);
    const lib = join(c1.outputDir, c1.meta.library!);
    const good = readFileSync(lib);
    const bad = Buffer.from(good);
    bad[bad.length >> 1] ^= 0xff;
    writeFileSync(lib, bad);
    scaled.clearCache();
    const c2 = scaled.compile(a, zeros([16, 16]), 3);
    expect(lines.join("")).toMatch(/recompiling scaled: disk cache entry .* is corrupt \(.*\/build\/libprogram\.so: library hash [0-9a-f]{12}… does not match compiled_meta\.json \([0-9a-f]{12}…\); the artifact was modified\); rebuilding/);
    expect(c2.outputDir).toBe(c1.outputDir);
    const out = zeros([16, 16]);
    scaled(a, out, 3);
    assertClose(out, a.add(a).add(a), { rtol: 1e-6, atol: 1e-6 });
    // garbled metadata
    writeFileSync(join(c2.outputDir, "compiled_meta.json"), "{ not json");
    scaled.clearCache();
    lines.length = 0;
    const c3 = scaled.compile(a, zeros([16, 16]), 3);
    expect(lines.join("")).toMatch(/recompiling scaled: disk cache entry .* is corrupt/);
    expect(CompiledProgram.fromDir(c3.outputDir).meta.libraryHash).toBe(c3.meta.libraryHash);
    // and now a clean hit
    scaled.clearCache();
    lines.length = 0;
    scaled.compile(a, zeros([16, 16]), 3);
    expect(lines.join("")).toMatch(/scaled: loaded from the disk cache/);
  });

  it("TSPTO_LOG=recompiles names the key component that changed", () => {
    process.env.TSPTO_CACHE_DIR = fresh("log");
    process.env.TSPTO_LOG = "recompiles";
    addKernel.clearCache();
    addKernel.compile(zeros([128, 128]), zeros([128, 128]), zeros([128, 128]));
    addKernel.compile(zeros([64, 128]), zeros([64, 128]), zeros([64, 128]));
    addKernel.compile(zeros([64, 128], "int32"), zeros([64, 128], "int32"), zeros([64, 128], "int32"));
    scaled.clearCache();
    scaled.compile(zeros([16, 16]), zeros([16, 16]), 2);
    scaled.compile(zeros([16, 16]), zeros([16, 16]), 5);
    const text = lines.join("");
    expect(text).toContain("tspto: compiling addKernel: first call, no disk cache entry\n");
    expect(text).toContain("tspto: recompiling addKernel: shape of 'a' changed [128,128] -> [64,128], shape of 'b' changed [128,128] -> [64,128], shape of 'out' changed [128,128] -> [64,128]\n");
    expect(text).toContain("tspto: recompiling addKernel: dtype of 'a' changed float32 -> int32");
    expect(text).toContain("tspto: recompiling scaled: value of scalar 'k' changed 2 -> 5\n");
    // no log without TSPTO_LOG
    delete process.env.TSPTO_LOG;
    lines.length = 0;
    addKernel.compile(zeros([32, 128]), zeros([32, 128]), zeros([32, 128]));
    expect(lines.join("")).toBe("");
  });

  it("TSPTO_CACHE_DIR=off compiles into the content-keyed artifact directory", () => {
    process.env.TSPTO_CACHE_DIR = "off";
    scaled.clearCache();
    const c = scaled.compile(zeros([16, 16]), zeros([16, 16]), 7);
    expect(c.outputDir.startsWith(join(tmpdir(), "tspto"))).toBe(true);
  });
});

describe("the jit call path", () => {
  it("repeated calls (fast path) give the full path's results and follow new shapes and values", () => {
    const a = randn([16, 16], { seed: 4 });
    for (const k of [2, 3, 2, 3]) {
      const out = zeros([16, 16]);
      for (let i = 0; i < 3; i++) scaled(a, out, k);
      const want = zeros([16, 16]);
      const wd = want.data as Float32Array, ad = a.data as Float32Array;
      for (let i = 0; i < wd.length; i++) wd[i] = Math.fround(ad[i] * k);
      assertClose(out, want, { rtol: 0, atol: 0 });
    }
    const b = randn([256, 64], { seed: 5 }), c = randn([256, 64], { seed: 6 });
    const out = zeros([256, 64]);
    expect(addKernel(b, c, out)).toBe(out);
    expect(addKernel(b, c, out, new RunConfig({ platform: "interp" }))).toBe(out);
    assertClose(out, b.add(c), { rtol: 0, atol: 0 });
  });

  it("survives the default worker being closed, and still rejects bad arguments", () => {
    const a = randn([16, 16], { seed: 7 });
    const out = zeros([16, 16]);
    scaled(a, out, 2);
    defaultWorker(new RunConfig()).close();
    scaled(a, out, 2);
    assertClose(out, a.add(a), { rtol: 0, atol: 0 });
    expect(() => scaled(a, zeros([8, 16]), 2)).toThrow();
    const w = defaultWorker(new RunConfig());
    const dt = w.allocTensor([16, 16], "float32");
    // @ts-expect-error a DeviceTensor at a jit entry (the run-time error is checked)
    expect(() => scaled(dt, out, 2)).toThrow(/missing inferred tensor metadata for parameter 'a'/);
    w.freeTensor(dt);
  });
});



// `tspto inspect`: a real artifact (compiled with pass dumps) summarized by the bin, the
// --trace/--graph pages written next to the DFX files, and clear errors with exit code 1.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ir, pl, randn, zeros } from "tspto";
import { fmtInt } from "../../src/tools/html.js";
import { main } from "../../src/tools/cli.js";
import type { InspectReport } from "../../src/tools/inspect.js";
import { depsJson, synthesize, traceJson } from "./synthetic.js";
import { wellFormedProblems } from "./wellformed.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "bin", "tspto.mjs");

/** Run the bin as a user would, from an unrelated working directory. */
function tspto(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmpdir(), encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** In-process run of the CLI (fast path for the error cases). */
async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "", err = "";
  const code = await main(args, { out: (s) => { out += s; }, err: (s) => { err += s; } });
  return { code, out, err };
}

const N = 16;
const inspectKernel = pl.jit(function inspectKernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.add(pl.load(a, [0, 0], [N, N]), pl.load(b, [0, 0], [N, N])), 2), [0, 0], out);
  });
  return out;
});

let work: string;
let dir: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "tspto-inspect-"));
  dir = join(work, "artifact");
  const a = randn([N, N], { seed: 1 }), b = randn([N, N], { seed: 2 });
  ir.compile(inspectKernel.lower(a, b, zeros([N, N])), { platform: "cpu", dumpPasses: true, outputDir: dir });
});
afterAll(() => {
  if (work && process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(work, { recursive: true, force: true });
});

describe("tspto inspect <outputDir>", () => {
  it("is the package's bin", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin?: Record<string, string> };
    expect(pkg.bin?.tspto).toBe("bin/tspto.mjs");
    expect(readFileSync(BIN, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(statSync(BIN).mode & 0o111).not.toBe(0);
  });

  it("prints the metadata, the passes in order with line counts, and the code's size", () => {
    const r = tspto("inspect", dir);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const out = r.stdout;
    const meta = JSON.parse(readFileSync(join(dir, "compiled_meta.json"), "utf8"));
    expect(out).toContain(`tspto artifact: ${dir}\n`);
    expect(out).toContain("  program    inspectKernel\n");
    expect(out).toContain("  platform   cpu (backend cpp, runtime tspto-cpu-sim)\n");
    expect(out).toMatch(/\n +0 {2}a {5}in {5}tensor \[16, 16\] float32\n +1 {2}b {5}in {5}tensor \[16, 16\] float32\n +2 {2}out {3}out {4}tensor \[16, 16\] float32\n/);
    expect(out).toContain("  outputs    out\n");
    expect(out).toContain(`  scratch    ${fmtInt(meta.scratchBytes)} bytes per core`);
    expect(meta.kernels.length).toBeGreaterThan(0);
    for (const k of meta.kernels) expect(out).toContain(`    ${k.name}  symbol ${k.symbol}, scratch ${fmtInt(k.scratchBytes)} B`);

    // passes: every dump, in pipeline order, with its line count
    const dumps = readdirSync(join(dir, "passes_dump")).filter((f) => f.endsWith(".ts")).sort();
    expect(dumps.length).toBeGreaterThan(5);
    expect(out).toContain(`passes (${dumps.length} dumps in ${join(dir, "passes_dump")})`);
    const listed = [...out.matchAll(/^ {2}(\d\d) {2}(\w+) +(\d+) lines {2}\+json/gm)];
    expect(listed.map((m) => `${m[1]}_after_${m[2]}.ts`)).toEqual(dumps);
    for (const m of listed) {
      const text = readFileSync(join(dir, "passes_dump", `${m[1]}_after_${m[2]}.ts`), "utf8");
      expect(Number(m[3])).toBe(text.split("\n").length - (text.endsWith("\n") ? 1 : 0));
    }
    expect(listed[0][2]).toBe("Input");

    // generated code: size and lines of program.cpp, size and hash of the library
    const cpp = readFileSync(join(dir, "kernels", "program.cpp"), "utf8");
    const cppLines = cpp.split("\n").length - (cpp.endsWith("\n") ? 1 : 0);
    expect(out).toMatch(new RegExp(`kernels/program\\.cpp +[\\d.]+ KiB \\(${fmtInt(Buffer.byteLength(cpp)).replace(",", "\\,")} B\\), ${fmtInt(cppLines)} lines`));
    const lib = readFileSync(join(dir, "build", "libprogram.so"));
    const sha = createHash("sha256").update(lib).digest("hex");
    expect(out).toContain(`(${fmtInt(lib.length)} B), sha256 ${sha.slice(0, 16)}… (matches compiled_meta.json)`);
    expect(out).toMatch(/orchestration\/entry\.cpp/);
    expect(out).toContain("dfx outputs  none (run with RunConfig({ enableChipSwimlane: true, enableDepGen: true })");
  });

  it("names a dynamic dimension in the parameter list", () => {
    const dyn = pl.jit(function dynInspect(x: pl.Tensor<["M", 8], pl.FP32>, out: pl.Out<pl.Tensor<["M", 8], pl.FP32>>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.exp(x)); });
    });
    const ddir = join(work, "dyn");
    ir.compile(dyn.lower(randn([4, 8]), zeros([4, 8])), { platform: "cpu", outputDir: ddir });
    const r = tspto("inspect", ddir);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/\n +0 {2}x +in +tensor \["M", 8\] float32\n/);
  });

  it("--json gives the same facts as data", async () => {
    const r = await run("inspect", dir, "--json");
    expect(r.code).toBe(0);
    const rep = JSON.parse(r.out) as InspectReport;
    expect(rep.meta.name).toBe("inspectKernel");
    expect(rep.passes.map((p) => p.file)).toEqual(readdirSync(join(dir, "passes_dump")).filter((f) => f.endsWith(".ts")).sort().map((f) => `passes_dump/${f}`));
    expect(rep.passes.every((p) => p.json)).toBe(true);
    const cpp = rep.code.find((f) => f.path === "kernels/program.cpp")!;
    expect(cpp.bytes).toBe(statSync(join(dir, "kernels", "program.cpp")).size);
    expect(rep.library!.sha256).toBe(createHash("sha256").update(readFileSync(join(dir, "build", "libprogram.so"))).digest("hex"));
    expect(rep.library!.matchesMeta).toBe(true);
    expect(rep.warnings).toEqual([]);
  });

  it("lists DFX outputs and renders them with --trace and --graph", () => {
    const tasks = synthesize({ cores: 2, tiles: 6, reduce: true });
    mkdirSync(join(dir, "dfx_outputs"), { recursive: true });
    writeFileSync(join(dir, "dfx_outputs", "swimlane.json"), JSON.stringify(traceJson(tasks, 2)));
    writeFileSync(join(dir, "dfx_outputs", "deps.json"), JSON.stringify(depsJson(tasks)));
    try {
      const s = tspto("inspect", dir);
      expect(s.status).toBe(0);
      expect(s.stdout).toContain(`dfx outputs (${join(dir, "dfx_outputs")})`);
      expect(s.stdout).toMatch(new RegExp(`dfx_outputs/swimlane\\.json +[\\d.]+ KiB +${tasks.length} tasks on 2 tracks`));
      expect(s.stdout).toMatch(new RegExp(`dfx_outputs/deps\\.json +[\\d.]+ KiB +${tasks.length} tasks, ${tasks.length - 1} dependencies`));
      expect(s.stdout).toContain("--trace (swimlane.html) | --graph (deps.html)");

      const t = tspto("inspect", dir, "--trace");
      expect(t.stderr).toBe("");
      expect(t.status).toBe(0);
      const page = join(dir, "dfx_outputs", "swimlane.html");
      expect(t.stdout).toBe(`${page}\n`);
      const html = readFileSync(page, "utf8");
      expect(html.match(/<rect class="task"/g)).toHaveLength(tasks.length);
      expect(html).toContain("<title>Swimlane: inspectKernel</title>");
      expect(wellFormedProblems(html)).toEqual([]);

      const g = tspto("inspect", dir, "--graph", "--out", join(work, "g", "deps-page.html"));
      expect(g.status).toBe(0);
      expect(g.stdout).toBe(`${join(work, "g", "deps-page.html")}\n`);
      const gh = readFileSync(join(work, "g", "deps-page.html"), "utf8");
      expect(gh.match(/<rect class="task"/g)).toHaveLength(tasks.length);
      expect(gh.match(/<path class="edge/g)).toHaveLength(tasks.length - 1);
      expect(wellFormedProblems(gh)).toEqual([]);

      const both = tspto("inspect", dir, "--trace", "--graph");
      expect(both.status).toBe(0);
      expect(both.stdout).toBe(`${page}\n${join(dir, "dfx_outputs", "deps.html")}\n`);
    } finally {
      rmSync(join(dir, "dfx_outputs"), { recursive: true, force: true });
    }
  });

  it("inspects an interp artifact (nothing compiled)", async () => {
    const idir = join(work, "interp");
    ir.compile(inspectKernel.lower(randn([N, N], { seed: 1 }), randn([N, N], { seed: 2 }), zeros([N, N])), { platform: "interp", outputDir: idir });
    const r = await run("inspect", idir);
    expect(r.code).toBe(0);
    expect(r.out).toContain("  platform   interp (backend interp, runtime tspto-interp)");
    expect(r.out).toContain("  nothing compiled: platform interp evaluates program.json\n");
    expect(r.out).not.toContain("libprogram.so");
    expect(r.out).toContain("passes     no pass dumps (compile with ir.compile(program, { dumpPasses: true }))");
    expect(r.out).not.toContain("warnings");
  });
});

describe("tspto inspect errors", () => {
  it("names a directory that is not an artifact and what is missing, exit code 1 (bin)", () => {
    const d = mkdtempSync(join(tmpdir(), "tspto-notart-"));
    try {
      writeFileSync(join(d, "notes.txt"), "hello\n");
      const r = tspto("inspect", d);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`tspto inspect: ${d} is not a tspto artifact directory: compiled_meta.json is missing (found: notes.txt).`);
      expect(r.stderr).toContain("CompiledProgram.outputDir");
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("names a missing directory, exit code 1 (bin)", () => {
    const d = join(tmpdir(), `tspto-missing-${process.pid}-xyz`);
    const r = tspto("inspect", d);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`tspto inspect: no such directory: ${d}\n`);
  });

  it("rejects a file, foreign or broken metadata, naming the file", async () => {
    const d = mkdtempSync(join(tmpdir(), "tspto-badmeta-"));
    try {
      writeFileSync(join(d, "f"), "x");
      let r = await run("inspect", join(d, "f"));
      expect([r.code, r.err]).toEqual([1, `tspto inspect: ${join(d, "f")} is not a directory (give the artifact directory, CompiledProgram.outputDir)\n`]);
      writeFileSync(join(d, "compiled_meta.json"), "{ nope");
      r = await run("inspect", d);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`^tspto inspect: ${join(d, "compiled_meta.json")}: not valid JSON`));
      writeFileSync(join(d, "compiled_meta.json"), JSON.stringify({ name: "x" }));
      r = await run("inspect", d);
      expect(r.err).toBe(`tspto inspect: ${join(d, "compiled_meta.json")}: not tspto metadata: field 'schema' is missing (expected "tspto-compiled-program")\n`);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("--trace / --graph without DFX files, or with a malformed one, exit 1 naming the file", async () => {
    let r = await run("inspect", dir, "--trace");
    expect(r.code).toBe(1);
    expect(r.err).toContain(`--trace: ${join(dir, "dfx_outputs", "swimlane.json")} not found: ${dir} has no dfx_outputs/ directory.`);
    expect(r.err).toContain("RunConfig({ enableChipSwimlane: true })");
    r = await run("inspect", dir, "--graph");
    expect(r.err).toContain("RunConfig({ enableDepGen: true })");
    const d = mkdtempSync(join(tmpdir(), "tspto-baddfx-"));
    try {
      mkdirSync(join(d, "dfx_outputs"));
      writeFileSync(join(d, "dfx_outputs", "swimlane.json"), JSON.stringify([{ ph: "X", name: "k", ts: 1 }, { ph: "X", name: "k" }]));
      r = await run("inspect", d, "--trace");
      expect(r.code).toBe(1);
      expect(r.err).toBe(`tspto inspect: ${join(d, "dfx_outputs", "swimlane.json")}: traceEvents[1]: 'ts' must be a finite number (µs), got undefined\n`);
      expect(existsSync(join(d, "dfx_outputs", "swimlane.html"))).toBe(false);
      writeFileSync(join(d, "dfx_outputs", "deps.json"), "[");
      r = await run("inspect", d, "--graph");
      expect(r.err).toMatch(/deps\.json: not valid JSON/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("usage errors exit 2 with the usage text; --help exits 0", async () => {
    for (const args of [[], ["inspect"], ["frobnicate"], ["inspect", dir, "--bogus"], ["inspect", dir, "--out", "x.html"], ["inspect", "a", "b"], ["inspect", dir, "--trace", "--graph", "--out", "x"]]) {
      const r = await run(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toContain("Usage: tspto inspect <outputDir> [options]");
    }
    const h = await run("inspect", "--help");
    expect(h.code).toBe(0);
    expect(h.out).toContain("--trace");
    const v = tspto("--version");
    expect(v.status).toBe(0);
    expect(v.stdout).toMatch(/^tspto \d+\.\d+\.\d+/);
  });
});

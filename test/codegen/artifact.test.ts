// The seed program (entry(a, b, out) -> incore k: load, load, add, store) end to end through
// compileArtifact and the standalone harness; the artifact directory, its reuse, metadata.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { generateCpp } from "../../src/codegen/index.js";
import { validateMeta } from "../../src/artifact/index.js";
import { compileArtifact } from "./helpers.js";
import { mulberry32, run, seedProgram, cleanup, tmpDir } from "./helpers.js";

afterAll(cleanup);

const rand = (seed: number, n: number) => { const r = mulberry32(seed); return Float32Array.from({ length: n }, () => r() * 4 - 2); };
const freshDir = (tag: string) => join(tmpDir(tag), "artifact");

describe("seed program", () => {
  it("compiles, runs, and adds exactly", () => {
    const p = seedProgram();
    const t0 = performance.now();
    const { outputDir, meta } = compileArtifact(p, { platform: "cpu", packageVersion: "0.1.0", outputDir: freshDir("seed") });
    const ms = performance.now() - t0;
    console.log(`seed program compile (generate + c++ -O3): ${ms.toFixed(0)} ms`);
    const A = rand(1, 128 * 128), B = rand(2, 128 * 128);
    expect(A.some((x) => x !== 0) && B.some((x) => x !== 0)).toBe(true);
    const r = run(outputDir, [{ tensor: A }, { tensor: B }, { tensor: new Float32Array(128 * 128) }]);
    expect(r.rc).toBe(0);
    expect(r.fails).toEqual([]);
    const out = r.tensors[2] as Float32Array;
    for (let i = 0; i < out.length; i++) if (out[i] !== Math.fround(A[i] + B[i])) throw new Error(`out[${i}] = ${out[i]}, expected ${Math.fround(A[i] + B[i])}`);
    // inputs untouched
    expect(r.tensors[0]).toEqual(A);
    // one task with the accesses of the call
    expect(r.tasks).toEqual([{ name: "seed_add_k", scope: 0, nargs: 3, accesses: [
      { param: 0, nbytes: 65536, mode: 1 }, { param: 1, nbytes: 65536, mode: 1 }, { param: 2, nbytes: 65536, mode: 2 }] }]);
    expect(meta.kernels).toEqual([{ name: "seed_add_k", symbol: "k_seed_add_k", scratchBytes: 3 * 65536 }]);
  });

  it("writes every artifact file, with the exact metadata shape", () => {
    const p = seedProgram("seed_files", 64);
    const dumps = [{ name: "00_after_Input", text: "// input\n", json: "{}" }, { name: "Simplify", text: "// simplified\n" }];
    const { outputDir, meta } = compileArtifact(p, { platform: "cpu", packageVersion: "9.9.9", outputDir: freshDir("files"), dumps });
    for (const f of ["compiled_meta.json", "program.json", "kernels/program.cpp", "orchestration/README.md", "orchestration/entry.cpp",
      "build/libprogram.so", "build/stamp.json", "passes_dump/00_after_Input.ts", "passes_dump/00_after_Input.json", "passes_dump/01_after_Simplify.ts"]) {
      expect(existsSync(join(outputDir, f)), f).toBe(true);
    }
    expect(readFileSync(join(outputDir, "orchestration/entry.cpp"), "utf8")).toContain("extern \"C\" int tspto_entry(");
    const onDisk = validateMeta(readFileSync(join(outputDir, "compiled_meta.json"), "utf8"), "compiled_meta.json");
    expect(onDisk).toEqual(meta);
    expect(Object.keys(meta).sort()).toEqual(["backendType", "createdAt", "entry", "hasReturn", "kernels", "library", "libraryHash", "name",
      "outputIndices", "params", "platform", "returns", "runtimeName", "schema", "schemaVersion", "scratchBytes", "tspto"].sort());
    expect(meta).toMatchObject({
      schema: "tspto-compiled-program", schemaVersion: 1, name: "seed_files", entry: "seed_files", platform: "cpu", backendType: "cpp",
      runtimeName: "tspto-cpu-sim", outputIndices: [2], returns: [2], hasReturn: true, scratchBytes: 3 * 64 * 64 * 4,
      library: "build/libprogram.so", tspto: "9.9.9",
      params: [
        { name: "a", kind: "tensor", direction: "in", shape: [64, 64], dtype: "float32" },
        { name: "b", kind: "tensor", direction: "in", shape: [64, 64], dtype: "float32" },
        { name: "out", kind: "tensor", direction: "out", shape: [64, 64], dtype: "float32" },
      ],
    });
    const stamp = JSON.parse(readFileSync(join(outputDir, "build/stamp.json"), "utf8"));
    expect(stamp.librarySha256).toBe(meta.libraryHash);
    expect(stamp.flags).toEqual(expect.arrayContaining(["-std=c++17", "-O3", "-march=native", "-fPIC", "-shared", "-fno-math-errno"]));
    expect(typeof stamp.version).toBe("string");
    expect(stamp.sourceSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(readFileSync(join(outputDir, "program.json"), "utf8"))).toEqual(JSON.parse(JSON.stringify(p.toJSON())));
  });

  it("reuses a complete artifact directory (default location and explicit outputDir)", () => {
    const p = seedProgram("seed_reuse", 32);
    const first = compileArtifact(p, { platform: "cpu", packageVersion: "0.1.0" });
    expect(first.outputDir.startsWith(join(tmpdir(), "tspto"))).toBe(true);
    const lib = join(first.outputDir, "build/libprogram.so");
    const before = statSync(lib);
    const second = compileArtifact(p, { platform: "cpu", packageVersion: "0.1.0" });
    expect(second.outputDir).toBe(first.outputDir);
    expect(second.meta).toEqual(first.meta);
    const after = statSync(lib);
    expect(after.ino).toBe(before.ino);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    // the same program built again (new variables, other ids) has the same key
    const rebuilt = seedProgram("seed_reuse", 32);
    expect(JSON.stringify(rebuilt.toJSON())).not.toBe(JSON.stringify(p.toJSON()));
    expect(compileArtifact(rebuilt, { platform: "cpu", packageVersion: "0.1.0" }).outputDir).toBe(first.outputDir);
    expect(statSync(lib).ino).toBe(before.ino);
    // a different package version is another artifact
    expect(compileArtifact(p, { platform: "cpu", packageVersion: "0.2.0" }).outputDir).not.toBe(first.outputDir);

    // explicit dir: reuse for the same program, replace for another
    const dir = freshDir("explicit");
    const e1 = compileArtifact(p, { platform: "cpu", packageVersion: "0.1.0", outputDir: dir });
    const e2 = compileArtifact(p, { platform: "cpu", packageVersion: "0.1.0", outputDir: dir });
    expect(e2.meta.createdAt).toBe(e1.meta.createdAt);
    const other = seedProgram("seed_other", 32);
    const e3 = compileArtifact(other, { platform: "cpu", packageVersion: "0.1.0", outputDir: dir });
    expect(e3.outputDir).toBe(dir);
    expect(validateMeta(readFileSync(join(dir, "compiled_meta.json"), "utf8"), "m").name).toBe("seed_other");
    const r = run(dir, [{ tensor: rand(3, 1024) }, { tensor: rand(4, 1024) }, { tensor: new Float32Array(1024) }]);
    expect(r.tasks[0].name).toBe("seed_other_k");
  });

  it("concurrent compiles of the same program into one directory both succeed", async () => {
    const dir = freshDir("race");
    const script = fileURLToPath(new URL("./fixtures/compile_seed.ts", import.meta.url));
    const tsx = fileURLToPath(new URL("../../node_modules/.bin/tsx", import.meta.url));
    const runOne = () => new Promise<{ code: number | null; out: string }>((resolve) => {
      const ch = spawn(tsx, [script, dir], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      ch.stdout.on("data", (d) => (out += d));
      ch.stderr.on("data", (d) => (out += d));
      ch.on("close", (code) => resolve({ code, out }));
    });
    const [x, y] = await Promise.all([runOne(), runOne()]);
    expect(x.code, x.out).toBe(0);
    expect(y.code, y.out).toBe(0);
    const meta = validateMeta(readFileSync(join(dir, "compiled_meta.json"), "utf8"), "compiled_meta.json");
    expect(meta.name).toBe("seed_race");
    const r = run(dir, [{ tensor: rand(5, 256) }, { tensor: rand(6, 256) }, { tensor: new Float32Array(256) }]);
    expect(r.rc).toBe(0);
  }, 60_000);

  it("interp platform: metadata and program.json only", () => {
    const p = seedProgram("seed_interp", 16);
    const { outputDir, meta } = compileArtifact(p, { platform: "interp", packageVersion: "0.1.0", outputDir: freshDir("interp") });
    expect(meta).toMatchObject({ platform: "interp", backendType: "interp", runtimeName: "tspto-interp", library: null, libraryHash: null });
    expect(existsSync(join(outputDir, "program.json"))).toBe(true);
    expect(existsSync(join(outputDir, "build/libprogram.so"))).toBe(false);
    expect(existsSync(join(outputDir, "kernels/program.cpp"))).toBe(false);
  });

  it("generateCpp returns one translation unit with the ABI symbols; the prelude is an #include of its part (base here: no SIMD helper used)", () => {
    const g = generateCpp(seedProgram("seed_src", 16));
    expect(g.source).toContain('#include "tspto_prelude.h"');
    expect(g.source).not.toContain("static inline");                     // no prelude text in the program's own source
    expect(g.prelude.header).toBe("tspto_prelude.h");
    expect(g.prelude.text).toContain('#include "tspto_abi.h"');
    expect(g.source).toContain('extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }');
    expect(g.source).toContain('extern "C" void k_seed_src_k(const int64_t* args)');
    expect(g.source).toContain('extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args)');
    expect(g.source).toContain("#pragma GCC ivdep");
    expect(g.kernels).toEqual([{ name: "seed_src_k", symbol: "k_seed_src_k", scratchBytes: 3 * 1024 }]);
    expect(g.scratchBytes).toBe(3 * 1024);
  });
});


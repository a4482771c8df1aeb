// The cpu toolchain: $CXX as the user wrote it (a relative path names a program relative to
// the current directory), the compiler-version memo and the precompiled header (kept in a
// directory private to the user; planted ones are refused), and the compile time limit
// covering the precompiled header's build too.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { compileArtifact, cleanup, seedProgram, tmpDir } from "../../codegen/helpers.js";

afterAll(cleanup);

const saved = { ...process.env };
const cwd0 = process.cwd();
afterEach(() => {
  process.chdir(cwd0);
  for (const k of ["CXX", "TSPTO_CXX_TIMEOUT_MS", "TSPTO_CACHE_DIR", "TSPTO_PCH", "TMPDIR"]) {
    if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
  }
});

describe("$CXX", () => {
  it("a relative $CXX is resolved against the current directory, not the artifact's build directory", () => {
    const dir = tmpDir("rel-cxx");
    mkdirSync(join(dir, "tools"), { recursive: true });
    writeFileSync(join(dir, "tools", "cxx.sh"), `#!/bin/sh\nexec g++ "$@"\n`);
    chmodSync(join(dir, "tools", "cxx.sh"), 0o755);
    process.chdir(dir);
    process.env.CXX = "./tools/cxx.sh";
    process.env.TSPTO_PCH = "0"; // (a precompiled header for this compiler is not what is tested)
    const { meta, outputDir } = compileArtifact(seedProgram("rel_cxx", 16), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "out") });
    expect(meta.library).toBe("build/libprogram.so");
    expect(outputDir).toBe(join(dir, "out"));
  });
});

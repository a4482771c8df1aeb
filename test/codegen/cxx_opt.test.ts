// The internal -O override of cpu builds ($TSPTO_CXX_OPT, used by the differential fuzzer to
// build programs at -O0 and at the production flags and compare them): it changes the flags,
// the artifact key and the disk cache's toolchain identity, and a bad value is E_CONFIG.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TsptoConfigError } from "../../src/ir/index.js";
import { CXX_FLAGS, cpuIsa, cxxFlags, toolchainIdentity } from "../../src/targets/cpu/toolchain.js";
import { isaFlags } from "../../src/targets/cpu/isa.js";
import { cpuKeyParts } from "../../src/targets/cpu/build.js";
import { cleanup, compileArtifact, run, seedProgram, tmpDir } from "./helpers.js";

afterAll(cleanup);

describe("TSPTO_CXX_OPT (internal)", () => {
  const saved = process.env.TSPTO_CXX_OPT;
  afterEach(() => { if (saved === undefined) delete process.env.TSPTO_CXX_OPT; else process.env.TSPTO_CXX_OPT = saved; });

  it("replaces -O3 in the flags, the artifact key and the toolchain identity; validates the value", () => {
    delete process.env.TSPTO_CXX_OPT;
    // CXX_FLAGS with the ISA path's flags after -march=native (test/targets/cpu/isa.test.ts)
    const base = CXX_FLAGS.flatMap((f) => (f === "-march=native" ? [f, ...isaFlags(cpuIsa())] : [f]));
    expect(cxxFlags()).toEqual(base);
    const prod = { key: cpuKeyParts().join("|"), id: toolchainIdentity().join("|") };
    process.env.TSPTO_CXX_OPT = "-O0";
    expect(cxxFlags()).toEqual(base.map((f) => (f === "-O3" ? "-O0" : f)));
    expect(cpuKeyParts().join("|")).not.toBe(prod.key);
    expect(toolchainIdentity().join("|")).not.toBe(prod.id);
    process.env.TSPTO_CXX_OPT = "-O9";
    expect(() => cxxFlags()).toThrow(TsptoConfigError);
    expect(() => cxxFlags()).toThrow(/TSPTO_CXX_OPT must be one of -O0, -O1, -O2, -O3, -Os, -Og \(an internal testing override of -O3\), got "-O9"/);
  });

  it("a program built at -O0 runs, with the flags recorded in its stamp", () => {
    process.env.TSPTO_CXX_OPT = "-O0";
    const dir = compileArtifact(seedProgram(), { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("cxx-opt"), "a") }).outputDir;
    const stamp = JSON.parse(readFileSync(join(dir, "build", "stamp.json"), "utf8")) as { flags: string[] };
    expect(stamp.flags).toContain("-O0");
    expect(stamp.flags).not.toContain("-O3");
    expect(stamp.flags).not.toContain("-include");                   // no precompiled header: the prelude is read from kernels/
    const n = 128 * 128;
    const a = Float32Array.from({ length: n }, (_, i) => i), b = Float32Array.from({ length: n }, (_, i) => 2 * i);
    const res = run(dir, [{ tensor: a }, { tensor: b }, { tensor: new Float32Array(n) }]);
    expect(res.rc).toBe(0);
    expect(Array.from(res.tensors[2] as Float32Array).every((v, i) => v === 3 * i)).toBe(true);
  });
});

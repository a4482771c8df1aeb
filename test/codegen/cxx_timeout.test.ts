// The C++ compiler's time limit: $TSPTO_CXX_TIMEOUT_MS (default 3 minutes), and a timeout
// that says so (E_CXX_TIMEOUT), with a compiler that never finishes.
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { TsptoCompileError, TsptoConfigError } from "../../src/ir/index.js";
import { compileArtifact } from "./helpers.js";
import { DEFAULT_CXX_TIMEOUT_MS, cxxTimeoutMs } from "../../src/targets/cpu/toolchain.js";
import { cleanup, seedProgram, tmpDir } from "./helpers.js";

afterAll(cleanup);

describe("C++ compile time limit", () => {
  const saved = { cxx: process.env.CXX, t: process.env.TSPTO_CXX_TIMEOUT_MS };
  afterEach(() => {
    if (saved.cxx === undefined) delete process.env.CXX; else process.env.CXX = saved.cxx;
    if (saved.t === undefined) delete process.env.TSPTO_CXX_TIMEOUT_MS; else process.env.TSPTO_CXX_TIMEOUT_MS = saved.t;
  });

  it("defaults to 3 minutes and validates the variable", () => {
    delete process.env.TSPTO_CXX_TIMEOUT_MS;
    expect(cxxTimeoutMs()).toBe(DEFAULT_CXX_TIMEOUT_MS);
    expect(DEFAULT_CXX_TIMEOUT_MS).toBe(180_000);
    process.env.TSPTO_CXX_TIMEOUT_MS = "5000";
    expect(cxxTimeoutMs()).toBe(5000);
    process.env.TSPTO_CXX_TIMEOUT_MS = "soon";
    expect(() => cxxTimeoutMs()).toThrow(TsptoConfigError);
    expect(() => cxxTimeoutMs()).toThrow('TSPTO_CXX_TIMEOUT_MS must be an integer >= 1000 (milliseconds), got "soon"');
  });

  it("a compiler that does not finish is stopped and the error says which limit applied", () => {
    const dir = tmpDir("cxx-timeout");
    const script = join(dir, "slow-cxx.sh");
    // answers --version, refuses the precompiled header at once, hangs on the program
    writeFileSync(script, `#!/bin/sh
if [ "$1" = "--version" ]; then echo "slow-cxx 1.0"; exit 0; fi
case "$*" in *c++-header*) exit 1;; esac
exec sleep 60
`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    process.env.TSPTO_CXX_TIMEOUT_MS = "1000";
    let err: (Error & { code?: string }) | undefined;
    try {
      compileArtifact(seedProgram("cxx_slow", 16), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "a") });
    } catch (e) {
      err = e as Error & { code?: string };
    }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect(err!.code).toBe("E_CXX_TIMEOUT");
    expect(err!.message).toContain(`C++ compilation of program 'cxx_slow' failed: '${script}' did not finish within 1000 ms and was stopped (the limit is $TSPTO_CXX_TIMEOUT_MS, default 180000 ms; raise it for very large programs)`);
  });
});

// The cpu toolchain: $CXX as the user wrote it (a relative path names a program relative to
// the current directory), the compiler-version memo and the precompiled header (kept in a
// directory private to the user; planted ones are refused), and the compile time limit
// covering the precompiled header's build too.
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { generateCpp } from "../../../src/codegen/index.js";
import { CXX_FLAGS, abiIncludeDir, cpuIsa, toolchain, whichSync } from "../../../src/targets/cpu/toolchain.js";
import { isaFlags } from "../../../src/targets/cpu/isa.js";
import { TsptoCompileError } from "../../../src/ir/index.js";
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

const uid = process.getuid?.() ?? "user";
const isRoot = process.getuid?.() === 0;
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

/** A compiler wrapper (a new path: no precompiled header or memo exists for it yet). */
function wrapper(dir: string, body = `exec g++ "$@"`): string {
  const f = join(dir, `cxx-${Math.random().toString(36).slice(2)}.sh`);
  writeFileSync(f, `#!/bin/sh\n${body}\n`);
  chmodSync(f, 0o755);
  return f;
}

/** The precompiled header's key as tspto computes it (toolchain, flags, header text, ABI header). */
/** The prelude part a seed program includes (its header's name and text). */
const SEED_PART = generateCpp(seedProgram("pch_part", 16)).prelude;

function pchKeyOf(cxx: string): string {
  const tc = toolchain();
  expect(tc.command).toBe(cxx);
  const abi = readFileSync(join(abiIncludeDir(), "tspto_abi.h"), "utf8");
  return sha([tc.command, tc.path ?? "", tc.version, CXX_FLAGS.flatMap((f) => (f === "-march=native" ? [f, ...isaFlags(cpuIsa())] : f === "-shared" ? [] : [f])).join(" "), SEED_PART.header, SEED_PART.text, abi].join("\0")).slice(0, 24);
}

const caught = (f: () => unknown): Error & { code?: string; detail?: string } => {
  try { f(); } catch (e) { return e as Error & { code?: string; detail?: string }; }
  throw new Error("expected an error");
};

describe("files planted in the shared temp directory", () => {
  it("a precompiled header planted at $TMPDIR/tspto-pch-<uid>/<key>/ is never force-included", () => {
    const base = tmpDir("pch-plant");
    const cxx = wrapper(base);
    process.env.CXX = cxx;
    process.env.TMPDIR = join(base, "tmp");
    process.env.TSPTO_CACHE_DIR = join(base, "cache");
    const plant = join(base, "tmp", `tspto-pch-${uid}`, pchKeyOf(cxx));
    mkdirSync(plant, { recursive: true });
    writeFileSync(join(plant, SEED_PART.header), `#error "PLANTED HEADER INCLUDED"\n`);
    writeFileSync(join(plant, `${SEED_PART.header}.gch`), "not a precompiled header");
    if (isRoot) for (const p of [join(base, "tmp", `tspto-pch-${uid}`), plant, join(plant, SEED_PART.header), join(plant, `${SEED_PART.header}.gch`)]) chownSync(p, 65534, 65534);
    const { outputDir } = compileArtifact(seedProgram("pch_plant", 16), { platform: "cpu", packageVersion: "test", outputDir: join(base, "out") });
    const stamp = JSON.parse(readFileSync(join(outputDir, "build", "stamp.json"), "utf8")) as { flags: string[] };
    const included = stamp.flags[stamp.flags.indexOf("-include") + 1];
    expect(included.startsWith(join(base, "tmp"))).toBe(false);
  });

  it("a compiler-version memo planted at $TMPDIR/tspto-toolchain-<uid>/ is never read", () => {
    const base = tmpDir("memo-plant");
    const cxx = wrapper(base);
    process.env.CXX = cxx;
    process.env.TMPDIR = join(base, "tmp");
    process.env.TSPTO_CACHE_DIR = join(base, "cache");
    const path = whichSync(cxx)!;
    const st = statSync(path);
    const dir = join(base, "tmp", `tspto-toolchain-${uid}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${sha(`${cxx}\0${path}\0${st.size}\0${st.mtimeMs}`).slice(0, 24)}.txt`), "PLANTED 6.6.6\n");
    const tc = toolchain();
    expect(tc.version).not.toContain("PLANTED");
    expect(tc.version).toMatch(/g\+\+|GCC/);
    // and it is remembered in the private directory, not there
    expect(existsSync(join(base, "cache", "toolchain"))).toBe(true);
    expect(statSync(join(base, "cache", "toolchain")).mode & 0o077).toBe(0);
  });
});

describe("the private directories of the precompiled header and the memo", () => {
  it("a pch directory writable by others is refused with E_UNSAFE_PATH naming it (any user)", () => {
    const base = tmpDir("pch-mode");
    process.env.CXX = wrapper(base);
    process.env.TSPTO_CACHE_DIR = join(base, "cache");
    mkdirSync(join(base, "cache", "pch"), { recursive: true, mode: 0o700 });
    chmodSync(join(base, "cache"), 0o700);
    chmodSync(join(base, "cache", "pch"), 0o777);
    const e = caught(() => compileArtifact(seedProgram("pch_mode", 16), { platform: "cpu", packageVersion: "test", outputDir: join(base, "out") }));
    expect(e.code).toBe("E_UNSAFE_PATH");
    expect(e.message).toContain(`[E_UNSAFE_PATH] refused: ${join(base, "cache", "pch")} can be written by other users (mode 777); tspto never loads, includes or compiles what another user can write`);
    expect(e.message).toContain("hint: remove it (it is not tspto's), or set TSPTO_CACHE_DIR to a directory of your own (mode 0700)");
  });

  it("a header planted as a link in the user's pch directory is refused", () => {
    const base = tmpDir("pch-link");
    const cxx = wrapper(base);
    process.env.CXX = cxx;
    process.env.TSPTO_CACHE_DIR = join(base, "cache");
    const key = pchKeyOf(cxx);
    const d = join(base, "cache", "pch", key);
    mkdirSync(d, { recursive: true, mode: 0o700 });
    writeFileSync(join(base, "evil.h"), `#error "PLANTED"\n`);
    symlinkSync(join(base, "evil.h"), join(d, SEED_PART.header));
    writeFileSync(join(d, `${SEED_PART.header}.gch`), "x");
    const e = caught(() => compileArtifact(seedProgram("pch_link", 16), { platform: "cpu", packageVersion: "test", outputDir: join(base, "out") }));
    expect(e.code).toBe("E_UNSAFE_PATH");
    expect(e.message).toContain(`refused: the precompiled header ${join(d, SEED_PART.header)}: ${join(d, SEED_PART.header)} is a symbolic link, not a regular file`);
    expect(e.message).toContain(`hint: remove ${d} (tspto builds it again in a directory of your own), or set TSPTO_PCH=0`);
  });

  it("a temp directory planted by another user (cache off) is refused (root: chown to uid 65534)", (ctx) => {
    ctx.skip(!isRoot, "needs root to plant a directory owned by another user (chown); the mode checks run as any user");
    const base = tmpDir("tmp-owner");
    process.env.CXX = wrapper(base);
    process.env.TSPTO_CACHE_DIR = "off";
    process.env.TMPDIR = join(base, "tmp");
    const planted = join(base, "tmp", `tspto-${uid}`);
    mkdirSync(planted, { recursive: true, mode: 0o700 });
    chownSync(planted, 65534, 65534);
    const e = caught(() => toolchain());
    expect(e.code).toBe("E_UNSAFE_PATH");
    expect(e.message).toContain(`refused: ${planted} belongs to another user (uid 65534)`);
  });
});

describe("the compile time limit covers the precompiled header's build", () => {
  it("a header build that does not finish within $TSPTO_CXX_TIMEOUT_MS is stopped: E_CXX_TIMEOUT says it was that build", () => {
    const base = tmpDir("pch-slow");
    // answers --version, hangs on the precompiled header, compiles programs at once
    process.env.CXX = wrapper(base, `case "$*" in *c++-header*) exec sleep 30;; esac\nexec g++ "$@"`);
    process.env.TSPTO_CACHE_DIR = join(base, "cache");
    process.env.TSPTO_CXX_TIMEOUT_MS = "2000";
    const e = caught(() => compileArtifact(seedProgram("pch_slow", 16), { platform: "cpu", packageVersion: "test", outputDir: join(base, "out") }));
    expect(e).toBeInstanceOf(TsptoCompileError);
    expect(e.code).toBe("E_CXX_TIMEOUT");
    expect(e.message).toContain(`[E_CXX_TIMEOUT] building the precompiled header of the generated code's prelude: '${process.env.CXX}' did not finish within 2000 ms and was stopped (the limit is $TSPTO_CXX_TIMEOUT_MS, default 180000 ms, and covers this build too)`);
    expect(e.message).toContain("hint: raise TSPTO_CXX_TIMEOUT_MS, or set TSPTO_PCH=0 to compile without a precompiled header");
  }, 60_000);
});


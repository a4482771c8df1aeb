// scripts/install.mjs (the package's install script): without a C++ toolchain it stops with
// one line naming what to install and the command to run afterwards, not a node-gyp traceback.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, onTestFinished } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SCRIPT = join(ROOT, "scripts", "install.mjs");

function install(env: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "CXX" && k !== "PYTHON")) as Record<string, string>;
  const r = spawnSync(process.execPath, [SCRIPT], { cwd: ROOT, encoding: "utf8", env: { ...clean, ...env }, timeout: 30_000 });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe("install script preflight", () => {
  it("no compiler, make or python on PATH: one line naming them and `npm rebuild tspto`", () => {
    const bin = mkdtempSync(join(tmpdir(), "tspto-nopath-"));
    onTestFinished(() => rmSync(bin, { recursive: true, force: true }));
    symlinkSync(process.execPath, join(bin, "node"));
    const r = install({ PATH: bin });
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tspto: cannot build its native runtime: a C\+\+17 compiler \(g\+\+ or clang\+\+\), make, python3 not found; install them \(.*apt-get install g\+\+ make python3.*\), then run `npm rebuild tspto`$/);
    expect(r.stdout).not.toMatch(/gyp/);
  });

  it("a $CXX that does not exist is named", () => {
    const r = install({ CXX: "/nonexistent/bin/c++" });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(/^tspto: cannot build its native runtime: the C\+\+ compiler \$CXX=\/nonexistent\/bin\/c\+\+ not found; install it/);
  });
});

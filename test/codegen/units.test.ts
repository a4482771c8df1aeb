// A large program's library built as several objects compiled at once (src/targets/cpu/
// units.ts): how units are grouped, $TSPTO_CXX_JOBS, a GPT-2-shaped layer built in two parts
// that computes what interp does, and a failing or hanging part reported like a failing or
// hanging single compile.
import { chmodSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ChipWorker, CompiledProgram, RunConfig, randn, tensor, zeros, assertClose, type HostTensor } from "../../src/index.js";
import { TsptoCompileError, TsptoConfigError } from "../../src/ir/index.js";
import { MIN_GROUP_WEIGHT, compileUnits, cxxJobs, unitGroups } from "../../src/targets/cpu/units.js";
import { runSteps } from "../../src/targets/steps.js";
import { gpt2Programs, GPT2_TINY } from "../../bench/gpt2_shaped.js";
import { cleanup, compileArtifact, tmpDir } from "./helpers.js";

afterAll(cleanup);

const u = (index: number, weight: number) => ({ index, name: `u${index}`, weight });

describe("unit groups", () => {
  it("balances the units over the jobs, heaviest first, and keeps small programs one compile", () => {
    const units = [u(0, 5_000), u(1, 40_000), u(2, 30_000), u(3, 20_000), u(4, 15_000)];
    const groups = unitGroups(units, 2);
    expect(groups).toHaveLength(2);
    expect(groups.flat().sort()).toEqual([0, 1, 2, 3, 4]);
    const weight = (g: number[]) => g.reduce((s, i) => s + units[i].weight, 0);
    expect(Math.abs(weight(groups[0]) - weight(groups[1]))).toBeLessThanOrEqual(40_000 - 35_000 + 5_000);
    expect(unitGroups(units, 1)).toEqual([]);
    expect(unitGroups([u(0, 1e6)], 4)).toEqual([]);
    // a group below MIN_GROUP_WEIGHT is merged: two light kernels are one compile
    expect(unitGroups([u(0, 2_000), u(1, MIN_GROUP_WEIGHT - 3_000)], 2)).toEqual([]);
    // three jobs, one light unit: two groups, the light one joined to the lighter
    expect(unitGroups([u(0, 1_000), u(1, 50_000), u(2, 50_000)], 3)).toHaveLength(2);
  });

  it("TSPTO_CXX_JOBS: the machine's idle cores by default (at least 1), an integer in [1, 256] otherwise", () => {
    const saved = process.env.TSPTO_CXX_JOBS;
    try {
      delete process.env.TSPTO_CXX_JOBS;
      expect(cxxJobs()).toBeGreaterThanOrEqual(1);
      expect(cxxJobs()).toBeLessThanOrEqual(availableParallelism());
      process.env.TSPTO_CXX_JOBS = "3";
      expect(cxxJobs()).toBe(3);
      process.env.TSPTO_CXX_JOBS = "many";
      expect(() => cxxJobs()).toThrow(TsptoConfigError);
      expect(() => cxxJobs()).toThrow('TSPTO_CXX_JOBS must be an integer in [1, 256], got "many"');
    } finally {
      if (saved === undefined) delete process.env.TSPTO_CXX_JOBS; else process.env.TSPTO_CXX_JOBS = saved;
    }
  });

  it("compileUnits reports the failing compile's status and output, and stops compiles at the time limit", () => {
    const dir = tmpDir("units-run");
    const failing = runSteps(compileUnits(dir, [[0], [1]], (g) => ["/bin/sh", "-c", g[0] === 1 ? "echo 'part 1 is broken' >&2; exit 3" : "exit 0"], () => ["true"], 60_000));
    expect(failing.status).toBe(3);
    expect(failing.stderr).toContain("part 1 is broken");
    const t0 = Date.now();
    const slow = runSteps(compileUnits(dir, [[0], [1]], () => ["/bin/sh", "-c", "exec sleep 30"], () => ["true"], 1_000));
    expect((slow.error as NodeJS.ErrnoException | undefined)?.code).toBe("ETIMEDOUT");
    expect(Date.now() - t0).toBeLessThan(20_000);
    // the objects, logs and marks of the run are gone
    expect(readdirSync(dir).filter((f) => f !== "build")).toEqual([]);
  });

  it("the time limit stops every process a compile started (g++'s cc1plus and as), not only the compiler", () => {
    const dir = tmpDir("units-tree");
    const pids = tmpDir("units-tree-pids");
    // each "compiler" starts a child that would outlive it, records its pid, and waits
    const hang = (g: readonly number[]) => ["/bin/sh", "-c", `sleep 60 & echo $! > '${join(pids, `child${g[0]}`)}'; wait`];
    const r = runSteps(compileUnits(dir, [[0], [1]], hang, () => ["true"], 1_000));
    expect((r.error as NodeJS.ErrnoException | undefined)?.code).toBe("ETIMEDOUT");
    const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
    const children = [0, 1].map((g) => Number(readFileSync(join(pids, `child${g}`), "utf8")));
    const deadline = Date.now() + 5_000;
    while (children.some(alive) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    const left = children.filter(alive);
    for (const pid of left) process.kill(pid, "SIGKILL"); // (only if the test fails: never leave them behind)
    expect(left).toEqual([]);
  });
});

/** A GPT-2-shaped layer (tiny dimensions): 8 kernels, about 40 KB of C++: two parts on two jobs. */
function layerProgram() {
  const P = gpt2Programs(GPT2_TINY);
  const { D, F, C, S, D3 } = P.dims;
  let seed = 40;
  const w = (shape: number[], scale = 0.05) => tensor(randn(shape, { seed: seed++ }).toArray().map((v) => v * scale), { shape });
  const mask = tensor(Array.from({ length: S * C }, (_, n) => (n % C <= 3 ? 0 : -1e30)), { shape: [S, C] });
  const args: (HostTensor | number)[] = [w([S, D], 1), w([1, D]).add(1), w([1, D]), w([D, D3]), w([1, D3]), w([D, D]), w([1, D]), w([1, D]).add(1), w([1, D]),
    w([D, F]), w([1, F]), w([F, D]), w([1, D]), w([C, D]), w([C, D]), mask, 3, zeros([S, D])];
  return { fn: P.layer, args };
}

describe("a program built as several objects", () => {
  const saved = { jobs: process.env.TSPTO_CXX_JOBS, cxx: process.env.CXX };
  afterEach(() => {
    if (saved.jobs === undefined) delete process.env.TSPTO_CXX_JOBS; else process.env.TSPTO_CXX_JOBS = saved.jobs;
    if (saved.cxx === undefined) delete process.env.CXX; else process.env.CXX = saved.cxx;
  });

  it("links the parts into one library that computes what interp computes; its stamp lists the parts", () => {
    process.env.TSPTO_CXX_JOBS = "2";
    const { fn, args } = layerProgram();
    const dir = tmpDir("units-layer");
    const art = compileArtifact(fn.lower(...args), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "a") });
    const stamp = JSON.parse(readFileSync(join(art.outputDir, "build", "stamp.json"), "utf8")) as { units?: number[][] };
    expect(stamp.units).toHaveLength(2);
    expect(stamp.units!.flat().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(readdirSync(join(art.outputDir, "build")).sort()).toEqual(["libprogram.so", "stamp.json"]);
    const fresh = () => args.map((a) => (typeof a === "number" ? a : tensor(a.toArray(), { shape: [...a.shape], dtype: a.dtype })));
    const onCpu = fresh(), onInterp = fresh();
    const w = new ChipWorker(new RunConfig());
    try {
      w.run(CompiledProgram.fromDir(art.outputDir), ...onCpu);
    } finally {
      w.close();
    }
    (fn as (...a: unknown[]) => unknown)(...onInterp, new RunConfig({ platform: "interp" }));
    for (const i of [13, 14, 17]) assertClose(onCpu[i] as HostTensor, onInterp[i] as HostTensor, { rtol: 1e-4, atol: 1e-4 });
  });

  it("one job: one compile, no parts in the stamp", () => {
    process.env.TSPTO_CXX_JOBS = "1";
    const { fn, args } = layerProgram();
    const art = compileArtifact(fn.lower(...args), { platform: "cpu", packageVersion: "test", outputDir: join(tmpDir("units-one"), "a") });
    const stamp = JSON.parse(readFileSync(join(art.outputDir, "build", "stamp.json"), "utf8")) as { units?: number[][] };
    expect(stamp.units).toBeUndefined();
  });

  it("a part that does not compile is a C++ compilation error with the compiler's message", () => {
    const dir = tmpDir("units-broken");
    const script = join(dir, "picky-cxx.sh");
    // a compiler that answers --version, refuses the precompiled header and the object of unit 1
    writeFileSync(script, `#!/bin/sh
if [ "$1" = "--version" ]; then echo "picky-cxx 1.0"; exit 0; fi
case "$*" in *c++-header*) exit 1;; *-DTSPTO_UNIT_1\\ *) echo "program.cpp:1:1: error: unit 1 refused" >&2; exit 1;; esac
exec g++ "$@"
`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    process.env.TSPTO_CXX_JOBS = "2";
    const { fn, args } = layerProgram();
    let err: (Error & { code?: string }) | undefined;
    try {
      compileArtifact(fn.lower(...args), { platform: "cpu", packageVersion: "test", outputDir: join(dir, "a") });
    } catch (e) {
      err = e as Error & { code?: string };
    }
    expect(err).toBeInstanceOf(TsptoCompileError);
    expect(err!.code).toBe("E_CXX");
    expect(err!.message).toContain(`C++ compilation of program 'layer' failed: '${script}' exited with code 1`);
    expect(err!.message).toContain("error: unit 1 refused");
    expect(existsSync(join(dir, "a", "build", "libprogram.so"))).toBe(false);
  });
});

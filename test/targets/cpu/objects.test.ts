// The object cache (src/targets/cpu/objects.ts): a heavy task's object is compiled once and
// linked as it is by a later program that shares it (here: a second specialization of the
// same jit function), proved by a compiler wrapper that logs what it is asked to build; a
// damaged entry is rebuilt, never linked; the cache off means no entries; and how units
// become objects (planUnits).
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChipWorker, CompiledProgram, RunConfig, assertClose, pl, randn, tensor, zeros, type HostTensor } from "../../../src/index.js";
import { getTarget } from "../../../src/targets/index.js";
import { SOLO_WEIGHT, planUnits } from "../../../src/targets/cpu/units.js";
import { fetchObject, storeObject } from "../../../src/targets/cpu/objects.js";

const dirs: string[] = [];
const tmp = (tag: string) => { const d = mkdtempSync(join(tmpdir(), `tspto-obj-${tag}-`)); dirs.push(d); return d; };
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

// a product over a run-time M (its whole-tile and remainder forms: ~90 KB of C++, a unit of its
// own) and a light elementwise task whose shape makes each specialization a new program
const twoTasks = pl.jit(function twoTasks(a: pl.Tensor<["M", 70], pl.FP32>, b: pl.Tensor<[70, 300], pl.FP32>, c: pl.Out<pl.Tensor<["M", 300], pl.FP32>>,
  x: pl.Tensor, y: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(c, pl.matmul(a, b)); });
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(y, pl.mul(x, 2)); });
});

const argsFor = (n: number) => [randn([130, 70], { seed: 1 }), randn([70, 300], { seed: 2 }), zeros([130, 300]), randn([8, n], { seed: 3 }), zeros([8, n])];
interface Stamp { units?: number[][]; cachedUnits?: number[] }

/** Builds the specialization for `n` into a fresh directory; its stamp, the units' names and the compiles the wrapper logged. */
async function build(n: number, log: string) {
  writeFileSync(log, "");
  const args = argsFor(n);
  const lowered = (twoTasks as unknown as { lower(...a: unknown[]): import("../../../src/ir/index.js").Program }).lower(...args);
  const art = await getTarget("cpu").buildAsync!(lowered, { packageVersion: "test", outputDir: join(tmp("art"), "a") });
  const stamp = JSON.parse(readFileSync(join(art.outputDir, "build", "stamp.json"), "utf8")) as Stamp;
  const product = art.meta.kernels.findIndex((k) => k.name === "twoTasks_incore_0") + 1; // (unit i >= 1 is the i-th kernel)
  const compiles = readFileSync(log, "utf8").split("\n").filter((l) => l.includes("kernels/program.cpp"));
  // the shared task was compiled: in the whole program's compile, or in an object that holds it
  const builtProduct = compiles.some((l) => !l.includes("-DTSPTO_UNITS") || l.includes(`-DTSPTO_UNIT_${product} `));
  return { art, args, stamp, product, compiles, builtProduct };
}

/** The library computes what interp computes (a few rows of the run-time M: interp is slow). */
function checkNumerics(dir: string, built: HostTensor[]) {
  const n = built[3].shape[1], args = [randn([9, 70], { seed: 5 }), built[1], zeros([9, 300]), built[3], zeros([8, n])];
  const fresh = () => args.map((a) => tensor(a.toArray(), { shape: [...a.shape], dtype: a.dtype }));
  const onCpu = fresh(), onInterp = fresh();
  const w = new ChipWorker(new RunConfig());
  try { w.run(CompiledProgram.fromDir(dir), ...onCpu); } finally { w.close(); }
  (twoTasks as unknown as (...a: unknown[]) => void)(...onInterp, new RunConfig({ platform: "interp" }));
  for (const i of [2, 4]) assertClose(onCpu[i], onInterp[i], { rtol: 1e-5, atol: 1e-5 });
}

describe("the object cache", () => {
  const saved = { jobs: process.env.TSPTO_CXX_JOBS, cxx: process.env.CXX, cache: process.env.TSPTO_CACHE_DIR };
  let log = "";
  beforeEach(() => {
    // a compiler that logs every command line it is given, then runs g++
    const d = tmp("cxx");
    log = join(d, "log");
    const script = join(d, "logging-cxx.sh");
    writeFileSync(script, `#!/bin/sh\necho "$*" >> '${log}'\nexec g++ "$@"\n`);
    chmodSync(script, 0o755);
    process.env.CXX = script;
    process.env.TSPTO_CXX_JOBS = "2";
    process.env.TSPTO_CACHE_DIR = tmp("cache");
  });
  afterEach(() => {
    for (const [k, v] of [["TSPTO_CXX_JOBS", saved.jobs], ["CXX", saved.cxx], ["TSPTO_CACHE_DIR", saved.cache]] as const) {
      if (v === undefined) delete process.env[k]; else process.env[k] = v;
    }
  });

  it("a task two specializations share is compiled once: the second build links the first one's object", async () => {
    const first = await build(16, log);
    expect(first.stamp.cachedUnits).toBeUndefined();
    expect(first.builtProduct).toBe(true);
    const entries = readdirSync(join(process.env.TSPTO_CACHE_DIR!, "obj"));
    expect(entries.filter((f) => f.endsWith(".o"))).toHaveLength(1);
    expect(entries.filter((f) => f.endsWith(".sha256"))).toHaveLength(1);

    const second = await build(24, log);
    expect(second.art.outputDir).not.toBe(first.art.outputDir);
    expect(second.stamp.cachedUnits).toEqual([second.product]);
    // nothing was compiled for the shared task: only the other units
    expect(second.compiles.length).toBeGreaterThan(0);
    expect(second.builtProduct).toBe(false);
    expect(readdirSync(join(second.art.outputDir, "build")).sort()).toEqual(["libprogram.so", "stamp.json"]);
    checkNumerics(first.art.outputDir, first.args);
    checkNumerics(second.art.outputDir, second.args);

    // one job: a cache hit still splits the program so the shared object is linked
    process.env.TSPTO_CXX_JOBS = "1";
    const third = await build(32, log);
    expect(third.stamp.cachedUnits).toEqual([third.product]);
    expect(third.builtProduct).toBe(false);
    checkNumerics(third.art.outputDir, third.args);
  });

  it("a damaged entry is compiled again and replaced, never linked", async () => {
    await build(16, log);
    const obj = join(process.env.TSPTO_CACHE_DIR!, "obj");
    const o = readdirSync(obj).find((f) => f.endsWith(".o"))!;
    const good = readFileSync(join(obj, o));
    writeFileSync(join(obj, o), good.subarray(0, good.length >> 1)); // torn: its recorded hash no longer matches
    const again = await build(24, log);
    expect(again.stamp.cachedUnits).toBeUndefined();
    expect(again.builtProduct).toBe(true);
    checkNumerics(again.art.outputDir, again.args);
    expect(readFileSync(join(obj, o)).length).toBe(good.length);
    expect((await build(32, log)).stamp.cachedUnits).toEqual([again.product]);
  });

  it("TSPTO_CACHE_DIR=off: no object is kept or taken", async () => {
    process.env.TSPTO_CACHE_DIR = "off";
    await build(16, log);
    const second = await build(24, log);
    expect(second.stamp.cachedUnits).toBeUndefined();
    expect(second.builtProduct).toBe(true);
  });

  it("an entry is not taken by a build with other flags (the key holds the compiler, flags and CPU)", async () => {
    await build(16, log);
    process.env.TSPTO_CXX_OPT = "-O2";
    try {
      const other = await build(24, log);
      expect(other.stamp.cachedUnits).toBeUndefined();
      expect(existsSync(join(process.env.TSPTO_CACHE_DIR!, "obj"))).toBe(true);
      expect(readdirSync(join(process.env.TSPTO_CACHE_DIR!, "obj")).filter((f) => f.endsWith(".o"))).toHaveLength(2);
    } finally {
      delete process.env.TSPTO_CXX_OPT;
    }
  });
});

describe("planUnits", () => {
  const u = (index: number, weight: number) => ({ index, name: `u${index}`, weight });
  it("heavy units with a key are objects of their own, light ones grouped; cached ones are not built", () => {
    const units = [u(0, 3_000), u(1, SOLO_WEIGHT + 10_000), u(2, 5_000), u(3, SOLO_WEIGHT), u(4, 9_000)];
    const keys = new Map([[1, "k1"], [3, "k3"]]);
    const plan = planUnits(units, 2, keys)!;
    expect(plan.cached).toEqual([]);
    expect(plan.build).toContainEqual([1]);
    expect(plan.build).toContainEqual([3]);
    expect(plan.build.flat().sort()).toEqual([0, 1, 2, 3, 4]);
    expect(plan.keys[plan.build.findIndex((g) => g.length === 1 && g[0] === 1)]).toBe("k1");
    expect(plan.slots).toHaveLength(2);
    expect(plan.slots.flat().sort()).toEqual(plan.build.map((_, i) => i));
    const hit = planUnits(units, 2, keys, new Set([1]))!;
    expect(hit.cached).toEqual([1]);
    expect(hit.build.flat()).not.toContain(1);
    // no keys (cache off): what unitGroups gives; a small program is one compile
    expect(planUnits(units, 2)!.build.every((g) => g.length >= 1)).toBe(true);
    expect(planUnits([u(0, 1_000), u(1, 2_000)], 2)).toBeNull();
    // one job: without keys one compile; with keys the heavy units still apart (in turn), the rest in one object
    expect(planUnits(units, 1)).toBeNull();
    const turn = planUnits(units, 1, keys)!;
    expect(turn.slots).toHaveLength(1);
    expect(turn.build).toHaveLength(3);
    const one = planUnits(units, 1, keys, new Set([1]))!;
    expect(one.slots).toHaveLength(1);
    expect(one.cached).toEqual([1]);
    // everything cached but the orchestration
    const all = planUnits([u(0, SOLO_WEIGHT), u(1, SOLO_WEIGHT)], 1, new Map([[0, "a"], [1, "b"]]), new Set([0, 1]))!;
    expect(all.build).toEqual([]);
    expect(all.cached).toEqual([0, 1]);
  });
});

describe("fetchObject / storeObject", () => {
  it("hand out only a regular file whose bytes match the recorded hash; a link, a bad hash or a missing half is no entry", () => {
    const dir = tmp("entries"), src = join(tmp("src"), "u.o"), dest = join(tmp("dest"), "got.o");
    writeFileSync(src, "object bytes");
    storeObject(dir, "k1", src);
    expect(readdirSync(dir).sort()).toEqual(["k1.o", "k1.sha256"]);
    expect(fetchObject(dir, "k1", dest)).toBe(true);
    expect(readFileSync(dest, "utf8")).toBe("object bytes");
    // an entry that is a link (to a file with the right bytes) is not followed
    const outside = join(tmp("outside"), "x.o");
    writeFileSync(outside, "object bytes");
    symlinkSync(outside, join(dir, "k2.o"));
    writeFileSync(join(dir, "k2.sha256"), readFileSync(join(dir, "k1.sha256")));
    expect(fetchObject(dir, "k2", dest)).toBe(false);
    // a hash that is not 64 hex digits, and an object without its hash
    writeFileSync(join(dir, "k3.o"), "object bytes");
    writeFileSync(join(dir, "k3.sha256"), "not a hash\n");
    expect(fetchObject(dir, "k3", dest)).toBe(false);
    writeFileSync(join(dir, "k4.o"), "object bytes");
    expect(fetchObject(dir, "k4", dest)).toBe(false);
    expect(fetchObject(dir, "nothing", dest)).toBe(false);
  });
});

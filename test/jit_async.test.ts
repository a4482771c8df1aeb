// compileAsync and callAsync on a cache miss: the C++ compile runs as a child process the event
// loop does not wait for (src/targets/steps.ts), one build per specialization however many
// calls wait for it, the same CompiledProgram as compile(), and the same errors.
import { describe, it, expect } from "vitest";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pl, RunConfig, CompiledProgram, randn, zeros, assertClose } from "tspto";
import { ir } from "tspto";
import { runSteps, runStepsAsync, spawnAsync, type Steps, type SpawnResult } from "../src/targets/steps.js";

/** A fresh kernel per test (its own in-memory cache), with `salt` in its code so the disk cache misses. */
function makeKernel(salt: number) {
  return pl.jit(function asyncScale(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(out, pl.add(pl.mul(a, 3), salt));
    });
    return out;
  }, { scope: { salt } });
}

/** How often a 2 ms timer fired while `p` ran, and how long it ran. */
async function ticksDuring<T>(p: () => Promise<T>): Promise<{ value: T; ticks: number; ms: number }> {
  let ticks = 0;
  const iv = setInterval(() => ticks++, 2);
  const t0 = performance.now();
  try {
    const value = await p();
    return { value, ticks, ms: performance.now() - t0 };
  } finally {
    clearInterval(iv);
  }
}

describe("compileAsync", () => {
  it("resolves to a CompiledProgram that runs; concurrent calls share one build; compile() then returns the same object", async () => {
    const k = makeKernel(Date.now() % 100_000 + 0.5);
    const a = randn([32, 48], { seed: 3 }), out = zeros([32, 48]);
    const cfg = new RunConfig({ saveKernelsDir: mkdtempSync(join(tmpdir(), "tspto-async-")) });
    const [c1, c2] = await Promise.all([k.compileAsync(a, out, cfg), k.compileAsync(a, out, cfg)]);
    expect(c1).toBeInstanceOf(CompiledProgram);
    expect(c2).toBe(c1);
    expect(k.cacheSize).toBe(1);
    expect(k.compile(a, out, cfg)).toBe(c1);
    k(a, out, cfg);
    assertClose(out, a.mul(3).add(zeros([32, 48]).add(k.def.opts.scope!.salt as number)), { rtol: 1e-6 });
  });

  it("the event loop turns while g++ compiles (a timer keeps firing), where compile() holds it", async () => {
    const salt = Date.now() % 100_000 + 0.25;
    const a = randn([64, 64], { seed: 4 }), out = zeros([64, 64]);
    // the passes and the code generation run before the first await: warm them up (and the
    // parser) with the interp platform, so what is timed is the C++ build
    const k = makeKernel(salt);
    k.compile(a, out, new RunConfig({ platform: "interp" }));
    const { ticks, ms } = await ticksDuring(() => k.compileAsync(a, out));
    // a timer every 2 ms over a build of >= 60 ms: far more than the handful a blocked loop
    // lets through (the sync compile below gets at most one, after it returns)
    expect(ms).toBeGreaterThan(20);
    expect(ticks).toBeGreaterThan(Math.min(10, ms / 8));
    const k2 = makeKernel(salt + 1);
    k2.compile(a, out, new RunConfig({ platform: "interp" }));
    const blocked = await ticksDuring(async () => k2.compile(a, out));
    expect(blocked.ticks).toBe(0);
  });

  it("callAsync on a cache miss compiles off the loop and launches", async () => {
    const k = makeKernel(Date.now() % 100_000 + 0.75);
    const a = randn([16, 16], { seed: 5 }), out = zeros([16, 16]);
    const r = await k.callAsync(a, out);
    expect(r).toBe(out);
    assertClose(out, a.mul(3).add(zeros([16, 16]).add(k.def.opts.scope!.salt as number)), { rtol: 1e-6 });
    expect(k.cacheSize).toBe(1);
  });

  it("a C++ compile that fails rejects with the same E_CXX as compile() throws, and a later call builds again", async () => {
    const k = makeKernel(Date.now() % 100_000 + 0.125);
    const a = randn([8, 8], { seed: 6 }), out = zeros([8, 8]);
    const saved = process.env.CXX;
    process.env.CXX = "/bin/false";
    try {
      await expect(k.compileAsync(a, out)).rejects.toThrow(/E_CXX[\s\S]*C\+\+ compilation of program 'asyncScale' failed: '\/bin\/false' exited with code 1/);
    } finally {
      if (saved === undefined) delete process.env.CXX; else process.env.CXX = saved;
    }
    expect(k.cacheSize).toBe(0);
    await expect(k.compileAsync(a, out)).resolves.toBeInstanceOf(CompiledProgram);
  });

  it("ir.compileAsync builds a lowered program like ir.compile", async () => {
    const k = makeKernel(Date.now() % 100_000 + 0.375);
    const a = randn([8, 24], { seed: 7 }), out = zeros([8, 24]);
    const c = await ir.compileAsync(k.lower(a, out), { outputDir: mkdtempSync(join(tmpdir(), "tspto-async-ir-")) });
    expect(c).toBeInstanceOf(CompiledProgram);
    expect(c.platform).toBe("cpu");
  });
});

describe("build steps (src/targets/steps.ts)", () => {
  function* twoSteps(): Steps<string[]> {
    const a: SpawnResult = yield { argv: ["/bin/sh", "-c", "echo one; echo err >&2; exit 3"], timeoutMs: 10_000 };
    const b: SpawnResult = yield { argv: ["/bin/sh", "-c", "exec sleep 5"], timeoutMs: 300 };
    const c: SpawnResult = yield { argv: ["/nonexistent/tspto-no-such-compiler"], timeoutMs: 10_000 };
    return [String(a.status), a.stdout.trim(), a.stderr.trim(), String((b.error as NodeJS.ErrnoException | undefined)?.code), String(b.status === 0),
      String((c.error as NodeJS.ErrnoException | undefined)?.code)];
  }
  it("run synchronously and asynchronously, a build sees the same results: status, output, the time limit, a missing program", async () => {
    const sync = runSteps(twoSteps());
    const async = await runStepsAsync(twoSteps());
    expect(sync).toEqual(["3", "one", "err", "ETIMEDOUT", "false", "ENOENT"]);
    expect(async).toEqual(sync);
  });
  it("spawnAsync stops a process at its limit, and what it started (a shell's child keeps no pipe open)", async () => {
    const t0 = Date.now();
    const r = await spawnAsync({ argv: ["/bin/sh", "-c", "sleep 30"], timeoutMs: 200 });
    expect((r.error as NodeJS.ErrnoException | undefined)?.code).toBe("ETIMEDOUT");
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

// The default pipeline on kernels written in the DSL: outlining, memory planning (reuse and
// the capacity check), dependency derivation, the Misplaced error, and pass dumps.
import { describe, it, expect } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pl, ir, RunConfig, randn, zeros, assertClose } from "tspto";
import { forEachStmt, type TileType, type Func } from "../../src/ir/index.js";
import { DEFAULT_PASSES } from "../../src/passes/index.js";

const N = 64;

// A chain of tiles where early ones die: memory planning should reuse their space.
const chain = pl.jit(function chain(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t0 = pl.load(a, [0, 0], [N, N]);
    const t1 = pl.exp(t0);
    const t2 = pl.move(t1, pl.Mem.Vec);
    const t3 = pl.move(pl.neg(t2), pl.Mem.Vec);
    const t4 = pl.move(pl.abs(t3), pl.Mem.Vec);
    pl.store(pl.relu(t4), [0, 0], out);
  });
  return out;
});

const huge = pl.jit(function huge(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t0 = pl.load(a, [0, 0], [512, 512]);
    const t1 = pl.load(a, [512, 0], [512, 512]);
    pl.store(pl.add(t0, t1), [0, 0], out);
  });
  return out;
});

const misplaced = pl.jit(function misplaced(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.assign(out, pl.add(a, b));
  return out;
});

const outside = pl.jit(function outside(a: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.load(a, [0, 8], [N, N]), [0, 0], out);
  });
  return out;
});

// two scopes: the second reads what the first wrote
const twoScopes = pl.jit(function twoScopes(a: pl.Tensor, mid: pl.InOut<pl.Tensor>, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.mul(pl.load(a, [0, 0], [N, N]), 3), [0, 0], mid);
  });
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.add(pl.load(mid, [0, 0], [N, N]), 1), [0, 0], out);
  });
  return out;
});

const tiles = (f: Func) => {
  const out: TileType[] = [];
  forEachStmt(f.body, (s) => { if (s.kind === "assign") for (const t of s.targets) if (t.type.kind === "tile") out.push(t.type); });
  return out;
};

describe("default pipeline", () => {
  it("outlines pl.at into an InCore kernel and plans addresses with reuse", () => {
    const a = randn([N, N], { seed: 1 });
    const p = chain.lower(a, zeros([N, N]));
    const k = p.functions.find((f) => f.fnKind === "incore")!;
    expect(k.name).toBe("chain_incore_0");
    const ts = tiles(k);
    expect(ts.every((t) => t.addr !== null && t.addr % 64 === 0)).toBe(true);
    const bytes = N * N * 4;
    // five materialized tiles, but never more than two alive at once
    expect(new Set(ts.map((t) => t.addr)).size).toBeLessThan(ts.length);
    expect(k.attrs.scratchBytes).toBeLessThanOrEqual(2 * bytes);
    for (const platform of ["cpu", "interp"]) {
      const out = zeros([N, N]);
      chain(a, out, new RunConfig({ platform: platform as "cpu" }));
      const want = a.toArray().map((x) => Math.max(Math.abs(-Math.exp(x)), 0));
      assertClose(out, { data: Float32Array.from(want), shape: [N, N] } as never, { rtol: 1e-5, atol: 1e-5 });
    }
  });

  it("reports tiles over the scratch capacity with their sizes", () => {
    const a = randn([1024, 512], { seed: 2 });
    expect(() => huge.lower(a, zeros([512, 512]))).toThrow(/\[E_SCRATCH\] tiles of kernel 'huge_incore_0' need 2097152 bytes of on-chip scratch, capacity is 1048576 bytes; live here: .*1024 KiB/);
    expect(() => huge.lower(a, zeros([512, 512]))).toThrow(/pipeline\.test\.ts:\d+:\d+/);
  });

  it("rejects a tensor op outside pl.at with the Misplaced message", () => {
    const a = randn([N, N], { seed: 3 });
    expect(() => misplaced.lower(a, a, zeros([N, N]))).toThrow("Misplaced tensor op 'tensor.add' in Orchestration function (should be inside InCore block)");
    expect(() => misplaced.lower(a, a, zeros([N, N]))).toThrow(/pipeline\.test\.ts:\d+:\d+[\s\S]*\^/);
  });

  it("rejects a static load window outside the tensor at compile time", () => {
    const a = randn([N, N], { seed: 4 });
    expect(() => outside.lower(a, zeros([N, N]))).toThrow(/load window \[0, 8\] \+ \[64, 64\] is outside tensor 'a' of shape \[64, 64\] \(axis 1: 8\.\.72 > 64\)/);
  });

  it("derives task accesses from parameter directions; two scopes run in order", () => {
    const a = randn([N, N], { seed: 5 });
    const p = twoScopes.lower(a, zeros([N, N]), zeros([N, N]));
    const calls: unknown[] = [];
    forEachStmt(p.entryFunction.body, (s) => { if (s.kind === "eval" && s.expr.kind === "call") calls.push(s.expr.attrs); });
    expect(calls).toEqual([
      { callee: "twoScopes_incore_0", scopeId: 0, accesses: [{ arg: 0, mode: "read" }, { arg: 1, mode: "write" }] },
      { callee: "twoScopes_incore_1", scopeId: 1, accesses: [{ arg: 0, mode: "read" }, { arg: 1, mode: "write" }] },
    ]);
    const mid = zeros([N, N]), out = zeros([N, N]);
    twoScopes(a, mid, out);
    const want = a.toArray().map((x) => Math.fround(Math.fround(x * 3) + 1));
    assertClose(out, { data: Float32Array.from(want), shape: [N, N] } as never, { rtol: 0, atol: 0 });
  });

  it("writes a dump after every pass when asked", () => {
    const a = randn([N, N], { seed: 6 });
    const c = ir.compile(chain.lower(a, zeros([N, N])), { platform: "cpu", dumpPasses: true, outputDir: join(process.env.TMPDIR ?? "/tmp", `tspto-dump-${process.pid}`) });
    const dir = join(c.outputDir, "passes_dump");
    expect(existsSync(dir)).toBe(true);
    const names = readdirSync(dir).filter((f) => f.endsWith(".ts")).sort();
    expect(names[0]).toMatch(/^00_after_Input\.ts$/);
    expect(names.map((n) => n.replace(/^\d+_after_/, "").replace(/\.ts$/, ""))).toEqual(
      ["Input", ...DEFAULT_PASSES.map((q) => q.name)]);
    expect(DEFAULT_PASSES.map((q) => q.name).slice(0, 4)).toEqual(["Inline", "SSA", "Simplify", "OutlineScopes"]);
    expect(readFileSync(join(dir, names[names.length - 1]), "utf8")).toContain("pl.jit.incore(function chain_incore_0");
  });
});

// The v2 decode GEMV (src/codegen/cuda/gemv.ts): which contractions it takes, the grid the
// orchestration launches it with, and its static gates (nvcc + ptxas: 0 spills, 16-byte
// weight loads in the PTX). Numerics and bandwidth need a GPU (the GPU pack's v2 checks).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RunConfig, pl, zeros } from "tspto";
import { generateCuda } from "../../../src/codegen/cuda/index.js";
import { matchGemv } from "../../../src/codegen/cuda/gemv.js";
import { findNvcc } from "../../../src/targets/cuda/index.js";
import { compileSource, gateFailures, ptxEntry } from "./gates.js";

const cfg = new RunConfig({ platform: "cuda" });
const V2 = { kernels: "v2", wgmma: true } as const;
const nvcc = findNvcc();
const root = mkdtempSync(join(tmpdir(), "tspto-cuda-gemv-"));
afterAll(() => { rmSync(root, { recursive: true, force: true }); });

/** x [R, 4096] @ W [4096, 4096] in 256-wide tiles (a decode step's projection). */
function gemvOf(R: number) {
  return pl.jit(function gemv(x: pl.Tensor, w: pl.Tensor, y: pl.Out<pl.Tensor>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      for (const i of pl.range(0, R, R)) {
        for (const j of pl.range(0, 4096, 256)) {
          let acc = pl.matmul(pl.load(x, [i, 0], [R, 256]), pl.load(w, [0, j], [256, 256]));
          for (const k of pl.range(256, 4096, 256)) acc = pl.matmulAcc(acc, pl.load(x, [i, k], [R, 256]), pl.load(w, [k, j], [256, 256]));
          pl.store(acc, [i, j], y);
        }
      }
    });
    return y;
  }, { scope: { R } });
}
const lower = (R: number, dt: "bfloat16" | "float16" = "bfloat16") => gemvOf(R).lower(zeros([R, 4096], dt), zeros([4096, 4096], dt), zeros([R, 4096]), cfg);
const incore = (p: ReturnType<typeof lower>) => p.functions.find((f) => f.fnKind === "incore")!;

describe("cuda v2: the decode GEMV", () => {
  it("takes 1..16-row contractions (bf16 and f16 weights), 128 slabs of 32 columns, launched with its own grid", () => {
    for (const R of [1, 4, 16]) {
      const p = lower(R);
      const plan = matchGemv(p, incore(p))!;
      expect(plan, `R=${R}`).not.toBeNull();
      expect({ rows: plan.rows, slabs: plan.slabs, k: [plan.k0, plan.k1], j: [plan.j0, plan.j1] }).toEqual({ rows: R, slabs: 128, k: [0, 4096], j: [0, 4096] });
      const g = generateCuda(p, V2);
      expect(g.kernels[0].gemv).toBeDefined();
      // the descriptor: no band split (lo / hi slots -1), a grid of 128 blocks
      expect(g.entry).toMatch(/_slots\d+\[9\] = \{ x_0, w_1, y_2, -1, -1, 0, 0, 1, INT64_C\(128\) \};/);
      expect(g.source).toContain("const uint4 w = __ldg((const uint4*)(B + k * 4096 + col));");
    }
    const f16 = lower(2, "float16");
    expect(generateCuda(f16, V2).source).toContain("__half2float(__ushort_as_half(");
  });

  it("leaves 17+ rows (the TMA GEMM's or the tile lowering's), v1, and gemv: false to the other paths", () => {
    const p17 = lower(17);
    expect(matchGemv(p17, incore(p17))).toBeNull();
    const p = lower(1);
    for (const opts of [{}, { ...V2, gemv: false }]) {
      const g = generateCuda(p, opts);
      expect(g.kernels[0].gemv).toBeUndefined();
      expect(g.entry).not.toMatch(/-1, -1, 0, 0, 1, INT64_C\(128\)/);
    }
  });

  it.runIf(nvcc)("static gates: 0 spills, 16-byte weight loads (ld.global.nc.v4) for 1, 8 and 16 rows", async () => {
    for (const R of [1, 8, 16]) {
      const g = generateCuda(lower(R), V2);
      const out = await compileSource(nvcc!.path, root, `gemv${R}.cu`, g.source, "sm_90a");
      expect(out.status, out.ptxas).toBe(0);
      const sym = g.kernels[0].symbol;
      expect(gateFailures(out.ptxas, new Map([[sym, { registers: 255, smem: 48 * 1024 }]])), `R=${R}`).toEqual([]);
      expect(ptxEntry(out.ptx, sym)).toMatch(/ld\.global\.nc\.v4\.(u32|b32)/);
      expect(ptxEntry(out.ptx, sym)).not.toMatch(/ld\.local|st\.local/);
    }
  }, 300_000);
});

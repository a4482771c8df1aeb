// The cpu float matmul (src/codegen/cpp/emitters/matmul.ts) against interp, bit for bit in both
// contraction modes: column panels of 64, 32 and 16 plus a scalar tail, remainder rows, b packed
// in k chunks (k longer than a chunk: 128 rows for 64-wide panels, 256 for 32-wide ones), the
// accumulator read from another tile, and the in-place K loop (PlanMemory gives the
// loop-carried tile one address: no copies in the generated C++). float16 / bfloat16 inputs
// take the same path (fp32 accumulation).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pl, RunConfig, randn, zeros, type HostTensor } from "tspto";
import { cpuFlags } from "../../src/targets/cpu/toolchain.js";
import { selectIsa } from "../../src/targets/cpu/isa.js";
import { bf16BitsToF32 } from "../../src/ir/dtype.js";

const bits = (t: HostTensor) => Array.from(t.data as Float32Array);
const cfg = (platform: string, fpContract: "fast" | "off") => new RunConfig({ platform, fpContract });

// m = 13 (two row blocks of 6 and one row), n = 117 (64 + 32 + 16 + 5), k = 300 (64-wide panel:
// chunks 128 + 128 + 44; 32-wide panel: 256 + 44)
const M = 13, N = 117, K = 300;
const wide = pl.jit(function wide(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(a, [0, 0], [M, K]), pl.load(b, [0, 0], [K, N])), [0, 0], c);
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [M, N]), pl.load(a, [0, 0], [M, K]), pl.load(b, [0, 0], [K, N])), [0, 0], d);
  });
  return c;
});

// a K loop over [T, T] steps: the accumulator stays in place; T = 70: a 64-wide panel + 6 scalar
// columns, 11 row blocks of 6 + 4 rows; T = 48: a 32-wide and a 16-wide panel, 8 row blocks
const T1 = 70, S1 = 210, T2 = 48, S2 = 144;
const loop70 = pl.jit(function loop70(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, S1, T1)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      let acc = pl.matmul(pl.load(a, [i, 0], [T1, T1]), pl.load(b, [0, 0], [T1, T1]));
      for (const k of pl.range(T1, S1, T1)) {
        acc = pl.matmulAcc(acc, pl.load(a, [i, k], [T1, T1]), pl.load(b, [k, 0], [T1, T1]));
      }
      pl.store(acc, [i, 0], c);
    });
  }
  return c;
});
const loop48 = pl.jit(function loop48(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, S2, T2)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      let acc = pl.matmul(pl.load(a, [i, 0], [T2, T2]), pl.load(b, [0, 0], [T2, T2]));
      for (const k of pl.range(T2, S2, T2)) {
        acc = pl.matmulAcc(acc, pl.load(a, [i, k], [T2, T2]), pl.load(b, [k, 0], [T2, T2]));
      }
      pl.store(acc, [i, 0], c);
    });
  }
  return c;
});

// the old accumulator is read after the matmulAcc: it must not be overwritten in place
const keepsOld = pl.jit(function keepsOld(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    let acc = pl.matmul(pl.load(a, [0, 0], [16, 16]), pl.load(b, [0, 0], [16, 16]));
    let prev = pl.sub(acc, acc);
    for (const k of pl.range(16, 64, 16)) {
      const next = pl.matmulAcc(acc, pl.load(a, [0, k], [16, 16]), pl.load(b, [k, 0], [16, 16]));
      prev = pl.sub(next, acc);
      acc = next;
    }
    pl.store(pl.add(acc, prev), [0, 0], c);
  });
  return c;
});

/** Exact products in double, and the gamma_K bound of each element. */
function within(got: Float32Array, a: Float32Array, b: Float32Array, m: number, k: number, n: number, c0?: Float32Array): void {
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = c0 ? c0[i * n + j] : 0, abs = Math.abs(s);
    for (let q = 0; q < k; q++) { const p = a[i * k + q] * b[q * n + j]; s += p; abs += Math.abs(p); }
    const e = got[i * n + j];
    if (!(Math.abs(e - s) <= (k + 1) * 2 ** -24 * abs * 1.0001)) throw new Error(`(${i}, ${j}): ${e} vs exact ${s}`);
  }
}

/** The values of a bf16 host tensor (its data: the bits). */
const bf16Values = (t: HostTensor): Float32Array => Float32Array.from(t.data as Uint16Array, bf16BitsToF32);

const generated = (compiled: { outputDir: string }) => readFileSync(join(compiled.outputDir, "kernels", "program.cpp"), "utf8");

describe("cpu float matmul: register blocks, panels and k chunks agree with interp", () => {
  for (const fp of ["fast", "off"] as const) {
    it(`64 + 32 + 16 + scalar columns, 6-row blocks + remainder, k in chunks (fpContract ${fp})`, () => {
      const A = randn([M, K], { seed: 41 }), B = randn([K, N], { seed: 42 }), C0 = randn([M, N], { seed: 43 });
      const run = (p: string) => { const c = zeros([M, N]), d = zeros([M, N]); wide(A, B, C0, c, d, cfg(p, fp)); return [c, d]; };
      const [cc, cd] = run("cpu"), [ic, id] = run("interp");
      expect(bits(cc)).toEqual(bits(ic));
      expect(bits(cd)).toEqual(bits(id));
      within(cc.data as Float32Array, A.data as Float32Array, B.data as Float32Array, M, K, N);
      within(cd.data as Float32Array, A.data as Float32Array, B.data as Float32Array, M, K, N, C0.data as Float32Array);
    });

    for (const [f, T, S] of [[loop70, T1, S1], [loop48, T2, S2]] as const) {
      it(`K loop of [${T}, ${T}] steps accumulates in place (fpContract ${fp})`, () => {
        const A = randn([S, S], { seed: 51 }), B = randn([S, T], { seed: 52 });
        const run = (p: string) => { const c = zeros([S, T]); f(A, B, c, cfg(p, fp)); return c; };
        const cpu = run("cpu");
        expect(bits(cpu)).toEqual(bits(run("interp")));
        within(cpu.data as Float32Array, A.data as Float32Array, B.data as Float32Array, S, S, T);
      });
    }

    for (const dtype of ["float16", "bfloat16"] as const) {
      it(`${dtype} inputs through the blocked path (fpContract ${fp})`, () => {
        const A = randn([M, K], { seed: 61, dtype }), B = randn([K, N], { seed: 62, dtype }), C0 = randn([M, N], { seed: 63 });
        const run = (p: string) => { const c = zeros([M, N]), d = zeros([M, N]); wide(A, B, C0, c, d, cfg(p, fp)); return [c, d]; };
        const [cc, cd] = run("cpu"), [ic, id] = run("interp");
        // bfloat16 "fast" on AMX takes tdpbf16ps, which sums in its own order (matmul_dot.test.ts
        // tests that path): there, within the float64 bound; every other case bit for bit
        if (dtype === "bfloat16" && fp === "fast" && selectIsa(cpuFlags()) === "amx") {
          const a = bf16Values(A), b = bf16Values(B);
          within(cc.data as Float32Array, a, b, M, K, N);
          within(cd.data as Float32Array, a, b, M, K, N, C0.data as Float32Array);
        } else {
          expect(bits(cc)).toEqual(bits(ic));
          expect(bits(cd)).toEqual(bits(id));
        }
      });
    }
  }

  it("the K loop's generated C++ copies no tile (one address for the loop-carried accumulator)", () => {
    const A = randn([210, 210], { seed: 1 }), B = randn([210, 70], { seed: 2 });
    const src = generated(loop70.compile(A, B, zeros([210, 70])));
    expect(src).toContain("tile.matmulAcc");
    expect(src).not.toMatch(/memmove|memcpy\(scratch/);
    const p = loop70.lower(A, B, zeros([210, 70]));
    const k = p.functions.find((f) => f.fnKind === "incore")!;
    const text = p.asText();
    // acc (the matmul), the loop's iterArg and the matmulAcc result: one address
    const addrs = new Set([...text.matchAll(/const (acc\w*): pl\.Tile<\[70, 70\], pl\.FP32, pl\.Mem\.\w+, \{ addr: (\d+) \}>/g)].map((m) => m[2]));
    expect(addrs.size).toBe(1);
    expect(k.attrs.scratchBytes).toBeGreaterThan(0);
  });

  it("an accumulator read again after the matmulAcc keeps its own address (not overwritten in place)", () => {
    const A = randn([16, 64], { seed: 71 }), B = randn([64, 16], { seed: 72 });
    for (const fp of ["fast", "off"] as const) {
      const run = (p: string) => { const c = zeros([16, 16]); keepsOld(A, B, c, cfg(p, fp)); return c; };
      expect(bits(run("cpu"))).toEqual(bits(run("interp")));
    }
    const src = generated(keepsOld.compile(A, B, zeros([16, 16])));
    expect(src).toMatch(/memmove\(scratch \+ \d+, scratch \+ \d+, 1024\);  \/\/ acc/);
  });
});

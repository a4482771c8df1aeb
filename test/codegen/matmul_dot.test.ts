// The bf16 and int8 matmuls on the CPU's dot-product / matrix units (issue 21; kernels in
// src/codegen/cpp/prelude_dot.ts, called by emitters/matmul.ts), on every ISA path this machine
// has (TSPTO_CPU_ISA set per build: the build identity follows it): against interp bit for bit
// (bf16: the dot paths sum in k order like interp; data without denormals; AMX, which sums each
// instruction's 32 products inside the unit, within 2^-20 and differing somewhere), against an
// independent float64 / BigInt formula, with edge tiles, odd K, run-time valid regions, the
// accumulator read in place, and the denormal rule of the dot paths (flushed to zero). The AMX
// kernels are compiled here with -mamx-* (this machine may not run them) and run only where the
// CPU has AMX.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runChild } from "../setup/child.js";
import { pl, RunConfig, randn, tensor, zeros, type HostTensor } from "tspto";
import { cpuFlags } from "../../src/targets/cpu/toolchain.js";
import { isasOf } from "../../src/targets/cpu/isa.js";
import { DOT_KERNELS } from "../../src/codegen/cpp/prelude_dot.js";
import { bf16BitsToF32 } from "../../src/ir/dtype.js";
import { INCLUDE_DIR, mulberry32 } from "./helpers.js";

const HAVE = isasOf(cpuFlags());
const saved = process.env.TSPTO_CPU_ISA;
afterEach(() => { if (saved === undefined) delete process.env.TSPTO_CPU_ISA; else process.env.TSPTO_CPU_ISA = saved; });
/** The jit functions of this file: their in-memory caches are keyed by arguments, not by the environment. */
const JITS: { clearCache(): void }[] = [];
const jit = <F>(f: F): F => { JITS.push(f as unknown as { clearCache(): void }); return f; };
/**
 * f() with TSPTO_CPU_ISA = isa: the ISA is read when a program is built (and is part of its disk
 * cache key, toolchainIdentity), so the in-memory specializations are dropped first.
 */
const withIsa = <T>(isa: string, f: () => T): T => {
  process.env.TSPTO_CPU_ISA = isa;
  for (const j of JITS) j.clearCache();
  try { return f(); } finally {
    if (saved === undefined) delete process.env.TSPTO_CPU_ISA; else process.env.TSPTO_CPU_ISA = saved;
    for (const j of JITS) j.clearCache();
  }
};
/**
 * withIsa for a test whose programs take seconds of g++: `warm` builds them with compileAsync
 * first (off the event loop: vitest's worker keeps answering, test/setup/checks.ts), so the
 * synchronous calls in `f` find them built.
 */
const withIsaAsync = async <T>(isa: string, warm: () => Promise<unknown>[], f: () => T): Promise<T> => {
  process.env.TSPTO_CPU_ISA = isa;
  for (const j of JITS) j.clearCache();
  try { await Promise.all(warm()); return f(); } finally {
    if (saved === undefined) delete process.env.TSPTO_CPU_ISA; else process.env.TSPTO_CPU_ISA = saved;
    for (const j of JITS) j.clearCache();
  }
};
const cfg = (platform: string, fpContract: "fast" | "off" = "fast") => new RunConfig({ platform, fpContract });
const f32 = (t: HostTensor) => Array.from(t.data as Float32Array);
const i32 = (t: HostTensor) => Array.from(t.data as Int32Array);
const objdump = (lib: string): string => {
  const r = spawnSync("objdump", ["-d", "--no-show-raw-insn", lib], { encoding: "utf8", maxBuffer: 256 << 20 });
  return r.status === 0 ? r.stdout : "";
};
const hasObjdump = spawnSync("objdump", ["--version"]).status === 0;

// edge tiles: M = 13 (6 + 6 + 1 rows), N = 117 (64 + 53 columns: a masked vector), K = 301 (odd:
// the last pair / quad padded), and a K loop over [70, 70] steps accumulating in place
const M = 13, N = 117, K = 301;
const wide = jit(pl.jit(function wide(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(a, [0, 0], [M, K]), pl.load(b, [0, 0], [K, N])), [0, 0], c);
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [M, N]), pl.load(a, [0, 0], [M, K]), pl.load(b, [0, 0], [K, N])), [0, 0], d);
  });
  return c;
}));
const T = 70, S = 210;
const loop = jit(pl.jit(function loop(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, S, T)) {
    pl.at(pl.Level.CORE_GROUP, () => {
      let acc = pl.matmul(pl.load(a, [i, 0], [T, T]), pl.load(b, [0, 0], [T, T]));
      for (const k of pl.range(T, S, T)) acc = pl.matmulAcc(acc, pl.load(a, [i, k], [T, T]), pl.load(b, [k, 0], [T, T]));
      pl.store(acc, [i, 0], c);
    });
  }
  return c;
}));
// whole 32 x 32 blocks with an init that is another tile (AMX loads it straight into the tiles)
const FM = 64, FN = 96, FK = 70;
const full = jit(pl.jit(function full(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [FM, FN]), pl.load(a, [0, 0], [FM, FK]), pl.load(b, [0, 0], [FK, FN])), [0, 0], d);
  });
  return d;
}));
// a run-time valid region: a's rows and the k extent L (b's valid rows), the rest never stored
const VM = 40, VK = 96, VN = 80;
const valid = jit(pl.jit(function valid(a: pl.Tensor, b: pl.Tensor, L: pl.Scalar<pl.INT64>, c: pl.InOut<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const at = pl.load(a, [0, 0], [VM, VK], { validShape: [L, VK] });
    const bt = pl.load(b, [0, 0], [VK, VN], { validShape: [L, VN] });
    pl.store(pl.matmul(pl.load(a, [0, 0], [VM, VK]), bt), [0, 0], c);
    pl.store(pl.matmul(at, pl.load(b, [0, 0], [VK, VN])), [VM, 0], c);
  });
  return c;
}));
// the tensor form (auto-tiled, K accumulated tile by tile)
const tmat = jit(pl.jit(function tmat(a: pl.Tensor, b: pl.Tensor, out: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => { pl.assign(out, pl.matmul(a, b)); });
  return out;
}));

/** float64 sum of exact products (bf16 x bf16 is exact in fp32 and in double), and the gamma_K bound. */
function within(got: ArrayLike<number>, a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number, c0?: ArrayLike<number>): void {
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = c0 ? c0[i * n + j] : 0, abs = Math.abs(s);
    for (let q = 0; q < k; q++) { const p = a[i * k + q] * b[q * n + j]; s += p; abs += Math.abs(p); }
    const e = got[i * n + j];
    if (!(Math.abs(e - s) <= (k + 1) * 2 ** -24 * abs * 1.0001)) throw new Error(`(${i}, ${j}): ${e} vs float64 ${s}`);
  }
}
/**
 * cpu against interp: bit for bit on the paths that sum in k order; AMX sums each tdpbf16ps's
 * 32 products inside the unit, in its own order (docs/semantics.md, measured here), so there it
 * agrees within 2^-20 relative to the largest |value| (the float64 bound is checked as well).
 */
const agree = (isa: string, got: number[], ref: number[], mustDiffer = true): void => {
  if (isa !== "amx") { expect(got).toEqual(ref); return; }
  expect(got.length).toBe(ref.length);
  const scale = Math.max(1, ...ref.map(Math.abs));
  let worst = 0, at = -1;
  for (let i = 0; i < ref.length; i++) { const e = Math.abs(got[i] - ref[i]); if (!(e <= worst)) { worst = e; at = i; } }
  expect(worst, `element ${at}: ${got[at]} vs interp ${ref[at]}`).toBeLessThanOrEqual(2 ** -20 * scale);
  if (mustDiffer) expect(got.some((x, i) => x !== ref[i]) || ref.length < 64, "AMX differs from the k-order sum somewhere (else this path is not AMX)").toBe(true);
};
const libOf = (c: { outputDir: string }) => join(c.outputDir, "build", "libprogram.so");
const flagsOf = (c: { outputDir: string }): string[] => JSON.parse(readFileSync(join(c.outputDir, "build", "stamp.json"), "utf8")).flags;

describe("bf16 matmul on each ISA path this machine has", () => {
  it("this machine has an ISA path (x86-64 with AVX2 at least)", () => {
    expect(HAVE.length).toBeGreaterThan(0);
  });
  for (const isa of HAVE) {
    it(`${isa}: tile form (edge tiles, odd K, acc from a tile) agrees with interp (${isa === "amx" ? "within 2^-20" : "bit for bit"}) and with float64`, async () => {
      await withIsaAsync(isa, () => [wide.compileAsync(zeros([M, K], "bfloat16"), zeros([K, N], "bfloat16"), zeros([M, N]), zeros([M, N]), zeros([M, N]), cfg("cpu"))], () => {
        const A = randn([M, K], { seed: 11, dtype: "bfloat16" }), B = randn([K, N], { seed: 12, dtype: "bfloat16" }), C0 = randn([M, N], { seed: 13 });
        const run = (p: string) => { const c = zeros([M, N]), d = zeros([M, N]); wide(A, B, C0, c, d, cfg(p)); return [c, d]; };
        const [cc, cd] = run("cpu"), [ic, id] = run("interp");
        agree(isa, f32(cc), f32(ic));
        agree(isa, f32(cd), f32(id));
        const af = pl_bf16(A), bf = pl_bf16(B);
        within(f32(cc), af, bf, M, K, N);
        within(f32(cd), af, bf, M, K, N, f32(C0));
        const compiled = wide.compile(A, B, C0, zeros([M, N]), zeros([M, N]));
        const src = readFileSync(join(compiled.outputDir, "kernels", "program.cpp"), "utf8");
        expect(src).toMatch(/#if defined\(__AVX512BF16__\)\n\s*tspto_mm_bf16\(/);
        if (hasObjdump) {
          const asm = objdump(libOf(compiled));
          // the path decides the instructions: vdpbf16ps only where the path has it; avx2: no zmm at all
          expect(/vdpbf16ps/.test(asm)).toBe(isa === "avx512bf16" || isa === "amx");
          if (isa === "avx2") expect(asm).not.toMatch(/%zmm|%k[0-7]\b/);
          if (isa !== "amx") expect(asm).not.toMatch(/tdpbf16ps|ldtilecfg/);
        }
      });
    });

    it(`${isa}: a K loop accumulating in place, and the tensor form, agree with interp`, async () => {
      await withIsaAsync(isa, () => [loop.compileAsync(zeros([S, S], "bfloat16"), zeros([S, T], "bfloat16"), zeros([S, T]), cfg("cpu")), tmat.compileAsync(zeros([70, 301], "bfloat16"), zeros([301, 100], "bfloat16"), zeros([70, 100]), cfg("cpu"))], () => {
        const A = randn([S, S], { seed: 21, dtype: "bfloat16" }), B = randn([S, T], { seed: 22, dtype: "bfloat16" });
        const run = (p: string) => { const c = zeros([S, T]); loop(A, B, c, cfg(p)); return c; };
        const cpu = run("cpu");
        agree(isa, f32(cpu), f32(run("interp")));
        within(f32(cpu), pl_bf16(A), pl_bf16(B), S, S, T);
        const X = randn([70, 301], { seed: 23, dtype: "bfloat16" }), Y = randn([301, 100], { seed: 24, dtype: "bfloat16" });
        const tc = zeros([70, 100]), ti = zeros([70, 100]);
        tmat(X, Y, tc, cfg("cpu"));
        tmat(X, Y, ti, cfg("interp"));
        agree(isa, f32(tc), f32(ti));
        within(f32(tc), pl_bf16(X), pl_bf16(Y), 70, 301, 100);
      });
    });

    it(`${isa}: whole blocks with an init from another tile ([64, 70] x [70, 96] + c0)`, async () => {
      await withIsaAsync(isa, () => [full.compileAsync(zeros([FM, FK], "bfloat16"), zeros([FK, FN], "bfloat16"), zeros([FM, FN]), zeros([FM, FN]), cfg("cpu"))], () => {
        const A = randn([FM, FK], { seed: 51, dtype: "bfloat16" }), B = randn([FK, FN], { seed: 52, dtype: "bfloat16" }), C0 = randn([FM, FN], { seed: 53 });
        const run = (p: string) => { const d = zeros([FM, FN]); full(A, B, C0, d, cfg(p)); return d; };
        const cpu = run("cpu");
        agree(isa, f32(cpu), f32(run("interp")));
        within(f32(cpu), pl_bf16(A), pl_bf16(B), FM, FK, FN, f32(C0));
      });
    });

    it(`${isa}: run-time valid regions (L rows of a, L rows of b: K = L) are honoured, the pad not stored`, async () => {
      await withIsaAsync(isa, () => [valid.compileAsync(zeros([VM, VK], "bfloat16"), zeros([VK, VN], "bfloat16"), 1, zeros([2 * VM, VN]), cfg("cpu"))], () => {
        const A = randn([VM, VK], { seed: 31, dtype: "bfloat16" }), B = randn([VK, VN], { seed: 32, dtype: "bfloat16" });
        for (const L of [1, 37, VM]) {
          const run = (p: string) => { const c = tensor(new Float32Array(2 * VM * VN).fill(-7), { shape: [2 * VM, VN] }); valid(A, B, L, c, cfg(p)); return c; };
          const cpu = run("cpu");
          const got = f32(cpu);
          agree(isa, got, f32(run("interp")), false);  // (L = 1: one product per output, as k order)
          // rows L.. of the second product (a's pad rows) keep -7
          if (L < VM) expect(got.slice((VM + L) * VN, 2 * VM * VN).every((x) => x === -7)).toBe(true);
          // the first: K = L, against float64 over the first L k only
          const a = pl_bf16(A), b = pl_bf16(B);
          for (const [i, j] of [[0, 0], [VM - 1, VN - 1], [5, 33]]) {
            let s = 0;
            for (let q = 0; q < L; q++) s += a[i * VK + q] * b[q * VN + j];
            expect(Math.abs(got[i * VN + j] - s)).toBeLessThanOrEqual(1e-4 * Math.max(1, Math.abs(s)));
          }
        }
      });
    });
  }

  it("denormals: the dot paths flush them to zero (inputs, products, sums); fpContract 'off' and the fp32 paths keep them", () => {
    // a = b = 2^-70: each product 2^-140, an fp32 denormal; interp keeps it
    const A = tensor(new Uint16Array(16 * 32).fill(0x1c80), { shape: [16, 32], dtype: "bfloat16" });  // 0x1c80: 2^-70
    const B = tensor(new Uint16Array(32 * 16).fill(0x1c80), { shape: [32, 16], dtype: "bfloat16" });
    const f = jit(pl.jit(function den(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => { pl.store(pl.matmul(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [32, 16])), [0, 0], c); });
      return c;
    }));
    const ref = zeros([16, 16]);
    f(A, B, ref, cfg("interp"));
    expect(f32(ref)[0]).toBe(32 * 2 ** -140);
    for (const isa of HAVE) {
      withIsa(isa, () => {
        for (const fp of ["fast", "off"] as const) {
          const c = zeros([16, 16]);
          f(A, B, c, cfg("cpu", fp));
          const dot = fp === "fast" && (isa === "avx512bf16" || isa === "amx");
          expect(f32(c).every((x) => x === (dot ? 0 : 32 * 2 ** -140)), `${isa} ${fp}`).toBe(true);
        }
      });
    }
  });

  it.skipIf(!HAVE.includes("amx"))("amx: fewer than 12 rows take the k-order vdpbf16ps kernel (bit for bit with interp); 12 take AMX", () => {
    withIsa("amx", () => {
      for (const rows of [1, 8, 11, 12]) {
        const A = randn([rows, 301], { seed: 60 + rows, dtype: "bfloat16" }), B = randn([301, 100], { seed: 61, dtype: "bfloat16" });
        const tc = zeros([rows, 100]), ti = zeros([rows, 100]);
        tmat(A, B, tc, cfg("cpu"));
        tmat(A, B, ti, cfg("interp"));
        within(f32(tc), pl_bf16(A), pl_bf16(B), rows, 301, 100);
        if (rows < 12) expect(f32(tc), `${rows} rows`).toEqual(f32(ti));
        else expect(f32(tc).some((x, i) => x !== f32(ti)[i]), "12 rows: AMX's own summation order shows").toBe(true);
      }
    });
  });

  it.skipIf(!HAVE.includes("amx"))("amx: runs on this machine's AMX (skipped elsewhere: this CPU has no amx_tile / amx_bf16 / amx_int8)", () => {
    withIsa("amx", () => {
      const A = randn([M, K], { seed: 41, dtype: "bfloat16" }), B = randn([K, N], { seed: 42, dtype: "bfloat16" }), C0 = randn([M, N], { seed: 43 });
      const c = zeros([M, N]), d = zeros([M, N]);
      wide(A, B, C0, c, d, cfg("cpu"));
      within(f32(c), pl_bf16(A), pl_bf16(B), M, K, N);
      within(f32(d), pl_bf16(A), pl_bf16(B), M, K, N, f32(C0));
      const asm = objdump(libOf(wide.compile(A, B, C0, zeros([M, N]), zeros([M, N]))));
      expect(asm).toMatch(/tdpbf16ps/);
    });
  });
});

/** The values of a bf16 host tensor (its data: the bits) as numbers. */
const pl_bf16 = (t: HostTensor): number[] => Array.from(t.data as Uint16Array, bf16BitsToF32);

// ------------------------------------------------------------------ int8
const IM = 13, IN = 117, KS = 301, KL = 4096;
const i8small = jit(pl.jit(function i8small(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(a, [0, 0], [IM, KS]), pl.load(b, [0, 0], [KS, IN])), [0, 0], c);
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [IM, IN]), pl.load(a, [0, 0], [IM, KS]), pl.load(b, [0, 0], [KS, IN])), [0, 0], d);
  });
  return c;
}));
const i8long = jit(pl.jit(function i8long(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>, d: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    pl.store(pl.matmul(pl.load(a, [0, 0], [IM, KL]), pl.load(b, [0, 0], [KL, IN])), [0, 0], c);
    pl.store(pl.matmulAcc(pl.load(c0, [0, 0], [IM, IN]), pl.load(a, [0, 0], [IM, KL]), pl.load(b, [0, 0], [KL, IN])), [0, 0], d);
  });
  return c;
}));
type I8 = "int8" | "uint8";
function ints(n: number, d: I8, seed: number, extreme: "random" | "max" | "min"): HostTensor {
  const r = mulberry32(seed);
  const lo = d === "int8" ? -128 : 0, hi = d === "int8" ? 127 : 255;
  const data = d === "int8" ? new Int8Array(n) : new Uint8Array(n);
  for (let i = 0; i < n; i++) data[i] = extreme === "max" ? hi : extreme === "min" ? lo : lo + Math.floor(r() * (hi - lo + 1));
  return data as unknown as HostTensor;
}
/**
 * Reference: sat_int32(c0 + sum a * b), in float64, which is exact here (|sum| <= 2^31 + 4096 *
 * 255 * 128 < 2^53; BigInt took seconds of the event loop at K = 4096).
 */
function refI8(a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number, c0?: ArrayLike<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = c0 ? c0[i * n + j] : 0;
    for (let q = 0; q < k; q++) s += a[i * k + q] * b[q * n + j];
    out.push(s > 2147483647 ? 2147483647 : s < -2147483648 ? -2147483648 : s);
  }
  return out;
}

describe("int8 matmul (int8 / uint8 -> int32, exact) on each ISA path this machine has", () => {
  const pairs: [I8, I8][] = [["int8", "int8"], ["uint8", "int8"], ["int8", "uint8"]];
  for (const isa of HAVE) {
    for (const [da, db] of pairs) {
      it(`${isa}: ${da} x ${db}, K = 301 random and K = 4096 at the extremes, acc near int32's limits: exact`, async () => {
        const like = (k: number): HostTensor[] => [zeros([IM, k], da), zeros([k, IN], db), zeros([IM, IN], "int32"), zeros([IM, IN], "int32"), zeros([IM, IN], "int32")];
        await withIsaAsync(isa, () => [i8small.compileAsync(...like(KS), cfg("cpu")), i8long.compileAsync(...like(KL), cfg("cpu"))], () => {
          for (const [K8, prog, ex] of [[KS, i8small, "random"], [KL, i8long, "max"], [KL, i8long, "min"], [KL, i8long, "mixed"]] as const) {
            const ea = ex === "mixed" ? "min" : ex, eb = ex === "mixed" ? "max" : ex;
            const ad = ints(IM * K8, da, 5 + K8, ea === "random" ? "random" : ea), bd = ints(K8 * IN, db, 6 + K8, eb === "random" ? "random" : eb);
            const A = tensor(ad as unknown as Int8Array, { shape: [IM, K8], dtype: da }), B = tensor(bd as unknown as Int8Array, { shape: [K8, IN], dtype: db });
            const r = mulberry32(7);
            // accumulators near the int32 limits: the sum saturates exactly as interp's int64 sum does
            const c0 = new Int32Array(IM * IN).map((_, i) => (i % 3 === 0 ? 2147483647 - Math.floor(r() * 1e8) : i % 3 === 1 ? -2147483648 + Math.floor(r() * 1e8) : Math.floor(r() * 2e6) - 1e6));
            const C0 = tensor(c0, { shape: [IM, IN], dtype: "int32" });
            const run = (p: string) => { const c = zeros([IM, IN], "int32"), d = zeros([IM, IN], "int32"); prog(A, B, C0, c, d, cfg(p)); return [c, d]; };
            const [cc, cd] = run("cpu"), [ic, id] = run("interp");
            const ra = Array.from(ad as unknown as ArrayLike<number>), rb = Array.from(bd as unknown as ArrayLike<number>);
            expect(i32(cc), `${K8} ${ex}`).toEqual(refI8(ra, rb, IM, K8, IN));
            expect(i32(cd), `${K8} ${ex} acc`).toEqual(refI8(ra, rb, IM, K8, IN, c0));
            expect(i32(cc)).toEqual(i32(ic));
            expect(i32(cd)).toEqual(i32(id));
          }
          if (hasObjdump) {
            const K8 = 301;
            const A = tensor(new Int8Array(IM * K8) as unknown as Int8Array, { shape: [IM, K8], dtype: da }), B = tensor(new Int8Array(K8 * IN), { shape: [K8, IN], dtype: db });
            const asm = objdump(libOf(i8small.compile(A, B, zeros([IM, IN], "int32"), zeros([IM, IN], "int32"), zeros([IM, IN], "int32"))));
            expect(/vpdpbusd/.test(asm)).toBe(isa !== "avx2");
          }
        });
      });
    }
  }
  /** sum a * b in float64 (exact: every partial sum is below 2^53), no init: the reference of the larger shapes. */
  const refNum = (a: ArrayLike<number>, b: ArrayLike<number>, m: number, k: number, n: number): number[] => {
    const out = new Array<number>(m * n).fill(0);
    for (let i = 0; i < m; i++) for (let q = 0; q < k; q++) { const x = a[i * k + q]; if (x) for (let j = 0; j < n; j++) out[i * n + j] += x * b[q * n + j]; }
    return out;
  };
  // one test per program built (each built with compileAsync first: see test/setup/checks.ts)
  for (const isa of HAVE) {
    for (const [da, db] of pairs) {
      it(`${isa}: ${da} x ${db}, the tensor form at [70, 301] x [301, 100] (whole 32 x 32 AMX blocks and edges; no init): exact`, async () => {
        await withIsaAsync(isa, () => [tmat.compileAsync(zeros([70, 301], da), zeros([301, 100], db), zeros([70, 100], "int32"), cfg("cpu"))], () => {
          const ad = ints(70 * 301, da, 91, "random"), bd = ints(301 * 100, db, 92, "random");
          const A = tensor(ad as unknown as Int8Array, { shape: [70, 301], dtype: da }), B = tensor(bd as unknown as Int8Array, { shape: [301, 100], dtype: db });
          const out = zeros([70, 100], "int32");
          tmat(A, B, out, cfg("cpu"));
          expect(i32(out), `${da} x ${db}`).toEqual(refNum(ad as unknown as ArrayLike<number>, bd as unknown as ArrayLike<number>, 70, 301, 100));
        });
      });
    }
    it(`${isa}: int8 x int8, a K loop accumulating in place over whole blocks: exact`, async () => {
      await withIsaAsync(isa, () => [loop.compileAsync(zeros([S, S], "int8"), zeros([S, T], "int8"), zeros([S, T], "int32"), cfg("cpu"))], () => {
        const ad = ints(S * S, "int8", 93, "random"), bd = ints(S * T, "int8", 94, "random");
        const A = tensor(ad as unknown as Int8Array, { shape: [S, S], dtype: "int8" }), B = tensor(bd as unknown as Int8Array, { shape: [S, T], dtype: "int8" });
        const c = zeros([S, T], "int32");
        loop(A, B, c, cfg("cpu"));
        expect(i32(c)).toEqual(refNum(ad as unknown as ArrayLike<number>, bd as unknown as ArrayLike<number>, S, S, T));
      });
    });
  }
  it("the typing: int8 with uint8 is allowed (int32 result); uint8 with int16 is not", () => {
    const A = tensor(new Uint8Array(16 * 16), { shape: [16, 16], dtype: "uint8" }), B = tensor(new Int8Array(16 * 16), { shape: [16, 16], dtype: "int8" });
    for (let i = 0; i < 256; i++) { (A.data as Uint8Array)[i] = (i * 37) & 255; (B.data as Int8Array)[i] = ((i * 11) & 255) - 128; }
    const ref = refI8(Array.from(A.data as Uint8Array), Array.from(B.data as Int8Array), 16, 16, 16);
    for (const p of ["interp", "cpu"]) {
      const out = zeros([16, 16], "int32");
      tmat(A, B, out, cfg(p));
      expect(i32(out), p).toEqual(ref);
    }
    const B16 = tensor(new Int16Array(16 * 16), { shape: [16, 16], dtype: "int16" });
    expect(() => tmat(A, B16, zeros([16, 16], "int32"), cfg("interp"))).toThrow(/operand dtypes differ: uint8 and int16/);
  });
});

// ------------------------------------------------------------------ AMX, compiled here
describe("the AMX kernels compile (g++ -mamx-tile -mamx-bf16 -mamx-int8) wherever they can run or not", () => {
  it("the prelude's AMX bf16 / int8 kernels compile and hold tdpbf16ps, tdpbssd, tdpbusd, tdpbsud", async () => {
    const src = `#include <immintrin.h>\n#include <cstdint>\n#include <cstring>\n#include <vector>\nstatic inline int32_t tspto_sat_i32(int64_t v) { return (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); }\n${DOT_KERNELS}\n`
      + `void f1(const float* a, const float* b, float* o) { tspto_mm_bf16(a, 64, b, 64, nullptr, 64, o, 64, 64, 64, 64); }\n`
      + `void f2(const int8_t* a, const int8_t* b, int32_t* o) { tspto_mm_i8<false, false>(a, 64, b, 64, nullptr, 64, o, 64, 64, 64, 64); tspto_mm_i8<true, false>(a, 64, b, 64, nullptr, 64, o, 64, 64, 64, 64); tspto_mm_i8<false, true>(a, 64, b, 64, nullptr, 64, o, 64, 64, 64, 64); }\n`;
    const dir = join(process.env.TMPDIR ?? "/tmp", `tspto-amx-${process.pid}`);
    spawnSync("mkdir", ["-p", dir]);
    const obj = join(dir, "amx.o");
    // (seconds of g++: off the event loop)
    const r = await runChild("g++", ["-std=c++17", "-O2", "-march=x86-64-v4", "-mavx512bf16", "-mavx512vnni", "-mamx-tile", "-mamx-bf16", "-mamx-int8", "-I", INCLUDE_DIR, "-x", "c++", "-", "-c", "-o", obj], { input: src });
    // (with constant extents g++ may warn about the dead scalar tails after the vector loops; only errors count)
    expect(r.stderr).not.toMatch(/error/);
    expect(r.status, r.stderr).toBe(0);
    if (hasObjdump) {
      const asm = objdump(obj);
      for (const ins of ["tdpbf16ps", "tdpbssd", "tdpbusd", "tdpbsud", "ldtilecfg", "tilerelease", "vdpbf16ps", "vpdpbusd"]) expect(asm, ins).toContain(ins);
      // the tile configuration is read from a constant, never a stack copy (g++ 12 dropped the
      // stores of one past its first 32 bytes: ldtilecfg of garbage rows, #GP in a GPT-2 run)
      expect(asm).toMatch(/ldtilecfg\s+0x[0-9a-f]+\(%rip\)/);
      expect(asm).not.toMatch(/ldtilecfg\s+-?0x[0-9a-f]+\(%r[sb]p\)/);
    }
    spawnSync("rm", ["-rf", dir]);
  });
});

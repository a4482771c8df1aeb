// Floating-point contraction (issue 12): with fpContract "fast" (the default) float matmul
// accumulates with fused multiply-add; with "off" each product and sum is rounded. The
// interpreter models both exactly (fmaF32), so cpu and interp agree bit for bit in both modes;
// fmaF32 itself is checked against an exact BigInt computation. Tolerance to the exact
// product (both modes): |c - exact| <= K * 2^-24 * sum_k |a_ik * b_kj| (+ the same for the
// accumulator input), the classic gamma_K bound for K rounded steps.
import { describe, expect, it } from "vitest";
import { pl, ir, RunConfig, randn, zeros, tensor, TsptoError } from "tspto";
import { fmaF32 } from "../../src/ir/index.js";

// ------------------------------------------------------------------ exact reference
const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);
/** A finite fp32 value as m * 2^e with integer m. */
function decompose(x: number): [bigint, number] {
  f32[0] = x;
  const bits = u32[0], sign = bits >>> 31 ? -1n : 1n, ex = (bits >>> 23) & 0xff, frac = BigInt(bits & 0x7fffff);
  return ex === 0 ? [sign * frac, -149] : [sign * (frac | 0x800000n), ex - 150];
}
/** round_f32(a * b + c), computed exactly. */
function exactFma(a: number, b: number, c: number): number {
  const [ma, ea] = decompose(a), [mb, eb] = decompose(b), [mc, ec] = decompose(c);
  let mp = ma * mb, ep = ea + eb;
  let m: bigint, e: number;
  if (ep < ec) { m = mp + (mc << BigInt(ec - ep)); e = ep; } else { m = (mp << BigInt(ep - ec)) + mc; e = ec; }
  void mp; void ep;
  if (m === 0n) return 0;
  const neg = m < 0n, am = neg ? -m : m;
  const len = am.toString(2).length;
  const q = Math.max(e + len - 24, -149), drop = q - e;
  let r: bigint;
  if (drop <= 0) r = am << BigInt(-drop);
  else {
    r = am >> BigInt(drop);
    const rem = am & ((1n << BigInt(drop)) - 1n), half = 1n << BigInt(drop - 1);
    if (rem > half || (rem === half && (r & 1n) === 1n)) r += 1n;
  }
  const v = Number(r) * 2 ** Math.min(q, 0) * 2 ** Math.max(q, 0);
  return Math.fround(neg ? -v : v);
}

describe("fmaF32", () => {
  it("breaks the double-rounding ties the way a single rounding does", () => {
    const a = Math.fround(1 + 2 ** -12); // a*a = 1 + 2^-11 + 2^-24: halfway between two fp32
    const tiny = 2 ** -60;
    expect(fmaF32(a, a, tiny)).toBe(1 + 2 ** -11 + 2 ** -23);
    expect(fmaF32(a, a, -tiny)).toBe(1 + 2 ** -11);
    // the naive double computation gets the first one wrong (ties to even)
    expect(Math.fround(a * a + tiny)).toBe(1 + 2 ** -11);
    expect(fmaF32(-a, a, -tiny)).toBe(-(1 + 2 ** -11 + 2 ** -23));
    expect(fmaF32(3, 5, 7)).toBe(22);
    expect(fmaF32(Infinity, 1, 1)).toBe(Infinity);
    expect(Number.isNaN(fmaF32(Infinity, 0, 1))).toBe(true);
    expect(fmaF32(2 ** 100, 2 ** 100, 0)).toBe(Infinity);
  });

  it("matches an exact BigInt computation on random and near-tie operands", () => {
    let s = 12345;
    const rnd = () => { s = (s * 1103515245 + 12345) >>> 0; return s / 2 ** 32; };
    const val = () => Math.fround((rnd() - 0.5) * 2 ** Math.floor(rnd() * 40 - 20));
    for (let i = 0; i < 20000; i++) {
      const a = val(), b = val();
      // c: random, or the negated product rounded (heavy cancellation), or a tiny nudge of a tie
      const k = i % 3;
      const c = k === 0 ? val() : k === 1 ? Math.fround(-a * b) : Math.fround(2 ** (Math.floor(rnd() * 60) - 80) * (rnd() < 0.5 ? 1 : -1));
      const want = exactFma(a, b, c), got = fmaF32(a, b, c);
      if (got !== want) throw new Error(`fmaF32(${a}, ${b}, ${c}) = ${got}, exact ${want}`);
    }
  });
});

// ------------------------------------------------------------------ cpu and interp
const MM = 13, KK = 37, NN = 53; // row blocks of 6 + 1; columns 32 + 16 + 5
const mmAcc = pl.jit(function mmAcc(a: pl.Tensor, b: pl.Tensor, c0: pl.Tensor, c: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const acc = pl.matmulAcc(pl.load(c0, [0, 0], [MM, NN]), pl.load(a, [0, 0], [MM, KK]), pl.load(b, [0, 0], [KK, NN]));
    pl.store(pl.add(pl.matmul(pl.load(a, [0, 0], [MM, KK]), pl.load(b, [0, 0], [KK, NN])), acc), [0, 0], c);
  });
  return c;
});

const T = 64, S = 192;
/** The bench's tile loop: operands read straight from the tensors, b packed in panels. */
const tiled = pl.jit(function tiled(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
  for (const i of pl.range(0, S, T)) {
    for (const j of pl.range(0, S, T)) {
      pl.at(pl.Level.CORE_GROUP, () => {
        let acc = pl.matmul(pl.move(pl.load(a, [i, 0], [T, T], { mem: pl.Mem.Mat }), pl.Mem.Left), pl.move(pl.load(b, [0, j], [T, T], { mem: pl.Mem.Mat }), pl.Mem.Right));
        for (const k of pl.range(T, S, T)) {
          acc = pl.matmulAcc(acc, pl.move(pl.load(a, [i, k], [T, T], { mem: pl.Mem.Mat }), pl.Mem.Left), pl.move(pl.load(b, [k, j], [T, T], { mem: pl.Mem.Mat }), pl.Mem.Right));
        }
        pl.store(acc, [i, j], c);
      });
    }
  }
  return c;
});

const bits = (t: { data: unknown }) => Array.from(t.data as Float32Array);

/** Exact product in double and the gamma_K bound of each element. */
function reference(a: Float32Array, b: Float32Array, m: number, k: number, n: number): { exact: number[]; bound: number[] } {
  const exact: number[] = [], bound: number[] = [];
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
    let s = 0, abs = 0;
    for (let q = 0; q < k; q++) { const p = a[i * k + q] * b[q * n + j]; s += p; abs += Math.abs(p); }
    exact.push(s); bound.push(k * 2 ** -24 * abs * 1.0001);
  }
  return { exact, bound };
}

describe("fpContract: cpu agrees with interp bit for bit in both modes", () => {
  for (const fp of ["fast", "off"] as const) {
    it(`matmul + matmulAcc with remainders, fpContract ${fp}`, () => {
      const A = randn([MM, KK], { seed: 11 }), B = randn([KK, NN], { seed: 12 }), C0 = randn([MM, NN], { seed: 13 });
      const run = (p: string) => { const o = zeros([MM, NN]); mmAcc(A, B, C0, o, new RunConfig({ platform: p, fpContract: fp })); return o; };
      expect(bits(run("cpu"))).toEqual(bits(run("interp")));
    });

    it(`tiled matmul with forwarded operands and packed panels, fpContract ${fp}`, () => {
      const A = randn([S, S], { seed: 21 }), B = randn([S, S], { seed: 22 });
      const run = (p: string) => { const o = zeros([S, S]); tiled(A, B, o, new RunConfig({ platform: p, fpContract: fp })); return o; };
      const cpu = run("cpu");
      expect(bits(cpu)).toEqual(bits(run("interp")));
      const { exact, bound } = reference(A.data as Float32Array, B.data as Float32Array, S, S, S);
      (cpu.data as Float32Array).forEach((v, i) => { if (Math.abs(v - exact[i]) > bound[i]) throw new Error(`element ${i}: ${v} vs ${exact[i]} (bound ${bound[i]})`); });
    });
  }

  it("the two modes give different roundings (the mode reaches the generated code)", () => {
    const A = randn([S, S], { seed: 31 }), B = randn([S, S], { seed: 32 });
    const run = (fp: "fast" | "off") => { const o = zeros([S, S]); tiled(A, B, o, new RunConfig({ fpContract: fp })); return bits(o); };
    const fast = run("fast"), off = run("off");
    expect(fast.filter((v, i) => v !== off[i]).length).toBeGreaterThan(S);
  });

  it("the mode is in the artifact key and the lowered program", () => {
    const A = randn([MM, KK]), B = randn([KK, NN]), C0 = randn([MM, NN]);
    const fast = mmAcc.lower(A, B, C0, zeros([MM, NN]));
    const off = mmAcc.lower(A, B, C0, zeros([MM, NN]), new RunConfig({ fpContract: "off" }));
    expect(fast.asText()).toContain('fpContract: "fast"');
    expect(off.asText()).not.toContain("fpContract");
    expect(ir.compile(fast).outputDir).not.toBe(ir.compile(off).outputDir);
  });
});

describe("fpContract errors", () => {
  it("RunConfig rejects an unknown mode", () => {
    expect(() => new RunConfig({ fpContract: "fastest" as never })).toThrow(/RunConfig\.fpContract must be "fast" or "off", got "fastest"/);
    expect(() => new RunConfig({ fpContract: 1 as never })).toThrow(/RunConfig\.fpContract must be "fast" or "off", got 1/);
  });

  it("ir.compile rejects an unknown mode (E_CONFIG, argument fpContract)", () => {
    const A = randn([MM, KK]), B = randn([KK, NN]), C0 = randn([MM, NN]);
    let err: unknown;
    try { ir.compile(mmAcc.lower(A, B, C0, zeros([MM, NN])), { fpContract: "sometimes" as never }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoError);
    expect((err as TsptoError).code).toBe("E_CONFIG");
    expect((err as TsptoError).argument).toBe("fpContract");
    expect((err as Error).message).toMatch(/fpContract must be "fast" or "off", got "sometimes"/);
  });

  it("pl.matmul rejects an unknown per-op mode (E_TYPE)", () => {
    const bad = pl.jit(function bad(a: pl.Tensor, b: pl.Tensor, c: pl.Out<pl.Tensor>) {
      pl.at(pl.Level.CORE_GROUP, () => {
        // @ts-expect-error: not a mode
        pl.store(pl.matmul(pl.load(a, [0, 0], [4, 4]), pl.load(b, [0, 0], [4, 4]), { fpContract: "fused" }), [0, 0], c);
      });
      return c;
    });
    const t = tensor(new Float32Array(16), { shape: [4, 4], dtype: "float32" });
    expect(() => bad(t, t, zeros([4, 4]))).toThrow(/pl\.matmul: fpContract must be "fast" or "off", got "fused"/);
  });
});

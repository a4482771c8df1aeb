// The v2 decode GEMV: a tiled contraction (./tma_gemm.ts, matchContraction) of at most 16
// rows of A — decode-time x @ W with fp16 / bf16 weights W [K, N] and an fp32 result — is
// bandwidth-bound (about one FLOP per weight byte), so it is not a tensor-core kernel:
//  - a block owns slabs of 32 output columns (grid-stride over the slabs, so a capped grid
//    still covers them); its 256 threads are 4 column groups (8 columns: one 16-byte load of
//    W per k row) x 64 k lanes; a warp's load is 8 k rows x 64 contiguous bytes;
//  - every thread walks its k rows with 4 loads in flight (#pragma unroll 4; 2 above 4 rows, 1
//    above 8) through the read-only path (ld.global.nc.v4), fp32 accumulators for each of the M
//    rows (x read as warp-uniform broadcasts). Above ~8 rows the fp32 FMAs, not the bytes, bound
//    it on an H100/H200 (8 rows x 8 weights per 16-byte load): a tensor-core (mma m16) form is
//    the next step there;
//  - the 64 k lanes are summed through shared memory (8 partial sums, then one), one row at a time.
// The orchestration launches it with its own grid (a fixed descriptor: the SPMD band split of
// the i loop would give a one-row GEMV one block). fp32 sums in another order than the tile
// lowering's (as every GPU matmul here). Unverified on a GPU until the GPU pack's v2 checks run.
import type { Func, Program } from "../../ir/index.js";
import { matchContraction, type Contraction } from "./tma_gemm.js";

export interface GemvPlan extends Contraction {
  /** Rows of A (and C): 1..16. */
  readonly rows: number;
  /** Slabs of 32 columns over [j0, j1). */
  readonly slabs: number;
}

export const GEMV_MAX_ROWS = 16;
const COLS = 32, KLANES = 64;

/** The GEMV plan of an InCore function: a contraction whose i loop runs once over ≤ 16 rows. */
export function matchGemv(program: Program, f: Func): GemvPlan | null {
  const c = matchContraction(program, f);
  if (!c || c.tm > GEMV_MAX_ROWS || c.tm < 1) return null;
  // one i iteration per call (all rows in one tile), and the columns in 32-wide slabs
  if (c.ranges.some(([a, b]) => b - a > c.tm || b <= a) || (c.j1 - c.j0) % COLS !== 0) return null;
  return { ...c, rows: c.tm, slabs: (c.j1 - c.j0) / COLS };
}

/** The grid the orchestration launches a GEMV with: one block per slab, at most 65535. */
export const gemvGrid = (p: GemvPlan): number => Math.min(p.slabs, 65535);

export function emitGemv(p: GemvPlan, symbol: string, where: string): string {
  const { rows, N, K, j0, k0, k1, slabs, slots } = p;
  const bound = (b: { slot: number } | { value: number }) => ("slot" in b ? `a.v[${b.slot}]` : `INT64_C(${b.value})`);
  const unpack = p.dt === "bfloat16"
    ? (w: string, e: number) => `__uint_as_float(${e & 1 ? `(${w} & 0xffff0000u)` : `(${w} << 16)`})`
    : (w: string, e: number) => `__half2float(__ushort_as_half((unsigned short)(${e & 1 ? `${w} >> 16` : `${w} & 0xffffu`})))`;
  const xval = p.dt === "bfloat16" ? (e: string) => `__uint_as_float((uint32_t)__ldg(${e}) << 16)` : (e: string) => `__half2float(__ushort_as_half(__ldg(${e})))`;
  const L: string[] = [];
  const q = (s: string) => L.push(s);
  q(`// InCore function (${where}): a ${rows}-row ${p.dt} contraction -> the decode GEMV (16-byte weight loads, 4 in flight, ${KLANES} k lanes x 4 column groups)`);
  q(`extern "C" __global__ void __launch_bounds__(256) ${symbol}(const TsptoCudaArgs a) {`);
  q(`  const uint16_t* __restrict__ A = (const uint16_t*)(intptr_t)a.v[${slots.a}];`);
  q(`  const uint16_t* __restrict__ B = (const uint16_t*)(intptr_t)a.v[${slots.b}];`);
  q(`  float* __restrict__ C = (float*)(intptr_t)a.v[${slots.c}];`);
  q(`  const int64_t i0 = ${bound(p.lo)};`);
  q(`  __shared__ float red[${KLANES}][${COLS + 1}];`);
  q(`  __shared__ float part[8][${COLS}];`);
  q(`  const int cg = threadIdx.x & 3, kl = threadIdx.x >> 2;`);
  q(`  for (int64_t slab = blockIdx.x; slab < ${slabs}; slab += gridDim.x) {`);
  q(`    const int64_t col = ${j0} + slab * ${COLS} + cg * 8;`);
  q(`    float acc[${rows}][8];`);
  q(`#pragma unroll`);
  q(`    for (int m = 0; m < ${rows}; ++m) {`);
  q(`#pragma unroll`);
  q(`      for (int e = 0; e < 8; ++e) acc[m][e] = 0.0f;`);
  q(`    }`);
  // 16-byte loads in flight per thread: 4, fewer as the accumulators (8 per row) take the registers
  q(`#pragma unroll ${rows <= 4 ? 4 : rows <= 8 ? 2 : 1}`);
  q(`    for (int64_t k = ${k0} + kl; k < ${k1}; k += ${KLANES}) {`);
  q(`      const uint4 w = __ldg((const uint4*)(B + k * ${N} + col));`);
  const wf = Array.from({ length: 8 }, (_, e) => unpack(`w.${"xyzw"[e >> 1]}`, e));
  q(`      const float wf[8] = { ${wf.join(", ")} };`);
  q(`#pragma unroll`);
  q(`      for (int m = 0; m < ${rows}; ++m) {`);
  q(`        const float x = ${xval(`A + (i0 + m) * ${K} + k`)};`);
  q(`#pragma unroll`);
  q(`        for (int e = 0; e < 8; ++e) acc[m][e] = fmaf(x, wf[e], acc[m][e]);`);
  q(`      }`);
  q(`    }`);
  q(`    // the k lanes' partial sums, one row at a time: 64 -> 8 -> 1`);
  q(`#pragma unroll`);
  q(`    for (int m = 0; m < ${rows}; ++m) {`);
  q(`#pragma unroll`);
  q(`      for (int e = 0; e < 8; ++e) red[kl][cg * 8 + e] = acc[m][e];`);
  q(`      __syncthreads();`);
  q(`      { const int c = threadIdx.x & 31, g = threadIdx.x >> 5; float s = 0.0f;`);
  q(`#pragma unroll`);
  q(`        for (int r = 0; r < 8; ++r) s += red[g * 8 + r][c];`);
  q(`        part[g][c] = s; }`);
  q(`      __syncthreads();`);
  q(`      if (threadIdx.x < ${COLS}) {`);
  q(`        float s = 0.0f;`);
  q(`#pragma unroll`);
  q(`        for (int g = 0; g < 8; ++g) s += part[g][threadIdx.x];`);
  q(`        C[(i0 + m) * ${N} + ${j0} + slab * ${COLS} + threadIdx.x] = s;`);
  q(`      }`);
  q(`      __syncthreads();`);
  q(`    }`);
  q(`  }`);
  q(`}`);
  return L.join("\n") + "\n";
}

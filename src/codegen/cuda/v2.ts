// The v2 CUDA kernels (opt-in: TSPTO_CUDA_KERNELS=v2, the cudaKernels compile option), the same
// SIMT lowering as v1 (./lang.ts) with Hopper-class formulas where they differ:
//  - elementwise loops: 16-byte words for every 4-byte and 2-byte element type (float4 / int4 /
//    uint4 of packed halves), four words in flight per thread (#pragma unroll 4), and a scalar
//    tail for the elements past the last whole word (v1 vectorizes only 4-byte types whose
//    count is a multiple of 4);
//  - row reductions of fewer rows than the block has warps: several warps per row, combined
//    through a small shared array (the shared lowering's `splitRows`, ../simt/ops.ts);
//  - fp16 / bf16 matmuls of m % 64 == 0, n % 8 == 0, k % 16 == 0 on sm_90a: wgmma.mma_async
//    (Hopper's warpgroup MMA) instead of WMMA. Each of the block's two warpgroups owns a
//    64 x NW slab of the output (NW <= 128, fp32 accumulators in registers); the operands are
//    converted from the fp32 tile scratch into a shared staging area in the canonical K-major
//    layout without swizzle (8 x 8 core matrices of 128 contiguous bytes), described by 64-bit
//    shared-memory matrix descriptors, then fence.proxy.async / wgmma.fence / mma_async /
//    commit_group / wait_group (one site of a kernel's tile lowering);
//  - a whole InCore function that is a tiled fp16 / bf16 contraction with an fp32 result, on
//    sm_90a: the TMA GEMM of ./tma_gemm.ts (TMA into 128B-swizzled stages, an mbarrier ring, a
//    producer warpgroup and a consumer warpgroup; `tma: false` keeps the tile lowering);
//  - such a contraction of at most 16 rows (decode): the GEMV of ./gemv.ts, any architecture.
// Numerics of these paths are unverified until they run on a GPU (the GPU pack's v2 checks).
import type { DType } from "../../ir/index.js";
import type { MatmulParts, SimtCtx, SimtLang } from "../simt/lang.js";
import { CUDA_LANG, SHARED_LIMIT } from "./lang.js";
import { CUDA_BLOCK_THREADS } from "./prelude.js";
import { TMA_GEMM_PRELUDE } from "./tma_gemm.js";

export type CudaKernels = "v1" | "v2";
export interface CudaGenOptions {
  /** Which kernel formulas: v1 (the default) or v2 (the opt-in Hopper-class paths). */
  readonly kernels?: CudaKernels;
  /** v2 only: emit wgmma (the build targets sm_90a). */
  readonly wgmma?: boolean;
  /** v2 + wgmma: tiled contractions as the TMA GEMM (./tma_gemm.ts); false keeps them on the tile lowering. */
  readonly tma?: boolean;
  /** v2: contractions of ≤ 16 rows as the decode GEMV (./gemv.ts); false keeps them on the tile lowering. */
  readonly gemv?: boolean;
}

/** Elements (uint16) of the wgmma staging area, one per translation unit (24 KiB). */
export const WGMMA_STAGE_ELEMS = 12288;
/** Static shared memory the v2 prelude may add to a kernel (the wgmma staging area + the WMMA blocks of a fallback site). */
const V2_STATIC_SHARED = WGMMA_STAGE_ELEMS * 2;

/** The v2 additions to the prelude (after CUDA_PRELUDE). */
const FAIL_V2 = String.raw`namespace {
// tspto_fail with the record's addresses by value (the parameter block stays in parameter space).
__device__ __noinline__ void tspto_fail_v2(int64_t err, int64_t errflag, int site, int rank, const int64_t* off) {
  unsigned long long* e = (unsigned long long*)(intptr_t)err;
  if (!e) return;
  if (atomicCAS(e, 0ull, 1ull) == 0ull) {
    e[1] = (unsigned long long)site;
    for (int i = 0; i < rank && i < 8; ++i) e[2 + i] = (unsigned long long)off[i];
    __threadfence_system();
    volatile int64_t* flag = (volatile int64_t*)(intptr_t)errflag;
    if (flag) *flag = 1;
  }
}
}  // namespace
`;

export function v2Prelude(opts: CudaGenOptions): string {
  if (!opts.wgmma) return `// cuda v2 kernels (no wgmma: not built for sm_90a)\n${FAIL_V2}`;
  return FAIL_V2 + String.raw`// cuda v2 kernels: wgmma (sm_90a)
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "tspto's v2 kernels use wgmma: build them with -gencode=arch=compute_90a,code=sm_90a"
#endif
// The wgmma operands' staging area (fp16 / bf16 bits, canonical K-major layout, no swizzle).
__shared__ __align__(128) uint16_t tspto_wgmma_stage[${WGMMA_STAGE_ELEMS}];
namespace {
// A shared-memory matrix descriptor: start address, leading (K) and stride (M/N) byte offsets, no swizzle.
__device__ __forceinline__ uint64_t tspto_wgmma_desc(const void* p, uint32_t lbo, uint32_t sbo) {
  const uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  return (uint64_t)((a & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) | ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32);
}
// Offset (elements) of element (r, c) of an operand staged K-major with kc columns: core matrix (r/8, c/8), row r%8, column c%8.
__device__ __forceinline__ int tspto_wgmma_at(int r, int c, int kc) { return (((r >> 3) * (kc >> 3) + (c >> 3)) << 6) + ((r & 7) << 3) + (c & 7); }
}  // namespace
` + TMA_GEMM_PRELUDE;
}

/** Bytes of an element type the vector path moves in 16-byte words (0: not vectorized). */
const vecBytes = (c: string): number => (c === "float" || c === "int32_t" || c === "uint32_t" ? 4 : c === "uint16_t" || c === "int16_t" ? 2 : 0);
const WORD4: Record<string, string> = { float: "float4", int32_t: "int4", uint32_t: "uint4" };
const LANES = ["x", "y", "z", "w"];

/** Lane e of a 16-byte word `r` read as elements of ctype. */
function laneOf(r: string, ctype: string, e: number): string {
  if (vecBytes(ctype) === 4) return `${r}.${LANES[e]}`;
  const half = `(uint16_t)(${r}.${LANES[e >> 1]}${e & 1 ? " >> 16" : " & 0xffffu"})`;
  return ctype === "uint16_t" ? half : `(${ctype})${half}`;
}

/** The 16-byte word of `vals` (expressions of ctype). */
function wordOf(vals: readonly string[], ctype: string): string {
  if (vecBytes(ctype) === 4) return `make_${WORD4[ctype]}(${vals.map((v) => `(${ctype})(${v})`).join(", ")})`;
  const u = (v: string) => `(uint32_t)(uint16_t)(${v})`;
  const words = [0, 1, 2, 3].map((w) => `${u(vals[2 * w])} | (${u(vals[2 * w + 1])} << 16)`);
  return `make_uint4(${words.join(", ")})`;
}

/** Calls other than casts, vector constructors and the storage conversions of 16-bit floats. */
const CHEAP_CALL = /^(make_\w+|tspto_(bf16_to_f32|f16_to_f32|f32_to_bf16|f32_to_f16|rnd_bf16|rnd_f16))$/;
const cheap = (code: string): boolean => [...code.matchAll(/\b([A-Za-z_]\w*)\s*\(/g)].every((m) => CHEAP_CALL.test(m[1]) || /^(float|double|u?int\d+_t|uint16_t|int)$/.test(m[1]));

const isHalf = (d: DType) => d === "float16" || d === "bfloat16";

/** The wgmma N width per warpgroup tile: the widest of 128..8 dividing n that still gives both warpgroups work. */
function wgmmaWidth(m: number, n: number): number {
  const ws = [128, 64, 32, 16, 8].filter((w) => n % w === 0);
  return ws.find((w) => (m / 64) * (n / w) >= 2) ?? ws[0];
}

function wgmmaMatmul(ctx: SimtCtx, mm: MatmulParts): boolean {
  const { at, m, k, n, ea, eb, ec, o } = mm;
  if (!(isHalf(at.dtype) && m % 64 === 0 && n % 8 === 0 && k % 16 === 0)) return false;
  // k columns staged per chunk: multiples of 16 with (m + n) * kc elements in the staging area
  let kc = Math.min(k, Math.floor(WGMMA_STAGE_ELEMS / (m + n) / 16) * 16);
  while (kc >= 16 && k % kc !== 0) kc -= 16;
  if (kc < 16) return false;
  const nw = wgmmaWidth(m, n), regs = nw / 2, units = (m / 64) * (n / nw), nwg = CUDA_BLOCK_THREADS / 128;
  const ty = at.dtype === "float16" ? "f16" : "bf16";
  const bits = at.dtype === "float16" ? (x: string) => `__half_as_ushort(__float2half_rn(${x}))` : (x: string) => `__bfloat16_as_ushort(__float2bfloat16_rn(${x}))`;
  const f = (p: string) => ctx.fresh(p);
  const wg = f("wg"), wl = f("wl"), e = f("e"), u0 = f("u"), u = f("u"), kk = f("kk"), d = f("d"), i = f("i"), s = f("s");
  const bOff = m * kc;
  ctx.line(`// wgmma m64n${nw}k16 .f32.${ty}.${ty}: ${units} warpgroup tile(s) of 64 x ${nw}, k in chunks of ${kc} (sm_90a)`);
  ctx.line(`const int ${wg} = threadIdx.x >> 7, ${wl} = threadIdx.x & 127;`);
  const stage = (k0: string) => {
    // a[r, k0 + c] -> A(r, c); b[k0 + c, j] -> B(j, c): both K-major
    ctx.line(`for (int ${e} = threadIdx.x; ${e} < ${m * kc}; ${e} += blockDim.x) tspto_wgmma_stage[tspto_wgmma_at(${e} / ${kc}, ${e} % ${kc}, ${kc})] = ${bits(ea.at(`(int64_t)(${e} / ${kc}) * ${k} + ${k0} + ${e} % ${kc}`))};`);
    ctx.line(`for (int ${e} = threadIdx.x; ${e} < ${n * kc}; ${e} += blockDim.x) tspto_wgmma_stage[${bOff} + tspto_wgmma_at(${e} % ${n}, ${e} / ${n}, ${kc})] = ${bits(eb.at(`(int64_t)(${k0} + ${e} / ${n}) * ${n} + ${e} % ${n}`))};`);
    ctx.line(`asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy stores -> the async proxy wgmma reads`);
    ctx.line("__syncthreads();");
  };
  const rowCol = (idx: string) => [`64 * (${u} / ${n / nw}) + 16 * (${wl} >> 5) + ((${wl} & 31) >> 2) + ((${idx} & 2) ? 8 : 0)`,
    `${nw} * (${u} % ${n / nw}) + 8 * (${idx} >> 2) + 2 * (${wl} & 3) + (${idx} & 1)`];
  const ops = Array.from({ length: regs }, (_, r) => `%${r}`).join(",");
  const outs = Array.from({ length: regs }, (_, r) => `"+f"(${d}[${r}])`).join(", ");
  const mma = (k0local: string) => {
    ctx.open(`for (int ${s} = 0; ${s} < ${kc / 16}; ++${s}) {`);
    ctx.line(`const uint64_t da = tspto_wgmma_desc(&tspto_wgmma_stage[(${u} / ${n / nw}) * ${64 * kc} + ${s} * 128${k0local}], 128, ${kc * 16});`);
    ctx.line(`const uint64_t db = tspto_wgmma_desc(&tspto_wgmma_stage[${bOff} + (${u} % ${n / nw}) * ${nw * kc} + ${s} * 128${k0local}], 128, ${kc * 16});`);
    ctx.line(`asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %${regs + 2}, 0;\\nwgmma.mma_async.sync.aligned.m64n${nw}k16.f32.${ty}.${ty} {${ops}}, %${regs}, %${regs + 1}, p, 1, 1, 0, 0;\\n}\\n" : ${outs} : "l"(da), "l"(db), "r"(1));`);
    ctx.close();
  };
  const init = () => {
    if (ec) {
      const [r, c] = rowCol(i);
      ctx.line(`#pragma unroll`);
      ctx.line(`for (int ${i} = 0; ${i} < ${regs}; ++${i}) ${d}[${i}] = ${ec.at(`(int64_t)(${r}) * ${n} + (${c})`)};`);
    } else {
      ctx.line(`#pragma unroll`);
      ctx.line(`for (int ${i} = 0; ${i} < ${regs}; ++${i}) ${d}[${i}] = 0.0f;`);
    }
  };
  const epilogue = () => {
    const [r, c] = rowCol(i);
    ctx.line(`#pragma unroll`);
    ctx.line(`for (int ${i} = 0; ${i} < ${regs}; ++${i}) ${o.set(`(int64_t)(${r}) * ${n} + (${c})`, `${d}[${i}]`)}`);
  };
  const wait = () => {
    ctx.line(`asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");`);
    ctx.line(`asm volatile("wgmma.wait_group.sync.aligned 0;" : ${outs} :: "memory");`);
  };
  if (kc === k) {
    // one chunk: stage once, then each warpgroup runs its tiles (no barrier inside)
    stage("0");
    ctx.open(`for (int ${u} = ${wg}; ${u} < ${units}; ${u} += ${nwg}) {`);
    ctx.line(`float ${d}[${regs}];`);
    init();
    ctx.line(`asm volatile("wgmma.fence.sync.aligned;" ::: "memory");`);
    mma("");
    wait();
    epilogue();
    ctx.close();
  } else {
    // chunks of k: every warpgroup walks the same loops (the barriers stay uniform), restaging per pair of tiles
    ctx.open(`for (int ${u0} = 0; ${u0} < ${units}; ${u0} += ${nwg}) {`);
    ctx.line(`const int ${u} = ${u0} + ${wg};`);
    ctx.line(`const bool on = ${u} < ${units};`);
    ctx.line(`float ${d}[${regs}];`);
    ctx.open(`if (on) {`);
    init();
    ctx.close();
    ctx.line(`else { for (int ${i} = 0; ${i} < ${regs}; ++${i}) ${d}[${i}] = 0.0f; }`);
    ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${k}; ${kk} += ${kc}) {`);
    stage(kk);
    ctx.open(`if (on) {`);
    ctx.line(`asm volatile("wgmma.fence.sync.aligned;" ::: "memory");`);
    mma("");
    wait();
    ctx.close();
    ctx.line("__syncthreads();  // the staging area is rewritten next");
    ctx.close();
    ctx.open(`if (on) {`);
    epilogue();
    ctx.close();
    ctx.close();
  }
  return true;
}

/** The v2 CUDA language: v1 with the Hopper-class formulas above. */
export function cudaLangV2(opts: CudaGenOptions): SimtLang {
  const lang: SimtLang = {
    ...CUDA_LANG,
    // the static staging of a wgmma site comes out of the 227 KiB a block may have
    sharedLimit: opts.wgmma ? SHARED_LIMIT - V2_STATIC_SHARED : SHARED_LIMIT,
    splitRows: true,
    sharedArray(ctx, name, type, count) { ctx.line(`__shared__ ${type} ${name}[${count}];`); },
    tensorPtr(ctx, name, t, offset, mutable, asScratch, cmt) {
      return { ...CUDA_LANG.tensorPtr(ctx, name, t, offset, mutable, asScratch, cmt), space: "global" as const };
    },
    // the failure record by value (v1's tspto_fail takes the parameter block by reference,
    // which copies all of it to the stack: every slot then read from local memory)
    failAny(_ctx, site, offsets) {
      return `{ const int64_t _off[] = { ${offsets.join(", ")} }; tspto_fail_v2(a.err, a.errflag, ${site}, ${offsets.length}, _off); }`;
    },
    failRecord(ctx, site, offsets) {
      ctx.line(`const int64_t _off[] = { ${offsets.join(", ")} };`);
      ctx.line(`if (threadIdx.x == 0) tspto_fail_v2(a.err, a.errflag, ${site}, ${offsets.length}, _off);`);
    },
    vectorOpen(ctx, plan, n, outs) {
      const sizes = [...plan.leaves.map((l) => vecBytes(l.ctype)), ...outs.map((o) => vecBytes(o.arr.ctype))];
      const b = sizes[0];
      if (!b || sizes.some((x) => x !== b)) return false;
      const w = 16 / b, nv = Math.floor(n / w);
      if (nv < 1) return false;
      const aligned = [...plan.leaves.map((l) => l.ptr), ...outs.map((o) => o.arr.name)].map((p) => `(uintptr_t)(${p})`).join(" | ");
      ctx.open(`if (((${aligned}) & 15) == 0) {  // 16-byte words (${w} elements), a scalar tail`);
      const q = ctx.fresh("q");
      const regs = plan.leaves.map(() => ctx.fresh("v"));
      const body = [
        // tensor windows through the read-only global path (ld.global.nc) and global stores;
        // tiles in scratch (shared or device memory) by plain accesses
        ...plan.leaves.map((l, li) => {
          const V = b === 4 ? WORD4[l.ctype] : "uint4";
          return l.arr.space === "global" ? `const ${V} ${regs[li]} = __ldg((const ${V}*)(${l.ptr}) + ${q});` : `const ${V} ${regs[li]} = ((const ${V}*)(${l.ptr}))[${q}];`;
        }),
        ...outs.map((o) => {
          const V = b === 4 ? WORD4[o.arr.ctype] : "uint4";
          const vals = Array.from({ length: w }, (_, e) => o.value(plan.withLeaves((li) => laneOf(regs[li], plan.leaves[li].ctype, e))));
          return o.arr.space === "global" ? `__stwb((${V}*)(${o.arr.name}) + ${q}, ${wordOf(vals, o.arr.ctype)});` : `((${V}*)(${o.arr.name}))[${q}] = ${wordOf(vals, o.arr.ctype)};`;
        }),
      ];
      // four words in flight per thread where the body is data movement and cheap arithmetic;
      // a body with calls (exp, log, ...) has its own instruction-level parallelism, and
      // unrolling it spilled registers (the static gates, test/targets/cuda/static_gates.test.ts)
      if (cheap(body.join("\n"))) ctx.line("#pragma unroll 4");
      ctx.open(`for (int64_t ${q} = threadIdx.x; ${q} < ${nv}; ${q} += blockDim.x) {`);
      body.forEach((l) => ctx.line(l));
      ctx.close();
      if (nv * w < n) {
        const t = ctx.fresh("i");
        ctx.line(`for (int64_t ${t} = ${nv * w} + threadIdx.x; ${t} < ${n}; ${t} += blockDim.x) { ${outs.map((o) => o.arr.set(t, o.value(plan.at(t)))).join(" ")} }`);
      }
      ctx.close("} else {");
      ctx.ind(1);
      return true;
    },
    tensorCoreMatmul(ctx, mm) {
      if (opts.wgmma && wgmmaMatmul(ctx, mm)) return true;
      return CUDA_LANG.tensorCoreMatmul!(ctx, mm);
    },
  };
  return lang;
}

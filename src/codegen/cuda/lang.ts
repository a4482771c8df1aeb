// CUDA C++ as a SIMT language (../simt/lang.ts): how the shared lowering of tiles onto thread
// blocks is spelled for nvcc. Tiles are `uint8_t*` scratch (dynamic shared memory, or a
// per-block slice of a device buffer) read through typed __restrict__ pointers; block-parallel
// loops stride by blockDim.x; a block synchronizes with __syncthreads(); rows are combined with
// warp shuffles; fp16 / bf16 matmuls whose shapes are multiples of 16 run on tensor cores
// (WMMA). Elementwise and scalar formulas are the cpu generator's C++ (src/codegen/cpp/emitters/)
// over helpers the CUDA prelude defines as __device__ functions under the same names.
import type { Span } from "../../ir/index.js";
import { tileElemBytes } from "../../ir/index.js";
import { EMITTERS, intLit, loadConv, roundD, roundF, scratchCType, scratchLit, storageCType, storeConv } from "../cpp/emitters/index.js";
import { cSyntax, StmtWalker } from "../cpp/walk.js";
import { comment } from "../cpp/cexpr.js";
import { spanWhere } from "../cpp/emitters/index.js";
import type { ElemArray, SimtEmitter, SimtLang } from "../simt/lang.js";
import { simtEmitterFor } from "../simt/ops.js";
import { CUDA_BLOCK_THREADS } from "./prelude.js";

/** Largest tile scratch held in shared memory (H100/H200: 227 KiB per block, minus the matmul staging). */
export const SHARED_LIMIT = 200 * 1024;

/** A C array: `name[i]`. */
const cArray = (name: string, ctype: string): ElemArray => ({
  name, ctype,
  at: (i) => `${name}[${i}]`,
  set: (i, v) => `${name}[${i}] = ${v};`,
});

const four = (c: string) => c === "float" || c === "int32_t";

/** The cpu generator's elementwise and scalar formulas (the CUDA prelude defines their helpers). */
function cppFormula(op: string): SimtEmitter | undefined {
  const cpu = EMITTERS.get(op);
  return cpu && (cpu.kind === "elementwise" || cpu.kind === "scalar") ? cpu : undefined;
}

export const CUDA_LANG: SimtLang = {
  platform: "cuda",
  syntax: cSyntax("trunc"),
  threads: CUDA_BLOCK_THREADS,
  sharedLimit: SHARED_LIMIT,
  vec4: true,
  warpShuffle: true,
  nullTensor: "nullptr",
  emitterFor: (op: string, span: Span) => simtEmitterFor(CUDA_LANG, cppFormula, op, span,
    `add a CUDA formula for '${op}' in src/codegen/simt/ops.ts (tile ops) or src/codegen/cpp/emitters/ (elementwise), or use the cpu / interp platform`),
  tileElemBytes,

  scratchType: scratchCType,
  storageType: storageCType,
  idx: "int64_t",
  f32: "float",
  wideFloat: "double",
  accInt: "int64_t",
  i32: "int32_t",
  tensorLocalType: (d) => `${storageCType(d)}*`,
  loadConv,
  storeConv,
  roundF,
  roundWide: roundD,

  cast: (t, x) => `(${t})${x}`,
  cond: (c, a, b) => `${c} ? ${a} : ${b}`,
  fma: (a, b, c) => `fmaf(${a}, ${b}, ${c})`,
  fminmax: (kind, a, b) => `tspto_f${kind}<float>(${a}, ${b})`,
  f32Lit: (v) => `${Number.isInteger(v) ? v.toFixed(1) : String(v)}f`,
  int: (v) => intLit(v),
  floatExtreme: (kind) => (kind === "max" ? "-INFINITY" : "INFINITY"),
  intExtreme: (kind) => (kind === "max" ? "INT64_MIN" : "INT64_MAX"),
  sumAdd: (d, p, q) => (d === "int64" ? `tspto_add_sat(${p}, ${q})` : `(${p} + ${q})`),
  isNan: (x) => `(${x} != ${x})`,
  notNan: (x) => `(${x} == ${x})`,
  scratchLit,
  tensorElem: (t, idx) => `((const ${storageCType(t.type.dtype)}*)${t.ptr})[${idx}]`,

  barrier: "__syncthreads();",
  threadLoop: (i, n) => `for (int64_t ${i} = threadIdx.x; ${i} < ${n}; ${i} += blockDim.x)`,
  laneLoop: (j, lane, n) => `for (int64_t ${j} = ${lane}; ${j} < ${n}; ${j} += 32)`,
  seqLoop: (j, lo, hi, step) => (step ? `for (int64_t ${j} = ${lo}; ${j} < ${hi}; ${j} += ${step})` : `for (int64_t ${j} = ${lo}; ${j} < ${hi}; ++${j})`),
  groupStrideLoop: (r, warp, m) => `for (int64_t ${r} = ${warp}; ${r} < ${m}; ${r} += (blockDim.x >> 5))`,
  loop1: (head, stmt) => `${head} ${stmt}`,
  loopBraced: (head, stmts) => `${head} { ${stmts} }`,
  if1: (c, stmt) => `if (${c}) ${stmt}`,
  scratchAt: (addr) => `scratch + ${addr}`,
  tilePtr(ctx, name, at, d, mutable, cmt) {
    const S = scratchCType(d);
    ctx.line(mutable ? `${S}* __restrict__ ${name} = (${S}*)(${at});${cmt ? `  // ${cmt}` : ""}`
      : `const ${S}* __restrict__ ${name} = (const ${S}*)(${at});${cmt ? `  // ${cmt}` : ""}`);
    return cArray(name, S);
  },
  tensorPtr(ctx, name, t, offset, mutable, asScratch, cmt) {
    const T = asScratch ? scratchCType(t.type.dtype) : storageCType(t.type.dtype);
    const c = mutable ? "" : "const ";
    ctx.line(`${c}${T}* __restrict__ ${name} = (${c}${T}*)${t.ptr}${offset === null ? "" : ` + (${offset})`};${cmt ? `  // ${cmt}` : ""}`);
    return cArray(name, T);
  },
  laneWarp(ctx, lane, warp) { ctx.line(`const int ${lane} = threadIdx.x & 31, ${warp} = threadIdx.x >> 5;`); },
  vectorOpen(ctx, plan, n, outs) {
    const vec = n % 4 === 0 && n >= 4 && plan.leaves.every((l) => four(l.ctype)) && outs.every((o) => four(o.arr.ctype));
    if (!vec) return false;
    const aligned = [...plan.leaves.map((l) => l.ptr), ...outs.map((o) => o.arr.name)].map((p) => `(uintptr_t)(${p})`).join(" | ");
    ctx.open(`if (((${aligned}) & 15) == 0) {  // 128-bit loads and stores`);
    const q = ctx.fresh("q");
    ctx.open(`for (int64_t ${q} = threadIdx.x; ${q} < ${n / 4}; ${q} += blockDim.x) {`);
    const regs = plan.leaves.map((l) => {
      const r = ctx.fresh("v");
      const V = l.ctype === "float" ? "float4" : "int4";
      ctx.line(`const ${V} ${r} = ((const ${V}*)(${l.ptr}))[${q}];`);
      return r;
    });
    for (const o of outs) {
      const V = o.arr.ctype === "float" ? "float4" : "int4";
      const lanes = ["x", "y", "z", "w"].map((c) => `(${o.arr.ctype})(${o.value(plan.withLeaves((li) => `${regs[li]}.${c}`))})`);
      ctx.line(`((${V}*)(${o.arr.name}))[${q}] = make_${V}(${lanes.join(", ")});`);
    }
    ctx.close();
    ctx.close("} else {");
    ctx.ind(1);
    return true;
  },
  shuffleCombine: (acc, op, sh) => `for (int ${sh} = 16; ${sh} > 0; ${sh} >>= 1) ${acc} = ${op(acc, `__shfl_xor_sync(0xffffffffu, ${acc}, ${sh})`)};`,
  tensorCoreMatmul(ctx, { at, m, k, k0, n, ea, eb, ec, o }) {
    if (!((at.dtype === "float16" || at.dtype === "bfloat16") && m % 16 === 0 && n % 16 === 0 && k % 16 === 0)) return false;
    // each warp owns 16x16 output tiles; per k-step it converts the 16x16 blocks of a and b
    // (fp32 in scratch, values already representable) into its staging area in shared memory
    // and multiplies them with WMMA, accumulating in fp32.
    const H = at.dtype === "float16" ? "__half" : "__nv_bfloat16";
    const conv = at.dtype === "float16" ? "__float2half_rn" : "__float2bfloat16_rn";
    const st = at.dtype === "float16" ? "tspto_wmma_stage_f16" : "tspto_wmma_stage_bf16"; // the prelude's (one per translation unit)
    const lane = ctx.fresh("lane"), warp = ctx.fresh("warp"), t = ctx.fresh("t"), kk = ctx.fresh("k"), e = ctx.fresh("e");
    const fa = ctx.fresh("fa"), fb = ctx.fresh("fb"), fc = ctx.fresh("fc");
    ctx.line(`const int ${lane} = threadIdx.x & 31, ${warp} = threadIdx.x >> 5;`);
    ctx.open(`for (int64_t ${t} = ${warp}; ${t} < ${(m / 16) * (n / 16)}; ${t} += (blockDim.x >> 5)) {`);
    const i0 = ctx.fresh("i0"), j0 = ctx.fresh("j0");
    ctx.line(`const int64_t ${i0} = (${t} / ${n / 16}) * 16, ${j0} = (${t} % ${n / 16}) * 16;`);
    ctx.line(`nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, ${H}, nvcuda::wmma::row_major> ${fa};`);
    ctx.line(`nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, ${H}, nvcuda::wmma::row_major> ${fb};`);
    ctx.line(`nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> ${fc};`);
    if (ec) {
      // the accumulator's 16x16 block, staged through the output tile (its element type is fp32)
      ctx.line(`for (int ${e} = ${lane}; ${e} < 256; ${e} += 32) ${o.name}[(${i0} + ${e} / 16) * ${n} + ${j0} + ${e} % 16] = ${ec.at(`(${i0} + ${e} / 16) * ${n} + ${j0} + ${e} % 16`)};`);
      ctx.line("__syncwarp();");
      ctx.line(`nvcuda::wmma::load_matrix_sync(${fc}, ${o.name} + ${i0} * ${n} + ${j0}, ${n}, nvcuda::wmma::mem_row_major);`);
    } else {
      ctx.line(`nvcuda::wmma::fill_fragment(${fc}, 0.0f);`);
    }
    ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${k}; ${kk} += 16) {`);
    ctx.line(`for (int ${e} = ${lane}; ${e} < 256; ${e} += 32) {`);
    ctx.line(`  ${st}[${warp}][0][${e}] = ${conv}(${ea.at(`(${i0} + ${e} / 16) * ${k0} + ${kk} + ${e} % 16`)});`);
    ctx.line(`  ${st}[${warp}][1][${e}] = ${conv}(${eb.at(`(${kk} + ${e} / 16) * ${n} + ${j0} + ${e} % 16`)});`);
    ctx.line("}");
    ctx.line("__syncwarp();");
    ctx.line(`nvcuda::wmma::load_matrix_sync(${fa}, &${st}[${warp}][0][0], 16);`);
    ctx.line(`nvcuda::wmma::load_matrix_sync(${fb}, &${st}[${warp}][1][0], 16);`);
    ctx.line(`nvcuda::wmma::mma_sync(${fc}, ${fa}, ${fb}, ${fc});`);
    ctx.line("__syncwarp();");
    ctx.close();
    ctx.line(`nvcuda::wmma::store_matrix_sync(${o.name} + ${i0} * ${n} + ${j0}, ${fc}, ${n}, nvcuda::wmma::mem_row_major);`);
    ctx.close();
    return true;
  },
  readScalar(ctx, name, ct, code) { ctx.line(`const ${ct} ${name} = ${code};`); },
  failAny(_ctx, site, offsets) {
    return `{ const int64_t _off[] = { ${offsets.join(", ")} }; tspto_fail(a, ${site}, ${offsets.length}, _off); }`;
  },
  failRecord(ctx, site, offsets) {
    ctx.line(`const int64_t _off[] = { ${offsets.join(", ")} };`);
    ctx.line(`if (threadIdx.x == 0) tspto_fail(a, ${site}, ${offsets.length}, _off);`);
  },

  prologue(k) {
    const f = k.func;
    k.push(`// InCore function '${comment(f.name)}' (${comment(spanWhere(f.span))}): one block per task, ${CUDA_BLOCK_THREADS} threads`);
    k.push(`extern "C" __global__ void __launch_bounds__(${CUDA_BLOCK_THREADS}) ${k.symbol}(const TsptoCudaArgs a) {`);
    k.declareParamsFrom((i, tensor) => (tensor ? `a.v[${i}]` : `tspto_slot(a, ${i})`), StmtWalker.pointerParam);
    k.line(k.global
      ? `uint8_t* const scratch = (uint8_t*)(intptr_t)a.gscratch + (int64_t)blockIdx.x * ${k.scratchBytes};  // tiles in device memory`
      : "uint8_t* const scratch = tspto_smem;  // tiles in shared memory");
    k.line("(void)scratch;");
  },
  copyTile(ctx, dst, src, bytes) {
    // block-parallel byte copy (4-byte words: tiles are 64-byte aligned, sizes multiples of 4 or bytes)
    const i = ctx.fresh("i");
    if (bytes % 16 === 0) ctx.line(`for (int64_t ${i} = threadIdx.x; ${i} < ${bytes / 16}; ${i} += blockDim.x) ((uint4*)(${dst}))[${i}] = ((const uint4*)(${src}))[${i}];`);
    else ctx.line(`for (int64_t ${i} = threadIdx.x; ${i} < ${bytes}; ${i} += blockDim.x) ((uint8_t*)(${dst}))[${i}] = ((const uint8_t*)(${src}))[${i}];`);
  },
  declareTemp(ctx, bytes) {
    // a device-heap block, its pointer in shared memory
    const tmp = ctx.fresh("tmp");
    ctx.line(`__shared__ uint8_t* ${tmp};`);
    ctx.line(`if (threadIdx.x == 0) ${tmp} = (uint8_t*)malloc(${bytes});`);
    return tmp;
  },
  freeTemp: (tmp) => `if (threadIdx.x == 0) free(${tmp});`,
  freeTemps: (tmps) => `if (threadIdx.x == 0) { ${tmps.map((t) => `free(${t});`).join(" ")} }`,
};

/** The CUDA formula of an op, or a compile error naming the op. */
export function cudaEmitterFor(op: string, span: Span): SimtEmitter { return CUDA_LANG.emitterFor(op, span); }


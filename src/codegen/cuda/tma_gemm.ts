// The v2 TMA + wgmma GEMM (sm_90a): an InCore function that is a tiled contraction
//
//   for i in range(lo, hi, TM):            (the SPMD loop, or any loop of constant bounds)
//     for j in range(j0, j1, TN):
//       acc = matmul(load(A, [i, k0], [TM, TK]), load(B, [k0, j], [TK, TN]))
//       for k in range(k0 + TK, k1, TK): acc = matmulAcc(acc, load(A, [i, k]), load(B, [k, j]))
//       store(acc, [i, j], C)
//
// with A, B fp16 / bf16 row-major tensors and C fp32 (or A's type) becomes one hand-shaped
// kernel instead of the statement-by-statement SIMT lowering (which stages every operand
// through fp32 tile scratch):
//  - the operands move global -> shared by TMA (cp.async.bulk.tensor.2d), 128-byte swizzled
//    tiles of 64 k-columns, described by two CUtensorMaps the native device encodes with
//    cuTensorMapEncodeTiled from the kernel table below and passes as
//    `const __grid_constant__ CUtensorMap` kernel parameters;
//  - warp specialization: warpgroup 0 is the producer (one thread issues TMA into a ring of
//    STAGES shared-memory stages), warpgroup 1 the consumer (wgmma.mma_async m64nBNk16 from
//    the swizzled tiles: A K-major, B MN-major / transposed); full / empty mbarrier pairs per
//    stage (arrive.expect_tx on the full barrier, try_wait.parity loops), the consumer keeps one
//    wgmma group in flight and frees the stage before it;
//  - the block walks its SPMD band of i and every BN-wide slab of columns (a persistent walk:
//    v2 caps an SPMD grid to the blocks the GPU holds at once); the epilogue stores the fp32
//    accumulators as pairs (float2) straight from registers. Other epilogues (a cast, an
//    elementwise op between the accumulator and the store) stay on the tile lowering.
// The match is exact and static: shapes, strides and bounds are proven in range at compile
// time (no run-time checks are needed), else the function takes the general lowering.
// Unverified on a GPU until the GPU pack's v2 checks run it (numerics, the descriptors' LBO/SBO).
import type { Expr, Func, Program, Stmt, Var } from "../../ir/index.js";

/** One tensor map a kernel needs: the native device encodes it per launch (cached by address). */
export interface TmaMapSpec {
  /** Kernel parameter slot holding the tensor's device address. */
  readonly slot: number;
  /** CUtensorMapDataType: 6 float16, 9 bfloat16. */
  readonly dtype: number;
  /** Global extent: inner (columns) and outer (rows) elements. */
  readonly dims: readonly [number, number];
  /** Bytes between rows. */
  readonly rowBytes: number;
  /** Box: inner (columns) and outer (rows) elements (inner * 2 bytes = 128: the 128B swizzle). */
  readonly box: readonly [number, number];
}

export interface TmaGemmPlan {
  readonly ty: "f16" | "bf16";
  readonly M: number; readonly N: number; readonly K: number;
  /** Rows per i step (64 or 128: one or two m64 wgmma rows per consumer). */
  readonly tm: number;
  /** Columns of one consumer tile (a multiple of 64, ≤ 256, BM * BN / 128 ≤ 128 accumulators). */
  readonly bn: number;
  /** Columns covered: [j0, j1). */
  readonly j0: number; readonly j1: number;
  /** k range summed: [k0, k1) in steps of 64. */
  readonly k0: number; readonly k1: number;
  /** Loop bounds of i: slots (SPMD) or constants. */
  readonly lo: { slot: number } | { value: number };
  readonly hi: { slot: number } | { value: number };
  readonly slots: { a: number; b: number; c: number };
  readonly cType: "float";
  readonly stages: number;
  readonly maps: readonly [TmaMapSpec, TmaMapSpec];
  /** Dynamic shared memory bytes (the ring + 1024 bytes of alignment slack). */
  readonly sharedBytes: number;
}

export const TMA_GEMM_THREADS = 256;
const BK = 64;
const SHARED_BUDGET = 200 * 1024;

const isConst = (e: Expr): e is Extract<Expr, { kind: "const" }> => e.kind === "const";
const constOf = (e: Expr): number | null => (isConst(e) && typeof e.value === "number" ? e.value : null);
const isVar = (e: Expr, v: Var) => e.kind === "var" && e.id === v.id;

interface Load { tensor: Var; off: readonly Expr[]; shape: readonly number[] }
function loadOf(e: Expr): Load | null {
  if (e.kind !== "call" || e.op !== "tile.load" || e.args.length !== 2) return null;
  const [t, offs] = e.args;
  if (t.kind !== "var" || t.type.kind !== "tensor" || offs.kind !== "list") return null;
  const shape = e.attrs.shape;
  if (!Array.isArray(shape) || shape.length !== 2) return null;
  return { tensor: t, off: offs.items, shape: shape as number[] };
}

/** The loads and matmul of one k step: [assign A, assign B, assign acc = matmul(...)] (either load first). */
function kStep(stmts: readonly Stmt[], op: "tile.matmul" | "tile.matmulAcc", accIn: Var | null): { a: Load; b: Load; acc: Var } | null {
  if (stmts.length !== 3 || stmts.some((s) => s.kind !== "assign" || s.targets.length !== 1)) return null;
  const as = stmts as readonly Extract<Stmt, { kind: "assign" }>[];
  const mm = as[2].value;
  if (mm.kind !== "call" || mm.op !== op) return null;
  const ops = op === "tile.matmul" ? mm.args : mm.args.slice(1);
  if (op === "tile.matmulAcc" && !(accIn && isVar(mm.args[0], accIn))) return null;
  if (ops.length !== 2 || ops[0].kind !== "var" || ops[1].kind !== "var") return null;
  const byId = new Map(as.slice(0, 2).map((s) => [s.targets[0].id, loadOf(s.value)]));
  const a = byId.get((ops[0] as Var).id), b = byId.get((ops[1] as Var).id);
  if (!a || !b || (ops[0] as Var).id === (ops[1] as Var).id) return null;
  return { a, b, acc: as[2].targets[0] };
}

const tensorShape = (v: Var): readonly number[] => (v.type.kind === "tensor" ? (v.type as { shape: readonly number[] }).shape : []);
const tensorDtype = (v: Var): string => (v.type as { dtype?: string }).dtype ?? "";

/**
 * A tiled contraction C[i.., j..] = sum_k A[i.., k] B[k, j..] over the whole of an InCore function
 * (the loop nest of this file's header), with every bound proven in range; null otherwise.
 */
export interface Contraction {
  readonly dt: "bfloat16" | "float16";
  readonly M: number; readonly N: number; readonly K: number;
  /** The i step (rows of one A tile) and the j step. */
  readonly tm: number; readonly tn: number;
  readonly j0: number; readonly j1: number;
  readonly k0: number; readonly k1: number;
  readonly lo: { slot: number } | { value: number };
  readonly hi: { slot: number } | { value: number };
  readonly slots: { a: number; b: number; c: number };
  /** [lo, hi) of i over every call. */
  readonly ranges: readonly (readonly [number, number])[];
}

export function matchContraction(program: Program, f: Func): Contraction | null {
  const body = f.body.filter((s) => !(s.kind === "return" && s.values.length === 0));
  if (body.length !== 1 || body[0].kind !== "for") return null;
  const li = body[0];
  const tm = constOf(li.step);
  if (li.iterArgs.length || tm === null || li.body.length !== 1 || li.body[0].kind !== "for") return null;
  const lj = li.body[0];
  const tn = constOf(lj.step), j0 = constOf(lj.start), jStop = constOf(lj.stop);
  if (lj.iterArgs.length || tn === null || j0 === null || jStop === null || tn <= 0 || jStop <= j0) return null;
  const jb = lj.body;
  const hasK = jb.length === 5;
  if (!(jb.length === 5 || jb.length === 4)) return null;
  const first = kStep(jb.slice(0, 3), "tile.matmul", null);
  if (!first) return null;
  let acc = first.acc, tk = first.a.shape[1], kEnd: number;
  const k0 = constOf(first.a.off[1]);
  if (k0 === null) return null;
  kEnd = k0 + tk;
  if (hasK) {
    const lk = jb[3];
    if (lk.kind !== "for" || lk.iterArgs.length !== 1 || lk.inits.length !== 1 || !isVar(lk.inits[0], acc) || lk.results.length !== 1) return null;
    const ks = constOf(lk.start), ke = constOf(lk.stop), kst = constOf(lk.step);
    if (ks !== k0 + tk || ke === null || kst !== tk || (ke - ks) % tk !== 0 || lk.body.length !== 4) return null;
    const y = lk.body[3];
    const step = kStep(lk.body.slice(0, 3), "tile.matmulAcc", lk.iterArgs[0]);
    if (!step || y.kind !== "yield" || y.values.length !== 1 || !isVar(y.values[0], step.acc)) return null;
    // the step's loads: A[i, k], B[k, j] of the same tensors and tiles
    if (step.a.tensor.id !== first.a.tensor.id || step.b.tensor.id !== first.b.tensor.id) return null;
    if (!isVar(step.a.off[0], li.loopVar) || !isVar(step.a.off[1], lk.loopVar) || !isVar(step.b.off[0], lk.loopVar) || !isVar(step.b.off[1], lj.loopVar)) return null;
    if (step.a.shape.join() !== first.a.shape.join() || step.b.shape.join() !== first.b.shape.join()) return null;
    acc = lk.results[0];
    kEnd = ke;
  }
  const st = jb[jb.length - 1];
  if (st.kind !== "eval" || st.expr.kind !== "call" || st.expr.op !== "tile.store") return null;
  const [sv, soff, sc] = st.expr.args;
  if (!sv || !isVar(sv, acc) || !soff || soff.kind !== "list" || !sc || sc.kind !== "var") return null;
  if (!isVar(soff.items[0], li.loopVar) || !isVar(soff.items[1], lj.loopVar)) return null;
  // the first k step's loads: A[i, k0], B[k0, j]
  if (!isVar(first.a.off[0], li.loopVar) || constOf(first.b.off[0]) !== k0 || !isVar(first.b.off[1], lj.loopVar)) return null;
  const A = first.a.tensor, B = first.b.tensor, C = sc as Var;
  const [M, K] = tensorShape(A), [K2, N] = tensorShape(B), [CM, CN] = tensorShape(C);
  const dt = tensorDtype(A);
  if (tensorShape(A).length !== 2 || tensorShape(B).length !== 2 || tensorShape(C).length !== 2) return null;
  // static shapes only (a dynamic dimension is a name)
  if (![...tensorShape(A), ...tensorShape(B), ...tensorShape(C)].every((d) => typeof d === "number")) return null;
  if (!(dt === "bfloat16" || dt === "float16") || tensorDtype(B) !== dt || K2 !== K || CM !== M || CN !== N) return null;
  // fp32 results only: a narrowing store or cast rounds with the cast modes of the tile
  // lowering (ties away from zero by default), which the pair stores here do not implement
  const cdt = tensorDtype(C);
  if (cdt !== "float32") return null;
  if (first.a.shape[0] !== tm || first.b.shape[0] !== tk || first.b.shape[1] !== tn) return null;
  if (K % 8 !== 0 || N % 8 !== 0) return null;
  const j1 = j0 + tn * Math.ceil((jStop - j0) / tn);
  if (j0 < 0 || j1 > N || kEnd > K || k0 < 0) return null;
  // i bounds: constants, or parameters whose every call passes constants (the SPMD split keeps the range)
  const paramSlot = (e: Expr) => (e.kind === "var" ? f.params.findIndex((p) => p.var.id === e.id) : -1);
  const bound = (e: Expr): { slot: number } | { value: number } | null => {
    const c = constOf(e);
    if (c !== null) return { value: c };
    const s = paramSlot(e);
    return s >= 0 && tensorShape(f.params[s].var).length === 0 && f.params[s].var.type.kind === "scalar" ? { slot: s } : null;
  };
  const lo = bound(li.start), hi = bound(li.stop);
  if (!lo || !hi) return null;
  const ranges = callRanges(program, f, lo, hi);
  if (!ranges || ranges.some(([a, b]) => a < 0 || (b > a && a + tm * Math.ceil((b - a) / tm) > M))) return null;
  const slots = { a: paramSlot(A), b: paramSlot(B), c: paramSlot(C) };
  if (slots.a < 0 || slots.b < 0 || slots.c < 0 || f.params[slots.c].dir === "in") return null;
  return { dt: dt as "bfloat16" | "float16", M, N, K, tm, tn, j0, j1, k0, k1: kEnd, lo, hi, slots, ranges };
}

/** The TMA GEMM plan of an InCore function, or null when it is not such a contraction (or not provably in bounds). */
export function matchTmaGemm(program: Program, f: Func): TmaGemmPlan | null {
  const c = matchContraction(program, f);
  if (!c) return null;
  const { dt, M, N, K, tm, j0, j1, k0, k1: kEnd, lo, hi, slots } = c;
  // k in 64-column boxes (128 bytes: the 128B swizzle); columns [j0, j1) in consumer tiles of bn
  if (!(tm === 64 || tm === 128) || (kEnd - k0) % BK !== 0) return null;
  const maxBn = tm === 64 ? 256 : 128;
  const bn = [256, 128, 64].find((w) => w <= maxBn && (j1 - j0) % w === 0);
  if (!bn) return null;
  const stageBytes = tm * BK * 2 + bn * BK * 2;
  const stages = Math.max(2, Math.min(6, Math.floor(SHARED_BUDGET / stageBytes)));
  const tmaType = dt === "float16" ? 6 : 9;
  return {
    ty: dt === "float16" ? "f16" : "bf16", M, N, K, tm, bn, j0, j1, k0, k1: kEnd, lo, hi, slots,
    cType: "float", stages,
    maps: [
      { slot: slots.a, dtype: tmaType, dims: [K, M], rowBytes: K * 2, box: [BK, tm] },
      { slot: slots.b, dtype: tmaType, dims: [N, K], rowBytes: N * 2, box: [64, BK] },
    ],
    sharedBytes: stages * stageBytes + 1024,
  };
}

/** The [lo, hi) ranges of i over every call of `f` in the program (null: one is not constant). */
function callRanges(program: Program, f: Func, lo: { slot: number } | { value: number }, hi: { slot: number } | { value: number }): [number, number][] | null {
  const out: [number, number][] = [];
  let ok = true;
  const visitExpr = (e: Expr) => {
    if (e.kind === "call") {
      if (e.op === "call" && e.attrs.callee === f.name) {
        const val = (b: { slot: number } | { value: number }) => ("value" in b ? b.value : constOf(e.args[b.slot] ?? { kind: "list", items: [], type: { kind: "list", elems: [] } as never, span: undefined as never }));
        const a = val(lo), b = val(hi);
        if (a === null || b === null) ok = false; else out.push([a, b]);
      }
      e.args.forEach(visitExpr);
    } else if (e.kind === "list") e.items.forEach(visitExpr);
  };
  const visit = (ss: readonly Stmt[]) => {
    for (const s of ss) {
      switch (s.kind) {
        case "assign": visitExpr(s.value); break;
        case "eval": visitExpr(s.expr); break;
        case "for": visit(s.body); break;
        case "while": visit(s.body); break;
        case "if": visit(s.then); visit(s.else); break;
        case "scope": visit(s.body); break;
        default: break;
      }
    }
  };
  for (const g of program.functions) if (g !== f) visit(g.body);
  return ok && out.length ? out : null;
}

/** Device helpers of the TMA GEMM (once per translation unit, after the v2 prelude). */
export const TMA_GEMM_PRELUDE = String.raw`// ---- TMA + mbarrier + swizzled wgmma descriptors (sm_90a)
#include <cuda.h>  // CUtensorMap (a 128-byte opaque type; the host encodes it)
namespace {
__device__ __forceinline__ uint32_t tspto_sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void tspto_mbar_init(uint64_t* b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tspto_sa(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void tspto_mbar_expect_tx(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(tspto_sa(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tspto_mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(tspto_sa(b)) : "memory");
}
// Spins until the phase of parity 'parity' of the barrier has completed.
__device__ __forceinline__ void tspto_mbar_wait(uint64_t* b, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(tspto_sa(b)), "r"(parity) : "memory");
  } while (!done);
}
// One 2D TMA box (coordinates: column, row) into shared memory, completing on the barrier's transaction count.
__device__ __forceinline__ void tspto_tma_load_2d(void* dst, const CUtensorMap* map, int32_t c0, int32_t c1, uint64_t* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               :: "r"(tspto_sa(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(tspto_sa(bar)) : "memory");
}
// A shared-memory matrix descriptor with the 128-byte swizzle (layout type 1 in bits 62-63); the
// tile base is 1024-byte aligned (base offset 0).
__device__ __forceinline__ uint64_t tspto_desc_sw128(const void* p, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((tspto_sa(p) & 0x3FFFFu) >> 4) | ((uint64_t)((lbo & 0x3FFFFu) >> 4) << 16) | ((uint64_t)((sbo & 0x3FFFFu) >> 4) << 32) | (1ull << 62);
}
}  // namespace
`;

/** The kernel of a plan. */
export function emitTmaGemm(plan: TmaGemmPlan, symbol: string, where: string): string {
  const { ty, N, tm, bn, j0, j1, k0, k1, stages, slots } = plan;
  const regs = bn / 2, mrows = tm / 64, nk = (k1 - k0) / BK, nb = bn / 64;
  const aBytes = tm * BK * 2, bBytes = bn * BK * 2, stageBytes = aBytes + bBytes;
  const bound = (b: { slot: number } | { value: number }) => ("slot" in b ? `tspto_slot(a, ${b.slot})` : `INT64_C(${b.value})`);
  const L: string[] = [];
  const p = (s: string) => L.push(s);
  const accs = (mi: number) => Array.from({ length: regs }, (_, r) => `"+f"(d${mi}[${r}])`).join(", ");
  const ops = Array.from({ length: regs }, (_, r) => `%${r}`).join(",");
  p(`// InCore function (${where}): a tiled ${ty} contraction -> TMA (128B swizzle) + a ${stages}-stage mbarrier ring, producer warpgroup + consumer warpgroup, wgmma m64n${bn}k16 (sm_90a)`);
  p(`extern "C" __global__ void __launch_bounds__(${TMA_GEMM_THREADS}, 1) ${symbol}(const TsptoCudaArgs a, const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB) {`);
  p(`  // ring: stage s at s * ${stageBytes} bytes: A [${tm} rows][64 k] (K-major), then B as ${nb} boxes of [64 k rows][64 n] (MN-major)`);
  p(`  uint8_t* const ring = (uint8_t*)(((uintptr_t)tspto_smem + 1023) & ~(uintptr_t)1023);`);
  p(`  __shared__ __align__(8) uint64_t full[${stages}], empty[${stages}];`);
  p(`  float* const C = (float*)(intptr_t)a.v[${slots.c}];`);
  p(`  const int64_t lo = ${bound(plan.lo)}, hi = ${bound(plan.hi)};`);
  p(`  if (threadIdx.x == 0) {`);
  p(`    for (int s = 0; s < ${stages}; ++s) { tspto_mbar_init(&full[s], 1); tspto_mbar_init(&empty[s], 1); }`);
  p(`    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");`);
  p(`  }`);
  p(`  __syncthreads();`);
  p(`  if (threadIdx.x < 128) {`);
  p(`    // producer: one thread issues every TMA load (the ring's empty barriers start "completed": parity 1)`);
  p(`    if (threadIdx.x == 0) {`);
  p(`      int s = 0; uint32_t ph = 0;`);
  p(`      for (int64_t i = lo; i < hi; i += ${tm})`);
  p(`        for (int32_t j = ${j0}; j < ${j1}; j += ${bn})`);
  p(`          for (int32_t kt = 0; kt < ${nk}; ++kt) {`);
  p(`            tspto_mbar_wait(&empty[s], ph ^ 1u);`);
  p(`            uint8_t* const st = ring + s * ${stageBytes};`);
  p(`            tspto_mbar_expect_tx(&full[s], ${stageBytes});`);
  p(`            const int32_t kc = ${k0} + kt * ${BK};`);
  p(`            tspto_tma_load_2d(st, &tmA, kc, (int32_t)i, &full[s]);`);
  p(`#pragma unroll`);
  p(`            for (int b = 0; b < ${nb}; ++b) tspto_tma_load_2d(st + ${aBytes} + b * 8192, &tmB, j + 64 * b, kc, &full[s]);`);
  p(`            if (++s == ${stages}) { s = 0; ph ^= 1u; }`);
  p(`          }`);
  p(`    }`);
  p(`  } else {`);
  p(`    // consumer warpgroup: wgmma from the swizzled stages, one group in flight`);
  p(`    const int t = threadIdx.x - 128, w = t >> 5, l = t & 31;`);
  p(`    int s = 0; uint32_t ph = 0;`);
  p(`    for (int64_t i = lo; i < hi; i += ${tm}) {`);
  p(`      for (int32_t j = ${j0}; j < ${j1}; j += ${bn}) {`);
  for (let mi = 0; mi < mrows; mi++) p(`        float d${mi}[${regs}];`);
  p(`#pragma unroll`);
  p(`        for (int r = 0; r < ${regs}; ++r) { ${Array.from({ length: mrows }, (_, mi) => `d${mi}[r] = 0.0f;`).join(" ")} }`);
  p(`        int prev = -1;`);
  p(`        for (int32_t kt = 0; kt < ${nk}; ++kt) {`);
  p(`          tspto_mbar_wait(&full[s], ph);`);
  p(`          const uint8_t* const st = ring + s * ${stageBytes};`);
  p(`          asm volatile("wgmma.fence.sync.aligned;" ::: "memory");`);
  p(`#pragma unroll`);
  p(`          for (int kk = 0; kk < ${BK / 16}; ++kk) {`);
  p(`            // B (MN-major, transposed): 8-row k groups 1024 bytes apart (SBO), 64-column boxes 8192 apart (LBO); k16 = 2048 bytes`);
  p(`            const uint64_t db = tspto_desc_sw128(st + ${aBytes} + kk * 2048, 8192, 1024);`);
  for (let mi = 0; mi < mrows; mi++) {
    p(`            { // rows ${mi * 64}..${mi * 64 + 63}: A K-major, 8-row groups 1024 bytes apart, k16 = 32 bytes into the swizzled row`);
    p(`              const uint64_t da = tspto_desc_sw128(st + ${mi * 64 * 128} + kk * 32, 16, 1024);`);
    p(`              asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %${regs + 2}, 0;\\nwgmma.mma_async.sync.aligned.m64n${bn}k16.f32.${ty}.${ty} {${ops}}, %${regs}, %${regs + 1}, p, 1, 1, 0, 1;\\n}\\n" : ${accs(mi)} : "l"(da), "l"(db), "r"(1));`);
    p(`            }`);
  }
  p(`          }`);
  p(`          asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");`);
  p(`          // the group before this one is done: its stage goes back to the producer`);
  p(`          asm volatile("wgmma.wait_group.sync.aligned 1;" : ${Array.from({ length: mrows }, (_, mi) => accs(mi)).join(", ")} :: "memory");`);
  p(`          if (prev >= 0 && t == 0) tspto_mbar_arrive(&empty[prev]);`);
  p(`          prev = s;`);
  p(`          if (++s == ${stages}) { s = 0; ph ^= 1u; }`);
  p(`        }`);
  p(`        asm volatile("wgmma.wait_group.sync.aligned 0;" : ${Array.from({ length: mrows }, (_, mi) => accs(mi)).join(", ")} :: "memory");`);
  p(`        if (prev >= 0 && t == 0) tspto_mbar_arrive(&empty[prev]);`);
  p(`        // epilogue: accumulator r of thread t is row 16w + l/4 (+8 for r&2), column 8(r/4) + 2(l&3) (+1 for r&1)`);
  for (let mi = 0; mi < mrows; mi++) {
    p(`#pragma unroll`);
    p(`        for (int r = 0; r < ${regs}; r += 2) {`);
    p(`          const int64_t row = i + ${mi * 64} + 16 * w + (l >> 2) + ((r & 2) ? 8 : 0);`);
    p(`          const int64_t col = j + 8 * (r >> 2) + 2 * (l & 3);`);
    p(`          *(float2*)&C[row * ${N} + col] = make_float2(d${mi}[r], d${mi}[r + 1]);`);
    p(`        }`);
  }
  p(`      }`);
  p(`    }`);
  p(`  }`);
  p(`}`);
  return L.join("\n") + "\n";
}

/**
 * The kernel table's tensor maps (kernels/entry.cpp): 9 int64 per map: kernel index, slot,
 * data type, inner and outer extent, row bytes, inner and outer box, swizzle (3: 128B).
 * The native device reads it after dlopen (tspto_cuda_tmaps, optional: older artifacts have none).
 */
export function tmapTable(entries: readonly { index: number; plan: TmaGemmPlan }[]): string {
  const rows = entries.flatMap(({ index, plan }) => plan.maps.map((m) => [index, m.slot, m.dtype, m.dims[0], m.dims[1], m.rowBytes, m.box[0], m.box[1], 3]));
  return [
    "// TMA tensor maps the native device encodes (cuTensorMapEncodeTiled) and passes after the argument block, per kernel in order:",
    "// kernel, slot, CUtensorMapDataType, inner / outer extent, row bytes, inner / outer box, swizzle.",
    `extern "C" const int tspto_cuda_tmap_count = ${rows.length};`,
    `extern "C" const int64_t tspto_cuda_tmaps[${Math.max(1, rows.length * 9)}] = { ${rows.flat().join(", ") || "0"} };`,
  ].join("\n");
}

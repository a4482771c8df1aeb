// tile.matmulQuant (src/ir/ops/quant.ts): the weight-only quantized matmul, dequantized inside
// the product. Each output element is a dot product of a row of x with a row of the weight (one
// weight row per output column, K along it), so the weight is streamed row by row with wide
// loads: 16 weights at a time (16 int8 bytes, or 8 bytes of int4 pairs whose low and high
// nibbles are interleaved back into k order), widened to int32, converted to fp32 and multiplied
// with 16 elements of x by fused multiply-adds into a per-group accumulator; at the end of a
// group the accumulator is scaled by the group's scale and added (fused) to the total; a group
// size that is not a multiple of 16 leaves a scalar tail per group; the 16 lanes are summed at
// the end. Register blocking: R rows of x times C weight rows per block (R = 1, C = 4 for a GEMV:
// one load of x serves four weight rows; R = 4, C = 2 for prefill). Operands read from a tensor
// window are read in place (forwardableMatmulOperands): x and the weight never get a scratch
// copy. The values are the reference's within the tolerance src/ir/ops/quant.ts states.
import { type Call, type DType, type Expr, type TileType } from "../../../ir/index.js";
import { loadConv, roundF, storageCType } from "./ctypes.js";
import { type KernelCtx, type TileDest, def } from "./table.js";
import { offsetsOf, windowCheck } from "./memory.js";
import { destPtr, tileOperand } from "./tiles.js";

/** A 2-D operand as a pointer with a row stride (in elements of its C type), read in place or from scratch; null when it is an expression. */
interface Rows { ptr: string; ld: string; dtype: DType; storage: boolean }

function operandRows(ctx: KernelCtx, e: Expr, cols: number): Rows | ((idx: string) => string) {
  const fw = ctx.matmulOperand?.(e);
  const t = tileOperand(e);
  if (fw && !fw.trans) {
    const load = fw.load;
    const tr = ctx.tensor(load.args[0]);
    const lt = load.type as TileType;
    const offs = windowCheck(ctx, "load", tr, offsetsOf(ctx, load.args[1], 2, "load", load.span), [...lt.shape], load.span);
    const p = ctx.fresh("q");
    const ct = storageCType(t.dtype);
    ctx.line(`const ${ct}* __restrict ${p} = (const ${ct}*)${tr.ptr} + (${offs[0]}) * ${typeof tr.dims[1] === "number" ? tr.dims[1] : `(${tr.dims[1]})`} + ${offs[1]};  // matmulQuant operand read in place`);
    return { ptr: p, ld: typeof tr.dims[1] === "number" ? String(tr.dims[1]) : `(${tr.dims[1]})`, dtype: t.dtype, storage: true };
  }
  const f = ctx.elements(e);
  const mm = /^([A-Za-z_]\w*)\[@IDX@\]$/.exec(f("@IDX@"));
  if (mm) return { ptr: mm[1], ld: String(cols), dtype: t.dtype, storage: false };
  return (idx: string) => f(idx);
}

function emitMatmulQuant(ctx: KernelCtx, call: Call, dest: TileDest): void {
  const xt = tileOperand(call.args[0]), wt = tileOperand(call.args[1]), st = tileOperand(call.args[2]);
  const bits = Number(call.attrs.bits), G = Number(call.attrs.groupSize);
  const [m, K] = xt.shape, n = wt.shape[0], kw = wt.shape[1], groups = st.shape[1];
  const [mv0, nv0] = ctx.validOf(call);
  const MV = typeof mv0 === "number" ? String(mv0) : `(${mv0})`, NV = typeof nv0 === "number" ? String(nv0) : `(${nv0})`;
  const X = operandRows(ctx, call.args[0], K), W = operandRows(ctx, call.args[1], kw), S = operandRows(ctx, call.args[2], groups);
  const o = destPtr(ctx, dest);
  const outD = dest.type.dtype;
  const el = (r: Rows | ((idx: string) => string), row: string, col: string): string =>
    typeof r === "function" ? r(`(${row}) * ${r === X ? K : r === W ? kw : groups} + (${col})`) : r.storage ? loadConv(r.dtype, `${r.ptr}[(${row}) * ${r.ld} + (${col})]`) : `${r.ptr}[(${row}) * ${r.ld} + (${col})]`;
  /** The weight value q(row, k) as an int. */
  const q = (row: string, k: string): string => bits === 8 ? `(int)${el(W, row, k)}` : `((((int)${el(W, row, `(${k}) >> 1`)} >> (((${k}) & 1) * 4)) & 15) - 8)`;
  ctx.open("{");
  ctx.line(`// matmulQuant: [${m}, ${K}] x int${bits} [${n}, ${K}]ᵀ, groups of ${G}`);
  // x as fp32 rows (a float32 tensor read in place, or a tile in scratch, whose elements are floats)
  const fastX = typeof X !== "function" && (X.dtype === "float32" || !X.storage);
  if (!fastX || typeof W === "function") {
    // an operand that is an element expression (or x in 16-bit storage): plain loops, same order
    const i = ctx.fresh("i"), j = ctx.fresh("j"), g = ctx.fresh("g"), k = ctx.fresh("k"), tot = ctx.fresh("tot"), part = ctx.fresh("part");
    ctx.open(`for (int64_t ${i} = 0; ${i} < ${MV}; ++${i}) for (int64_t ${j} = 0; ${j} < ${NV}; ++${j}) {`);
    ctx.line(`float ${tot} = 0.0f;`);
    ctx.open(`for (int64_t ${g} = 0; ${g} < ${groups}; ++${g}) {`);
    ctx.line(`float ${part} = 0.0f;`);
    ctx.line(`for (int64_t ${k} = ${g} * ${G}; ${k} < (${g} + 1) * ${G}; ++${k}) ${part} = __builtin_fmaf((float)${el(X, i, k)}, (float)${q(j, k)}, ${part});`);
    ctx.line(`${tot} = __builtin_fmaf((float)${el(S, j, g)}, ${part}, ${tot});`);
    ctx.close();
    ctx.line(`${o}[${i} * ${n} + ${j}] = ${roundF(outD, tot)};`);
    ctx.close();
    ctx.close();
    return;
  }
  const x = X as Rows, w = W as Rows;
  // 16 weights as fp32 lanes: AVX-512 / AVX2 sign extension and conversion (GCC scalarizes the
  // generic vector conversion of 16 int8 lanes), int4 nibbles interleaved back into k order with
  // an SSE2 unpack; the generic vector-extension form elsewhere.
  const V8 = ctx.fresh("v8u"), V16U = ctx.fresh("v16u"), V16I = ctx.fresh("v16i"), V32 = ctx.fresh("v16i32"), CV = ctx.fresh("wq");
  ctx.line(`typedef uint8_t ${V8} __attribute__((vector_size(8)));`);
  ctx.line(`typedef uint8_t ${V16U} __attribute__((vector_size(16)));`);
  ctx.line(`typedef int8_t ${V16I} __attribute__((vector_size(16)));`);
  ctx.line(`typedef int32_t ${V32} __attribute__((vector_size(64)));`);
  const wt8 = bits === 8 ? "int8_t" : "uint8_t";
  ctx.open(`auto ${CV} = [](const ${wt8}* __restrict p) -> tspto_v16f {`);
  ctx.line("#if defined(__AVX2__)");
  if (bits === 8) ctx.line("const __m128i q = _mm_loadu_si128((const __m128i*)p);");
  else {
    ctx.line("const __m128i b = _mm_loadl_epi64((const __m128i*)p), m = _mm_set1_epi8(15);");
    ctx.line("const __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(_mm_and_si128(b, m), _mm_and_si128(_mm_srli_epi16(b, 4), m)), _mm_set1_epi8(8));");
  }
  ctx.line("#if defined(__AVX512F__)");
  ctx.line("return (tspto_v16f)_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));");
  ctx.line("#else");
  ctx.line("const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));");
  ctx.line("tspto_v16f v; std::memcpy(&v, &lo, 32); std::memcpy((char*)&v + 32, &hi, 32); return v;");
  ctx.line("#endif");
  ctx.line("#else");
  if (bits === 8) ctx.line(`${V16I} b; std::memcpy(&b, p, 16); return __builtin_convertvector(__builtin_convertvector(b, ${V32}), tspto_v16f);`);
  else {
    ctx.line(`${V8} b; std::memcpy(&b, p, 8); const ${V8} lo = b & (uint8_t)15, hi = b >> (uint8_t)4;`);
    ctx.line(`const ${V16U} il = __builtin_shufflevector(lo, hi, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);`);
    ctx.line(`const ${V16I} v = (${V16I})il - (int8_t)8; return __builtin_convertvector(__builtin_convertvector(v, ${V32}), tspto_v16f);`);
  }
  ctx.line("#endif");
  ctx.close("};");
  /** 16 weights of row `row` from k = `k` (a multiple of 16 inside a group; for int4, k even) as fp32 lanes. */
  const wvec = (row: string, k: string): string => `${CV}(${w.ptr} + (${row}) * ${w.ld} + ${bits === 8 ? `(${k})` : `((${k}) >> 1)`})`;
  const full = G - (G % 16), tail = G % 16;
  /** An R x C block: rows i0.., weight rows n0... */
  const block = (R: number, C: number, i0: string, n0: string): void => {
    const acc = (r: number, c: number) => `a${r}_${c}`, tot = (r: number, c: number) => `t${r}_${c}`, ts = (r: number, c: number) => `s${r}_${c}`;
    const rc: [number, number][] = [];
    for (let r = 0; r < R; r++) for (let c = 0; c < C; c++) rc.push([r, c]);
    ctx.open("{");
    ctx.line(`tspto_v16f ${rc.map(([r, c]) => `${tot(r, c)} = tspto_v16f{}`).join(", ")};`);
    ctx.line(`float ${rc.map(([r, c]) => `${ts(r, c)} = 0.0f`).join(", ")};`);
    const g = ctx.fresh("g"), kk = ctx.fresh("k");
    ctx.open(`for (int64_t ${g} = 0; ${g} < ${K}; ${g} += ${G}) {`);
    if (full > 0) {
      ctx.line(`tspto_v16f ${rc.map(([r, c]) => `${acc(r, c)} = tspto_v16f{}`).join(", ")};`);
      ctx.open(`for (int64_t ${kk} = ${g}; ${kk} < ${g} + ${full}; ${kk} += 16) {`);
      for (let c = 0; c < C; c++) ctx.line(`const tspto_v16f w${c} = ${wvec(`${n0} + ${c}`, kk)};`);
      for (let r = 0; r < R; r++) {
        ctx.line(`{ const tspto_v16f xv = tspto_ld16(${x.ptr} + (${i0} + ${r}) * ${x.ld} + ${kk}); ${Array.from({ length: C }, (_, c) => `${acc(r, c)} = tspto_fma16(xv, w${c}, ${acc(r, c)});`).join(" ")} }`);
      }
      ctx.close();
    }
    if (tail > 0) {
      ctx.line(`float ${rc.map(([r, c]) => `p${r}_${c} = 0.0f`).join(", ")};`);
      ctx.open(`for (int64_t ${kk} = ${g} + ${full}; ${kk} < ${g} + ${G}; ++${kk}) {`);
      for (let c = 0; c < C; c++) ctx.line(`const float w${c} = (float)${q(`${n0} + ${c}`, kk)};`);
      for (let r = 0; r < R; r++) ctx.line(`{ const float xs = ${x.ptr}[(${i0} + ${r}) * ${x.ld} + ${kk}]; ${Array.from({ length: C }, (_, c) => `p${r}_${c} = __builtin_fmaf(xs, w${c}, p${r}_${c});`).join(" ")} }`);
      ctx.close();
    }
    for (let c = 0; c < C; c++) {
      ctx.line(`{ const float sc = ${el(S, `${n0} + ${c}`, `${g} / ${G}`)};${full > 0 ? " const tspto_v16f sv = tspto_splat16(sc);" : ""} ${Array.from({ length: R }, (_, r) =>
        `${full > 0 ? `${tot(r, c)} = tspto_fma16(sv, ${acc(r, c)}, ${tot(r, c)}); ` : ""}${tail > 0 ? `${ts(r, c)} = __builtin_fmaf(sc, p${r}_${c}, ${ts(r, c)});` : ""}`).join(" ")} }`);
    }
    ctx.close();
    for (const [r, c] of rc) {
      ctx.line(`{ float h = ${ts(r, c)}; for (int l = 0; l < 16; ++l) h += ${tot(r, c)}[l]; ${o}[(${i0} + ${r}) * ${n} + ${n0} + ${c}] = ${roundF(outD, "h")}; }`);
    }
    ctx.close();
  };
  const R = Math.min(m, 4), C = R >= 4 ? 2 : 4;
  const n0 = ctx.fresh("n"), i0 = ctx.fresh("i");
  const nFull = ctx.fresh("nf"), mFull = ctx.fresh("mf");
  ctx.line(`const int64_t ${nFull} = ${NV} - ${NV} % ${C}, ${mFull} = ${MV} - ${MV} % ${R};`);
  ctx.open(`for (int64_t ${n0} = 0; ${n0} < ${nFull}; ${n0} += ${C}) {`);
  ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}; ${i0} += ${R}) {`);
  block(R, C, i0, n0);
  ctx.close();
  if (R > 1) {
    ctx.open(`for (int64_t ${i0}r = ${mFull}; ${i0}r < ${MV}; ++${i0}r) {`);
    block(1, C, `${i0}r`, n0);
    ctx.close();
  }
  ctx.close();
  ctx.open(`for (int64_t ${n0}r = ${nFull}; ${n0}r < ${NV}; ++${n0}r) {`);
  ctx.open(`for (int64_t ${i0}s = 0; ${i0}s < ${MV}; ++${i0}s) {`);
  block(1, 1, `${i0}s`, `${n0}r`);
  ctx.close();
  ctx.close();
  ctx.close();
}

def("tile.matmulQuant", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmulQuant(ctx, call, dest); } });

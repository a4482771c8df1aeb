// tile.matmul and tile.matmulAcc.
import { type Call, type Expr, type TileType, contractOf, isFloat } from "../../../ir/index.js";
import { SAT } from "./ctypes.js";
import { type KernelCtx, type TileDest, def } from "./table.js";
import { offsetsOf, windowCheck } from "./memory.js";
import { destPtr, tileOperand } from "./tiles.js";
import { type CDim, cdim } from "./dims.js";

/** The most rows of a matmul whose b is streamed row by row (TensorToTile tiles such products wide). */
const FEW_ROWS = 6;

/**
 * The valid extents a matmul works in (docs/semantics.md, Partial tiles): it sums k below K =
 * min(a's valid columns, b's valid rows) and stores the output's valid rows mv and columns nv
 * only (its blocks start below them: at most a block's worth of pad is computed, none stored).
 * Numbers where static; with no validShape anywhere, K = k, mv = m, nv = n and the code is the
 * unbounded one.
 */
function validExtents(ctx: KernelCtx, call: Call, base: number, k: number): { K: string; mv: CDim; nv: CDim } {
  const ka = ctx.validOf(call.args[base])[1], kb = ctx.validOf(call.args[base + 1])[0];
  const K = typeof ka === "number" && typeof kb === "number" ? Math.min(ka, kb) : ka === k ? kb : kb === k ? ka : `std::min<int64_t>(${ka}, ${kb})`;
  const [mv, nv] = ctx.validOf(call);
  return { K: typeof K === "number" ? String(K) : `(${K})`, mv, nv };
}
/** `f()` under `if (cond)` (none when cond is null). */
function guarded(ctx: KernelCtx, cond: string | null, f: () => void): void {
  if (!cond) { f(); return; }
  ctx.open(`if (${cond}) {`);
  f();
  ctx.close();
}

function emitMatmul(ctx: KernelCtx, call: Call, dest: TileDest, accArg: Expr | null): void {
  const base = accArg ? 1 : 0;
  const at = tileOperand(call.args[base]), bt = tileOperand(call.args[base + 1]);
  const [m, k] = at.shape, n = bt.shape[1];
  const { K, mv: mValid, nv: nValid } = validExtents(ctx, call, base, k);
  /** Conditions on the valid rows / columns: null where the extent is the whole tile. */
  const rowsBelow = (i: string): string | null => (mValid === m ? null : `${i} < ${cdim(mValid)}`);
  const colsBelow = (j: string): string | null => (nValid === n ? null : `${j} < ${cdim(nValid)}`);
  const and = (...cs: (string | null)[]): string => cs.filter(Boolean).map((c) => ` && ${c}`).join("");
  // fpContract "fast" (set by the FpContract pass): each step is one fused multiply-add
  const fused = contractOf(call.attrs) === "fast";
  if (isFloat(at.dtype)) {
    // An operand that is load(t, ...) or move(load(t, ...)) used only here is read straight
    // from the tensor window (forwardableMatmulOperands): row stride = the tensor's row length,
    // no copies; transpose(load(...)) (aTrans / bTrans) is read with its strides swapped.
    const direct = (x: Expr): { ptr: string; ld: CDim; trans: boolean } | null => {
      const fw = ctx.matmulOperand?.(x);
      if (!fw) return null;
      const load = fw.load;
      const t = ctx.tensor(load.args[0]);
      const lt = load.type as TileType;
      const offs = windowCheck(ctx, "load", t, offsetsOf(ctx, load.args[1], 2, "load", load.span), [...lt.shape], load.span);
      const p = ctx.fresh("p");
      ctx.line(`const float* __restrict ${p} = (const float*)${t.ptr} + ${offs[0]} * ${cdim(t.dims[1])} + ${offs[1]};  // matmul operand read from '${t.label.replace(/[^\w.]/g, "_")}' (forwarded)`);
      return { ptr: p, ld: cdim(t.dims[1]), trans: fw.trans };
    };
    const da = direct(call.args[base]), db = direct(call.args[base + 1]);
    const ea = da ? null : ctx.elements(call.args[base]), eb = db ? null : ctx.elements(call.args[base + 1]);
    // In place (PlanMemory gave the accumulator and the result one address: a K loop
    // `acc = matmulAcc(acc, a, b)`): the accumulator is read through the output pointer. Every
    // output element is written only after its own accumulator value was read (block by block).
    const accType = accArg && accArg.kind === "var" && accArg.type.kind === "tile" ? accArg.type : null;
    const inPlace = accType !== null && accType.addr !== null && accType.addr === dest.type.addr;
    const o = destPtr(ctx, dest);
    const ec = accArg ? (inPlace ? (idx: string) => `${o}[${idx}]` : ctx.elements(accArg)) : null;
    // the operands' element expressions as plain arrays (name[index]): vector loads of b rows
    const arr = (f: ((i: string) => string) | null): string | null => {
      if (!f) return null;
      const mm = /^([A-Za-z_]\w*)\[@IDX@\]$/.exec(f("@IDX@"));
      return mm ? mm[1] : null;
    };
    const A = da ? da.ptr : arr(ea), Bp = db ? db.ptr : arr(eb), C = arr(ec);
    const lda = da ? da.ld : k, ldb = db ? db.ld : n;
    const aT = da?.trans === true, bT = db?.trans === true;
    /** Element (r, c) of a / b (C++ index expressions); a transposed operand is stored [cols, rows]. */
    const aE = (r: string, c: string) => (da ? (aT ? `${da.ptr}[(${c}) * ${lda} + ${r}]` : `${da.ptr}[(${r}) * ${lda} + ${c}]`) : ea!(`(${r}) * ${k} + ${c}`));
    const bE = (r: string, c: string) => (db ? (bT ? `${db.ptr}[(${c}) * ${ldb} + ${r}]` : `${db.ptr}[(${r}) * ${ldb} + ${c}]`) : eb!(`(${r}) * ${n} + ${c}`));
    // Register blocking: an [MR, 16 nv] block of the output is held in registers (tspto_v16f
    // values, 16 floats each) across the k loop; each k step loads nv vectors of a row of b and
    // multiplies them with MR broadcast elements of a. Every output element accumulates in
    // fp32 in k order (acc + a*b, or fma(a, b, acc) with fpContract "fast"), exactly as
    // src/ir/ops/matmul.ts says. Column panels are 64 wide (6 x 64: 24 accumulators, 4 b
    // vectors, 1 broadcast: 30 of the 32 AVX-512 registers), then one of 32 and one of 16,
    // then scalar code; remainder rows use a shorter block. Operands that are not plain arrays
    // (fused element expressions) use the scalar block code throughout.
    const MR = 6;
    const mFull = m - (m % MR);
    const block = (rows: number, cols: number, i0: string, j0: string): void => {
      const acc = ctx.fresh("acc"), kk = ctx.fresh("k"), r = ctx.fresh("r"), c = ctx.fresh("c"), aik = ctx.fresh("aik");
      ctx.open("{");
      ctx.line(`float ${acc}[${rows}][${cols}];`);
      ctx.line(`for (int ${r} = 0; ${r} < ${rows}; ++${r}) for (int ${c} = 0; ${c} < ${cols}; ++${c}) ${acc}[${r}][${c}] = ${ec ? ec(`(${i0} + ${r}) * ${n} + ${j0} + ${c}`) : "0.0f"};`);
      ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${K}; ++${kk}) {`);
      ctx.open(`for (int ${r} = 0; ${r} < ${rows}; ++${r}) {`);
      ctx.line(`const float ${aik} = ${aE(`${i0} + ${r}`, kk)};`);
      const bkj = bE(kk, `${j0} + ${c}`);
      ctx.line(`for (int ${c} = 0; ${c} < ${cols}; ++${c}) ${acc}[${r}][${c}] = ${fused ? `__builtin_fmaf(${aik}, ${bkj}, ${acc}[${r}][${c}])` : `${acc}[${r}][${c}] + ${aik} * ${bkj}`};`);
      ctx.close();
      ctx.close();
      ctx.line(`for (int ${r} = 0; ${r} < ${rows}${and(rowsBelow(`${i0} + ${r}`))}; ++${r}) for (int ${c} = 0; ${c} < ${cols}${and(colsBelow(`${j0} + ${c}`))}; ++${c}) ${o}[(${i0} + ${r}) * ${n} + ${j0} + ${c}] = ${acc}[${r}][${c}];`);
      ctx.close();
    };
    const vec = A !== null && Bp !== null && (ec === null || C !== null);
    // bfloat16 with fpContract "fast": the dot-product / matrix units where the build's ISA path
    // has them (AVX512-BF16 vdpbf16ps, AMX tdpbf16ps: prelude_dot.ts), the fp32 code below
    // otherwise. Their sums run in k order like it, but with denormals flushed to zero
    // (docs/semantics.md, Matmul numerics); "off" always takes the fp32 code.
    const dot = vec && fused && at.dtype === "bfloat16" && bt.dtype === "bfloat16" && !da && !db;
    if (dot) {
      ctx.line("#if defined(__AVX512BF16__)");
      ctx.line(`tspto_mm_bf16(${A}, ${k}, ${Bp}, ${n}, ${C ?? "nullptr"}, ${n}, ${o}, ${n}, ${cdim(mValid)}, ${cdim(nValid)}, ${K});`);
      ctx.line("#else");
    }
    const endDot = () => { if (dot) ctx.line("#endif"); };
    if (!vec) {
      const NR = 32, nFull = n - (n % NR);
      const i0 = ctx.fresh("i"), j0 = ctx.fresh("j");
      if (mFull > 0 && nFull > 0) {
        ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}${and(rowsBelow(i0))}; ${i0} += ${MR}) {`);
        ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${nFull}${and(colsBelow(j0))}; ${j0} += ${NR}) {`);
        block(MR, NR, i0, j0);
        ctx.close();
        ctx.close();
      }
      if (n > nFull) {
        for (const [rows, r0] of [[mFull, "0"], [m - mFull, String(mFull)]] as const) {
          if (rows > 0) guarded(ctx, [rowsBelow(r0), colsBelow(String(nFull))].filter(Boolean).join(" && ") || null, () => block(rows, n - nFull, r0, String(nFull)));
        }
      }
      if (m > mFull && nFull > 0) {
        guarded(ctx, rowsBelow(String(mFull)), () => {
          ctx.open(`for (int64_t ${j0}r = 0; ${j0}r < ${nFull}${and(colsBelow(`${j0}r`))}; ${j0}r += ${NR}) {`);
          block(m - mFull, NR, String(mFull), `${j0}r`);
          ctx.close();
        });
      }
      return;
    }
    // A few rows (a decode GEMV, TensorToTile gives it wide tiles): b is read once, row by row,
    // contiguously (k outer, 4 rows of k at a time), and the output rows stay in the output tile
    // (L1) between k rows. Each element still accumulates in k order, one step per k, so the
    // values are those of the register-blocked code bit for bit.
    if (at.dtype === "float32" && bt.dtype === "float32" && !aT && !bT && m <= FEW_ROWS && n >= 128 && mValid === m && !dot) {
      streamRows();
      endDot();
      return;
    }
    // b stored [n, k] (bTrans) under a few rows: 16 rows of b at a time, each read contiguously
    // (tspto_gemv_bt, prelude.ts); the values are the packed path's bit for bit
    if (at.dtype === "float32" && bt.dtype === "float32" && !aT && bT && m <= FEW_ROWS && mValid === m && !dot) {
      ctx.line(`tspto_gemv_bt<${m}, ${fused}>(${A}, ${lda}, ${Bp}, ${ldb}, ${C ?? "nullptr"}, ${n}, ${o}, ${n}, ${cdim(nValid)}, ${K});  // few rows: b streamed row by row`);
      endDot();
      return;
    }
    function streamRows(): void {
      const NV = cdim(nValid), kk = ctx.fresh("k"), j = ctx.fresh("j"), v = ctx.fresh("v"), jv = ctx.fresh("jv");
      const rows = Array.from({ length: m }, (_, r) => r);
      const a = (r: number, q: number) => `${A}[${r} * ${lda} + ${kk} + ${q}]`;
      const step = (acc: string, av: string, bv: string) => (fused ? `${acc} = tspto_fma16(${av}, ${bv}, ${acc});` : `${acc} = ${acc} + ${av} * ${bv};`);
      ctx.open("{  // few rows: b streamed row by row");
      ctx.line(`const int64_t ${jv} = (${NV}) - (${NV}) % 16;`);
      // the output rows start from the accumulator input (or zero)
      if (C !== o) {
        for (const r of rows) ctx.line(`for (int64_t ${j} = 0; ${j} < ${NV}; ++${j}) ${o}[${r} * ${n} + ${j}] = ${C ? `${C}[${r} * ${n} + ${j}]` : "0.0f"};`);
      }
      ctx.line(`int64_t ${kk} = 0;`);
      for (const [unroll, cond] of [[4, `${kk} + 4 <= ${K}`], [1, `${kk} < ${K}`]] as const) {
        ctx.open(`for (; ${cond}; ${kk} += ${unroll}) {`);
        const qs = Array.from({ length: unroll }, (_, q) => q);
        for (const r of rows) ctx.line(qs.map((q) => fused ? `const tspto_v16f ${v}a${r}_${q} = tspto_splat16(${a(r, q)});` : `const float ${v}a${r}_${q} = ${a(r, q)};`).join(" "));
        ctx.open(`for (int64_t ${j} = 0; ${j} < ${jv}; ${j} += 16) {`);
        ctx.line(qs.map((q) => `const tspto_v16f ${v}b${q} = tspto_ld16(&${Bp}[(${kk} + ${q}) * ${ldb} + ${j}]);`).join(" "));
        for (const r of rows) {
          ctx.line(`{ tspto_v16f ${v} = tspto_ld16(&${o}[${r} * ${n} + ${j}]); ${qs.map((q) => step(v, `${v}a${r}_${q}`, `${v}b${q}`)).join(" ")} tspto_st16(&${o}[${r} * ${n} + ${j}], ${v}); }`);
        }
        ctx.close();
        ctx.close();
      }
      // the last columns (fewer than 16), each in k order
      const jt = ctx.fresh("j"), kt = ctx.fresh("k");
      ctx.open(`for (int64_t ${jt} = ${jv}; ${jt} < ${NV}; ++${jt}) {`);
      for (const r of rows) {
        const x = `${o}[${r} * ${n} + ${jt}]`, ab = [`${A}[${r} * ${lda} + ${kt}]`, `${Bp}[${kt} * ${ldb} + ${jt}]`];
        ctx.line(`{ float ${v} = ${x}; for (int64_t ${kt} = 0; ${kt} < ${K}; ++${kt}) ${v} = ${fused ? `__builtin_fmaf(${ab[0]}, ${ab[1]}, ${v})` : `${v} + ${ab[0]} * ${ab[1]}`}; ${x} = ${v}; }`);
      }
      ctx.close();
      ctx.close();
    }
    /**
     * rows x (16 nv) block at (i0, j0) over k in [kc, kc + kl): b from `bsrc` with row stride
     * `bld` starting at column `bcol` (row kk - kc of a packed panel, or row kk of b); the
     * accumulators start from C (or zero) in the first k chunk and from the output after it.
     */
    const vblock = (rows: number, nv: number, i0: string, j0: string, bsrc: string, bld: CDim, bcol: string, kc: string, kl: string, packed: boolean): void => {
      const acc = ctx.fresh("acc"), kk = ctx.fresh("k"), bv = ctx.fresh("b"), av = ctx.fresh("a");
      const name = (r: number, v: number) => `${acc}_${r}_${v}`;
      const at = (r: number, v: number) => `(${i0} + ${r}) * ${n} + ${j0} + ${16 * v}`;
      ctx.open("{");
      const cells = Array.from({ length: rows * nv }, (_, q) => [Math.floor(q / nv), q % nv] as const);
      const first = (r: number, v: number) => (C ? `tspto_ld16(&${C}[${at(r, v)}])` : "tspto_v16f{}");
      const again = (r: number, v: number) => `tspto_ld16(&${o}[${at(r, v)}])`;
      if (kc === "0" || C === o) {
        for (const [r, v] of cells) ctx.line(`tspto_v16f ${name(r, v)} = ${kc === "0" ? first(r, v) : again(r, v)};`);
      } else {
        // a statement-level branch on the k chunk (no conditional expression reads memory)
        ctx.line(`tspto_v16f ${cells.map(([r, v]) => name(r, v)).join(", ")};`);
        ctx.line(`if (${kc} == 0) { ${cells.map(([r, v]) => `${name(r, v)} = ${first(r, v)};`).join(" ")} }`);
        ctx.line(`else { ${cells.map(([r, v]) => `${name(r, v)} = ${again(r, v)};`).join(" ")} }`);
      }
      ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${kl}; ++${kk}) {`);
      const brow = packed ? kk : kc === "0" ? kk : `(${kc} + ${kk})`;
      for (let v = 0; v < nv; v++) ctx.line(`const tspto_v16f ${bv}${v} = tspto_ld16(&${bsrc}[${brow} * ${bld} + ${bcol} + ${16 * v}]);`);
      const acol = kc === "0" ? kk : `${kc} + ${kk}`;
      for (let r = 0; r < rows; r++) {
        const aik = aT ? `${A}[(${acol}) * ${lda} + ${i0} + ${r}]` : `${A}[(${i0} + ${r}) * ${lda} + ${acol}]`;
        if (fused) {
          ctx.line(`{ const tspto_v16f ${av} = tspto_splat16(${aik}); ${Array.from({ length: nv }, (_, v) => `${name(r, v)} = tspto_fma16(${av}, ${bv}${v}, ${name(r, v)});`).join(" ")} }`);
        } else {
          ctx.line(`{ const float ${av} = ${aik}; ${Array.from({ length: nv }, (_, v) => `${name(r, v)} = ${name(r, v)} + ${av} * ${bv}${v};`).join(" ")} }`);
        }
      }
      ctx.close();
      for (let r = 0; r < rows; r++) {
        guarded(ctx, rowsBelow(`${i0} + ${r}`), () => {
          for (let v = 0; v < nv; v++) {
            const col = `${j0} + ${16 * v}`;
            if (!colsBelow(col)) { ctx.line(`tspto_st16(&${o}[${at(r, v)}], ${name(r, v)});`); continue; }
            // the last valid columns: only those of the 16 are stored
            const t = ctx.fresh("t");
            ctx.line(`if (${col} + 16 <= ${cdim(nValid)}) tspto_st16(&${o}[${at(r, v)}], ${name(r, v)}); else if (${col} < ${cdim(nValid)}) { float ${t}[16]; tspto_st16(${t}, ${name(r, v)}); std::memcpy(&${o}[${at(r, v)}], ${t}, (size_t)(${cdim(nValid)} - (${col})) * 4); }`);
          }
        });
      }
      ctx.close();
    };
    /** Every row block (MR rows, then the remainder) of one column panel / k chunk. */
    const rowsDo = (f: (rows: number, i0: string) => void) => {
      if (mFull > 0) {
        const i0 = ctx.fresh("i");
        ctx.open(`for (int64_t ${i0} = 0; ${i0} < ${mFull}${and(rowsBelow(i0))}; ${i0} += ${MR}) {`);
        f(MR, i0);
        ctx.close();
      }
      if (m % MR) guarded(ctx, rowsBelow(String(mFull)), () => f(m % MR, String(mFull)));
    };
    // Column panels of width W = 16 nv. A panel of b is packed into a contiguous buffer (its
    // rows W floats apart) in chunks of KC rows of k that fit in L1 (32 KiB), once per chunk
    // for all row blocks, which then stream a past it; the output block is kept in registers
    // over one chunk and stored between chunks. A transposed b (bTrans: stored [n, k]) is
    // always packed, 16 x 16 blocks transposed in registers (tspto_pack_bt), so the blocks read
    // it as they read b. Packing and chunking only reorder loads: each element's arithmetic
    // (fp32, k order) is unchanged, bit for bit the same as without bTrans.
    const PB = ctx.fresh("pb");
    const pack = m > MR || bT;
    const n64 = n - (n % 64);
    const chunkOf = (W: number) => Math.floor(8192 / W);  // KC: rows of k per packed chunk (32 KiB)
    const rest = n - n64;
    const pbFloats = Math.max(n64 > 0 ? Math.min(k, chunkOf(64)) * 64 : 0, rest >= 32 ? Math.min(k, chunkOf(32)) * 32 : 0,
      bT && rest % 32 >= 16 ? Math.min(k, chunkOf(16)) * 16 : 0);
    if (pack && pbFloats > 0) ctx.line(`alignas(64) float ${PB}[${pbFloats}];`);
    const panel = (nv: number, j0: string): void => {
      const W = 16 * nv, KC = chunkOf(W);
      if (!pack) { rowsDo((rows, i0) => vblock(rows, nv, i0, j0, Bp!, ldb, j0, "0", K, false)); return; }
      const chunked = k > KC;
      const kc = chunked ? ctx.fresh("kc") : "0", kl = chunked ? ctx.fresh("kl") : K;
      if (chunked) {
        ctx.open(`for (int64_t ${kc} = 0; ${kc} < ${K}; ${kc} += ${KC}) {`);
        ctx.line(`const int64_t ${kl} = ${K} - ${kc} < ${KC} ? ${K} - ${kc} : ${KC};`);
      }
      const kk = ctx.fresh("k");
      if (bT) ctx.line(`tspto_pack_bt(${PB}, ${W}, ${Bp}, ${ldb}, ${j0}, ${kc}, ${kl});`);
      else ctx.line(`for (int64_t ${kk} = 0; ${kk} < ${kl}; ++${kk}) std::memcpy(&${PB}[${kk} * ${W}], &${Bp}[(${chunked ? `${kc} + ` : ""}${kk}) * ${ldb} + ${j0}], ${W * 4});`);
      rowsDo((rows, i0) => vblock(rows, nv, i0, j0, PB, W, "0", kc, kl, true));
      if (chunked) ctx.close();
    };
    let j1 = 0;
    if (n64 > 0) {
      const j0 = ctx.fresh("j");
      ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${n64}${and(colsBelow(j0))}; ${j0} += 64) {`);
      panel(4, j0);
      ctx.close();
      j1 = n64;
    }
    if (n - j1 >= 32) { const jj = j1; guarded(ctx, colsBelow(String(jj)), () => panel(2, String(jj))); j1 += 32; }
    if (n - j1 >= 16) {
      const jj = j1;
      guarded(ctx, colsBelow(String(jj)), () => {
        if (bT) panel(1, String(jj)); else rowsDo((rows, i0) => vblock(rows, 1, i0, String(jj), Bp!, ldb, String(jj), "0", K, false));
      });
      j1 += 16;
    }
    if (n > j1) { const jj = j1; guarded(ctx, colsBelow(String(jj)), () => rowsDo((rows, i0) => block(rows, n - jj, i0, String(jj)))); }
    endDot();
    return;
  }
  const ea = ctx.elements(call.args[base]), eb = ctx.elements(call.args[base + 1]);
  const ec = accArg ? ctx.elements(accArg) : null;
  const o = destPtr(ctx, dest);
  // int8 / uint8 operands (not both uint8) into int32: the AVX512-VNNI / AMX-INT8 kernels
  // (prelude_dot.ts), exact like the int64 code below, for K <= 65536 (no int32 partial sum
  // can wrap); the int64 code otherwise and on paths without VNNI.
  const A = arrayOf(ea), B = arrayOf(eb), C = arrayOf(ec);
  const i8 = (d: string) => d === "int8" || d === "uint8";
  const vnni = A !== null && B !== null && (ec === null || C !== null) && dest.type.dtype === "int32" && k <= 65536 &&
    i8(at.dtype) && i8(bt.dtype) && !(at.dtype === "uint8" && bt.dtype === "uint8");
  if (vnni) {
    ctx.line("#if defined(__AVX512VNNI__)");
    ctx.line(`tspto_mm_i8<${at.dtype === "uint8"}, ${bt.dtype === "uint8"}>(${A}, ${k}, ${B}, ${n}, ${C ?? "nullptr"}, ${n}, ${o}, ${n}, ${cdim(mValid)}, ${cdim(nValid)}, ${K});`);
    ctx.line("#else");
  }
  const i = ctx.fresh("i"), kk = ctx.fresh("k"), j = ctx.fresh("j");
  ctx.open(`for (int64_t ${i} = 0; ${i} < ${cdim(mValid)}; ++${i}) {`);
  {
    // integers: int64 accumulators, 256 columns at a time, saturated to int32 at the end
    const B = 256;
    const j0 = ctx.fresh("j"), jn = ctx.fresh("jn"), acc = ctx.fresh("acc"), aik = ctx.fresh("aik");
    ctx.open(`for (int64_t ${j0} = 0; ${j0} < ${cdim(nValid)}; ${j0} += ${B}) {`);
    ctx.line(`const int64_t ${jn} = ${cdim(nValid)} - ${j0} < ${B} ? ${cdim(nValid)} - ${j0} : ${B};`);
    ctx.line(`int64_t ${acc}[${B}];`);
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${acc}[${j}] = ${ec ? `(int64_t)${ec(`${i} * ${n} + ${j0} + ${j}`)}` : "0"};`);
    ctx.open(`for (int64_t ${kk} = 0; ${kk} < ${K}; ++${kk}) {`);
    ctx.line(`const int64_t ${aik} = (int64_t)${ea(`${i} * ${k} + ${kk}`)};`);
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${acc}[${j}] += ${aik} * (int64_t)${eb(`${kk} * ${n} + ${j0} + ${j}`)};`);
    ctx.close();
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${jn}; ++${j}) ${o}[${i} * ${n} + ${j0} + ${j}] = ${SAT[dest.type.dtype]}(${acc}[${j}]);`);
    ctx.close();
  }
  ctx.close();
  if (vnni) ctx.line("#endif");
}
/** An element expression that is a plain array read (name[index]): the array's name. */
function arrayOf(f: ((i: string) => string) | null): string | null {
  if (!f) return null;
  const mm = /^([A-Za-z_]\w*)\[@IDX@\]$/.exec(f("@IDX@"));
  return mm ? mm[1] : null;
}
def("tile.matmul", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, null); } });
def("tile.matmulAcc", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, call.args[0]); } });

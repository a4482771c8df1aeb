// Reductions, row / column broadcasts, products and arg-reductions, broadcastTo, transpose.
// Each loops over the valid region of its operand / result only (ctx.validOf: numbers, or the
// C++ locals of run-time extents): a reduction reduces the valid part of each valid line
// (nothing: the identity, src/ir/ops/reduce.ts), the others compute the result's valid region.
import { ARG_REDUCTIONS, EXPAND_OPS, PROD_REDUCTIONS, REDUCTIONS, dtypeHighest, dtypeLowest, isFloat, type DType } from "../../../ir/index.js";
import { SAT, intLit, roundD, roundF, scratchCType } from "./ctypes.js";
import { type KernelCtx, def } from "./table.js";
import { BINARY_CPP, binaryElem } from "./elementwise.js";
import { type CDim, cdim } from "./dims.js";
import { destPtr, linear, shapeLoops, tileOperand } from "./tiles.js";

/** The identity of a max / min of integer dtype d (its lowest / highest value), as C++. */
const intIdentity = (kind: "max" | "min", d: DType, T: string): string => `(${T})${intLit(kind === "max" ? dtypeLowest(d) : dtypeHighest(d))}`;

for (const [name, { axis, kind }] of Object.entries(REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const n = x.shape[1];
      const [vm, vn] = ctx.validOf(call.args[0]);
      const d = x.dtype;
      const S = scratchCType(d);
      const A = kind === "sum" ? (isFloat(d) ? "double" : "int64_t") : S;
      const op = (a: string, b: string): string => {
        if (kind === "sum") return !isFloat(d) && d === "int64" ? `tspto_add_sat(${a}, ${b})` : `(${a} + ${b})`;
        if (isFloat(d)) return `tspto_f${kind}<float>(${a}, ${b})`;
        return `(${S})tspto_i${kind}(${a}, ${b})`;
      };
      const fin = (acc: string): string => (kind !== "sum" ? acc : isFloat(d) ? roundF(d, `(float)(${acc})`) : `${SAT[d]}(${acc})`);
      const elem = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      if (axis === "row" && kind !== "sum" && isFloat(d)) {
        // float row max / min on ordered integer keys (bits ^ (sign ? 0x7fffffff : 0): -0 < +0),
        // with NaN tracked apart: integer max / min and or vectorize, the NaN-aware select does
        // not. Exact, as tspto_fmax / tspto_fmin: NaN if any element is NaN; max(-0, 0) = 0. The
        // lanes start at the key of -inf (max) / +inf (min): an empty row gives the identity.
        const r = ctx.fresh("r"), j = ctx.fresh("j"), kx = ctx.fresh("key"), nn = ctx.fresh("nan"), x = ctx.fresh("x"), b = ctx.fresh("b");
        const better = kind === "max" ? ">" : "<";
        const step = (q: string, idx: string): string =>
          `{ const float ${x} = ${elem(idx)}; const int32_t ${b} = (int32_t)tspto_f2u(${x}); const int32_t ${b}k = ${b} ^ ((${b} >> 31) & 0x7fffffff); ${kx}[${q}] = ${b}k ${better} ${kx}[${q}] ? ${b}k : ${kx}[${q}]; ${nn}[${q}] |= (int32_t)(${x} != ${x}); }`;
        ctx.open(`for (int64_t ${r} = 0; ${r} < ${cdim(vm)}; ++${r}) {`);
        ctx.line(`int32_t ${kx}[16], ${nn}[16];`);
        ctx.line(`for (int q = 0; q < 16; ++q) { ${kx}[q] = ${kind === "max" ? "(int32_t)0x807fffff" : "(int32_t)0x7f800000"}; ${nn}[q] = 0; }`);
        ctx.line(`int64_t ${j} = 0;`);
        ctx.open(`for (; ${j} + 16 <= ${cdim(vn)}; ${j} += 16) {`);
        ctx.line(`for (int q = 0; q < 16; ++q) ${step("q", `${r} * ${n} + ${j} + q`)}`);
        ctx.close();
        ctx.line(`for (; ${j} < ${cdim(vn)}; ++${j}) ${step(`${j} & 15`, `${r} * ${n} + ${j}`)}`);
        ctx.line(`int32_t ${b}best = ${kx}[0], ${b}nan = ${nn}[0];`);
        ctx.line(`for (int q = 1; q < 16; ++q) { ${b}best = ${kx}[q] ${better} ${b}best ? ${kx}[q] : ${b}best; ${b}nan |= ${nn}[q]; }`);
        ctx.line(`${o}[${r}] = ${b}nan ? std::numeric_limits<float>::quiet_NaN() : tspto_u2f((uint32_t)(${b}best ^ ((${b}best >> 31) & 0x7fffffff)));`);
        ctx.close();
      } else if (axis === "row" && kind === "sum") {
        rowLaneLoops(ctx, sumLanes(d), S, vm, n, vn, elem, o, null);
      } else if (axis === "row") {
        // integer row max / min: 8 lanes seeded with the identity (the dtype's lowest / highest)
        rowLaneLoops(ctx, { A, op, fin, seed: () => intIdentity(kind as "max" | "min", d, A) }, S, vm, n, vn, elem, o, null);
      } else {
        const B = 256;
        const c0 = ctx.fresh("c"), cn = ctx.fresh("cn"), a = ctx.fresh("a"), i = ctx.fresh("i"), c = ctx.fresh("c");
        // accumulators start at the identity: 0, -inf / +inf (floats), the dtype's lowest / highest
        const seed = kind === "sum" ? `(${A})0` : isFloat(d) ? `${kind === "max" ? "-" : ""}std::numeric_limits<float>::infinity()` : intIdentity(kind, d, A);
        ctx.open(`for (int64_t ${c0} = 0; ${c0} < ${cdim(vn)}; ${c0} += ${B}) {`);
        ctx.line(`const int64_t ${cn} = ${cdim(vn)} - ${c0} < ${B} ? ${cdim(vn)} - ${c0} : ${B};`);
        ctx.line(`${A} ${a}[${B}];`);
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${a}[${c}] = ${seed};`);
        ctx.open(`for (int64_t ${i} = 0; ${i} < ${cdim(vm)}; ++${i}) {`);
        ctx.line("#pragma GCC ivdep");
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${a}[${c}] = ${op(`${a}[${c}]`, `(${A})${elem(`${i} * ${n} + ${c0} + ${c}`)}`)};`);
        ctx.close();
        ctx.line(`for (int64_t ${c} = 0; ${c} < ${cn}; ++${c}) ${o}[${c0} + ${c}] = ${fin(`${a}[${c}]`)};`);
        ctx.close();
      }
    },
  });
}

/**
 * The loops of a row sum (REDUCE_LANES = 8 interleaved lanes, element j into lane j % 8, fp64 for
 * floats; see src/ir/ops/reduce.ts) over the elements elem(i) of an [m, n] tile into o[r]; with
 * `keep`, each element is also written to keep[i] in the same loop (tile.rowSumKeep): per strip
 * of KEEP_STRIP elements the values are computed once and stored, then added to the lanes in
 * order from the strip just written (still in L1).
 */
/** Elements of a rowSumKeep strip (a multiple of the 8 lanes: each strip starts at lane 0). */
const KEEP_STRIP = 128;
/** How a row reduction keeps its 8 lanes: their C type, combine, final value, and seed (from the row's first element). */
interface Lanes { A: string; op: (a: string, b: string) => string; fin: (acc: string) => string; seed: () => string }
const sumLanes = (d: DType): Lanes => {
  const A = isFloat(d) ? "double" : "int64_t";
  return {
    A,
    op: (a, b) => (!isFloat(d) && d === "int64" ? `tspto_add_sat(${a}, ${b})` : `(${a} + ${b})`),
    fin: (acc) => (isFloat(d) ? roundF(d, `(float)(${acc})`) : `${SAT[d]}(${acc})`),
    seed: () => `(${A})0`,
  };
};
/**
 * Per valid row (rows r < m of stride n): 8 lanes (element j goes to lane j & 7) over its valid
 * columns j < w, combined pairwise at the end. With `keep`, the elements are computed in strips
 * into keep (rowSumKeep) and the lanes read them there.
 */
function rowLaneLoops(ctx: KernelCtx, lanes: Lanes, S: string, m: CDim, n: number, w: CDim, elem: (i: string) => string, o: string, keep: string | null): void {
  const { A, op, fin } = lanes;
  const r = ctx.fresh("r"), j = ctx.fresh("j"), l = ctx.fresh("l");
  const wn = cdim(w);
  ctx.open(`for (int64_t ${r} = 0; ${r} < ${cdim(m)}; ++${r}) {`);
  ctx.line(`${A} ${l}[8];`);
  ctx.line(`for (int q = 0; q < 8; ++q) ${l}[q] = ${lanes.seed()};`);
  ctx.line(`int64_t ${j} = 0;`);
  if (keep) {
    // strips of KEEP_STRIP elements: compute the strip into keep (a plain loop the compiler
    // vectorizes), then add it to the lanes while it is in L1 / the store buffer
    const q = ctx.fresh("q"), jn = ctx.fresh("jn"), k = ctx.fresh("k");
    ctx.open(`for (; ${j} < ${wn}; ${j} += ${KEEP_STRIP}) {`);
    ctx.line(`const int64_t ${jn} = ${wn} - ${j} < ${KEEP_STRIP} ? ${wn} - ${j} : ${KEEP_STRIP};`);
    ctx.line(`${S}* __restrict ${keep}r = ${keep} + ${r} * ${n} + ${j};`);
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${q} = 0; ${q} < ${jn}; ++${q}) ${keep}r[${q}] = ${elem(`${r} * ${n} + ${j} + ${q}`)};`);
    ctx.line(`int64_t ${k} = 0;`);
    ctx.line(`for (; ${k} + 8 <= ${jn}; ${k} += 8) for (int q = 0; q < 8; ++q) ${l}[q] = ${op(`${l}[q]`, `(${A})${keep}r[${k} + q]`)};`);
    ctx.line(`for (; ${k} < ${jn}; ++${k}) ${l}[(${j} + ${k}) & 7] = ${op(`${l}[(${j} + ${k}) & 7]`, `(${A})${keep}r[${k}]`)};`);
    ctx.close();
  } else {
    ctx.open(`for (; ${j} + 8 <= ${wn}; ${j} += 8) {`);
    ctx.line(`for (int q = 0; q < 8; ++q) ${l}[q] = ${op(`${l}[q]`, `(${A})${elem(`${r} * ${n} + ${j} + q`)}`)};`);
    ctx.close();
    ctx.line(`for (; ${j} < ${wn}; ++${j}) ${l}[${j} & 7] = ${op(`${l}[${j} & 7]`, `(${A})${elem(`${r} * ${n} + ${j}`)}`)};`);
  }
  ctx.line(`${o}[${r}] = ${fin(op(op(op(`${l}[0]`, `${l}[1]`), op(`${l}[2]`, `${l}[3]`)), op(op(`${l}[4]`, `${l}[5]`), op(`${l}[6]`, `${l}[7]`))))};`);
  ctx.close();
}

// rowSumKeep(x) -> [x, rowSum(x)]: one loop computes each element of x (a fused elementwise
// expression), writes it to the first result and adds it to the row's lanes for the second.
def("tile.rowSumKeep", {
  kind: "tile-multi",
  emitIntoAll(ctx, call, dests) {
    const x = dests[0].type;
    const n = x.shape[1] as number;
    const [vm, vn] = ctx.validOf(call.args[0]);
    const elem = ctx.elements(call.args[0]);
    const e = destPtr(ctx, dests[0]), o = destPtr(ctx, dests[1]);
    rowLaneLoops(ctx, sumLanes(x.dtype), scratchCType(x.dtype), vm, n, vn, elem, o, e);
  },
});

// ------------------------------------------------------------------ row / column broadcasts
for (const axis of ["row", "col"] as const) {
  for (const [suffix, bin] of Object.entries(EXPAND_OPS)) {
    const fm = BINARY_CPP[bin];
    def(`tile.${axis}Expand${suffix}`, {
      kind: "tile-stmt",
      emitInto(ctx, call, dest) {
        const n = tileOperand(call.args[0]).shape[1];
        const d = dest.type.dtype;
        const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
        const o = destPtr(ctx, dest);
        shapeLoops(ctx, ctx.validOf(call), ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${binaryElem(fm, d,
          { kind: "tile", code: et(`${r} * ${n} + ${c}`), dtype: d }, { kind: "tile", code: ev(axis === "row" ? r : c), dtype: d })};`);
      },
    });
  }
  def(`tile.${axis}Expand`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const n = tileOperand(call.args[0]).shape[1];
      const ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      shapeLoops(ctx, ctx.validOf(call), ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${ev(axis === "row" ? r : c)};`);
    },
  });
}

// rowExpandExpdif / colExpandExpdif: exp(t - v), the difference rounded to the dtype first
for (const axis of ["row", "col"] as const) {
  def(`tile.${axis}ExpandExpdif`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const n = tileOperand(call.args[0]).shape[1];
      const d = dest.type.dtype;
      const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      shapeLoops(ctx, ctx.validOf(call), ([r, c]) => `${o}[${r} * ${n} + ${c}] = ${roundF(d, `tspto_expf(${roundF(d, `(${et(`${r} * ${n} + ${c}`)} - ${ev(axis === "row" ? r : c)})`)})`)};`);
    },
  });
}
// prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope[r]
def("tile.prelu", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const n = tileOperand(call.args[0]).shape[1];
    const d = dest.type.dtype;
    const ex = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const x = ctx.fresh("x");
    // both arms computed (the slope read for every element), then blended: no load in one arm only
    shapeLoops(ctx, ctx.validOf(call), ([r, c]) => `{ const float ${x} = ${ex(`${r} * ${n} + ${c}`)}; ${o}[${r} * ${n} + ${c}] = tspto_blend<float>(${x} > 0.0f, ${x}, ${roundF(d, `(${x} * ${es(r)})`)}); }`);
  },
});

// ------------------------------------------------------------------ products and arg-reductions (see src/ir/ops/reduce.ts)
/** Loops over the valid lines of a tile of row stride n (valid extents vm x vn) along `axis`: line index, element index of j, count (the line's valid elements). */
function lineLoops(ctx: KernelCtx, [vm, vn]: readonly CDim[], n: number, axis: "row" | "col", body: (line: string, at: (j: string) => string, count: string) => void): void {
  const l = ctx.fresh("l");
  ctx.open(`for (int64_t ${l} = 0; ${l} < ${cdim(axis === "row" ? vm : vn)}; ++${l}) {`);
  body(l, axis === "row" ? (j) => `${l} * ${n} + ${j}` : (j) => `${j} * ${n} + ${l}`, cdim(axis === "row" ? vn : vm));
  ctx.close();
}
for (const [name, axis] of Object.entries(PROD_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const n = x.shape[1];
      const d = x.dtype;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      lineLoops(ctx, ctx.validOf(call.args[0]), n, axis, (l, at, cnt) => {
        const acc = ctx.fresh("acc"), j = ctx.fresh("j");
        if (isFloat(d)) {
          ctx.line(`double ${acc} = 1.0;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} *= (double)${ex(at(j))};`);
          ctx.line(`${o}[${l}] = ${roundD(d, acc)};`);
        } else {
          ctx.line(`int64_t ${acc} = 1;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} = tspto_mul_sat(${acc}, (int64_t)${ex(at(j))});`);
          ctx.line(`${o}[${l}] = ${SAT[d]}(${acc});`);
        }
      });
    },
  });
}
for (const [name, { axis, kind }] of Object.entries(ARG_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOperand(call.args[0]);
      const n = x.shape[1];
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      const S = scratchCType(x.dtype), float = isFloat(x.dtype);
      lineLoops(ctx, ctx.validOf(call.args[0]), n, axis, (l, at, cnt) => {
        const best = ctx.fresh("best"), bi = ctx.fresh("bi"), j = ctx.fresh("j"), v = ctx.fresh("v");
        // an empty line: index 0 (its first element, in the pad, is read but not used)
        ctx.line(`${S} ${best} = ${ex(at("0"))}; int32_t ${bi} = 0;`);
        // the first extreme wins; a NaN beats every number and the first NaN wins
        const better = float
          ? `(${best} == ${best}) && ((${v} != ${v}) || ${v} ${kind === "max" ? ">" : "<"} ${best})`
          : `${v} ${kind === "max" ? ">" : "<"} ${best}`;
        ctx.line(`for (int64_t ${j} = 1; ${j} < ${cnt}; ++${j}) { const ${S} ${v} = ${ex(at(j))}; if (${better}) { ${best} = ${v}; ${bi} = (int32_t)${j}; } }`);
        ctx.line(`${o}[${l}] = ${bi};`);
      });
    },
  });
}

// broadcastTo: the dims of 1 of x stretched
def("tile.broadcastTo", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, ctx.validOf(call), (idx) => `${o}[${linear(idx, dest.type.shape)}] = ${ex(linear(idx.map((v, ax) => (x.shape[ax] === 1 ? "0" : v)), x.shape))};`);
  },
});

// ------------------------------------------------------------------ transpose
def("tile.transpose", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOperand(call.args[0]);
    const a1 = Number(call.attrs.axis1), a2 = Number(call.attrs.axis2);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    const valid = ctx.validOf(call.args[0]);
    // a whole 2-D tile read from an array (not a fused expression): the prelude's blocked
    // tspto_transpose, compiled once per element type (the nested loop below, specialized for
    // each shape, is what the vectorizer turns into slow scatters -- 5x slower for [128, 128]
    // -- and most of a bTrans matmul's compile time)
    const src = /^([A-Za-z_]\w*)\[@IDX@\]$/.exec(ex("@IDX@"));
    if (x.shape.length === 2 && a1 !== a2 && src && valid[0] === x.shape[0] && valid[1] === x.shape[1]) {
      ctx.line(`tspto_transpose(${o}, ${src[1]}, ${x.shape[0]}, ${x.shape[1]});`);
      return;
    }
    if (x.shape.length === 2 && a1 !== a2) {
      // [m, n] -> [n, m] in bands of 64 rows of x (in L1 while read): each output row is written
      // contiguously; writing column by column instead (rows of the output a whole row of x
      // apart, 4 KiB for n = 1024 floats) thrashed the cache sets: [1024, 64] took 1.4 ms
      const [m, n] = x.shape, B = 64;
      const r0 = ctx.fresh("r"), rn = ctx.fresh("rn"), c = ctx.fresh("c"), r = ctx.fresh("r");
      ctx.open(`for (int64_t ${r0} = 0; ${r0} < ${cdim(valid[0])}; ${r0} += ${B}) {`);
      ctx.line(`const int64_t ${rn} = ${cdim(valid[0])} - ${r0} < ${B} ? ${cdim(valid[0])} - ${r0} : ${B};`);
      ctx.open(`for (int64_t ${c} = 0; ${c} < ${cdim(valid[1])}; ++${c}) {`);
      ctx.line("#pragma GCC ivdep");
      ctx.line(`for (int64_t ${r} = 0; ${r} < ${rn}; ++${r}) ${o}[${c} * ${m} + ${r0} + ${r}] = ${ex(`(${r0} + ${r}) * ${n} + ${c}`)};`);
      ctx.close();
      ctx.close();
      return;
    }
    shapeLoops(ctx, valid, (idx) => {
      const sw = [...idx];
      [sw[a1], sw[a2]] = [sw[a2], sw[a1]];
      return `${o}[${linear(sw, dest.type.shape)}] = ${ex(linear(idx, x.shape))};`;
    });
  },
});

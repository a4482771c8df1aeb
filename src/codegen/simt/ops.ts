// The SIMT lowering of the ops that move or combine tile elements, keyed by registry op name:
// load, store, reductions, broadcasts, matmul, shape ops, reads. Each formula decides which
// thread computes which element and spells it through the language (ctx.lang, ./lang.ts).
// Elementwise and scalar ops are the language's own formulas (CUDA: the cpu generator's C++,
// WGSL: ../wgsl/formulas.ts); an op with neither fails at compile time with a
// TsptoCompileError naming it (simtEmitterFor).
import { ARG_REDUCTIONS, EXPAND_OPS, PROD_REDUCTIONS, REDUCTIONS, TsptoCompileError, isFloat, mkCall, mkConst, mkList, numel, padValue, shapeStr, toDType } from "../../ir/index.js";
import type { Call, DType, Expr, Span, TileType } from "../../ir/index.js";
import { scalarCType, spanWhere, type CExpr, type ElementwiseEmitter, type TensorRef } from "../cpp/emitters/index.js";
import type { ElemArray, ElemPlan, SimtCtx, SimtEmitter, SimtLang, TileDest } from "./lang.js";
import { vectorLoopFlat } from "./kernel.js";

// SIMT tensors have static shapes (the kernel generator rejects dynamic dimensions)
const staticDims = (t: TensorRef): readonly number[] => t.dims as readonly number[];

/** The shared tile-op formulas. */
export const SIMT_OPS = new Map<string, SimtEmitter>();
const def = (name: string, e: SimtEmitter) => { SIMT_OPS.set(name, e); };

/** The formula of an op in a language: the shared tile ops, then the language's own; else a compile error naming the op. */
export function simtEmitterFor(lang: Pick<SimtLang, "platform">, own: (op: string) => SimtEmitter | undefined, op: string, span: Span, hint: string): SimtEmitter {
  const e = SIMT_OPS.get(op) ?? own(op);
  if (e) return e;
  throw new TsptoCompileError("E_CODEGEN", `the ${lang.platform} code generator has no formula for op '${op}'`, span,
    op.startsWith("tensor.") ? "tensor-level ops must be lowered to tiles by the pass pipeline (tensor-to-tile) before code generation" : hint);
}

// ------------------------------------------------------------------ helpers
export function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}
const tileOf = (e: Expr): TileType => {
  const t = e.kind === "const" ? null : e.type;
  if (!t || t.kind !== "tile") throw new TsptoCompileError("E_CODEGEN", "internal: expected a tile operand", e.span);
  return t;
};
const label = (e: Expr): string => (e.kind === "var" ? e.name : "<expr>");

/** The destination tile's element array (`o`). */
function destPtr(ctx: SimtCtx, dest: TileDest): ElemArray {
  const o = ctx.fresh("o");
  return ctx.lang.tilePtr(ctx, o, dest.ptr, dest.type.dtype, true);
}

/** A block-parallel loop over every index of `shape`; body(flat index, per-axis indices) returns its statements. */
function parallelShape(ctx: SimtCtx, shape: readonly number[], body: (flat: string, idx: string[]) => string): void {
  const L = ctx.lang;
  const f = ctx.fresh("f");
  const st = strides(shape);
  ctx.open(`${L.threadLoop(f, String(numel(shape)))} {`);
  const idx = shape.map((_, ax) => {
    const v = ctx.fresh("i");
    const q = st[ax] === 1 ? f : `${f} / ${st[ax]}`;
    ctx.line(L.syntax.constDecl(L.idx, v, ax === 0 ? q : `(${q}) % ${shape[ax]}`));
    return v;
  });
  ctx.line(body(f, idx));
  ctx.close();
}

function linear(L: SimtLang, idx: readonly string[], shape: readonly number[], off?: readonly string[]): string {
  const st = strides(shape);
  const zero = L.int(0);
  return idx.map((v, ax) => {
    const e = off && off[ax] !== zero ? `(${v} + ${off[ax]})` : v;
    return st[ax] === 1 ? e : `${e} * ${st[ax]}`;
  }).join(" + ") || "0";
}

/** A plan over one element array read at the linear index, converted by conv. */
function pointerPlan(arr: ElemArray, conv: (x: string) => string): ElemPlan {
  return { leaves: [{ ptr: arr.name, ctype: arr.ctype, arr }], at: (i) => conv(arr.at(i)), withLeaves: (leaf) => conv(leaf(0)) };
}

/**
 * Offsets of a window as index names; constants are checked at compile time, the others at
 * run time (the failure record, then the kernel returns: the condition is uniform).
 */
function windowOffsets(ctx: SimtCtx, what: string, kind: "tensor" | "tile", name: string, list: Expr, region: readonly number[],
  dims: readonly number[], span: Span): string[] {
  const L = ctx.lang;
  if (list.kind !== "list" || list.items.length !== dims.length) {
    throw new TsptoCompileError("E_CODEGEN", `internal: ${what} offsets must be a list of ${dims.length} values`, span);
  }
  for (let ax = 0; ax < region.length; ax++) {
    const it = list.items[ax];
    const o = it.kind === "const" ? Number(it.value) : null;
    if (region[ax] > dims[ax] || (o !== null && (o < 0 || o + region[ax] > dims[ax]))) {
      const shown = list.items.map((x) => (x.kind === "const" ? String(x.value) : "?")).join(", ");
      throw new TsptoCompileError(kind === "tensor" ? "E_WINDOW" : "E_BOUNDS",
        `${what} window [${shown}] + ${shapeStr(region)} is outside ${kind} '${name}' of shape ${shapeStr(dims)} (axis ${ax})`,
        span, "keep offset + shape within the tensor on every axis");
    }
  }
  const names = list.items.map((it) => {
    if (it.kind === "const") return L.int(Number(it.value));
    const c = ctx.scalar(it);
    const n = ctx.fresh("o");
    ctx.line(L.syntax.constDecl(L.idx, n, L.syntax.convert(c, "int64_t")));
    return n;
  });
  const conds = list.items.flatMap((it, ax) => (it.kind === "const" ? [] : [`${names[ax]} < 0 || ${names[ax]} > ${dims[ax] - region[ax]}`]));
  if (conds.length) {
    const site = ctx.site({ where: spanWhere(span), what, kind, name, shape: [...region], dims: [...dims] });
    ctx.open(`if (${conds.join(" || ")}) {`);
    L.failRecord(ctx, site, names);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}

const validRegion = (L: SimtLang, t: TileType, span: Span): number[] => {
  if (!t.validShape) return [...t.shape];
  return t.validShape.map((d) => {
    if (typeof d !== "number") {
      throw new TsptoCompileError("E_DYNAMIC", `a runtime validShape (${shapeStr(t.validShape!)}) is not supported on the ${L.platform} platform yet`, span,
        `give the validShape constant extents on ${L.platform} (a kernel specialized per value: plain number parameters), or run on the cpu / interp platform`);
    }
    return d;
  });
};

/** Is a [region] window of a tensor of `dims` one contiguous run of elements? */
function contiguous(region: readonly number[], dims: readonly number[]): boolean {
  let m = 0;
  while (m < region.length && region[m] === 1) m++;
  for (let k = m + 1; k < region.length; k++) if (region[k] !== dims[k]) return false;
  return true;
}

// a tensor-level slice of run-time extent (TensorToTile's checkWindow): its loops have run-time
// trip counts, which the SIMT kernel generator does not lower yet
def("tile.checkWindow", {
  kind: "tensor-stmt",
  resultArg: 0,
  emit(ctx, call) {
    const p = ctx.lang.platform;
    throw new TsptoCompileError("E_DYNAMIC", `a tensor-level pl.slice of run-time extent is not supported on the ${p} platform yet`, call.span,
      `give the slice constant extents on ${p} (run-time offsets are fine), or run on the cpu / interp platform`);
  },
});

// ------------------------------------------------------------------ load / store
def("tile.load", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const dims = staticDims(t);
    const region = validRegion(L, type, call.span);
    const offs = windowOffsets(ctx, "load", "tensor", t.label, call.args[1], region, dims, call.span);
    const S = L.scratchType(type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    const da = L.tilePtr(ctx, d, dest.ptr, type.dtype, true);
    const full = numel(region) === numel(type.shape);
    if (full && contiguous(region, dims)) {
      // one contiguous run: a flat (vectorizable) copy
      const sa = L.tensorPtr(ctx, s, t, linear(L, offs.map(() => "0"), dims, offs), false);
      vectorLoopFlat(ctx, pointerPlan(sa, (x) => L.loadConv(type.dtype, x)), numel(region), da);
      return;
    }
    const sa = L.tensorPtr(ctx, s, t, null, false);
    // every element of the tile: inside the valid region from the tensor, else pad (zero)
    parallelShape(ctx, type.shape, (f, idx) => {
      const inside = idx.flatMap((v, ax) => (region[ax] < type.shape[ax] ? [`${v} < ${region[ax]}`] : []));
      const val = L.loadConv(type.dtype, sa.at(linear(L, idx, dims, offs)));
      return da.set(f, inside.length ? L.cond(`(${inside.join(" && ")})`, L.cast(S, val), L.cast(S, "0")) : val);
    });
  },
});

def("tile.store", {
  kind: "tensor-stmt",
  resultArg: 2,
  emit(ctx, call) {
    const L = ctx.lang;
    const tileType = tileOf(call.args[0]);
    const t = ctx.tensor(call.args[2]);
    const dims = staticDims(t);
    const region = validRegion(L, tileType, call.span);
    const offs = windowOffsets(ctx, "store", "tensor", t.label, call.args[1], region, dims, call.span);
    const plan = ctx.elements(call.args[0]);
    const o = ctx.fresh("t");
    if (numel(region) === numel(tileType.shape) && contiguous(region, dims)) {
      const oa = L.tensorPtr(ctx, o, t, linear(L, offs.map(() => "0"), dims, offs), true);
      vectorLoopFlat(ctx, plan, numel(region), oa, (x) => L.storeConv(t.type.dtype, x));
      return;
    }
    const oa = L.tensorPtr(ctx, o, t, null, true);
    parallelShape(ctx, region, (_f, idx) => oa.set(linear(L, idx, dims, offs), L.storeConv(t.type.dtype, plan.at(linear(L, idx, tileType.shape)))));
  },
});

// ------------------------------------------------------------------ reductions
const SAT: Record<string, string> = { int8: "tspto_sat_i8", int16: "tspto_sat_i16", int32: "tspto_sat_i32", int64: "tspto_sat_i64", uint8: "tspto_sat_u8", bool: "tspto_sat_b" };

for (const [name, { axis, kind }] of Object.entries(REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const L = ctx.lang;
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const [m, w] = validRegion(L, x, call.span);  // only the valid region is reduced (src/ir/ops/reduce.ts)
      const d = x.dtype;
      const S = L.scratchType(d);
      const float = isFloat(d);
      // accumulator: fp32 for floats, the language's widest integer otherwise
      const A = float ? L.f32 : L.accInt;
      const op = (p: string, q: string): string => {
        if (kind === "sum") return float ? `(${p} + ${q})` : L.sumAdd(d, p, q);
        return float ? L.fminmax(kind, p, q) : `tspto_i${kind}(${p}, ${q})`;
      };
      const init = kind === "sum" ? L.cast(A, "0") : float ? L.floatExtreme(kind) : L.intExtreme(kind);
      const fin = (acc: string): string => (kind !== "sum" ? L.cast(S, acc) : float ? L.roundF(d, acc) : `${SAT[d]}(${acc})`);
      const plan = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      if (axis === "row") {
        // one group of 32 threads (a warp) per row: lanes stride the row, then a butterfly
        // (warp shuffles, or through shared memory with barriers: every thread runs the same
        // number of row batches so that the barriers stay in uniform control flow)
        const lane = ctx.fresh("lane"), warp = ctx.fresh("warp"), r = ctx.fresh("r"), j = ctx.fresh("j"), acc = ctx.fresh("acc"), sh = ctx.fresh("sh");
        L.laneWarp(ctx, lane, warp);
        const step = (row: string) => `${acc} = ${op(acc, L.cast(A, plan.at(`${row} * ${n} + ${j}`)))};`;
        const groups = L.threads / 32;
        if (L.splitRows && L.warpShuffle && L.shuffleCombine && L.sharedArray && 2 * m <= groups && n >= 64) {
          // few wide rows: W groups per row (lanes stride the row by 32 * W), a shuffle per
          // group, the groups' partials through shared memory, combined in group order
          let w = 1;
          while (2 * w * m <= groups && 64 * w <= n) w *= 2;
          const part = ctx.fresh("part"), t = ctx.fresh("t"), q = ctx.fresh("q");
          L.sharedArray(ctx, part, A, groups);
          ctx.line(L.syntax.constDecl(L.idx, r, `${warp} / ${w}`));
          ctx.line(L.syntax.mutDecl(A, acc, init));
          ctx.line(L.if1(`${r} < ${m}`, L.loop1(L.seqLoop(j, `(${warp} % ${w}) * 32 + ${lane}`, String(n), String(32 * w)), step(r))));
          ctx.line(L.shuffleCombine(acc, op, sh));
          ctx.line(L.if1(`${lane} == 0`, `${part}[${warp}] = ${acc};`));
          ctx.sync();
          ctx.open(`${L.threadLoop(t, String(m))} {`);
          ctx.line(L.syntax.mutDecl(A, acc, `${part}[${t} * ${w}]`));
          ctx.line(L.loop1(L.seqLoop(q, "1", String(w)), `${acc} = ${op(acc, `${part}[${t} * ${w} + ${q}]`)};`));
          ctx.line(o.set(t, fin(acc)));
          ctx.close();
        } else if (L.warpShuffle && L.shuffleCombine) {
          ctx.open(`${L.groupStrideLoop(r, warp, String(m))} {`);
          ctx.line(L.syntax.mutDecl(A, acc, init));
          ctx.line(L.loop1(L.laneLoop(j, lane, String(w)), step(r)));
          ctx.line(L.shuffleCombine(acc, op, sh));
          ctx.line(L.if1(`${lane} == 0`, o.set(r, fin(acc))));
          ctx.close();
        } else {
          const rb = ctx.fresh("rb");
          ctx.open(`${L.seqLoop(rb, "0", String(m), String(L.threads / 32))} {`);
          ctx.line(L.syntax.constDecl(L.idx, r, `${rb} + ${warp}`));
          ctx.line(L.syntax.mutDecl(A, acc, init));
          ctx.line(L.if1(`${r} < ${m}`, L.loop1(L.laneLoop(j, lane, String(w)), step(r))));
          L.groupCombine!(ctx, acc, A, lane, warp, op);
          ctx.line(L.if1(`${r} < ${m} && ${lane} == 0`, o.set(r, fin(acc))));
          ctx.close();
        }
      } else {
        // one thread per column, rows in order
        const c = ctx.fresh("c"), i = ctx.fresh("i"), acc = ctx.fresh("acc");
        ctx.open(`${L.threadLoop(c, String(w))} {`);
        ctx.line(L.syntax.mutDecl(A, acc, init));
        ctx.line(L.loop1(L.seqLoop(i, "0", String(m)), `${acc} = ${op(acc, L.cast(A, plan.at(`${i} * ${n} + ${c}`)))};`));
        ctx.line(o.set(c, fin(acc)));
        ctx.close();
      }
    },
  });
}

// rowSumKeep(x) -> [x, rowSum(x)]: on the GPU the block computes x into its tile, then the
// groups reduce the rows of that tile (two block-parallel steps; the cpu fuses them into one loop).
def("tile.rowSumKeep", {
  kind: "tile-multi",
  steps(call, targets) {
    const sumType = (call.type as { elems: readonly TileType[] }).elems[1];
    return [{ target: 0, value: call.args[0] }, { target: 1, value: mkCall("tile.rowSum", [targets[0]], {}, sumType, call.span) }];
  },
});

// ------------------------------------------------------------------ row / column broadcasts
for (const axis of ["row", "col"] as const) {
  for (const [suffix, bin] of Object.entries(EXPAND_OPS)) {
    def(`tile.${axis}Expand${suffix}`, {
      kind: "tile-stmt",
      emitInto(ctx, call, dest) {
        const [m, n] = tileOf(call.args[0]).shape as number[];
        const d = dest.type.dtype;
        const fm = ctx.lang.emitterFor(`tile.${bin}`, call.span) as ElementwiseEmitter;
        const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
        const o = destPtr(ctx, dest);
        parallelShape(ctx, [m, n], (f, [r, c]) => o.set(f, fm.emit(call,
          [{ kind: "tile", code: et.at(f), dtype: d }, { kind: "tile", code: ev.at(axis === "row" ? r : c), dtype: d }])));
      },
    });
  }
  def(`tile.${axis}Expand`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const [m, n] = tileOf(call.args[0]).shape as number[];
      const ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      parallelShape(ctx, [m, n], (f, [r, c]) => o.set(f, ev.at(axis === "row" ? r : c)));
    },
  });
}

// rowExpandExpdif / colExpandExpdif: exp(t - v), the difference rounded to the dtype first
// (the cpu formula, src/codegen/cpp/emitters/)
for (const axis of ["row", "col"] as const) {
  def(`tile.${axis}ExpandExpdif`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const L = ctx.lang;
      const [m, n] = tileOf(call.args[0]).shape as number[];
      const d = dest.type.dtype;
      const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      parallelShape(ctx, [m, n], (f, [r, c]) => o.set(f, L.roundF(d, `tspto_expf(${L.roundF(d, `(${et.at(f)} - ${ev.at(axis === "row" ? r : c)})`)})`)));
    },
  });
}
// prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope[r]
def("tile.prelu", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const [m, n] = tileOf(call.args[0]).shape as number[];
    const d = dest.type.dtype;
    const ex = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const x = ctx.fresh("x");
    parallelShape(ctx, [m, n], (f, [r]) => `{ ${L.syntax.constDecl(L.f32, x, ex.at(f))} ${o.set(f, L.cond(`${x} > ${L.f32Lit(0)}`, x, L.roundF(d, `(${x} * ${es.at(r)})`)))} }`);
  },
});

// ------------------------------------------------------------------ products and arg-reductions (src/ir/ops/reduce.ts)
/** One thread per valid line of a tile of row stride n (valid [vm, vn]) along `axis`, elements in order: line, element index of j, count (valid). */
function lineThreads(ctx: SimtCtx, [vm, vn]: readonly number[], n: number, axis: "row" | "col", body: (line: string, at: (j: string) => string, count: number) => void): void {
  const l = ctx.fresh("l");
  ctx.open(`${ctx.lang.threadLoop(l, String(axis === "row" ? vm : vn))} {`);
  body(l, axis === "row" ? (j) => `${l} * ${n} + ${j}` : (j) => `${j} * ${n} + ${l}`, axis === "row" ? vn : vm);
  ctx.close();
}
for (const [name, axis] of Object.entries(PROD_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const L = ctx.lang;
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const d = x.dtype;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      // in order, as on cpu (float: products in the widest float rounded once; integers saturate)
      lineThreads(ctx, validRegion(L, x, call.span), n, axis, (l, at, cnt) => {
        const acc = ctx.fresh("acc"), j = ctx.fresh("j");
        if (isFloat(d)) {
          ctx.line(L.syntax.mutDecl(L.wideFloat, acc, "1.0"));
          ctx.line(L.loop1(L.seqLoop(j, "0", String(cnt)), `${acc} *= ${L.cast(L.wideFloat, ex.at(at(j)))};`));
          ctx.line(o.set(l, L.roundWide(d, acc)));
        } else {
          ctx.line(L.syntax.mutDecl(L.accInt, acc, "1"));
          ctx.line(L.loop1(L.seqLoop(j, "0", String(cnt)), `${acc} = tspto_mul_sat(${acc}, ${L.cast(L.accInt, ex.at(at(j)))});`));
          ctx.line(o.set(l, `${SAT[d]}(${acc})`));
        }
      });
    },
  });
}
for (const [name, { axis, kind }] of Object.entries(ARG_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const L = ctx.lang;
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      const S = L.scratchType(x.dtype), float = isFloat(x.dtype);
      lineThreads(ctx, validRegion(L, x, call.span), n, axis, (l, at, cnt) => {
        const best = ctx.fresh("best"), bi = ctx.fresh("bi"), j = ctx.fresh("j"), v = ctx.fresh("v");
        ctx.line(`${L.syntax.mutDecl(S, best, ex.at(at("0")))} ${L.syntax.mutDecl(L.i32, bi, "0")}`);
        // the first extreme wins; a NaN beats every number and the first NaN wins
        const better = float
          ? `${L.notNan(best)} && (${L.isNan(v)} || ${v} ${kind === "max" ? ">" : "<"} ${best})`
          : `${v} ${kind === "max" ? ">" : "<"} ${best}`;
        ctx.line(L.loopBraced(L.seqLoop(j, "1", String(cnt)), `${L.syntax.constDecl(S, v, ex.at(at(j)))} if (${better}) { ${best} = ${v}; ${bi} = ${L.cast(L.i32, j)}; }`));
        ctx.line(o.set(l, bi));
      });
    },
  });
}

// broadcastTo: the dims of 1 of x stretched
def("tile.broadcastTo", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOf(call.args[0]);
    const xs = x.shape as number[];
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, dest.type.shape as number[], (f, idx) => o.set(f, ex.at(linear(ctx.lang, idx.map((v, ax) => (xs[ax] === 1 ? "0" : v)), xs))));
  },
});

// transpose(x, axis1, axis2): each element to the index with the two axes swapped
def("tile.transpose", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOf(call.args[0]);
    const a1 = Number(call.attrs.axis1), a2 = Number(call.attrs.axis2);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, x.shape as number[], (f, idx) => {
      const sw = [...idx];
      [sw[a1], sw[a2]] = [sw[a2], sw[a1]];
      return o.set(linear(ctx.lang, sw, dest.type.shape as number[]), ex.at(f));
    });
  },
});

// ------------------------------------------------------------------ matmul
function emitMatmul(ctx: SimtCtx, call: Call, dest: TileDest, accArg: Expr | null): void {
  const L = ctx.lang;
  const base = accArg ? 1 : 0;
  const at = tileOf(call.args[base]), bt = tileOf(call.args[base + 1]);
  const [m, k0] = at.shape as number[], n = bt.shape[1] as number;
  // the sum runs over the valid K only: min(a's valid columns, b's valid rows) (src/ir/ops/matmul.ts)
  const k = Math.min(validRegion(L, at, call.span)[1], validRegion(L, bt, call.span)[0]);
  const ea = ctx.elements(call.args[base]), eb = ctx.elements(call.args[base + 1]);
  const ec = accArg ? ctx.elements(accArg) : null;
  const o = destPtr(ctx, dest);
  // tensor cores where the language has them (CUDA: WMMA for fp16 / bf16 operands, multiples of 16)
  if (L.tensorCoreMatmul?.(ctx, { at, m, k, k0, n, ea, eb, ec, o })) return;
  // one thread per output element, fp32 FMA (integers: the widest integer)
  const float = isFloat(at.dtype);
  parallelShape(ctx, [m, n], (f, [i, j]) => {
    const acc = ctx.fresh("acc"), q = ctx.fresh("k");
    const aq = ea.at(`${i} * ${k0} + ${q}`), bq = eb.at(`${q} * ${n} + ${j}`);
    if (float) {
      return `${L.syntax.mutDecl(L.f32, acc, ec ? ec.at(f) : L.f32Lit(0))} ${L.loop1(L.seqLoop(q, "0", String(k)), `${acc} = ${L.fma(aq, bq, acc)};`)} ${o.set(f, acc)}`;
    }
    return `${L.syntax.mutDecl(L.accInt, acc, ec ? L.cast(L.accInt, ec.at(f)) : "0")} ${L.loop1(L.seqLoop(q, "0", String(k)), `${acc} += ${L.cast(L.accInt, aq)} * ${L.cast(L.accInt, bq)};`)} ${o.set(f, `${SAT[dest.type.dtype]}(${acc})`)}`;
  });
}
def("tile.matmul", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, null); } });
def("tile.matmulAcc", { kind: "tile-stmt", emitInto(ctx, call, dest) { emitMatmul(ctx, call, dest, call.args[0]); } });

// ------------------------------------------------------------------ shape ops
def("tile.slice", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOf(call.args[0]);
    const shape = dest.type.shape as number[];
    const off = windowOffsets(ctx, "slice", "tile", label(call.args[0]), call.args[1], shape, x.shape as number[], call.span);
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, shape, (f, idx) => o.set(f, ex.at(linear(ctx.lang, idx, x.shape as number[], off))));
  },
});

def("tile.concat", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, na] = tileOf(call.args[0]).shape as number[], nb = tileOf(call.args[1]).shape[1] as number;
    const ea = ctx.elements(call.args[0]), eb = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, [m, na + nb], (f, [r, c]) => o.set(f, ctx.lang.cond(`${c} < ${na}`, ea.at(`${r} * ${na} + ${c}`), eb.at(`${r} * ${nb} + ${c} - ${na}`))));
  },
});

def("tile.assemble", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = tileOf(call.args[0]), s = tileOf(call.args[1]);
    const tshape = t.shape as number[], sshape = s.shape as number[];
    const off = windowOffsets(ctx, "assemble", "tile", label(call.args[0]), call.args[2], sshape, tshape, call.span);
    const et = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    // element of the target: from src inside the window, else the target's own
    parallelShape(ctx, tshape, (f, idx) => {
      const inside = idx.map((v, ax) => `${v} >= ${off[ax]} && ${v} < ${off[ax]} + ${sshape[ax]}`).join(" && ");
      const sidx = idx.map((v, ax) => `(${v} - ${off[ax]})`);
      return o.set(f, ctx.lang.cond(`(${inside})`, es.at(linear(ctx.lang, sidx, sshape)), et.at(f)));
    });
  },
});

// ------------------------------------------------------------------ indexing: iota, gather, gatherLoad
// iota: each element its index along the axis, converted as tile.cast converts an int32
def("tile.iota", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const t = call.type as TileType;
    const axis = Number(call.attrs.axis);
    const cast = L.emitterFor("tile.cast", call.span) as ElementwiseEmitter;
    const asCast = mkCall("tile.cast", [], { mode: "round" }, t, call.span);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, t.shape as number[], (f, idx) => o.set(f, cast.emit(asCast, [{ kind: "tile", code: L.cast(L.i32, idx[axis]), dtype: "int32" }])));
  },
});

/**
 * Element f of a gather: its index read and checked -- a thread that finds one outside
 * [0, extent) records the failure (the launch fails with E_KERNEL) and writes zero; the read
 * goes through an index clamped into the table, so nothing outside it is read -- then the value.
 * `offs(g)` are the failure record's offsets, `at(g)` the table element at index g.
 */
function gathered(ctx: SimtCtx, site: number, index: string, extent: number, offs: (g: string) => string[], at: (g: string) => string, d: DType, o: ElemArray, f: string): string {
  const L = ctx.lang;
  const g = ctx.fresh("g"), gc = ctx.fresh("gc");
  const ok = `(${g} >= ${L.int(0)} && ${g} < ${L.int(extent)})`;
  return `{ ${L.syntax.constDecl(L.idx, g, L.cast(L.idx, index))} ${L.syntax.constDecl(L.idx, gc, L.cond(ok, g, L.int(0)))} `
    + `${L.if1(`!${ok}`, L.failAny(ctx, site, offs(g)))} ${o.set(f, L.cond(ok, at(gc), L.cast(L.scratchType(d), "0")))} }`;
}

def("tile.gather", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const table = tileOf(call.args[0]);
    const axis = Number(call.attrs.axis ?? 0);
    const [r, c] = table.shape as number[];
    const et = ctx.elements(call.args[0]), ei = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const site = ctx.site({ where: spanWhere(call.span), what: "gather", kind: "tile", name: label(call.args[0]), shape: axis === 0 ? [1, c] : [r, 1], dims: [r, c] });
    const z = L.int(0);
    parallelShape(ctx, dest.type.shape as number[], (f, [i, j]) => axis === 0
      ? gathered(ctx, site, ei.at(i), r, (g) => [g, z], (g) => et.at(`${g} * ${c} + ${j}`), dest.type.dtype, o, f)
      : gathered(ctx, site, ei.at(j), c, (g) => [z, g], (g) => et.at(`${i} * ${c} + ${g}`), dest.type.dtype, o, f));
  },
});

// gatherLoad(table tensor, index tile, offset): rows (axis 0) or columns (axis 1) of the table
// at the indices, from `offset` along the other axis (checked once, as a load window is)
def("tile.gatherLoad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const dims = staticDims(t);
    const axis = Number(call.attrs.axis ?? 0), other = 1 - axis;
    const region = validRegion(L, type, call.span);
    const zero = mkConst(0, "int64", call.span);
    const offList = mkList(axis === 0 ? [zero, call.args[2]] : [call.args[2], zero], call.span);
    const offs = windowOffsets(ctx, "gatherLoad", "tensor", t.label, offList, axis === 0 ? [1, region[1]] : [region[0], 1], dims, call.span);
    const ei = ctx.elements(call.args[1]);
    const s = ctx.fresh("s");
    const sa = L.tensorPtr(ctx, s, t, null, false);
    const da = destPtr(ctx, dest);
    const S = L.scratchType(type.dtype);
    const site = ctx.site({ where: spanWhere(call.span), what: "gather", kind: "tensor", name: t.label, shape: axis === 0 ? [1, region[1]] : [region[0], 1], dims: [...dims] });
    const o0 = offs[other];
    parallelShape(ctx, type.shape as number[], (f, [i, j]) => {
      const inside = [i, j].flatMap((v, ax) => (region[ax] < type.shape[ax] ? [`${v} < ${L.int(region[ax])}`] : []));
      const body = axis === 0
        ? gathered(ctx, site, ei.at(i), dims[0], (g) => [g, o0], (g) => L.loadConv(type.dtype, sa.at(`${g} * ${dims[1]} + ${o0} + ${j}`)), type.dtype, da, f)
        : gathered(ctx, site, ei.at(j), dims[1], (g) => [o0, g], (g) => L.loadConv(type.dtype, sa.at(`(${o0} + ${i}) * ${dims[1]} + ${g}`)), type.dtype, da, f);
      // outside the valid region: zero (no index is read there)
      return inside.length ? `${L.if1(inside.join(" && "), body)} ${L.if1(`!(${inside.join(" && ")})`, da.set(f, L.cast(S, "0")))}` : body;
    });
  },
});

def("tile.fillpad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const L = ctx.lang;
    const x = tileOf(call.args[0]);
    const shape = x.shape as number[];
    const valid = validRegion(L, x, call.span);
    const d = x.dtype;
    const pad = L.scratchLit(d, toDType(padValue(d, String(call.attrs.padValue ?? "zero")), d));
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, shape, (f, idx) => {
      const inside = idx.flatMap((v, ax) => (valid[ax] < shape[ax] ? [`${v} < ${valid[ax]}`] : []));
      return o.set(f, inside.length ? L.cond(`(${inside.join(" && ")})`, ex.at(f), pad) : ex.at(f));
    });
  },
});

/** An element (scratch or loaded value of dtype d) as a scalar of d's kind. */
const scalarOfElem = (L: SimtLang, d: DType, code: string): CExpr => {
  const ct = scalarCType(d);
  return { code: ct === "bool" ? `(${code} != 0)` : L.cast(L.syntax.scalarType(ct), code), ctype: ct };
};
def("tile.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const L = ctx.lang;
    const x = tileOf(call.args[0]);
    const shape = x.shape as number[];
    const idx = windowOffsets(ctx, "read", "tile", label(call.args[0]), call.args[1], shape.map(() => 1), shape, call.span);
    const e = ctx.elements(call.args[0]);
    const v = scalarOfElem(L, x.dtype, e.at(linear(L, idx.map(() => "0"), shape, idx)));
    const name = ctx.fresh("rd");
    L.readScalar(ctx, name, v.ctype, v.code);
    return { code: name, ctype: v.ctype };
  },
});
def("tensor.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const L = ctx.lang;
    const t = ctx.tensor(call.args[0]);
    const shape = staticDims(t);
    const idx = windowOffsets(ctx, "read", "tensor", t.label, call.args[1], shape.map(() => 1), shape, call.span);
    const v = scalarOfElem(L, t.type.dtype, L.loadConv(t.type.dtype, L.tensorElem(t, linear(L, idx.map(() => "0"), shape, idx))));
    const name = ctx.fresh("rd");
    L.readScalar(ctx, name, v.ctype, v.code);
    return { code: name, ctype: v.ctype };
  },
});

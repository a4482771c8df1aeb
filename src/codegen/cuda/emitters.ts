// CUDA formulas, keyed by registry op name. Elementwise and scalar ops use the cpu code
// generator's formulas (src/codegen/cpp/emitters/) unchanged: they are expressions over
// helpers that the CUDA prelude defines as __device__ functions under the same names. The
// ops that move or combine tile elements (load, store, reductions, broadcasts, matmul,
// shape ops, reads) have block-parallel formulas here. An op with neither fails at compile
// time with a TsptoCompileError naming it (cudaEmitterFor).
import { EMITTERS, castElem, cstr, intLit, loadConv, scalarCType, scratchCType, scratchLit, spanWhere, storageCType, storeConv } from "../cpp/emitters/index.js";
import type { CExpr, ElementwiseEmitter, ScalarEmitter, TensorRef } from "../cpp/emitters/index.js";
import { ARG_REDUCTIONS, EXPAND_OPS, PROD_REDUCTIONS, REDUCTIONS, TsptoCompileError, isFloat, mkCall, mkConst, mkList, numel, padValue, shapeStr, toDType } from "../../ir/index.js";
import type { Call, DType, Expr, Span, TileType, Var } from "../../ir/index.js";
const mkConstZero = (span: Span): Expr => mkConst(0, "int64", span);
// cuda tensors have static shapes (generate.ts rejects dynamic dimensions)
const staticDims = (t: TensorRef): readonly number[] => t.dims as readonly number[];

/** Where an op writes a tile: a `uint8_t*` expression, and the tile's type. */
export interface TileDest { readonly ptr: string; readonly type: TileType }

/** A run-time window check's static facts (the host formats the message from them). */
export interface FailSite { where: string; what: string; kind: string; name: string; shape: number[]; dims: number[] }

/** The operands of a (fused) elementwise expression, declared in the current block. */
export interface ElemPlan {
  /** Element pointers the expression reads at the same linear index (planned tiles or tensor windows). */
  readonly leaves: readonly { ptr: string; ctype: string }[];
  /** The element at a linear index (scratch type of the expression's dtype). */
  at(idx: string): string;
  /** The element with each leaf k read as `leaf(k)`. */
  withLeaves(leaf: (k: number) => string): string;
}

export interface CudaCtx {
  line(s: string): void;
  open(s: string): void;
  close(s?: string): void;
  /** Shift the indentation by k levels. */
  ind(k: number): void;
  fresh(prefix: string): string;
  scalar(e: Expr): CExpr;
  tensor(e: Expr): TensorRef;
  elements(e: Expr): ElemPlan;
  /** Register a failure site; returns its id. */
  site(s: FailSite): number;
  readonly failExit: string;
}

export interface CudaTileStmt { readonly kind: "tile-stmt"; emitInto(ctx: CudaCtx, call: Call, dest: TileDest): void }
export interface CudaTensorStmt { readonly kind: "tensor-stmt"; readonly resultArg: number; emit(ctx: CudaCtx, call: Call): void }
export interface CudaScalarStmt { readonly kind: "scalar-stmt"; emit(ctx: CudaCtx, call: Call): CExpr }
/** An op with several tile results: the generator computes them as a sequence of single-tile values (each then __syncthreads). */
export interface CudaTileMulti { readonly kind: "tile-multi"; steps(call: Call, targets: readonly Var[]): { target: number; value: Expr }[] }
export type CudaEmitter = ElementwiseEmitter | ScalarEmitter | CudaTileStmt | CudaTensorStmt | CudaScalarStmt | CudaTileMulti;

export const CUDA_EMITTERS = new Map<string, CudaEmitter>();
const def = (name: string, e: CudaEmitter) => { CUDA_EMITTERS.set(name, e); };

/** The CUDA formula of an op, or a compile error naming the op. */
export function cudaEmitterFor(op: string, span: Span): CudaEmitter {
  const own = CUDA_EMITTERS.get(op);
  if (own) return own;
  const cpu = EMITTERS.get(op);
  if (cpu && (cpu.kind === "elementwise" || cpu.kind === "scalar")) return cpu;
  throw new TsptoCompileError("E_CODEGEN", `the cuda code generator has no formula for op '${op}'`, span,
    op.startsWith("tensor.")
      ? "tensor-level ops must be lowered to tiles by the pass pipeline (tensor-to-tile) before code generation"
      : `add a CUDA formula for '${op}' in src/codegen/cuda/emitters.ts (or use the cpu / interp platform)`);
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

/** `S* o = (S*)(dest)`; returns o. */
function destPtr(ctx: CudaCtx, dest: TileDest): string {
  const S = scratchCType(dest.type.dtype);
  const o = ctx.fresh("o");
  ctx.line(`${S}* __restrict__ ${o} = (${S}*)(${dest.ptr});`);
  return o;
}

/** A block-parallel loop over every index of `shape`; body(flat index, per-axis indices). */
function parallelShape(ctx: CudaCtx, shape: readonly number[], body: (flat: string, idx: string[]) => string): void {
  const f = ctx.fresh("f");
  const st = strides(shape);
  ctx.open(`for (int64_t ${f} = threadIdx.x; ${f} < ${numel(shape)}; ${f} += blockDim.x) {`);
  const idx = shape.map((_, ax) => {
    const v = ctx.fresh("i");
    const q = st[ax] === 1 ? f : `${f} / ${st[ax]}`;
    ctx.line(`const int64_t ${v} = ${ax === 0 ? q : `(${q}) % ${shape[ax]}`};`);
    return v;
  });
  ctx.line(body(f, idx));
  ctx.close();
}

function linear(idx: readonly string[], shape: readonly number[], off?: readonly string[]): string {
  const st = strides(shape);
  return idx.map((v, ax) => {
    const e = off && off[ax] !== "INT64_C(0)" ? `(${v} + ${off[ax]})` : v;
    return st[ax] === 1 ? e : `${e} * ${st[ax]}`;
  }).join(" + ") || "0";
}

/** A plan over one pointer read at the linear index, converted by conv. */
function pointerPlan(ptr: string, ctype: string, conv: (x: string) => string): ElemPlan {
  return { leaves: [{ ptr, ctype }], at: (i) => conv(`${ptr}[${i}]`), withLeaves: (leaf) => conv(leaf(0)) };
}

/**
 * Offsets of a window as int64 names; constants are checked at compile time, the others at
 * run time (the failure record, then the kernel returns: the condition is uniform).
 */
function windowOffsets(ctx: CudaCtx, what: string, kind: "tensor" | "tile", name: string, list: Expr, region: readonly number[],
  dims: readonly number[], span: Span): string[] {
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
    if (it.kind === "const") return intLit(Number(it.value));
    const c = ctx.scalar(it);
    const n = ctx.fresh("o");
    ctx.line(`const int64_t ${n} = ${c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(trunc(${c.code}))` : `(int64_t)${c.code}`};`);
    return n;
  });
  const conds = list.items.flatMap((it, ax) => (it.kind === "const" ? [] : [`${names[ax]} < 0 || ${names[ax]} > ${dims[ax] - region[ax]}`]));
  if (conds.length) {
    const site = ctx.site({ where: spanWhere(span), what, kind, name, shape: [...region], dims: [...dims] });
    ctx.open(`if (${conds.join(" || ")}) {`);
    ctx.line(`const int64_t _off[] = { ${names.join(", ")} };`);
    ctx.line(`if (threadIdx.x == 0) tspto_fail(a, ${site}, ${dims.length}, _off);`);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}

const validRegion = (t: TileType, span: Span): number[] => {
  if (!t.validShape) return [...t.shape];
  return t.validShape.map((d) => {
    if (typeof d !== "number") {
      throw new TsptoCompileError("E_DYNAMIC", `a runtime validShape (${shapeStr(t.validShape!)}) is not supported on the cuda platform yet`, span,
        "give the validShape constant extents on cuda (a kernel specialized per value: plain number parameters), or run on the cpu / interp platform");
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
// trip counts, which the cuda generator does not lower yet
def("tile.checkWindow", {
  kind: "tensor-stmt",
  resultArg: 0,
  emit(_ctx, call) {
    throw new TsptoCompileError("E_DYNAMIC", "a tensor-level pl.slice of run-time extent is not supported on the cuda platform yet", call.span,
      "give the slice constant extents on cuda (run-time offsets are fine), or run on the cpu / interp platform");
  },
});

// ------------------------------------------------------------------ load / store
def("tile.load", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const dims = staticDims(t);
    const region = validRegion(type, call.span);
    const offs = windowOffsets(ctx, "load", "tensor", t.label, call.args[1], region, dims, call.span);
    const S = scratchCType(type.dtype), T = storageCType(t.type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    ctx.line(`${S}* __restrict__ ${d} = (${S}*)(${dest.ptr});`);
    const full = numel(region) === numel(type.shape);
    if (full && contiguous(region, dims)) {
      // one contiguous run: a flat (vectorizable) copy
      ctx.line(`const ${T}* __restrict__ ${s} = (const ${T}*)${t.ptr} + (${linear(offs.map(() => "0"), dims, offs)});`);
      vectorLoopFlat(ctx, pointerPlan(s, T, (x) => loadConv(type.dtype, x)), numel(region), d, S);
      return;
    }
    ctx.line(`const ${T}* __restrict__ ${s} = (const ${T}*)${t.ptr};`);
    // every element of the tile: inside the valid region from the tensor, else pad (zero)
    parallelShape(ctx, type.shape, (f, idx) => {
      const inside = idx.flatMap((v, ax) => (region[ax] < type.shape[ax] ? [`${v} < ${region[ax]}`] : []));
      const val = loadConv(type.dtype, `${s}[${linear(idx, dims, offs)}]`);
      return `${d}[${f}] = ${inside.length ? `(${inside.join(" && ")}) ? (${S})${val} : (${S})0` : val};`;
    });
  },
});

/** dst[i] = plan[i] for i < n (vectorized when possible). */
function vectorLoopFlat(ctx: CudaCtx, plan: ElemPlan, n: number, dst: string, ctype: string, conv: (x: string) => string = (x) => x): void {
  const i = ctx.fresh("i");
  const four = (c: string) => c === "float" || c === "int32_t";
  const vec = n % 4 === 0 && n >= 4 && plan.leaves.every((l) => four(l.ctype)) && four(ctype);
  if (vec) {
    const aligned = [...plan.leaves.map((l) => l.ptr), dst].map((p) => `(uintptr_t)(${p})`).join(" | ");
    ctx.open(`if (((${aligned}) & 15) == 0) {  // 128-bit loads and stores`);
    const q = ctx.fresh("q");
    ctx.open(`for (int64_t ${q} = threadIdx.x; ${q} < ${n / 4}; ${q} += blockDim.x) {`);
    const regs = plan.leaves.map((l) => {
      const r = ctx.fresh("v");
      const V = l.ctype === "float" ? "float4" : "int4";
      ctx.line(`const ${V} ${r} = ((const ${V}*)(${l.ptr}))[${q}];`);
      return r;
    });
    const V = ctype === "float" ? "float4" : "int4";
    const lanes = ["x", "y", "z", "w"].map((c) => `(${ctype})(${conv(plan.withLeaves((li) => `${regs[li]}.${c}`))})`);
    ctx.line(`((${V}*)(${dst}))[${q}] = make_${V}(${lanes.join(", ")});`);
    ctx.close();
    ctx.close("} else {");
    ctx.ind(1);
  }
  ctx.line(`for (int64_t ${i} = threadIdx.x; ${i} < ${n}; ${i} += blockDim.x) ${dst}[${i}] = ${conv(plan.at(i))};`);
  if (vec) ctx.close();
}

def("tile.store", {
  kind: "tensor-stmt",
  resultArg: 2,
  emit(ctx, call) {
    const tileType = tileOf(call.args[0]);
    const t = ctx.tensor(call.args[2]);
    const dims = staticDims(t);
    const region = validRegion(tileType, call.span);
    const offs = windowOffsets(ctx, "store", "tensor", t.label, call.args[1], region, dims, call.span);
    const plan = ctx.elements(call.args[0]);
    const T = storageCType(t.type.dtype);
    const o = ctx.fresh("t");
    if (numel(region) === numel(tileType.shape) && contiguous(region, dims)) {
      ctx.line(`${T}* __restrict__ ${o} = (${T}*)${t.ptr} + (${linear(offs.map(() => "0"), dims, offs)});`);
      vectorLoopFlat(ctx, plan, numel(region), o, T, (x) => storeConv(t.type.dtype, x));
      return;
    }
    ctx.line(`${T}* __restrict__ ${o} = (${T}*)${t.ptr};`);
    parallelShape(ctx, region, (_f, idx) => `${o}[${linear(idx, dims, offs)}] = ${storeConv(t.type.dtype, plan.at(linear(idx, tileType.shape)))};`);
  },
});

// ------------------------------------------------------------------ reductions
const SAT: Record<string, string> = { int8: "tspto_sat_i8", int16: "tspto_sat_i16", int32: "tspto_sat_i32", int64: "tspto_sat_i64", uint8: "tspto_sat_u8", bool: "tspto_sat_b" };
const roundF = (d: DType, x: string): string => (d === "float16" ? `tspto_rnd_f16(${x})` : d === "bfloat16" ? `tspto_rnd_bf16(${x})` : x);

for (const [name, { axis, kind }] of Object.entries(REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const [m, w] = validRegion(x, call.span);  // only the valid region is reduced (src/ir/ops/reduce.ts)
      const d = x.dtype;
      const S = scratchCType(d);
      const float = isFloat(d);
      // accumulator: fp32 for float sums, int64 for integer sums, the element type otherwise
      const A = kind === "sum" ? (float ? "float" : "int64_t") : float ? "float" : "int64_t";
      const op = (p: string, q: string): string => {
        if (kind === "sum") return !float && d === "int64" ? `tspto_add_sat(${p}, ${q})` : `(${p} + ${q})`;
        return float ? `tspto_f${kind}<float>(${p}, ${q})` : `tspto_i${kind}(${p}, ${q})`;
      };
      const init = kind === "sum" ? `(${A})0` : float ? (kind === "max" ? "-INFINITY" : "INFINITY") : kind === "max" ? "INT64_MIN" : "INT64_MAX";
      const fin = (acc: string): string => (kind !== "sum" ? `(${S})${acc}` : float ? roundF(d, acc) : `${SAT[d]}(${acc})`);
      const plan = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      if (axis === "row") {
        // one warp per row: lanes stride the row, then a butterfly of warp shuffles
        const lane = ctx.fresh("lane"), warp = ctx.fresh("warp"), r = ctx.fresh("r"), j = ctx.fresh("j"), acc = ctx.fresh("acc"), sh = ctx.fresh("sh");
        ctx.line(`const int ${lane} = threadIdx.x & 31, ${warp} = threadIdx.x >> 5;`);
        ctx.open(`for (int64_t ${r} = ${warp}; ${r} < ${m}; ${r} += (blockDim.x >> 5)) {`);
        ctx.line(`${A} ${acc} = ${init};`);
        ctx.line(`for (int64_t ${j} = ${lane}; ${j} < ${w}; ${j} += 32) ${acc} = ${op(acc, `(${A})${plan.at(`${r} * ${n} + ${j}`)}`)};`);
        ctx.line(`for (int ${sh} = 16; ${sh} > 0; ${sh} >>= 1) ${acc} = ${op(acc, `__shfl_xor_sync(0xffffffffu, ${acc}, ${sh})`)};`);
        ctx.line(`if (${lane} == 0) ${o}[${r}] = ${fin(acc)};`);
        ctx.close();
      } else {
        // one thread per column, rows in order
        const c = ctx.fresh("c"), i = ctx.fresh("i"), acc = ctx.fresh("acc");
        ctx.open(`for (int64_t ${c} = threadIdx.x; ${c} < ${w}; ${c} += blockDim.x) {`);
        ctx.line(`${A} ${acc} = ${init};`);
        ctx.line(`for (int64_t ${i} = 0; ${i} < ${m}; ++${i}) ${acc} = ${op(acc, `(${A})${plan.at(`${i} * ${n} + ${c}`)}`)};`);
        ctx.line(`${o}[${c}] = ${fin(acc)};`);
        ctx.close();
      }
    },
  });
}

// rowSumKeep(x) -> [x, rowSum(x)]: on the GPU the block computes x into its tile, then the
// warps reduce the rows of that tile (two block-parallel steps; the cpu fuses them into one loop).
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
        const fm = EMITTERS.get(`tile.${bin}`) as ElementwiseEmitter;
        const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
        const o = destPtr(ctx, dest);
        parallelShape(ctx, [m, n], (f, [r, c]) => `${o}[${f}] = ${fm.emit(call,
          [{ kind: "tile", code: et.at(f), dtype: d }, { kind: "tile", code: ev.at(axis === "row" ? r : c), dtype: d }])};`);
      },
    });
  }
  def(`tile.${axis}Expand`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const [m, n] = tileOf(call.args[0]).shape as number[];
      const ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      parallelShape(ctx, [m, n], (f, [r, c]) => `${o}[${f}] = ${ev.at(axis === "row" ? r : c)};`);
    },
  });
}

// rowExpandExpdif / colExpandExpdif: exp(t - v), the difference rounded to the dtype first
// (the cpu formula, src/codegen/cpp/emitters/)
for (const axis of ["row", "col"] as const) {
  def(`tile.${axis}ExpandExpdif`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const [m, n] = tileOf(call.args[0]).shape as number[];
      const d = dest.type.dtype;
      const et = ctx.elements(call.args[0]), ev = ctx.elements(call.args[1]);
      const o = destPtr(ctx, dest);
      parallelShape(ctx, [m, n], (f, [r, c]) => `${o}[${f}] = ${roundF(d, `tspto_expf(${roundF(d, `(${et.at(f)} - ${ev.at(axis === "row" ? r : c)})`)})`)};`);
    },
  });
}
// prelu(x[M,N], slope[M,1]): x > 0 ? x : x * slope[r]
def("tile.prelu", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, n] = tileOf(call.args[0]).shape as number[];
    const d = dest.type.dtype;
    const ex = ctx.elements(call.args[0]), es = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const x = ctx.fresh("x");
    parallelShape(ctx, [m, n], (f, [r]) => `{ const float ${x} = ${ex.at(f)}; ${o}[${f}] = ${x} > 0.0f ? ${x} : ${roundF(d, `(${x} * ${es.at(r)})`)}; }`);
  },
});

// ------------------------------------------------------------------ products and arg-reductions (src/ir/ops/reduce.ts)
/** One thread per valid line of a tile of row stride n (valid [vm, vn]) along `axis`, elements in order: line, element index of j, count (valid). */
function lineThreads(ctx: CudaCtx, [vm, vn]: readonly number[], n: number, axis: "row" | "col", body: (line: string, at: (j: string) => string, count: number) => void): void {
  const l = ctx.fresh("l");
  ctx.open(`for (int64_t ${l} = threadIdx.x; ${l} < ${axis === "row" ? vm : vn}; ${l} += blockDim.x) {`);
  body(l, axis === "row" ? (j) => `${l} * ${n} + ${j}` : (j) => `${j} * ${n} + ${l}`, axis === "row" ? vn : vm);
  ctx.close();
}
const roundD = (d: DType, x: string): string =>
  d === "float16" ? `tspto_d2f16v(${x})` : d === "bfloat16" ? `tspto_d2bf16v(${x})` : `(float)(${x})`;
for (const [name, axis] of Object.entries(PROD_REDUCTIONS)) {
  def(`tile.${name}`, {
    kind: "tile-stmt",
    emitInto(ctx, call, dest) {
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const d = x.dtype;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      // in order, as on cpu (float: fp64 products rounded once; integers saturate)
      lineThreads(ctx, validRegion(x, call.span), n, axis, (l, at, cnt) => {
        const acc = ctx.fresh("acc"), j = ctx.fresh("j");
        if (isFloat(d)) {
          ctx.line(`double ${acc} = 1.0;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} *= (double)${ex.at(at(j))};`);
          ctx.line(`${o}[${l}] = ${roundD(d, acc)};`);
        } else {
          ctx.line(`int64_t ${acc} = 1;`);
          ctx.line(`for (int64_t ${j} = 0; ${j} < ${cnt}; ++${j}) ${acc} = tspto_mul_sat(${acc}, (int64_t)${ex.at(at(j))});`);
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
      const x = tileOf(call.args[0]);
      const n = x.shape[1] as number;
      const ex = ctx.elements(call.args[0]);
      const o = destPtr(ctx, dest);
      const S = scratchCType(x.dtype), float = isFloat(x.dtype);
      lineThreads(ctx, validRegion(x, call.span), n, axis, (l, at, cnt) => {
        const best = ctx.fresh("best"), bi = ctx.fresh("bi"), j = ctx.fresh("j"), v = ctx.fresh("v");
        ctx.line(`${S} ${best} = ${ex.at(at("0"))}; int32_t ${bi} = 0;`);
        // the first extreme wins; a NaN beats every number and the first NaN wins
        const better = float
          ? `(${best} == ${best}) && ((${v} != ${v}) || ${v} ${kind === "max" ? ">" : "<"} ${best})`
          : `${v} ${kind === "max" ? ">" : "<"} ${best}`;
        ctx.line(`for (int64_t ${j} = 1; ${j} < ${cnt}; ++${j}) { const ${S} ${v} = ${ex.at(at(j))}; if (${better}) { ${best} = ${v}; ${bi} = (int32_t)${j}; } }`);
        ctx.line(`${o}[${l}] = ${bi};`);
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
    parallelShape(ctx, dest.type.shape as number[], (f, idx) => `${o}[${f}] = ${ex.at(linear(idx.map((v, ax) => (xs[ax] === 1 ? "0" : v)), xs))};`);
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
      return `${o}[${linear(sw, dest.type.shape as number[])}] = ${ex.at(f)};`;
    });
  },
});

// ------------------------------------------------------------------ matmul
function emitMatmul(ctx: CudaCtx, call: Call, dest: TileDest, accArg: Expr | null): void {
  const base = accArg ? 1 : 0;
  const at = tileOf(call.args[base]), bt = tileOf(call.args[base + 1]);
  const [m, k0] = at.shape as number[], n = bt.shape[1] as number;
  // the sum runs over the valid K only: min(a's valid columns, b's valid rows) (src/ir/ops/matmul.ts)
  const k = Math.min(validRegion(at, call.span)[1], validRegion(bt, call.span)[0]);
  const ea = ctx.elements(call.args[base]), eb = ctx.elements(call.args[base + 1]);
  const ec = accArg ? ctx.elements(accArg) : null;
  const o = destPtr(ctx, dest);
  const tc = (at.dtype === "float16" || at.dtype === "bfloat16") && m % 16 === 0 && n % 16 === 0 && k % 16 === 0;
  if (tc) {
    // tensor cores: each warp owns 16x16 output tiles; per k-step it converts the 16x16
    // blocks of a and b (fp32 in scratch, values already representable) into its staging
    // area in shared memory and multiplies them with WMMA, accumulating in fp32.
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
      ctx.line(`for (int ${e} = ${lane}; ${e} < 256; ${e} += 32) ${o}[(${i0} + ${e} / 16) * ${n} + ${j0} + ${e} % 16] = ${ec.at(`(${i0} + ${e} / 16) * ${n} + ${j0} + ${e} % 16`)};`);
      ctx.line("__syncwarp();");
      ctx.line(`nvcuda::wmma::load_matrix_sync(${fc}, ${o} + ${i0} * ${n} + ${j0}, ${n}, nvcuda::wmma::mem_row_major);`);
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
    ctx.line(`nvcuda::wmma::store_matrix_sync(${o} + ${i0} * ${n} + ${j0}, ${fc}, ${n}, nvcuda::wmma::mem_row_major);`);
    ctx.close();
    return;
  }
  const float = isFloat(at.dtype);
  parallelShape(ctx, [m, n], (f, [i, j]) => {
    const acc = ctx.fresh("acc"), q = ctx.fresh("k");
    if (float) {
      return `float ${acc} = ${ec ? ec.at(f) : "0.0f"}; for (int64_t ${q} = 0; ${q} < ${k}; ++${q}) ${acc} = fmaf(${ea.at(`${i} * ${k0} + ${q}`)}, ${eb.at(`${q} * ${n} + ${j}`)}, ${acc}); ${o}[${f}] = ${acc};`;
    }
    return `int64_t ${acc} = ${ec ? `(int64_t)${ec.at(f)}` : "0"}; for (int64_t ${q} = 0; ${q} < ${k}; ++${q}) ${acc} += (int64_t)${ea.at(`${i} * ${k0} + ${q}`)} * (int64_t)${eb.at(`${q} * ${n} + ${j}`)}; ${o}[${f}] = ${SAT[dest.type.dtype]}(${acc});`;
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
    parallelShape(ctx, shape, (f, idx) => `${o}[${f}] = ${ex.at(linear(idx, x.shape as number[], off))};`);
  },
});

def("tile.concat", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const [m, na] = tileOf(call.args[0]).shape as number[], nb = tileOf(call.args[1]).shape[1] as number;
    const ea = ctx.elements(call.args[0]), eb = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, [m, na + nb], (f, [r, c]) => `${o}[${f}] = ${c} < ${na} ? ${ea.at(`${r} * ${na} + ${c}`)} : ${eb.at(`${r} * ${nb} + ${c} - ${na}`)};`);
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
      return `${o}[${f}] = (${inside}) ? ${es.at(linear(sidx, sshape))} : ${et.at(f)};`;
    });
  },
});

// ------------------------------------------------------------------ indexing: iota, gather, gatherLoad
def("tile.iota", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = call.type as TileType;
    const axis = Number(call.attrs.axis);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, t.shape, (f, idx) => `${o}[${f}] = ${castElem("int64", t.dtype, "round", idx[axis])};`);
  },
});

/**
 * Element f of a gather: its index read and checked (a thread that finds one outside [0, extent)
 * records the failure and writes zero: nothing outside the table is read), then the value.
 */
function gathered(ctx: CudaCtx, site: number, idx: string, extent: number, other: string, at: (g: string) => string, S: string, o: string, f: string, gathered0: boolean): string {
  const off = gathered0 ? `{ _g, ${other} }` : `{ ${other}, _g }`;
  return `{ const int64_t _g = (int64_t)(${idx}); if (_g < 0 || _g >= ${extent}) { const int64_t _off[] = ${off}; tspto_fail(a, ${site}, 2, _off); ${o}[${f}] = (${S})0; } else ${o}[${f}] = ${at("_g")}; }`;
}

def("tile.gather", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const table = tileOf(call.args[0]);
    const axis = Number(call.attrs.axis ?? 0);
    const [r, c] = table.shape as number[];
    const et = ctx.elements(call.args[0]), ei = ctx.elements(call.args[1]);
    const shape = dest.type.shape as number[];
    const S = scratchCType(dest.type.dtype);
    const o = destPtr(ctx, dest);
    const site = ctx.site({ where: spanWhere(call.span), what: "gather", kind: "tile", name: label(call.args[0]), shape: axis === 0 ? [1, c] : [r, 1], dims: [r, c] });
    parallelShape(ctx, shape, (f, [i, j]) => axis === 0
      ? gathered(ctx, site, ei.at(i), r, "0", (g) => et.at(`${g} * ${c} + ${j}`), S, o, f, true)
      : gathered(ctx, site, ei.at(j), c, "0", (g) => et.at(`${i} * ${c} + ${g}`), S, o, f, false));
  },
});

def("tile.gatherLoad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const dims = staticDims(t);
    const axis = Number(call.attrs.axis ?? 0), other = 1 - axis;
    const region = validRegion(type, call.span);
    const offList = mkList(axis === 0 ? [mkConstZero(call.span), call.args[2]] : [call.args[2], mkConstZero(call.span)], call.span);
    const offs = windowOffsets(ctx, "gatherLoad", "tensor", t.label, offList, axis === 0 ? [1, region[1]] : [region[0], 1], dims, call.span);
    const ei = ctx.elements(call.args[1]);
    const S = scratchCType(type.dtype), T = storageCType(t.type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    ctx.line(`${S}* __restrict__ ${d} = (${S}*)(${dest.ptr});`);
    ctx.line(`const ${T}* __restrict__ ${s} = (const ${T}*)${t.ptr};`);
    const site = ctx.site({ where: spanWhere(call.span), what: "gather", kind: "tensor", name: t.label, shape: axis === 0 ? [1, region[1]] : [region[0], 1], dims: [...dims] });
    const o0 = offs[other];
    parallelShape(ctx, type.shape as number[], (f, [i, j]) => {
      const inside = [i, j].flatMap((v, ax) => (region[ax] < type.shape[ax] ? [`${v} < ${region[ax]}`] : []));
      const body = axis === 0
        ? gathered(ctx, site, ei.at(i), dims[0], o0, (g) => loadConv(type.dtype, `${s}[${g} * ${dims[1]} + ${o0} + ${j}]`), S, d, f, true)
        : gathered(ctx, site, ei.at(j), dims[1], o0, (g) => loadConv(type.dtype, `${s}[(${o0} + ${i}) * ${dims[1]} + ${g}]`), S, d, f, false);
      return inside.length ? `if (${inside.join(" && ")}) ${body} else ${d}[${f}] = (${S})0;` : body;
    });
  },
});

def("tile.fillpad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const x = tileOf(call.args[0]);
    const shape = x.shape as number[];
    const valid = validRegion(x, call.span);
    const d = x.dtype;
    const pad = scratchLit(d, toDType(padValue(d, String(call.attrs.padValue ?? "zero")), d));
    const ex = ctx.elements(call.args[0]);
    const o = destPtr(ctx, dest);
    parallelShape(ctx, shape, (f, idx) => {
      const inside = idx.flatMap((v, ax) => (valid[ax] < shape[ax] ? [`${v} < ${valid[ax]}`] : []));
      return `${o}[${f}] = ${inside.length ? `(${inside.join(" && ")}) ? ${ex.at(f)} : ${pad}` : ex.at(f)};`;
    });
  },
});

const scalarOfElem = (d: DType, code: string): CExpr => {
  const ct = scalarCType(d);
  return { code: ct === "bool" ? `(${code} != 0)` : `(${ct})${code}`, ctype: ct };
};
def("tile.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const x = tileOf(call.args[0]);
    const shape = x.shape as number[];
    const idx = windowOffsets(ctx, "read", "tile", label(call.args[0]), call.args[1], shape.map(() => 1), shape, call.span);
    const e = ctx.elements(call.args[0]);
    const v = scalarOfElem(x.dtype, e.at(linear(idx.map(() => "0"), shape, idx)));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});
def("tensor.read", {
  kind: "scalar-stmt",
  emit(ctx, call) {
    const t = ctx.tensor(call.args[0]);
    const shape = staticDims(t);
    const idx = windowOffsets(ctx, "read", "tensor", t.label, call.args[1], shape.map(() => 1), shape, call.span);
    const T = storageCType(t.type.dtype);
    const v = scalarOfElem(t.type.dtype, loadConv(t.type.dtype, `((const ${T}*)${t.ptr})[${linear(idx.map(() => "0"), shape, idx)}]`));
    const name = ctx.fresh("rd");
    ctx.line(`const ${v.ctype} ${name} = ${v.code};`);
    return { code: name, ctype: v.ctype };
  },
});

export { cstr };

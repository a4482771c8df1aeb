// tile.load and tile.store: the window checks and the loops between a tensor and a tile.
import { DTYPE_BYTES, type Expr, type Span, type TileType, TsptoCompileError, shapeStr } from "../../../ir/index.js";
import { cstr, intLit, loadConv, scratchCType, spanWhere, storageCType, storeConv } from "./ctypes.js";
import { type KernelCtx, type TensorRef, def } from "./table.js";
import { type CDim, cdim, cmul, cnumel, csub, cstrides } from "./dims.js";
import { BINARY_CPP, binaryElem } from "./elementwise.js";

export function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** Offsets of a load/store as int64 C++ expressions (constants folded to numbers). */
export function offsetsOf(ctx: KernelCtx, e: Expr, rank: number, what: string, span: Span): (number | string)[] {
  if (e.kind !== "list") throw new TsptoCompileError("E_CODEGEN", `internal: ${what} offsets must be a list expression`, span);
  if (e.items.length !== rank) throw new TsptoCompileError("E_CODEGEN", `internal: ${what} has ${e.items.length} offsets for rank ${rank}`, span);
  return e.items.map((it) => {
    if (it.kind === "const") return Number(it.value);
    const c = ctx.scalar(it);
    return c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(std::trunc(${c.code}))` : `(int64_t)${c.code}`;
  });
}

/**
 * Bind the offsets to locals and check the window [off, off + region) against the tensor's
 * dims: statically for constant offsets (a compile error), at run time for the others
 * (rt->fail with the window, then leave the kernel). Returns the offsets' C++ names/values.
 */
export function windowCheck(ctx: KernelCtx, what: "load" | "store" | "slice" | "gatherLoad", t: TensorRef, offs: (number | string)[], region: readonly CDim[], span: Span): string[] {
  const dims = t.dims;
  for (let ax = 0; ax < region.length; ax++) {
    const d = dims[ax], r = region[ax];
    // a dynamic dimension or a runtime valid extent: checked at run time below
    if (typeof d !== "number" || typeof r !== "number") continue;
    if (r > d || (typeof offs[ax] === "number" && ((offs[ax] as number) < 0 || (offs[ax] as number) + r > d))) {
      throw new TsptoCompileError("E_WINDOW",
        `${what} window [${offs.map((o) => (typeof o === "number" ? o : "?")).join(", ")}] + ${shapeStr(region)} is outside tensor '${t.label}' of shape ${shapeStr(t.type.shape)} (axis ${ax})`,
        span, "keep offset + shape within the tensor on every axis");
    }
  }
  const names = offs.map((o) => {
    if (typeof o === "number") return intLit(o);
    const n = ctx.fresh("o");
    ctx.line(`const int64_t ${n} = ${o};`);
    return n;
  });
  const conds: string[] = [];
  offs.forEach((o, ax) => {
    if (typeof o !== "number" || typeof dims[ax] !== "number" || typeof region[ax] !== "number") conds.push(`${names[ax]} < 0 || ${names[ax]} > ${cdim(csub(dims[ax], region[ax]))}`);
  });
  if (conds.length) {
    ctx.open(`if (__builtin_expect(${conds.join(" || ")}, 0)) {`);
    ctx.line(`const int64_t _off[] = { ${names.join(", ")} };`);
    ctx.line(`const int64_t _shp[] = { ${region.join(", ")} };`);
    ctx.line(`const int64_t _dims[] = { ${dims.map(cdim).join(", ")} };`);
    ctx.line(`tspto_window_fail(rt, ${cstr(spanWhere(span))}, "${what}", ${cstr(t.label)}, ${region.length}, _off, _shp, _dims);`);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}

/**
 * Nested loops over the rows of `region` (row-major, every axis but the last); `row(tb, sb, w)`
 * emits the code of one contiguous row: w elements from tensor index tb and tile index sb.
 */
function regionRows(ctx: KernelCtx, region: readonly CDim[], tensorBase: string[], tensorStrides: readonly CDim[], tileStrides: number[],
  row: (tb: string, sb: string, width: CDim) => void): void {
  const rank = region.length;
  const idx: string[] = [];
  for (let ax = 0; ax < rank - 1; ax++) {
    const v = ctx.fresh("r");
    idx.push(v);
    ctx.open(`for (int64_t ${v} = 0; ${v} < ${region[ax]}; ++${v}) {`);
  }
  const tOff = [...idx.map((v, ax) => `(${tensorBase[ax]} + ${v}) * ${cdim(tensorStrides[ax])}`), tensorBase[rank - 1]].join(" + ");
  const sOff = idx.map((v, ax) => `${v} * ${tileStrides[ax]}`).join(" + ") || "0";
  const tb = ctx.fresh("tb"), sb = ctx.fresh("sb");
  ctx.line(`const int64_t ${tb} = ${tOff}, ${sb} = ${sOff};`);
  row(tb, sb, region[rank - 1]);
  for (let ax = 0; ax < rank - 1; ax++) ctx.close();
}

/** regionRows with one statement per element: `body(tensorIndex, tileIndex)`, the innermost loop contiguous in both. */
function regionLoops(ctx: KernelCtx, region: readonly CDim[], tensorBase: string[], tensorStrides: readonly CDim[], tileStrides: number[],
  body: (ti: string, si: string) => string): void {
  regionRows(ctx, region, tensorBase, tensorStrides, tileStrides, (tb, sb, w) => {
    const j = ctx.fresh("j");
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${w}; ++${j}) ${body(`${tb} + ${j}`, `${sb} + ${j}`)}`);
  });
}

/**
 * The rows of a store to a write-only output of the launch (StreamOutputs): each contiguous
 * row is computed into an L1 buffer of at most STREAM_CHUNK elements and copied out with
 * non-temporal stores (tspto_stream_store); the kernel fences once before it returns (FnGen,
 * tspto_stream_fence).
 */
function streamRows(ctx: KernelCtx, region: readonly CDim[], tensorBase: string[], tensorStrides: readonly CDim[], tileStrides: number[],
  T: string, out: string, value: (si: string) => string): void {
  regionRows(ctx, region, tensorBase, tensorStrides, tileStrides, (tb, sb, w) => {
    const buf = ctx.fresh("nt"), c0 = ctx.fresh("c"), cn = ctx.fresh("cn"), j = ctx.fresh("j");
    const chunk = typeof w === "number" ? Math.min(w, STREAM_CHUNK) : STREAM_CHUNK;
    ctx.line(`alignas(64) ${T} ${buf}[${chunk}];`);
    ctx.open(`for (int64_t ${c0} = 0; ${c0} < ${w}; ${c0} += ${chunk}) {`);
    ctx.line(`const int64_t ${cn} = ${w} - ${c0} < ${chunk} ? ${w} - ${c0} : ${chunk};`);
    ctx.line("#pragma GCC ivdep");
    ctx.line(`for (int64_t ${j} = 0; ${j} < ${cn}; ++${j}) ${buf}[${j}] = ${value(`${sb} + ${c0} + ${j}`)};`);
    ctx.line(`tspto_stream_store(&${out}[${tb} + ${c0}], ${buf}, ${cn} * (int64_t)sizeof(${T}));`);
    ctx.close();
  });
}

/** Elements per staged row chunk of a streaming store (1 KiB of float32; 4 KiB chunks measured 15% slower on the add). */
const STREAM_CHUNK = 256;
/**
 * A write-only output of at least this many bytes is stored with non-temporal stores: larger
 * than the caches a consumer could have read it from, and the store then moves each line once
 * (no read-for-ownership): on the 2-core machine the bench's add of [4096, 4096] float32 went 6.99 -> 5.4 ms.
 */
export const STREAM_MIN_BYTES = 32 << 20;

def("tile.load", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const region = ctx.validOf(call);
    const offs = windowCheck(ctx, "load", t, offsetsOf(ctx, call.args[1], t.dims.length, "load", call.span), region, call.span);
    const S = scratchCType(type.dtype), T = storageCType(t.type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    ctx.line(`${S}* __restrict ${d} = (${S}*)(${dest.ptr});`);
    ctx.line(`const ${T}* __restrict ${s} = (const ${T}*)${t.ptr};`);
    // the valid region only: the pad is left as it is (no op but fillpad reads it; docs/semantics.md)
    regionLoops(ctx, region, offs, cstrides(t.dims), strides(type.shape), (ti, si) => `${d}[${si}] = ${loadConv(type.dtype, `${s}[${ti}]`)};`);
  },
});

def("tile.store", {
  kind: "tensor-stmt",
  resultArg: 2,
  emit(ctx, call) {
    const tileType = exprTileType(call.args[0]);
    const t = ctx.tensor(call.args[2]);
    const region = ctx.validOf(call.args[0]);
    const offs = windowCheck(ctx, "store", t, offsetsOf(ctx, call.args[1], t.dims.length, "store", call.span), region, call.span);
    const elem = ctx.elements(call.args[0]);
    const T = storageCType(t.type.dtype);
    const o = ctx.fresh("t");
    ctx.line(`${T}* __restrict ${o} = (${T}*)${t.ptr};`);
    if (call.attrs.atomic === "add") {
      // out += tile: the tasks that touch the window are ordered by their (read-write) accesses
      const d = t.type.dtype;
      const sum = (ti: string, si: string) => binaryElem(BINARY_CPP.add, d, { kind: "tile", code: loadConv(d, `${o}[${ti}]`), dtype: d }, { kind: "tile", code: elem(si), dtype: d });
      regionLoops(ctx, region, offs, cstrides(t.dims), strides(tileType.shape), (ti, si) => `${o}[${ti}] = ${storeConv(d, sum(ti, si))};`);
      return;
    }
    const plain = () => regionLoops(ctx, region, offs, cstrides(t.dims), strides(tileType.shape), (ti, si) => `${o}[${ti}] = ${storeConv(t.type.dtype, elem(si))};`);
    if (!ctx.streamOut?.(call.args[2])) { plain(); return; }
    // a write-only output of the launch: streamed past the caches when it is large
    const bytes = cmul(cnumel(t.dims), DTYPE_BYTES[t.type.dtype]);
    const stream = () => streamRows(ctx, region, offs, cstrides(t.dims), strides(tileType.shape), T, o, (si) => storeConv(t.type.dtype, elem(si)));
    if (typeof bytes === "number") { if (bytes >= STREAM_MIN_BYTES) stream(); else plain(); return; }
    ctx.open(`if (${cdim(bytes)} >= ${STREAM_MIN_BYTES}) {  // streamed when large (STREAM_MIN_BYTES)`);
    stream();
    ctx.close();
    ctx.open("else {");
    plain();
    ctx.close();
  },
});

// checkWindow: a tensor-level slice of run-time extent (TensorToTile) -- every extent >= 1 and the
// window inside the tensor, else rt->fail with the window and the slice's location
def("tile.checkWindow", {
  kind: "tensor-stmt",
  resultArg: 0,
  emit(ctx, call) {
    const t = ctx.tensor(call.args[0]);
    const rank = t.dims.length;
    const ext = offsetsOf(ctx, call.args[1], rank, "checkWindow", call.span).map((e) => {
      if (typeof e === "number") return e;
      const n = ctx.fresh("e");
      ctx.line(`const int64_t ${n} = ${e};`);
      return n;
    });
    const low = ext.flatMap((e, ax) => (typeof e === "number" ? [] : [[e, ax] as const]));
    if (low.length) {
      ctx.open(`if (__builtin_expect(${low.map(([e]) => `${e} < 1`).join(" || ")}, 0)) {`);
      ctx.line(`const int64_t _shp[] = { ${ext.join(", ")} };`);
      ctx.line(`tspto_extent_fail(rt, ${cstr(spanWhere(call.span))}, "slice", ${rank}, _shp);`);
      ctx.line(ctx.failExit);
      ctx.close();
    }
    windowCheck(ctx, "slice", t, offsetsOf(ctx, call.args[2], rank, "checkWindow", call.span), ext, call.span);
  },
});

export function exprTileType(e: Expr): TileType {
  const t = e.kind === "const" ? null : e.type;
  if (!t || t.kind !== "tile") throw new Error("internal: expected a tile operand");
  return t;
}

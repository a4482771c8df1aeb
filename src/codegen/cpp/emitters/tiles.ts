// Shared helpers of the non-elementwise tile ops (reductions, broadcasts, matmul, shape ops, read).
import { type Expr, type Span, type TileType, TsptoCompileError } from "../../../ir/index.js";
import { cstr, intLit, scratchCType, spanWhere } from "./ctypes.js";
import type { KernelCtx, TileDest } from "./table.js";
import { type CDim, cdim, csub } from "./dims.js";
import { exprTileType, strides } from "./memory.js";

export const tileOperand = (e: Expr): TileType => exprTileType(e);

/** Declare `S* __restrict o = dest` and return o. */
export function destPtr(ctx: KernelCtx, dest: TileDest): string {
  const S = scratchCType(dest.type.dtype);
  const o = ctx.fresh("o");
  ctx.line(`${S}* __restrict ${o} = (${S}*)(${dest.ptr});`);
  return o;
}

/** Nested loops over `shape` (row-major); body(indexVars) gives the innermost statement. */
export function shapeLoops(ctx: KernelCtx, shape: readonly number[], body: (idx: string[]) => string): void {
  const idx = shape.map(() => ctx.fresh("i"));
  shape.forEach((d, ax) => {
    if (ax === shape.length - 1) ctx.line("#pragma GCC ivdep");
    ctx.open(`for (int64_t ${idx[ax]} = 0; ${idx[ax]} < ${d}; ++${idx[ax]}) {`);
  });
  ctx.line(body(idx));
  shape.forEach(() => ctx.close());
}
/** The linear index `sum((idx + off) * stride)` as C++. */
export function linear(idx: readonly string[], shape: readonly number[], off?: readonly string[]): string {
  const st = strides(shape);
  return idx.map((v, ax) => {
    const e = off && off[ax] !== "INT64_C(0)" ? `(${v} + ${off[ax]})` : v;
    return st[ax] === 1 ? e : `${e} * ${st[ax]}`;
  }).join(" + ") || "0";
}

/**
 * Offsets of a window inside a tile (slice, assemble, read): constants were checked at
 * compile time; the others are bound to locals and checked here at run time.
 */
export function tileWindow(ctx: KernelCtx, what: string, name: string, list: Expr, shape: readonly number[], outer: readonly CDim[], span: Span, kind = "tile"): string[] {
  if (list.kind !== "list") throw new TsptoCompileError("E_CODEGEN", `internal: ${what} offsets must be a list expression`, span);
  const names = list.items.map((it) => {
    if (it.kind === "const") return intLit(Number(it.value));
    const c = ctx.scalar(it);
    const n = ctx.fresh("o");
    ctx.line(`const int64_t ${n} = ${c.ctype === "int64_t" ? c.code : c.ctype === "double" ? `tspto_d2i64(std::trunc(${c.code}))` : `(int64_t)${c.code}`};`);
    return n;
  });
  // constant offsets within static extents were checked at compile time
  const conds = list.items.flatMap((it, ax) => (it.kind === "const" && typeof outer[ax] === "number" ? [] : [`${names[ax]} < 0 || ${names[ax]} > ${cdim(csub(outer[ax], shape[ax]))}`]));
  if (conds.length) {
    ctx.open(`if (__builtin_expect(${conds.join(" || ")}, 0)) {`);
    ctx.line(`const int64_t _off[] = { ${names.join(", ")} };`);
    ctx.line(`const int64_t _shp[] = { ${shape.join(", ")} };`);
    ctx.line(`const int64_t _dims[] = { ${outer.map(cdim).join(", ")} };`);
    ctx.line(`tspto_bounds_fail(rt, ${cstr(spanWhere(span))}, "${what}", "${kind}", ${cstr(name)}, ${shape.length}, _off, _shp, _dims);`);
    ctx.line(ctx.failExit);
    ctx.close();
  }
  return names;
}
export const exprLabel = (e: Expr): string => (e.kind === "var" ? e.name : "<expr>");

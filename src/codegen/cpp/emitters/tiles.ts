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

/**
 * One statement per element of the valid region `region` (extents: numbers, or C++ int64
 * expressions of run-time ones) of a tile of `shape`, row-major: `stmt(linearIndex)`. The
 * trailing axes where the region is the whole tile are one flat, contiguous inner loop (the
 * whole tile: a single loop over every element); the axes before them are loops of their own.
 */
export function regionLoop(ctx: KernelCtx, shape: readonly number[], region: readonly CDim[], stmt: (idx: string) => string, ivdep = true): void {
  let p = shape.length - 1;                      // the last axis where the region is not the whole extent
  while (p >= 0 && region[p] === shape[p]) p--;
  const inner = shape.slice(p + 1).reduce((a, b) => a * b, 1);
  const strides = shape.map((_, ax) => shape.slice(ax + 1).reduce((a, b) => a * b, 1));
  const idx: string[] = [];
  for (let ax = 0; ax < p; ax++) {
    const v = ctx.fresh("r");
    idx.push(`${v} * ${strides[ax]}`);
    ctx.open(`for (int64_t ${v} = 0; ${v} < ${cdim(region[ax])}; ++${v}) {`);
  }
  const count = p < 0 ? inner : typeof region[p] === "number" ? (region[p] as number) * inner : inner === 1 ? `(${region[p]})` : `(${region[p]}) * ${inner}`;
  const i = ctx.fresh("i");
  const at = idx.length ? `${idx.join(" + ")} + ${i}` : i;
  if (ivdep) ctx.line("#pragma GCC ivdep");
  ctx.line(`for (int64_t ${i} = 0; ${i} < ${count}; ++${i}) ${stmt(at)}`);
  for (let ax = 0; ax < p; ax++) ctx.close();
}

/** Nested loops over `shape` (row-major; an extent may be a C++ expression: a run-time valid extent); body(indexVars) gives the innermost statement. */
export function shapeLoops(ctx: KernelCtx, shape: readonly CDim[], body: (idx: string[]) => string): void {
  const idx = shape.map(() => ctx.fresh("i"));
  shape.forEach((d, ax) => {
    if (ax === shape.length - 1) ctx.line("#pragma GCC ivdep");
    ctx.open(`for (int64_t ${idx[ax]} = 0; ${idx[ax]} < ${cdim(d)}; ++${idx[ax]}) {`);
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

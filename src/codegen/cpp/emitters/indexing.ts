// Indexing ops: iota (the index along an axis), gather (rows / columns of a table tile at an
// index tile) and gatherLoad (rows / columns of a table tensor at an index tile: what a
// tensor-level gather becomes). Every index is checked before it is used: an index outside the
// table is rt->fail (tspto_index_fail) and the kernel leaves, so nothing outside the table is read.
import { type TileType, mkList, numel, tileElemBytes } from "../../../ir/index.js";
import { cstr, loadConv, scratchCType, spanWhere, storageCType } from "./ctypes.js";
import { def, type KernelCtx } from "./table.js";
import { castElem } from "./elementwise.js";
import { cdim, cstrides } from "./dims.js";
import { offsetsOf, windowCheck } from "./memory.js";
import { destPtr, exprLabel, linear, shapeLoops, tileOperand } from "./tiles.js";

def("tile.iota", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = call.type as TileType;
    const axis = Number(call.attrs.axis);
    const o = destPtr(ctx, dest);
    shapeLoops(ctx, t.shape, (idx) => `${o}[${linear(idx, t.shape)}] = ${castElem("int64", t.dtype, "round", idx[axis])};`);
  },
});

/** `const int64_t g = index k; if outside [0, extent): fail and leave`; returns g. */
function checkedIndex(ctx: KernelCtx, elem: string, k: string | null, extent: string | number, where: string, table: string, dims: readonly (string | number)[], axis: number): string {
  const g = ctx.fresh("g");
  ctx.line(`const int64_t ${g} = (int64_t)(${elem});`);
  ctx.open(`if (__builtin_expect(${g} < 0 || ${g} >= ${cdim(extent)}, 0)) {`);
  ctx.line(`const int64_t _dims[] = { ${dims.map(cdim).join(", ")} };`);
  ctx.line(`tspto_index_fail(rt, ${cstr(where)}, "gather", ${cstr(table)}, ${dims.length}, _dims, ${axis}, ${k ?? -1}, ${g});`);
  ctx.line(ctx.failExit);
  ctx.close();
  return g;
}

def("tile.gather", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const table = tileOperand(call.args[0]), it = tileOperand(call.args[1]);
    const axis = Number(call.attrs.axis ?? 0);
    const [r, c] = table.shape, n = numel(it.shape);
    const et = ctx.elements(call.args[0]), ei = ctx.elements(call.args[1]);
    const o = destPtr(ctx, dest);
    const k = ctx.fresh("k"), x = ctx.fresh("x");
    ctx.open(`for (int64_t ${k} = 0; ${k} < ${n}; ++${k}) {`);
    const g = checkedIndex(ctx, ei(k), k, axis === 0 ? r : c, spanWhere(call.span), `the table tile '${exprLabel(call.args[0])}'`, table.shape, axis);
    ctx.line("#pragma GCC ivdep");
    if (axis === 0) ctx.line(`for (int64_t ${x} = 0; ${x} < ${c}; ++${x}) ${o}[${k} * ${c} + ${x}] = ${et(`${g} * ${c} + ${x}`)};`);
    else ctx.line(`for (int64_t ${x} = 0; ${x} < ${r}; ++${x}) ${o}[${x} * ${n} + ${k}] = ${et(`${x} * ${c} + ${g}`)};`);
    ctx.close();
  },
});

def("tile.gatherLoad", {
  kind: "tile-stmt",
  emitInto(ctx, call, dest) {
    const t = ctx.tensor(call.args[0]);
    const type = call.type as TileType;
    const axis = Number(call.attrs.axis ?? 0), other = 1 - axis;
    const region = ctx.validOf(call);
    const off = offsetsOf(ctx, mkList([call.args[2]], call.span), 1, "gatherLoad", call.span)[0];
    // the window along the other axis: [offset, offset + extent) of the table
    const offs = axis === 0 ? [0, off] : [off, 0];
    const names = windowCheck(ctx, "gatherLoad", t, offs, axis === 0 ? [1, region[1]] : [region[0], 1], call.span);
    const o0 = names[other];
    const S = scratchCType(type.dtype), T = storageCType(t.type.dtype);
    const d = ctx.fresh("d"), s = ctx.fresh("s");
    ctx.line(`${S}* __restrict ${d} = (${S}*)(${dest.ptr});`);
    ctx.line(`const ${T}* __restrict ${s} = (const ${T}*)${t.ptr};`);
    const full = region.every((v, ax) => v === type.shape[ax]);
    if (!full) ctx.line(`std::memset(${d}, 0, ${numel(type.shape) * tileElemBytes(type.dtype)});`);
    const ei = ctx.elements(call.args[1]);
    const [dr, dc] = t.dims, rowStride = cstrides(t.dims)[0];
    const k = ctx.fresh("k"), x = ctx.fresh("x");
    const tcols = type.shape[1];
    const where = spanWhere(call.span), label = `tensor '${t.label}'`;
    if (axis === 0) {
      ctx.open(`for (int64_t ${k} = 0; ${k} < ${region[0]}; ++${k}) {`);
      const g = checkedIndex(ctx, ei(k), null, dr, where, label, t.dims, 0);
      ctx.line("#pragma GCC ivdep");
      ctx.line(`for (int64_t ${x} = 0; ${x} < ${region[1]}; ++${x}) ${d}[${k} * ${tcols} + ${x}] = ${loadConv(type.dtype, `${s}[${g} * ${cdim(rowStride)} + ${o0} + ${x}]`)};`);
    } else {
      ctx.open(`for (int64_t ${k} = 0; ${k} < ${region[1]}; ++${k}) {`);
      const g = checkedIndex(ctx, ei(k), null, dc, where, label, t.dims, 1);
      ctx.line(`for (int64_t ${x} = 0; ${x} < ${region[0]}; ++${x}) ${d}[${x} * ${tcols} + ${k}] = ${loadConv(type.dtype, `${s}[(${o0} + ${x}) * ${cdim(rowStride)} + ${g}]`)};`);
    }
    ctx.close();
  },
});

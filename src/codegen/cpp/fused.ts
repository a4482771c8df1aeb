// Tile values of a kernel: materializing a tile expression into its planned scratch (a
// tile-stmt op's own loops, or one fused elementwise loop over the result's valid region) and
// the element access of fused elementwise expressions. Called by the kernel generator (generate.ts) with itself as `g`.
import type { Call, Expr, TileType, Var } from "../../ir/index.js";
import { exprType, isFloat, numel, tileElemBytes, typeStr } from "../../ir/index.js";
import type { ForwardedLoad } from "../../passes/index.js";
import { type ElemOperand, type KernelCtx, type TileDest, emitterFor, intLit, regionLoop, scratchCType, spanWhere } from "./emitters/index.js";
import { comment, describe, internal, tileDataBytes, tileLeaves } from "./cexpr.js";

/** What the tile code needs from the kernel generator besides KernelCtx. */
export interface TileHost extends KernelCtx {
  tileAddr(v: Var): number;
  /** Loads read straight from the tensor by the store that uses them (./forward.ts). */
  readonly forwarded: ReadonlyMap<number, ForwardedLoad>;
}

/** Compute a tile-valued expression into `dest`. */
export function materialize(g: TileHost, e: Expr, dest: TileDest & { addr: number | null }, label: string): void {
  if (e.kind === "var") {
    if (e.type.kind !== "tile") return internal(`'${e.name}' (${typeStr(e.type)}) used as a tile`, e.span);
    const src = g.tileAddr(e);
    if (src === dest.addr) return;
    const bytes = tileDataBytes(e.type);
    if (bytes !== tileDataBytes(dest.type)) internal(`copy of tile '${e.name}' (${typeStr(e.type)}) into ${typeStr(dest.type)}`, e.span);
    g.line(`std::memmove(${dest.ptr}, scratch + ${src}, ${bytes});  // ${comment(label)} = ${comment(e.name)}`);
    return;
  }
  if (e.kind !== "call" || e.type.kind !== "tile") return internal(`tile '${label}' assigned from a ${e.kind === "call" ? typeStr(e.type) : e.kind}`, e.span);
  const rt = e.type;
  if (rt.dtype !== dest.type.dtype || numel(rt.shape) !== numel(dest.type.shape)) {
    internal(`'${label}' (${typeStr(dest.type)}) assigned from ${e.op} of type ${typeStr(rt)}`, e.span);
  }
  const em = emitterFor(e.op, e.span);
  if (em.kind === "tile-stmt") {
    g.open(`{  // ${comment(label)} = ${comment(e.op)} (${comment(spanWhere(e.span))})`);
    em.emitInto(g, e, dest);
    g.close();
    return;
  }
  if (em.kind !== "elementwise") return internal(`op '${e.op}' does not produce a tile`, e.span);
  // One fused loop. Elementwise ops read element i and write element i, so writing in
  // place over an operand is fine when the result's elements are not wider than the
  // operand's; any other overlap computes into a temporary first.
  const bytes = tileDataBytes(dest.type);
  let overlap = false, unsafe = false;
  if (dest.addr !== null) {
    for (const leaf of tileLeaves(e)) {
      const a = g.tileAddr(leaf), lt = leaf.type as TileType;
      if (a < dest.addr + bytes && dest.addr < a + tileDataBytes(lt)) {
        overlap = true;
        if (!(a === dest.addr && tileElemBytes(dest.type.dtype) <= tileElemBytes(lt.dtype))) unsafe = true;
      }
    }
  }
  const restrict = !overlap || unsafe;
  g.open(`{  // ${comment(label)} = ${comment(describe(e))} (${comment(spanWhere(e.span))})`);
  let target = dest.ptr;
  if (unsafe) {
    target = g.fresh("tmp");
    g.line(`uint8_t* const ${target} = (uint8_t*)std::malloc(${bytes});`);
    g.line(`if (!${target}) { rt->fail(rt->ctx, "out of host memory for a temporary tile"); ${g.failExit} }`);
  }
  const elem = elementsOf(g, e, restrict);
  const S = scratchCType(dest.type.dtype);
  const d = g.fresh("d");
  g.line(`${S}* ${restrict ? "__restrict " : ""}${d} = (${S}*)(${target});`);
  // the valid region only (the whole tile without a validShape): the pad is neither read nor written
  const region = g.validOf(e);
  regionLoop(g, rt.shape as number[], region, (i) => `${d}[${i}] = ${elem(i)};`, restrict);
  if (unsafe) {
    if (region.every((x, ax) => x === rt.shape[ax])) g.line(`std::memcpy(${dest.ptr}, ${target}, ${bytes});`);
    else regionLoop(g, rt.shape as number[], region, (i) => `((${S}*)(${dest.ptr}))[${i}] = ${d}[${i}];`);
    g.line(`std::free(${target});`);
  }
  g.close();
}


/**
 * Declare the operands of a (fused) elementwise tile expression in the current block: each
 * planned tile once as a pointer into scratch, each scalar subexpression once as a const
 * local. Returns the element expression at a given linear index.
 */
export function elementsOf(g: TileHost, e: Expr, restrict: boolean): (idx: string) => string {
  const ptrs = new Map<number, string>();
  const scalars = new Map<Expr, string>();
  const visit = (x: Expr): void => {
    const t = x.kind === "const" ? null : x.type;
    if (t && t.kind === "tile") {
      if (x.kind === "var") {
        const fw = g.forwarded.get(x.id);
        if (fw && !ptrs.has(x.id)) {
          const p = g.fresh("x");
          const S = scratchCType(t.dtype);
          const off = fw.offsets.map((o, k) => `(${g.scalar(o).code}) * ${intLit(fw.strides[k])}`).join(" + ");
          g.line(`const ${S}* ${restrict ? "__restrict " : ""}${p} = (const ${S}*)${g.tensor(fw.tensor).ptr} + (${off});  // ${comment(x.name)} (forwarded load)`);
          ptrs.set(x.id, p);
        }
        if (!ptrs.has(x.id)) {
          const p = g.fresh("x");
          const S = scratchCType(t.dtype);
          g.line(`const ${S}* ${restrict ? "__restrict " : ""}${p} = (const ${S}*)(scratch + ${g.tileAddr(x)});  // ${comment(x.name)}`);
          ptrs.set(x.id, p);
        }
        return;
      }
      if (x.kind !== "call") return internal(`tile operand of kind ${x.kind}`, x.span);
      const em = emitterFor(x.op, x.span);
      if (em.kind !== "elementwise") {
        internal(`op '${x.op}' is nested inside an elementwise expression`, x.span, "assign its result to a planned tile first");
      }
      x.args.forEach(visit);
      return;
    }
    if (t && t.kind !== "scalar") return internal(`operand of type ${typeStr(t)} in an elementwise expression`, x.span);
    if (scalars.has(x)) return;
    const c = g.scalar(x);
    if (x.kind === "const" || x.kind === "var") { scalars.set(x, c.code); return; }
    const s = g.fresh("s");
    g.line(`const ${c.ctype} ${s} = ${c.code};`);
    scalars.set(x, s);
  };
  visit(e);
  const gen = (x: Expr, idx: string): string => {
    const sc = scalars.get(x);
    if (sc !== undefined) return sc;
    if (x.kind === "var") return `${ptrs.get(x.id)}[${idx}]`;
    const call = x as Call;
    const em = emitterFor(call.op, call.span);
    if (em.kind !== "elementwise") return internal(`op '${call.op}' in an elementwise expression`, call.span);
    const ops: ElemOperand[] = call.args.map((a) => {
      const at = exprType(a);
      if (at.kind === "tile") return { kind: "tile", code: gen(a, idx), dtype: at.dtype };
      if (at.kind === "scalar") {
        // a float constant that fp32 holds exactly, or an element of a float tile (FuseRows' folded
        // row broadcasts, t - read(max, [0, 0])): the op in float gives the same bits as in double
        const exactF32 = (a.kind === "const" && typeof a.value === "number" && Math.fround(a.value) === a.value) ||
          (a.kind === "call" && a.op === "tile.read" && exprType(a.args[0]).kind === "tile" && isFloat((exprType(a.args[0]) as TileType).dtype));
        return { kind: "scalar", code: gen(a, idx), dtype: at.dtype, exactF32 };
      }
      return internal(`operand of type ${typeStr(at)} in an elementwise expression`, call.span);
    });
    return em.emit(call, ops);
  };
  return (idx) => gen(e, idx);
}

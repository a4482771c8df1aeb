// The kernel of one InCore function on a SIMT target (cuda, webgpu): StmtWalker's walk
// (../cpp/walk.ts) with the SIMT hooks. A launch is a grid of blocks (CUDA thread blocks,
// WebGPU workgroups); a block is one tile task. Tiles live at their planned offsets in the
// block's scratch: block-shared memory when the kernel's tiles fit the language's shared limit,
// else a per-block slice of device memory. Every tile op is block-parallel (the block's
// threads split the elements; fused elementwise chains are one loop, 128-bit vectors where the
// language has them and the operands are aligned), followed by a barrier. Scalars and
// control flow are uniform: every thread computes them, so barriers stay in uniform control
// flow. The op formulas are ./ops.ts (tile ops) and the language's elementwise / scalar
// formulas; the language (./lang.ts) spells everything.
import type { Call, Expr, Func, Span, TensorType, TileType, Var } from "../../ir/index.js";
import { exprType, forEachStmt, numel, typeStr } from "../../ir/index.js";
import { StmtWalker } from "../cpp/walk.js";
import { comment, describe, internal, staticTensor, tileLeaves, type StaticTensor } from "../cpp/cexpr.js";
import { spanWhere, type CDim } from "../cpp/emitters/index.js";
import { forwardableLoads, type ForwardedLoad } from "../../passes/index.js";
import type { ElemArray, ElemPlan, FailSite, LoopOut, SimtCtx, SimtEmitter, SimtKernel, SimtLang, TileDest } from "./lang.js";

export class SimtKernelGen extends StmtWalker implements SimtKernel {
  readonly failExit = "return;";
  readonly scratchBytes: number;
  readonly global: boolean;
  /** Loads read straight from the tensor by the store that uses them (src/passes/forward_loads.ts). */
  private readonly forwarded: Map<number, ForwardedLoad>;
  protected readonly extents = null;
  protected readonly nullTensor: string;
  protected readonly annotateWhile = false;

  constructor(fn: Func, readonly symbol: string, private readonly sites: FailSite[], readonly lang: SimtLang) {
    super(fn, lang.syntax);
    this.nullTensor = lang.nullTensor;
    this.forwarded = forwardableLoads(fn);
    this.scratchBytes = this.planCheck();
    this.global = this.scratchBytes > lang.sharedLimit;
  }

  get func(): Func { return this.fn; }
  ind(k: number): void { this.indent += k; }
  sync(): void { this.line(this.lang.barrier); }
  site(s: FailSite): number { this.sites.push(s); return this.sites.length - 1; }
  push(s: string): void { this.out.push(s); }
  declareParamsFrom(slot: (i: number, tensor: boolean) => string, tensorDecl: (name: string, t: TensorType, raw: string) => string): void {
    this.declareParams(this.fn.params, slot, tensorDecl);
  }

  /** Scratch bytes per block: the end of the last tile the kernel materializes (forwarded loads take none). */
  private planCheck(): number {
    let end = 0;
    forEachStmt(this.fn.body, (s) => {
      const vs: Var[] = s.kind === "assign" ? [...s.targets] : s.kind === "for" ? [s.loopVar, ...s.iterArgs, ...s.results]
        : s.kind === "while" ? [...s.iterArgs, ...s.results] : s.kind === "if" ? [...s.results] : [];
      for (const v of vs) if (v.type.kind === "tile" && !this.forwarded.has(v.id)) end = Math.max(end, this.tileAddr(v) + this.tileBytes(v.type));
    });
    return Math.ceil(end / 64) * 64;
  }

  tileAddr(v: Var): number {
    const t = v.type as TileType;
    if (t.addr === null || t.addr === undefined || !Number.isInteger(t.addr) || t.addr < 0) {
      return internal(`tile '${v.name}' has no scratch address`, v.span, "memory planning (the plan-memory pass) must run before code generation");
    }
    return t.addr;
  }

  /** The kernel's source: the language's prologue, the body, the closing brace. */
  generate(): string {
    this.lang.prologue(this);
    this.stmts(this.fn.body, { yieldTo: null, loop: null });
    this.out.push("}", "");
    return this.out.join("\n");
  }

  // ---------------------------------------------------------------- hooks of the walk (../cpp/walk.ts)
  protected emitterOf(op: string, span: Span): SimtEmitter { return this.lang.emitterFor(op, span); }
  protected afterOp(): void { this.sync(); }
  protected checkTensor(t: TensorType, what: string, span: Span): TensorType { return staticTensor(t, what, span, this.lang.platform); }
  protected tensorDims(t: TensorType): CDim[] { return [...(t as StaticTensor).shape]; }
  protected tensorCType(t: TensorType): string { return this.lang.tensorLocalType(t.dtype); }
  protected tileBytes(t: TileType): number { return numel(t.shape) * this.lang.tileElemBytes(t.dtype); }
  protected scratchDest(v: Var) {
    return { ptr: this.lang.scratchAt(this.tileAddr(v)), addr: this.tileAddr(v), type: v.type as TileType };
  }

  protected assignMulti(targets: readonly Var[], value: Expr, span: Span): void {
    const em = value.kind === "call" ? this.lang.emitterFor(value.op, value.span) : null;
    if (em?.kind !== "tile-multi" || !targets.every((t) => t.type.kind === "tile")) return internal(`assignment of ${targets.length} targets in a kernel`, span);
    for (const st of em.steps(value as Call, targets)) {
      const t = targets[st.target];
      this.materialize(st.value, this.scratchDest(t), t.name);
    }
  }

  protected assignTile(t: Var, value: Expr): void {
    if (this.forwarded.has(t.id)) { this.line(`// ${comment(t.name)}: load forwarded into the store that uses it`); return; }
    return this.materialize(value, this.scratchDest(t), t.name);
  }

  protected moveTile(r: Var, ra: number, _a: Var, aa: number): void {
    this.lang.copyTile(this, this.lang.scratchAt(ra), this.lang.scratchAt(aa), this.tileBytes(r.type as TileType));
    this.sync();
  }

  /** Temporaries of the language (CUDA: device-heap blocks, WebGPU: scratch past the planned tiles). */
  protected tileTemporaries(dests: readonly Var[]): string[] {
    const tmps = dests.map((d) => this.lang.declareTemp(this, this.tileBytes(d.type as TileType)));
    this.sync();
    return tmps;
  }

  protected releaseTemporaries(dests: readonly Var[], tmps: readonly string[]): void {
    dests.forEach((d, k) => this.lang.copyTile(this, this.lang.scratchAt(this.tileAddr(d)), tmps[k], this.tileBytes(d.type as TileType)));
    this.sync();
    this.line(this.lang.freeTemps(tmps));
  }

  /** Compute a tile-valued expression into `dest`, then a barrier. */
  protected materialize(e: Expr, dest: TileDest & { addr: number | null }, label: string): void {
    const L = this.lang;
    if (e.kind === "var") {
      if (e.type.kind !== "tile") return internal(`'${e.name}' (${typeStr(e.type)}) used as a tile`, e.span);
      const src = this.tileAddr(e);
      if (src === dest.addr) return;
      const bytes = this.tileBytes(e.type);
      this.open(`{  // ${comment(label)} = ${comment(e.name)}`);
      if (dest.addr !== null && src < dest.addr + bytes && dest.addr < src + bytes) {
        // overlapping copy: read everything first
        internal(`copy of tile '${e.name}' onto an overlapping tile`, e.span);
      }
      L.copyTile(this, dest.ptr, L.scratchAt(src), bytes);
      this.close();
      this.sync();
      return;
    }
    if (e.kind !== "call" || e.type.kind !== "tile") return internal(`tile '${label}' assigned from a ${e.kind === "call" ? typeStr(e.type) : e.kind}`, e.span);
    const em = L.emitterFor(e.op, e.span);
    if (em.kind === "tile-stmt") {
      this.open(`{  // ${comment(label)} = ${comment(e.op)} (${comment(spanWhere(e.span))})`);
      em.emitInto(this, e, dest);
      this.close();
      this.sync();
      return;
    }
    if (em.kind !== "elementwise") return internal(`op '${e.op}' does not produce a tile`, e.span);
    const bytes = this.tileBytes(dest.type);
    let unsafe = false;
    if (dest.addr !== null) {
      for (const leaf of tileLeaves(e)) {
        const la = this.tileAddr(leaf), lt = leaf.type as TileType;
        if (la < dest.addr + bytes && dest.addr < la + this.tileBytes(lt)) {
          if (!(la === dest.addr && L.tileElemBytes(dest.type.dtype) === L.tileElemBytes(lt.dtype))) unsafe = true;
        }
      }
    }
    this.open(`{  // ${comment(label)} = ${comment(describe(e))} (${comment(spanWhere(e.span))})`);
    if (unsafe) {
      // element i of the result is wider than element i of an overlapping operand: compute
      // everything into a temporary first
      const tmp = L.declareTemp(this, bytes);
      this.sync();
      this.elementwiseLoop(e, { ptr: tmp, type: dest.type }, numel(dest.type.shape));
      this.sync();
      L.copyTile(this, dest.ptr, tmp, bytes);
      this.sync();
      this.line(L.freeTemp(tmp));
    } else {
      this.elementwiseLoop(e, dest, numel(dest.type.shape));
    }
    this.close();
    this.sync();
  }

  /** dest[i] = e[i] for i < n, block-parallel (vectors where the language has them and the operands allow). */
  elementwiseLoop(e: Expr, dest: TileDest, n: number): void {
    const plan = this.elements(e);
    const d = this.fresh("d");
    const arr = this.lang.tilePtr(this, d, dest.ptr, dest.type.dtype, true);
    vectorLoop(this, plan, n, [{ arr, value: (x) => x }]);
  }

  /**
   * Declare the operands of a (fused) elementwise tile expression in the current block and
   * return its plan: the leaves (planned tiles, forwarded loads' tensor windows) and the element at an index.
   */
  elements(e: Expr): ElemPlan {
    const L = this.lang;
    const leaves: { id: number; ptr: string; ctype: string; arr: ElemArray }[] = [];
    const ptrs = new Map<number, number>();
    const scalars = new Map<Expr, string>();
    const visit = (x: Expr): void => {
      const t = x.kind === "const" ? null : x.type;
      if (t && t.kind === "tile") {
        if (x.kind === "var") {
          if (!ptrs.has(x.id)) {
            const p = this.fresh("x");
            const fw = this.forwarded.get(x.id);
            let arr: ElemArray;
            if (fw) {
              const off = fw.offsets.map((o, k) => `(${this.toInt64(this.scalar(o))}) * ${L.int(fw.strides[k])}`).join(" + ");
              arr = L.tensorPtr(this, p, this.tensor(fw.tensor), off, false, true, `${comment(x.name)} (forwarded load)`);
            } else {
              arr = L.tilePtr(this, p, L.scratchAt(this.tileAddr(x)), t.dtype, false, comment(x.name));
            }
            ptrs.set(x.id, leaves.length);
            leaves.push({ id: x.id, ptr: p, ctype: arr.ctype, arr });
          }
          return;
        }
        if (x.kind !== "call") return internal(`tile operand of kind ${x.kind}`, x.span);
        const em = L.emitterFor(x.op, x.span);
        if (em.kind !== "elementwise") internal(`op '${x.op}' is nested inside an elementwise expression`, x.span, "assign its result to a planned tile first");
        x.args.forEach(visit);
        return;
      }
      if (t && t.kind !== "scalar") return internal(`operand of type ${typeStr(t)} in an elementwise expression`, x.span);
      if (scalars.has(x)) return;
      const c = this.scalar(x);
      if (x.kind === "const" || x.kind === "var") { scalars.set(x, c.code); return; }
      const s = this.fresh("s");
      this.line(this.syntax.constDecl(this.syntax.scalarType(c.ctype), s, c.code));
      scalars.set(x, s);
    };
    visit(e);
    const gen = (x: Expr, leaf: (k: number) => string): string => {
      const sc = scalars.get(x);
      if (sc !== undefined) return sc;
      if (x.kind === "var") return leaf(ptrs.get(x.id)!);
      const c = x as Call;
      const em = L.emitterFor(c.op, c.span);
      if (em.kind !== "elementwise") return internal(`op '${c.op}' in an elementwise expression`, c.span);
      return em.emit(c, c.args.map((a) => {
        const at = exprType(a);
        if (at.kind === "tile") return { kind: "tile" as const, code: gen(a, leaf), dtype: at.dtype };
        if (at.kind === "scalar") {
          const exactF32 = a.kind === "const" && typeof a.value === "number" && Math.fround(a.value) === a.value;
          return { kind: "scalar" as const, code: gen(a, leaf), dtype: at.dtype, exactF32 };
        }
        return internal(`operand of type ${typeStr(at)} in an elementwise expression`, c.span);
      }));
    };
    return {
      leaves,
      at: (idx) => gen(e, (k) => leaves[k].arr.at(idx)),
      withLeaves: (leaf) => gen(e, leaf),
    };
  }
}

/**
 * A block-parallel loop over i < n: out.arr[i] = out.value(element i of `plan`) for each
 * output, with the language's vector path first where it has one (CUDA: float4 / int4 loads
 * and stores when every pointer is 16-byte aligned at run time).
 */
export function vectorLoop(ctx: SimtCtx, plan: ElemPlan, n: number, outs: readonly LoopOut[]): void {
  const L = ctx.lang;
  const i = ctx.fresh("i");
  const vec = L.vectorOpen?.(ctx, plan, n, outs) ?? false;
  const elem = plan.at(i);
  ctx.line(L.loopBraced(L.threadLoop(i, String(n)), outs.map((o) => o.arr.set(i, o.value(elem))).join(" ")));
  if (vec) ctx.close();
}

/** dst[i] = conv(plan[i]) for i < n (the vector path first where the language has one). */
export function vectorLoopFlat(ctx: SimtCtx, plan: ElemPlan, n: number, dst: ElemArray, conv: (x: string) => string = (x) => x): void {
  const L = ctx.lang;
  const i = ctx.fresh("i");
  const vec = L.vectorOpen?.(ctx, plan, n, [{ arr: dst, value: conv }]) ?? false;
  ctx.line(L.loop1(L.threadLoop(i, String(n)), dst.set(i, conv(plan.at(i)))));
  if (vec) ctx.close();
}

// The C++ of one function of a lowered program (see generate.ts for the whole translation unit):
// SSA values become C++ locals; loop-carried values become mutable locals assigned from
// inits / yields / break / continue. The statement walk is StmtWalker's (./walk.ts, shared with
// the cuda generator); FnGen fills in the cpu's hooks: tiles live at their planned offsets in
// the per-core scratch arena (./fused.ts) with runtime valid-extent companions (./valid.ts),
// forwarded loads and in-place matmul operands are not materialized, tensor locals hold
// pointers (kernels) or addresses (orchestration) with dynamic extents, and orchestration
// calls become submits (./call.ts).
import type { Call, Expr, Func, Program, Span, TensorType, TileType, Var } from "../../ir/index.js";
import { dimSymbolsOf, forEachStmt, typeStr } from "../../ir/index.js";
import { forwardableLoads, forwardableReads, forwardableMatmulOperands, readsPad, unreadScratchTiles, type ForwardedLoad } from "../../passes/index.js";
import {
  type CDim, type KernelCtx, type TileDest, type Emitter,
  cstr, emitterFor, spanWhere, storageCType,
} from "./emitters/index.js";
import { materialize, elementsOf } from "./fused.js";
import { ValidExtents } from "./valid.js";
import { callStmt, type SubmitHook } from "./call.js";
import { comment, describe, ident, internal, tileDataBytes } from "./cexpr.js";
import { offsetsOf, windowCheck } from "./emitters/memory.js";
import { StmtWalker, cSyntax } from "./walk.js";

/** The C++ of one function: an InCore kernel (`k_<name>`) or the orchestration (`tspto_entry`). */
export class FnGen extends StmtWalker implements KernelCtx {
  /** Dynamic dimensions of the function's tensors -> the C++ locals holding their extents. */
  private readonly dimLocals = new Map<string, string>();
  readonly failExit: string;
  readonly scratchBytes: number = 0;
  /** Loads read straight from the tensor by the store that uses them (./forward.ts). */
  readonly forwarded: Map<number, ForwardedLoad>;
  /** tile.create results only ever passed as a reduction's scratch operand (./forward.ts): no zero fill. */
  private readonly unread: Set<number>;
  /** Matmul operands read straight from their tensor window (./forward.ts). */
  private readonly matmulFw: ReturnType<typeof forwardableMatmulOperands>;
  /** Companion locals of tiles with runtime valid extents (./valid.ts). */
  private readonly valid = new ValidExtents(this);
  protected readonly extents = this.valid;
  protected readonly nullTensor = "0";
  protected readonly annotateWhile = true;

  constructor(
    readonly program: Program,
    fn: Func,
    private readonly mode: "kernel" | "entry",
    readonly symbols: ReadonlyMap<string, string>,
    readonly submitHook?: SubmitHook,
  ) {
    super(fn, cSyntax("std::trunc"));
    this.failExit = mode === "kernel" ? "return;" : "{ (void)rt->wait_all(rt->ctx); return 1; }";
    this.forwarded = mode === "kernel" ? forwardableLoads(fn) : new Map();
    if (mode === "kernel") for (const [id, fw] of forwardableReads(fn, this.forwarded)) this.forwarded.set(id, fw);
    this.unread = mode === "kernel" ? unreadScratchTiles(fn) : new Set();
    this.matmulFw = mode === "kernel" ? forwardableMatmulOperands(fn) : { skipped: new Set(), operands: new Map(), transposed: new Set() };
    if (mode === "kernel") this.scratchBytes = this.planCheck();
  }

  validOf(e: Expr): (number | string)[] { return this.valid.of(e); }

  streamOut(e: Expr): boolean {
    if (this.mode !== "kernel" || e.kind !== "var") return false;
    const idx = this.fn.attrs.streamOut;
    return Array.isArray(idx) && this.fn.params.some((p, i) => p.var.id === e.id && idx.includes(i));
  }

  matmulOperand(e: Expr): { load: Call; trans: boolean } | null {
    const load = e.kind === "var" ? this.matmulFw.operands.get(e.id) : undefined;
    return load ? { load, trans: this.matmulFw.transposed.has((e as { id: number }).id) } : null;
  }

  // ---------------------------------------------------------------- scratch plan
  /**
   * Every tile variable has an address inside the function's scratch arena (except matmul
   * operands read straight from their tensor, which PlanMemory leaves without one on this
   * target: DeviceDescription.matmulOperandsInPlace); returns the arena size.
   */
  private planCheck(): number {
    let end = 0;
    const tiles: Var[] = [];
    forEachStmt(this.fn.body, (s) => {
      switch (s.kind) {
        case "assign": tiles.push(...s.targets); break;
        case "for": tiles.push(s.loopVar, ...s.iterArgs, ...s.results); break;
        case "while": tiles.push(...s.iterArgs, ...s.results); break;
        case "if": tiles.push(...s.results); break;
        default: break;
      }
    });
    for (const v of tiles) {
      if (v.type.kind !== "tile" || (this.matmulFw.skipped.has(v.id) && (v.type.addr === null || v.type.addr === undefined))) continue;
      end = Math.max(end, this.tileAddr(v) + tileDataBytes(v.type));
    }
    const attr = this.fn.attrs.scratchBytes;
    if (attr === undefined || attr === null) return Math.ceil(end / 64) * 64;
    if (typeof attr !== "number" || !Number.isInteger(attr) || attr < 0) return internal(`function '${this.fn.name}' has a bad scratchBytes attribute ${JSON.stringify(attr)}`, this.fn.span);
    if (end > attr) internal(`tiles of '${this.fn.name}' extend to byte ${end} of scratch, but its scratchBytes is ${attr}`, this.fn.span, "memory planning is inconsistent");
    return attr;
  }

  tileAddr(v: Var): number {
    const t = v.type as TileType;
    if (t.addr === null || t.addr === undefined) {
      return internal(`tile '${v.name}' has no scratch address`, v.span, "memory planning (the plan-memory pass) must run before code generation");
    }
    if (!Number.isInteger(t.addr) || t.addr < 0) return internal(`tile '${v.name}' has a bad scratch address ${t.addr}`, v.span);
    return t.addr;
  }

  // ---------------------------------------------------------------- functions
  generate(): string {
    const f = this.fn;
    const np = f.params.length;
    if (this.mode === "kernel") {
      this.out.push(`// InCore function '${comment(f.name)}' (${comment(spanWhere(f.span))})`);
      this.out.push(`extern "C" void ${this.symbols.get(f.name)}(const int64_t* args) {`);
    } else {
      this.out.push(`// orchestration '${comment(f.name)}' (${comment(spanWhere(f.span))})`);
      this.out.push(`extern "C" int tspto_entry(const TsptoRuntimeApi* rt, const int64_t* args) {`);
      this.line("(void)args;");
    }
    // dynamic dimensions: their extents follow the parameters' slots (dimSymbolsOf order)
    const symbols = dimSymbolsOf(f.params.map((p) => (p.var.type.kind === "tensor" ? p.var.type.shape : null)));
    symbols.forEach((d, k) => {
      const name = `dim_${ident(d)}_${this.n++}`;
      this.line(`const int64_t ${name} = args[${np + k}];  // dynamic dimension ${comment(JSON.stringify(d))}`);
      this.dimLocals.set(d, name);
    });
    this.declareParams(f.params, (i) => `args[${i}]`,
      this.mode === "kernel" ? StmtWalker.pointerParam : (name, _t, raw) => `const int64_t ${name} = ${raw};`);
    if (this.mode === "kernel") {
      this.line(`uint8_t* const scratch = (uint8_t*)(intptr_t)args[${np + symbols.length}];`);
      this.line(`const TsptoRuntimeApi* const rt = (const TsptoRuntimeApi*)(intptr_t)args[${np + symbols.length + 1}];`);
      this.line("(void)scratch; (void)rt;");
      if (this.scratchBytes > 0) {
        this.line(`if (__builtin_expect(rt->scratch_bytes < ${this.scratchBytes}, 0)) { tspto_scratch_fail(rt, ${cstr(f.name)}, ${this.scratchBytes}); return; }`);
        // a kernel that may read a partial tile's pad starts from zeroed scratch: a pad read
        // gives 0 or what this task wrote, never what an earlier launch left (docs/semantics.md)
        if (readsPad(f)) this.line(`std::memset(scratch, 0, ${this.scratchBytes});  // this kernel may read a pad`);
      }
    }
    this.stmts(f.body, { yieldTo: null, loop: null });
    if (this.mode === "entry" && f.body[f.body.length - 1]?.kind !== "return") this.line("return rt->wait_all(rt->ctx);");
    if (this.mode === "kernel" && f.body[f.body.length - 1]?.kind !== "return" && this.fenceLine()) this.line(this.fenceLine().trim());
    this.out.push("}", "");
    return this.out.join("\n");
  }

  // ---------------------------------------------------------------- hooks of the walk (./walk.ts)
  protected emitterOf(op: string, span: Span): Emitter { return emitterFor(op, span); }
  protected returnLine(): string { return this.mode === "kernel" ? `${this.fenceLine()}return;` : "return rt->wait_all(rt->ctx);"; }
  /** A kernel with streamed (non-temporal) stores orders them before it returns (the task's completion follows). */
  private fenceLine(): string { return Array.isArray(this.fn.attrs.streamOut) ? "tspto_stream_fence(); " : ""; }
  protected checkTensor(t: TensorType): TensorType { return t; }
  protected tensorDims(t: TensorType, span: Span): CDim[] { return this.dimsOf(t, span); }

  protected callEval(e: Call, span: Span): void {
    if (this.mode !== "entry") super.callEval(e, span);
    this.callStmt(e, []);
  }

  protected assignMulti(targets: readonly Var[], value: Expr, span: Span): void {
    if (value.kind === "call" && value.op === "call" && this.mode === "entry") return this.callStmt(value, targets);
    if (value.kind === "call" && this.mode === "kernel" && targets.every((t) => t.type.kind === "tile")) {
      const em = emitterFor(value.op, value.span);
      if (em.kind === "tile-multi") {
        this.open(`{  // [${targets.map((t) => comment(t.name)).join(", ")}] = ${comment(value.op)}(${comment(describe(value.args[0]))}) (${comment(spanWhere(value.span))})`);
        em.emitIntoAll(this, value, targets.map((t) => ({ ptr: `scratch + ${this.tileAddr(t)}`, type: t.type as TileType })));
        this.close();
        return;
      }
    }
    return internal(`assignment of ${targets.length} targets from ${value.kind === "call" ? value.op : value.kind}`, span);
  }

  protected assignTile(t: Var, value: Expr, span: Span): void {
    if (this.mode !== "kernel") internal(`tile '${t.name}' in the orchestration function`, span);
    this.valid.define(t, value);
    if (this.forwarded.has(t.id)) {
      const fw = this.forwarded.get(t.id)!;
      if (!fw.check) { this.line(`// ${comment(t.name)}: load forwarded into the store that uses it`); return; }
      // read in place by the statements that follow (forwardableReads): only the window check
      this.open(`{  // ${comment(t.name)}: load read in place by its readers; window check (${comment(spanWhere(fw.check.span))})`);
      const ten = this.tensor(fw.check.args[0]);
      windowCheck(this, "load", ten, offsetsOf(this, fw.check.args[1], ten.dims.length, "load", fw.check.span), this.validOf(fw.check), fw.check.span);
      this.close();
      return;
    }
    if (this.matmulFw.skipped.has(t.id)) { this.line(`// ${comment(t.name)}: read by the matmul straight from the tensor`); return; }
    if (this.unread.has(t.id) && value.kind === "call" && value.op === "tile.create") { this.line(`// ${comment(t.name)}: scratch tile nothing reads, not filled`); return; }
    return this.materialize(value, this.scratchDest(t), t.name);
  }

  /** Orchestration calls and tensor allocations (the orchestration's), before the walk's tensor statements. */
  protected bindTensorCall(t: Var, st: TensorType, value: Call, span: Span): boolean {
    if (value.op === "call" && this.mode === "entry") { this.callStmt(value, [t]); return true; }
    const em = emitterFor(value.op, value.span);
    if (em.kind !== "tensor-alloc") return false;
    if (this.mode !== "entry") internal(`op '${value.op}' in InCore function '${this.fn.name}'`, span);
    const name = this.newName(t);
    em.emit(this, value, name);
    this.bindTensor(t, name, st);
    return true;
  }

  protected tensorCType(t: TensorType): string {
    return this.mode === "kernel" ? `${storageCType(t.dtype)}*` : "int64_t";
  }

  protected moveTile(r: Var, ra: number, a: Var, aa: number): void {
    this.line(`std::memmove(scratch + ${ra}, scratch + ${aa}, ${tileDataBytes(r.type as TileType)});  // ${comment(r.name)} = ${comment(a.name)}`);
  }

  protected tileTemporaries(dests: readonly Var[]): string[] {
    return dests.map((d) => {
      const tmp = this.fresh("tmp");
      this.line(`uint8_t* const ${tmp} = (uint8_t*)std::malloc(${tileDataBytes(d.type as TileType)});`);
      this.line(`if (!${tmp}) { rt->fail(rt->ctx, "out of host memory for a temporary tile"); ${this.failExit} }`);
      return tmp;
    });
  }

  protected releaseTemporaries(dests: readonly Var[], tmps: readonly string[]): void {
    dests.forEach((d, k) => {
      this.line(`std::memcpy(scratch + ${this.tileAddr(d)}, ${tmps[k]}, ${tileDataBytes(d.type as TileType)});`);
      this.line(`std::free(${tmps[k]});`);
    });
  }

  // ---------------------------------------------------------------- tiles (./fused.ts)
  /** Compute a tile-valued expression into `dest`. */
  protected materialize(e: Expr, dest: TileDest & { addr: number | null }, label: string): void { materialize(this, e, dest, label); }

  elements(e: Expr): (idx: string) => string {
    return elementsOf(this, e, true);
  }

  // ---------------------------------------------------------------- values
  dimLocal(name: string): string | undefined { return this.dimLocals.get(name); }

  /** A tensor type's extents as C++ (./emitters/dims.ts): its dynamic dimensions must be the function's. */
  dimsOf(t: TensorType, span: Span): CDim[] {
    return t.shape.map((d) => {
      if (typeof d === "number") return d;
      const local = this.dimLocals.get(d);
      return local ?? internal(`dynamic dimension ${JSON.stringify(d)} of ${typeStr(t)} is not a dimension of a parameter of '${this.fn.name}'`, span);
    });
  }

  // ---------------------------------------------------------------- calls (orchestration, ./call.ts)
  private callStmt(call: Call, targets: readonly Var[]): void { callStmt(this, call, targets); }
}

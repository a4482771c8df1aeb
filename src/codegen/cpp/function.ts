// The C++ of one function of a lowered program (see generate.ts for the whole translation unit):
// SSA values become C++ locals; loop-carried values become mutable locals assigned from
// inits / yields / break / continue. Tiles live at their planned offsets in the per-core
// scratch arena (./fused.ts); orchestration calls become submits (./call.ts).
import type { Call, Expr, Func, Program, Span, Stmt, TensorType, TileType, Var } from "../../ir/index.js";
import { dimSymbolsOf, forEachStmt, isFloat, typeStr } from "../../ir/index.js";
import { forwardableLoads, forwardableReads, forwardableMatmulOperands, unreadScratchTiles, type ForwardedLoad } from "../../passes/index.js";
import {
  type CDim, type CExpr, type KernelCtx, type ScalarCType, type TensorRef, type TileDest,
  cstr, doubleLit, emitterFor, intLit, scalarCType, spanWhere, storageCType,
} from "./emitters/index.js";
import { materialize, elementsOf } from "./fused.js";
import { ValidExtents } from "./valid.js";
import { callStmt, type SubmitHook } from "./call.js";
import { comment, describe, ident, internal, tileDataBytes, tileLeaves, convertScalar, toInt64 } from "./cexpr.js";
import { offsetsOf, windowCheck } from "./emitters/memory.js";

interface Block {
  /** Where a Yield at the end of this block writes (If results, or loop iterArgs). */
  readonly yieldTo: readonly Var[] | null;
  /** The innermost loop's iterArgs (break / continue values). */
  readonly loop: readonly Var[] | null;
}

/** The C++ of one function: an InCore kernel (`k_<name>`) or the orchestration (`tspto_entry`). */
export class FnGen implements KernelCtx {
  private readonly out: string[] = [];
  private ind = 1;
  private n = 0;
  private readonly names = new Map<number, { name: string; ctype: ScalarCType }>();
  readonly tensors = new Map<number, TensorRef>();
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

  constructor(
    readonly program: Program,
    private readonly fn: Func,
    private readonly mode: "kernel" | "entry",
    readonly symbols: ReadonlyMap<string, string>,
    readonly submitHook?: SubmitHook,
  ) {
    this.failExit = mode === "kernel" ? "return;" : "{ (void)rt->wait_all(rt->ctx); return 1; }";
    this.forwarded = mode === "kernel" ? forwardableLoads(fn) : new Map();
    if (mode === "kernel") for (const [id, fw] of forwardableReads(fn, this.forwarded)) this.forwarded.set(id, fw);
    this.unread = mode === "kernel" ? unreadScratchTiles(fn) : new Set();
    this.matmulFw = mode === "kernel" ? forwardableMatmulOperands(fn) : { skipped: new Set(), operands: new Map() };
    if (mode === "kernel") this.scratchBytes = this.planCheck();
  }

  validOf(e: Expr): (number | string)[] { return this.valid.of(e); }

  matmulOperand(e: Expr): Call | null {
    return e.kind === "var" ? this.matmulFw.operands.get(e.id) ?? null : null;
  }

  // ---------------------------------------------------------------- output
  line(s: string): void { this.out.push(s.startsWith("#") ? s : "  ".repeat(this.ind) + s); }
  open(s: string): void { this.line(s); this.ind++; }
  close(s = "}"): void { this.ind--; this.line(s); }
  fresh(prefix: string): string { return `_${prefix}${this.n++}`; }
  private newName(v: Var): string { return `${ident(v.name)}_${this.n++}`; }

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
    f.params.forEach((p, i) => {
      const v = p.var;
      const t = v.type;
      if (t.kind === "tensor") {
        const st = t;
        const name = this.newName(v);
        if (this.mode === "kernel") {
          const T = storageCType(t.dtype);
          this.line(`${T}* const ${name} = (${T}*)(intptr_t)args[${i}];  // ${comment(v.name)}: ${comment(typeStr(t))}, ${p.dir}`);
        } else {
          this.line(`const int64_t ${name} = args[${i}];  // ${comment(v.name)}: ${comment(typeStr(t))}, ${p.dir}`);
        }
        this.tensors.set(v.id, { ptr: name, type: st, label: v.name, dims: this.dimsOf(st, v.span) });
      } else if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        const name = this.newName(v);
        const val = ct === "double" ? `tspto_bitsd(args[${i}])` : ct === "bool" ? `args[${i}] != 0` : `args[${i}]`;
        this.line(`const ${ct} ${name} = ${val};  // ${comment(v.name)}: ${t.dtype}`);
        this.names.set(v.id, { name, ctype: ct });
      } else {
        internal(`parameter '${v.name}' of '${f.name}' has type ${typeStr(t)}; parameters are tensors or scalars`, v.span);
      }
    });
    if (this.mode === "kernel") {
      this.line(`uint8_t* const scratch = (uint8_t*)(intptr_t)args[${np + symbols.length}];`);
      this.line(`const TsptoRuntimeApi* const rt = (const TsptoRuntimeApi*)(intptr_t)args[${np + symbols.length + 1}];`);
      this.line("(void)scratch; (void)rt;");
      if (this.scratchBytes > 0) {
        this.line(`if (__builtin_expect(rt->scratch_bytes < ${this.scratchBytes}, 0)) { tspto_scratch_fail(rt, ${cstr(f.name)}, ${this.scratchBytes}); return; }`);
      }
    }
    this.stmts(f.body, { yieldTo: null, loop: null });
    if (this.mode === "entry" && f.body[f.body.length - 1]?.kind !== "return") this.line("return rt->wait_all(rt->ctx);");
    this.out.push("}", "");
    return this.out.join("\n");
  }

  // ---------------------------------------------------------------- statements
  private stmts(ss: readonly Stmt[], b: Block): void {
    for (const s of ss) this.stmt(s, b);
  }

  private stmt(s: Stmt, b: Block): void {
    switch (s.kind) {
      case "assign": return this.assign(s.targets, s.value, s.span);
      case "eval": return this.evalStmt(s.expr, s.span);
      case "for": return this.forStmt(s, b);
      case "while": return this.whileStmt(s, b);
      case "if": return this.ifStmt(s, b);
      case "yield":
        if (!b.yieldTo) { if (s.values.length) internal("yield outside a loop or if with results", s.span); return; }
        if (s.values.length !== b.yieldTo.length) internal(`yield of ${s.values.length} values, expected ${b.yieldTo.length}`, s.span);
        return this.parallelAssign(b.yieldTo, s.values, s.span);
      case "break": case "continue":
        if (!b.loop) return internal(`${s.kind} outside a loop`, s.span);
        if (s.values.length) {
          if (s.values.length !== b.loop.length) internal(`${s.kind} carries ${s.values.length} values, the loop has ${b.loop.length}`, s.span);
          this.parallelAssign(b.loop, s.values, s.span);
        }
        this.line(`${s.kind};`);
        return;
      case "return":
        this.line(this.mode === "kernel" ? "return;" : "return rt->wait_all(rt->ctx);");
        return;
      case "scope":
        return internal("pl.at scope left in a lowered program", s.span, "outline scopes into InCore functions before code generation");
    }
  }

  private assign(targets: readonly Var[], value: Expr, span: Span): void {
    if (targets.length !== 1) {
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
    const t = targets[0];
    switch (t.type.kind) {
      case "scalar": {
        const c = this.scalar(value);
        const ct = scalarCType(t.type.dtype);
        const name = this.newName(t);
        this.line(`const ${ct} ${name} = ${convertScalar(c, ct)};`);
        this.names.set(t.id, { name, ctype: ct });
        return;
      }
      case "tile":
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
        return this.materialize(value, { ptr: `scratch + ${this.tileAddr(t)}`, addr: this.tileAddr(t), type: t.type }, t.name);
      case "tensor": {
        const st = t.type;
        if (value.kind === "var") { this.tensors.set(t.id, { ...this.tensor(value), type: st }); return; }
        if (value.kind === "call" && value.op === "call" && this.mode === "entry") return this.callStmt(value, targets);
        if (value.kind === "call") {
          const em = emitterFor(value.op, value.span);
          if (em.kind === "tensor-alloc") {
            if (this.mode !== "entry") internal(`op '${value.op}' in InCore function '${this.fn.name}'`, span);
            const name = this.newName(t);
            em.emit(this, value, name);
            this.tensors.set(t.id, { ptr: name, type: st, label: t.name, dims: this.dimsOf(st, t.span) });
            return;
          }
          if (em.kind === "tensor-stmt") {
            this.open(`{  // ${comment(value.op)} -> ${comment(t.name)} (${comment(spanWhere(value.span))})`);
            em.emit(this, value);
            this.close();
            this.tensors.set(t.id, { ...this.tensor(value.args[em.resultArg]), type: st });
            return;
          }
        }
        return internal(`cannot bind tensor '${t.name}' to ${value.kind === "call" ? `op '${value.op}'` : value.kind}`, span);
      }
      default:
        return internal(`assignment to '${t.name}' of type ${typeStr(t.type)}`, span);
    }
  }

  private evalStmt(e: Expr, span: Span): void {
    if (e.kind !== "call") return; // a bare value: nothing to do
    if (e.op === "call") {
      if (this.mode !== "entry") internal(`InCore function '${this.fn.name}' calls '${String(e.attrs.callee)}'`, span, "kernels cannot launch other kernels");
      return this.callStmt(e, []);
    }
    const em = emitterFor(e.op, e.span);
    if (em.kind === "tensor-stmt") {
      this.open(`{  // ${comment(e.op)} (${comment(spanWhere(e.span))})`);
      em.emit(this, e);
      this.close();
    } else if (em.kind === "scalar") {
      this.line(`(void)${this.scalar(e).code};`);
    }
    // a tile op whose result is unused has no effect
  }

  /** Declare loop-carried variables and assign their initial values. */
  private initCarried(vars: readonly Var[], inits: readonly Expr[], span: Span): void {
    if (vars.length !== inits.length) internal(`${vars.length} carried values but ${inits.length} initial values`, span);
    const tileVars: Var[] = [], tileInits: Expr[] = [];
    vars.forEach((v, k) => {
      const t = v.type;
      if (t.kind === "tile") { tileVars.push(v); tileInits.push(inits[k]); this.valid.declareCarried(v, null); return; }
      if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        const name = this.newName(v);
        this.line(`${ct} ${name} = ${convertScalar(this.scalar(inits[k]), ct)};`);
        this.names.set(v.id, { name, ctype: ct });
        return;
      }
      if (t.kind === "tensor") {
        const st = t;
        const src = this.tensor(inits[k]);
        const name = this.newName(v);
        this.line(`${this.tensorCType(st)} ${name} = ${src.ptr};`);
        this.tensors.set(v.id, { ptr: name, type: st, label: v.name, dims: this.dimsOf(st, v.span) });
        return;
      }
      internal(`carried value '${v.name}' of type ${typeStr(t)}`, v.span);
    });
    if (tileVars.length) this.parallelAssign(tileVars, tileInits, span);
  }

  /** After a loop: results take the iterArgs' final values. */
  private bindResults(results: readonly Var[], iterArgs: readonly Var[]): void {
    results.forEach((r, k) => {
      const a = iterArgs[k];
      if (r.type.kind === "tile") {
        this.valid.alias(r, a);
        const ra = this.tileAddr(r), aa = this.tileAddr(a);
        if (ra !== aa) this.line(`std::memmove(scratch + ${ra}, scratch + ${aa}, ${tileDataBytes(r.type)});  // ${comment(r.name)} = ${comment(a.name)}`);
      } else if (r.type.kind === "scalar") {
        this.names.set(r.id, this.names.get(a.id)!);
      } else if (r.type.kind === "tensor") {
        this.tensors.set(r.id, { ...this.tensors.get(a.id)!, label: r.name });
      }
    });
  }

  private forStmt(s: Extract<Stmt, { kind: "for" }>, b: Block): void {
    void b;
    const lo = this.fresh("lo"), hi = this.fresh("hi"), st = this.fresh("st");
    this.line(`// for ${comment(s.loopVar.name)} (${comment(spanWhere(s.span))})`);
    this.line(`const int64_t ${lo} = ${toInt64(this.scalar(s.start))}, ${hi} = ${toInt64(this.scalar(s.stop))}, ${st} = ${toInt64(this.scalar(s.step))};`);
    this.initCarried(s.iterArgs, s.inits, s.span);
    const i = this.newName(s.loopVar);
    this.names.set(s.loopVar.id, { name: i, ctype: "int64_t" });
    const step = s.step.kind === "const" ? Number(s.step.value) : null;
    const cond = step !== null ? (step > 0 ? `${i} < ${hi}` : step < 0 ? `${i} > ${hi}` : "false")
      : `(${st} > 0 ? ${i} < ${hi} : (${st} < 0 && ${i} > ${hi}))`;
    this.open(`for (int64_t ${i} = ${lo}; ${cond}; ${i} += ${st}) {`);
    this.stmts(s.body, { yieldTo: s.iterArgs, loop: s.iterArgs });
    this.close();
    this.bindResults(s.results, s.iterArgs);
  }

  private whileStmt(s: Extract<Stmt, { kind: "while" }>, b: Block): void {
    void b;
    this.line(`// while (${comment(spanWhere(s.span))})`);
    this.initCarried(s.iterArgs, s.inits, s.span);
    this.open("while (true) {");
    this.line(`if (!(${this.scalar(s.cond).code})) break;`);
    this.stmts(s.body, { yieldTo: s.iterArgs, loop: s.iterArgs });
    this.close();
    this.bindResults(s.results, s.iterArgs);
  }

  private ifStmt(s: Extract<Stmt, { kind: "if" }>, b: Block): void {
    for (const r of s.results) {
      const t = r.type;
      if (t.kind === "tile") { this.tileAddr(r); this.valid.declareCarried(r, null); continue; }
      const name = this.newName(r);
      if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        this.line(`${ct} ${name} = ${ct === "bool" ? "false" : ct === "double" ? "0.0" : "0"};`);
        this.names.set(r.id, { name, ctype: ct });
      } else if (t.kind === "tensor") {
        const st = t;
        this.line(`${this.tensorCType(st)} ${name} = 0;`);
        this.tensors.set(r.id, { ptr: name, type: st, label: r.name, dims: this.dimsOf(st, r.span) });
      } else {
        internal(`if result '${r.name}' of type ${typeStr(t)}`, r.span);
      }
    }
    this.open(`if (${this.scalar(s.cond).code}) {  // ${comment(spanWhere(s.span))}`);
    this.stmts(s.then, { yieldTo: s.results, loop: b.loop });
    if (s.else.length) {
      this.ind--;
      this.line("} else {");
      this.ind++;
      this.stmts(s.else, { yieldTo: s.results, loop: b.loop });
    }
    this.close();
  }

  private tensorCType(t: TensorType): string {
    return this.mode === "kernel" ? `${storageCType(t.dtype)}*` : "int64_t";
  }

  /** dests[k] = values[k] for all k at once (values are read before any dest is written). */
  private parallelAssign(dests: readonly Var[], values: readonly Expr[], span: Span): void {
    this.valid.assignCarried(dests, values);
    const tiles: { dest: Var; value: Expr }[] = [];
    const others: { dest: Var; code: string }[] = [];
    dests.forEach((d, k) => {
      const v = values[k];
      const t = d.type;
      if (t.kind === "tile") {
        if (v.kind === "var" && v.type.kind === "tile" && this.tileAddr(v) === this.tileAddr(d)) return;
        tiles.push({ dest: d, value: v });
      } else if (t.kind === "scalar") {
        const cur = this.names.get(d.id);
        if (!cur) return internal(`'${d.name}' assigned before its declaration`, span);
        const code = convertScalar(this.scalar(v), cur.ctype);
        if (code !== cur.name) others.push({ dest: d, code });
      } else if (t.kind === "tensor") {
        const cur = this.tensors.get(d.id);
        if (!cur) return internal(`'${d.name}' assigned before its declaration`, span);
        const code = this.tensor(v).ptr;
        if (code !== cur.ptr) others.push({ dest: d, code });
      } else {
        internal(`carried value '${d.name}' of type ${typeStr(t)}`, span);
      }
    });
    if (tiles.length) {
      const range = (v: Var): [number, number] => [this.tileAddr(v), this.tileAddr(v) + tileDataBytes(v.type as TileType)];
      const overlaps = (a: [number, number], c: [number, number]) => a[0] < c[1] && c[0] < a[1];
      const sources = tiles.map((p) => tileLeaves(p.value).map(range));
      const conflict = tiles.some((p, k) => tiles.some((_q, m) => m !== k && sources[m].some((r) => overlaps(range(p.dest), r))));
      if (!conflict) {
        for (const p of tiles) this.materialize(p.value, { ptr: `scratch + ${this.tileAddr(p.dest)}`, addr: this.tileAddr(p.dest), type: p.dest.type as TileType }, p.dest.name);
      } else {
        this.open("{  // carried tiles overlap their new values: go through temporaries");
        const tmps = tiles.map((p) => {
          const tmp = this.fresh("tmp");
          const bytes = tileDataBytes(p.dest.type as TileType);
          this.line(`uint8_t* const ${tmp} = (uint8_t*)std::malloc(${bytes});`);
          this.line(`if (!${tmp}) { rt->fail(rt->ctx, "out of host memory for a temporary tile"); ${this.failExit} }`);
          return { tmp, bytes };
        });
        tiles.forEach((p, k) => this.materialize(p.value, { ptr: tmps[k].tmp, addr: null, type: p.dest.type as TileType }, p.dest.name));
        tiles.forEach((p, k) => {
          this.line(`std::memcpy(scratch + ${this.tileAddr(p.dest)}, ${tmps[k].tmp}, ${tmps[k].bytes});`);
          this.line(`std::free(${tmps[k].tmp});`);
        });
        this.close();
      }
    }
    const name = (d: Var) => (d.type.kind === "scalar" ? this.names.get(d.id)!.name : this.tensors.get(d.id)!.ptr);
    if (others.length === 1) {
      this.line(`${name(others[0].dest)} = ${others[0].code};`);
    } else if (others.length > 1) {
      this.open("{");
      const tmps = others.map((p) => { const t = this.fresh("v"); this.line(`const auto ${t} = ${p.code};`); return t; });
      others.forEach((p, k) => this.line(`${name(p.dest)} = ${tmps[k]};`));
      this.close();
    }
  }

  // ---------------------------------------------------------------- tiles (./fused.ts)
  /** Compute a tile-valued expression into `dest`. */
  private materialize(e: Expr, dest: TileDest & { addr: number | null }, label: string): void { materialize(this, e, dest, label); }

  elements(e: Expr): (idx: string) => string {
    return elementsOf(this, e, true);
  }

  // ---------------------------------------------------------------- values
  scalar(e: Expr): CExpr {
    switch (e.kind) {
      case "const": {
        if (typeof e.value === "boolean" || e.dtype === "bool") return { code: e.value ? "true" : "false", ctype: "bool" };
        if (isFloat(e.dtype)) return { code: doubleLit(Number(e.value)), ctype: "double" };
        return { code: intLit(Number(e.value)), ctype: "int64_t" };
      }
      case "var": {
        const n = this.names.get(e.id);
        if (!n) return internal(`'${e.name}' (${typeStr(e.type)}) is not a scalar in scope here`, e.span);
        return { code: n.name, ctype: n.ctype };
      }
      case "call": {
        if (e.type.kind !== "scalar") return internal(`op '${e.op}' of type ${typeStr(e.type)} used as a scalar`, e.span);
        if (e.op === "call") return internal("a function call used as a scalar", e.span);
        const em = emitterFor(e.op, e.span);
        if (em.kind === "scalar-stmt") return em.emit(this, e);
        if (em.kind !== "scalar") return internal(`op '${e.op}' used as a scalar`, e.span);
        return em.emit(e, e.args.map((a) => this.scalar(a)));
      }
      case "list":
        return internal("a list used as a scalar", e.span);
    }
  }

  dimLocal(name: string): string | undefined { return this.dimLocals.get(name); }

  /** A tensor type's extents as C++ (./emitters/dims.ts): its dynamic dimensions must be the function's. */
  dimsOf(t: TensorType, span: Span): CDim[] {
    return t.shape.map((d) => {
      if (typeof d === "number") return d;
      const local = this.dimLocals.get(d);
      return local ?? internal(`dynamic dimension ${JSON.stringify(d)} of ${typeStr(t)} is not a dimension of a parameter of '${this.fn.name}'`, span);
    });
  }

  tensor(e: Expr): TensorRef {
    if (e.kind === "var") {
      const t = this.tensors.get(e.id);
      if (!t) return internal(`'${e.name}' (${typeStr(e.type)}) is not a tensor in scope here`, e.span);
      return t;
    }
    return internal(`tensor operand must be a variable, got ${e.kind === "call" ? `op '${e.op}'` : e.kind}`, e.span);
  }

  // ---------------------------------------------------------------- calls (orchestration, ./call.ts)
  private callStmt(call: Call, targets: readonly Var[]): void { callStmt(this, call, targets); }
}

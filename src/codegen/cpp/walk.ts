// The statement walk shared by the code generators: the cpu generator's FnGen (./function.ts:
// C++ kernels and the orchestration) and the cuda generator's KernelGen (../cuda/generate.ts:
// CUDA kernels) both extend StmtWalker. It owns the output (indented lines, fresh names), the
// C++ locals of scalars and tensors, and the walk: statement dispatch, for / while loops with
// their carried values, if with declared results, yield / break / continue as a parallel
// assignment of the carried values (tiles computed in place, or through temporaries when
// carried tiles overlap their new values), and scalar expressions. What differs per target is
// a hook: tile assignments and multi-target assignments, materializing a tile expression,
// moving a loop result's tile, the temporaries of overlapping carried tiles, the C types and
// extents of tensor locals, the op emitters, the valid-extent companions of tiles (cpu,
// `extents`), and what follows a block-level op (cuda: __syncthreads(), webgpu:
// workgroupBarrier()). The statements' spelling is the walker's WalkSyntax: C++ for the cpu and
// cuda generators (cSyntax), WGSL for the webgpu generator (src/codegen/wgsl/syntax.ts); the
// scalar kinds of CExpr keep their C++ names (int64_t / double / bool) and a syntax spells them
// (WGSL: i32 / f32 / bool).
import type { Call, Expr, Func, Param, Span, Stmt, TensorType, TileType, Var } from "../../ir/index.js";
import { isFloat, typeStr } from "../../ir/index.js";
import {
  type CDim, type CExpr, type ScalarCType, type ScalarEmitter, type TensorRef,
  doubleLit, intLit, scalarCType, spanWhere, storageCType,
} from "./emitters/index.js";
import { comment, convertScalar, ident, internal, tileDataBytes, tileLeaves } from "./cexpr.js";

/** How a walker spells its statements and scalar values (C++: cSyntax). */
export interface WalkSyntax {
  /** The type of a scalar kind. */
  scalarType(ct: ScalarCType): string;
  /** An immutable local: `const T name = value;`. */
  constDecl(type: string, name: string, value: string): string;
  /** A mutable local: `T name = value;`. */
  mutDecl(type: string, name: string, value: string): string;
  /** The zero of a scalar kind (an if result before a branch assigns it). */
  zero(ct: ScalarCType): string;
  /** Literals of the scalar kinds (a constant out of the target's range is a compile error naming it). */
  floatLit(v: number, span: Span): string;
  intLit(v: number, span: Span): string;
  boolLit(v: boolean): string;
  /** A scalar converted to another kind (float -> integer truncates toward zero, saturating). */
  convert(c: CExpr, to: ScalarCType): string;
  /** The three bounds of a for loop as integer locals, in one statement line. */
  loopBounds(names: readonly [string, string, string], values: readonly [string, string, string]): string;
  /** The head of a for loop over an integer index (`{` opens its body). */
  forOpen(i: string, lo: string, cond: string, step: string): string;
  /** The condition of a for loop whose step is only known at run time. */
  dynamicStepCond(i: string, hi: string, st: string): string;
  /** An endless loop's head, and its first statement: leave when cond is false. */
  readonly whileOpen: string;
  whileTest(cond: string): string;
  /** Evaluate and discard. */
  discard(code: string): string;
  /** A temporary of a parallel assignment (its type inferred). */
  tempDecl(name: string, code: string): string;
  /** The value of a scalar parameter from its raw slot (float scalars travel as bit patterns). */
  paramValue(ct: ScalarCType, raw: string): string;
}

/** C++ (cpu kernels, orchestrations and CUDA device code); `trunc`: the float truncation of float -> int64 conversions. */
export function cSyntax(trunc: string): WalkSyntax {
  return {
    scalarType: (ct) => ct,
    constDecl: (t, n, v) => `const ${t} ${n} = ${v};`,
    mutDecl: (t, n, v) => `${t} ${n} = ${v};`,
    zero: (ct) => (ct === "bool" ? "false" : ct === "double" ? "0.0" : "0"),
    floatLit: (v) => doubleLit(v),
    intLit: (v) => intLit(v),
    boolLit: (v) => (v ? "true" : "false"),
    convert: (c, to) => convertScalar(c, to, trunc),
    loopBounds: ([a, b, c], [x, y, z]) => `const int64_t ${a} = ${x}, ${b} = ${y}, ${c} = ${z};`,
    forOpen: (i, lo, cond, st) => `for (int64_t ${i} = ${lo}; ${cond}; ${i} += ${st}) {`,
    dynamicStepCond: (i, hi, st) => `(${st} > 0 ? ${i} < ${hi} : (${st} < 0 && ${i} > ${hi}))`,
    whileOpen: "while (true) {",
    whileTest: (cond) => `if (!(${cond})) break;`,
    discard: (code) => `(void)${code};`,
    tempDecl: (n, code) => `const auto ${n} = ${code};`,
    paramValue: (ct, raw) => (ct === "double" ? `tspto_bitsd(${raw})` : ct === "bool" ? `${raw} != 0` : raw),
  };
}

export interface Block {
  /** Where a Yield at the end of this block writes (If results, or loop iterArgs). */
  readonly yieldTo: readonly Var[] | null;
  /** The innermost loop's iterArgs (break / continue values). */
  readonly loop: readonly Var[] | null;
}

/** A tile destination with its scratch address (null: a temporary outside the scratch arena). */
export interface ScratchDest { readonly ptr: string; readonly addr: number | null; readonly type: TileType }

/** An op's emitter as the walk uses it; `Ctx` is the target's generator (its emitters' context). */
export type WalkEmitter<Ctx> =
  | { readonly kind: "tensor-stmt"; readonly resultArg: number; emit(ctx: Ctx, call: Call): void }
  | { readonly kind: "scalar-stmt"; emit(ctx: Ctx, call: Call): CExpr }
  | ScalarEmitter
  | { readonly kind: "elementwise" | "tile-stmt" | "tile-multi" | "tensor-alloc" };

/** The runtime valid extents that travel with carried tiles (cpu: ./valid.ts). */
export interface CarriedExtents {
  /** Mutable companions of a carried tile (loop iterArg, if result), initialised from `init` (or 0). */
  declareCarried(v: Var, init: Expr | null): void;
  /** dests[k]'s companions = values[k]'s extents, for all k at once. */
  assignCarried(dests: readonly Var[], values: readonly Expr[]): void;
  /** A loop result holds its iterArg's final extents. */
  alias(result: Var, from: Var): void;
}

/** The walk over a function's statements; a target's generator fills in the hooks. */
export abstract class StmtWalker {
  protected readonly out: string[] = [];
  protected indent = 1;
  protected n = 0;
  protected readonly names = new Map<number, { name: string; ctype: ScalarCType }>();
  readonly tensors = new Map<number, TensorRef>();
  abstract readonly failExit: string;

  constructor(protected readonly fn: Func, protected readonly syntax: WalkSyntax) {}

  // ---------------------------------------------------------------- output
  line(s: string): void { this.out.push(s.startsWith("#") ? s : "  ".repeat(this.indent) + s); }
  open(s: string): void { this.line(s); this.indent++; }
  close(s = "}"): void { this.indent--; this.line(s); }
  fresh(prefix: string): string { return `_${prefix}${this.n++}`; }
  protected newName(v: Var): string { return `${ident(v.name)}_${this.n++}`; }

  protected toInt64(c: CExpr): string { return this.syntax.convert(c, "int64_t"); }
  protected convert(c: CExpr, to: ScalarCType): string { return this.syntax.convert(c, to); }

  // ---------------------------------------------------------------- hooks
  /** The scratch address of a planned tile (an internal error when it has none). */
  abstract tileAddr(v: Var): number;
  /** The op's emitter on this target. */
  protected abstract emitterOf(op: string, span: Span): WalkEmitter<this>;
  /** Compute a tile-valued expression into `dest`. */
  protected abstract materialize(e: Expr, dest: ScratchDest, label: string): void;
  /** `t = value` for a single tile target. */
  protected abstract assignTile(t: Var, value: Expr, span: Span): void;
  /** An assignment of several targets. */
  protected abstract assignMulti(targets: readonly Var[], value: Expr, span: Span): void;
  /** Bind a tensor target to an op's result where the target has a way to (cpu: calls, allocations); false: no way. */
  protected bindTensorCall(_t: Var, _st: TensorType, _value: Call, _span: Span): boolean { return false; }
  /** A tensor type this target can hold in a local (cuda: static shapes only). */
  protected abstract checkTensor(t: TensorType, what: string, span: Span): TensorType;
  /** The C++ extents of a tensor local of type t. */
  protected abstract tensorDims(t: TensorType, span: Span): CDim[];
  /** The C++ type of a mutable tensor local (loop-carried, if result). */
  protected abstract tensorCType(t: TensorType): string;
  /** The value of an if result's tensor local before a branch assigns it. */
  protected abstract readonly nullTensor: string;
  /** Runtime valid extents carried with tiles, or null when the target has none. */
  protected abstract readonly extents: CarriedExtents | null;
  /** Whether a while loop is preceded by a comment with its location. */
  protected abstract readonly annotateWhile: boolean;
  /** After a block-level op (a tensor statement, a tile computed): nothing on cpu, a barrier on cuda. */
  protected afterOp(): void {}
  /** A loop result's tile at another address than its iterArg: copy the final value there. */
  protected abstract moveTile(r: Var, ra: number, a: Var, aa: number): void;
  /** Allocate a temporary per overlapping carried tile; returns their pointers. */
  protected abstract tileTemporaries(dests: readonly Var[]): string[];
  /** Copy the temporaries into the carried tiles and release them. */
  protected abstract releaseTemporaries(dests: readonly Var[], tmps: readonly string[]): void;
  /** Bytes a tile's data takes in scratch (webgpu: a 32-bit word per element). */
  protected tileBytes(t: TileType): number { return tileDataBytes(t); }
  /** The statement of a `return`. */
  protected returnLine(): string { return "return;"; }
  /** A call statement (`f(...)` with no results): kernels cannot launch kernels. */
  protected callEval(e: Call, span: Span): void {
    internal(`InCore function '${this.fn.name}' calls '${String(e.attrs.callee)}'`, span, "kernels cannot launch other kernels");
  }

  // ---------------------------------------------------------------- locals
  /** The scratch destination of a planned tile variable. */
  protected scratchDest(v: Var): ScratchDest {
    return { ptr: `scratch + ${this.tileAddr(v)}`, addr: this.tileAddr(v), type: v.type as TileType };
  }

  /** Record `v` as the tensor local `ptr`. */
  protected bindTensor(v: Var, ptr: string, t: TensorType): void {
    this.tensors.set(v.id, { ptr, type: t, label: v.name, dims: this.tensorDims(t, v.span) });
  }

  /**
   * Declare the function's parameters from their argument slots (`slot(i, tensor)`: the C++
   * of slot i, read for a tensor or a scalar); `tensorDecl` is the declaration of a tensor
   * parameter's local.
   */
  protected declareParams(params: readonly Param[], slot: (i: number, tensor: boolean) => string, tensorDecl: (name: string, t: TensorType, raw: string) => string): void {
    params.forEach((p, i) => {
      const v = p.var;
      const t = v.type;
      if (t.kind === "tensor") {
        const st = this.checkTensor(t, `parameter '${v.name}'`, v.span);
        const name = this.newName(v);
        this.line(`${tensorDecl(name, t, slot(i, true))}  // ${comment(v.name)}: ${comment(typeStr(t))}, ${p.dir}`);
        this.bindTensor(v, name, st);
      } else if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        const name = this.newName(v);
        this.line(`${this.syntax.constDecl(this.syntax.scalarType(ct), name, this.syntax.paramValue(ct, slot(i, false)))}  // ${comment(v.name)}: ${t.dtype}`);
        this.names.set(v.id, { name, ctype: ct });
      } else {
        internal(`parameter '${v.name}' of '${this.fn.name}' has type ${typeStr(t)}; parameters are tensors or scalars`, v.span);
      }
    });
  }

  /** A tensor parameter's local pointing at its data (`T* const p = (T*)(intptr_t)slot;`). */
  static pointerParam(name: string, t: TensorType, raw: string): string {
    const T = storageCType(t.dtype);
    return `${T}* const ${name} = (${T}*)(intptr_t)${raw};`;
  }

  // ---------------------------------------------------------------- statements
  protected stmts(ss: readonly Stmt[], b: Block): void {
    for (const s of ss) this.stmt(s, b);
  }

  protected stmt(s: Stmt, b: Block): void {
    switch (s.kind) {
      case "assign": return this.assign(s.targets, s.value, s.span);
      case "eval": return this.evalStmt(s.expr, s.span);
      case "for": return this.forStmt(s);
      case "while": return this.whileStmt(s);
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
        this.line(this.returnLine());
        return;
      case "scope":
        return internal("pl.at scope left in a lowered program", s.span, "outline scopes into InCore functions before code generation");
    }
  }

  private assign(targets: readonly Var[], value: Expr, span: Span): void {
    if (targets.length !== 1) return this.assignMulti(targets, value, span);
    const t = targets[0];
    switch (t.type.kind) {
      case "scalar": {
        const c = this.scalar(value);
        const ct = scalarCType(t.type.dtype);
        const name = this.newName(t);
        this.line(this.syntax.constDecl(this.syntax.scalarType(ct), name, this.convert(c, ct)));
        this.names.set(t.id, { name, ctype: ct });
        return;
      }
      case "tile":
        return this.assignTile(t, value, span);
      case "tensor": {
        const st = this.checkTensor(t.type, `'${t.name}'`, t.span);
        if (value.kind === "var") { this.tensors.set(t.id, { ...this.tensor(value), type: st }); return; }
        if (value.kind === "call") {
          if (this.bindTensorCall(t, st, value, span)) return;
          const em = this.emitterOf(value.op, value.span);
          if (em.kind === "tensor-stmt") {
            this.tensorStmt(em, value, ` -> ${comment(t.name)}`);
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

  /** A tensor statement in its own block (`{  // op<what> (where)`). */
  private tensorStmt(em: Extract<WalkEmitter<this>, { kind: "tensor-stmt" }>, e: Call, what: string): void {
    this.open(`{  // ${comment(e.op)}${what} (${comment(spanWhere(e.span))})`);
    em.emit(this, e);
    this.close();
    this.afterOp();
  }

  private evalStmt(e: Expr, span: Span): void {
    if (e.kind !== "call") return; // a bare value: nothing to do
    if (e.op === "call") return this.callEval(e, span);
    const em = this.emitterOf(e.op, e.span);
    if (em.kind === "tensor-stmt") {
      this.tensorStmt(em, e, "");
    } else if (em.kind === "scalar") {
      this.line(this.syntax.discard(this.scalar(e).code));
    }
    // a tile op whose result is unused has no effect
  }

  /** Declare loop-carried variables and assign their initial values. */
  private initCarried(vars: readonly Var[], inits: readonly Expr[], span: Span): void {
    if (vars.length !== inits.length) internal(`${vars.length} carried values but ${inits.length} initial values`, span);
    const tileVars: Var[] = [], tileInits: Expr[] = [];
    vars.forEach((v, k) => {
      const t = v.type;
      if (t.kind === "tile") { tileVars.push(v); tileInits.push(inits[k]); this.extents?.declareCarried(v, null); return; }
      if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        const name = this.newName(v);
        this.line(this.syntax.mutDecl(this.syntax.scalarType(ct), name, this.convert(this.scalar(inits[k]), ct)));
        this.names.set(v.id, { name, ctype: ct });
        return;
      }
      if (t.kind === "tensor") {
        const st = this.checkTensor(t, `'${v.name}'`, v.span);
        const src = this.tensor(inits[k]);
        const name = this.newName(v);
        this.line(this.syntax.mutDecl(this.tensorCType(st), name, src.ptr));
        this.bindTensor(v, name, st);
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
        this.extents?.alias(r, a);
        const ra = this.tileAddr(r), aa = this.tileAddr(a);
        if (ra !== aa) this.moveTile(r, ra, a, aa);
      } else if (r.type.kind === "scalar") {
        this.names.set(r.id, this.names.get(a.id)!);
      } else if (r.type.kind === "tensor") {
        this.tensors.set(r.id, { ...this.tensors.get(a.id)!, label: r.name });
      }
    });
  }

  private forStmt(s: Extract<Stmt, { kind: "for" }>): void {
    const lo = this.fresh("lo"), hi = this.fresh("hi"), st = this.fresh("st");
    this.line(`// for ${comment(s.loopVar.name)} (${comment(spanWhere(s.span))})`);
    this.line(this.syntax.loopBounds([lo, hi, st], [this.toInt64(this.scalar(s.start)), this.toInt64(this.scalar(s.stop)), this.toInt64(this.scalar(s.step))]));
    this.initCarried(s.iterArgs, s.inits, s.span);
    const i = this.newName(s.loopVar);
    this.names.set(s.loopVar.id, { name: i, ctype: "int64_t" });
    const step = s.step.kind === "const" ? Number(s.step.value) : null;
    const cond = step !== null ? (step > 0 ? `${i} < ${hi}` : step < 0 ? `${i} > ${hi}` : "false")
      : this.syntax.dynamicStepCond(i, hi, st);
    this.open(this.syntax.forOpen(i, lo, cond, st));
    this.stmts(s.body, { yieldTo: s.iterArgs, loop: s.iterArgs });
    this.close();
    this.bindResults(s.results, s.iterArgs);
  }

  private whileStmt(s: Extract<Stmt, { kind: "while" }>): void {
    if (this.annotateWhile) this.line(`// while (${comment(spanWhere(s.span))})`);
    this.initCarried(s.iterArgs, s.inits, s.span);
    this.open(this.syntax.whileOpen);
    this.line(this.syntax.whileTest(this.scalar(s.cond).code));
    this.stmts(s.body, { yieldTo: s.iterArgs, loop: s.iterArgs });
    this.close();
    this.bindResults(s.results, s.iterArgs);
  }

  private ifStmt(s: Extract<Stmt, { kind: "if" }>, b: Block): void {
    for (const r of s.results) {
      const t = r.type;
      if (t.kind === "tile") { this.tileAddr(r); this.extents?.declareCarried(r, null); continue; }
      const name = this.newName(r);
      if (t.kind === "scalar") {
        const ct = scalarCType(t.dtype);
        this.line(this.syntax.mutDecl(this.syntax.scalarType(ct), name, this.syntax.zero(ct)));
        this.names.set(r.id, { name, ctype: ct });
      } else if (t.kind === "tensor") {
        const st = this.checkTensor(t, `'${r.name}'`, r.span);
        this.line(this.syntax.mutDecl(this.tensorCType(st), name, this.nullTensor));
        this.bindTensor(r, name, st);
      } else {
        internal(`if result '${r.name}' of type ${typeStr(t)}`, r.span);
      }
    }
    this.open(`if (${this.scalar(s.cond).code}) {  // ${comment(spanWhere(s.span))}`);
    this.stmts(s.then, { yieldTo: s.results, loop: b.loop });
    if (s.else.length) {
      this.indent--;
      this.line("} else {");
      this.indent++;
      this.stmts(s.else, { yieldTo: s.results, loop: b.loop });
    }
    this.close();
  }

  /** dests[k] = values[k] for all k at once (values are read before any dest is written). */
  private parallelAssign(dests: readonly Var[], values: readonly Expr[], span: Span): void {
    if (dests.length !== values.length) internal(`${values.length} values for ${dests.length} carried variables`, span);
    this.extents?.assignCarried(dests, values);
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
        const code = this.convert(this.scalar(v), cur.ctype);
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
      const range = (v: Var): [number, number] => [this.tileAddr(v), this.tileAddr(v) + this.tileBytes(v.type as TileType)];
      const overlaps = (x: [number, number], y: [number, number]) => x[0] < y[1] && y[0] < x[1];
      const sources = tiles.map((p) => tileLeaves(p.value).map(range));
      const conflict = tiles.some((p, k) => tiles.some((_q, m) => m !== k && sources[m].some((r) => overlaps(range(p.dest), r))));
      if (!conflict) {
        for (const p of tiles) this.materialize(p.value, this.scratchDest(p.dest), p.dest.name);
      } else {
        // through temporaries (rare: carried tiles that swap places)
        this.open("{  // carried tiles overlap their new values: go through temporaries");
        const ds = tiles.map((p) => p.dest);
        const tmps = this.tileTemporaries(ds);
        tiles.forEach((p, k) => this.materialize(p.value, { ptr: tmps[k], addr: null, type: p.dest.type as TileType }, p.dest.name));
        this.releaseTemporaries(ds, tmps);
        this.close();
      }
    }
    const name = (d: Var) => (d.type.kind === "scalar" ? this.names.get(d.id)!.name : this.tensors.get(d.id)!.ptr);
    if (others.length === 1) {
      this.line(`${name(others[0].dest)} = ${others[0].code};`);
    } else if (others.length > 1) {
      this.open("{");
      const tmps = others.map((p) => { const t = this.fresh("v"); this.line(this.syntax.tempDecl(t, p.code)); return t; });
      others.forEach((p, k) => this.line(`${name(p.dest)} = ${tmps[k]};`));
      this.close();
    }
  }

  // ---------------------------------------------------------------- values
  scalar(e: Expr): CExpr {
    switch (e.kind) {
      case "const": {
        if (typeof e.value === "boolean" || e.dtype === "bool") return { code: this.syntax.boolLit(Boolean(e.value)), ctype: "bool" };
        if (isFloat(e.dtype)) return { code: this.syntax.floatLit(Number(e.value), e.span), ctype: "double" };
        return { code: this.syntax.intLit(Number(e.value), e.span), ctype: "int64_t" };
      }
      case "var": {
        const n = this.names.get(e.id);
        if (!n) return internal(`'${e.name}' (${typeStr(e.type)}) is not a scalar in scope here`, e.span);
        return { code: n.name, ctype: n.ctype };
      }
      case "call": {
        if (e.type.kind !== "scalar") return internal(`op '${e.op}' of type ${typeStr(e.type)} used as a scalar`, e.span);
        if (e.op === "call") return internal("a function call used as a scalar", e.span);
        const em = this.emitterOf(e.op, e.span);
        if (em.kind === "scalar-stmt") return em.emit(this, e);
        if (em.kind !== "scalar") return internal(`op '${e.op}' used as a scalar`, e.span);
        return em.emit(e, e.args.map((a) => this.scalar(a)));
      }
      case "list":
        return internal("a list used as a scalar", e.span);
    }
  }

  tensor(e: Expr): TensorRef {
    if (e.kind === "var") {
      const t = this.tensors.get(e.id);
      if (!t) return internal(`'${e.name}' (${typeStr(e.type)}) is not a tensor in scope here`, e.span);
      return t;
    }
    return internal(`tensor operand must be a variable, got ${e.kind === "call" ? `op '${e.op}'` : e.kind}`, e.span);
  }
}

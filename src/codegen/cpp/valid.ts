// Runtime valid extents in the C++ of a kernel. Every tile variable whose type has a runtime
// valid extent (validShape ["?", 64]) has companion int64 locals holding its extents, set where
// the variable is defined: for an op's own extents (load's validShape: [n - i, 64]) the
// evaluated expressions, checked against the tile shape (rt->fail with the op's location);
// for any other op the extents of the operand axis each result axis comes from (src/ir/valid.ts
// reads that off the op's registry `infer`: no per-op table). Loop-carried tiles and if results
// carry mutable companions assigned with their values. Store, fillpad and load loops read them
// through KernelCtx.validOf.
import { exprType, hasRuntimeValid, validRangeMessage, validSources, type Call, type Expr, type TileType, type Var } from "../../ir/index.js";
import { cstr, spanWhere, type KernelCtx } from "./emitters/index.js";
import { ident, internal, toInt64 } from "./cexpr.js";

/** One extent: a number (static) or a C++ int64 expression (a local). */
export type Extent = number | string;

export class ValidExtents {
  private readonly vars = new Map<number, Extent[]>();
  private readonly calls = new WeakMap<Call, Extent[]>();
  constructor(private readonly g: KernelCtx) {}

  /** Does this tile value have runtime extents (and so companions)? */
  static runtime(t: { readonly type: unknown } | Expr): boolean {
    const ty = (t as Expr).kind === "const" ? null : (t as { type: TileType }).type;
    return !!ty && ty.kind === "tile" && hasRuntimeValid(ty);
  }

  /** The valid extents of a tile-valued expression, per axis (the whole tile when it has no validShape). */
  of(e: Expr): Extent[] {
    const t = exprType(e);
    if (t.kind !== "tile") return internal(`validShape of a non-tile ${e.kind}`, e.kind === "const" ? undefined : e.span);
    if (!t.validShape) return [...t.shape];
    if (!hasRuntimeValid(t)) return [...(t.validShape as number[])];
    if (e.kind === "var") {
      const v = this.vars.get(e.id);
      return v ?? internal(`tile '${e.name}' has a runtime validShape but no extents in scope`, e.span);
    }
    if (e.kind !== "call") return internal(`runtime validShape of a ${e.kind}`, e.span);
    const cached = this.calls.get(e);
    if (cached) return cached;
    const sources = validSources(e)!;
    const own: { ax: number; name: string }[] = [];
    const out = sources.map((s, ax): Extent => {
      if (s.kind === "static") return s.n;
      if (s.kind === "operand") return this.of(e.args[s.arg])[s.axis];
      const name = this.g.fresh("valid");
      this.g.line(`const int64_t ${name} = ${toInt64(this.g.scalar(s.expr))};`);
      own.push({ ax, name });
      return name;
    });
    // an op's own runtime extent must fit its tile dimension: the same message as the interpreter
    const shape = (e.type as TileType).shape;
    const fmt = out.map((x) => (typeof x === "number" ? String(x) : "%lld"));
    const args = out.filter((x): x is string => typeof x === "string").map((x) => `(long long)${x}`);
    for (const { ax, name } of own) {
      this.g.open(`if (__builtin_expect(${name} < 0 || ${name} > ${shape[ax]}, 0)) {`);
      this.g.line("char _msg[512];");
      this.g.line(`std::snprintf(_msg, sizeof _msg, ${cstr(`${spanWhere(e.span).replace(/%/g, "%%")}: ${validRangeMessage(e, fmt, shape, ax)}`)}, ${args.join(", ")});`);
      this.g.line(`rt->fail(rt->ctx, _msg);`);
      this.g.line(this.g.failExit);
      this.g.close();
    }
    this.calls.set(e, out);
    return out;
  }

  /** A tile variable bound to `value`: its extents are the value's (evaluated here, before the value's own block). */
  define(v: Var, value: Expr): void {
    if (!ValidExtents.runtime(v)) return;
    this.vars.set(v.id, this.of(value));
  }

  /** Mutable companions of a carried tile (loop iterArg, if result), initialised from `init` (or 0). */
  declareCarried(v: Var, init: Expr | null): void {
    if (!ValidExtents.runtime(v)) return;
    const src = init ? this.of(init) : null;
    const t = v.type as TileType;
    this.vars.set(v.id, t.validShape!.map((d, ax): Extent => {
      if (typeof d === "number") return d;
      const name = `${ident(v.name)}_valid${ax}_${this.g.fresh("")}`;
      this.g.line(`int64_t ${name} = ${src ? src[ax] : 0};`);
      return name;
    }));
  }

  /** dests[k]'s companions = values[k]'s extents, for all k at once (every value read before any write). */
  assignCarried(dests: readonly Var[], values: readonly Expr[]): void {
    const pairs: { dest: string; value: string }[] = [];
    dests.forEach((d, k) => {
      if (!ValidExtents.runtime(d)) return;
      const to = this.vars.get(d.id) ?? internal(`carried tile '${d.name}' has no extents declared`, d.span);
      const from = this.of(values[k]);
      to.forEach((x, ax) => { if (typeof x === "string" && String(from[ax]) !== x) pairs.push({ dest: x, value: String(from[ax]) }); });
    });
    if (pairs.length === 0) return;
    if (pairs.length === 1) { this.g.line(`${pairs[0].dest} = ${pairs[0].value};`); return; }
    this.g.open("{");
    const tmps = pairs.map((p) => { const t = this.g.fresh("ve"); this.g.line(`const int64_t ${t} = ${p.value};`); return t; });
    pairs.forEach((p, k) => this.g.line(`${p.dest} = ${tmps[k]};`));
    this.g.close();
  }

  /** A loop result holds its iterArg's final extents. */
  alias(result: Var, from: Var): void {
    if (!ValidExtents.runtime(result)) return;
    const v = this.vars.get(from.id);
    if (v) this.vars.set(result.id, v);
  }
}


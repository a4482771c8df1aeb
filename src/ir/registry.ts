// The op registry: one entry per op. An entry says how the op is spelled in kernel source
// (`pl.<name>(...)` and how each source argument maps to IR operands/attributes), where it is
// legal, how its result type is inferred, which tensor operands it reads/writes, and its
// reference semantics (what the interpreter runs). Code generators add emitters keyed by
// `name`; nothing else needs editing to add an op.
import type { Attrs, AttrValue, Expr, ListExpr, Span } from "./nodes.js";
import { exprType, mkCall, mkList, NO_SPAN } from "./nodes.js";
import { RUNTIME_DIM, type Dim, type Type } from "./types.js";
import { TsptoTypeError } from "./errors.js";
import type { Value, EvalEnv } from "./values.js";

/** How one source argument of `pl.<op>(...)` becomes part of the IR Call. */
export type ParamKind =
  | "value"   // an expression operand (tile, tensor or scalar) -> args
  | "values"  // an array literal of scalar expressions (offsets)  -> args (as a ListExpr)
  | "ints"    // an array literal of constant integers (shapes)     -> attrs[name]
  | "shape"   // an array literal of constant integers and dynamic dimension names ("S": a name of
              // the entry's shape annotations), a tensor shape           -> attrs[name]
  | "dtype"   // a dtype ("float32" / pl.FP32)                       -> attrs[name]
  | "mem"     // a memory space (pl.Mem.Vec)                         -> attrs[name]
  | "number"  // a constant number                                  -> attrs[name]
  | "string"  // a string literal                                   -> attrs[name]
  | "bool"    // a constant boolean                                 -> attrs[name]
  | "dims"    // (options only) an array of extents, each a constant integer or a runtime integer
              // scalar: attrs[key] holds the constants and RUNTIME_DIM ("?") where an extent is
              // only known at run time; those runtime extents, in order, are one ListExpr operand
              // appended after the op's other operands (see dimsOperand / runtimeDims)
  | "options";// an object literal whose keys are listed in `options` -> attrs[key]

export interface OpParam {
  readonly name: string;
  readonly kind: ParamKind;
  readonly optional?: boolean;
  /** For kind "options": each allowed key and its kind. */
  readonly options?: Readonly<Record<string, Exclude<ParamKind, "options" | "value">>>;
}

/**
 * Where an op may appear: tile/tensor ops only on chip (InCore or inside pl.at), scalar ops
 * anywhere, orchestration ops (createTensor) only in an entry outside pl.at.
 */
export type OpLevel = "tile" | "tensor" | "scalar" | "orchestration";

export interface InferCtx {
  readonly op: OpDef;
  readonly args: readonly Expr[];
  readonly argTypes: readonly Type[];
  readonly attrs: Attrs;
  readonly span: Span;
  /** Throw a TsptoTypeError located at the call. */
  fail(message: string, hint?: string): never;
}

export interface Effects {
  /** Indices into args of tensors read / written. */
  readonly reads: readonly number[];
  readonly writes: readonly number[];
}

export interface OpDef {
  /** IR name: "tile.add". */
  readonly name: string;
  /** `pl.<pl>` spelling in kernel source (ops sharing it are chosen by the first operand's kind). */
  readonly pl?: string;
  /** For scalar ops printed as TypeScript operators: the operator ("+", "<", "!", ...). */
  readonly operator?: string;
  /** For scalar ops printed as `Math.<fn>(...)`. */
  readonly mathFn?: string;
  readonly level: OpLevel;
  readonly params: readonly OpParam[];
  /** No side effects (dead-code elimination may drop unused results). */
  readonly pure: boolean;
  /**
   * Whether a tile op computes element i of its result from element i of its operands only
   * (so code generation may fuse it into a consumer's loop). Defaults to: pure tile ops
   * without shape/offset/memory attributes whose operands are tiles and scalars. Reductions,
   * broadcasts, matmul and other ops that move elements around say `false`.
   */
  readonly fusable?: boolean;
  readonly infer: (ctx: InferCtx) => Type;
  readonly effects?: (args: readonly Expr[], attrs: Attrs) => Effects;
  /** Reference semantics. Tensors are mutated in place through env. */
  readonly evaluate: (args: readonly Value[], attrs: Attrs, env: EvalEnv, call: { readonly type: Type; readonly span: Span }) => Value;
  /** A compile-time value of the call when it is known from its operands' types (pl.dim of a static axis); simplify folds it. */
  readonly fold?: (args: readonly Expr[], attrs: Attrs) => number | undefined;
  /** Optional static checks that need constant operands (e.g. window bounds). */
  readonly check?: (ctx: InferCtx) => void;
  /** One-line description for docs (the JSDoc of the generated `pl` declaration). */
  readonly doc: string;
  /**
   * Tensor-level ops: the tile op that computes one tile of the result (tensor-to-tile maps
   * each tensor op of an expression to it). Defaults to `tile.<name without "tensor.">`.
   */
  readonly tileOp?: string;
  /**
   * Tensor-level ops whose tile is an expression of several tile ops (rowExpandExpdif on
   * tensors: exp(t - v)), or no op at all (fillpad and broadcastTo of a tensor: the operand's
   * tile, already stretched to the tile shape), or a tile made from nothing (full): builds it
   * from the operands' tiles; `at` is the tile being computed (its shape and, for a partial
   * edge tile, its validShape). Takes precedence over tileOp.
   */
  readonly tileExpr?: (args: readonly Expr[], attrs: Attrs, build: (op: string, args: readonly Expr[], attrs?: Attrs) => Expr, at: TileAt) => Expr;
  /**
   * The TypeScript signatures of `pl.<pl>` (each the text after the function name, overloads in
   * order), from which src/tools/gen_ops.ts writes src/dsl/ops.generated.ts. One op per `pl`
   * spelling carries it (usually the tile-level one).
   */
  readonly decl?: readonly string[];
  /** The pass that rewrites this op into other ops before code generation (targets need no emitter for it). */
  readonly loweredBy?: string;
  /** The README op table row this op belongs to (ops sharing `key` share one row). */
  readonly row?: OpRow;
  /**
   * What one call costs (the roofline's counts, src/ir/cost.ts): its arithmetic and the bytes it
   * moves between tensors (global memory) and tiles. Absent on a tile op that is elementwise
   * (fusable): one op per valid element of its result. Every other tile op declares it (a test
   * keeps the registry complete); `NO_COST` for pure data movement between tiles.
   */
  readonly cost?: (c: CostCtx) => OpCost;
}

/** The operands of one call as the cost rule sees them: extents resolved for this launch. */
export interface CostCtx {
  readonly args: readonly Expr[];
  readonly attrs: Attrs;
  readonly type: Type;
  /** The valid extents of the result (a tile: its validShape, resolved; a tensor: its shape); [] for a scalar or nothing. */
  readonly extents: readonly number[];
  /** Operand `i`'s extents (a tile's valid region, a tensor's shape), null for a scalar or a list. */
  operand(i: number): readonly number[] | null;
}

/** The unit that does an op's arithmetic: the vector (FMA) pipes, or a dot-product unit (bf16 pairs, int8 quads). */
export type CostUnit = "vector" | "dotBf16" | "dotInt8";

/** One call's cost: arithmetic ops (`flops`, done by `unit`, default "vector") and bytes read from / written to tensors. */
export interface OpCost {
  readonly flops?: number;
  readonly unit?: CostUnit;
  readonly readBytes?: number;
  readonly writeBytes?: number;
}

/** The cost rule of an op that only moves data between tiles (or does nothing countable). */
export const NO_COST = (): OpCost => ({});

/**
 * The tile a tensor-level op's `tileExpr` computes: its shape, (a partial edge tile) its
 * validShape, and its offsets in the tensor the op computes (int64 expressions; iota adds them).
 */
export interface TileAt { readonly shape: readonly number[]; readonly validShape: readonly number[] | null; readonly offsets?: readonly Expr[] }

/** A row of the README op table: `call` (the spelling), `does` (what it computes). */
export interface OpRow { readonly key: string; readonly call: string; readonly does: string }

const ops = new Map<string, OpDef>();
const byPl = new Map<string, OpDef[]>();
const byOperator = new Map<string, OpDef>();
const byMath = new Map<string, OpDef>();

export function registerOp(def: OpDef): OpDef {
  if (ops.has(def.name)) throw new Error(`internal: op '${def.name}' registered twice`);
  ops.set(def.name, def);
  if (def.pl) {
    const list = byPl.get(def.pl) ?? [];
    list.push(def);
    byPl.set(def.pl, list);
  }
  if (def.operator) byOperator.set(`${def.operator}/${def.params.length}`, def);
  if (def.mathFn) byMath.set(def.mathFn, def);
  return def;
}

export function getOp(name: string): OpDef {
  const d = ops.get(name);
  if (!d) throw new Error(`internal: unknown op '${name}'`);
  return d;
}
export const hasOp = (name: string) => ops.has(name);
export const allOps = (): OpDef[] => [...ops.values()];
/** Every `pl.*` op spelling. */
export const plOpNames = (): string[] => [...byPl.keys()];
export const opsForPl = (pl: string): readonly OpDef[] => byPl.get(pl) ?? [];
export const opForOperator = (operator: string, arity: number): OpDef | undefined => byOperator.get(`${operator}/${arity}`);
export const opForMath = (fn: string): OpDef | undefined => byMath.get(fn);

/**
 * Pick the op for `pl.<name>` given the first operand's type: a tile operand selects the
 * tile-level op, a tensor the tensor-level op, a scalar the scalar op; ops without a value
 * operand (createTile, full) have a single entry.
 */
export function resolvePlOp(pl: string, firstValueType: Type | undefined, otherValueTypes: readonly Type[] = []): OpDef | undefined {
  const cands = opsForPl(pl);
  if (cands.length <= 1) return cands[0];
  // a number as the first operand (pl.sub(1.0, x)), or one that takes its level from its use
  // (pl.full: undefined here): the first tile/tensor operand decides
  const decider = !firstValueType || firstValueType.kind === "scalar" ? (otherValueTypes.find((t) => t.kind === "tile" || t.kind === "tensor") ?? firstValueType) : firstValueType;
  const want = decider?.kind === "tensor" ? "tensor" : decider?.kind === "scalar" ? "scalar" : "tile";
  return cands.find((c) => c.level === want) ?? cands.find((c) => c.level === "tile") ?? cands[0];
}

/**
 * Whether a call takes its level (tile or tensor) from where it is used: an op without value
 * operands (pl.full, pl.iota) that has both a tile and a tensor form, or an op with both forms
 * whose tile/tensor operands all take their level from use too (`pl.cmp(pl.iota(s, 1, INT32),
 * pl.iota(s, 0, INT32), "le")`, the rest numbers). Written as an operand of a tensor-level op
 * (or as pl.assign's value) it is the tensor form, else the tile form.
 */
export function levelFromUse(e: Expr): boolean {
  if (e.kind !== "call" || e.op === "call" || !ops.has(e.op)) return false;
  const op = ops.get(e.op)!;
  // a dynamic dimension in its shape (pl.iota([S, "L"], ...)) makes it a tensor, whatever its use
  if (e.type.kind === "tensor" && e.type.shape.some((d) => typeof d === "string")) return false;
  if (!op.pl || !opsForPl(op.pl).some((o) => o.level === "tensor") || !opsForPl(op.pl).some((o) => o.level === "tile")) return false;
  if (op.params.every((p) => p.kind !== "value")) return true;
  const scalarish = (a: Expr) => a.kind === "const" || a.kind === "list" || a.type.kind === "scalar";
  return e.args.some(levelFromUse) && e.args.every((a) => scalarish(a) || levelFromUse(a));
}

/** A level-from-use call (levelFromUse) as its `level` form (its operands too): same attributes, types inferred again. */
export function atLevel(e: Expr, level: OpLevel): Expr {
  if (e.kind !== "call" || !levelFromUse(e)) return e;
  const op = opsForPl(ops.get(e.op)!.pl!).find((o) => o.level === level);
  if (!op || op.name === e.op) return e;
  const args = e.args.map((a) => atLevel(a, level));
  return mkCall(op.name, args, e.attrs, inferCall(op, args, e.attrs, e.span), e.span);
}

/** Type-check and build the result type of `op(args, attrs)`; throws TsptoTypeError located at span. */
export function inferCall(op: OpDef, args: readonly Expr[], attrs: Attrs, span: Span): Type {
  const ctx: InferCtx = {
    op, args, attrs, span, argTypes: args.map(exprType),
    fail(message: string, hint?: string): never {
      throw new TsptoTypeError("E_TYPE", `pl.${op.pl ?? op.name}: ${message}`, span, hint);
    },
  };
  const t = op.infer(ctx);
  op.check?.(ctx);
  return t;
}

/** The tile op computing one tile of a tensor-level op (its `tileOp`, else `tile.<name>`). */
export const tileOpOf = (op: OpDef): string => op.tileOp ?? `tile.${op.name.slice(op.name.indexOf(".") + 1)}`;

export const effectsOf = (op: OpDef, args: readonly Expr[], attrs: Attrs): Effects =>
  op.effects ? op.effects(args, attrs) : { reads: [], writes: [] };

export type { AttrValue };

// ---------------------------------------------------------------- runtime extents ("dims" options)

/** The keys of an op's "dims" options, in declaration order (the order of their trailing operands). */
export function dimsOptionKeys(op: OpDef): string[] {
  return op.params.flatMap((p) => (p.kind === "options" ? Object.entries(p.options ?? {}).filter(([, k]) => k === "dims").map(([k]) => k) : []));
}

/** Does this "dims" attribute hold a runtime extent? */
export const hasRuntimeDim = (v: AttrValue | undefined): boolean => Array.isArray(v) && v.some((d) => typeof d === "string");

/**
 * The runtime extents of a call's "dims" options: for each such option whose attribute holds
 * RUNTIME_DIM, the ListExpr operand with its runtime items (trailing operands, in option
 * order). `first` is the index of the first of those operands.
 */
export function runtimeDims(op: OpDef, args: readonly Expr[], attrs: Attrs): { readonly lists: ReadonlyMap<string, ListExpr>; readonly first: number } {
  const keys = dimsOptionKeys(op).filter((k) => hasRuntimeDim(attrs[k]));
  const first = args.length - keys.length;
  const lists = new Map<string, ListExpr>();
  keys.forEach((k, i) => {
    const a = args[first + i];
    if (!a || a.kind !== "list") throw new Error(`internal: ${op.name}: the runtime extents of '${k}' must be a list operand at position ${first + i}`);
    lists.set(k, a);
  });
  return { lists, first };
}

/**
 * The extents of a "dims" option (validShape) as IR: `attr` for the call's attributes (constants,
 * RUNTIME_DIM where an item is an expression), `list` the operand holding the runtime items, to
 * append after the op's other operands (null when every extent is a constant: the static form).
 * Passes build runtime validShapes with it: `dimsOperand([mkCall("scalar.min", [64, n - i]), 64])`.
 */
export function dimsOperand(items: readonly (number | Expr)[], span: Span = NO_SPAN): { readonly attr: Dim[]; readonly list: ListExpr | null } {
  const runtime: Expr[] = [];
  const attr = items.map((it) => {
    if (typeof it === "number") return it;
    runtime.push(it);
    return RUNTIME_DIM;
  });
  return { attr, list: runtime.length ? mkList(runtime, span) : null };
}

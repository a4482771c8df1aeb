// The emitter kinds and the one EMITTERS table, keyed by registry op name. The other files of
// this folder register into it with def() (index.ts imports them all).
import { type Call, type DType, type Expr, type Span, type TensorType, type TileType, TsptoCompileError } from "../../../ir/index.js";
import type { CExpr } from "./ctypes.js";
import type { CDim } from "./dims.js";

/** An operand of an elementwise op inside a fused loop: a tile element or a hoisted scalar. */
export interface ElemOperand {
  readonly kind: "tile" | "scalar";
  readonly code: string;
  readonly dtype: DType;
  /** A constant scalar whose value is exactly a float32: fp32 arithmetic then equals the reference's double arithmetic. */
  readonly exactF32?: boolean;
}

/**
 * A reference to a tensor in the current function: its C++ pointer expression, type, display
 * name, and its extents as C++ (numbers for static dims, the local of a dynamic one: ./dims.ts).
 */
export interface TensorRef { readonly ptr: string; readonly type: TensorType; readonly label: string; readonly dims: readonly CDim[] }

/** Where an op writes a tile: a `uint8_t*` expression (scratch + addr, or a temporary). */
export interface TileDest { readonly ptr: string; readonly type: TileType }

/** What statement-level emitters may use from the kernel generator. */
export interface KernelCtx {
  line(s: string): void;
  open(s: string): void;
  close(s?: string): void;
  /** A fresh C++ identifier. */
  fresh(prefix: string): string;
  /** The C++ expression of a scalar IR expression. */
  scalar(e: Expr): CExpr;
  /** The tensor an IR expression denotes. */
  tensor(e: Expr): TensorRef;
  /**
   * Prepare reading the elements of a tile-valued expression (a planned tile, or a fused
   * elementwise expression over planned tiles and scalars): declares its operands in the
   * current block and returns the element at a linear tile index (scratch type).
   */
  elements(e: Expr): (idx: string) => string;
  /**
   * The valid extents of a tile-valued expression per axis: numbers where static, C++ int64
   * expressions where the validShape is a runtime extent (../valid.ts); the tile's shape when
   * it has no validShape.
   */
  validOf(e: Expr): (number | string)[];
  /**
   * The tile.load a matmul operand reads straight from its tensor (not materialized), or null;
   * `trans`: the operand is the 2-D transpose of that load (read with its strides swapped).
   */
  matmulOperand?(e: Expr): { load: Call; trans: boolean } | null;
  /** Is this tensor (a store's destination) a write-only output of the launch (attrs.streamOut, pass StreamOutputs)? */
  streamOut?(e: Expr): boolean;
  /** The C++ local holding a dynamic dimension's extent (a name in the function's parameters' shapes), or undefined. */
  dimLocal?(name: string): string | undefined;
  /** The statement that leaves the kernel after a run-time failure. */
  readonly failExit: string;
}

export interface ElementwiseEmitter {
  readonly kind: "elementwise";
  /** The element of the result, in the scratch type of `call.type`'s dtype, rounded to it. */
  emit(call: Call, operands: readonly ElemOperand[]): string;
}
export interface ScalarEmitter {
  readonly kind: "scalar";
  emit(call: Call, args: readonly CExpr[]): CExpr;
}
/** An op that fills a tile with its own loops (tile.load). */
export interface TileStmtEmitter {
  readonly kind: "tile-stmt";
  emitInto(ctx: KernelCtx, call: Call, dest: TileDest): void;
}
/** An op with several tile results (tile.rowSumKeep: the tile and its row sums), each into its planned tile. */
export interface TileMultiEmitter {
  readonly kind: "tile-multi";
  emitIntoAll(ctx: KernelCtx, call: Call, dests: readonly TileDest[]): void;
}
/** An op with a side effect on a tensor (tile.store); its value is that tensor. */
export interface TensorStmtEmitter {
  readonly kind: "tensor-stmt";
  emit(ctx: KernelCtx, call: Call): void;
  /** Index of the operand that is the op's (tensor) result. */
  readonly resultArg: number;
}
/** An op whose scalar result needs statements first (tile.read): emits them, returns the value. */
export interface ScalarStmtEmitter {
  readonly kind: "scalar-stmt";
  emit(ctx: KernelCtx, call: Call): CExpr;
}
/** An orchestration op that binds a new device tensor (tensor.create): declares `name` (an int64 device address). */
export interface TensorAllocEmitter {
  readonly kind: "tensor-alloc";
  emit(ctx: KernelCtx, call: Call, name: string): void;
}
export type Emitter = ElementwiseEmitter | ScalarEmitter | TileStmtEmitter | TileMultiEmitter | TensorStmtEmitter | ScalarStmtEmitter | TensorAllocEmitter;

export const EMITTERS = new Map<string, Emitter>();
export const def = (name: string, e: Emitter) => {
  if (EMITTERS.has(name)) throw new Error(`internal: emitter for '${name}' defined twice`);
  EMITTERS.set(name, e);
};

/** The emitter of an op, or a clear internal error. */
export function emitterFor(op: string, span: Span): Emitter {
  const e = EMITTERS.get(op);
  if (!e) {
    throw new TsptoCompileError("E_CODEGEN", `internal: the cpu code generator has no emitter for op '${op}'`, span,
      op.startsWith("tensor.")
        ? "tensor-level ops must be lowered to tiles by the pass pipeline (tensor-to-tile) before code generation"
        : `add an emitter for '${op}' in src/codegen/cpp/emitters/ (next to its registry entry)`);
  }
  return e;
}

// C++ emitters, keyed by registry op name. Adding an op = one registry entry (src/ir/ops) +
// its emitter in this folder. The elementwise families are generated from the same BINARY / UNARY
// tables the registry uses; an entry of those tables without a C++ formula below simply has
// no emitter, and generating code that uses it fails with a clear internal error.
//
// Value conventions (see prelude.ts for the helpers):
// - a tile element is held in its *scratch type*: float for float32/float16/bfloat16 (already
//   rounded to the tile's dtype), int8_t/int16_t/int32_t/int64_t/uint8_t, bool as uint8_t;
// - a scalar is int64_t (integer dtypes), double (float dtypes) or bool;
// - every op's element result is rounded/saturated to its dtype exactly like the registry's
//   `evaluate` (`toDType` = round for floats, trunc + saturate for integers, != 0 for bool).
//
// The files: ctypes.ts (C types, literals), table.ts (emitter kinds, the EMITTERS table),
// elementwise.ts, scalar.ts, memory.ts (load/store), tiles.ts (shared tile-op helpers),
// reduce.ts (reductions, broadcasts, transpose), matmul.ts, shape.ts, read.ts (read, dim, create).
// Importing this barrel registers every emitter (the side-effect imports below, in table order).
import "./elementwise.js";
import "./memory.js";
import "./scalar.js";
import "./reduce.js";
import "./matmul.js";
import "./shape.js";
import "./read.js";
import "./indexing.js";
import "./quant.js";

export {
  type ScalarCType, type CExpr, scalarCType, scratchCType, storageCType, loadConv, storeConv,
  doubleLit, intLit, scratchLit, cstr, spanWhere, roundF, roundD,
} from "./ctypes.js";
export {
  type ElemOperand, type TensorRef, type TileDest, type KernelCtx, type ElementwiseEmitter, type ScalarEmitter,
  type TileStmtEmitter, type TensorStmtEmitter, type ScalarStmtEmitter, type TensorAllocEmitter, type Emitter,
  EMITTERS, emitterFor,
} from "./table.js";
export { type CDim, cmul, cstrides, cnumel, csub, cdim, isStatic } from "./dims.js";
export { regionLoop } from "./tiles.js";
export { type ElementwiseFormula, defineElementwiseCpp, dbl, i64, fromDouble, type RoundModeName, castElem } from "./elementwise.js";

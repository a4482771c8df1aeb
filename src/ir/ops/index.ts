// Registers every op. Import for side effects.
import "./memory.js";
import "./elementwise.js";
import "./math.js";
import "./scalar.js";
import "./reduce.js";
import "./broadcast.js";
import "./shape.js";
import "./matmul.js";
import "./tensor_forms.js";
import "./indexing.js";
export { BINARY, UNARY, newTensor, ELEMENTWISE, defineElementwise, type ElementwiseSpec } from "./elementwise.js";
export { CMP_MODES, type CmpMode } from "./math.js";
export { REDUCTIONS, REDUCE_LANES, PROD_REDUCTIONS, ARG_REDUCTIONS, ROW_KEEP, type ReduceKind } from "./reduce.js";
export { EXPAND_OPS } from "./broadcast.js";
export { PAD_VALUES, padValue } from "./shape.js";
export { matmulAccDType, fmaF32, contractOf, FP_CONTRACT_MODES, type FpContract } from "./matmul.js";
export { dtypeLowest, dtypeHighest } from "./common.js";

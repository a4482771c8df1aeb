// Registers every op. Import for side effects.
import "./memory.js";
import "./elementwise.js";
import "./scalar.js";
import "./reduce.js";
import "./broadcast.js";
import "./shape.js";
import "./matmul.js";
export { BINARY, UNARY, newTensor } from "./elementwise.js";
export { REDUCTIONS, REDUCE_LANES, type ReduceKind } from "./reduce.js";
export { EXPAND_OPS } from "./broadcast.js";
export { PAD_VALUES, padValue } from "./shape.js";
export { matmulAccDType, fmaF32, contractOf, FP_CONTRACT_MODES, type FpContract } from "./matmul.js";
export { dtypeLowest, dtypeHighest } from "./common.js";

// The IR room: immutable nodes, types, the op registry, printer, JSON, equality, verifier.
import "./ops/index.js";
export * from "./types.js";
export * from "./nodes.js";
export * from "./registry.js";
export * from "./errors.js";
export { Program } from "./program.js";
export { printProgram, typeText } from "./printer.js";
export { programToJSON, programFromJSON, numberToJSON, numberFromJSON, nonFiniteReplacer, IR_FORMAT, IR_VERSION, type ProgramJSON } from "./json.js";
export { programsEqual } from "./equal.js";
export { verifyProgram, VerifyError, type VerifyOptions } from "./verify.js";
export * from "./visit.js";
export * from "./values.js";
export { BINARY, UNARY, newTensor, ELEMENTWISE, defineElementwise, CMP_MODES, type ElementwiseSpec, type CmpMode, REDUCTIONS, REDUCE_LANES, PROD_REDUCTIONS, ROW_KEEP, ARG_REDUCTIONS, EXPAND_OPS, PAD_VALUES, padValue, matmulAccDType, fmaF32, contractOf, FP_CONTRACT_MODES, type FpContract, dtypeLowest, dtypeHighest, type ReduceKind, QUANT_BITS, QUANT_SCALE_DTYPES, quantWeightDType, quantWeight, matmulQuantValue } from "./ops/index.js";
export { returnedParams } from "./analysis.js";
export { programCost, totalBytes, totalFlops, type Cost, type CostArg, type KernelCost, type ProgramCost } from "./cost.js";
export { interpret, type InterpStats } from "./interpret.js";
export { validSources, validRangeMessage, type ValidSource } from "./valid.js";

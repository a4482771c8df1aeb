// The cpu code generator: lowered Program -> one C++17 translation unit.
export { generateCpp, generateEntryCpp, kernelSymbols, ident, type SubmitHook, ENTRY_BEGIN, ENTRY_END, type GeneratedCpp, type KernelInfo, type CppUnit } from "./generate.js";
export { EMITTERS, emitterFor, type Emitter, type ElementwiseEmitter, type ScalarEmitter, type TileStmtEmitter, type TensorStmtEmitter, type KernelCtx } from "./emitters/index.js";
export { CPP_PRELUDE, PRELUDE_BASE, PRELUDE_SIMD, PRELUDE_BASE_HEADER, PRELUDE_SIMD_HEADER, preludeFor } from "./prelude.js";
export { checkSpmdAttr, type SpmdSubmit } from "./spmd.js";
export { StmtWalker, cSyntax, type WalkSyntax, type Block, type ScratchDest, type WalkEmitter, type CarriedExtents } from "./walk.js";

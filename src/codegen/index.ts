// The codegen room: lowered ir.Program -> source text per target (C++ today), plus the entry
// signature every artifact's metadata records. Building and loading belong to the targets.
export { generateCpp, kernelSymbols, ENTRY_BEGIN, ENTRY_END, type GeneratedCpp, type KernelInfo, type CppUnit } from "./cpp/index.js";
export { EMITTERS, emitterFor, CPP_PRELUDE, PRELUDE_BASE, PRELUDE_SIMD, PRELUDE_BASE_HEADER, PRELUDE_SIMD_HEADER, preludeFor, type Emitter } from "./cpp/index.js";
export { entrySignature, type SignatureOptions } from "./signature.js";

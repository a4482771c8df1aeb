// The `ir` namespace of the public API.
export { compile, compileAsync, type CompileOptions } from "./compile.js";
export { Program, verifyProgram as verify, TsptoError } from "./ir/index.js";
export { parseProgramText as parse } from "./dsl/index.js";
export { lowerProgram as lower, DEFAULT_PASSES, PassManager, type Pass } from "./passes/index.js";

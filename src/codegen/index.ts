// The codegen room: lowered ir.Program -> artifacts on disk (C++ source, library, metadata).
export { generateCpp, type GeneratedCpp, type KernelInfo } from "./cpp/index.js";
export { EMITTERS, emitterFor, type Emitter } from "./cpp/index.js";
export { compileArtifact, abiIncludeDir, CXX_FLAGS, type CompileArtifactOptions, type CompiledArtifact, type ArtifactDump } from "./build.js";
export {
  validateMeta, entrySignature, META_FILE, META_SCHEMA, META_SCHEMA_VERSION, LIBRARY_PATH,
  type CompiledMeta, type CompiledParam, type CompiledKernel, type MetaPlatform,
} from "./meta.js";

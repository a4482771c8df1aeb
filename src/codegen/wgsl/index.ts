// The webgpu code generator: lowered Program -> one WGSL compute module per InCore function
// (the shared SIMT lowering, ../simt/, in WGSL: ./lang.ts) and the kernel table; the
// orchestration runs in JavaScript on the device (src/targets/webgpu). Imports no Node
// built-in: the browser build loads it.
export { generateWgsl, checkOrchestration, WGSL_CODEGEN_VERSION, type GeneratedWgsl, type WgslKernelInfo, type WgslParam } from "./generate.js";
export { wgslLang, WORKGROUP_TILE_LIMIT } from "./lang.js";
export { WGSL_FORMULAS } from "./formulas.js";
export { WGSL_SYNTAX, f32Lit, i32Lit } from "./syntax.js";
export { UNIFORM_HEADER_WORDS, U_LO_SLOT, U_HI_SLOT, U_START, U_STEP, U_TRIPS, U_GSCRATCH, U_MODULE, ERR_WORDS, WGSL_WORKGROUP, BINDING_UNIFORMS, BINDING_MEMORY, BINDING_ERRORS } from "./prelude.js";

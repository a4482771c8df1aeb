// The artifact room: compiled_meta.json's schema and validator, the directory layout, the
// library hash check and atomic writes. Codegen writes through it; the runtime, the disk
// cache and the tools read through it.
export { validateMeta, META_FILE, META_SCHEMA, META_SCHEMA_VERSION, LIBRARY_PATH, type CompiledMeta, type CompiledParam, type CompiledKernel } from "../codegen/meta.js";
export type { ArtifactDump } from "../codegen/build.js";

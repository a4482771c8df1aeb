// The artifact room: compiled_meta.json's schema and validator, the directory layout, the
// library hash check, private directories and atomic writes. Codegen and the targets write
// through it; the runtime, the disk cache and the tools read through it.
export * from "./layout.js";
export { validateMeta, metaText, dimSlotNames, TsptoArtifactError, META_SCHEMA, META_SCHEMA_VERSION, type CompiledMeta, type CompiledParam, type CompiledKernel } from "./meta.js";
export { writeArtifact, writeAtomic, writeDumps, checkReplaceable, canonicalJSON, sha256, safeName, type ArtifactDump, type ArtifactFill, type WriteArtifactOptions } from "./write.js";
export { readArtifact, verifiedLibrary, readProgram, type ArtifactRef } from "./read.js";
export { ensurePrivateDir, userCacheRoot, defaultArtifactRoot, unsafeReason } from "./private_dir.js";

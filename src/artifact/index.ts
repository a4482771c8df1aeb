// The artifact room: compiled_meta.json's schema and validator, the directory layout and its
// marker, the library hash check, private directories, reading files from a directory tspto
// does not trust, and atomic writes. Codegen and the targets write through it; the runtime,
// the disk cache and the tools read through it.
export * from "./layout.js";
export { validateMeta, metaText, dimSlotNames, TsptoArtifactError, META_SCHEMA, META_SCHEMA_VERSION, type CompiledMeta, type CompiledParam, type CompiledKernel } from "./meta.js";
export {
  writeArtifact, writeArtifactSteps, writeAtomic, writeDumps, checkReplaceable, canonicalJSON, sha256, safeName, reuseArtifact, startArtifact, sealArtifact,
  installArtifact, publishPartialArtifact, removeArtifact, type ArtifactDump, type ArtifactFill, type WriteArtifactOptions,
} from "./write.js";
export { readArtifact, verifiedLibrary, readProgram, type ArtifactRef } from "./read.js";
export {
  ensurePrivateDir, checkPrivateDir, userCacheRoot, defaultArtifactRoot, privateDir, tempPrivateRoot, unsafeReason, unsafePathError, type PrivateDirProblem,
} from "./private_dir.js";
export {
  FILE_LIMITS, badRelativeName, openInside, openRegularFile, readInside, readTextInside, readOpened, hashOpened, writeFileNoFollow, checkDirInside,
  untrustedReason, ancestorsReason, fileKind, isInside, type OpenedFile, type RegularFileOpen,
} from "./files.js";
export { readMarker, markerKey, recordFiles, wroteFile, listTree, removeWritten, formatMarker, parseMarker, type Marker } from "./marker.js";
export { requireWithCodeCache, lastCodeCache } from "./code_cache.js";
export { inMemoryVolume, holdArtifact, releaseArtifact } from "./volatile.js";

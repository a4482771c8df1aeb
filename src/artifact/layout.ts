// The artifact directory layout: every file name a room reads or writes, in one place.
//
//   compiled_meta.json   the metadata (schema in meta.ts)
//   program.json         the lowered IR (what `interp` evaluates; kept by every target)
//   kernels/             generated source (one translation unit per program)
//   orchestration/       the orchestration excerpt and a README
//   build/               binaries and the toolchain stamp (stamp.json)
//   passes_dump/         the program after every pass (.ts and .json), when asked for
//   dfx_outputs/         DFX recordings of launches
//   .artifact_key        the content key; also the marker that tspto wrote this directory
export const META_FILE = "compiled_meta.json";
export const PROGRAM_FILE = "program.json";
export const KERNELS_DIR = "kernels";
export const ORCHESTRATION_DIR = "orchestration";
export const BUILD_DIR = "build";
export const STAMP_FILE = "build/stamp.json";
export const PASSES_DUMP_DIR = "passes_dump";
export const DFX_DIR = "dfx_outputs";
export const KEY_FILE = ".artifact_key";

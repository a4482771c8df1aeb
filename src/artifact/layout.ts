// The artifact directory layout: every file name a room reads or writes, in one place.
//
//   compiled_meta.json   the metadata (schema in meta.ts)
//   program.json         the lowered IR (what `interp` evaluates; kept by every target)
//   kernels/             generated source (one translation unit per program)
//   orchestration/       the orchestration excerpt and a README
//   build/               binaries and the toolchain stamp (stamp.json)
//   passes_dump/         the program after every pass (.ts and .json), when asked for
//   dfx_outputs/         DFX recordings of launches
//   .artifact_key        the marker that tspto wrote this directory: the content key and every
//                        file tspto wrote there (marker.ts); tspto deletes only those
export const META_FILE = "compiled_meta.json";
export const PROGRAM_FILE = "program.json";
export const KERNELS_DIR = "kernels";
export const ORCHESTRATION_DIR = "orchestration";
export const BUILD_DIR = "build";
export const STAMP_FILE = "build/stamp.json";
export const PASSES_DUMP_DIR = "passes_dump";
export const DFX_DIR = "dfx_outputs";
export const KEY_FILE = ".artifact_key";

/**
 * The files tspto wrote into an artifact directory before the marker recorded them (a
 * marker holding only the key, written by tspto up to 0.1): what may be replaced there.
 */
export const LEGACY_ARTIFACT_FILES: readonly RegExp[] = [
  /^(compiled_meta\.json|program\.json|\.artifact_key)$/,
  /^kernels\/(program\.cpp|program\.cu|entry\.cpp)$/,
  /^orchestration\/(entry\.cpp|README\.md)$/,
  /^build\/(libprogram\.so|libentry\.so|program\.fatbin|stamp\.json|step\d+\.(log|rc))$/,
  /^passes_dump\/\d+_after_[A-Za-z0-9_.-]+\.(ts|json)$/,
  /^dfx_outputs\/(rank_\d+\/device_\d+\/)?(swimlane\.json|deps\.json|pmu\.csv|scope_stats\.jsonl|swimlane\.html|deps\.html|swimlane_ranks\.json|args_dump\/(index\.json|task\d+_arg\d+_(before|after)\.bin))$/,
];

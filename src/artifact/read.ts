// Reading artifact directories: the metadata (validated), the library (hash-checked, from a
// directory no other user can write) and the lowered program. The directory is treated as
// hostile: only regular files inside it are read (no links, FIFOs or devices), each within
// a size limit (files.ts).
import { closeSync, lstatSync, realpathSync, type Stats } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Program } from "../ir/index.js";
import { FILE_LIMITS, ancestorsReason, fileKind, hashOpened, openInside, readTextInside, untrustedReason } from "./files.js";
import { META_FILE, PROGRAM_FILE } from "./layout.js";
import { TsptoArtifactError, validateMeta, type CompiledMeta } from "./meta.js";
import { unsafePathError } from "./private_dir.js";

/** A built artifact: its directory and validated metadata. */
export interface ArtifactRef {
  readonly outputDir: string;
  readonly meta: CompiledMeta;
}

/** Reads and validates `<dir>/compiled_meta.json`. */
export function readArtifact(dir: string): ArtifactRef {
  const outputDir = resolve(dir);
  const file = join(outputDir, META_FILE);
  let st: Stats;
  try { st = lstatSync(file); } catch (e) {
    throw new TsptoArtifactError(`${file}: cannot read compiled_meta.json (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); is '${dir}' a tspto artifact directory?`);
  }
  if (!st.isFile()) throw new TsptoArtifactError(`${file}: is ${fileKind(st)}, not a regular file; not read`, undefined, "E_ARTIFACT_FILE");
  return { outputDir, meta: validateMeta(readTextInside(outputDir, META_FILE, { maxBytes: FILE_LIMITS.meta, what: "compiled_meta.json" }), file) };
}

const UNSAFE_HINT = "build the program into a directory of your own (outputDir), not one other users can write";

/**
 * The path of the artifact's library after checking it: a regular file inside the directory,
 * its sha256 equal to the recorded one, and neither it nor the directories holding it
 * writable by another user, nor the directories above them replaceable by one (a library is
 * code that gets loaded into the process).
 */
export function verifiedLibrary(ref: ArtifactRef): string {
  const rel = ref.meta.library;
  if (!rel) throw new TsptoArtifactError(`${ref.outputDir}: the artifact has no library (platform '${ref.meta.platform}')`);
  const f = openInside(ref.outputDir, rel, { maxBytes: FILE_LIMITS.library, what: "program library" });
  const path = f.path;
  let h: string;
  try {
    const why = untrustedReason(path, f.stat);
    if (why) throw unsafePathError(`${path} not loaded: ${why}`, UNSAFE_HINT);
    h = hashOpened(f).sha256;
  } finally {
    closeSync(f.fd);
  }
  if (h !== ref.meta.libraryHash) {
    throw new TsptoArtifactError(`${path}: library hash ${h.slice(0, 12)}… does not match compiled_meta.json (${String(ref.meta.libraryHash).slice(0, 12)}…); the artifact was modified`);
  }
  // the directories from the library's up to the artifact's (real ones: openInside refused links), then those above
  let root: string;
  try { root = realpathSync(ref.outputDir); } catch (e) { throw new TsptoArtifactError(`${path}: cannot resolve ${ref.outputDir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`); }
  for (let d = dirname(join(root, rel)); ; d = dirname(d)) {
    let st: Stats;
    try { st = lstatSync(d); } catch (e) { throw new TsptoArtifactError(`${path}: cannot check ${d} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`); }
    const why = untrustedReason(d, st);
    if (why) throw unsafePathError(`${path} not loaded: ${why}`, UNSAFE_HINT);
    if (d === root || dirname(d) === d) break;
  }
  const above = ancestorsReason(root);
  if (above) throw unsafePathError(`${path} not loaded: ${above}`, UNSAFE_HINT);
  return path;
}

/** The lowered program of an artifact (program.json). */
export function readProgram(ref: ArtifactRef): Program {
  const file = join(ref.outputDir, PROGRAM_FILE);
  const text = readTextInside(ref.outputDir, PROGRAM_FILE, { maxBytes: FILE_LIMITS.program, what: "program.json" });
  try { return Program.fromJSON(text); } catch (e) {
    throw new TsptoArtifactError(`${file}: not a valid program (${(e as Error).message.split("\n")[0]})`);
  }
}

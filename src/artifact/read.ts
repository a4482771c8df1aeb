// Reading artifact directories: the metadata (validated), the library (hash-checked, from a
// directory no other user can write) and the lowered program.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Program } from "../ir/index.js";
import { META_FILE, PROGRAM_FILE } from "./layout.js";
import { TsptoArtifactError, validateMeta, type CompiledMeta } from "./meta.js";
import { unsafeReason } from "./private_dir.js";
import { sha256 } from "./write.js";

/** A built artifact: its directory and validated metadata. */
export interface ArtifactRef {
  readonly outputDir: string;
  readonly meta: CompiledMeta;
}

/** Reads and validates `<dir>/compiled_meta.json`. */
export function readArtifact(dir: string): ArtifactRef {
  const outputDir = resolve(dir);
  const file = join(outputDir, META_FILE);
  let text: string;
  try { text = readFileSync(file, "utf8"); } catch (e) {
    throw new TsptoArtifactError(`${file}: cannot read compiled_meta.json (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); is '${dir}' a tspto artifact directory?`);
  }
  return { outputDir, meta: validateMeta(text, file) };
}

/**
 * The path of the artifact's library after checking it: present, its sha256 equal to the
 * recorded one, and neither it nor the directories holding it writable by another user
 * (a library is code that gets loaded into the process).
 */
export function verifiedLibrary(ref: ArtifactRef): string {
  const rel = ref.meta.library;
  if (!rel) throw new TsptoArtifactError(`${ref.outputDir}: the artifact has no library (platform '${ref.meta.platform}')`);
  const path = join(ref.outputDir, rel);
  let bytes: Buffer;
  try { bytes = readFileSync(path); } catch {
    throw new TsptoArtifactError(`${path}: program library is missing`);
  }
  const h = sha256(bytes);
  if (h !== ref.meta.libraryHash) {
    throw new TsptoArtifactError(`${path}: library hash ${h.slice(0, 12)}… does not match compiled_meta.json (${String(ref.meta.libraryHash).slice(0, 12)}…); the artifact was modified`);
  }
  for (let d = path; ; d = dirname(d)) {
    const why = unsafeReason(d);
    if (why) throw new TsptoArtifactError(`${path}: not loaded: ${why}`, "build the program into a directory of your own (outputDir), not one other users can write");
    if (d === ref.outputDir || dirname(d) === d) break;
  }
  return path;
}

/** The lowered program of an artifact (program.json). */
export function readProgram(ref: ArtifactRef): Program {
  const file = join(ref.outputDir, PROGRAM_FILE);
  let text: string;
  try { text = readFileSync(file, "utf8"); } catch { throw new TsptoArtifactError(`${file}: missing`); }
  try { return Program.fromJSON(text); } catch (e) {
    throw new TsptoArtifactError(`${file}: not a valid program (${(e as Error).message.split("\n")[0]})`);
  }
}

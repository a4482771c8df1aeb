// Artifacts in a volume that does not persist (the page's in-memory node:fs, src/browser/node/fs.ts):
// there a disk cache saves nothing, and the files of a program nobody holds are only memory. The
// jit holds the artifacts it made while it caches their programs; the last release removes them.
import * as fs from "node:fs";
import { removeArtifact } from "./write.js";

/** Whether node:fs is an in-memory volume that ends with the process (a page). */
export const inMemoryVolume = (): boolean => (fs as unknown as { IN_MEMORY_VOLUME?: boolean }).IN_MEMORY_VOLUME === true;

const held = new Map<string, number>();

/** One more holder of the artifact at `dir` (only counted in an in-memory volume). */
export function holdArtifact(dir: string): void {
  if (inMemoryVolume()) held.set(dir, (held.get(dir) ?? 0) + 1);
}

/** One holder less; in an in-memory volume the last one removes the artifact's files. */
export function releaseArtifact(dir: string): void {
  const n = held.get(dir);
  if (n === undefined) return;
  if (n > 1) { held.set(dir, n - 1); return; }
  held.delete(dir);
  try { removeArtifact(dir); } catch { /* already gone */ }
}

// Reading a webgpu artifact directory (program.json, the kernel table, the WGSL files): shared
// by the Node host (./node.ts) and the browser build's host (./node.browser.ts), whose files
// live in the page's in-memory volume.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TsptoArtifactError, readProgram, type ArtifactRef } from "../../artifact/index.js";
import type { FailSite } from "../../codegen/simt/index.js";
import type { WebGpuKernelEntry, WebGpuModuleSource } from "./device.js";

/** The kernel table of a webgpu artifact (relative to its directory). */
export const KERNEL_TABLE = "kernels/webgpu.json";
/** A webgpu module from its artifact directory: program.json, the kernel table and the WGSL files. */
export function readModuleFiles(artifact: ArtifactRef): WebGpuModuleSource {
  const dir = artifact.outputDir;
  let table: { kernels: Omit<WebGpuKernelEntry, "source">[]; sites: FailSite[] };
  try {
    table = JSON.parse(readFileSync(join(dir, KERNEL_TABLE), "utf8")) as typeof table;
  } catch (e) {
    throw new TsptoArtifactError(`webgpu artifact ${dir}: cannot read ${KERNEL_TABLE}: ${(e as Error).message}`);
  }
  const kernels = table.kernels.map((k) => {
    try {
      return { ...k, source: readFileSync(join(dir, k.file), "utf8") };
    } catch (e) {
      throw new TsptoArtifactError(`webgpu artifact ${dir}: cannot read ${k.file}: ${(e as Error).message}`);
    }
  });
  return { name: artifact.meta.name, dir, program: readProgram(artifact), kernels, sites: table.sites };
}


// CompiledProgram: the user's handle of a built program (an artifact directory), with
// one-shot dispatch on its platform's default worker.
import { readArtifact } from "../artifact/index.js";
import { TsptoRuntimeError } from "../ir/index.js";
import { RunConfig } from "./config.js";
import { ProgramHandle, type ChipCallable, type ValidateIrReport } from "./program_handle.js";
import { defaultWorker } from "./worker.js";

export class CompiledProgram extends ProgramHandle {
  /** Rebuilds the handle from a saved artifact directory (its metadata validated). */
  static fromDir(dir: string, opts: { platform?: string } = {}): CompiledProgram {
    const ref = readArtifact(dir);
    if (opts.platform !== undefined && opts.platform !== ref.meta.platform) {
      throw new TsptoRuntimeError("E_PLATFORM", `${ref.outputDir}: the program was built for platform '${ref.meta.platform}', not '${opts.platform}'`, undefined,
        `compile it for '${opts.platform}'`);
    }
    return new CompiledProgram(ref.outputDir, ref.meta, null);
  }

  /** One-shot dispatch on the default worker of the trailing RunConfig's (or this program's) platform. */
  run(...args: unknown[]): unknown {
    const last = args[args.length - 1];
    const cfg = last instanceof RunConfig ? last : new RunConfig({ platform: this.platform });
    return defaultWorker(cfg).run(this, ...args);
  }
}
export type { ChipCallable, ValidateIrReport };

// The pass manager: runs named passes in order, verifies the IR between passes when asked
// (tests, TSPTO_VERIFY=1), and records a dump of the program after each pass.
import { Program, verifyProgram, type VerifyOptions } from "../ir/index.js";

/** What the passes know about the target: facts from its device description, never its name. */
export interface PassContext {
  /** Per-core scratch capacity in bytes (memory planning, tile sizes). */
  readonly scratchCapacity: number;
}

export interface Pass {
  readonly name: string;
  run(p: Program, ctx: PassContext): Program;
  /** Invariants that hold after this pass (for the verifier). */
  readonly after?: VerifyOptions;
}

export interface PassDump { readonly index: number; readonly pass: string; readonly file: string; readonly text: string; readonly program: Program }

export interface PipelineOptions {
  /** The target device's per-core scratch (Target.description.scratchBytes; default DEFAULT_SCRATCH_CAPACITY). */
  scratchCapacity?: number;
  /** Verify the IR after every pass (default: TSPTO_VERIFY=1). */
  verify?: boolean;
  /** Keep the program after each pass (dumps). */
  dump?: boolean;
  /** Replace or wrap passes (tests inject a broken pass this way). */
  passes?: readonly Pass[];
}

export interface PipelineResult { readonly program: Program; readonly dumps: PassDump[]; readonly timings: { pass: string; ms: number }[] }

export class PassManager {
  constructor(readonly passes: readonly Pass[]) {}

  run(input: Program, opts: PipelineOptions = {}): PipelineResult {
    const ctx: PassContext = { scratchCapacity: opts.scratchCapacity ?? DEFAULT_SCRATCH_CAPACITY };
    const verify = opts.verify ?? process.env.TSPTO_VERIFY === "1";
    const dumps: PassDump[] = [];
    const timings: { pass: string; ms: number }[] = [];
    let p = input;
    let inv: VerifyOptions = {};
    if (opts.dump) dumps.push(dumpOf(0, "Input", p));
    this.passes.forEach((pass, i) => {
      const t0 = performance.now();
      p = pass.run(p, ctx);
      timings.push({ pass: pass.name, ms: performance.now() - t0 });
      inv = { ...inv, ...(pass.after ?? {}) };
      if (verify) {
        try {
          verifyProgram(p, inv);
        } catch (e) {
          (e as Error).message += `\n(after pass ${pass.name})\n${p.asText()}`;
          throw e;
        }
      }
      if (opts.dump) dumps.push(dumpOf(i + 1, pass.name, p));
    });
    return { program: p, dumps, timings };
  }
}

function dumpOf(index: number, pass: string, program: Program): PassDump {
  const file = `${String(index).padStart(2, "0")}_after_${pass}.ts`;
  return { index, pass, file, text: program.asText(), program };
}

/** Default per-core scratch capacity on cpu: 1 MiB. */
export const DEFAULT_SCRATCH_CAPACITY = 1 << 20;

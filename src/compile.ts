// ir.compile: lowered (or not yet lowered) ir.Program -> artifact directory -> CompiledProgram.
// The glue between the rooms: the target's device facts into the passes (when the program is
// not lowered yet), the target's build, the runtime handle.
import type { Program } from "./ir/index.js";
import { checkFpContract, isLowered, lowerProgram, replanMemory, type Pass, type PassDump } from "./passes/index.js";
import { DEFAULT_PLATFORM, getTarget } from "./targets/index.js";
import { CompiledProgram } from "./runtime/compiled.js";
import { COMPILER_FINGERPRINT, PACKAGE_VERSION } from "./version.js";

export interface CompileOptions {
  /** Target platform: one of the registered platforms ("cpu", the default, or "interp"). */
  platform?: string;
  /** Where to write the artifacts (default: a directory under the user's private cache directory, keyed by content). */
  outputDir?: string;
  /** Write passes_dump/NN_after_<Pass>.ts (+ .json for validateIr). */
  dumpPasses?: boolean;
  /** The pass pipeline for a program not lowered yet (default: DEFAULT_PASSES). */
  passes?: readonly Pass[];
  // fpContract (issue 12, plumbing only): forwarded to the passes (PassContext.fpContract).
  /** Float matmul contraction: "fast" (fused multiply-add, default) or "off". Applies to a program not lowered yet. */
  fpContract?: "fast" | "off";
}

/** Pass dumps of programs produced by JitFunction.lower, so that compile can write them. */
const dumpsOf = new WeakMap<Program, PassDump[]>();
export function rememberDumps(p: Program, dumps: PassDump[]): void {
  dumpsOf.set(p, dumps);
}

/** Runs the pass pipeline with the facts of `platform`'s device. */
export function lowerFor(program: Program, platform: string, opts: { dump?: boolean; passes?: readonly Pass[]; fpContract?: "fast" | "off" } = {}) {
  const target = getTarget(platform);
  return lowerProgram(program, { scratchCapacity: target.description.scratchBytes, matmulOperandsInPlace: target.description.matmulOperandsInPlace, minTileElemBytes: target.description.minTileElemBytes, fewRowMatmulCores: target.description.fewRowMatmulCores, dump: opts.dump, passes: opts.passes, fpContract: opts.fpContract /* issue 12 */ });
}

export function compile(program: Program, opts: CompileOptions = {}): CompiledProgram {
  const { target, lowered, build } = prepare(program, opts);
  const ref = target.build(lowered, build);
  return new CompiledProgram(ref.outputDir, ref.meta, program);
}

/**
 * `compile` with the target's build off the event loop (its compilers run as child processes the
 * event loop does not wait for: Target.buildAsync); the passes run before the first await.
 */
export async function compileAsync(program: Program, opts: CompileOptions = {}): Promise<CompiledProgram> {
  const { target, lowered, build } = prepare(program, opts);
  const ref = target.buildAsync ? await target.buildAsync(lowered, build) : target.build(lowered, build);
  return new CompiledProgram(ref.outputDir, ref.meta, program);
}

function prepare(program: Program, opts: CompileOptions) {
  const target = getTarget(opts.platform ?? DEFAULT_PLATFORM);
  if (opts.fpContract !== undefined) checkFpContract(opts.fpContract);  // issue 12
  let lowered = program;
  let dumps: PassDump[] | undefined = dumpsOf.get(program);
  if (!isLowered(program)) {
    const r = lowerFor(program, target.name, { dump: !!opts.dumpPasses, passes: opts.passes, fpContract: opts.fpContract /* issue 12 */ });
    lowered = r.program;
    dumps = r.dumps;
  } else {
    // lowered for another target's facts (f.lower() uses the default platform's)
    lowered = replanMemory(program, { scratchCapacity: target.description.scratchBytes, matmulOperandsInPlace: target.description.matmulOperandsInPlace === true, minTileElemBytes: target.description.minTileElemBytes });
  }
  const build = {
    outputDir: opts.outputDir,
    packageVersion: PACKAGE_VERSION,
    fingerprint: COMPILER_FINGERPRINT,
    dumps: opts.dumpPasses && dumps ? dumps.map((d) => ({ name: d.file.replace(/\.ts$/, ""), text: d.text, json: JSON.stringify(d.program.toJSON()) })) : undefined,
  };
  return { target, lowered, build };
}

// ir.compile: lowered (or not yet lowered) ir.Program -> artifact directory -> CompiledProgram.
// The glue between the rooms: passes (when needed), codegen, runtime handle.
import type { Program } from "./ir/index.js";
import { checkFpContract, isLowered, lowerProgram, type Pass, type PassDump } from "./passes/index.js";
import { compileArtifact } from "./codegen/index.js";
import { CompiledProgram } from "./runtime/compiled.js";
import { PACKAGE_VERSION } from "./version.js";

export interface CompileOptions {
  /** Target platform: "cpu" (default) or "interp". */
  platform?: string;
  /** Where to write the artifacts (default: a directory under the OS temp dir keyed by content). */
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

export function compile(program: Program, opts: CompileOptions = {}): CompiledProgram {
  const platform = opts.platform ?? "cpu";
  if (platform !== "cpu" && platform !== "interp") {
    throw new Error(`ir.compile: platform '${platform}' is not supported by this build (supported: "cpu", "interp")`);
  }
  if (opts.fpContract !== undefined) checkFpContract(opts.fpContract);  // issue 12
  let lowered = program;
  let dumps: PassDump[] | undefined = dumpsOf.get(program);
  if (!isLowered(program)) {
    const r = lowerProgram(program, { platform, dump: !!opts.dumpPasses, passes: opts.passes, fpContract: opts.fpContract /* issue 12 */ });
    lowered = r.program;
    dumps = r.dumps;
  }
  const { outputDir, meta } = compileArtifact(lowered, {
    platform: platform as "cpu" | "interp",
    outputDir: opts.outputDir,
    packageVersion: PACKAGE_VERSION,
    dumps: opts.dumpPasses && dumps ? dumps.map((d) => ({ name: d.file.replace(/\.ts$/, ""), text: d.text, json: JSON.stringify(d.program.toJSON()) })) : undefined,
  });
  return new CompiledProgram(outputDir, meta, program);
}

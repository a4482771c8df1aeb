// ir.compile: lowered (or not yet lowered) ir.Program -> artifact directory -> CompiledProgram.
// The glue between the rooms: passes (when needed), codegen, runtime handle.
import { TsptoRuntimeError, type Program } from "./ir/index.js";
import { isLowered, lowerProgram, type Pass, type PassDump } from "./passes/index.js";
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
}

/** Pass dumps of programs produced by JitFunction.lower, so that compile can write them. */
const dumpsOf = new WeakMap<Program, PassDump[]>();
export function rememberDumps(p: Program, dumps: PassDump[]): void {
  dumpsOf.set(p, dumps);
}

export function compile(program: Program, opts: CompileOptions = {}): CompiledProgram {
  const platform = opts.platform ?? "cpu";
  if (platform !== "cpu" && platform !== "interp") {
    throw new TsptoRuntimeError("E_PLATFORM", `ir.compile: platform '${platform}' is not supported by this build (supported: "cpu", "interp")`,
      undefined, "compile for platform 'cpu' or 'interp'", { argument: "platform" });
  }
  let lowered = program;
  let dumps: PassDump[] | undefined = dumpsOf.get(program);
  if (!isLowered(program)) {
    const r = lowerProgram(program, { platform, dump: !!opts.dumpPasses, passes: opts.passes });
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

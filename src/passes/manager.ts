// The pass manager: runs named passes in order, verifies the IR between passes when asked
// (tests, TSPTO_VERIFY=1), and records a dump of the program after each pass.
import { Program, TsptoConfigError, verifyProgram, type FpContract, type VerifyOptions } from "../ir/index.js";

/** What the passes know about the target: facts from its device description, never its name. */
export interface PassContext {
  /** Per-core scratch capacity in bytes (memory planning, tile sizes). */
  readonly scratchCapacity: number;
  /** Floating-point contraction of float matmul (FpContract pass): "fast" (fused multiply-add) or "off"; absent: DEFAULT_FP_CONTRACT. */
  readonly fpContract?: FpContract;
  /** The code generator reads forwardable matmul operands in place (DeviceDescription.matmulOperandsInPlace): they need no scratch. */
  readonly matmulOperandsInPlace?: boolean;
  /**
   * Every tile element takes at least this many bytes of scratch (DeviceDescription.minTileElemBytes;
   * webgpu: 4, a 32-bit word, since WGSL memory has no bytes); absent: an element takes its dtype's bytes.
   */
  readonly minTileElemBytes?: number;
  /** See DeviceDescription.fewRowMatmulCores (absent: matmuls of few rows get the usual tiles). */
  readonly fewRowMatmulCores?: number;
}

/** The default contraction mode: fused multiply-add in float matmul (twice the arithmetic peak). */
export const DEFAULT_FP_CONTRACT: FpContract = "fast";

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
  /** Float matmul contraction mode (default DEFAULT_FP_CONTRACT). */
  fpContract?: FpContract;
  /** See PassContext.matmulOperandsInPlace. */
  matmulOperandsInPlace?: boolean;
  /** See PassContext.minTileElemBytes. */
  minTileElemBytes?: number;
  /** See PassContext.fewRowMatmulCores. */
  fewRowMatmulCores?: number;
  /** Replace or wrap passes (tests inject a broken pass this way). */
  passes?: readonly Pass[];
}

export interface PipelineResult { readonly program: Program; readonly dumps: PassDump[]; readonly timings: { pass: string; ms: number }[] }

export class PassManager {
  constructor(readonly passes: readonly Pass[]) {}

  run(input: Program, opts: PipelineOptions = {}): PipelineResult {
    const ctx: PassContext = { scratchCapacity: opts.scratchCapacity ?? DEFAULT_SCRATCH_CAPACITY, fpContract: checkFpContract(opts.fpContract ?? DEFAULT_FP_CONTRACT), matmulOperandsInPlace: opts.matmulOperandsInPlace === true, minTileElemBytes: opts.minTileElemBytes, fewRowMatmulCores: opts.fewRowMatmulCores };
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

/** Validates a contraction mode given as an option (ir.compile, lowerProgram): TsptoConfigError E_CONFIG, argument "fpContract". */
export function checkFpContract(m: unknown): FpContract {
  if (m !== "fast" && m !== "off") {
    throw new TsptoConfigError("E_CONFIG", `fpContract must be "fast" or "off", got ${JSON.stringify(m)}`, undefined,
      `"fast" (default) accumulates float matmul with fused multiply-add; "off" rounds each product and sum separately (bit-reproducible without FMA)`,
      { argument: "fpContract" });
  }
  return m;
}

// The passes room: Program -> Program transformations and the default pipeline.
import type { Program } from "../ir/index.js";
import { PassManager, type Pass, type PipelineOptions, type PipelineResult } from "./manager.js";
import { inlinePass } from "./inline.js";
import { ssaPass } from "./ssa.js";
import { simplifyPass } from "./simplify.js";
import { outlinePass } from "./outline_scopes.js";
import { memoryPlanPass } from "./plan_memory.js";
import { depsPass } from "./derive_deps.js";
import { flattenPass } from "./flatten_tiles.js";
import { tensorToTilePass } from "./tensor_to_tile.js";
import { spmdPass } from "./split_parallel_loops.js";
import { matmulFormsPass } from "./matmul_forms.js";
import { fpContractPass } from "./contract.js";
import { fuseRowsPass } from "./fuse_rows.js";
import { fuseRowReductionsPass } from "./fuse_row_reductions.js";
import { streamOutputsPass } from "./stream_outputs.js";

export { PassManager, DEFAULT_SCRATCH_CAPACITY, DEFAULT_FP_CONTRACT, checkFpContract, type Pass, type PassContext, type PassDump, type PipelineOptions, type PipelineResult } from "./manager.js";
export { replanMemory } from "./plan_memory.js";
export { inlinePass, ssaPass, simplifyPass, outlinePass, tensorToTilePass, matmulFormsPass, fpContractPass, fuseRowsPass, flattenPass, fuseRowReductionsPass, memoryPlanPass, spmdPass, depsPass, streamOutputsPass };
export { SPMD_MIN_CHUNK_BYTES, type SpmdAttr } from "./split_parallel_loops.js";
export { readsPad } from "./flatten_tiles.js";

/** The default pipeline, in order (ARCHITECTURE.md). */
export const DEFAULT_PASSES: readonly Pass[] = [inlinePass, ssaPass, simplifyPass, outlinePass, tensorToTilePass, matmulFormsPass, fpContractPass, fuseRowsPass, flattenPass, fuseRowReductionsPass, memoryPlanPass, spmdPass, depsPass, streamOutputsPass];

/** Is this program the output of the pipeline (ready for codegen)? */
export const isLowered = (p: Program): boolean => p.entryFunction.attrs.lowered === true;

export function lowerProgram(p: Program, opts: PipelineOptions = {}): PipelineResult {
  return new PassManager(opts.passes ?? DEFAULT_PASSES).run(p, opts);
}
export { forwardableLoads, forwardableReads, forwardableMatmulOperands, unreadScratchTiles, type ForwardedLoad } from "./forward_loads.js";
export { kernelAccesses, type AccessAttr, type AffineAttr, type WindowAttr } from "./derive_deps.js";

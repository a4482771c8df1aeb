// The front end: kernel source → ir.Program. `pl` (language.ts) records kernel definitions;
// parseKernel specializes one on its argument bindings; parseProgramText reads printed IR.
export * as language from "./language.js";
export {
  allKernelDefs, captureSite, setNextSite, takeNextSite, type CapturedSite, defineKernel, findKernelDefs, isKernelDef, kernelDefOf, kernelDefsIn, siteKey,
  type KernelDef, type KernelKind, type KernelOptions, type KernelSite,
} from "./kernel.js";
// the jit layer reads paramInfo and sourceHash through its memo (src/front_memo.ts)
export { parseKernel, paramInfo, type ParamBinding, type ParamInfo } from "./parser.js";
export { parseProgramText, roundTrip } from "./text.js";
export { setTypescriptLoader } from "./typescript.js";
export { sourceHash, trackHashedDefs, type ConstVal } from "./resolve.js";
export { captureSource, capturedHash, isCapturedKey, locateKernel, parseTypeScript, loadSourceFile, nameFromSource, trackSourceReads, type KernelSource, type SourceText } from "./source.js";

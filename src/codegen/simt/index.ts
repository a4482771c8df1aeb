// The SIMT lowering shared by the cuda and webgpu code generators: tiles onto blocks /
// workgroups and threads (./kernel.ts, ./ops.ts), spelled by a language (./lang.ts; CUDA C++:
// ../cuda/lang.ts, WGSL: ../wgsl/lang.ts).
export { SimtKernelGen, vectorLoop, vectorLoopFlat } from "./kernel.js";
export { SIMT_OPS, simtEmitterFor, strides } from "./ops.js";
import "./quant.js";
export type { SimtLang, SimtCtx, SimtKernel, SimtEmitter, ElemArray, ElemPlan, FailSite, TileDest, LoopOut, MatmulParts } from "./lang.js";

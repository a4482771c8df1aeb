// The names of the package root that every build exports (src/index.ts in Node, src/index.browser.ts
// in a browser): the kernel language and its jit, the runtime, host tensors, the errors, the DFX
// trace as data and as an HTML view. One list, so the two roots cannot drift apart.
export * as pl from "./language.js";
export * as ir from "./ir_api.js";
export { ChipWorker, type ChipWorkerOptions, type RegistrationHandle, type WorkerStats } from "./runtime/worker.js";
export { RunConfig, type RunConfigOptions } from "./runtime/config.js";
export { DeviceTensor } from "./runtime/device_tensor.js";
export { CompiledProgram } from "./runtime/compiled.js";
export { benchmark, benchmarkAsync, BenchmarkStats, type BenchmarkOptions } from "./runtime/benchmark.js";
export { RooflineReport, type RooflineRow, type RooflineData, type MachineLimits } from "./runtime/roofline.js";
export { HostTensor, tensor, zeros, full, randn, assertClose, type TensorLike } from "./runtime/host/index.js";
export { quantize, dequantize, type QuantizeOptions, type QuantizedWeight } from "./runtime/host/index.js";
export type { DType } from "./ir/index.js";
export {
  TsptoError, TsptoSyntaxError, TsptoTypeError, TsptoCompileError, TsptoRuntimeError, TsptoConfigError,
  TsptoArgumentError, TsptoDeviceError, TsptoOutOfMemoryError, TsptoKernelError, TSPTO_ERROR_CLASSES,
} from "./ir/errors.js";
export { TsptoArtifactError } from "./artifact/index.js";
export type { JitFunction } from "./jit.js";
export { readArgsDump } from "./runtime/dfx.js";
export { dfxSwimlane, type Swimlane } from "./dfx_view.js";

// the roofline report prints as the tools' table (the runtime joins, tools/ renders)
import { setRooflineRenderer } from "./runtime/roofline.js";
import { formatRooflineTable } from "./tools/roofline.js";
setRooflineRenderer(formatRooflineTable);

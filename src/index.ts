// tspto: a TypeScript kernel DSL with a JIT. The package root exports every name in API.md.
export * as pl from "./language.js";
export * as ir from "./ir_api.js";
export { ChipWorker, type ChipWorkerOptions, type RegistrationHandle, type WorkerStats } from "./runtime/worker.js";
export { RunConfig, type RunConfigOptions } from "./runtime/config.js";
export { DeviceTensor } from "./runtime/device_tensor.js";
export { CompiledProgram } from "./runtime/compiled.js";
export { benchmark, benchmarkAsync, BenchmarkStats } from "./runtime/benchmark.js";
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
export { DistributedWorker, ShardedTensor, DistributedBenchmark, RankLostError, type DistributedOptions, type ReduceOp } from "./distributed/index.js";
export { dfxSwimlane, type Swimlane } from "./dfx_view.js";

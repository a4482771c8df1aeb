// tspto: a TypeScript kernel DSL with a JIT. The package root exports every name in API.md:
// the names every build has (index_common.ts), and the Node-only distributed workers (MPI).
export * from "./index_common.js";
export { precompile, type PrecompileOptions, type PrecompileSpec, type PrecompiledEntry } from "./precompile.js";
export { DistributedWorker, ShardedTensor, DistributedBenchmark, RankLostError, type DistributedOptions, type ReduceOp } from "./distributed/index.js";

// The distributed room (PyPTO L3): above src/runtime, which never imports it.
export { DistributedWorker, ShardedTensor, DistributedBenchmark, type DistributedOptions } from "./worker.js";
export { RankLostError, type ReduceOp } from "./mpi.js";

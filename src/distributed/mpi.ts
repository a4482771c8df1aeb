// The MPI world of this process: detection of an mpirun launch (Open MPI's environment) and
// the typed interface of the addon's `mpi` binding (native/src/mpi.cc), which loads Open
// MPI's libmpi at run time. Native errors become TsptoRuntimeErrors with stable codes.
import { TsptoRuntimeError } from "../ir/index.js";
import { loadNative } from "../targets/native.js";
import { callerSpan } from "../runtime/caller.js";
import type { DType } from "../runtime/dtype.js";

/** A buffer of a native collective: a host view, or [native Device, device address]. */
export type MpiBuffer = ArrayBufferView | readonly [unknown, bigint];

export interface MpiInit {
  rank: number;
  size: number;
  pids: number[];
  hosts: string[];
  library: string;
  version?: string;
}

/**
 * The trailing arguments of every native collective: the agreement hash (null: no check) and
 * the collective's number (1, 2, ... in call order; the same on every rank).
 */
export type MpiCheck = readonly [hash: bigint | null, seq: number] | readonly [];

interface NativeMpi {
  load(): string | null;
  init(opts: { heartbeatS: number; watch: boolean }): MpiInit;
  state(): "unloaded" | "missing" | "loaded" | "initialized" | "finalized" | "broken";
  setTimeout(seconds: number): void;
  allreduce(buf: MpiBuffer, count: number, type: number, op: number, ...check: MpiCheck): void;
  bcast(buf: MpiBuffer, count: number, type: number, root: number, ...check: MpiCheck): void;
  allgather(send: MpiBuffer, recv: MpiBuffer, count: number, type: number, ...check: MpiCheck): void;
  allgatherv(send: MpiBuffer, recv: MpiBuffer, counts: Int32Array, displs: Int32Array, type: number, ...check: MpiCheck): void;
  reduceScatter(send: MpiBuffer, recv: MpiBuffer, count: number, type: number, op: number, ...check: MpiCheck): void;
  reduceScatterv(send: MpiBuffer, recv: MpiBuffer, counts: Int32Array, type: number, op: number, ...check: MpiCheck): void;
  /** The agreement alone (also a barrier): true when every rank passed the same hash. */
  agree(hash: bigint, seq: number, op: string): boolean;
  barrier(...check: MpiCheck): void;
  sayFailing(why: string): void;
  finalize(): void;
  setExitCode(code: number): void;
  abort(code: number): never;
  lostPeer(): { rank: number; message: string } | null;
  /** Tests only (test/distributed/watch.test.ts): the watch's listening sockets, without MPI. */
  watchTest: {
    /** Listens as init does (testTaken: the first candidate ports another socket takes between bind and listen); throws init's reason. */
    listen(testTaken?: number): { id: number; port: number; addresses: string[]; published: string[] };
    close(id: number): void;
  };
}

/** Reduction operators of the collectives. */
export type ReduceOp = "sum" | "max" | "min" | "prod";
export const REDUCE_OPS: readonly ReduceOp[] = ["sum", "max", "min", "prod"];

/** MPI datatype codes of the binding (index into native/src/mpi.cc's kTypeSymbols). */
export const MpiType = { byte: 0, float32: 1, int8: 2, int16: 3, int32: 4, int64: 5, uint8: 6, uint16: 7, float64: 8 } as const;

/** The MPI type a dtype reduces as; undefined when MPI has none (float16, bfloat16, bool). */
export function reduceTypeOf(dtype: DType): number | undefined {
  switch (dtype) {
    case "float32": return MpiType.float32;
    case "int8": return MpiType.int8;
    case "int16": return MpiType.int16;
    case "int32": return MpiType.int32;
    case "int64": return MpiType.int64;
    case "uint8": return MpiType.uint8;
    default: return undefined;
  }
}

/** The MPI type that moves elements of `elemBytes` bytes unchanged. */
export function moveTypeOf(elemBytes: number): number {
  switch (elemBytes) {
    case 1: return MpiType.uint8;
    case 2: return MpiType.uint16;
    case 4: return MpiType.int32;
    case 8: return MpiType.int64;
    default: throw new Error(`internal: no MPI type for ${elemBytes}-byte elements`);
  }
}

/** Where mpirun placed this process, from Open MPI's environment (null: not under mpirun). */
export interface LaunchEnv {
  rank: number;
  size: number;
  localRank: number;
  /** "openmpi", or "other" for another launcher's variables (MPICH/PMI): not supported. */
  launcher: "openmpi" | "other";
}

export function launchEnv(env: Readonly<Record<string, string | undefined>> = process.env): LaunchEnv | null {
  const int = (v: string | undefined) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined);
  const size = int(env.OMPI_COMM_WORLD_SIZE);
  if (size !== undefined) {
    return { rank: int(env.OMPI_COMM_WORLD_RANK) ?? 0, size, localRank: int(env.OMPI_COMM_WORLD_LOCAL_RANK) ?? 0, launcher: "openmpi" };
  }
  const pmiSize = int(env.PMI_SIZE) ?? int(env.PMIX_SIZE);
  if (pmiSize !== undefined) {
    return { rank: int(env.PMI_RANK) ?? int(env.PMIX_RANK) ?? 0, size: pmiSize, localRank: int(env.MPI_LOCALRANKID) ?? 0, launcher: "other" };
  }
  return null;
}

const NATIVE_CODES: Record<string, string> = {
  TSPTO_MPI_MISSING: "E_MPI_MISSING",
  TSPTO_MPI_PEER_LOST: "E_RANK_LOST",
  TSPTO_MPI_TIMEOUT: "E_MPI_TIMEOUT",
  TSPTO_MPI_ERROR: "E_MPI",
  TSPTO_MPI_STATE: "E_MPI_STATE",
  TSPTO_MPI_LEFT: "E_MPI_MISMATCH",
  TSPTO_MPI_WATCH: "E_MPI_WATCH",
  TSPTO_DEVICE_CLOSED: "E_CLOSED",
};

/** A TsptoRuntimeError carrying the lost rank, when a peer process was lost. */
export class RankLostError extends TsptoRuntimeError {
  readonly lostRank: number | undefined;
  constructor(message: string, lostRank: number | undefined, hint: string) {
    super("E_RANK_LOST", message, callerSpan(), hint);
    this.lostRank = lostRank;
  }
}

const LOST_HINT = "the job cannot continue without that rank: see its own output (and mpirun's) for why it exited, then start the job again";

/**
 * The ranks passed different arguments to one collective (the agreement check failed; no data
 * moved, the world is still usable). Internal: DistributedWorker turns it into E_MPI_MISMATCH or
 * E_RANK_FAILED after asking every rank what it passed.
 */
export class Disagreement extends Error {}

export const MISMATCH_HINT = "every rank must call the same collectives in the same order, with the same shapes, dtypes, ops and roots";

const WATCH_HINT = "each rank's watch needs a TCP port of its own on the addresses Open MPI's TCP traffic may use: widen TSPTO_MPI_WATCH_PORTS (one port per rank of a host) or free its ports, and give btl_tcp_if_include / oob_tcp_if_include an interface or IPv4 CIDR each host has";

/** Converts a native MPI error into a TsptoRuntimeError. */
function mpiError(e: unknown): Error {
  if (!(e instanceof Error)) return new Error(String(e));
  const code = (e as { code?: string }).code;
  if (code === "TSPTO_MPI_DISAGREE") return new Disagreement(e.message);
  if (code === "TSPTO_MPI_PEER_LOST") {
    return new RankLostError(e.message, (e as { lostRank?: number }).lostRank, LOST_HINT);
  }
  const mapped = code ? NATIVE_CODES[code] : undefined;
  if (mapped) {
    const hint = mapped === "E_MPI_MISSING" ? "a DistributedWorker in a process started by mpirun needs Open MPI's libmpi at run time"
      : mapped === "E_MPI_TIMEOUT" ? "raise TSPTO_MPI_TIMEOUT (seconds, default 300; 0 = wait forever), or find the rank that never joined"
      : mapped === "E_MPI_MISMATCH" ? MISMATCH_HINT
      : mapped === "E_MPI_WATCH" ? WATCH_HINT
      : undefined;
    return new TsptoRuntimeError(mapped, e.message, callerSpan(), hint);
  }
  // Argument errors of the binding (TypeError/RangeError) and arena errors ("device range").
  return new TsptoRuntimeError("E_MPI_ARG", e.message, callerSpan());
}

let binding: NativeMpi | undefined;

/** The addon's mpi binding (the addon itself never needs MPI to load). */
export function nativeMpi(): NativeMpi {
  if (binding) return binding;
  const addon = loadNative() as unknown as { mpi?: NativeMpi };
  if (!addon.mpi) throw new TsptoRuntimeError("E_MPI_MISSING", "the tspto native addon was built without MPI support", callerSpan(), "rebuild it: npx node-gyp rebuild --directory native");
  binding = addon.mpi;
  return binding;
}

let sigtermHooked = false;

/**
 * mpirun ends the job with SIGTERM when a rank dies. Inside a collective the native wait
 * reports the lost rank; this handler does the same while JavaScript runs between them,
 * then exits as SIGTERM would.
 */
export function reportLostRankOnSigterm(rank: number): void {
  if (sigtermHooked) return;
  sigtermHooked = true;
  process.on("SIGTERM", () => {
    const lost = nativeMpi().lostPeer();
    const e = lost
      ? new RankLostError(lost.message, lost.rank, LOST_HINT)
      : new RankLostError(`rank ${rank} was terminated (SIGTERM): mpirun is ending the job, most likely because a rank on another host was lost (mpirun's own message names it)`, undefined, LOST_HINT);
    process.stderr.write(`${e.message}\n`);
    nativeMpi().setExitCode(143);
    process.exit(143);
  });
}

/** Calls a native collective, converting its errors. */
export function callMpi<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    throw mpiError(e);
  }
}

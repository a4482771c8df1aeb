// The Target and Device interfaces: everything that differs per platform lives behind them.
//
// A Target (one folder under src/targets/<name>/, registered in src/targets/index.ts) owns
//  - the facts about its device that the passes need (DeviceDescription: scratch capacity,
//    cores, compile options such as the floating-point contraction mode),
//  - how a lowered ir.Program becomes an artifact directory (emit + build, written through
//    src/artifact), and
//  - how a device is opened for a ChipWorker (a Device).
// The runtime (src/runtime) knows no platform by name: it asks the registry for the Target
// of `RunConfig.platform`, opens its Device and talks to it only through this interface.
import type { Program } from "../ir/index.js";
import type { ArtifactDump, ArtifactRef } from "../artifact/index.js";
export type { ArtifactRef };

/** What the passes need to know about a target's device. */
export interface DeviceDescription {
  /** Per-core on-chip scratch capacity in bytes (PlanMemory and TensorToTile check against it). */
  readonly scratchBytes: number;
  /**
   * The target's code generator reads a float matmul operand that is a plain load (or a move of
   * one) used only by that matmul straight from its tensor window (forwardableMatmulOperands):
   * PlanMemory then gives those tiles no scratch.
   */
  readonly matmulOperandsInPlace?: boolean;
  /**
   * Every tile element takes at least this many bytes of scratch (webgpu: 4, WGSL memory is
   * 32-bit words); the passes size tiles and plan scratch so. Absent: an element's own bytes.
   */
  readonly minTileElemBytes?: number;
  /**
   * The code generator streams the rows of b for fp32 matmuls of few rows (a decode GEMV, M <= 6):
   * TensorToTile then gives those products wide column tiles, about one band per core of this
   * many cores (a tiling choice only: any core count runs the program). Absent: 128-wide tiles.
   */
  readonly fewRowMatmulCores?: number;
}

/** Argument kinds of Device.launch (the `kinds` array). */
export const ArgKind = {
  HostIn: 0,
  HostOut: 1,
  HostInOut: 2,
  Device: 3,
  Int: 4,
  Float: 5,
  Bool: 6,
} as const;
export type ArgKind = (typeof ArgKind)[keyof typeof ArgKind];

/** Counters of one device. */
export interface DeviceStats {
  /** Launches whose entry ran (successful or failed). */
  launches: number;
  /** Bytes copied host → device: explicit h2d plus In/InOut launch arguments. */
  h2dBytes: number;
  /** Bytes copied device → host: explicit d2h plus Out/InOut launch arguments. */
  d2hBytes: number;
  /** Device bytes held by live allocations (device tensors, launch staging, orchestration buffers). */
  bytesInUse: number;
  liveAllocations: number;
  /** Usable device bytes. */
  capacity: number;
  /** Modules currently loaded. */
  modulesLoaded: number;
  /** load() calls that succeeded, cumulative. */
  moduleLoads: number;
  /** Kernel tasks executed. */
  tasksRun: number;
  /** cuda: cumulative host ns of launches up to their wait (enqueueing) and in it (synchronizing). */
  enqueueNs?: number;
  syncNs?: number;
}

/** What a recording launch leaves (DFX): tasks with their cores, times and accesses. */
/** A tensor window (TsptoAccess rank > 0), clamped by the scheduler; base/nbytes are its byte hull (issue 12). */
export interface DeviceTraceWindow { tensor: bigint; elemBytes: number; dims: number[]; offsets: number[]; extents: number[] }
export interface DeviceTraceAccess { base: bigint; nbytes: number; mode: number; window?: DeviceTraceWindow; before?: Uint8Array; after?: Uint8Array }
export interface DeviceTraceTask {
  id: number; kernel: string; scope: number; core: number;
  submitNs: number; startNs: number; endNs: number; cycles: number; instructions: number;
  accesses: DeviceTraceAccess[];
}
export interface DeviceTrace {
  launchStartNs: number; entryEndNs: number; launchEndNs: number; mask: number; pmuError: string;
  argSlots: bigint[]; orchBuffers: { base: bigint; nbytes: number }[];
  tasks: DeviceTraceTask[];
  edges: { from: number; to: number; fromAccess: number; toAccess: number }[];
}

/** Options a worker opens a device with (from its RunConfig and the target's description). */
export interface DeviceOptions {
  deviceId: number;
  /** Core threads (≥ 1) of a simulated chip. */
  coreThreads: number;
  /** Scheduler threads (aicpuThreadNum). */
  schedThreads: number;
  scratchBytes: number;
  /** Reserved device memory in bytes. */
  memoryBytes: number;
  ringTaskWindow: number;
  ringHeap: number;
  ringDepPool: number;
  /** Seconds an asynchronous device (webgpu) lets a wait for the GPU take before it fails (RunConfig.launchTimeoutS; 0 or absent: no limit). */
  launchTimeoutS?: number;
}

/** One open device. Memory addresses are bigints; every failure is a TsptoError. */
export interface Device {
  /** Address of a new zero-filled, 64-byte-aligned allocation. */
  alloc(nbytes: number): bigint;
  /** Releases an allocation; `addr` must be the start of a live allocation. */
  free(addr: bigint): void;
  /** True when `addr` is the start of a live allocation. */
  isLive(addr: bigint): boolean;
  /** Host → device (counted in stats). */
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  /** Device → host (counted in stats). */
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  /** Device → device (not a host transfer). */
  d2d(dst: bigint, src: bigint, nbytes: number): void;
  /**
   * Launches run after launch() returns (webgpu): launch only enqueues and returns 0 ns, so a
   * synchronous form that needs the results or the time (benchmark) has to use the async one.
   */
  readonly asynchronous?: boolean;
  /**
   * Asynchronous devices (webgpu): resolves when the device is open, rejects with why it could
   * not be. Absent: the device was open when openDevice returned.
   */
  ready?(): Promise<void>;
  /**
   * Device → host after everything queued on the device before it (a device whose d2h cannot
   * wait synchronously has it). Absent: the runtime waits for its own queued launches, then d2h.
   */
  d2hAsync?(dst: ArrayBufferView, addr: bigint, nbytes: number): Promise<void>;
  /** Host → device after everything queued before it; absent: as d2hAsync. */
  h2dAsync?(addr: bigint, src: ArrayBufferView, nbytes: number): Promise<void>;
  /** Loads a built artifact of this device's target; returns a module id. */
  load(artifact: ArtifactRef): number;
  unload(module: number): void;
  /**
   * One launch; returns the device time in ns. `args[i]` is a host view, a device address or a
   * scalar as `kinds[i]` says; `slots[i]`, when given, the same non-host argument as a number
   * (a device address, a scalar; booleans 0/1; NaN for an int64 only `args[i]` holds exactly),
   * which a device may read in one block instead of `args[i]` (the native devices do). An
   * asynchronous device (webgpu) enqueues it and returns 0, and throws E_ASYNC for a launch that
   * would have to wait (host outputs).
   */
  launch(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): number;
  /**
   * The same launch off the JS thread; launches on one device run in order. `timeoutS`: this
   * launch's RunConfig.launchTimeoutS, which an asynchronous device (webgpu) applies to its
   * wait (the others run a launch to its end).
   */
  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array, timeoutS?: number): Promise<number>;
  stats(): DeviceStats;
  /** DFX recording: false when this device records nothing (the worker says so once). */
  readonly records: boolean;
  setRecording(mask: number, dumpBytes: number): void;
  takeTrace(): DeviceTrace | null;
  /** Idempotent: releases every allocation and module. */
  close(): void;
  readonly closed: boolean;
}

export interface BuildOptions {
  /** Where to write the artifact (default: under the user's private cache directory). */
  outputDir?: string;
  /** Recorded in the metadata; part of the key. */
  packageVersion: string;
  /** Fingerprint of the compiler's own code (part of the key: new tspto code never reuses an old artifact). */
  fingerprint?: string;
  dumps?: readonly ArtifactDump[];
  /** Compile options that change the output (part of the artifact key). */
  options?: Readonly<Record<string, string | number | boolean>>;
}

/**
 * What a machine can do at most (the roofline's roofs), measured by its target once per machine
 * and cached. Rates are of all `threads` core threads of a device together.
 */
export interface MachineLimits {
  /** Streaming read bandwidth, GB/s (10^9 bytes per second). */
  readonly readGBs: number;
  /** fp32 fused multiply-add peak, GFLOP/s (an FMA is 2 flops). */
  readonly fmaGflops: number;
  /** bf16 dot-product peak (vdpbf16ps / AMX tdpbf16ps), GFLOP/s; absent where the machine (or the ISA path) has no such unit. */
  readonly dotGflops?: number;
  /** int8 dot-product peak (vpdpbusd / AMX tdpbssd), GOPS (a multiply-add is 2 ops); absent where there is none. */
  readonly dotInt8Gops?: number;
  /** The instructions the dot peaks ran. */
  readonly dotInstruction?: string;
  readonly dotInt8Instruction?: string;
  /** Lanes of the FMA the peak ran (16: AVX-512, 8: AVX2, 1: scalar). */
  readonly fmaLanes?: number;
  /** Core threads the rates were measured on. */
  readonly threads: number;
  /** The CPU (model name) or device they were measured on. */
  readonly cpu: string;
  /** The ISA path the measuring programs were built for (cpu), or null. */
  readonly isa?: string | null;
  /** Bytes of the buffer the read streamed (larger than the caches). */
  readonly readBufferBytes?: number;
  /** When they were measured (ISO 8601). */
  readonly measuredAt: string;
}

export interface Target {
  /** The platform name (RunConfig.platform, CompiledProgram.platform). */
  readonly name: string;
  /** One line for error messages and docs. */
  readonly summary: string;
  /** Device facts the passes need. */
  readonly description: DeviceDescription;
  /** Lowered program → artifact directory (reused when complete with the same key). */
  build(lowered: Program, opts: BuildOptions): ArtifactRef;
  /**
   * `build` with its child processes (compilers) run without blocking the event loop
   * (src/targets/steps.ts); absent: compileAsync runs `build`.
   */
  buildAsync?(lowered: Program, opts: BuildOptions): Promise<ArtifactRef>;
  /** Parts of the disk-cache key that depend on the machine (toolchain, CPU/GPU features). */
  cacheKeyParts(): readonly string[];
  /**
   * The parts of cacheKeyParts a built program's validity depends on without the toolchain that
   * built it (flags, ISA, CPU): the key of the entries `tspto precompile` writes, which a machine
   * without a compiler finds (absent: a precompiled entry is found by the full key only).
   */
  portableKeyParts?(): readonly string[];
  /** Opens a device; throws a TsptoError when this machine has none (e.g. no GPU). */
  openDevice(opts: DeviceOptions): Device;
  /**
   * The machine's limits for a device of `threads` core threads (measured once per machine, then
   * cached); absent on a target that measures none (the roofline then has no roofs to compare with).
   */
  limits?(threads: number): MachineLimits;
  /** `limits` with its measuring programs run off the event loop (absent: only `limits`). */
  limitsAsync?(threads: number): Promise<MachineLimits>;
}

/**
 * The hint of every E_DEVICE_OOM, on every platform (each says what else makes room: `more`).
 * The native arena's messages (native/src/arena.cc) end with its first clause too.
 */
export const oomHint = (more: string): string => `free DeviceTensors you no longer need (ChipWorker.freeTensor), use smaller tensors, or ${more}`;

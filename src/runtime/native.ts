// Loader and typed interface of the native runtime addon (native/, built by node-gyp on
// `npm install`). The addon is the device of the cpu platform: a memory arena, a module
// table of dlopen'd program libraries and a persistent task scheduler. The rest of
// src/runtime talks to the device only through the interfaces below.
import { createRequire } from "node:module";

/** Counters of one device. */
export interface NativeStats {
  /** Launches whose entry ran (successful or failed). */
  launches: number;
  /** Bytes copied host → device: explicit h2d plus In/InOut launch arguments. */
  h2dBytes: number;
  /** Bytes copied device → host: explicit d2h plus Out/InOut launch arguments. */
  d2hBytes: number;
  /** Arena bytes held by live allocations (each rounded up to 64 bytes): device tensors,
   *  launch staging buffers and orchestration buffers. */
  bytesInUse: number;
  liveAllocations: number;
  /** Allocations freed while launches in flight held them: their bytes are released (and
   *  leave bytesInUse) when the last of those launches completes. */
  pendingFrees: number;
  /** Usable arena bytes (memoryBytes rounded down to a multiple of 64). */
  capacity: number;
  /** Modules currently loaded. */
  modulesLoaded: number;
  /** loadModule calls that succeeded, cumulative. */
  moduleLoads: number;
  /** Kernel tasks executed (tasks skipped after a failure are not counted). */
  tasksRun: number;
}

export interface DeviceOptions {
  deviceId: number;
  /** Core threads (≥ 1); each owns a scratch arena of scratchBytes. */
  coreThreads: number;
  /** Scheduler threads (aicpuThreadNum, ≥ 0). Accepted and validated; dispatch currently
   *  happens on the submitting and completing threads. */
  schedThreads: number;
  /** Per-core scratch capacity in bytes (TsptoRuntimeApi.scratch_bytes). */
  scratchBytes: number;
  /** Reserved (virtual) device memory in bytes. */
  memoryBytes: number;
  /** Task ring slots; a submit waits while the ring is full. */
  ringTaskWindow: number;
  /** Bytes of task arguments + accesses in flight before a submit waits. */
  ringHeap: number;
  /** Dependency edges in flight before a submit waits. */
  ringDepPool: number;
}

/** Argument kinds of NativeDevice.launch (the `kinds` array). */
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

/**
 * One device. Errors are plain `Error`s (TypeError/RangeError for bad arguments), each with a
 * `code` (and `argIndex`, 0-based, for a launch argument): "TSPTO_DEVICE_OOM",
 * "TSPTO_KERNEL_FAILURE" (message "kernel failure: <message>[ (in task '<k>', scope <n>)]"),
 * "TSPTO_DEVICE_CLOSED", "TSPTO_BAD_ADDRESS", "TSPTO_HOST_VIEW", "TSPTO_BAD_ARGUMENT",
 * "TSPTO_MODULE". fromNativeError (native_errors.ts) turns them into TsptoErrors.
 * Launches pin the allocations and the module they use until they complete;
 * launchAsync stages host inputs when called and copies results back on the JS thread.
 */
export interface NativeDevice {
  /** Device address of a new zero-filled, 64-byte-aligned allocation. */
  alloc(nbytes: number): bigint;
  /** Releases an allocation; `addr` must be the start of a live allocation. The address is
   *  dead at once; when launches in flight use it the bytes are released after the last of
   *  them completes (returns true then). */
  free(addr: bigint): boolean;
  /** True when `addr` is the start of a live allocation. */
  isLive(addr: bigint): boolean;
  /** Copies nbytes from `src` to [addr, addr+nbytes), which must lie in one live allocation. */
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  /** Copies nbytes from [addr, addr+nbytes) into `dst`. */
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  /** Device-side write/read by the interp platform's executor: checked like h2d/d2h, not counted as transfers. */
  writeDevice(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  readDevice(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  /** dlopens a program library (checks tspto_abi_version and tspto_entry); returns its id.
   *  `argBytes[i]`: bytes of entry parameter i's tensor (-1 for scalars). With it, every
   *  launch checks each host view's live byte length against it (a detached, shrunk or short
   *  view is a TSPTO_HOST_VIEW error naming the argument) and stages exactly that many bytes. */
  loadModule(path: string, argBytes?: readonly number[]): number;
  unloadModule(id: number): void;
  /** Runs one launch; returns device time in ns (orchestration start → last task end). */
  launch(moduleId: number, args: unknown[], kinds: Uint8Array): number;
  /** The same launch off the JS thread; launches on one device are serialized. */
  launchAsync(moduleId: number, args: unknown[], kinds: Uint8Array): Promise<number>;
  stats(): NativeStats;
  /** DFX: what the following launches record (mask: 1 tasks+edges, 2 argument snapshots of
   *  at most dumpBytes per access (0 = whole), 4 hardware counters; 0 = off). */
  setRecording(mask: number, dumpBytes: number): void;
  /** The trace of the last launch that recorded, once; null otherwise. */
  takeTrace(): import("./dfx.js").NativeTrace | null;
  /** Idempotent: joins threads, unloads modules, frees all memory. */
  close(): void;
  readonly closed: boolean;
}

export interface NativeAddon {
  Device: new (opts: DeviceOptions) => NativeDevice;
  /** TSPTO_ABI_VERSION of native/include/tspto_abi.h the addon was built with. */
  abiVersion: number;
}

/** Path of the built addon, relative to this file. */
export const NATIVE_ADDON_PATH = "../../native/build/Release/tspto_native.node";

let cached: NativeAddon | undefined;

/** Loads the addon once per module instance (each worker_thread loads its own). */
export function loadNative(): NativeAddon {
  if (cached !== undefined) return cached;
  const require = createRequire(import.meta.url);
  let addon: NativeAddon;
  try {
    addon = require(NATIVE_ADDON_PATH) as NativeAddon;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e?.code === "MODULE_NOT_FOUND") {
      throw new Error(
        `tspto native addon not found (${NATIVE_ADDON_PATH} relative to src/runtime): ` +
          "run `npm install` (or `npx node-gyp rebuild --directory native`) to build it",
        { cause: err },
      );
    }
    throw new Error(
      `tspto native addon failed to load: ${e?.message ?? String(err)}; ` +
        "rebuild it with `npx node-gyp rebuild --directory native`",
      { cause: err },
    );
  }
  cached = addon;
  return addon;
}

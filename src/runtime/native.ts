// Loader and typed interface of the native runtime addon (native/, built by node-gyp on
// `npm install`). The addon is the device of the cpu platform: a memory arena, a module
// table of dlopen'd program libraries and a persistent task scheduler. The rest of
// src/runtime talks to the device only through the interfaces below.
import { createRequire } from "node:module";
import { join } from "node:path";
import { packageRoot } from "../package_root.js";

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
 * One device. Errors are plain `Error`s (TypeError/RangeError for bad arguments); some carry
 * `code`: "TSPTO_DEVICE_OOM" (out of memory), "TSPTO_KERNEL_FAILURE" (a launch whose
 * program recorded a failure: message "kernel failure: <message>[ (in task '<k>', scope
 * <n>)]"), "TSPTO_DEVICE_CLOSED".
 */
export interface NativeDevice {
  /** Device address of a new zero-filled, 64-byte-aligned allocation. */
  alloc(nbytes: number): bigint;
  /** Releases an allocation; `addr` must be the start of a live allocation. */
  free(addr: bigint): void;
  /** True when `addr` is the start of a live allocation. */
  isLive(addr: bigint): boolean;
  /** Copies nbytes from `src` to [addr, addr+nbytes), which must lie in one live allocation. */
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  /** Copies nbytes from [addr, addr+nbytes) into `dst`. */
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  /** Device-side write/read by the interp platform's executor: checked like h2d/d2h, not counted as transfers. */
  writeDevice(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  readDevice(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  /** dlopens a program library (checks tspto_abi_version and tspto_entry); returns its id. */
  loadModule(path: string): number;
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

/** Path of the built addon, relative to the package root (src/package_root.ts). */
export const NATIVE_ADDON_PATH = "native/build/Release/tspto_native.node";

let cached: NativeAddon | undefined;

/** Loads the addon once per module instance (each worker_thread loads its own). */
export function loadNative(): NativeAddon {
  if (cached !== undefined) return cached;
  const path = join(packageRoot(), NATIVE_ADDON_PATH);
  let addon: NativeAddon;
  try {
    addon = createRequire(path)(path) as NativeAddon;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e?.code === "MODULE_NOT_FOUND") {
      throw new Error(`tspto native addon not found (${path}): ${rebuildHint()}`, { cause: err });
    }
    throw new Error(`tspto native addon failed to load: ${e?.message ?? String(err)}; ${rebuildHint()}`, { cause: err });
  }
  cached = addon;
  return addon;
}

/**
 * The command that builds the addon where tspto is: `npm rebuild tspto` in an application
 * (npm 11 skips a dependency's install script until it is approved), `npm install` in a
 * checkout of tspto itself.
 */
export function rebuildHint(): string {
  const inApp = /[\\/]node_modules[\\/]/.test(packageRoot());
  return inApp
    ? "build it with `npm rebuild tspto` in your project (npm 11 runs tspto's install script only once approved: `npm install-scripts approve tspto`); it needs a C++17 compiler, make and python3"
    : "build it with `npm install` (or `npm run build:native`) in the tspto checkout; it needs a C++17 compiler, make and python3";
}

// Loader and typed interface of the native runtime addon (native/, built by node-gyp on
// `npm install`). The addon holds the native devices (the cpu platform's simulated chip: a
// memory arena, a module table of dlopen'd program libraries and a persistent task
// scheduler). Only the targets use it; the runtime talks to a `Device` (target.ts).
import { createRequire } from "node:module";
import { join } from "node:path";
import { TsptoRuntimeError } from "../ir/index.js";
import { packageRoot } from "../ir/package_root.js";
import type { DeviceOptions, DeviceStats, DeviceTrace } from "./target.js";
export { ArgKind, type DeviceOptions } from "./target.js";

/** Counters of the native device (DeviceStats). */
export type NativeStats = DeviceStats;

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
  takeTrace(): DeviceTrace | null;
  /** Idempotent: joins threads, unloads modules, frees all memory. */
  close(): void;
  readonly closed: boolean;
}

export interface NativeAddon {
  Device: new (opts: DeviceOptions) => NativeDevice;
  /** TSPTO_ABI_VERSION of native/include/tspto_abi.h the addon was built with. */
  abiVersion: number;
}

/** Path of the built addon, relative to the package root (src/ir/package_root.ts). */
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
      throw new TsptoRuntimeError("E_NATIVE", `tspto native addon not found (${path})`, undefined, rebuildHint());
    }
    throw new TsptoRuntimeError("E_NATIVE", `tspto native addon failed to load: ${e?.message ?? String(err)}`, undefined, rebuildHint());
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

/** Native error codes and the TsptoError codes they become. */
const NATIVE_CODES: Record<string, string> = {
  TSPTO_DEVICE_OOM: "E_DEVICE_OOM",
  TSPTO_KERNEL_FAILURE: "E_KERNEL",
  TSPTO_DEVICE_CLOSED: "E_CLOSED",
};

/** A native error as a TsptoError (stable code; bad-argument errors become E_ARG). */
export function nativeError(err: unknown): Error {
  if (err instanceof TsptoRuntimeError) return err;
  const e = err as Error & { code?: string };
  const code = (e?.code && NATIVE_CODES[e.code]) ?? (e instanceof TypeError || e instanceof RangeError ? "E_ARG" : "E_NATIVE");
  const hint = code === "E_DEVICE_OOM" ? "free DeviceTensors you no longer need (freeTensor), or set TSPTO_DEVICE_MEMORY to reserve more device memory"
    : code === "E_CLOSED" ? "construct a new ChipWorker" : undefined;
  const out = new TsptoRuntimeError(code, e?.message ?? String(err), undefined, hint);
  (out as { cause?: unknown }).cause = err;
  return out;
}

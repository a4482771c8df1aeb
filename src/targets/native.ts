// Loader and typed interface of the native runtime addon (native/, built by node-gyp on
// `npm install`). The addon holds the native devices (the cpu platform's simulated chip: a
// memory arena, a module table of dlopen'd program libraries and a persistent task
// scheduler). Only the targets use it; the runtime talks to a `Device` (target.ts).
import { createRequire } from "node:module";
import { join } from "node:path";
import { DTYPE_BYTES, TsptoRuntimeError } from "../ir/index.js";
import { dimSlotNames, type CompiledMeta } from "../artifact/index.js";
import { packageRoot } from "../ir/package_root.js";
import type { DeviceOptions, DeviceStats, DeviceTrace } from "./target.js";
export { ArgKind, type DeviceOptions } from "./target.js";

/** Counters of the native device (DeviceStats, and pendingFrees: allocations freed while
 *  launches in flight held them; their bytes leave bytesInUse when the last one completes). */
export type NativeStats = DeviceStats & { pendingFrees: number };

/**
 * One device. Errors are plain `Error`s (TypeError/RangeError for bad arguments), each with a
 * `code` (and `argIndex`, 0-based, for a launch argument): "TSPTO_DEVICE_OOM",
 * "TSPTO_KERNEL_FAILURE" (message "kernel failure: <message>[ (in task '<k>', scope <n>)]"),
 * "TSPTO_DEVICE_CLOSED", "TSPTO_BAD_ADDRESS", "TSPTO_HOST_VIEW", "TSPTO_BAD_ARGUMENT",
 * "TSPTO_MODULE". guardNative / fromNativeError (native_errors.ts) turn them into TsptoErrors.
 * Launches pin the allocations and the module they use until they complete (a free defers);
 * launchAsync stages host inputs when called and copies results back on the JS thread after
 * re-checking the views.
 */
/** The calls both native device objects answer (native/src/device.h; cuda_device.h the same), as native_device.ts wraps them. */
export interface NativeDeviceCalls {
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
  /** dlopens a program library (argBytes: see argBytesOf) (checks tspto_abi_version and tspto_entry); returns its id.
   *  `argBytes[i]`: bytes of entry parameter i's tensor (-1 for scalars). With it, every
   *  launch checks each host view's live byte length against it (a detached, shrunk or short
   *  view is a TSPTO_HOST_VIEW error naming the argument) and stages exactly that many bytes. */
  loadModule(path: string, argBytes?: readonly ArgBytes[]): number;
  unloadModule(id: number): void;
  /** Runs one launch; returns device time in ns (orchestration start → last task end).
   *  `slots` (optional, one per argument): the numeric value of each device-address and scalar
   *  argument, read in one block instead of converting `args[i]` (an int slot holding NaN is
   *  read from `args[i]`: an int64 beyond 2^53 given as a bigint); host views always come from `args`. */
  launch(moduleId: number, args: unknown[], kinds: Uint8Array, slots?: Float64Array): number;
  /** The same launch off the JS thread; launches on one device are serialized. */
  launchAsync(moduleId: number, args: unknown[], kinds: Uint8Array, slots?: Float64Array): Promise<number>;
  stats(): DeviceStats;
  /** DFX: what the following launches record (mask: 1 tasks+edges, 2 argument snapshots of
   *  at most dumpBytes per access (0 = whole), 4 hardware counters; 0 = off). */
  setRecording(mask: number, dumpBytes: number): void;
  /** The trace of the last launch that recorded, once; null otherwise. */
  takeTrace(): unknown;
  /** Idempotent: joins threads, unloads modules, frees all memory. */
  close(): void;
  readonly closed: boolean;
}

/** The cpu platform's native device (native/src/device.h). */
export interface NativeDevice extends NativeDeviceCalls {
  /** Device-side write/read by the interp platform's executor: checked like h2d/d2h, not counted as transfers. */
  writeDevice(addr: bigint, src: ArrayBufferView, nbytes: number): void;
  readDevice(dst: ArrayBufferView, addr: bigint, nbytes: number): void;
  stats(): NativeStats;
  /** The trace of the last launch that recorded, once, packed (unpackTrace reads it); null otherwise. */
  takeTrace(): PackedTrace | null;
}

/** The native trace as the addon returns it: typed arrays, not an object per task (device_wrap.h TakeTrace). */
export interface PackedTrace {
  launchStartNs: number; entryEndNs: number; launchEndNs: number; mask: number; pmuError: string;
  argSlots: bigint[]; orchBuffers: { base: bigint; nbytes: number }[];
  names: string[];
  /** 10 per task: id, name index, scope, core, submit, start, end, cycles, instructions, access count. */
  tasks: Float64Array;
  /** 4 + 3 * rankFields per access: nbytes, mode, rank, elem bytes, dims, offsets, extents. */
  acc: Float64Array;
  /** 2 per access: base, tensor. */
  addrs: BigUint64Array;
  /** With argument snapshots: their bytes, and 4 per access (before offset, length, after offset, length). */
  dump?: Uint8Array; dumpIdx?: Float64Array;
  /** 4 per edge: from, to, from access, to access. */
  edges: Int32Array;
  rankFields: number;
}

/**
 * The DeviceTrace of a packed native trace: one object per task and per access, made in JS
 * (the addon making them through Node-API took ~50 µs per task); snapshots are views into
 * one buffer.
 */
export function unpackTrace(p: PackedTrace): DeviceTrace {
  const R = p.rankFields, AF = 4 + 3 * R;
  const tasks: DeviceTrace["tasks"] = new Array(p.tasks.length / 10);
  let k = 0;
  for (let t = 0; t < tasks.length; t++) {
    const f = p.tasks, o = t * 10;
    const n = f[o + 9];
    const accesses: DeviceTrace["tasks"][number]["accesses"] = new Array(n);
    for (let j = 0; j < n; j++, k++) {
      const a = p.acc, q = k * AF, rank = a[q + 2];
      const acc: DeviceTrace["tasks"][number]["accesses"][number] = { base: p.addrs[2 * k], nbytes: a[q], mode: a[q + 1] };
      if (rank > 0) {
        const dims = new Array<number>(rank), offsets = new Array<number>(rank), extents = new Array<number>(rank);
        for (let d = 0; d < rank; d++) { dims[d] = a[q + 4 + d]; offsets[d] = a[q + 4 + R + d]; extents[d] = a[q + 4 + 2 * R + d]; }
        acc.window = { tensor: p.addrs[2 * k + 1], elemBytes: a[q + 3], dims, offsets, extents };
      }
      if (p.dump && p.dumpIdx) {
        const d = p.dumpIdx, w = 4 * k;
        acc.before = p.dump.subarray(d[w], d[w] + d[w + 1]);
        acc.after = p.dump.subarray(d[w + 2], d[w + 2] + d[w + 3]);
      }
      accesses[j] = acc;
    }
    tasks[t] = {
      id: f[o], kernel: p.names[f[o + 1]], scope: f[o + 2], core: f[o + 3], submitNs: f[o + 4], startNs: f[o + 5], endNs: f[o + 6],
      cycles: f[o + 7], instructions: f[o + 8], accesses,
    };
  }
  const edges: DeviceTrace["edges"] = new Array(p.edges.length / 4);
  for (let i = 0; i < edges.length; i++) edges[i] = { from: p.edges[4 * i], to: p.edges[4 * i + 1], fromAccess: p.edges[4 * i + 2], toAccess: p.edges[4 * i + 3] };
  return {
    launchStartNs: p.launchStartNs, entryEndNs: p.entryEndNs, launchEndNs: p.launchEndNs, mask: p.mask, pmuError: p.pmuError,
    argSlots: p.argSlots, orchBuffers: p.orchBuffers, tasks, edges,
  };
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


/**
 * One launch slot's byte count for loadModule: bytes of a tensor parameter, -1 for a scalar
 * slot, or for a tensor with dynamic dimensions `[staticBytes, slot, ...]`: its bytes are
 * staticBytes (element size times the static extents) times the values of those slots (the
 * dynamic extents, packed after the parameters).
 */
export type ArgBytes = number | readonly number[];

/** The loadModule byte counts of a program's launch slots (parameters, then dynamic dimensions). */
export function argBytesOf(meta: CompiledMeta): ArgBytes[] {
  const symbols = dimSlotNames(meta.params);
  const slots: ArgBytes[] = meta.params.map((p) => {
    if (p.kind !== "tensor") return -1;
    const shape = p.shape ?? [];
    const bytes = shape.reduce((a: number, d) => (d === -1 ? a : a * d), 1) * DTYPE_BYTES[p.dtype];
    if (!p.dimNames) return bytes;
    return [bytes, ...p.dimNames.flatMap((d) => (d === null ? [] : [meta.params.length + symbols.indexOf(d)]))];
  });
  return [...slots, ...symbols.map(() => -1)];
}

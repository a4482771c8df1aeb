// What the cpu and cuda devices share: a Device over a device object of the native addon
// (native/src/device.h, cuda_device.h: the same calls), every call through guardNative so that
// a native failure reaches the user as a TsptoError. Each platform adds how it opens its device,
// copies within it (d2d), loads an artifact and reads its trace.
import type { ArtifactRef, Device, DeviceStats, DeviceTrace } from "./target.js";
export type { NativeDeviceCalls } from "./native.js";
import type { ArgBytes, NativeDeviceCalls } from "./native.js";
import { fromNativeError, guardNative } from "./native_errors.js";

export abstract class NativeBackedDevice<N extends NativeDeviceCalls> implements Device {
  abstract readonly records: boolean;
  /** The native device (opened by the platform's constructor, through guardNative). */
  protected constructor(protected readonly n: N) {}

  abstract d2d(dst: bigint, src: bigint, nbytes: number): void;
  abstract load(artifact: ArtifactRef): number;
  abstract takeTrace(): DeviceTrace | null;

  alloc(nbytes: number): bigint { return guardNative(() => this.n.alloc(nbytes)); }
  free(addr: bigint): void { guardNative(() => this.n.free(addr)); }
  isLive(addr: bigint): boolean { return this.n.isLive(addr); }
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void { guardNative(() => this.n.h2d(addr, src, nbytes)); }
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void { guardNative(() => this.n.d2h(dst, addr, nbytes)); }
  /** Loads the verified library at `path` with the entry's argument sizes. */
  protected loadLibrary(path: string, argBytes: readonly ArgBytes[]): number { return guardNative(() => this.n.loadModule(path, argBytes)); }
  unload(module: number): void { guardNative(() => this.n.unloadModule(module)); }
  // (the launch path: the guard written out, no closure per launch)
  launch(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): number {
    try { return this.n.launch(module, args as unknown[], kinds, slots); } catch (e) { throw fromNativeError(e); }
  }
  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): Promise<number> {
    try {
      return this.n.launchAsync(module, args as unknown[], kinds, slots).catch((e: unknown) => { throw fromNativeError(e); });
    } catch (e) {
      return Promise.reject(fromNativeError(e));
    }
  }
  stats(): DeviceStats { return this.n.stats(); }
  setRecording(mask: number, dumpBytes: number): void { this.n.setRecording(mask, dumpBytes); }
  close(): void { this.n.close(); }
  get closed(): boolean { return this.n.closed; }
}

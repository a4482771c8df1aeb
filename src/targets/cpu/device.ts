// The cpu platform's device: the native addon's simulated chip (memory arena, dlopen'd
// program libraries, persistent scheduler), seen through the Device interface. Native
// failures become TsptoErrors here.
import { verifiedLibrary, type ArtifactRef } from "../../artifact/index.js";
import { argBytesOf, loadNative, unpackTrace, type NativeDevice } from "../native.js";
import { guardNative, guardNativeAsync } from "../native_errors.js";
import type { Device, DeviceOptions, DeviceStats, DeviceTrace } from "../target.js";

export class CpuDevice implements Device {
  readonly #n: NativeDevice;
  readonly records = true;

  constructor(opts: DeviceOptions) {
    const Native = loadNative();
    this.#n = guardNative(() => new Native.Device(opts));
  }

  /** @internal The native device itself: src/distributed hands its memory to MPI in place (the addon checks every range against the arena). */
  get native(): NativeDevice { return this.#n; }

  alloc(nbytes: number): bigint { return guardNative(() => this.#n.alloc(nbytes)); }
  free(addr: bigint): void { guardNative(() => this.#n.free(addr)); }
  isLive(addr: bigint): boolean { return this.#n.isLive(addr); }
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void { guardNative(() => this.#n.h2d(addr, src, nbytes)); }
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void { guardNative(() => this.#n.d2h(dst, addr, nbytes)); }
  d2d(dst: bigint, src: bigint, nbytes: number): void {
    // Device-internal: staged through host memory, not counted as a transfer.
    const tmp = new Uint8Array(nbytes);
    guardNative(() => {
      this.#n.readDevice(tmp, src, nbytes);
      this.#n.writeDevice(dst, tmp, nbytes);
    });
  }
  load(artifact: ArtifactRef): number {
    const path = verifiedLibrary(artifact);
    // argBytes: the native launch checks each host view's live byte length against these
    // (a detached / shrunk / short view is E_HOST_VIEW) and stages exactly that many bytes.
    const argBytes = argBytesOf(artifact.meta);
    return guardNative(() => this.#n.loadModule(path, argBytes));
  }
  unload(module: number): void { guardNative(() => this.#n.unloadModule(module)); }
  launch(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): number {
    return guardNative(() => this.#n.launch(module, args as unknown[], kinds, slots));
  }
  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): Promise<number> {
    return guardNativeAsync(() => this.#n.launchAsync(module, args as unknown[], kinds, slots));
  }
  stats(): DeviceStats { return this.#n.stats(); }
  setRecording(mask: number, dumpBytes: number): void { this.#n.setRecording(mask, dumpBytes); }
  takeTrace(): DeviceTrace | null { const p = this.#n.takeTrace(); return p ? unpackTrace(p) : null; }
  close(): void { this.#n.close(); }
  get closed(): boolean { return this.#n.closed; }
}

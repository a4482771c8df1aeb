// The cpu platform's device: the native addon's simulated chip (memory arena, dlopen'd
// program libraries, persistent scheduler), seen through the Device interface. Native
// failures become TsptoErrors here.
import { verifiedLibrary, type ArtifactRef } from "../../artifact/index.js";
import { argBytesOf, loadNative, nativeError, unpackTrace, type NativeDevice } from "../native.js";
import type { Device, DeviceOptions, DeviceStats, DeviceTrace } from "../target.js";

export class CpuDevice implements Device {
  readonly #n: NativeDevice;
  readonly records = true;

  constructor(opts: DeviceOptions) {
    const Native = loadNative();
    try { this.#n = new Native.Device(opts); } catch (e) { throw nativeError(e); }
  }

  /** @internal The native device itself: src/distributed hands its memory to MPI in place (the addon checks every range against the arena). */
  get native(): NativeDevice { return this.#n; }

  alloc(nbytes: number): bigint { try { return this.#n.alloc(nbytes); } catch (e) { throw nativeError(e); } }
  free(addr: bigint): void { try { this.#n.free(addr); } catch (e) { throw nativeError(e); } }
  isLive(addr: bigint): boolean { return this.#n.isLive(addr); }
  h2d(addr: bigint, src: ArrayBufferView, nbytes: number): void { try { this.#n.h2d(addr, src, nbytes); } catch (e) { throw nativeError(e); } }
  d2h(dst: ArrayBufferView, addr: bigint, nbytes: number): void { try { this.#n.d2h(dst, addr, nbytes); } catch (e) { throw nativeError(e); } }
  d2d(dst: bigint, src: bigint, nbytes: number): void {
    // Device-internal: staged through host memory, not counted as a transfer.
    const tmp = new Uint8Array(nbytes);
    try {
      this.#n.readDevice(tmp, src, nbytes);
      this.#n.writeDevice(dst, tmp, nbytes);
    } catch (e) { throw nativeError(e); }
  }
  load(artifact: ArtifactRef): number {
    const path = verifiedLibrary(artifact);
    // argBytes: the native launch checks each host view's live byte length against these
    // (a detached / shrunk / short view is E_HOST_VIEW) and stages exactly that many bytes.
    const argBytes = argBytesOf(artifact.meta);
    try { return this.#n.loadModule(path, argBytes); } catch (e) { throw nativeError(e); }
  }
  unload(module: number): void { try { this.#n.unloadModule(module); } catch (e) { throw nativeError(e); } }
  launch(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): number {
    try { return this.#n.launch(module, args as unknown[], kinds, slots); } catch (e) { throw nativeError(e); }
  }
  launchAsync(module: number, args: readonly unknown[], kinds: Uint8Array, slots?: Float64Array): Promise<number> {
    try { return this.#n.launchAsync(module, args as unknown[], kinds, slots).catch((e: unknown) => { throw nativeError(e); }); } catch (e) { return Promise.reject(nativeError(e)); }
  }
  stats(): DeviceStats { return this.#n.stats(); }
  setRecording(mask: number, dumpBytes: number): void { this.#n.setRecording(mask, dumpBytes); }
  takeTrace(): DeviceTrace | null { const p = this.#n.takeTrace(); return p ? unpackTrace(p) : null; }
  close(): void { this.#n.close(); }
  get closed(): boolean { return this.#n.closed; }
}

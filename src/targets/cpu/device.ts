// The cpu platform's device: the native addon's simulated chip (memory arena, dlopen'd
// program libraries, persistent scheduler), seen through the Device interface (the calls it
// shares with cuda's: native_device.ts). Native failures become TsptoErrors there.
import { verifiedLibrary, type ArtifactRef } from "../../artifact/index.js";
import { argBytesOf, loadNative, unpackTrace, type NativeDevice } from "../native.js";
import { NativeBackedDevice } from "../native_device.js";
import { guardNative } from "../native_errors.js";
import type { DeviceOptions, DeviceTrace } from "../target.js";

export class CpuDevice extends NativeBackedDevice<NativeDevice> {
  readonly records = true;

  constructor(opts: DeviceOptions) {
    const Native = loadNative();
    super(guardNative(() => new Native.Device(opts)));
  }

  /** @internal The native device itself: src/distributed hands its memory to MPI in place (the addon checks every range against the arena). */
  get native(): NativeDevice { return this.n; }

  d2d(dst: bigint, src: bigint, nbytes: number): void {
    // Device-internal: staged through host memory, not counted as a transfer.
    const tmp = new Uint8Array(nbytes);
    guardNative(() => {
      this.n.readDevice(tmp, src, nbytes);
      this.n.writeDevice(dst, tmp, nbytes);
    });
  }
  load(artifact: ArtifactRef): number {
    const path = verifiedLibrary(artifact);
    // argBytes: the native launch checks each host view's live byte length against these
    // (a detached / shrunk / short view is E_HOST_VIEW) and stages exactly that many bytes.
    return this.loadLibrary(path, argBytesOf(artifact.meta));
  }
  takeTrace(): DeviceTrace | null { const p = this.n.takeTrace(); return p ? unpackTrace(p) : null; }
}

// The cuda platform's device: the native addon's CudaDevice (CUDA driver API loaded at run
// time with dlopen("libcuda.so.1"); nothing links against CUDA), seen through the Device
// interface. Native failures become TsptoErrors here; a machine without a driver or a GPU
// gets one clear E_NO_GPU error when the device is opened.
import { createHash } from "node:crypto";
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { TsptoRuntimeError } from "../../ir/index.js";
import { FILE_LIMITS, STAMP_FILE, readInside, readTextInside, unsafePathError, untrustedReason, verifiedLibrary } from "../../artifact/index.js";
import { argBytesOf, loadNative } from "../native.js";
import { guardNative } from "../native_errors.js";
import { NativeBackedDevice, type NativeDeviceCalls } from "../native_device.js";
import type { ArtifactRef, DeviceOptions, DeviceStats, DeviceTrace } from "../target.js";
import { FATBIN_PATH } from "./toolchain.js";

/** The native device object (native/src/cuda_device.cc): the cpu one's calls, and a copy within the device. */
interface NativeCudaDevice extends NativeDeviceCalls {
  d2d(dst: bigint, src: bigint, nbytes: number): void;
  stats(): DeviceStats & { pendingFrees: number };
}
interface CudaAddon { CudaDevice?: new (opts: DeviceOptions) => NativeCudaDevice }

// Native failures become TsptoErrors through the one table of native codes (native_errors.ts,
// guardNative), which also maps the cuda codes (TSPTO_NO_GPU -> E_NO_GPU, TSPTO_CUDA -> E_CUDA).

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

export class CudaDevice extends NativeBackedDevice<NativeCudaDevice> {
  /**
   * DFX swimlanes of kernel launches from CUDA events (one lane: the stream), with the opt-in
   * v2 kernels only (TSPTO_CUDA_KERNELS=v2 when the device opens) until it has run on a GPU.
   */
  readonly records = (process.env.TSPTO_CUDA_KERNELS ?? "") === "v2";

  constructor(opts: DeviceOptions) {
    const Ctor = (loadNative() as unknown as CudaAddon).CudaDevice;
    if (!Ctor) {
      throw new TsptoRuntimeError("E_NO_GPU", "the tspto native addon was built without the cuda device", undefined, "rebuild it: npx node-gyp rebuild --directory native");
    }
    super(guardNative(() => new Ctor(opts)));
  }

  d2d(dst: bigint, src: bigint, nbytes: number): void { guardNative(() => this.n.d2d(dst, src, nbytes)); }
  load(artifact: ArtifactRef): number {
    // both binaries are checked against their recorded hashes before anything loads them
    const dir = artifact.outputDir;
    // the host library: hash and directory permissions (artifact room); the fatbin: its hash in build/stamp.json
    const lib = verifiedLibrary(artifact);
    let stamp: { fatbinSha256?: string };
    try {
      // (regular files inside the artifact only, within their limits: the directory is not trusted)
      stamp = JSON.parse(readTextInside(dir, STAMP_FILE, { maxBytes: FILE_LIMITS.meta })) as { fatbinSha256?: string };
      const fatbin = join(dir, FATBIN_PATH);
      const why = untrustedReason(fatbin, lstatSync(fatbin));
      if (why) throw unsafePathError(`${fatbin} not loaded: ${why}`, "build the program into a directory of your own (outputDir), not one other users can write");
      if (sha256(readInside(dir, FATBIN_PATH, { maxBytes: FILE_LIMITS.library })) !== stamp.fatbinSha256) throw new Error(`${fatbin} does not match its recorded hash`);
    } catch (e) {
      if ((e as { code?: string }).code === "E_UNSAFE_PATH") throw e;
      throw new TsptoRuntimeError("E_ARTIFACT", `cannot load the cuda artifact ${dir}: ${(e as Error).message}`, undefined, "rebuild it (delete the directory and compile again)");
    }
    // argBytes, as on cpu: every launch checks each host view's live byte length against
    // these (a detached / shrunk / short view is E_HOST_VIEW) and stages exactly that many bytes.
    const argBytes = argBytesOf(artifact.meta);
    return this.loadLibrary(lib, argBytes);
  }
  takeTrace(): DeviceTrace | null { return this.records ? (this.n.takeTrace() as DeviceTrace | null) : null; }
}

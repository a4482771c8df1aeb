// The cuda device on a machine without a GPU: opening it fails with one clear TsptoError
// (never a crash), and the addon still loads and serves the cpu platform. (With a GPU the
// device's own checks are in ./gpu_checks.ts.)
import { describe, expect, it } from "vitest";
import { TsptoError } from "../../../src/ir/index.js";
import { cudaTarget, CudaDevice } from "../../../src/targets/cuda/index.js";
import { loadNative } from "../../../src/targets/native.js";
import { hasCudaGpu } from "./gpu.js";

const OPTS = { deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 24, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 };

describe.skipIf(hasCudaGpu)("cuda device without a GPU", () => {
  it("openDevice fails with E_NO_GPU naming libcuda.so.1", () => {
    let err: unknown;
    try { cudaTarget.openDevice(OPTS); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(TsptoError);
    expect((err as TsptoError).code).toBe("E_NO_GPU");
    expect((err as Error).message).toMatch(/no CUDA driver found \(libcuda\.so\.1\)|no GPU/);
    expect((err as Error).message).toContain("hint: run on a machine with an NVIDIA GPU");
  });

  it("fails the same way every time, and the cpu device of the same addon still works", () => {
    for (let i = 0; i < 3; i++) expect(() => new CudaDevice(OPTS)).toThrow(/E_NO_GPU/);
    const Native = loadNative();
    const d = new Native.Device(OPTS);
    const a = d.alloc(16);
    d.h2d(a, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]), 16);
    const back = new Uint8Array(16);
    d.d2h(back, a, 16);
    expect([...back]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    d.close();
  });
});

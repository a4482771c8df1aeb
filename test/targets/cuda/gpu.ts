// hasCudaGpu: a CUDA driver and at least one GPU are usable (opening the cuda device works).
import { CudaDevice } from "../../../src/targets/cuda/index.js";

function probe(): boolean {
  try {
    const d = new CudaDevice({ deviceId: 0, coreThreads: 1, schedThreads: 1, scratchBytes: 1 << 20, memoryBytes: 1 << 20, ringTaskWindow: 16, ringHeap: 1 << 20, ringDepPool: 1024 });
    d.close();
    return true;
  } catch {
    return false;
  }
}
export const hasCudaGpu = process.env.TSPTO_NO_GPU === "1" ? false : probe();

// With a GPU (hasCudaGpu; skipped elsewhere): the checks of ./gpu_checks.ts (also run by the
// GPU pack without vitest): the device, the seed program, every corpus program against
// interp, every example on cuda, close() freeing GPU memory.
import { describe, it } from "vitest";
import { hasCudaGpu } from "./gpu.js";
import { gpuChecks } from "./gpu_checks.js";

describe.runIf(hasCudaGpu)("cuda on a GPU", () => {
  for (const c of gpuChecks()) it(c.name, async () => { await c.run(); }, 600_000);
});

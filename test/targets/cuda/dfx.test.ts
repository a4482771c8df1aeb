// DFX on the GPU: the trace the cuda device records from CUDA events (native/src/cuda_device.cc,
// FinishTraceLocked: one task per kernel on core 0 — the stream —, submit / start / end in host
// ns, no accesses, no edges, mask 1) goes through the cpu's writer into the same swimlane
// file. The events themselves need a GPU (the GPU pack, --kernels=v2 with enableChipSwimlane).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RunConfig } from "tspto";
import { writeDfx } from "../../../src/runtime/dfx.js";
import type { CompiledMeta } from "../../../src/artifact/index.js";
import type { DeviceTrace } from "../../../src/targets/target.js";

const dir = mkdtempSync(join(tmpdir(), "tspto-cuda-dfx-"));
afterAll(() => { if (process.env.TSPTO_KEEP_TEST_DIRS !== "1") rmSync(dir, { recursive: true, force: true }); });

describe("cuda DFX: a kernel trace from CUDA events becomes the cpu's swimlane", () => {
  it("two kernels on the stream's lane, their names and event times", () => {
    const meta = {
      name: "p", entry: "p", platform: "cuda", backendType: "cuda", runtimeName: "tspto-cuda", params: [{ name: "a", kind: "tensor", direction: "in", shape: [4], dtype: "float32" }],
      outputIndices: [], returns: [], hasReturn: false, kernels: [{ name: "k0", symbol: "k_k0" }, { name: "k1", symbol: "k_k1" }],
    } as unknown as CompiledMeta;
    const t0 = 1_000_000;
    const trace: DeviceTrace = {
      launchStartNs: t0, entryEndNs: t0 + 9_000, launchEndNs: t0 + 60_000, mask: 1, pmuError: "hardware counters and argument dumps are not recorded on the cuda platform",
      argSlots: [0x7000n], orchBuffers: [],
      tasks: [
        { id: 0, kernel: "k_k0", scope: 0, core: 0, submitNs: t0 + 2_000, startNs: t0 + 2_000, endNs: t0 + 22_000, cycles: -1, instructions: -1, accesses: [] },
        { id: 1, kernel: "k_k1", scope: 0, core: 0, submitNs: t0 + 5_000, startNs: t0 + 23_000, endNs: t0 + 51_000, cycles: -1, instructions: -1, accesses: [] },
      ],
      edges: [],
    };
    const out = writeDfx(dir, meta, new RunConfig({ platform: "cuda", enableChipSwimlane: true }), trace as never, 1, 0);
    const lane = JSON.parse(readFileSync(join(out, "swimlane.json"), "utf8")) as { traceEvents: { ph: string; name: string; tid: number; ts: number; dur?: number }[] };
    // µs from the launch's start, on the lane of core 0 (the stream)
    const kernels = lane.traceEvents.filter((e) => e.ph === "X" && e.name.startsWith("k_")).map((e) => [e.name, e.tid, e.ts, e.dur]);
    expect(kernels).toEqual([["k_k0", 0, 2, 20], ["k_k1", 0, 23, 28]]);
    const submits = lane.traceEvents.filter((e) => e.name.startsWith("submit ")).map((e) => [e.name, e.ts]);
    expect(submits).toEqual([["submit k_k0", 2], ["submit k_k1", 5]]);
  });
});

// The cuda device's CUDA-graph bookkeeping (native/src/cuda_host.h, GraphBook), through the
// addon's cudaHost export: host logic only, no GPU. With TSPTO_CUDA_GRAPH=1 a v2 module's
// launches are recorded per segment (the launches between two flushes: a wait, a free, a
// scratch reallocation); a segment's first run builds and instantiates a graph, a run with the
// same kernels and grids patches the nodes whose parameters changed
// (cuGraphExecKernelNodeSetParams), anything else rebuilds. The driver calls themselves
// (cuGraphCreate / AddKernelNode / Instantiate / Launch) need a GPU: the GPU pack runs them.
import { describe, expect, it } from "vitest";
import { loadNative } from "../../../src/targets/native.js";

type Launch = number[]; // [kernel, grid, block, shared, slot values...]
interface Decision { rebuild: boolean; patch: number[] }
const host = (loadNative() as unknown as { cudaHost: { graphDecisions(runs: Launch[][][]): Decision[][] } }).cudaHost;

describe("cuda graphs: which segments are rebuilt, patched or replayed as they are", () => {
  const k0 = (a: number, o: number): Launch => [0, 128, 256, 0, a, o];
  const k1 = (a: number, o: number): Launch => [1, 64, 256, 49152, a, o];

  it("builds once, then replays: no patch when nothing changed, the changed node when an address did", () => {
    const run = (a: number, o: number) => [[k0(a, o), k1(o, 4096)]];
    const d = host.graphDecisions([run(1024, 2048), run(1024, 2048), run(1024, 8192), run(1024, 8192)]);
    expect(d).toEqual([
      [{ rebuild: true, patch: [] }],
      [{ rebuild: false, patch: [] }],
      [{ rebuild: false, patch: [0, 1] }], // both nodes name the output address
      [{ rebuild: false, patch: [] }],
    ]);
  });

  it("rebuilds when the kernels, their order, a grid, the block or shared memory differ, or a node comes or goes", () => {
    const base: Launch[][] = [[k0(1, 2), k1(2, 3)]];
    const runs: Launch[][][] = [
      base,
      [[k1(2, 3), k0(1, 2)]], // order
      base,
      [[[0, 127, 256, 0, 1, 2], k1(2, 3)]], // grid
      base,
      [[[0, 128, 128, 0, 1, 2], k1(2, 3)]], // block
      base,
      [[k0(1, 2), [1, 64, 256, 0, 2, 3]]], // shared memory
      base,
      [[k0(1, 2)]], // a node fewer
      [[k0(1, 2), k1(2, 3), k1(3, 4)]], // more
    ];
    expect(host.graphDecisions(runs).map((r) => r[0].rebuild)).toEqual([true, true, true, true, true, true, true, true, true, true, true]);
  });

  it("keeps one graph per segment: a run of two segments patches each against its own last launch", () => {
    const run = (x: number, y: number) => [[k0(1, x)], [k1(x, y), k0(y, 5)]];
    const d = host.graphDecisions([run(10, 20), run(10, 20), run(10, 30), run(11, 30)]);
    expect(d).toEqual([
      [{ rebuild: true, patch: [] }, { rebuild: true, patch: [] }],
      [{ rebuild: false, patch: [] }, { rebuild: false, patch: [] }],
      [{ rebuild: false, patch: [] }, { rebuild: false, patch: [0, 1] }],
      [{ rebuild: false, patch: [0] }, { rebuild: false, patch: [0] }],
    ]);
  });

  it("refuses a launch that is not [kernel, grid, block, shared, slots...]", () => {
    expect(() => host.graphDecisions([[[[0, 1, 2]]]])).toThrow("a launch is [kernel, grid, block, shared, slots...]");
  });
});

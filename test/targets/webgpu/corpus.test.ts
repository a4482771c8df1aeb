// Every corpus program (each example specialization without dynamic dimensions, the seed
// program of API.md §1, the tensor-level shape forms, the indexing ops: ../cuda/corpus.ts) runs
// on webgpu and agrees with interp on seeded random inputs. The gathers need indices inside
// their tables (and int32 ones): ./indexing.test.ts runs them. On a machine without WebGPU (no Dawn, no
// adapter) the tests skip and say why.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChipWorker, RunConfig } from "tspto";
import type { Program } from "../../../src/ir/index.js";
import { loweredCorpus } from "../cuda/corpus.js";
import { agreesWithInterp, titled, webgpuUnavailable } from "./helpers.js";

const why = await webgpuUnavailable();
if (why) console.warn(`webgpu corpus tests skipped: ${why}`);
const GATHERS = new Set(["indexing_embed", "indexing_pickCols", "indexing_tileGather"]);
const programs: Map<string, Program> = why ? new Map() : new Map([...(await loweredCorpus())].filter(([n]) => !GATHERS.has(n)));

describe.skipIf(!!why)(titled("webgpu: the corpus agrees with interp", why), () => {
  let gpu: ChipWorker, cpu: ChipWorker;
  beforeAll(async () => {
    gpu = await new ChipWorker(new RunConfig({ platform: "webgpu" })).initAsync();
    cpu = new ChipWorker(new RunConfig({ platform: "interp" }));
  });
  afterAll(() => { gpu?.close(); cpu?.close(); });

  it("holds the seed program and a program of every example", () => {
    expect(programs.size).toBeGreaterThan(30);
    expect([...programs.keys()]).toContain("seed_addKernel");
  });

  for (const [name, p] of programs) {
    it(name, async () => { await agreesWithInterp(p, name, gpu, cpu); });
  }
});

// Differential fuzzing in CI: a bounded number of seeded random kernels (see differential.ts)
// on cpu and interp against the fuzzer's own reference. `npm run fuzz` runs thousands.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupFuzz, closeFuzzWorkers, runBatch, type Mismatch } from "./differential.js";

const BATCHES = Number(process.env.TSPTO_FUZZ_DIFF_BATCHES ?? 16);
const SIZE = 14;

afterAll(() => { closeFuzzWorkers(); cleanupFuzz(); });

describe("differential fuzzer (cpu, interp vs an independent reference)", () => {
  it(`${BATCHES} batches of ${SIZE} random kernels agree with the reference`, async () => {
    const mismatches: Mismatch[] = [];
    let cases = 0;
    for (let b = 0; b < BATCHES; b++) {
      const r = await runBatch(1000 + b, SIZE);
      cases += r.cases;
      mismatches.push(...r.mismatches);
    }
    expect(cases).toBe(BATCHES * SIZE);
    expect(mismatches.map((m) => `seed ${m.seed} ${m.platform} ${m.what}: element ${m.index} got ${m.got}, want ${m.want}`)).toEqual([]);
  }, 600_000);

  it("reports a wrong result (the comparison is not vacuous)", async () => {
    const r = await runBatch(77, 6, ["cpu", "interp"], { corrupt: true });
    expect(r.mismatches.length).toBe(12);
    expect(r.mismatches[0].what).toMatch(/^case 0: /);
  }, 120_000);
});

// Differential fuzzing in CI: a bounded number of seeded random kernels (see differential.ts)
// on cpu and interp against the fuzzer's own reference, and a sample built at -O0 and at the
// production flags compared bit for bit. `npm run fuzz` runs thousands.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupFuzz, closeFuzzWorkers, runBatch, type Mismatch } from "./differential.js";

const BATCHES = Number(process.env.TSPTO_FUZZ_DIFF_BATCHES ?? 16);
const O0_BATCHES = Number(process.env.TSPTO_FUZZ_O0_BATCHES ?? 3);
const SIZE = 14;

afterAll(() => { closeFuzzWorkers(); cleanupFuzz(); });

const show = (m: Mismatch) => `seed ${m.seed} ${m.platform} ${m.what}: element ${m.index} got ${m.got}, want ${m.want}`;

describe("differential fuzzer (cpu, interp vs an independent reference)", () => {
  it(`${BATCHES} batches of ${SIZE} random kernels agree with the reference (${O0_BATCHES} of them also built at -O0)`, async () => {
    const mismatches: Mismatch[] = [];
    let cases = 0;
    for (let b = 0; b < BATCHES; b++) {
      const r = await runBatch(1000 + b, SIZE, ["cpu", "interp"], { o0: b < O0_BATCHES });
      cases += r.cases;
      mismatches.push(...r.mismatches);
    }
    expect(cases).toBe(BATCHES * SIZE);
    expect(mismatches.map(show)).toEqual([]);
  }, 900_000);

  it("reports a wrong result (the comparison is not vacuous)", async () => {
    const r = await runBatch(77, 6, ["cpu", "interp"], { corrupt: true });
    expect(r.mismatches.length).toBe(12);
    expect(r.mismatches[0].what).toMatch(/^case 0: /);
  }, 120_000);
});

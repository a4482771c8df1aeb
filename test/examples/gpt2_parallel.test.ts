// examples/gpt2 under mpirun, as a user runs it: `--tp N` (tensor parallelism: each rank holds
// n_head / N heads and 4D / N MLP units of every block and vocab / N rows of wte (unevenly at
// N = 4), the residual stream all-reduced after the embedding and each row-parallel layer, the
// logits gathered) at N = 2 and 4 gives the tokens of one process and its logits within
// float32 rounding; `--dp` splits a batch of prompts over the ranks (unevenly too) and gives each
// prompt's tokens and logits of one process. Skips, saying so, without `mpirun`; the errors that
// need no MPI job are checked everywhere. (Across network-namespace hosts: multihost.test.ts.)
import { describe, it, expect, vi } from "vitest";
import { join } from "node:path";
import { childEnv, hasMpirun, root, run } from "../distributed/jobs.js";
import { CFG, COLLECTIVES, NEW, PROMPT, precompile, readLogits, singleProcess, tinyCheckpoint, worstDiff } from "./gpt2_fixture.js";

// Every rank compiles (or loads) the model's programs on a busy 2-core machine.
vi.setConfig({ testTimeout: 300_000 });
if (!hasMpirun) console.warn("SKIPPED: examples/gpt2 --tp / --dp under mpirun (no `mpirun` on this machine: apt-get install openmpi-bin libopenmpi-dev)");

const GENERATE = "examples/gpt2/generate.ts";
const mpirun = (ranks: number, args: string[]) =>
  run("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", String(ranks), "node", "--import", "tsx", GENERATE, ...args], childEnv(), 240_000);
/** generate.ts alone (no mpirun), without blocking the test worker's event loop. */
const generate = (args: string[]) => run(process.execPath, ["--import", "tsx", join(root, GENERATE), ...args], childEnv(), 120_000).then((r) => ({ status: r.status, stderr: r.out }));

describe.skipIf(!hasMpirun)("examples/gpt2 --tp N (tensor parallel) under mpirun", () => {
  const dir = tinyCheckpoint("tp");
  let ref: Promise<Awaited<ReturnType<typeof singleProcess>>> | undefined;
  const reference = () => (ref ??= singleProcess(dir));

  for (const tp of [2, 4]) {
    it(`--tp ${tp}: the greedy tokens of one process, every generated token's logits within 2e-5`, async () => {
      const out = join(dir, `logits_tp${tp}.bin`);
      await precompile(tp);
      const r = await mpirun(tp, ["--tp", String(tp), "--model", dir, "--tokens", PROMPT.join(","), "--max-new", String(NEW), "--logits-out", out]);
      expect(r.status, r.out).toBe(0);
      const want = await reference();
      // only rank 0 prints the tokens
      expect(r.out.match(/^\d+(,\d+)*$/gm), r.out).toEqual([want.tokens.join(",")]);
      expect(r.out).toMatch(new RegExp(`tensor parallel over ${tp} ranks on [^ ]+ \\(${COLLECTIVES * NEW} collectives`));
      expect(worstDiff(readLogits(out), want.logits)).toBeLessThan(2e-5);
    });
  }

  it("--tp 4 in a job of 2 ranks says how many it needs", async () => {
    const r = await mpirun(2, ["--tp", "4", "--model", dir, "--tokens", "1,2", "--max-new", "1"]);
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("error: --tp 4 needs 4 ranks, this mpirun job has 2 (mpirun -np 4 ...)");
  });
});

describe.skipIf(!hasMpirun)("examples/gpt2 --dp (a batch split over the ranks) under mpirun", () => {
  it("3 prompts over 2 ranks (2 + 1): each prompt's tokens and logits are one process's", async () => {
    const dir = tinyCheckpoint("dp");
    const prompts = [PROMPT, [3, 1, 4, 1, 5, 9, 2], [250]];
    const out = join(dir, "logits_dp.bin");
    const r = await mpirun(2, ["--dp", "--model", dir, "--tokens", prompts.map((p) => p.join(",")).join(";"), "--max-new", "4", "--logits-out", out]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/data parallel over 2 ranks on [^ ]+ \(rank 0: 2 of 3 prompts\)/);
    const wants = await Promise.all(prompts.map((p) => singleProcess(dir, p, 4)));
    expect(r.out.match(/^\d+(,\d+)*$/gm), r.out).toEqual(wants.map((w) => w.tokens.join(",")));
    const got = readLogits(out);
    const V = CFG.vocabSize;
    wants.forEach((w, i) => expect(worstDiff(got.subarray(i * 4 * V, (i + 1) * 4 * V), w.logits), `prompt ${i}`).toBeLessThan(1e-6));
  });
});

describe("examples/gpt2 --tp / --dp errors (no MPI job)", () => {
  const dir = tinyCheckpoint("tperr");
  it("--tp 2 outside mpirun, --tp 3 with 4 heads, --tp with --dp and a batch without --dp each say what to do", async () => {
    const r1 = await generate(["--tp", "2", "--model", dir, "--tokens", "1,2", "--max-new", "1"]);
    expect(r1.status).toBe(1);
    expect(r1.stderr).toContain("error: [E_MPI_REQUIRED]");
    expect(r1.stderr).toContain("start it with: mpirun -np <ranks> node --import tsx <script>");
    const r2 = await generate(["--tp", "3", "--model", dir, "--tokens", "1,2", "--max-new", "1"]);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain("error: --tp 3: n_head = 4 is not divisible by 3 (each rank takes n_head / tp whole heads)");
    const r3 = await generate(["--tp", "2", "--dp", "--model", dir, "--tokens", "1,2"]);
    expect(r3.status).toBe(2);
    expect(r3.stderr).toContain("error: give one of --tp N and --dp");
    const r4 = await generate(["--model", dir, "--tokens", "1,2;3"]);
    expect(r4.status).toBe(2);
    expect(r4.stderr).toContain("error: --tokens: ';' separates the prompts of a batch, which needs --dp");
  });
});

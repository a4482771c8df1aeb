// One job of the tensor-parallel GPT-2 rows (bench/gpt2/tp.ts): GPT-2 small (seeded random
// weights of the real shapes) as examples/gpt2 runs it, under mpirun with --tp = the job's
// ranks (or alone: tp 1). A 32-token prompt, 4 warm-up decode steps, then STEPS timed ones
// (a barrier before each under mpirun, so every rank starts the step together); rank 0 prints
// one JSON line: the median ms per token and the median ms of a step spent in its collectives
// (the allReduces of x and the gather of the logits, waiting for the slowest rank included).
//   [mpirun -np N] node --import tsx bench/gpt2/tp_child.ts [STEPS]
import { DistributedWorker, RunConfig } from "tspto";
import { GPT2_SMALL, randomWeights } from "../../examples/gpt2/weights.js";
import { GPT2Model } from "../../examples/gpt2/model.js";

const STEPS = Number(process.argv[2] ?? 16);
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const dist = process.env.OMPI_COMM_WORLD_SIZE ? new DistributedWorker({ mpi: "required", devices: 1, config: new RunConfig({ platform: "cpu" }) }) : undefined;
const model = new GPT2Model(GPT2_SMALL, randomWeights(GPT2_SMALL, 1), { platform: "cpu", dist });
const prompt = Array.from({ length: 32 }, (_, i) => (i * 7919) % GPT2_SMALL.vocabSize);
let r = model.step(prompt);
for (let i = 0; i < 4; i++) r = model.step([r.next]);
const step: number[] = [], comm: number[] = [];
for (let i = 0; i < STEPS; i++) {
  dist?.barrier();
  const c0 = model.comm.ms, t0 = performance.now();
  r = model.step([r.next]);
  step.push(performance.now() - t0);
  comm.push(model.comm.ms - c0);
}
if (model.rank === 0) console.log(JSON.stringify({ tp: model.tp, msPerToken: median(step), commMs: median(comm), collectivesPerStep: model.tp > 1 ? 2 * GPT2_SMALL.nLayer + 2 : 0 }));
model.close();
dist?.close();

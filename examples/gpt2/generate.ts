// Greedy GPT-2 generation with tspto.
//
//   npx tsx examples/gpt2/generate.ts --model DIR --tokens 464,3290,318 --max-new 16
//        [--logits-out FILE] [--platform cpu|interp|...] [--prompt "text"] [--random-init SEED]
//        [--dtype fp32|bf16] [--quant int8|int4 [--group-size G]]
//   mpirun -np 2 node --import tsx examples/gpt2/generate.ts --tp 2 --model DIR --tokens ...
//   mpirun -np 2 node --import tsx examples/gpt2/generate.ts --dp --model DIR --tokens "464,3290;318,257,1"
//        (as root add --allow-run-as-root; more ranks than cores: --oversubscribe; other hosts: -H a,b or --hostfile)
//
// --model: a Hugging Face GPT-2 directory (config.json + model.safetensors). --random-init SEED
// builds a GPT-2 small-shaped model with seeded N(0, 0.02) weights instead. --prompt tokenizes
// with GPT-2's BPE (gpt-tokenizer's r50k_base); --tokens gives the ids. Prints the generated ids
// as one comma-separated line (and, with --prompt, the text on stderr); --logits-out writes
// float32 little-endian logits, one row of vocab_size per generated token (the distribution it
// was chosen from).
//
// --dtype bf16: the weights and the KV caches in bfloat16 (fp32 accumulation, fp32 residual
// stream); --quant int8|int4: every linear layer's weight and the tied head weight-only quantized
// (pl.matmulQuant, one scale per --group-size weights along K, default 128; quantized on load).
//
// --tp N: tensor parallelism over the N ranks of the mpirun job (one device each): every rank
// loads the checkpoint and keeps its 1/N of each block's weights (heads and MLP units), of the
// vocabulary (wte rows) and of the KV caches resident; the ranks all-reduce the residual stream
// after the embedding and twice per layer and gather the logits; rank 0 prints and writes them,
// and they match the single-process run within float32 rounding.
// --dp: data parallelism: --tokens holds a batch of prompts separated by ';', the batch is split
// over the ranks (a contiguous block each, the first ones one longer when the ranks do not
// divide it), each rank generates its prompts on a whole model, and rank 0 prints one line per
// prompt (and writes every prompt's logits, prompt after prompt) after a gather.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DistributedWorker, RunConfig, TsptoError } from "tspto";
import { CheckpointError, GPT2_SMALL, loadCheckpoint, randomWeights, type GPT2Config, type GPT2Weights } from "./weights.js";
import { SafetensorsError } from "./safetensors.js";
import { GPT2Model, checkPrecision, type Precision } from "./model.js";

const USAGE = "usage: generate.ts (--model DIR | --random-init SEED) (--tokens 464,3290,318 | --prompt TEXT) [--max-new N] [--logits-out FILE] [--platform P] [--tp N | --dp] [--dtype fp32|bf16] [--quant int8|int4 [--group-size G]] (--tp N > 1 and --dp under mpirun)";

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv, strict: true,
    options: {
      model: { type: "string" }, "random-init": { type: "string" }, tokens: { type: "string" }, prompt: { type: "string" },
      "max-new": { type: "string", default: "16" }, "logits-out": { type: "string" }, platform: { type: "string", default: "cpu" },
      tp: { type: "string", default: "1" }, dp: { type: "boolean", default: false },
      dtype: { type: "string", default: "fp32" }, quant: { type: "string" }, "group-size": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) { process.stdout.write(`${USAGE}\n`); return; }
  if (!values.model === (values["random-init"] === undefined)) throw new UsageError("give one of --model DIR and --random-init SEED");
  if ((values.tokens === undefined) === (values.prompt === undefined)) throw new UsageError("give one of --tokens and --prompt");
  const maxNew = Number(values["max-new"]);
  if (!Number.isInteger(maxNew) || maxNew < 1) throw new UsageError(`--max-new must be a positive integer, got '${values["max-new"]}'`);
  const tp = Number(values.tp);
  if (!Number.isInteger(tp) || tp < 1) throw new UsageError(`--tp must be a positive integer, got '${values.tp}'`);
  if (tp > 1 && values.dp) throw new UsageError("give one of --tp N and --dp");
  if (values.dp && values.prompt !== undefined) throw new UsageError("--dp takes a batch of --tokens prompts separated by ';'");
  if (values.dtype !== "fp32" && values.dtype !== "bf16") throw new UsageError(`--dtype must be fp32 or bf16, got '${values.dtype}'`);
  if (values.quant !== undefined && values.quant !== "int8" && values.quant !== "int4") throw new UsageError(`--quant must be int8 or int4, got '${values.quant}'`);
  if (values.quant !== undefined && values.dtype === "bf16") throw new UsageError("give one of --dtype bf16 and --quant (weight-only quantization keeps fp32 activations and caches)");
  if (values["group-size"] !== undefined && values.quant === undefined) throw new UsageError("--group-size goes with --quant");
  const groupSize = Number(values["group-size"] ?? 128);
  if (!Number.isInteger(groupSize) || groupSize < 1) throw new UsageError(`--group-size must be a positive integer, got '${values["group-size"]}'`);
  const precision: Precision = values.quant ? { quant: { bits: values.quant === "int4" ? 4 : 8, groupSize } } : { dtype: values.dtype };

  let config: GPT2Config, weights: GPT2Weights;
  const t0 = performance.now();
  if (values.model) ({ config, weights } = loadCheckpoint(values.model));
  else {
    const seed = Number(values["random-init"]);
    if (!Number.isInteger(seed)) throw new UsageError(`--random-init must be an integer seed, got '${values["random-init"]}'`);
    config = GPT2_SMALL;
    weights = randomWeights(config, seed);
  }
  let prompts: number[][];
  let decode: ((ids: number[]) => string) | null = null;
  if (values.prompt !== undefined) {
    const tok = await import("gpt-tokenizer/encoding/r50k_base");
    prompts = [tok.encode(values.prompt)];
    decode = (ids) => tok.decode(ids);
  } else {
    const parts = values.tokens!.split(";");
    if (parts.length > 1 && !values.dp) throw new UsageError("--tokens: ';' separates the prompts of a batch, which needs --dp");
    prompts = parts.map((p) => p.split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 0 || n >= config.vocabSize) throw new UsageError(`--tokens: '${s}' is not a token id in [0, ${config.vocabSize})`);
      return n;
    }));
  }
  for (const prompt of prompts) {
    if (prompt.length === 0) throw new UsageError(prompts.length > 1 ? "a prompt of the batch has no tokens" : "the prompt has no tokens");
    if (prompt.length + maxNew > config.nPositions) throw new UsageError(`prompt (${prompt.length}) + --max-new (${maxNew}) exceeds n_positions = ${config.nPositions}`);
  }
  if (config.nHead % tp !== 0) throw new UsageError(`--tp ${tp}: n_head = ${config.nHead} is not divisible by ${tp} (each rank takes n_head / tp whole heads)`);
  try { checkPrecision(config, tp, precision); } catch (e) { throw new UsageError(`--group-size: ${(e as Error).message}`); }
  const t1 = performance.now();
  const parallel = tp > 1 || values.dp;
  // Under mpirun every rank runs this same command; tp / dp need the job's ranks.
  const dist = parallel ? new DistributedWorker({ mpi: "required", devices: 1, config: new RunConfig({ platform: values.platform }) }) : undefined;
  try {
    if (dist && tp > 1 && dist.size !== tp) throw new UsageError(`--tp ${tp} needs ${tp} ranks, this mpirun job has ${dist.size} (mpirun -np ${tp} ...)`);
    if (dist && values.dp && prompts.length < dist.size) throw new UsageError(`--dp: ${prompts.length} prompt${prompts.length === 1 ? "" : "s"} for ${dist.size} ranks (every rank needs at least one)`);
    const rank0 = (dist?.rank ?? 0) === 0;
    const say = (s: string) => { if (rank0) process.stderr.write(s); };
    // a progress line once compiling takes more than a second (rewritten in place on a terminal)
    const progress = compileProgress(rank0);
    let tc = t1;
    const model = await GPT2Model.create(config, weights, {
      platform: values.platform, dist: tp > 1 ? dist : undefined, precision,
      onCompiled: (done, total, name) => { progress.update(done, total, name); if (done === total) tc = performance.now(); },
    }).finally(() => progress.end());
    const t2 = performance.now();
    let tFirst = 0;
    try {
      // --dp: this rank's prompts (a contiguous block of the batch); the generated ids and logits go into shards of [B, maxNew] and [B, maxNew * V]
      const B = prompts.length, V = config.vocabSize;
      const ids = values.dp ? dist!.allocSharded([B, maxNew], "int32") : null;
      const lg = values.dp && values["logits-out"] ? dist!.allocSharded([B, maxNew * V], "float32") : null;
      const first = ids ? ids.shardShapes.slice(0, dist!.rank).reduce((a, s) => a + s[0], 0) : 0;
      const mine = ids ? prompts.slice(first, first + ids.shardShapes[dist!.rank][0]) : prompts;
      const outs: number[][] = [];
      const rows: Float32Array[] = [];
      for (const prompt of mine) {
        model.reset();
        outs.push(model.generate(prompt, maxNew, (_t, logits) => {
          if (!tFirst) tFirst = performance.now();
          if (values["logits-out"]) rows.push(logits.slice());
        }));
      }
      const t3 = performance.now();
      let all = outs, logits = rows;
      if (ids) {
        dist!.workers[0].copyTo(ids.shards[0], Int32Array.from(outs.flat()), ids.shards[0].nbytes);
        all = chunk(Array.from(dist!.gather(ids).data as Int32Array), maxNew);
        if (lg) {
          const mineLogits = new Float32Array(rows.length * V);
          rows.forEach((r, i) => mineLogits.set(r, i * V));
          dist!.workers[0].copyTo(lg.shards[0], mineLogits, mineLogits.byteLength);
          const whole = dist!.gather(lg).data as Float32Array;
          logits = Array.from({ length: B * maxNew }, (_, i) => whole.subarray(i * V, (i + 1) * V));
        }
      }
      if (rank0) {
        if (values["logits-out"]) {
          const buf = new Float32Array(logits.length * V);
          logits.forEach((r, i) => buf.set(r, i * V));
          writeFileSync(values["logits-out"], new Uint8Array(buf.buffer));
        }
        for (const out of all) process.stdout.write(`${out.join(",")}\n`);
        if (decode) process.stderr.write(`${decode([...prompts[0], ...all[0]])}\n`);
      }
      const how = tp > 1 ? `, tensor parallel over ${tp} ranks on ${[...new Set(dist!.hosts)].join(", ")} (${model.comm.count} collectives, ${model.comm.ms.toFixed(0)} ms on rank 0)` : dist ? `, data parallel over ${dist.size} ranks on ${[...new Set(dist.hosts)].join(", ")} (rank 0: ${mine.length} of ${B} prompts)` : "";
      say(`gpt2 on ${values.platform}${how}: load ${ms(t1 - t0)}, compile ${ms(tc - t1)}, upload ${ms(t2 - tc)}, ` +
        `first token ${ms((tFirst || t3) - t2)} (${ms(tFirst || t3)} after the process started); ` +
        `${mine.map((p) => p.length).join("+")} prompt + ${maxNew * mine.length} new tokens in ${ms(t3 - t2)}\n`);
    } finally {
      model.close();
    }
  } finally {
    dist?.close();
  }
}

const ms = (x: number) => `${x.toFixed(0)} ms`;

/**
 * The progress line while the programs compile: nothing for the first second, then (on a
 * terminal) one line rewritten every quarter second, or (in a log) one line per program built.
 */
function compileProgress(show: boolean) {
  const t0 = performance.now(), tty = process.stderr.isTTY === true;
  let done = 0, total = 4, shown = false, last = "";
  const line = () => `compiling the model's programs: ${done}/${total} built, ${((performance.now() - t0) / 1000).toFixed(1)} s${last ? ` (last: ${last})` : ""}`;
  const draw = () => {
    if (!show) return;
    if (tty) process.stderr.write(`\r${line()}\x1b[K`);
    else process.stderr.write(`${line()}\n`);
    shown = true;
  };
  const timer = setInterval(() => { if (performance.now() - t0 >= 1000 && (tty || !shown)) draw(); }, 250);
  return {
    update(d: number, t: number, name: string) { done = d; total = t; last = name; if (shown && !tty) draw(); },
    end() { clearInterval(timer); if (shown && tty) process.stderr.write("\n"); },
  };
}

function chunk(xs: number[], n: number): number[][] {
  return Array.from({ length: xs.length / n }, (_, i) => xs.slice(i * n, (i + 1) * n));
}

main(process.argv.slice(2)).catch((e: unknown) => {
  if (e instanceof UsageError || (e instanceof Error && (e as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION")) {
    process.stderr.write(`error: ${e.message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (e instanceof CheckpointError || e instanceof SafetensorsError || e instanceof TsptoError) {
    process.stderr.write(`error: ${e.message}\n`);
    process.exit(1);
  }
  throw e;
});

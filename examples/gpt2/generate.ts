// Greedy GPT-2 generation with tspto.
//
//   npx tsx examples/gpt2/generate.ts --model DIR --tokens 464,3290,318 --max-new 16
//        [--logits-out FILE] [--platform cpu|interp|...] [--prompt "text"] [--random-init SEED]
//
// --model: a Hugging Face GPT-2 directory (config.json + model.safetensors). --random-init SEED
// builds a GPT-2 small-shaped model with seeded N(0, 0.02) weights instead. --prompt tokenizes
// with GPT-2's BPE (gpt-tokenizer's r50k_base); --tokens gives the ids. Prints the generated ids
// as one comma-separated line (and, with --prompt, the text on stderr); --logits-out writes
// float32 little-endian logits, one row of vocab_size per generated token (the distribution it
// was chosen from).
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { TsptoError } from "tspto";
import { CheckpointError, GPT2_SMALL, loadCheckpoint, randomWeights, type GPT2Config, type GPT2Weights } from "./weights.js";
import { SafetensorsError } from "./safetensors.js";
import { GPT2Model } from "./model.js";

const USAGE = "usage: generate.ts (--model DIR | --random-init SEED) (--tokens 464,3290,318 | --prompt TEXT) [--max-new N] [--logits-out FILE] [--platform P]";

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv, strict: true,
    options: {
      model: { type: "string" }, "random-init": { type: "string" }, tokens: { type: "string" }, prompt: { type: "string" },
      "max-new": { type: "string", default: "16" }, "logits-out": { type: "string" }, platform: { type: "string", default: "cpu" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) { process.stdout.write(`${USAGE}\n`); return; }
  if (!values.model === (values["random-init"] === undefined)) throw new UsageError("give one of --model DIR and --random-init SEED");
  if ((values.tokens === undefined) === (values.prompt === undefined)) throw new UsageError("give one of --tokens and --prompt");
  const maxNew = Number(values["max-new"]);
  if (!Number.isInteger(maxNew) || maxNew < 1) throw new UsageError(`--max-new must be a positive integer, got '${values["max-new"]}'`);

  let config: GPT2Config, weights: GPT2Weights;
  const t0 = performance.now();
  if (values.model) ({ config, weights } = loadCheckpoint(values.model));
  else {
    const seed = Number(values["random-init"]);
    if (!Number.isInteger(seed)) throw new UsageError(`--random-init must be an integer seed, got '${values["random-init"]}'`);
    config = GPT2_SMALL;
    weights = randomWeights(config, seed);
  }
  let prompt: number[];
  let decode: ((ids: number[]) => string) | null = null;
  if (values.prompt !== undefined) {
    const tok = await import("gpt-tokenizer/encoding/r50k_base");
    prompt = tok.encode(values.prompt);
    decode = (ids) => tok.decode(ids);
  } else {
    prompt = values.tokens!.split(",").map((s) => s.trim()).filter((s) => s !== "").map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 0 || n >= config.vocabSize) throw new UsageError(`--tokens: '${s}' is not a token id in [0, ${config.vocabSize})`);
      return n;
    });
  }
  if (prompt.length === 0) throw new UsageError("the prompt has no tokens");
  if (prompt.length + maxNew > config.nPositions) throw new UsageError(`prompt (${prompt.length}) + --max-new (${maxNew}) exceeds n_positions = ${config.nPositions}`);
  const t1 = performance.now();
  const model = new GPT2Model(config, weights, { platform: values.platform });
  const t2 = performance.now();
  try {
    const rows: Float32Array[] = [];
    const out = model.generate(prompt, maxNew, (_t, logits) => { if (values["logits-out"]) rows.push(logits.slice()); });
    const t3 = performance.now();
    if (values["logits-out"]) {
      const all = new Float32Array(rows.length * config.vocabSize);
      rows.forEach((r, i) => all.set(r, i * config.vocabSize));
      writeFileSync(values["logits-out"], new Uint8Array(all.buffer));
    }
    process.stdout.write(`${out.join(",")}\n`);
    if (decode) process.stderr.write(`${decode([...prompt, ...out])}\n`);
    process.stderr.write(`gpt2 on ${values.platform}: load ${(t1 - t0).toFixed(0)} ms, compile + upload ${(t2 - t1).toFixed(0)} ms, ` +
      `${prompt.length} prompt + ${maxNew} new tokens in ${(t3 - t2).toFixed(0)} ms\n`);
  } finally {
    model.close();
  }
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

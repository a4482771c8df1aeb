// Child of gpt2_lowbits.test.ts (a separate process: the compiles would block the test worker).
// The weight-only quantized model is exactly the fp32 model on the dequantized weights: both run
// here on the same weights (every linear layer's weight and wte replaced by
// dequantize(quantize(w)), which the quantized model quantizes again to the same bytes), teacher-
// forced through the same tokens; prints the largest logit difference over every step as JSON.
import { loadCheckpoint } from "../../examples/gpt2/weights.js";
import { GPT2Model } from "../../examples/gpt2/model.js";
import { quantize, dequantize, HostTensor } from "../../src/index.js";

const [dir, bitsArg, gArg, tokensArg] = process.argv.slice(2);
const bits = Number(bitsArg) as 4 | 8, g = Number(gArg);
const tokens: number[] = JSON.parse(tokensArg);
const { config, weights } = loadCheckpoint(dir);
const D = config.nEmbd;
/** dequantize(quantize(w)) of a [K, N] weight, back in [K, N]. */
const kn = (data: Float32Array, k: number, n: number): Float32Array => {
  const d = dequantize(quantize(new HostTensor(data, [k, n], "float32"), { bits, groupSize: g, layout: "kn" })).data as Float32Array;
  const o = new Float32Array(k * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < k; j++) o[j * n + i] = d[i * k + j];
  return o;
};
const wte = dequantize(quantize(new HostTensor(weights.wte, [config.vocabSize, D], "float32"), { bits, groupSize: g })).data as Float32Array;
const deq = { ...weights, wte, layers: weights.layers.map((l) => ({ ...l, attnW: kn(l.attnW, D, 3 * D), projW: kn(l.projW, D, D), fcW: kn(l.fcW, D, 4 * D), fcProjW: kn(l.fcProjW, 4 * D, D) })) };
const run = (m: GPT2Model): Float32Array[] => {
  const rows = [m.step(tokens.slice(0, tokens.length - 3)).logits.slice()];
  for (const t of tokens.slice(tokens.length - 3)) rows.push(m.step([t]).logits.slice());
  m.close();
  return rows;
};
const a = run(new GPT2Model(config, deq, {}));
const b = run(new GPT2Model(config, deq, { precision: { quant: { bits, groupSize: g } } }));
let worst = 0;
a.forEach((r, i) => r.forEach((v, j) => { worst = Math.max(worst, Math.abs(v - b[i][j])); }));
process.stdout.write(`${JSON.stringify({ worst })}\n`);

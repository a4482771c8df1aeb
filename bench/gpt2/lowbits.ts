// The low-precision GPT-2 rows of `npm run bench` (BENCH_ONLY=gpt2q, also part of 11 / gpt2):
// GPT-2 small (seeded random weights of the real shapes: no checkpoint is read) as examples/gpt2
// runs it with --dtype bf16, --quant int8 and --quant int4 (group size 128), against
// onnxruntime-node fp32 on the same weights, and int4 against onnxruntime's own 4-bit path
// (com.microsoft MatMulNBits, block size 128) on the same quantized bytes (tspto.quantize makes
// both). All contenders on the machine's cores, onnxruntime's spinning off, alternating round by
// round; decode is ms/token over positions 128..160, prefill 128 tokens from an empty cache. The
// weight-streaming rate (bytes of weights a decode token reads / its time) says what limits each.
import { createRequire } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { HostTensor, quantize } from "tspto";
import { GPT2_SMALL, randomWeights, type GPT2Config } from "../../examples/gpt2/weights.js";
import { GPT2Model, type Precision } from "../../examples/gpt2/model.js";
import { OrtGpt2, type NBits } from "./onnx_graph.js";
import { NativeRead, type Gpt2Row } from "./bench.js";
import { join } from "node:path";

const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const G = 128;

/** Bytes of weights a decode step reads at `bytesPerWeight` (matrices and the tied head; scales: 4 bytes per G weights; vectors fp32). */
function bytesPerToken(c: GPT2Config, bytesPerWeight: number, scales: boolean): number {
  const D = c.nEmbd;
  const mats = c.nLayer * 12 * D * D + c.vocabSize * D;
  const vecs = c.nLayer * 13 * D + 3 * D;
  return mats * bytesPerWeight + (scales ? (mats / G) * 4 : 0) + vecs * 4;
}

export async function gpt2LowBitsBench(work: string, rounds: number, log: (s: string) => void): Promise<Gpt2Row[]> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let ort: any = null;
  try { ort = createRequire(import.meta.url)("onnxruntime-node"); } catch { /* no peer */ }
  if (!ort) { log("gpt2q: onnxruntime-node is not installed: no rows"); return []; }
  const c = GPT2_SMALL;
  const threads = availableParallelism();
  log(`gpt2q: GPT-2 small with seeded random weights; tspto bf16 / int8 / int4 (group ${G}) vs onnxruntime fp32 and MatMulNBits`);
  const w = randomWeights(c, 1234);
  const prompt = Array.from({ length: 128 }, (_, i) => (i * 7919 + 13) % c.vocabSize);
  const sess = { intraOpNumThreads: threads, interOpNumThreads: 1, extra: { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } } };
  const nbits: NBits = {
    blockSize: G,
    quantize(data, k, n, layout) {
      const q = quantize(new HostTensor(data, layout === "kn" ? [k, n] : [n, k], "float32"), { bits: 4, groupSize: G, layout });
      return { packed: q.w.data as Uint8Array, scales: q.scales.data as Float32Array };
    },
  };
  const ortF = await OrtGpt2.create(ort, c, w, sess);
  const ortQ = await OrtGpt2.create(ort, c, w, sess, nbits);
  const precisions: [string, Precision][] = [["bf16", { dtype: "bf16" }], ["int8", { quant: { bits: 8, groupSize: G } }], ["int4", { quant: { bits: 4, groupSize: G } }]];
  const models = new Map<string, GPT2Model>();
  for (const [name, p] of precisions) {
    const t0 = now();
    models.set(name, new GPT2Model(c, w, { platform: "cpu", precision: p }));
    log(`gpt2q: ${name} model compiled and uploaded in ${(now() - t0).toFixed(0)} ms`);
  }
  const reader = new NativeRead(join(work, "gpt2q_read"), 1 << 30, threads);
  const reads: number[] = [];
  const STEPS = 32;
  const tsDecode = (m: GPT2Model): number => {
    m.position = prompt.length;
    let tok = prompt[prompt.length - 1];
    const t0 = now();
    for (let i = 0; i < STEPS; i++) tok = m.step([tok]).next;
    return (now() - t0) / STEPS;
  };
  const tsPrefill = (m: GPT2Model): number => { m.reset(); const t0 = now(); m.step(prompt); return now() - t0; };
  const snaps = new Map<OrtGpt2, unknown>();
  const ortDecode = async (p: OrtGpt2): Promise<number> => {
    if (!snaps.has(p)) { p.reset(); await p.forward(prompt); snaps.set(p, p.snapshot()); } else p.restore(snaps.get(p));
    let tok = prompt[prompt.length - 1];
    const t0 = now();
    for (let i = 0; i < STEPS; i++) {
      const l = await p.forward([tok]);
      let best = 0;
      for (let v = 1; v < l.length; v++) if (l[v] > l[best]) best = v;
      tok = best;
    }
    return (now() - t0) / STEPS;
  };
  const ortPrefill = async (p: OrtGpt2): Promise<number> => { p.reset(); const t0 = now(); await p.forward(prompt); return now() - t0; };

  // the same quantized weights: tspto int4 and MatMulNBits agree on the prompt's last logits
  const int4 = models.get("int4")!;
  int4.reset();
  const a = int4.step(prompt).logits.slice();
  ortQ.reset();
  const lq = await ortQ.forward(prompt);
  const b = lq.subarray((prompt.length - 1) * c.vocabSize);
  let worst = 0, scale = 0;
  for (let v = 0; v < c.vocabSize; v++) { worst = Math.max(worst, Math.abs(a[v] - b[v])); scale = Math.max(scale, Math.abs(b[v])); }
  log(`gpt2q: tspto int4 vs MatMulNBits on the same bytes: last-token logits differ by at most ${worst.toExponential(2)} (max |logit| ${scale.toFixed(2)})`);

  // warm-up
  for (const m of models.values()) { tsPrefill(m); tsDecode(m); }
  await ortPrefill(ortF); await ortDecode(ortF); await ortDecode(ortQ);
  const dec = new Map<string, number[]>([["ortF", []], ["ortQ", []], ...precisions.map(([n]) => [n, []] as [string, number[]])]);
  const pre = { bf16: [] as number[], ortF: [] as number[] };
  const loads: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // contenders in a rotating order
    const order = ["ortF", "bf16", "int8", "ortQ", "int4"];
    const rot = order.slice(r % order.length).concat(order.slice(0, r % order.length));
    for (const k of rot) dec.get(k)!.push(k === "ortF" ? await ortDecode(ortF) : k === "ortQ" ? await ortDecode(ortQ) : tsDecode(models.get(k)!));
    if (r % 2 === 0) { pre.bf16.push(tsPrefill(models.get("bf16")!)); pre.ortF.push(await ortPrefill(ortF)); } else { pre.ortF.push(await ortPrefill(ortF)); pre.bf16.push(tsPrefill(models.get("bf16")!)); }
    loads.push(loadavg()[0]);
    reads.push(await reader.measure());
    log(`gpt2q round ${r + 1}/${rounds}: decode ms/token ${[...dec].map(([k, v]) => `${k} ${v[v.length - 1].toFixed(1)}`).join(", ")}; prefill bf16 ${pre.bf16[r].toFixed(0)} ms, ort fp32 ${pre.ortF[r].toFixed(0)} ms; load ${loads[r].toFixed(1)}; streaming read ${reads[r].toFixed(1)} GB/s`);
  }
  const md = (k: string) => median(dec.get(k)!);
  const load = `load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)} on ${threads} cores, a plain streaming read of 1 GiB on every core measured ${median(reads).toFixed(1)} GB/s in the same rounds`;
  const gbs = (k: string, bpw: number, sc: boolean) => `${(bytesPerToken(c, bpw, sc) / 1e6 / md(k)).toFixed(1)} GB/s of weights (${(bytesPerToken(c, bpw, sc) / 1e6).toFixed(0)} MB per token)`;
  const rows: Gpt2Row[] = [];
  const dRow = (id: string, k: string, bpw: number, sc: boolean, goal: number) => {
    const x = md("ortF") / md(k);
    rows.push({ id, what: `GPT-2 small ${k} decode, ms/token at positions 128-160 (vs onnxruntime fp32)`, tspto: `${md(k).toFixed(1)} ms`, peer: `${md("ortF").toFixed(1)} ms`, result: `${x.toFixed(2)}x`, goal: `>= ${goal}x`, met: x >= goal,
      limit: `${load}; tspto streams ${gbs(k, bpw, sc)}, onnxruntime fp32 ${gbs("ortF", 4, false)}` });
  };
  dRow("11f", "bf16", 2, false, 1.8);
  dRow("11g", "int8", 1, true, 3);
  dRow("11h", "int4", 0.5, true, 4);
  const xq = md("ortQ") / md("int4");
  rows.push({ id: "11i", what: `GPT-2 small int4 decode vs onnxruntime MatMulNBits (4-bit, block ${G}, the same quantized bytes), ms/token at positions 128-160`, tspto: `${md("int4").toFixed(1)} ms`, peer: `${md("ortQ").toFixed(1)} ms`, result: `${xq.toFixed(2)}x`, goal: ">= 1.2x", met: xq >= 1.2,
    limit: `${load}; tspto ${gbs("int4", 0.5, true)}, MatMulNBits ${gbs("ortQ", 0.5, true)}; last-token logits of the two differ by ${worst.toExponential(1)}` });
  const xp = median(pre.ortF) / median(pre.bf16);
  rows.push({ id: "11j", what: "GPT-2 small bf16 prefill of 128 tokens (vs onnxruntime fp32)", tspto: `${median(pre.bf16).toFixed(0)} ms`, peer: `${median(pre.ortF).toFixed(0)} ms`, result: `${xp.toFixed(2)}x`, goal: ">= 4x", met: xp >= 4,
    limit: `${load}; the bf16 products run through the bf16 matmul kernels (operand packing for register blocks), not a row-streaming GEMV` });
  reader.close();
  for (const m of models.values()) m.close();
  await ortF.release(); await ortQ.release();
  return rows;
}

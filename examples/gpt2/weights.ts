// GPT-2 checkpoints: the Hugging Face layout (config.json + model.safetensors, as
// GPT2LMHeadModel.save_pretrained writes them) and a seeded random model of any shape.
//
//   config.json        n_layer, n_head, n_embd, vocab_size, n_positions, layer_norm_epsilon
//   model.safetensors  wte.weight [V, D], wpe.weight [P, D], h.{i}.ln_1.{weight,bias} [D],
//                      h.{i}.attn.c_attn.{weight [D, 3D], bias [3D]}, h.{i}.attn.c_proj.{weight [D, D], bias},
//                      h.{i}.ln_2.*, h.{i}.mlp.c_fc.{weight [D, 4D], bias}, h.{i}.mlp.c_proj.{weight [4D, D], bias},
//                      ln_f.{weight,bias}; names with or without the "transformer." prefix; Conv1D
//                      weights are [in, out]; other entries (attn.bias, attn.masked_bias, lm_head.weight
//                      tied to wte) are ignored; F32, F16 and BF16 are read as float32.
import { closeSync, existsSync } from "node:fs";
import { join } from "node:path";
import { openRegularFile, readOpened } from "../../src/artifact/index.js";
import { MAX_ARRAY_LENGTH, SafetensorsError, SafetensorsFile } from "./safetensors.js";

export interface GPT2Config {
  readonly nLayer: number; readonly nHead: number; readonly nEmbd: number;
  readonly vocabSize: number; readonly nPositions: number; readonly eps: number;
}

/** GPT-2 small (124M): what --random-init builds. */
export const GPT2_SMALL: GPT2Config = { nLayer: 12, nHead: 12, nEmbd: 768, vocabSize: 50257, nPositions: 1024, eps: 1e-5 };

export interface LayerWeights {
  /** [1, D] */ ln1w: Float32Array; ln1b: Float32Array;
  /** [D, 3D], [1, 3D] */ attnW: Float32Array; attnB: Float32Array;
  /** [D, D], [1, D] */ projW: Float32Array; projB: Float32Array;
  /** [1, D] */ ln2w: Float32Array; ln2b: Float32Array;
  /** [D, 4D], [1, 4D] */ fcW: Float32Array; fcB: Float32Array;
  /** [4D, D], [1, D] */ fcProjW: Float32Array; fcProjB: Float32Array;
}
export interface GPT2Weights {
  /** [V, D] (also the tied output projection) */ wte: Float32Array;
  /** [P, D] */ wpe: Float32Array;
  layers: LayerWeights[];
  /** [1, D] */ lnfW: Float32Array; lnfB: Float32Array;
}

export class CheckpointError extends Error {
  constructor(message: string) { super(message); this.name = "CheckpointError"; }
}

/** The largest config.json read (Hugging Face's are about 1 KB). */
const MAX_CONFIG_BYTES = 1 << 20;

/**
 * config.json of a Hugging Face GPT-2 directory, checked against what its values mean: the
 * sizes positive integers, n_embd a multiple of n_head, every weight and KV cache they imply
 * no larger than a typed array holds, layer_norm_epsilon a positive number float32 holds.
 * The file is opened without blocking and read only if it is a regular file.
 */
export function readConfig(dir: string): GPT2Config {
  const file = join(dir, "config.json");
  const opened = openRegularFile(file);
  if (!opened.ok) {
    throw new CheckpointError(`${file}: ${opened.code === "ENOENT" ? "not found (a GPT-2 checkpoint directory holds config.json and model.safetensors)" : `${opened.why}${opened.stat ? "; not read" : ""}`}`);
  }
  let bytes: Uint8Array;
  try {
    if (opened.stat.size > MAX_CONFIG_BYTES) throw new CheckpointError(`${file}: ${opened.stat.size} bytes, more than the ${MAX_CONFIG_BYTES} a config.json may have; not read`);
    bytes = readOpened({ ...opened, path: file });
  } finally {
    closeSync(opened.fd);
  }
  let raw: unknown;
  try { raw = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes)); } catch (e) {
    throw new CheckpointError(`${file}: not valid ${e instanceof SyntaxError ? `JSON: ${e.message}` : "UTF-8"}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new CheckpointError(`${file}: holds ${raw === null ? "null" : Array.isArray(raw) ? "a list" : `a ${typeof raw}`}, not a JSON object of the model's settings`);
  const c = raw as Record<string, unknown>;
  const given = (k: string): unknown => (Object.hasOwn(c, k) ? c[k] : undefined);
  const bad = (k: string, v: unknown, allowed: string): never => { throw new CheckpointError(`${file}: '${k}' must be ${allowed}, got ${v === undefined ? "nothing (the key is missing)" : typeof v === "number" ? String(v) : JSON.stringify(v)}`); };
  const int = (k: string, alt?: string): number => {
    const key = given(k) === undefined && alt !== undefined && given(alt) !== undefined ? alt : k;
    const v = given(key);
    if (!Number.isSafeInteger(v) || (v as number) <= 0) bad(key, v, Number.isInteger(v) && (v as number) > 0 ? "a positive integer of at most 2^53 - 1" : "a positive integer");
    return v as number;
  };
  const nLayer = int("n_layer"), nHead = int("n_head"), nEmbd = int("n_embd"), vocabSize = int("vocab_size"), nPositions = int("n_positions", "n_ctx");
  const epsRaw = given("layer_norm_epsilon");
  // float32 is what the kernels add it in: a value it rounds to 0 (or to infinity) is no epsilon
  if (epsRaw !== undefined && (typeof epsRaw !== "number" || !(epsRaw > 0) || !(Math.fround(epsRaw) > 0) || !Number.isFinite(Math.fround(epsRaw)))) {
    bad("layer_norm_epsilon", epsRaw, "a number > 0 that float32 holds (1.4e-45 to 3.4e38)");
  }
  const eps = (epsRaw as number | undefined) ?? 1e-5;
  if (nEmbd % nHead !== 0) throw new CheckpointError(`${file}: 'n_embd' ${nEmbd} is not a multiple of 'n_head' ${nHead} (each head takes n_embd / n_head of the width)`);
  // the largest arrays the model allocates from these sizes, each one typed array
  const arrays: [string, string, number][] = [
    ["wte.weight", `'vocab_size' ${vocabSize} x 'n_embd' ${nEmbd}`, vocabSize * nEmbd],
    ["wpe.weight and each layer's KV cache", `'n_positions' ${nPositions} x 'n_embd' ${nEmbd}`, nPositions * nEmbd],
    ["each layer's mlp.c_fc.weight", `'n_embd' ${nEmbd} x 4 x 'n_embd' ${nEmbd}`, 4 * nEmbd * nEmbd],
  ];
  for (const [what, how, n] of arrays) {
    if (n > MAX_ARRAY_LENGTH) throw new CheckpointError(`${file}: ${how} = ${n} values for ${what}, more than the ${MAX_ARRAY_LENGTH} one typed array holds`);
  }
  return { nLayer, nHead, nEmbd, vocabSize, nPositions, eps };
}

/** The weights of a checkpoint directory, checked against its config. */
export function loadCheckpoint(dir: string): { config: GPT2Config; weights: GPT2Weights } {
  const config = readConfig(dir);
  const path = join(dir, "model.safetensors");
  if (!existsSync(path)) throw new CheckpointError(`${path}: not found (convert a PyTorch checkpoint with safetensors' convert script, or save_pretrained(safe_serialization=True))`);
  const f = new SafetensorsFile(path);
  try {
    const prefix = f.tensors.has("transformer.wte.weight") ? "transformer." : "";
    const { nLayer, nEmbd: D, vocabSize: V, nPositions: P } = config;
    const get = (name: string, shape: readonly number[]): Float32Array => {
      const full = prefix + name;
      const t = f.tensors.get(full);
      if (!t) throw new SafetensorsError(path, `missing (config.json says n_layer=${nLayer}, n_embd=${D})`, full);
      if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
        throw new SafetensorsError(path, `has shape [${t.shape.join(", ")}], config.json implies [${shape.join(", ")}]`, full);
      }
      return f.float32(full);
    };
    const layers: LayerWeights[] = [];
    for (let i = 0; i < nLayer; i++) {
      const h = `h.${i}.`;
      layers.push({
        ln1w: get(`${h}ln_1.weight`, [D]), ln1b: get(`${h}ln_1.bias`, [D]),
        attnW: get(`${h}attn.c_attn.weight`, [D, 3 * D]), attnB: get(`${h}attn.c_attn.bias`, [3 * D]),
        projW: get(`${h}attn.c_proj.weight`, [D, D]), projB: get(`${h}attn.c_proj.bias`, [D]),
        ln2w: get(`${h}ln_2.weight`, [D]), ln2b: get(`${h}ln_2.bias`, [D]),
        fcW: get(`${h}mlp.c_fc.weight`, [D, 4 * D]), fcB: get(`${h}mlp.c_fc.bias`, [4 * D]),
        fcProjW: get(`${h}mlp.c_proj.weight`, [4 * D, D]), fcProjB: get(`${h}mlp.c_proj.bias`, [D]),
      });
    }
    const weights: GPT2Weights = { wte: get("wte.weight", [V, D]), wpe: get("wpe.weight", [P, D]), layers, lnfW: get("ln_f.weight", [D]), lnfB: get("ln_f.bias", [D]) };
    return { config, weights };
  } finally {
    f.close();
  }
}

/**
 * Standard normal quantiles at (i + 0.5) / 4096, i < 4096 (Acklam's rational approximation of
 * the inverse normal CDF, relative error < 1.2e-9), and one more entry for the interpolation.
 */
const QUANTILES: Float64Array = (() => {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239];
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572];
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
  const inv = (p: number): number => {
    if (p < 0.02425) { const q = Math.sqrt(-2 * Math.log(p)); return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1); }
    if (p > 1 - 0.02425) return -inv(1 - p);
    const q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  };
  const t = new Float64Array(4097);
  for (let i = 0; i < 4096; i++) t[i] = inv((i + 0.5) / 4096);
  t[4096] = t[4095];
  return t;
})();

/**
 * A GPT-2 of `config`'s shape with N(0, std) weights (std 0.02, as GPT-2's init), biases N(0, std / 2), LN gains 1 + N(0, 0.1).
 * The normals are fast and the same on every run: each is one 32-bit output of mulberry32
 * (seeded by `seed`), its top 12 bits picking a bin of the inverse normal CDF and its low 20 bits
 * interpolating within it (values within +-3.49 std; 124 M of them, GPT-2 small, in ~0.5 s where
 * Box-Muller with Math.log / cos / sin took 4 s).
 */
export function randomWeights(config: GPT2Config, seed: number, std = 0.02): GPT2Weights {
  let state = seed >>> 0;
  const normal = (n: number, s: number, mean = 0): Float32Array => {
    const out = new Float32Array(n);
    const Q = QUANTILES;
    for (let i = 0; i < n; i++) {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      t = (t ^ (t >>> 14)) >>> 0;
      const bin = t >>> 20, f = (t & 0xfffff) * (1 / 1048576);
      const z = Q[bin] + f * (Q[bin + 1] - Q[bin]);
      out[i] = mean + s * z;
    }
    return out;
  };
  const { nLayer, nEmbd: D, vocabSize: V, nPositions: P } = config;
  const layers: LayerWeights[] = [];
  for (let i = 0; i < nLayer; i++) {
    layers.push({
      ln1w: normal(D, 0.1, 1), ln1b: normal(D, std / 2), attnW: normal(D * 3 * D, std), attnB: normal(3 * D, std / 2),
      projW: normal(D * D, std), projB: normal(D, std / 2), ln2w: normal(D, 0.1, 1), ln2b: normal(D, std / 2),
      fcW: normal(D * 4 * D, std), fcB: normal(4 * D, std / 2), fcProjW: normal(4 * D * D, std), fcProjB: normal(D, std / 2),
    });
  }
  return { wte: normal(V * D, std), wpe: normal(P * D, std / 2), layers, lnfW: normal(D, 0.1, 1), lnfB: normal(D, std / 2) };
}

/** The Hugging Face tensor names and shapes of `weights` (for writing a checkpoint). */
export function checkpointTensors(config: GPT2Config, w: GPT2Weights, prefix = ""): Record<string, { shape: number[]; data: Float32Array }> {
  const { nEmbd: D, vocabSize: V, nPositions: P } = config;
  const out: Record<string, { shape: number[]; data: Float32Array }> = {};
  const put = (name: string, shape: number[], data: Float32Array) => { out[prefix + name] = { shape, data }; };
  put("wte.weight", [V, D], w.wte);
  put("wpe.weight", [P, D], w.wpe);
  w.layers.forEach((l, i) => {
    const h = `h.${i}.`;
    put(`${h}ln_1.weight`, [D], l.ln1w); put(`${h}ln_1.bias`, [D], l.ln1b);
    put(`${h}attn.c_attn.weight`, [D, 3 * D], l.attnW); put(`${h}attn.c_attn.bias`, [3 * D], l.attnB);
    put(`${h}attn.c_proj.weight`, [D, D], l.projW); put(`${h}attn.c_proj.bias`, [D], l.projB);
    put(`${h}ln_2.weight`, [D], l.ln2w); put(`${h}ln_2.bias`, [D], l.ln2b);
    put(`${h}mlp.c_fc.weight`, [D, 4 * D], l.fcW); put(`${h}mlp.c_fc.bias`, [4 * D], l.fcB);
    put(`${h}mlp.c_proj.weight`, [4 * D, D], l.fcProjW); put(`${h}mlp.c_proj.bias`, [D], l.fcProjB);
  });
  put("ln_f.weight", [D], w.lnfW);
  put("ln_f.bias", [D], w.lnfB);
  return out;
}

/** config.json as Hugging Face writes it (the fields this reader uses). */
export function configJson(c: GPT2Config): string {
  return JSON.stringify({
    architectures: ["GPT2LMHeadModel"], model_type: "gpt2", n_layer: c.nLayer, n_head: c.nHead, n_embd: c.nEmbd,
    vocab_size: c.vocabSize, n_positions: c.nPositions, n_ctx: c.nPositions, layer_norm_epsilon: c.eps,
  }, null, 2);
}

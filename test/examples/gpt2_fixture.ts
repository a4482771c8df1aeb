// The tiny GPT-2 of the tensor- and data-parallel tests (gpt2_parallel.test.ts and the
// multi-host test): a random checkpoint in the Hugging Face layout, the single-process run
// of examples/gpt2 that they are compared with, and the comparison.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { checkpointTensors, configJson, loadCheckpoint, randomWeights, type GPT2Config } from "../../examples/gpt2/weights.js";
import { writeSafetensors } from "../../examples/gpt2/safetensors.js";
import { GPT2Model, compilePrograms } from "../../examples/gpt2/model.js";
import { RunConfig } from "tspto";

/** 4 heads: tp = 2 and 4 split them 2 + 2 and 1 + 1 + 1 + 1. */
export const CFG: GPT2Config = { nLayer: 2, nHead: 4, nEmbd: 64, vocabSize: 300, nPositions: 48, eps: 1e-5 };
export const PROMPT = [5, 17, 299, 42, 7];
export const NEW = 6;

export function tinyCheckpoint(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tspto-gpt2-${name}-`));
  writeFileSync(join(dir, "config.json"), configJson(CFG));
  writeSafetensors(join(dir, "model.safetensors"), checkpointTensors(CFG, randomWeights(CFG, 11, 0.08)), "F32", { format: "pt" });
  return dir;
}

/** One process, one device: the greedy tokens and every generated token's logits. */
export function singleProcess(dir: string, prompt: readonly number[] = PROMPT, maxNew = NEW): { tokens: number[]; logits: Float32Array } {
  const { config, weights } = loadCheckpoint(dir);
  const model = new GPT2Model(config, weights, { platform: "cpu" });
  try {
    const rows: Float32Array[] = [];
    const tokens = model.generate(prompt, maxNew, (_t, l) => rows.push(l.slice()));
    const logits = new Float32Array(rows.length * config.vocabSize);
    rows.forEach((r, i) => logits.set(r, i * config.vocabSize));
    return { tokens, logits };
  } finally {
    model.close();
  }
}

/** A --logits-out file's float32 values. */
export function readLogits(file: string): Float32Array {
  const b = readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** The largest |a - b| (the lengths must agree). */
export function worstDiff(got: Float32Array, want: Float32Array): number {
  expect(got.length).toBe(want.length);
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  return worst;
}

/**
 * Compiles one rank's programs of a `tp`-way run here, into the disk cache the ranks read
 * ($TSPTO_CACHE_DIR), so an mpirun job loads them instead of N ranks compiling them at once on
 * a machine of few cores.
 */
export function precompile(tp: number): void {
  compilePrograms(CFG, new RunConfig({ platform: "cpu" }), tp);
}

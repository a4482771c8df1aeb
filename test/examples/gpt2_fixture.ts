// The tiny GPT-2 of the tensor- and data-parallel tests (gpt2_parallel.test.ts and the
// multi-host test): a random checkpoint in the Hugging Face layout, the single-process run
// of examples/gpt2 that they are compared with, and the comparison.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { checkpointTensors, configJson, randomWeights, type GPT2Config } from "../../examples/gpt2/weights.js";
import { writeSafetensors } from "../../examples/gpt2/safetensors.js";
import { fileURLToPath } from "node:url";
import { childEnv, run } from "../distributed/jobs.js";

const child = fileURLToPath(new URL("./gpt2_precompile_child.ts", import.meta.url));

/** 4 heads: tp = 2 and 4 split them 2 + 2 and 1 + 1 + 1 + 1; 302 words: tp = 4 splits them unevenly (76, 76, 75, 75). */
export const CFG: GPT2Config = { nLayer: 2, nHead: 4, nEmbd: 64, vocabSize: 302, nPositions: 48, eps: 1e-5 };
/** Collectives per generated token under --tp: allReduce after embed, attn and mlp, and the gather of the logits. */
export const COLLECTIVES = 2 * CFG.nLayer + 2;
export const PROMPT = [5, 17, 299, 42, 7];
export const NEW = 6;

export function tinyCheckpoint(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `tspto-gpt2-${name}-`));
  writeFileSync(join(dir, "config.json"), configJson(CFG));
  writeSafetensors(join(dir, "model.safetensors"), checkpointTensors(CFG, randomWeights(CFG, 11, 0.08)), "F32", { format: "pt" });
  return dir;
}

/**
 * One process, one device (generate.ts in a child, without blocking the test worker): the
 * greedy tokens and every generated token's logits.
 */
export async function singleProcess(dir: string, prompt: readonly number[] = PROMPT, maxNew = NEW): Promise<{ tokens: number[]; logits: Float32Array }> {
  const out = join(dir, `logits_single_${prompt.join("_")}_${maxNew}.bin`);
  const r = await run(process.execPath, ["--import", "tsx", "examples/gpt2/generate.ts", "--model", dir, "--tokens", prompt.join(","), "--max-new", String(maxNew), "--logits-out", out], childEnv(), 600_000);
  expect(r.status, r.out).toBe(0);
  const line = r.out.match(/^\d+(,\d+)*$/m);
  expect(line, r.out).not.toBeNull();
  return { tokens: line![0].split(",").map(Number), logits: readLogits(out) };
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
 * Compiles one rank's programs of a `tp`-way run (each vocabulary split) into the disk cache the
 * ranks read ($TSPTO_CACHE_DIR), in one child, so an mpirun job loads them instead of N ranks
 * compiling them at once on a machine of few cores.
 */
export async function precompile(tp: number): Promise<void> {
  const V = CFG.vocabSize;
  const rows = [...new Set([Math.ceil(V / tp), Math.floor(V / tp)])].map(String);
  const r = await run(process.execPath, ["--import", "tsx", child, JSON.stringify(CFG), String(tp), ...rows], childEnv(), 600_000);
  expect(r.status, r.out).toBe(0);
}

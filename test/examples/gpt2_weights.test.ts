// examples/gpt2/weights.ts: config.json is checked against what its values mean (every rejection
// one line naming config.json, the key, its value and what is allowed), and it is read only when
// it is a regular file; loadCheckpoint refuses a model.safetensors that is not one.
import { constants as bufferConstants } from "node:buffer";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointError, configJson, loadCheckpoint, readConfig, type GPT2Config } from "../../examples/gpt2/weights.js";
import { SafetensorsError } from "../../examples/gpt2/safetensors.js";

const CFG: GPT2Config = { nLayer: 2, nHead: 4, nEmbd: 64, vocabSize: 300, nPositions: 48, eps: 1e-5 };
const BASE = JSON.parse(configJson(CFG)) as Record<string, unknown>;

/** A checkpoint directory whose config.json is `text` (or BASE with `over` merged, a key set to undefined removed). */
function dirWith(over: Record<string, unknown> | string): string {
  const d = mkdtempSync(join(tmpdir(), "tspto-gpt2-cfg-"));
  writeFileSync(join(d, "config.json"), typeof over === "string" ? over : JSON.stringify({ ...BASE, ...over }));
  return d;
}
function refused(dir: string): Error {
  try { readConfig(dir); } catch (e) { expect(e).toBeInstanceOf(CheckpointError); return e as Error; }
  throw new Error("config.json was accepted");
}

describe("readConfig", () => {
  it("reads a Hugging Face config (n_ctx for a missing n_positions; layer_norm_epsilon 1e-5 when absent)", () => {
    expect(readConfig(dirWith({}))).toEqual(CFG);
    expect(readConfig(dirWith({ n_positions: undefined, n_ctx: 32, layer_norm_epsilon: undefined }))).toEqual({ ...CFG, nPositions: 32 });
  });

  it("every value is checked against its meaning: one line naming config.json, the key, the value and what is allowed", () => {
    const L = bufferConstants.MAX_LENGTH;
    const eps = "'layer_norm_epsilon' must be a number > 0 that float32 holds (1.4e-45 to 3.4e38)";
    const cases: [Record<string, unknown>, string][] = [
      [{ layer_norm_epsilon: -1 }, `${eps}, got -1`],
      [{ layer_norm_epsilon: 0 }, `${eps}, got 0`],
      [{ layer_norm_epsilon: 1e-50 }, `${eps}, got 1e-50`], // float32 rounds it to 0
      [{ layer_norm_epsilon: 1e39 }, `${eps}, got 1e+39`], // float32 rounds it to infinity
      [{ layer_norm_epsilon: "1e-5" }, `${eps}, got "1e-5"`],
      [{ layer_norm_epsilon: null }, `${eps}, got null`],
      [{ n_embd: 2 ** 60 }, "'n_embd' must be a positive integer of at most 2^53 - 1, got 1152921504606847000"],
      [{ n_embd: 64.5 }, "'n_embd' must be a positive integer, got 64.5"],
      [{ n_layer: 0 }, "'n_layer' must be a positive integer, got 0"],
      [{ n_head: -4 }, "'n_head' must be a positive integer, got -4"],
      [{ vocab_size: "300" }, "'vocab_size' must be a positive integer, got \"300\""],
      [{ n_positions: undefined, n_ctx: undefined }, "'n_positions' must be a positive integer, got nothing (the key is missing)"],
      [{ n_positions: undefined, n_ctx: 0 }, "'n_ctx' must be a positive integer, got 0"],
      [{ n_head: 7 }, "'n_embd' 64 is not a multiple of 'n_head' 7 (each head takes n_embd / n_head of the width)"],
      [{ n_head: 1, n_embd: 2 ** 14, vocab_size: 2 ** 19 }, `'vocab_size' 524288 x 'n_embd' 16384 = 8589934592 values for wte.weight, more than the ${L} one typed array holds`],
      [{ n_head: 1, n_embd: 2 ** 12, n_positions: 2 ** 21, vocab_size: 2 }, `'n_positions' 2097152 x 'n_embd' 4096 = 8589934592 values for wpe.weight and each layer's KV cache, more than the ${L} one typed array holds`],
      [{ n_head: 1, n_embd: 2 ** 16, n_positions: 1, vocab_size: 1 }, `'n_embd' 65536 x 4 x 'n_embd' 65536 = 17179869184 values for each layer's mlp.c_fc.weight, more than the ${L} one typed array holds`],
    ];
    for (const [over, msg] of cases) {
      const d = dirWith(over);
      expect(refused(d).message, JSON.stringify(over)).toBe(`${join(d, "config.json")}: ${msg}`);
    }
  });

  it("config.json that is not an object, not JSON, not UTF-8, too large, or not a regular file", () => {
    for (const [text, msg] of [["null", "holds null, not a JSON object of the model's settings"], ["[1]", "holds a list, not a JSON object of the model's settings"],
      ["12", "holds a number, not a JSON object of the model's settings"], ["\"x\"", "holds a string, not a JSON object of the model's settings"]] as const) {
      const d = dirWith(text);
      expect(refused(d).message, text).toBe(`${join(d, "config.json")}: ${msg}`);
    }
    const j = dirWith("{nope");
    expect(refused(j).message).toMatch(new RegExp(`^${join(j, "config.json")}: not valid JSON: .+$`));
    const u = mkdtempSync(join(tmpdir(), "tspto-gpt2-cfg-"));
    writeFileSync(join(u, "config.json"), Buffer.from([0x7b, 0xff, 0x7d]));
    expect(refused(u).message).toBe(`${join(u, "config.json")}: not valid UTF-8`);
    const big = dirWith(`{"pad": "${"x".repeat(1 << 20)}"}`);
    expect(refused(big).message).toBe(`${join(big, "config.json")}: ${(1 << 20) + 11} bytes, more than the ${1 << 20} a config.json may have; not read`);
    const dir = mkdtempSync(join(tmpdir(), "tspto-gpt2-cfg-"));
    mkdirSync(join(dir, "config.json"));
    expect(refused(dir).message).toBe(`${join(dir, "config.json")}: is a directory, not a regular file; not read`);
    const dev = mkdtempSync(join(tmpdir(), "tspto-gpt2-cfg-"));
    symlinkSync("/dev/zero", join(dev, "config.json"));
    expect(refused(dev).message).toBe(`${join(dev, "config.json")}: is a character device, not a regular file; not read`);
    const none = mkdtempSync(join(tmpdir(), "tspto-gpt2-cfg-"));
    expect(refused(none).message).toBe(`${join(none, "config.json")}: not found (a GPT-2 checkpoint directory holds config.json and model.safetensors)`);
  });
});

describe("loadCheckpoint", () => {
  it("a directory as model.safetensors is one line naming it (not a raw EISDIR)", () => {
    const d = dirWith({});
    mkdirSync(join(d, "model.safetensors"));
    let e: unknown;
    try { loadCheckpoint(d); } catch (x) { e = x; }
    expect(e).toBeInstanceOf(SafetensorsError);
    expect((e as Error).message).toBe(`${join(d, "model.safetensors")}: is a directory, not a regular file; not read`);
  });
});

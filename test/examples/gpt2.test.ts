// examples/gpt2 from the outside, as a user runs it: a tiny random GPT-2 checkpoint written here
// in the Hugging Face layout (config.json + model.safetensors), `generate.ts --model DIR --tokens
// ... --max-new N --logits-out FILE` on cpu and on interp, checked against an independent
// reference: onnxruntime-node running an ONNX graph of the same weights (bench/gpt2/onnx_graph.ts)
// with its own KV cache, greedy — the same tokens, every generated token's logits within 1e-4.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, truncateSync, statSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkpointTensors, configJson, loadCheckpoint, randomWeights, type GPT2Config } from "../../examples/gpt2/weights.js";
import { writeSafetensors } from "../../examples/gpt2/safetensors.js";
import { OrtGpt2 } from "../../bench/gpt2/onnx_graph.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CFG: GPT2Config = { nLayer: 2, nHead: 4, nEmbd: 64, vocabSize: 300, nPositions: 48, eps: 1e-5 };
const PROMPT = [5, 17, 299, 42, 7];
const NEW = 6;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let ort: any = null;
try { ort = createRequire(import.meta.url)("onnxruntime-node"); } catch { /* skipped below */ }

function checkpoint(name: string, dtype: "F32" | "F16" | "BF16" = "F32", prefix = ""): string {
  const dir = mkdtempSync(join(tmpdir(), `tspto-gpt2-${name}-`));
  const w = randomWeights(CFG, 11, 0.08);
  writeFileSync(join(dir, "config.json"), configJson(CFG));
  writeSafetensors(join(dir, "model.safetensors"), { ...checkpointTensors(CFG, w, prefix), [`${prefix}h.0.attn.bias`]: { shape: [1, 1, 4, 4], data: new Float32Array(16) } }, dtype, { format: "pt" });
  return dir;
}

/** A file's bytes as float32 (a Buffer may be a window of a larger pooled ArrayBuffer). */
const floats = (b: Buffer) => new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));

/** Runs generate.ts in a child without blocking this worker's event loop (a spawnSync of a compile and a run starves vitest's own messages). */
function generate(args: string[], killAfterMs = 600_000): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", join(ROOT, "examples/gpt2/generate.ts"), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    p.stdout.on("data", (b: Buffer) => { stdout += b.toString(); });
    p.stderr.on("data", (b: Buffer) => { stderr += b.toString(); });
    const timer = setTimeout(() => p.kill("SIGKILL"), killAfterMs);
    p.on("error", reject);
    p.on("close", (status, signal) => { clearTimeout(timer); resolve({ status, signal, stdout, stderr }); });
  });
}

describe.skipIf(!ort)("examples/gpt2 (tiny random checkpoint) against onnxruntime", () => {
  const dir = checkpoint("f32", "F32", "transformer.");
  for (const platform of ["cpu", "interp"]) {
    it(`generate.ts on ${platform}: the same greedy tokens, logits within 1e-4 of onnxruntime's`, async () => {
      const logitsFile = join(dir, `logits_${platform}.bin`);
      const r = await generate(["--model", dir, "--tokens", PROMPT.join(","), "--max-new", String(NEW), "--logits-out", logitsFile, "--platform", platform]);
      expect(r.status, r.stderr).toBe(0);
      const tokens = r.stdout.trim().split(",").map(Number);
      expect(tokens).toHaveLength(NEW);
      const got = floats(readFileSync(logitsFile));
      expect(got.length).toBe(NEW * CFG.vocabSize);

      const { weights } = loadCheckpoint(dir);
      const ref = await OrtGpt2.create(ort, CFG, weights);
      let logits = await ref.forward(PROMPT);
      let row = logits.subarray((PROMPT.length - 1) * CFG.vocabSize);
      let worst = 0;
      for (let i = 0; i < NEW; i++) {
        let best = 0;
        for (let v = 0; v < CFG.vocabSize; v++) {
          worst = Math.max(worst, Math.abs(got[i * CFG.vocabSize + v] - row[v]));
          if (row[v] > row[best]) best = v;
        }
        expect(tokens[i], `token ${i}`).toBe(best);
        logits = await ref.forward([best]);
        row = logits;
      }
      expect(worst).toBeLessThan(1e-4);
      await ref.release();
    });
  }

  it("reads F16 and BF16 checkpoints (the tokens and logits of their own rounded weights)", async () => {
    for (const dtype of ["F16", "BF16"] as const) {
      const d = checkpoint(dtype.toLowerCase(), dtype);
      const r = await generate(["--model", d, "--tokens", PROMPT.join(","), "--max-new", "3", "--logits-out", join(d, "l.bin")]);
      expect(r.status, r.stderr).toBe(0);
      const { weights } = loadCheckpoint(d);
      const ref = await OrtGpt2.create(ort, CFG, weights);
      const logits = await ref.forward(PROMPT);
      const row = logits.subarray((PROMPT.length - 1) * CFG.vocabSize);
      const got = floats(readFileSync(join(d, "l.bin")));
      let worst = 0;
      for (let v = 0; v < CFG.vocabSize; v++) worst = Math.max(worst, Math.abs(got[v] - row[v]));
      expect(worst, dtype).toBeLessThan(1e-4);
      await ref.release();
    }
  });
});

describe("examples/gpt2 errors", () => {
  it("a truncated model.safetensors is one line naming the file and the tensor, exit status 1, no stack", async () => {
    const d = checkpoint("trunc");
    const st = join(d, "model.safetensors");
    truncateSync(st, statSync(st).size - 100);
    const r = await generate(["--model", d, "--tokens", "1,2", "--max-new", "1"]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: ${st.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: tensor '[^']+': data \\[\\d+, \\d+\\) ends past the \\d+ bytes of data in the file \\(truncated\\?\\)\\n$`));
  });

  it("a missing config.json, a token outside the vocabulary and a bad flag say so", async () => {
    const empty = mkdtempSync(join(tmpdir(), "tspto-gpt2-empty-"));
    mkdirSync(join(empty, "sub"));
    const r1 = await generate(["--model", empty, "--tokens", "1"]);
    expect(r1.status).toBe(1);
    expect(r1.stderr).toContain(`error: ${join(empty, "config.json")}: not found (a GPT-2 checkpoint directory holds config.json and model.safetensors)`);
    const d = checkpoint("bad");
    const r2 = await generate(["--model", d, "--tokens", "1,300", "--max-new", "1"]);
    expect(r2.status).toBe(2);
    expect(r2.stderr).toContain("error: --tokens: '300' is not a token id in [0, 300)");
    const r3 = await generate(["--model", d, "--tokens", "1", "--max-new", "0"]);
    expect(r3.stderr).toContain("error: --max-new must be a positive integer, got '0'");
    const r4 = await generate(["--model", d]);
    expect(r4.stderr).toContain("error: give one of --tokens and --prompt");
  });

  const esc = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  it("a FIFO as model.safetensors or config.json, directly or through a link, is one line naming it, exit 1 (no hang: the child is killed at 60 s)", async (ctx) => {
    const probe = mkdtempSync(join(tmpdir(), "tspto-gpt2-fifo-"));
    const mk = spawnSync("mkfifo", [join(probe, "p")], { encoding: "utf8" });
    ctx.skip(!!mk.error || mk.status !== 0, `no mkfifo here (${mk.error?.message ?? mk.stderr}); the directory cases cover the kind check`);
    const runs = ["model.safetensors", "config.json"].flatMap((name) => [false, true].map(async (viaLink) => {
      const d = checkpoint(`fifo-${name}-${viaLink}`);
      const fifo = viaLink ? join(d, "pipe") : join(d, name);
      rmSync(join(d, name));
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      if (viaLink) symlinkSync(fifo, join(d, name));
      const r = await generate(["--model", d, "--tokens", "1,2", "--max-new", "1"], 60_000);
      const what = `${name}${viaLink ? " (a link to a FIFO)" : ""}`;
      expect(r.signal, `${what}: the CLI blocked (killed at the timeout)`).toBeNull();
      expect(r.status, `${what}: ${r.stderr}`).toBe(1);
      expect(r.stderr, what).toBe(`error: ${join(d, name)}: is a FIFO (named pipe), not a regular file; not read\n`);
      expect(r.stdout, what).toBe("");
    }));
    await Promise.all(runs);
  }, 120_000);

  it("a directory as model.safetensors, config.json holding null, layer_norm_epsilon -1: one line each, exit 1, nothing generated", async () => {
    const dirModel = checkpoint("dir-model");
    rmSync(join(dirModel, "model.safetensors"));
    mkdirSync(join(dirModel, "model.safetensors"));
    const nul = checkpoint("null-config");
    writeFileSync(join(nul, "config.json"), "null");
    const eps = checkpoint("eps");
    writeFileSync(join(eps, "config.json"), JSON.stringify({ ...JSON.parse(configJson(CFG)), layer_norm_epsilon: -1 }));
    const want: [string, string][] = [
      [dirModel, `${join(dirModel, "model.safetensors")}: is a directory, not a regular file; not read`],
      [nul, `${join(nul, "config.json")}: holds null, not a JSON object of the model's settings`],
      [eps, `${join(eps, "config.json")}: 'layer_norm_epsilon' must be a number > 0 that float32 holds (1.4e-45 to 3.4e38), got -1`],
    ];
    const got = await Promise.all(want.map(([d]) => generate(["--model", d, "--tokens", "1,2", "--max-new", "3"], 300_000)));
    got.forEach((r, i) => {
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^error: ${esc(want[i][1])}\\n$`));
      expect(r.stdout).toBe("");
    });
  }, 330_000);
});

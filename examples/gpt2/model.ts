// GPT-2 in tspto, written on whole tensors: LayerNorm with row reductions, each linear layer one
// matmul with its bias / residual / GELU epilogue, tanh-GELU, attention per head over the
// column windows of a KV cache that stays on the device (the first L rows of a [n_positions, D]
// DeviceTensor through cache.narrow(0, 0, L)), the tied logits with bTrans, greedy argmax.
// One compile of each program serves every prompt length and every position.
//
// The programs are made per model shape (kernels(config)): the widths come from config.json, so
// they reach the kernels through `opts.scope` and annotate the shapes as `typeof D`.
import { pl, ir, ChipWorker, RunConfig, zeros, type CompiledProgram, type DeviceTensor, type RegistrationHandle } from "tspto";
import type { GPT2Config, GPT2Weights } from "./weights.js";

/** The three programs of a GPT-2 of this shape. */
export function kernels(c: GPT2Config) {
  const D = c.nEmbd, QKV = 3 * c.nEmbd, H = c.nHead, HD = c.nEmbd / c.nHead, FF = 4 * c.nEmbd, V = c.vocabSize, P = c.nPositions;
  const EPS = c.eps, INV_D = 1 / D, SCALE = 1 / Math.sqrt(HD), GELU_C = Math.sqrt(2 / Math.PI);
  const scope = { D, QKV, H, HD, FF, V, P, EPS, INV_D, SCALE, GELU_C };

  /** x[S, D] = wte[ids] + wpe[pos .. pos + S] */
  const embed = pl.jit(function embed(ids: pl.Tensor<["S"], pl.INT32>, wte: pl.Tensor<[typeof V, typeof D], pl.FP32>, wpe: pl.Tensor<[typeof P, typeof D], pl.FP32>,
    pos: pl.Scalar<pl.INT64>, x: pl.Out<pl.Tensor<["S", typeof D], pl.FP32>>) {
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(pl.gather(wte, ids), pl.slice(wpe, [pl.dim(x, 0), D], [pos, 0])));
    });
    return x;
  }, { scope });

  /**
   * One transformer block on the S new tokens, in place on the residual stream x. kc / vc are
   * the first L rows of the layer's caches (L = the tokens so far, these S included); the new
   * keys and values are written into their last S rows.
   */
  const block = pl.jit(function block(x: pl.InOut<pl.Tensor<["S", typeof D], pl.FP32>>,
    ln1w: pl.Tensor<[1, typeof D], pl.FP32>, ln1b: pl.Tensor<[1, typeof D], pl.FP32>,
    attnW: pl.Tensor<[typeof D, typeof QKV], pl.FP32>, attnB: pl.Tensor<[1, typeof QKV], pl.FP32>,
    projW: pl.Tensor<[typeof D, typeof D], pl.FP32>, projB: pl.Tensor<[1, typeof D], pl.FP32>,
    ln2w: pl.Tensor<[1, typeof D], pl.FP32>, ln2b: pl.Tensor<[1, typeof D], pl.FP32>,
    fcW: pl.Tensor<[typeof D, typeof FF], pl.FP32>, fcB: pl.Tensor<[1, typeof FF], pl.FP32>,
    fcProjW: pl.Tensor<[typeof FF, typeof D], pl.FP32>, fcProjB: pl.Tensor<[1, typeof D], pl.FP32>,
    kc: pl.InOut<pl.Tensor<["L", typeof D], pl.FP32>>, vc: pl.InOut<pl.Tensor<["L", typeof D], pl.FP32>>) {
    const h = pl.createTensor(["S", D], pl.FP32);
    const qkv = pl.createTensor(["S", QKV], pl.FP32);
    const att = pl.createTensor(["S", D], pl.FP32);
    const f = pl.createTensor(["S", FF], pl.FP32);
    const scores = pl.createTensor(["S", "L"], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln1w), ln1b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(qkv, pl.add(pl.matmul(h, attnW), attnB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      // the new keys and values: the cache's last S rows
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      pl.assemble(kc, pl.slice(qkv, [pl.dim(x, 0), D], [0, D]), [past, 0]);
      pl.assemble(vc, pl.slice(qkv, [pl.dim(x, 0), D], [0, 2 * D]), [past, 0]);
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const past = pl.dim(kc, 0) - pl.dim(x, 0);
      for (const hd of pl.range(H)) {
        const q = pl.slice(qkv, [pl.dim(x, 0), HD], [0, HD * hd]);
        const k = pl.slice(kc, [pl.dim(kc, 0), HD], [0, HD * hd]);
        const v = pl.slice(vc, [pl.dim(vc, 0), HD], [0, HD * hd]);
        // query i (position past + i) sees the cache rows j <= past + i
        const visible = pl.cmp(pl.iota(["S", "L"], 1, pl.INT32), pl.add(pl.iota(["S", "L"], 0, pl.INT32), past), "le");
        pl.assign(scores, pl.sel(visible, pl.mul(pl.matmul(q, k, { bTrans: true }), SCALE), -1e30));
        const e = pl.exp(pl.rowExpandSub(scores, pl.rowMax(scores)));
        pl.assign(scores, pl.rowExpandDiv(e, pl.rowSum(e)));
        pl.assemble(att, pl.matmul(scores, v), [0, HD * hd]);
      }
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(x, pl.add(pl.matmul(att, projW), projB)));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const mean = pl.mul(pl.rowSum(x), INV_D);
      const xc = pl.rowExpandSub(x, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(h, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), ln2w), ln2b));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      const u = pl.add(pl.matmul(h, fcW), fcB);
      // GELU, tanh form: 0.5 u (1 + tanh(sqrt(2 / pi) (u + 0.044715 u^3)))
      pl.assign(f, pl.mul(pl.mul(u, 0.5), pl.add(pl.tanh(pl.mul(pl.add(u, pl.mul(pl.mul(pl.mul(u, u), u), 0.044715)), GELU_C)), 1)));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(x, pl.add(x, pl.add(pl.matmul(f, fcProjW), fcProjB)));
    });
    return x;
  }, { scope });

  /** The last token's logits (the final LayerNorm, then x @ wteᵀ) and its argmax. */
  const head = pl.jit(function head(x: pl.Tensor<["S", typeof D], pl.FP32>, lnfW: pl.Tensor<[1, typeof D], pl.FP32>, lnfB: pl.Tensor<[1, typeof D], pl.FP32>,
    wte: pl.Tensor<[typeof V, typeof D], pl.FP32>, logits: pl.Out<pl.Tensor<[1, typeof V], pl.FP32>>, next: pl.Out<pl.Tensor<[1, 1], pl.INT32>>) {
    const hl = pl.createTensor([1, D], pl.FP32);
    pl.at(pl.Level.CORE_GROUP, () => {
      const last = pl.slice(x, [1, D], [pl.dim(x, 0) - 1, 0]);
      const mean = pl.mul(pl.rowSum(last), INV_D);
      const xc = pl.rowExpandSub(last, mean);
      const rstd = pl.rsqrt(pl.add(pl.mul(pl.rowSum(pl.mul(xc, xc)), INV_D), EPS));
      pl.assign(hl, pl.add(pl.mul(pl.rowExpandMul(xc, rstd), lnfW), lnfB));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(logits, pl.matmul(hl, wte, { bTrans: true }));
    });
    pl.at(pl.Level.CORE_GROUP, () => {
      pl.assign(next, pl.rowArgmax(logits));
    });
    return logits;
  }, { scope });

  return { embed, block, head };
}

export interface ModelOptions { platform?: string; config?: RunConfig }

/**
 * A GPT-2 on one worker: weights resident, one KV cache per layer resident and written in place,
 * the residual stream resident; each step is embed, n_layer blocks and the head.
 */
export class GPT2Model {
  readonly worker: ChipWorker;
  readonly programs: { embed: CompiledProgram; block: CompiledProgram; head: CompiledProgram };
  /** Tokens in the cache. */
  position = 0;
  private readonly handles: { embed: RegistrationHandle; block: RegistrationHandle; head: RegistrationHandle };
  private readonly dev: { wte: DeviceTensor; wpe: DeviceTensor; lnfW: DeviceTensor; lnfB: DeviceTensor; layers: DeviceTensor[][]; kc: DeviceTensor[]; vc: DeviceTensor[]; x: DeviceTensor };
  private readonly logits: Float32Array;
  private readonly next = new Int32Array(1);

  constructor(readonly config: GPT2Config, weights: GPT2Weights, opts: ModelOptions = {}) {
    const cfg = opts.config ?? new RunConfig({ platform: opts.platform ?? "cpu" });
    const { nEmbd: D, vocabSize: V, nPositions: P } = config;
    this.programs = compilePrograms(config, cfg);
    this.worker = new ChipWorker(cfg);
    const w = this.worker;
    const put = (shape: number[], data: Float32Array) => w.allocTensor(shape, "float32", { init: { data, shape } });
    this.dev = {
      wte: put([V, D], weights.wte), wpe: put([P, D], weights.wpe), lnfW: put([1, D], weights.lnfW), lnfB: put([1, D], weights.lnfB),
      layers: weights.layers.map((l) => [
        put([1, D], l.ln1w), put([1, D], l.ln1b), put([D, 3 * D], l.attnW), put([1, 3 * D], l.attnB), put([D, D], l.projW), put([1, D], l.projB),
        put([1, D], l.ln2w), put([1, D], l.ln2b), put([D, 4 * D], l.fcW), put([1, 4 * D], l.fcB), put([4 * D, D], l.fcProjW), put([1, D], l.fcProjB),
      ]),
      kc: weights.layers.map(() => w.allocTensor([P, D], "float32")),
      vc: weights.layers.map(() => w.allocTensor([P, D], "float32")),
      x: w.allocTensor([P, D], "float32"),
    };
    this.handles = { embed: w.register(this.programs.embed), block: w.register(this.programs.block), head: w.register(this.programs.head) };
    this.logits = new Float32Array(V);
  }

  /**
   * Runs `tokens` (a prompt, or the one token just generated) after the cached ones; returns the
   * logits of the last of them (a view, overwritten by the next step) and its argmax.
   */
  step(tokens: readonly number[]): { logits: Float32Array; next: number } {
    const S = tokens.length, L = this.position + S, V = this.config.vocabSize;
    if (S < 1) throw new Error("step: no tokens");
    if (L > this.config.nPositions) throw new Error(`step: ${L} tokens exceed n_positions = ${this.config.nPositions}`);
    for (const t of tokens) if (!Number.isInteger(t) || t < 0 || t >= V) throw new Error(`step: token ${t} is outside the vocabulary [0, ${V})`);
    const x = this.dev.x.narrow(0, 0, S);
    this.handles.embed({ data: Int32Array.from(tokens), shape: [S] }, this.dev.wte, this.dev.wpe, this.position, x);
    for (let i = 0; i < this.config.nLayer; i++) {
      this.handles.block(x, ...this.dev.layers[i], this.dev.kc[i].narrow(0, 0, L), this.dev.vc[i].narrow(0, 0, L));
    }
    this.handles.head(x, this.dev.lnfW, this.dev.lnfB, this.dev.wte, { data: this.logits, shape: [1, V] }, { data: this.next, shape: [1, 1] });
    this.position = L;
    return { logits: this.logits, next: this.next[0] };
  }

  /** The launches one step of `tokens` makes (program, arguments, how many times), for benchmarks; runs nothing. */
  stepLaunches(tokens: readonly number[]): { compiled: CompiledProgram; args: unknown[]; count: number }[] {
    const S = tokens.length, L = this.position + S, V = this.config.vocabSize;
    const x = this.dev.x.narrow(0, 0, S);
    return [
      { compiled: this.programs.embed, args: [{ data: Int32Array.from(tokens), shape: [S] }, this.dev.wte, this.dev.wpe, this.position, x], count: 1 },
      { compiled: this.programs.block, args: [x, ...this.dev.layers[0], this.dev.kc[0].narrow(0, 0, L), this.dev.vc[0].narrow(0, 0, L)], count: this.config.nLayer },
      { compiled: this.programs.head, args: [x, this.dev.lnfW, this.dev.lnfB, this.dev.wte, { data: new Float32Array(V), shape: [1, V] }, { data: new Int32Array(1), shape: [1, 1] }], count: 1 },
    ];
  }

  /** Greedy decoding: the prompt, then `maxNew` tokens, each the argmax of the last logits. */
  generate(prompt: readonly number[], maxNew: number, onToken?: (token: number, logits: Float32Array) => void): number[] {
    const out: number[] = [];
    let r = this.step(prompt);
    for (let i = 0; i < maxNew; i++) {
      out.push(r.next);
      onToken?.(r.next, r.logits);
      if (i + 1 < maxNew) r = this.step([r.next]);
    }
    return out;
  }

  /** Forget the cached tokens (the caches are overwritten from position 0). */
  reset(): void { this.position = 0; }

  close(): void { this.worker.close(); }
}

/** Compiles the three programs for this model shape from sample arguments (shapes only). */
export function compilePrograms(c: GPT2Config, cfg: RunConfig): { embed: CompiledProgram; block: CompiledProgram; head: CompiledProgram } {
  const k = kernels(c);
  const { nEmbd: D, vocabSize: V, nPositions: P } = c;
  const f = (shape: number[]) => zeros(shape);
  const opts = { platform: cfg.platform, fpContract: cfg.fpContract };
  const embed = ir.compile(k.embed.lower(zeros([1], "int32"), f([V, D]), f([P, D]), 0, f([1, D])), opts);
  const block = ir.compile(k.block.lower(f([1, D]), f([1, D]), f([1, D]), f([D, 3 * D]), f([1, 3 * D]), f([D, D]), f([1, D]),
    f([1, D]), f([1, D]), f([D, 4 * D]), f([1, 4 * D]), f([4 * D, D]), f([1, D]), f([2, D]), f([2, D])), opts);
  const head = ir.compile(k.head.lower(f([1, D]), f([1, D]), f([1, D]), f([V, D]), f([1, V]), zeros([1, 1], "int32")), opts);
  return { embed, block, head };
}

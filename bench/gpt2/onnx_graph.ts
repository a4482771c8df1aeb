// GPT-2 as an ONNX graph of the same weights, run by onnxruntime-node: the independent reference
// of examples/gpt2 (its CI test) and the peer of the GPT-2 bench rows. Built with onnx-proto (the
// ONNX protobuf schema for JavaScript, generated with protobufjs), opset 17, standard ops only:
// LayerNormalization, MatMul + Add, Split, Reshape, Transpose, Concat (the KV cache), Softmax,
// tanh-GELU, Gemm with transB for the tied logits. One graph serves prefill and decode:
//
//   inputs   input_ids int64 [T], position_ids int64 [T], attention_mask float [T, L] (0 or -inf),
//            past_key_<i>, past_value_<i> float [H, L - T, hd] for every layer i
//   outputs  logits float [T, V], present_key_<i>, present_value_<i> float [H, L, hd]
import { createRequire } from "node:module";
import type { GPT2Config, GPT2Weights } from "../../examples/gpt2/weights.js";

const { onnx } = createRequire(import.meta.url)("onnx-proto") as typeof import("onnx-proto");
type INode = import("onnx-proto").onnx.INodeProto;
type ITensor = import("onnx-proto").onnx.ITensorProto;
const F = onnx.TensorProto.DataType.FLOAT, I64 = onnx.TensorProto.DataType.INT64;
const A = onnx.AttributeProto.AttributeType;

/**
 * onnxruntime's own 4-bit path (com.microsoft MatMulNBits, opset 1) for every linear layer and
 * the tied logits: `quantize(W, N, K)` gives a [K, N] weight's packed bytes ([N, K / blockSize,
 * blockSize / 2] uint8, low nibble first, zero point 8) and its scales ([N * K / blockSize]
 * float32): the bytes tspto.quantize makes for pl.matmulQuant. The embedding lookup stays fp32.
 */
export interface NBits { readonly blockSize: number; quantize(w: Float32Array, k: number, n: number, layout: "kn" | "nk"): { packed: Uint8Array; scales: Float32Array } }

export function gpt2OnnxModel(c: GPT2Config, w: GPT2Weights, nbits?: NBits): Uint8Array {
  const { nLayer, nHead: H, nEmbd: D, vocabSize: V } = c;
  const hd = D / H;
  const nodes: INode[] = [];
  const inits: ITensor[] = [];
  let k = 0;
  const name = (s: string) => `${s}_${k++}`;
  const floatInit = (n: string, dims: number[], data: Float32Array) => {
    inits.push({ name: n, dataType: F, dims, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
    return n;
  };
  const intInit = (n: string, values: number[]) => {
    const b = new BigInt64Array(values.map(BigInt));
    inits.push({ name: n, dataType: I64, dims: [values.length], rawData: new Uint8Array(b.buffer) });
    return n;
  };
  const scalarInit = (n: string, v: number) => { inits.push({ name: n, dataType: F, dims: [], floatData: [v] }); return n; };
  const node = (op: string, inputs: string[], attrs: Record<string, number | number[]> = {}, outs = 1): string[] => {
    const outputs = Array.from({ length: outs }, () => name(op.toLowerCase()));
    const attribute = Object.entries(attrs).map(([n, v]) => (Array.isArray(v) ? { name: n, type: A.INTS, ints: v }
      : Number.isInteger(v) && n !== "epsilon" && n !== "alpha" ? { name: n, type: A.INT, i: v } : { name: n, type: A.FLOAT, f: v }));
    nodes.push({ opType: op, input: inputs, output: outputs, name: name(op), attribute });
    return outputs;
  };
  const one = (op: string, inputs: string[], attrs: Record<string, number | number[]> = {}) => node(op, inputs, attrs)[0];

  const wte = floatInit("wte", [V, D], w.wte), wpe = floatInit("wpe", [c.nPositions, D], w.wpe);
  const headsShape = intInit("shape_heads", [0, H, hd]), flatShape = intInit("shape_flat", [0, D]);
  const split3 = intInit("split3", [D, D, D]);
  const scale = scalarInit("scale", 1 / Math.sqrt(hd)), half = scalarInit("half", 0.5), oneF = scalarInit("one", 1);
  const geluC = scalarInit("gelu_c", Math.sqrt(2 / Math.PI)), geluK = scalarInit("gelu_k", 0.044715);
  let x = one("Add", [one("Gather", [wte, "input_ids"], { axis: 0 }), one("Gather", [wpe, "position_ids"], { axis: 0 })]);
  const ln = (t: string, g: Float32Array, b: Float32Array, tag: string) =>
    one("LayerNormalization", [t, floatInit(`${tag}_w`, [D], g), floatInit(`${tag}_b`, [D], b)], { axis: -1, epsilon: c.eps });
  const U8 = onnx.TensorProto.DataType.UINT8;
  /** MatMulNBits(t, quantized W): W [K, N] ("kn") or [N, K] ("nk"). */
  const nbitsMatMul = (t: string, W: Float32Array, K: number, N: number, layout: "kn" | "nk", tag: string): string => {
    const q = nbits!.quantize(W, K, N, layout), bs = nbits!.blockSize;
    inits.push({ name: `${tag}_q`, dataType: U8, dims: [N, K / bs, bs / 2], rawData: q.packed });
    floatInit(`${tag}_s`, [N * (K / bs)], q.scales);
    const out = name("matmulnbits");
    nodes.push({ opType: "MatMulNBits", domain: "com.microsoft", input: [t, `${tag}_q`, `${tag}_s`], output: [out], name: name("MatMulNBits"),
      attribute: [{ name: "K", type: A.INT, i: K }, { name: "N", type: A.INT, i: N }, { name: "bits", type: A.INT, i: 4 }, { name: "block_size", type: A.INT, i: bs }] });
    return out;
  };
  const dense = (t: string, W: Float32Array, B: Float32Array, din: number, dout: number, tag: string) =>
    one("Add", [nbits ? nbitsMatMul(t, W, din, dout, "kn", tag) : one("MatMul", [t, floatInit(`${tag}_w`, [din, dout], W)]), floatInit(`${tag}_b`, [dout], B)]);
  const outputs: string[] = [];
  w.layers.forEach((l, i) => {
    const h = ln(x, l.ln1w, l.ln1b, `h${i}_ln1`);
    const qkv = dense(h, l.attnW, l.attnB, D, 3 * D, `h${i}_attn`);
    const [q, kk, v] = node("Split", [qkv, split3], { axis: -1 }, 3);
    const heads = (t: string) => one("Transpose", [one("Reshape", [t, headsShape])], { perm: [1, 0, 2] }); // [H, T, hd]
    const pk = one("Concat", [`past_key_${i}`, heads(kk)], { axis: 1 }), pv = one("Concat", [`past_value_${i}`, heads(v)], { axis: 1 });
    nodes.push({ opType: "Identity", input: [pk], output: [`present_key_${i}`], name: name("present") });
    nodes.push({ opType: "Identity", input: [pv], output: [`present_value_${i}`], name: name("present") });
    const scores = one("Add", [one("Mul", [one("MatMul", [heads(q), one("Transpose", [pk], { perm: [0, 2, 1] })]), scale]), "attention_mask"]);
    const att = one("MatMul", [one("Softmax", [scores], { axis: -1 }), pv]);                       // [H, T, hd]
    const merged = one("Reshape", [one("Transpose", [att], { perm: [1, 0, 2] }), flatShape]);      // [T, D]
    x = one("Add", [x, dense(merged, l.projW, l.projB, D, D, `h${i}_proj`)]);
    const f = dense(ln(x, l.ln2w, l.ln2b, `h${i}_ln2`), l.fcW, l.fcB, D, 4 * D, `h${i}_fc`);
    const cube = one("Mul", [one("Mul", [f, f]), f]);
    const inner = one("Mul", [one("Add", [f, one("Mul", [cube, geluK])]), geluC]);
    const g = one("Mul", [one("Mul", [f, half]), one("Add", [one("Tanh", [inner]), oneF])]);
    x = one("Add", [x, dense(g, l.fcProjW, l.fcProjB, 4 * D, D, `h${i}_fcproj`)]);
    outputs.push(`present_key_${i}`, `present_value_${i}`);
  });
  const xf = ln(x, w.lnfW, w.lnfB, "ln_f");
  if (nbits) nodes.push({ opType: "Identity", input: [nbitsMatMul(xf, w.wte, D, V, "nk", "head")], output: ["logits"], name: name("Identity") });
  else nodes.push({ opType: "Gemm", input: [xf, wte], output: ["logits"], name: name("Gemm"), attribute: [{ name: "transB", type: A.INT, i: 1 }] });
  const vi = (n: string, elem: number, dims: (number | string)[]) => ({
    name: n, type: { tensorType: { elemType: elem, shape: { dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) } } },
  });
  const graph = {
    name: "gpt2", node: nodes, initializer: inits,
    input: [vi("input_ids", I64, ["T"]), vi("position_ids", I64, ["T"]), vi("attention_mask", F, ["T", "L"]),
      ...Array.from({ length: nLayer }, (_, i) => [vi(`past_key_${i}`, F, [H, "P", hd]), vi(`past_value_${i}`, F, [H, "P", hd])]).flat()],
    output: [vi("logits", F, ["T", V]), ...outputs.map((o) => vi(o, F, [H, "L", hd]))],
  };
  const opsetImport = [{ domain: "", version: 17 }, ...(nbits ? [{ domain: "com.microsoft", version: 1 }] : [])];
  const model = onnx.ModelProto.create({ irVersion: 8, opsetImport, producerName: "tspto-bench", graph });
  return onnx.ModelProto.encode(model).finish();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ort = any;

/** Greedy GPT-2 on onnxruntime with its own KV cache (present -> past between calls). */
export class OrtGpt2 {
  private past: Float32Array[] = [];
  private len = 0;
  private constructor(private readonly ort: Ort, private readonly session: Ort, readonly config: GPT2Config) { this.reset(); }

  /** `sessionOptions`: e.g. { intraOpNumThreads: 2, extra: { session: { intra_op: { allow_spinning: "0" } } } } for the bench. */
  static async create(ort: Ort, c: GPT2Config, w: GPT2Weights, sessionOptions: object = {}, nbits?: NBits): Promise<OrtGpt2> {
    const session = await ort.InferenceSession.create(gpt2OnnxModel(c, w, nbits), { graphOptimizationLevel: "all", ...sessionOptions });
    return new OrtGpt2(ort, session, c);
  }

  /** The cache as it is (to restore later: a bench replays decode from one position). */
  snapshot(): { past: Float32Array[]; len: number } { return { past: [...this.past], len: this.len }; }
  restore(s: unknown): void { const x = s as { past: Float32Array[]; len: number }; this.past = [...x.past]; this.len = x.len; }

  reset(): void {
    this.past = Array.from({ length: 2 * this.config.nLayer }, () => new Float32Array(0));
    this.len = 0;
  }

  /** Runs `tokens` after the cached ones; returns the logits [T, V] (row t: the distribution after token t). */
  async forward(tokens: readonly number[]): Promise<Float32Array> {
    const { nHead: H, nEmbd: D, nLayer } = this.config, hd = D / H;
    const T = tokens.length, P = this.len, L = P + T;
    const mask = new Float32Array(T * L);
    for (let t = 0; t < T; t++) for (let j = 0; j < L; j++) mask[t * L + j] = j <= P + t ? 0 : -Infinity;
    const { Tensor } = this.ort;
    const feeds: Record<string, unknown> = {
      input_ids: new Tensor("int64", BigInt64Array.from(tokens.map(BigInt)), [T]),
      position_ids: new Tensor("int64", BigInt64Array.from(tokens.map((_, t) => BigInt(P + t))), [T]),
      attention_mask: new Tensor("float32", mask, [T, L]),
    };
    for (let i = 0; i < nLayer; i++) {
      feeds[`past_key_${i}`] = new Tensor("float32", this.past[2 * i], [H, P, hd]);
      feeds[`past_value_${i}`] = new Tensor("float32", this.past[2 * i + 1], [H, P, hd]);
    }
    const out = await this.session.run(feeds);
    for (let i = 0; i < nLayer; i++) {
      this.past[2 * i] = out[`present_key_${i}`].data as Float32Array;
      this.past[2 * i + 1] = out[`present_value_${i}`].data as Float32Array;
    }
    this.len = L;
    return out.logits.data as Float32Array;
  }

  async release(): Promise<void> { await this.session.release?.(); }
}

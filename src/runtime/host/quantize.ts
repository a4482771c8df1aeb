// Host-side weight quantization for pl.matmulQuant (src/ir/ops/quant.ts): symmetric, per group
// of `groupSize` consecutive weights along K, one scale per group.
//   scale = max |w| over the group / qmax (qmax = 127 for int8, 7 for int4), rounded to the
//   scale dtype first; q = clamp(round_half_even(w / scale), -qmax - 1, qmax) with that rounded
//   scale (a group of zeros has scale 0 and q = 0).
// Output layout (what matmulQuant reads): one row per output column n, K along the row.
//   bits 8: int8 [N, K].  bits 4: uint8 [N, K/2], k = 2j in the low nibble of byte j, k = 2j + 1
//   in the high nibble, each stored as q + 8 (0..15) — the bytes onnxruntime's MatMulNBits reads
//   (its B [N, K/blockSize, blockSize/2] with the default zero point 8).
// The input is [N, K] (layout "nk", e.g. nn.Linear, an embedding used as tied logits) or [K, N]
// (layout "kn": the `b` of pl.matmul(x, b), GPT-2's Conv1D weights), float32/float16/bfloat16.
import { roundToDType, type DType } from "../dtype.js";
import { argError, shapeStr } from "./check.js";
import { HostTensor } from "./host_tensor.js";
import { tensor, zeros } from "./factories.js";

export interface QuantizeOptions {
  /** 8: int8 weights; 4: int4, packed two per byte. */
  readonly bits: 4 | 8;
  /** Weights per scale along K (a divisor of K; for bits 4 K is even). */
  readonly groupSize: number;
  /** The scales' dtype (default float32). */
  readonly scaleDtype?: "float32" | "float16" | "bfloat16";
  /** The input's layout: "nk" ([N, K], the default) or "kn" ([K, N]). */
  readonly layout?: "nk" | "kn";
}

/** A weight quantized for pl.matmulQuant: pass `w` and `scales` with `{ bits, groupSize }`. */
export interface QuantizedWeight {
  /** bits 8: int8 [N, K]; bits 4: uint8 [N, K/2]. */
  readonly w: HostTensor;
  /** [N, K / groupSize] in the scale dtype. */
  readonly scales: HostTensor;
  readonly bits: 4 | 8;
  readonly groupSize: number;
  /** [N, K]: the logical shape of the weight. */
  readonly shape: readonly [number, number];
}

const roundHalfEven = (v: number): number => {
  const f = Math.floor(v), d = v - f;
  return d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1;
};

/** Quantize a float weight for pl.matmulQuant (see the file header for the scheme and layout). */
export function quantize(w: HostTensor, opts: QuantizeOptions): QuantizedWeight {
  const who = "quantize";
  if (!(w instanceof HostTensor)) throw argError("E_ARG", `${who}: the weight must be a HostTensor`);
  if (w.shape.length !== 2) throw argError("E_SHAPE", `${who}: the weight must be 2-D ([N, K] or, with layout "kn", [K, N]), got ${shapeStr(w.shape)}`);
  if (!["float32", "float16", "bfloat16"].includes(w.dtype)) throw argError("E_DTYPE", `${who}: the weight must be float32, float16 or bfloat16, got ${w.dtype}`);
  const bits = opts.bits;
  if (bits !== 4 && bits !== 8) throw argError("E_ARG", `${who}: bits must be 4 or 8, got ${JSON.stringify(bits)}`);
  const layout = opts.layout ?? "nk";
  if (layout !== "nk" && layout !== "kn") throw argError("E_ARG", `${who}: layout must be "nk" or "kn", got ${JSON.stringify(layout)}`);
  const [n, k] = layout === "nk" ? w.shape : [w.shape[1], w.shape[0]];
  const g = opts.groupSize;
  if (!Number.isInteger(g) || g <= 0 || k % g !== 0) throw argError("E_ARG", `${who}: groupSize must be a positive integer that divides K = ${k}, got ${JSON.stringify(g)}`);
  if (bits === 4 && k % 2 !== 0) throw argError("E_SHAPE", `${who}: int4 weights need an even K, got K = ${k}`);
  const sd: DType = opts.scaleDtype ?? "float32";
  if (!["float32", "float16", "bfloat16"].includes(sd)) throw argError("E_DTYPE", `${who}: scaleDtype must be float32, float16 or bfloat16, got ${JSON.stringify(sd)}`);
  const vals = w.dtype === "float32" ? (w.data as Float32Array) : Float32Array.from(w.toArray());
  const at = layout === "nk" ? (r: number, c: number) => vals[r * k + c] : (r: number, c: number) => vals[c * n + r];
  const qmax = bits === 8 ? 127 : 7;
  const groups = k / g;
  const sc = new Float64Array(n * groups);
  const q = new Int8Array(n * k);
  for (let r = 0; r < n; r++) {
    for (let gi = 0; gi < groups; gi++) {
      let amax = 0;
      for (let c = gi * g; c < (gi + 1) * g; c++) amax = Math.max(amax, Math.abs(at(r, c)));
      const s = roundToDType(Math.fround(amax / qmax), sd);
      sc[r * groups + gi] = s;
      for (let c = gi * g; c < (gi + 1) * g; c++) q[r * k + c] = s === 0 ? 0 : Math.max(-qmax - 1, Math.min(qmax, roundHalfEven(at(r, c) / s)));
    }
  }
  const scales = tensor(sc, { shape: [n, groups], dtype: sd });
  if (bits === 8) return { w: new HostTensor(q, [n, k], "int8"), scales, bits, groupSize: g, shape: [n, k] };
  const packed = zeros([n, k / 2], "uint8");
  const p = packed.data as Uint8Array;
  for (let i = 0; i < n * k; i += 2) p[i >> 1] = ((q[i] + 8) & 15) | (((q[i + 1] + 8) & 15) << 4);
  return { w: packed, scales, bits, groupSize: g, shape: [n, k] };
}

/** The float32 [N, K] weight a quantized weight stands for: q * scale (a reference for tests). */
export function dequantize(qw: QuantizedWeight): HostTensor {
  const [n, k] = qw.shape, groups = k / qw.groupSize;
  const s = qw.scales.dtype === "float32" ? (qw.scales.data as Float32Array) : Float32Array.from(qw.scales.toArray());
  const out = new Float32Array(n * k);
  const wd = qw.w.data as Int8Array | Uint8Array;
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < k; c++) {
      const v = qw.bits === 8 ? wd[r * k + c] : (((wd[r * (k / 2) + (c >> 1)] >> ((c & 1) * 4)) & 15) - 8);
      out[r * k + c] = v * s[r * groups + Math.floor(c / qw.groupSize)];
    }
  }
  return new HostTensor(out, [n, k], "float32");
}

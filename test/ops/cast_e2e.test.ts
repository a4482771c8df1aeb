// cast end to end (parse -> passes -> codegen -> launch) between every pair of dtypes with
// every rounding mode, on cpu and interp, against an independent JavaScript reference.
import { describe, it } from "vitest";
import { pl, RunConfig, tensor, zeros, assertClose, type DType, type HostTensor } from "tspto";

const R = 2, C = 32, N = R * C;
const DTYPES: DType[] = ["float32", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"];
const MODES = ["round", "rint", "floor", "ceil", "trunc"] as const;

/** Each output [5 * R, C]: the cast with mode m in rows [m * R, m * R + R). */
const castAll = pl.jit(function castAll(x: pl.Tensor, f32: pl.Out<pl.Tensor>, f16: pl.Out<pl.Tensor>, bf16: pl.Out<pl.Tensor>, i8: pl.Out<pl.Tensor>,
  i16: pl.Out<pl.Tensor>, i32: pl.Out<pl.Tensor>, i64: pl.Out<pl.Tensor>, u8: pl.Out<pl.Tensor>, b: pl.Out<pl.Tensor>) {
  pl.at(pl.Level.CORE_GROUP, () => {
    const t = pl.load(x, [0, 0], [R, C]);
    pl.store(pl.cast(t, pl.FP32, "round"), [0, 0], f32); pl.store(pl.cast(t, pl.FP32, "rint"), [R, 0], f32); pl.store(pl.cast(t, pl.FP32, "floor"), [2 * R, 0], f32); pl.store(pl.cast(t, pl.FP32, "ceil"), [3 * R, 0], f32); pl.store(pl.cast(t, pl.FP32, "trunc"), [4 * R, 0], f32);
    pl.store(pl.cast(t, pl.FP16, "round"), [0, 0], f16); pl.store(pl.cast(t, pl.FP16, "rint"), [R, 0], f16); pl.store(pl.cast(t, pl.FP16, "floor"), [2 * R, 0], f16); pl.store(pl.cast(t, pl.FP16, "ceil"), [3 * R, 0], f16); pl.store(pl.cast(t, pl.FP16, "trunc"), [4 * R, 0], f16);
    pl.store(pl.cast(t, pl.BF16, "round"), [0, 0], bf16); pl.store(pl.cast(t, pl.BF16, "rint"), [R, 0], bf16); pl.store(pl.cast(t, pl.BF16, "floor"), [2 * R, 0], bf16); pl.store(pl.cast(t, pl.BF16, "ceil"), [3 * R, 0], bf16); pl.store(pl.cast(t, pl.BF16, "trunc"), [4 * R, 0], bf16);
    pl.store(pl.cast(t, pl.INT8, "round"), [0, 0], i8); pl.store(pl.cast(t, pl.INT8, "rint"), [R, 0], i8); pl.store(pl.cast(t, pl.INT8, "floor"), [2 * R, 0], i8); pl.store(pl.cast(t, pl.INT8, "ceil"), [3 * R, 0], i8); pl.store(pl.cast(t, pl.INT8, "trunc"), [4 * R, 0], i8);
    pl.store(pl.cast(t, pl.INT16, "round"), [0, 0], i16); pl.store(pl.cast(t, pl.INT16, "rint"), [R, 0], i16); pl.store(pl.cast(t, pl.INT16, "floor"), [2 * R, 0], i16); pl.store(pl.cast(t, pl.INT16, "ceil"), [3 * R, 0], i16); pl.store(pl.cast(t, pl.INT16, "trunc"), [4 * R, 0], i16);
    pl.store(pl.cast(t, pl.INT32, "round"), [0, 0], i32); pl.store(pl.cast(t, pl.INT32, "rint"), [R, 0], i32); pl.store(pl.cast(t, pl.INT32, "floor"), [2 * R, 0], i32); pl.store(pl.cast(t, pl.INT32, "ceil"), [3 * R, 0], i32); pl.store(pl.cast(t, pl.INT32, "trunc"), [4 * R, 0], i32);
    pl.store(pl.cast(t, pl.INT64, "round"), [0, 0], i64); pl.store(pl.cast(t, pl.INT64, "rint"), [R, 0], i64); pl.store(pl.cast(t, pl.INT64, "floor"), [2 * R, 0], i64); pl.store(pl.cast(t, pl.INT64, "ceil"), [3 * R, 0], i64); pl.store(pl.cast(t, pl.INT64, "trunc"), [4 * R, 0], i64);
    pl.store(pl.cast(t, pl.UINT8, "round"), [0, 0], u8); pl.store(pl.cast(t, pl.UINT8, "rint"), [R, 0], u8); pl.store(pl.cast(t, pl.UINT8, "floor"), [2 * R, 0], u8); pl.store(pl.cast(t, pl.UINT8, "ceil"), [3 * R, 0], u8); pl.store(pl.cast(t, pl.UINT8, "trunc"), [4 * R, 0], u8);
    pl.store(pl.cast(t, pl.BOOL, "round"), [0, 0], b); pl.store(pl.cast(t, pl.BOOL, "rint"), [R, 0], b); pl.store(pl.cast(t, pl.BOOL, "floor"), [2 * R, 0], b); pl.store(pl.cast(t, pl.BOOL, "ceil"), [3 * R, 0], b); pl.store(pl.cast(t, pl.BOOL, "trunc"), [4 * R, 0], b);
  });
  return f32;
});

// ------------------------------------------------------------------ independent reference
/**
 * Round to a binary float with `mant` fraction bits, minimum normal exponent `emin`, largest
 * finite `max`, in a cast rounding mode (SEMANTICS.md: the mode rounds float targets too).
 */
function roundFloat(x: number, mant: number, emin: number, max: number, m: (typeof MODES)[number]): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (Math.max(e, emin) - mant);
  const q = a / ulp, f = Math.floor(q), d = q - f;
  const up = d === 0 ? false
    : m === "trunc" ? false : m === "floor" ? x < 0 : m === "ceil" ? x > 0
    : m === "round" ? d >= 0.5 : d > 0.5 || (d === 0.5 && f % 2 === 1);
  let r = (up ? f + 1 : f) * ulp;
  if (r > max) r = m === "trunc" || (m === "floor" && x > 0) || (m === "ceil" && x < 0) ? max : Infinity;
  return Math.sign(x) * r;
}
const F16_MAX = 65504, BF16_MAX = 3.3895313892515355e38;
const RANGE: Partial<Record<DType, [number, number]>> = {
  int8: [-128, 127], int16: [-32768, 32767], int32: [-2147483648, 2147483647], int64: [-(2 ** 63), 2 ** 63], uint8: [0, 255], bool: [0, 1],
};
function applyMode(x: number, m: (typeof MODES)[number]): number {
  switch (m) {
    case "floor": return Math.floor(x);
    case "ceil": return Math.ceil(x);
    case "trunc": return Math.trunc(x);
    case "round": return Math.sign(x) * Math.floor(Math.abs(x) + 0.5);
    case "rint": { const f = Math.floor(x); const d = x - f; return d > 0.5 || (d === 0.5 && f % 2 !== 0) ? f + 1 : f; }
  }
}
function castRef(v: number, to: DType, m: (typeof MODES)[number]): number {
  if (to === "float32") return roundFloat(v, 23, -126, 3.4028234663852886e38, m);
  if (to === "float16") return roundFloat(v, 10, -14, F16_MAX, m);
  if (to === "bfloat16") return roundFloat(v, 7, -126, BF16_MAX, m);
  if (to === "bool") return v !== 0 ? 1 : 0; // NaN != 0
  if (Number.isNaN(v)) return 0;
  const [lo, hi] = RANGE[to]!;
  const r = Number.isFinite(v) ? applyMode(v, m) : v;
  return Math.min(hi, Math.max(lo, r)) || 0;
}

/** Inputs of each dtype: ties (x.5), negatives, values beyond the narrower ranges, specials. */
function input(d: DType): HostTensor {
  const vals: number[] = [];
  const specials = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, -0.75, 127.5, 128.5, -128.5, 255.5, 256, -1, 32767.5, 40000.25, -70000.5, 3e9, -3e9, 1e20, NaN, Infinity, -Infinity, 1.0009765625, 65519, 65520];
  for (let i = 0; i < N; i++) {
    if (i < specials.length) vals.push(specials[i]);
    else vals.push(((i * 7919) % 2001 - 1000) / 4 * (i % 3 === 0 ? 300 : 1));
  }
  // other dtypes: the host tensor's conversion (truncating) gives each value of the dtype
  return tensor(Float32Array.from(vals), { shape: [R, C] }).astype(d, "trunc");
}

describe.each(["cpu", "interp"] as const)("cast end to end on %s", (platform) => {
  for (const from of DTYPES) {
    it(`from ${from} to every dtype with every rounding mode`, () => {
      const x = input(from);
      const xs = x.toArray();
      const outs = DTYPES.map((d) => zeros([5 * R, C], d));
      castAll(x, ...(outs as [HostTensor, HostTensor, HostTensor, HostTensor, HostTensor, HostTensor, HostTensor, HostTensor, HostTensor]), new RunConfig({ platform }));
      DTYPES.forEach((to, k) => {
        const want = MODES.flatMap((m) => xs.map((v) => castRef(v, to, m)));
        try {
          assertClose(outs[k].toArray(), want, { rtol: 0, atol: 0 });
        } catch (e) {
          throw new Error(`cast ${from} -> ${to}: ${(e as Error).message}`);
        }
      });
    });
  }
});

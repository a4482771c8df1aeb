// cast's rounding modes for float formats (SEMANTICS.md: the mode rounds every narrowing,
// float -> float16/bfloat16 included), as C++ shared by the cpu prelude and the CUDA prelude
// (`q` is each one's function qualifier). The reference is castToDType / roundToFormat in
// src/ir/dtype.ts; test/codegen/cast.test.ts checks them bit for bit.
//
// MODE (a template argument, castModeIndex): 0 round (nearest, ties away from zero), 1 rint
// (nearest, ties to even: the plain conversions tspto_rnd_f16 / tspto_rnd_bf16 / (float)d
// already do it), 2 floor, 3 ceil, 4 trunc (toward zero: drops the low mantissa bits).
// Branch-free except for range checks, so loops of casts vectorize.

/** The template argument of a cast rounding mode. */
export const CAST_MODE_INDEX: Readonly<Record<string, number>> = { round: 0, rint: 1, floor: 2, ceil: 3, trunc: 4 };

/** The helpers' C++ text with the function qualifier `q` ("static inline" or a __device__ macro). */
export function castModeHelpers(q: string): string {
  return String.raw`
// ------------------------------------------------------------------ cast rounding modes (cast_modes.ts)
// One unit up for a magnitude whose kept bits are 'kept' and dropped bits 'rem' (of which 'half' is the half unit)?
template <int MODE> ${q} uint32_t tspto_round_up(uint32_t kept, uint32_t rem, uint32_t half, bool neg) {
  return MODE == 0 ? (uint32_t)(rem >= half)
       : MODE == 1 ? (uint32_t)(rem > half || (rem == half && (kept & 1u) != 0))
       : MODE == 2 ? (uint32_t)(neg && rem != 0)
       : MODE == 3 ? (uint32_t)(!neg && rem != 0)
       : 0u;
}
// float -> the bfloat16 value (as float): bfloat16 is float32's upper 16 bits, subnormals included.
template <int MODE> ${q} float tspto_cast_bf16(float f) {
  const uint32_t x = tspto_f2u(f), sign = x & 0x80000000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return tspto_u2f(0x7fc00000u);                       // NaN -> the quiet NaN
  const uint32_t kept = ax >> 16;                                             // inf stays inf (rem 0)
  return tspto_u2f(sign | ((kept + tspto_round_up<MODE>(kept, ax & 0xffffu, 0x8000u, sign != 0)) << 16));
}
// float -> the float16 value (as float): 10 of float32's 23 fraction bits in the normal range,
// units of 2^-24 below 2^-14; past 65504 Infinity, or 65504 where MODE rounds toward zero.
template <int MODE> ${q} float tspto_cast_f16(float f) {
  const uint32_t x = tspto_f2u(f), ax = x & 0x7fffffffu;
  const bool neg = (x >> 31) != 0;
  const float s = neg ? -1.0f : 1.0f;
  if (ax > 0x7f800000u) return tspto_u2f(0x7fc00000u);
  if (ax >= 0x47800000u) {                                                    // >= 65536, or inf
    if (ax == 0x7f800000u) return f;
    const bool toward0 = MODE == 4 || (MODE == 2 && !neg) || (MODE == 3 && neg);
    return s * (toward0 ? 65504.0f : tspto_u2f(0x7f800000u));
  }
  if (ax >= 0x38800000u) {                                                    // normal
    const uint32_t kept = ax >> 13;
    const uint32_t r = (kept + tspto_round_up<MODE>(kept, ax & 0x1fffu, 0x1000u, neg)) << 13;
    return r >= 0x47800000u ? s * tspto_u2f(0x7f800000u) : tspto_u2f((x & 0x80000000u) | r);
  }
  const uint32_t e = ax >> 23;                                                // subnormal or zero
  const uint32_t m = e != 0 ? (ax & 0x7fffffu) | 0x800000u : ax;
  const uint32_t sh0 = e != 0 ? 126u - e : 125u, sh = sh0 > 31u ? 31u : sh0;
  const uint32_t kept = m >> sh, rem = m & ((1u << sh) - 1u);
  const uint32_t r = kept + tspto_round_up<MODE>(kept, rem, 1u << (sh - 1u), neg);
  return s * ((float)r * 5.9604644775390625e-8f);                            // r units of 2^-24, exact
}
// double -> float with MODE: the nearest-even conversion, moved to its neighbour where MODE
// rounds the other way (a tie for MODE 0: both neighbours equally far, Sterbenz-exact differences).
template <int MODE> ${q} float tspto_d2f_mode(double d) {
  float f = (float)d;
  if (MODE == 1 || d != d || (double)f == d) return f;
  const float inf = tspto_u2f(0x7f800000u);
  if (MODE == 4) { if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f); }
  else if (MODE == 2) { if ((double)f > d) f = nextafterf(f, -inf); }
  else if (MODE == 3) { if ((double)f < d) f = nextafterf(f, inf); }
  else if (fabs((double)f) < fabs(d)) {
    const float g = nextafterf(f, d < 0 ? -inf : inf);
    if ((double)g - d == d - (double)f) f = g;
  }
  return f;
}
`;
}

// The fixed WGSL of every generated kernel module: the launch's uniform block, device memory
// (one storage buffer per device: tensors, launch staging and the global scratch of big tiles
// live in it at element offsets), the accessors of each storage dtype, and the numeric helpers
// under the cpu prelude's names (src/codegen/cpp/prelude.ts) for the formulas of
// ./formulas.ts. WGSL has no 64-bit integers and no doubles: integer scalars and indices are
// i32, float scalars f32. WGSL lets an implementation assume that float values are never NaN
// or infinite, so every NaN / infinity test and constant works on the bits.
//
// Storage: float32 / int32 one word per element; float16 / bfloat16 two elements per word
// (converted bit-exactly, as the cpu prelude does); int8 / uint8 / bool four per word, int16
// two. Stores of these sub-word dtypes are read-modify-writes of the word with atomics (another
// thread may write the neighbouring element of the same word), so a kernel that makes them
// declares device memory as array<atomic<u32>> and every access of it is atomic.

/** Words of the uniform header before the argument slots. */
export const UNIFORM_HEADER_WORDS = 8;
/** Header words: the SPMD band (lo slot, hi slot, start, step, trips), the global scratch base, the module id. */
export const U_LO_SLOT = 0, U_HI_SLOT = 1, U_START = 2, U_STEP = 3, U_TRIPS = 4, U_GSCRATCH = 5, U_MODULE = 6;
/** Words of the failure record: flag, site, module id, then 8 offsets. */
export const ERR_WORDS = 16;
/** Invocations per workgroup of every kernel (WebGPU's guaranteed maxComputeInvocationsPerWorkgroup). */
export const WGSL_WORKGROUP = 256;

/** Bindings of every kernel (one bind group layout for all pipelines of a device). */
export const BINDING_UNIFORMS = 0, BINDING_MEMORY = 1, BINDING_ERRORS = 2;

/** Raw word access of device memory (tspto_ml / tspto_ms), plain or atomic. */
export function memoryDecl(atomic: boolean): string {
  return atomic
    ? `@group(0) @binding(${BINDING_MEMORY}) var<storage, read_write> tspto_mem: array<atomic<u32>>;
fn tspto_ml(i: i32) -> u32 { return atomicLoad(&tspto_mem[i]); }
fn tspto_ms(i: i32, v: u32) { atomicStore(&tspto_mem[i], v); }
// a sub-word element: clear its bits, then set them (both atomic: the word's other elements may be written meanwhile)
fn tspto_msub(w: i32, sh: u32, bits: u32, v: u32) {
  let m = ((1u << bits) - 1u) << sh;
  atomicAnd(&tspto_mem[w], ~m);
  atomicOr(&tspto_mem[w], (v << sh) & m);
}`
    : `@group(0) @binding(${BINDING_MEMORY}) var<storage, read_write> tspto_mem: array<u32>;
fn tspto_ml(i: i32) -> u32 { return tspto_mem[i]; }
fn tspto_ms(i: i32, v: u32) { tspto_mem[i] = v; }`;
}

/** The uniform block of a kernel with `words` words (header + slots). */
export function uniformDecl(words: number): string {
  return `struct TsptoUniforms { w: array<vec4<i32>, ${Math.max(1, Math.ceil(words / 4))}> }
@group(0) @binding(${BINDING_UNIFORMS}) var<uniform> tspto_u: TsptoUniforms;
fn tspto_word(i: i32) -> i32 { return tspto_u.w[i >> 2][i & 3]; }
// The value of argument slot i for this workgroup: an SPMD launch splits the loop range held in
// slots lo / hi into num_workgroups bands (workgroup b runs iterations [t0, t1) of the trips).
fn tspto_slot(i: i32, wg: i32, ng: i32) -> i32 {
  let v = tspto_word(${UNIFORM_HEADER_WORDS} + i);
  let lo = tspto_word(${U_LO_SLOT});
  let hi = tspto_word(${U_HI_SLOT});
  if (i != lo && i != hi) { return v; }
  let trips = u32(tspto_word(${U_TRIPS}));
  let b = u32(wg);
  let g = u32(ng);
  let q = trips / g;
  let r = trips % g;
  let t0 = q * b + (r * b) / g;
  let t1 = q * (b + 1u) + (r * (b + 1u)) / g;
  if (i == lo) { return tspto_word(${U_START}) + i32(t0) * tspto_word(${U_STEP}); }
  if (b + 1u == g) { return v; }
  return tspto_word(${U_START}) + i32(t1) * tspto_word(${U_STEP});
}`;
}

/** The failure record of a kernel with run-time window checks (first failure wins). */
export const ERRORS_DECL = `@group(0) @binding(${BINDING_ERRORS}) var<storage, read_write> tspto_err: array<atomic<u32>, ${ERR_WORDS}>;
fn tspto_fail(site: i32, o: array<i32, 8>) {
  loop {
    let r = atomicCompareExchangeWeak(&tspto_err[0], 0u, 1u);
    if (r.exchanged) {
      atomicStore(&tspto_err[1], u32(site));
      atomicStore(&tspto_err[2], u32(tspto_word(${U_MODULE})));
      atomicStore(&tspto_err[3], bitcast<u32>(o[0])); atomicStore(&tspto_err[4], bitcast<u32>(o[1]));
      atomicStore(&tspto_err[5], bitcast<u32>(o[2])); atomicStore(&tspto_err[6], bitcast<u32>(o[3]));
      atomicStore(&tspto_err[7], bitcast<u32>(o[4])); atomicStore(&tspto_err[8], bitcast<u32>(o[5]));
      atomicStore(&tspto_err[9], bitcast<u32>(o[6])); atomicStore(&tspto_err[10], bitcast<u32>(o[7]));
      return;
    }
    if (r.old_value != 0u) { return; }
  }
}`;

/** Element accessors of the storage dtypes (element index i from the start of device memory). */
export const ACCESSORS = String.raw`fn tspto_ld_float32(i: i32) -> f32 { return bitcast<f32>(tspto_ml(i)); }
fn tspto_st_float32(i: i32, v: f32) { tspto_ms(i, bitcast<u32>(v)); }
fn tspto_ld_int32(i: i32) -> i32 { return bitcast<i32>(tspto_ml(i)); }
fn tspto_st_int32(i: i32, v: i32) { tspto_ms(i, bitcast<u32>(v)); }
fn tspto_ld_float16(i: i32) -> f32 { return tspto_f16_to_f32(extractBits(tspto_ml(i >> 1u), u32(i & 1) * 16u, 16u)); }
fn tspto_ld_bfloat16(i: i32) -> f32 { return bitcast<f32>(extractBits(tspto_ml(i >> 1u), u32(i & 1) * 16u, 16u) << 16u); }
fn tspto_ld_int16(i: i32) -> i32 { return extractBits(bitcast<i32>(tspto_ml(i >> 1u)), u32(i & 1) * 16u, 16u); }
fn tspto_ld_int8(i: i32) -> i32 { return extractBits(bitcast<i32>(tspto_ml(i >> 2u)), u32(i & 3) * 8u, 8u); }
fn tspto_ld_uint8(i: i32) -> i32 { return i32(extractBits(tspto_ml(i >> 2u), u32(i & 3) * 8u, 8u)); }
fn tspto_ld_bool(i: i32) -> i32 { return select(0, 1, extractBits(tspto_ml(i >> 2u), u32(i & 3) * 8u, 8u) != 0u); }`;

/** Stores of the sub-word dtypes (the atomic memory declaration's tspto_msub). */
export const SUBWORD_STORES = String.raw`fn tspto_st_float16(i: i32, v: f32) { tspto_msub(i >> 1u, u32(i & 1) * 16u, 16u, tspto_f32_to_f16(v)); }
fn tspto_st_bfloat16(i: i32, v: f32) { tspto_msub(i >> 1u, u32(i & 1) * 16u, 16u, tspto_f32_to_bf16(v)); }
fn tspto_st_int16(i: i32, v: i32) { tspto_msub(i >> 1u, u32(i & 1) * 16u, 16u, bitcast<u32>(v)); }
fn tspto_st_int8(i: i32, v: i32) { tspto_msub(i >> 2u, u32(i & 3) * 8u, 8u, bitcast<u32>(v)); }
fn tspto_st_uint8(i: i32, v: i32) { tspto_msub(i >> 2u, u32(i & 3) * 8u, 8u, bitcast<u32>(v)); }
fn tspto_st_bool(i: i32, v: i32) { tspto_msub(i >> 2u, u32(i & 3) * 8u, 8u, select(0u, 1u, v != 0)); }`;

/** The numeric helpers (the cpu prelude's names, on i32 / f32). */
export const WGSL_HELPERS = String.raw`// ------------------------------------------------------------------ float bits
fn tspto_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tspto_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
// NaN and infinity from private variables: a WGSL compiler rejects them as constant expressions
var<private> tspto_nan_bits: u32 = 0x7fc00000u;
var<private> tspto_inf_bits: u32 = 0x7f800000u;
fn tspto_nan() -> f32 { return bitcast<f32>(tspto_nan_bits); }
fn tspto_inf() -> f32 { return bitcast<f32>(tspto_inf_bits); }
fn tspto_signbit(x: f32) -> bool { return (bitcast<u32>(x) & 0x80000000u) != 0u; }

// ------------------------------------------------------------------ float16 / bfloat16 (bit-exact with the cpu prelude)
fn tspto_f32_to_f16(f: f32) -> u32 {
  let x = bitcast<u32>(f);
  let sign = (x >> 16u) & 0x8000u;
  var ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) { return 0x7e00u; }
  if (ax >= 0x47800000u) { return sign | 0x7c00u; }
  if (ax < 0x38800000u) {
    // subnormal or zero: round to nearest even at 2^-24 with integer arithmetic
    if (ax < 0x33000000u) { return sign; }
    let e = ax >> 23u;
    let m = (ax & 0x7fffffu) | 0x800000u;
    let sh = 126u - e;
    let q = m >> sh;
    let rem = m & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    let up = select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u));
    return sign | (q + up);
  }
  let odd = (ax >> 13u) & 1u;
  ax = ax + 0xc8000fffu + odd;
  return sign | (ax >> 13u);
}
fn tspto_f16_to_f32(h: u32) -> f32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }
  if (e == 0u) {
    // subnormal (or zero): m * 2^-24 is exact in fp32
    let v = f32(m) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}
fn tspto_f32_to_bf16(f: f32) -> u32 {
  var x = bitcast<u32>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) { return 0x7fc0u; }
  x = x + 0x7fffu + ((x >> 16u) & 1u);
  return x >> 16u;
}
fn tspto_rnd_f16(x: f32) -> f32 { return tspto_f16_to_f32(tspto_f32_to_f16(x)); }
fn tspto_rnd_bf16(x: f32) -> f32 { return bitcast<f32>(tspto_f32_to_bf16(x) << 16u); }
// cast(x, float16 | bfloat16, mode): the cpu's cast_modes.ts in WGSL (mode 0 round: nearest,
// ties away from zero; 1 rint: ties to even; 2 floor; 3 ceil; 4 trunc), on the bits
fn tspto_round_up(kept: u32, rem: u32, half: u32, neg: bool, mode: u32) -> u32 {
  switch mode {
    case 0u: { return select(0u, 1u, rem >= half); }
    case 1u: { return select(0u, 1u, rem > half || (rem == half && (kept & 1u) != 0u)); }
    case 2u: { return select(0u, 1u, neg && rem != 0u); }
    case 3u: { return select(0u, 1u, !neg && rem != 0u); }
    default: { return 0u; }
  }
}
fn tspto_cast_bf16(f: f32, mode: u32) -> f32 {
  let x = bitcast<u32>(f);
  let sign = x & 0x80000000u;
  let ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) { return tspto_nan(); }
  let kept = ax >> 16u;
  return bitcast<f32>(sign | ((kept + tspto_round_up(kept, ax & 0xffffu, 0x8000u, sign != 0u, mode)) << 16u));
}
fn tspto_cast_f16(f: f32, mode: u32) -> f32 {
  let x = bitcast<u32>(f);
  let ax = x & 0x7fffffffu;
  let neg = (x >> 31u) != 0u;
  let s = select(1.0f, -1.0f, neg);
  if (ax > 0x7f800000u) { return tspto_nan(); }
  if (ax >= 0x47800000u) {
    if (ax == 0x7f800000u) { return f; }
    let toward0 = mode == 4u || (mode == 2u && !neg) || (mode == 3u && neg);
    return s * select(tspto_inf(), 65504.0f, toward0);
  }
  if (ax >= 0x38800000u) {
    let kept = ax >> 13u;
    let r = (kept + tspto_round_up(kept, ax & 0x1fffu, 0x1000u, neg, mode)) << 13u;
    if (r >= 0x47800000u) { return s * tspto_inf(); }
    return bitcast<f32>((x & 0x80000000u) | r);
  }
  let e = ax >> 23u;
  let m = select(ax, (ax & 0x7fffffu) | 0x800000u, e != 0u);
  let sh0 = select(125u, 126u - e, e != 0u);
  let sh = min(sh0, 31u);
  let kept = m >> sh;
  let rem = m & ((1u << sh) - 1u);
  let r = kept + tspto_round_up(kept, rem, 1u << (sh - 1u), neg, mode);
  return s * (f32(r) * 5.9604644775390625e-8f);
}
// (no doubles: a value already rounded to fp32 is rounded once more)
fn tspto_d2f16v(x: f32) -> f32 { return tspto_rnd_f16(x); }
fn tspto_d2bf16v(x: f32) -> f32 { return tspto_rnd_bf16(x); }

// ------------------------------------------------------------------ exp (the cpu prelude's: within 1 ulp)
fn tspto_expf(x: f32) -> f32 {
  if (tspto_isnan(x)) { return x; }
  let xc = clamp(x, -104.0, 89.0);
  let t = fma(xc, 1.44269504088896341, 12582912.0);
  let fnv = t - 12582912.0;
  let n = bitcast<i32>(bitcast<u32>(t) - 0x4b400000u);
  var r = fma(fnv, -0.693359375, xc);
  r = fma(fnv, 2.12194440e-4, r);
  let r2 = r * r;
  var p = 1.9875691500e-4;
  p = fma(p, r, 1.3981999507e-3);
  p = fma(p, r, 8.3334519073e-3);
  p = fma(p, r, 4.1665795894e-2);
  p = fma(p, r, 1.6666665459e-1);
  p = fma(p, r, 5.0000001201e-1);
  p = fma(p, r2, r) + 1.0;
  let n1 = n >> 1u;
  let n2 = n - n1;
  return p * bitcast<f32>(u32(n1 + 127) << 23u) * bitcast<f32>(u32(n2 + 127) << 23u);
}

// ------------------------------------------------------------------ integers (i32)
fn tspto_sat_i8(v: i32) -> i32 { return clamp(v, -128, 127); }
fn tspto_sat_i16(v: i32) -> i32 { return clamp(v, -32768, 32767); }
fn tspto_sat_i32(v: i32) -> i32 { return v; }
fn tspto_sat_u8(v: i32) -> i32 { return clamp(v, 0, 255); }
fn tspto_sat_b(v: i32) -> i32 { return select(0, 1, v != 0); }
// f32 (already rounded to an integer value) -> integer dtype, saturating; NaN -> 0
fn tspto_d2i32(r: f32) -> i32 {
  if (tspto_isnan(r)) { return 0; }
  if (r <= -2147483648.0) { return -2147483647 - 1; }
  if (r >= 2147483647.0) { return 2147483647; }
  return i32(r);
}
fn tspto_d2i8(r: f32) -> i32 { return tspto_sat_i8(tspto_d2i32(r)); }
fn tspto_d2i16(r: f32) -> i32 { return tspto_sat_i16(tspto_d2i32(r)); }
fn tspto_d2u8(r: f32) -> i32 { return tspto_sat_u8(tspto_d2i32(r)); }
fn tspto_d2b(r: f32) -> i32 { return select(0, 1, r != 0.0 || tspto_isnan(r)); }
fn tspto_f2i(r: f32) -> i32 { return tspto_d2i32(trunc(r)); }
// rounding modes: round = half away from zero, rint = half to even
fn tspto_mode_round(x: f32) -> f32 { let t = trunc(x); return select(t, t + sign(x), abs(x - t) >= 0.5); }
fn tspto_mode_rint(x: f32) -> f32 { return round(x); }
fn tspto_mode_floor(x: f32) -> f32 { return floor(x); }
fn tspto_mode_ceil(x: f32) -> f32 { return ceil(x); }
fn tspto_mode_trunc(x: f32) -> f32 { return trunc(x); }
const TSPTO_I32_MIN: i32 = -2147483647 - 1;
const TSPTO_I32_MAX: i32 = 2147483647;
fn tspto_add_sat(a: i32, b: i32) -> i32 {
  let r = bitcast<i32>(bitcast<u32>(a) + bitcast<u32>(b));
  if (((a ^ r) & (b ^ r)) < 0) { return select(TSPTO_I32_MAX, TSPTO_I32_MIN, a < 0); }
  return r;
}
fn tspto_sub_sat(a: i32, b: i32) -> i32 {
  let r = bitcast<i32>(bitcast<u32>(a) - bitcast<u32>(b));
  if (((a ^ b) & (a ^ r)) < 0) { return select(TSPTO_I32_MAX, TSPTO_I32_MIN, a < 0); }
  return r;
}
fn tspto_mul_sat(a: i32, b: i32) -> i32 {
  // the exact product's magnitude (high, low words) from 16-bit halves of |a| and |b|
  let neg = (a < 0) != (b < 0);
  let ua = select(bitcast<u32>(a), 0u - bitcast<u32>(a), a < 0);
  let ub = select(bitcast<u32>(b), 0u - bitcast<u32>(b), b < 0);
  let lo = (ua & 0xffffu) * (ub & 0xffffu);
  let m1 = (ua >> 16u) * (ub & 0xffffu);
  let m2 = (ua & 0xffffu) * (ub >> 16u);
  let mid = (lo >> 16u) + (m1 & 0xffffu) + (m2 & 0xffffu);
  let high = (ua >> 16u) * (ub >> 16u) + (m1 >> 16u) + (m2 >> 16u) + (mid >> 16u);
  let low = (lo & 0xffffu) | (mid << 16u);
  let lim = select(0x7fffffffu, 0x80000000u, neg);
  if (high != 0u || low > lim) { return select(TSPTO_I32_MAX, TSPTO_I32_MIN, neg); }
  return select(bitcast<i32>(low), bitcast<i32>(0u - low), neg);
}
fn tspto_neg_sat(a: i32) -> i32 { return select(-a, TSPTO_I32_MAX, a == TSPTO_I32_MIN); }
fn tspto_abs_sat(a: i32) -> i32 { return select(abs(a), TSPTO_I32_MAX, a == TSPTO_I32_MIN); }
// truncating division; x / 0 = 0
fn tspto_idiv(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } if (b == -1) { return tspto_neg_sat(a); } return a / b; }
// remainder with the sign of a (JS %); x % 0 = 0
fn tspto_imod(a: i32, b: i32) -> i32 { if (b == 0 || b == -1) { return 0; } return a % b; }
// remainder with the sign of b (Python %); x rem 0 = 0
fn tspto_irem(a: i32, b: i32) -> i32 { let r = tspto_imod(a, b); return select(r, r + b, r != 0 && ((r < 0) != (b < 0))); }
fn tspto_imax(a: i32, b: i32) -> i32 { return max(a, b); }
fn tspto_imin(a: i32, b: i32) -> i32 { return min(a, b); }
// shifts by n: n < 0 shifts by 0; shl by >= 32 gives 0; shr by >= bits sign-fills
fn tspto_shl(a: i32, n: i32) -> i32 { if (n >= 32) { return 0; } return a << u32(max(n, 0)); }
fn tspto_sar(a: i32, n: i32, bits: i32) -> i32 { return a >> u32(clamp(n, 0, bits - 1)); }
fn tspto_shr_u(a: i32, n: i32, bits: i32) -> i32 { if (n >= bits) { return 0; } return i32(u32(a) >> u32(max(n, 0))); }
fn tspto_wrap_i8(v: i32) -> i32 { return extractBits(v, 0u, 8u); }
fn tspto_wrap_i16(v: i32) -> i32 { return extractBits(v, 0u, 16u); }
fn tspto_wrap_u8(v: i32) -> i32 { return v & 0xff; }

// ------------------------------------------------------------------ floats (Math.max / Math.min semantics)
fn tspto_fmax(a: f32, b: f32) -> f32 {
  if (tspto_isnan(a) || tspto_isnan(b)) { return tspto_nan(); }
  if (a > b) { return a; }
  if (b > a) { return b; }
  return select(a, b, tspto_signbit(a));
}
fn tspto_fmin(a: f32, b: f32) -> f32 {
  if (tspto_isnan(a) || tspto_isnan(b)) { return tspto_nan(); }
  if (a < b) { return a; }
  if (b < a) { return b; }
  return select(b, a, tspto_signbit(a));
}
fn tspto_relu(a: f32) -> f32 { return select(0.0, a, a > 0.0); }
fn tspto_frem(a: f32, b: f32) -> f32 { let r = a % b; return select(r, r + b, r != 0.0 && ((r < 0.0) != (b < 0.0))); }
// Math.pow: NaN exponents and (+-1) ** +-Infinity are NaN; a negative base needs an integer exponent
fn tspto_pow(a: f32, b: f32) -> f32 {
  if (tspto_isnan(b) || (tspto_isinf(b) && abs(a) == 1.0)) { return tspto_nan(); }
  if (b == 0.0) { return 1.0; }
  if (tspto_isnan(a)) { return a; }
  let intExp = trunc(b) == b;
  let oddExp = intExp && abs(b % 2.0) == 1.0;
  if (a == 0.0) {
    if (b > 0.0) { return select(0.0, a, oddExp); }
    if (oddExp && tspto_signbit(a)) { return -tspto_inf(); }
    return tspto_inf();
  }
  let m = exp2(b * log2(abs(a)));
  if (a > 0.0) { return m; }
  if (!intExp) { return tspto_nan(); }
  return select(m, -m, oddExp);
}
// ------------------------------------------------------------------ libm in fp32 (Cephes; within 1 ulp of Math.* rounded to fp32)
// WGSL's own sin, cos, log and tanh are allowed large errors (sin / cos: 2^-11 absolute), so
// these are computed here from the same polynomials every implementation runs the same way.
fn tspto_trig_reduce(ax: f32) -> vec2<f32> {
  // x mod pi/4 (Cody-Waite in three parts) and the octant
  var j = i32(1.27323954473516 * ax);
  var y = f32(j);
  if ((j & 1) == 1) { j = j + 1; y = y + 1.0; }
  let x = ((ax - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
  return vec2<f32>(x, f32(j & 7));
}
fn tspto_sin_poly(x: f32, z: f32) -> f32 { return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * x + x; }
fn tspto_cos_poly(z: f32) -> f32 { return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0; }
fn tspto_sinf(x0: f32) -> f32 {
  if (tspto_isnan(x0) || tspto_isinf(x0)) { return tspto_nan(); }
  let rj = tspto_trig_reduce(abs(x0));
  var j = i32(rj.y);
  var neg = x0 < 0.0;
  if (j > 3) { neg = !neg; j = j - 4; }
  let x = rj.x;
  let z = x * x;
  let y = select(tspto_sin_poly(x, z), tspto_cos_poly(z), j == 1 || j == 2);
  return select(y, -y, neg);
}
fn tspto_cosf(x0: f32) -> f32 {
  if (tspto_isnan(x0) || tspto_isinf(x0)) { return tspto_nan(); }
  let rj = tspto_trig_reduce(abs(x0));
  var j = i32(rj.y);
  var neg = false;
  if (j > 3) { j = j - 4; neg = true; }
  if (j > 1) { neg = !neg; }
  let x = rj.x;
  let z = x * x;
  let y = select(tspto_cos_poly(z), tspto_sin_poly(x, z), j == 1 || j == 2);
  return select(y, -y, neg);
}
fn tspto_logf(x0: f32) -> f32 {
  if (tspto_isnan(x0) || x0 < 0.0) { return tspto_nan(); }
  if (x0 == 0.0) { return -tspto_inf(); }
  if (tspto_isinf(x0)) { return x0; }
  let fr = frexp(x0);
  var x = fr.fract;
  var e = fr.exp;
  if (x < 0.707106781186547524) { e = e - 1; x = x + x - 1.0; } else { x = x - 1.0; }
  let z = x * x;
  var y = 7.0376836292e-2 * x - 1.1514610310e-1;
  y = y * x + 1.1676998740e-1;
  y = y * x - 1.2420140846e-1;
  y = y * x + 1.4249322787e-1;
  y = y * x - 1.6668057665e-1;
  y = y * x + 2.0000714765e-1;
  y = y * x - 2.4999993993e-1;
  y = y * x + 3.3333331174e-1;
  y = y * x * z;
  let fe = f32(e);
  y = y + -2.12194440e-4 * fe;
  y = y - 0.5 * z;
  return (x + y) + 0.693359375 * fe;
}
fn tspto_tanhf(x: f32) -> f32 {
  if (tspto_isnan(x)) { return x; }
  let z = abs(x);
  if (z > 0.5493) {
    let r = 1.0 - 2.0 / (tspto_expf(min(2.0 * z, 88.0)) + 1.0);
    return select(r, -r, x < 0.0);
  }
  let s = x * x;
  let p = (((-5.70498872745e-3 * s + 2.06390887954e-2) * s - 5.37397155531e-2) * s + 1.33314422036e-1) * s - 3.33332819422e-1;
  return p * s * x + x;
}
// erf: a polynomial below 1 (Cephes), 1 - erfc beyond (erfc's Chebyshev fit, relative error 1.2e-7)
fn tspto_erf(x: f32) -> f32 {
  if (tspto_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 1.0) {
    let z = x * x;
    let y = (((((7.853861353153693e-5 * z - 8.010193625184903e-4) * z + 5.188327685732524e-3) * z - 2.685381193529856e-2) * z + 1.128358514861418e-1) * z - 3.761262582423300e-1) * z + 1.128379165726710;
    return x * y;
  }
  let t = 1.0 / (1.0 + 0.5 * ax);
  var p = 0.17087277;
  p = p * t - 0.82215223;
  p = p * t + 1.48851587;
  p = p * t - 1.13520398;
  p = p * t + 0.27886807;
  p = p * t - 0.18628806;
  p = p * t + 0.09678418;
  p = p * t + 0.37409196;
  p = p * t + 1.00002368;
  p = p * t - 1.26551223;
  let r = 1.0 - t * tspto_expf(-ax * ax + p);
  return select(r, -r, x < 0.0);
}`;

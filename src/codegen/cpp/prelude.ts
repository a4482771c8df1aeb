// The fixed C++ prelude of every generated translation unit: the ABI header, numeric
// helpers (float16 / bfloat16 conversions bit-exact with src/runtime/dtype.ts, saturating
// conversions with the five rounding modes of `roundToDType`, saturating int64 arithmetic,
// NaN-propagating min/max) and the run-time window check used by loads and stores.
export const CPP_PRELUDE = String.raw`#include "tspto_abi.h"
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
// Loops the compiler vectorizes use the full 512-bit registers where the machine has them
// (GCC's -march=native keeps 256 bits by default): the fused elementwise loops, exp and the row
// reductions then take half the instructions. Declared after the (precompiled) standard headers.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("prefer-vector-width=512")
#endif

namespace {

// ------------------------------------------------------------------ bit casts
static inline float tspto_u2f(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline uint32_t tspto_f2u(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static inline int64_t tspto_dbits(double d) { int64_t u; std::memcpy(&u, &d, 8); return u; }
static inline double tspto_bitsd(int64_t u) { double d; std::memcpy(&d, &u, 8); return d; }

// ------------------------------------------------------------------ float16 / bfloat16
// float -> binary16 bits, round to nearest even; overflow -> inf; NaN -> 0x7e00 (unsigned,
// canonical, as f32ToF16Bits in src/runtime/dtype.ts); subnormals exact.
static inline uint16_t tspto_f32_to_f16(float f) {
  uint32_t x = tspto_f2u(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7e00u;
  if (ax >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);         // >= 65536 (and inf)
  if (ax < 0x38800000u) {                                           // < 2^-14: subnormal or zero
    const float t = tspto_u2f(ax) + 0.5f;                           // the FPU rounds (nearest even)
    return (uint16_t)(sign | (tspto_f2u(t) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;                                          // rebias exponent, round
  return (uint16_t)(sign | (ax >> 13));
}
static inline float tspto_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return tspto_u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) { const float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }
  return tspto_u2f(sign | ((e + 112u) << 23) | (m << 13));
}
// float -> bfloat16 bits, round to nearest even; NaN -> 0x7fc0.
static inline uint16_t tspto_f32_to_bf16(float f) {
  uint32_t x = tspto_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static inline float tspto_bf16_to_f32(uint16_t b) { return tspto_u2f((uint32_t)b << 16); }
static inline float tspto_rnd_f16(float x) { return tspto_f16_to_f32(tspto_f32_to_f16(x)); }
static inline float tspto_rnd_bf16(float x) { return tspto_bf16_to_f32(tspto_f32_to_bf16(x)); }
// double -> float rounded to odd: a following rounding to a narrower format (f16, bf16)
// then equals one correct rounding of the double.
static inline float tspto_d2f_odd(double d) {
  float f = (float)d;
  if ((double)f != d && d == d) {
    uint32_t u = tspto_f2u(f);
    if (std::fabs((double)f) > std::fabs(d)) u -= 1u;
    f = tspto_u2f(u | 1u);
  }
  return f;
}
static inline float tspto_d2f16v(double d) { return tspto_rnd_f16(tspto_d2f_odd(d)); }
static inline float tspto_d2bf16v(double d) { return tspto_rnd_bf16(tspto_d2f_odd(d)); }

// ------------------------------------------------------------------ exp
// fp32 exp without calls or branches, so the compiler vectorizes the loops that use it (libm's
// expf is a call without -ffast-math). Cephes expf: x = n ln2 + r (ln2 in two parts),
// |r| <= ln2/2, a degree-7 polynomial, 2^n from exponent bits in two factors (no overflow of
// the scale; one rounding into the subnormals). Where the machine has fused multiply-add the
// steps a * b + c are single FMAs (TSPTO_EXP_FMA: 8 fewer instructions per vector, one rounding
// fewer each); without it they are a multiply and an add. Within 1 ulp of the correctly rounded
// exp over all floats either way (test/codegen/exp_accuracy.test.ts builds it with AVX-512 + FMA,
// AVX2 + FMA and without FMA); inf -> inf, -inf -> 0, NaN -> NaN.
#if defined(__FMA__) || defined(__AVX512F__)
#define TSPTO_EXP_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define TSPTO_EXP_FMA(a, b, c) ((a) * (b) + (c))
#endif
static inline float tspto_expf(float x) {
  // quiet comparisons and a bit blend for NaN: no operation that may trap sits behind a condition,
  // so the compiler turns the selects into blends (vectorized with AVX2 too, not only with masks)
  const float xl = __builtin_isless(x, -104.0f) ? -104.0f : x;
  const float xc = __builtin_isgreater(xl, 89.0f) ? 89.0f : xl;
  const float t = TSPTO_EXP_FMA(xc, 1.44269504088896341f, 12582912.0f);  // round(x / ln2) in the low bits
  const float fn = t - 12582912.0f;
  const int32_t n = (int32_t)(tspto_f2u(t) - 0x4b400000u);
  float r = TSPTO_EXP_FMA(fn, -0.693359375f, xc);                     // exact: fn * 0.693359375 has few bits
  r = TSPTO_EXP_FMA(fn, 2.12194440e-4f, r);
  const float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = TSPTO_EXP_FMA(p, r, 1.3981999507e-3f);
  p = TSPTO_EXP_FMA(p, r, 8.3334519073e-3f);
  p = TSPTO_EXP_FMA(p, r, 4.1665795894e-2f);
  p = TSPTO_EXP_FMA(p, r, 1.6666665459e-1f);
  p = TSPTO_EXP_FMA(p, r, 5.0000001201e-1f);
  p = TSPTO_EXP_FMA(p, r2, r) + 1.0f;
  const int32_t n1 = n >> 1, n2 = n - n1;
  const float y = p * tspto_u2f((uint32_t)(n1 + 127) << 23) * tspto_u2f((uint32_t)(n2 + 127) << 23);
  const uint32_t xb = tspto_f2u(x), nan = 0u - (uint32_t)((xb & 0x7fffffffu) > 0x7f800000u);
  return tspto_u2f(((xb | 0x00400000u) & nan) | (tspto_f2u(y) & ~nan));  // NaN -> the quiet NaN (x + x's bits)
}

// ------------------------------------------------------------------ streaming stores
// A write-only output of the launch (pass StreamOutputs) of at least TSPTO_STREAM_MIN bytes:
// each row is computed into a small buffer in L1 and copied out with non-temporal stores
// (straight to memory: no read-for-ownership of each line, the caches keep the inputs).
// tspto_stream_fence orders them before the task's completion is published.
static inline void tspto_stream_store(void* dst, const void* src, int64_t n) {
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)
#if defined(__AVX512F__)
  const int64_t W = 64;
#elif defined(__AVX__)
  const int64_t W = 32;
#else
  const int64_t W = 16;
#endif
  int64_t head = (int64_t)((W - ((uintptr_t)d & (uintptr_t)(W - 1))) & (uintptr_t)(W - 1));
  if (head > n) head = n;
  std::memcpy(d, s, (size_t)head);
  d += head; s += head; n -= head;
  for (; n >= W; n -= W, d += W, s += W) {
#if defined(__AVX512F__)
    _mm512_stream_si512((__m512i*)d, _mm512_loadu_si512((const void*)s));
#elif defined(__AVX__)
    _mm256_stream_si256((__m256i*)d, _mm256_loadu_si256((const __m256i*)s));
#else
    _mm_stream_si128((__m128i*)d, _mm_loadu_si128((const __m128i*)s));
#endif
  }
#endif
  std::memcpy(d, s, (size_t)n);
}
static inline void tspto_stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// ------------------------------------------------------------------ matmul
// 16 floats as one value (GCC / clang vector extension): the register-blocked float matmul
// holds its output block in these; on targets without 512-bit vectors the compiler splits them.
typedef float tspto_v16f __attribute__((vector_size(64)));
static inline tspto_v16f tspto_ld16(const float* p) { tspto_v16f v; std::memcpy(&v, p, 64); return v; }
static inline void tspto_st16(float* p, tspto_v16f v) { std::memcpy(p, &v, 64); }
// (not tspto_v16f{} + x: without fast-math 0 + x is a real addition, as -0 + 0 = +0)
static inline tspto_v16f tspto_splat16(float x) { return tspto_v16f{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
// fused multiply-add, lane by lane: fma(a, b, c) rounded once (matmul with fpContract "fast").
// The build keeps -ffp-contract=off, so a fused operation happens exactly where the IR says.
static inline tspto_v16f tspto_fma16(tspto_v16f a, tspto_v16f b, tspto_v16f c) {
#if defined(__AVX512F__)
  return (tspto_v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
  __m256 a0, a1, b0, b1, c0, c1;
  std::memcpy(&a0, &a, 32); std::memcpy(&a1, (const char*)&a + 32, 32);
  std::memcpy(&b0, &b, 32); std::memcpy(&b1, (const char*)&b + 32, 32);
  std::memcpy(&c0, &c, 32); std::memcpy(&c1, (const char*)&c + 32, 32);
  c0 = _mm256_fmadd_ps(a0, b0, c0);
  c1 = _mm256_fmadd_ps(a1, b1, c1);
  tspto_v16f r;
  std::memcpy(&r, &c0, 32); std::memcpy((char*)&r + 32, &c1, 32);
  return r;
#else
  tspto_v16f r;
  for (int i = 0; i < 16; ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return r;
#endif
}

// The packed panel of a transposed b (matmul with bTrans: b stored [n, k]):
// pb[kk * W + j] = bt[(j0 + j) * ldb + k0 + kk] for 0 <= kk < kl, 0 <= j < W (W a multiple of
// 16), i.e. the layout a panel of a plain b is packed into; 16 x 16 blocks are transposed in
// registers (AVX-512: unpack, shuffle within lanes, then across lanes), the rest element by element.
static inline void tspto_pack_bt(float* __restrict pb, int64_t W, const float* __restrict bt, int64_t ldb, int64_t j0, int64_t k0, int64_t kl) {
  int64_t kk = 0;
#if defined(__AVX512F__)
  for (; kk + 16 <= kl; kk += 16) {
    for (int64_t j = 0; j < W; j += 16) {
      const float* s = bt + (j0 + j) * ldb + k0 + kk;
      __m512 r[16], t[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ldb);
      for (int i = 0; i < 16; i += 2) { t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]); t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]); }
      for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44); r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44); r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
      }
      for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; ++i) { t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88); t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xDD); }
      for (int i = 0; i < 8; ++i) { r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88); r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD); }
      float* d = pb + kk * W + j;
      for (int i = 0; i < 16; ++i) _mm512_storeu_ps(d + i * W, r[i]);
    }
  }
#endif
  for (; kk < kl; ++kk)
    for (int64_t j = 0; j < W; ++j) pb[kk * W + j] = bt[(j0 + j) * ldb + k0 + kk];
}

// ------------------------------------------------------------------ integers
static inline int8_t tspto_sat_i8(int64_t v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }
static inline int16_t tspto_sat_i16(int64_t v) { return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }
static inline int32_t tspto_sat_i32(int64_t v) { return (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); }
static inline int64_t tspto_sat_i64(int64_t v) { return v; }
static inline uint8_t tspto_sat_u8(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
static inline uint8_t tspto_sat_b(int64_t v) { return (uint8_t)(v != 0); }
// double (already rounded to an integer value) -> integer type, saturating; NaN -> 0.
static inline int8_t tspto_d2i8(double r) { return r != r ? 0 : r <= -128.0 ? -128 : r >= 127.0 ? 127 : (int8_t)r; }
static inline int16_t tspto_d2i16(double r) { return r != r ? 0 : r <= -32768.0 ? -32768 : r >= 32767.0 ? 32767 : (int16_t)r; }
static inline int32_t tspto_d2i32(double r) { return r != r ? 0 : r <= -2147483648.0 ? INT32_MIN : r >= 2147483647.0 ? INT32_MAX : (int32_t)r; }
static inline int64_t tspto_d2i64(double r) {
  return r != r ? 0 : r <= -9223372036854775808.0 ? INT64_MIN : r >= 9223372036854775808.0 ? INT64_MAX : (int64_t)r;
}
static inline uint8_t tspto_d2u8(double r) { return r != r ? 0 : r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r; }
static inline uint8_t tspto_d2b(double r) { return (uint8_t)(r != 0.0); }
// rounding modes: round = half away from zero, rint = half to even
static inline double tspto_mode_round(double x) { return std::round(x); }
static inline double tspto_mode_rint(double x) { return std::nearbyint(x); }
static inline double tspto_mode_floor(double x) { return std::floor(x); }
static inline double tspto_mode_ceil(double x) { return std::ceil(x); }
static inline double tspto_mode_trunc(double x) { return std::trunc(x); }
// int64 arithmetic saturating like the reference (computed exactly, then clamped)
static inline int64_t tspto_add_sat(int64_t a, int64_t b) { int64_t r; return __builtin_add_overflow(a, b, &r) ? (a < 0 ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_sub_sat(int64_t a, int64_t b) { int64_t r; return __builtin_sub_overflow(a, b, &r) ? (a < 0 ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_mul_sat(int64_t a, int64_t b) { int64_t r; return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r; }
static inline int64_t tspto_neg_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : -a; }
static inline int64_t tspto_abs_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : (a < 0 ? -a : a); }
// truncating division; x / 0 = 0
static inline int64_t tspto_idiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? tspto_neg_sat(a) : a / b; }
// remainder with the sign of a (JS %); x % 0 = 0
static inline int64_t tspto_imod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
// remainder with the sign of b (Python %); x rem 0 = 0
static inline int64_t tspto_irem(int64_t a, int64_t b) { const int64_t r = tspto_imod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
static inline double tspto_frem(double a, double b) { const double r = std::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
// shifts by n: n < 0 shifts by 0; shl by >= 64 gives 0 (wrapping, through uint64); shr by >= bits sign-fills
static inline int64_t tspto_shl(int64_t a, int64_t n) { return n >= 64 ? 0 : (int64_t)((uint64_t)a << (n < 0 ? 0 : n)); }
static inline int64_t tspto_sar(int64_t a, int64_t n, int bits) { return a >> (n < 0 ? 0 : n >= bits ? bits - 1 : n); }
static inline int64_t tspto_shr_u(int64_t a, int64_t n, int bits) { return n >= bits ? 0 : (int64_t)((uint64_t)a >> (n < 0 ? 0 : n)); }
// Math.pow: NaN exponents and (+-1) ** +-Infinity are NaN (C pow gives 1)
static inline double tspto_pow(double a, double b) { return (b != b || (std::isinf(b) && std::fabs(a) == 1.0)) ? std::numeric_limits<double>::quiet_NaN() : std::pow(a, b); }
static inline int64_t tspto_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t tspto_imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ------------------------------------------------------------------ floats
// Math.max / Math.min: NaN if either is NaN; max(-0, 0) = 0, min(-0, 0) = -0.
template <typename F> static inline F tspto_fmax(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a > b ? a : b > a ? b : (std::signbit(a) ? b : a);
}
template <typename F> static inline F tspto_fmin(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a < b ? a : b < a ? b : (std::signbit(a) ? a : b);
}

template <typename F> static inline F tspto_relu(F a) { return a > (F)0 ? a : (F)0; }

// A select of two values: both operands are evaluated (loaded) before the blend, so the
// vectorizer sees unconditional loads and a blend, never masked loads. g++ 12 at -O3
// -march=native miscompiles a vectorized 'm[i] != 0 ? a[i] : b[i]' over small tiles (the
// masked loads of later vectors reuse the first vector's mask); every select the generated
// code makes (sel, fillpad's pad) goes through this.
template <typename T> static inline T tspto_blend(bool m, T a, T b) { return m ? a : b; }

// ------------------------------------------------------------------ run-time checks
// a window (slice / assemble / read) outside a tile or tensor: "slice window [..] + [..] is outside tile 'x' of shape [..] (axis k)"
__attribute__((cold, noinline)) static void tspto_bounds_fail(const TsptoRuntimeApi* rt, const char* where, const char* what,
    const char* kind, const char* name, int rank, const int64_t* off, const int64_t* shape, const int64_t* dims) {
  char buf[1024];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  int axis = 0;
  for (int i = 0; i < rank; ++i) if (off[i] < 0 || off[i] > dims[i] - shape[i]) { axis = i; break; }
  put("%s: %s window [", where, what);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)off[i]);
  put("] + [");
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)shape[i]);
  put("] is outside %s '%s' of shape [", kind, name);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)dims[i]);
  put("] (axis %d)", axis);
  rt->fail(rt->ctx, buf);
}
// a load/store window outside a tensor: "load window [..] + [..] is outside tensor 'a' of shape [..] (axis k)"
__attribute__((cold, noinline)) static void tspto_window_fail(const TsptoRuntimeApi* rt, const char* where, const char* what,
    const char* tensor, int rank, const int64_t* off, const int64_t* shape, const int64_t* dims) {
  tspto_bounds_fail(rt, where, what, "tensor", tensor, rank, off, shape, dims);
}
// a window of run-time extent with an extent below 1: "slice extent 0 on axis 1 (shape [1, 0]) must be an integer >= 1"
__attribute__((cold, noinline)) static void tspto_extent_fail(const TsptoRuntimeApi* rt, const char* where, const char* what, int rank, const int64_t* shape) {
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  int axis = 0;
  for (int i = 0; i < rank; ++i) if (shape[i] < 1) { axis = i; break; }
  put("%s: %s extent %lld on axis %d (shape [", where, what, (long long)shape[axis], axis);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)shape[i]);
  put("]) must be an integer >= 1");
  rt->fail(rt->ctx, buf);
}
// an index outside its table: "gather index 70000 (element 3 of the indices) is outside [0, 50257) on axis 0 of tensor 'wte' of shape [50257, 768]"
// (pos < 0: the position is not known here, a tile of a tensor-level gather)
__attribute__((cold, noinline)) static void tspto_index_fail(const TsptoRuntimeApi* rt, const char* where, const char* what, const char* table,
    int rank, const int64_t* dims, int axis, int64_t pos, int64_t idx) {
  char buf[512];
  size_t n = 0;
  auto put = [&](const char* fmt, auto... xs) {
    if (n < sizeof buf) { int k = std::snprintf(buf + n, sizeof buf - n, fmt, xs...); if (k > 0) n += (size_t)k; }
  };
  put("%s: %s index %lld", where, what, (long long)idx);
  if (pos >= 0) put(" (element %lld of the indices)", (long long)pos);
  put(" is outside [0, %lld) on axis %d of %s of shape [", (long long)dims[axis], axis, table);
  for (int i = 0; i < rank; ++i) put(i ? ", %lld" : "%lld", (long long)dims[i]);
  put("]");
  rt->fail(rt->ctx, buf);
}
__attribute__((cold, noinline)) static void tspto_scratch_fail(const TsptoRuntimeApi* rt, const char* kernel, int64_t need) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "kernel '%s' needs %lld bytes of scratch but a core has %lld", kernel, (long long)need,
      (long long)rt->scratch_bytes);
  rt->fail(rt->ctx, buf);
}

}  // namespace

extern "C" int tspto_abi_version(void) { return TSPTO_ABI_VERSION; }
`;

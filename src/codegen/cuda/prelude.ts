// The fixed CUDA prelude of every generated kernel translation unit (kernels/program.cu):
// the kernel argument block, the same numeric helpers as the cpu prelude
// (src/codegen/cpp/prelude.ts) under the same names but as __device__ functions, so the cpu
// code generator's elementwise and scalar formulas (src/codegen/cpp/emitters/) compile
// unchanged for the GPU, and the run-time failure record of a kernel.
//
// Compiled by nvcc with --expt-relaxed-constexpr (std::numeric_limits in device code).

import { castModeHelpers } from "../cpp/cast_modes.js";

/** Most argument slots one kernel takes (tensor pointers + scalars, incl. SPMD bounds). */
export const CUDA_MAX_SLOTS = 48;
/** Words of the per-launch failure record (device memory): flag, site, then offsets. */
export const CUDA_ERR_WORDS = 16;
/** Threads per block of every kernel. */
export const CUDA_BLOCK_THREADS = 256;

export const CUDA_PRELUDE = String.raw`#include <cstdint>
#include <cmath>
#include <limits>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

// The one kernel parameter (passed by value through cuLaunchKernel's kernelParams).
// v: the argument slots the orchestration submitted (tensor device addresses, then scalars;
// float scalars as double bit patterns). An SPMD launch (grid > 1) splits the loop range
// held in slots lo_slot / hi_slot into gridDim.x bands (block b runs iterations
// [trips*b/grid, trips*(b+1)/grid)). gscratch: per-block tile scratch in device memory for
// kernels whose tiles do not fit in shared memory (block b at b * scratch bytes). err: the
// launch's failure record in device memory (CUDA_ERR_WORDS int64: flag, site, offsets);
// errflag: a host-mapped word set to 1 after a failure was recorded (read without a copy).
struct TsptoCudaArgs {
  int64_t v[${CUDA_MAX_SLOTS}];
  int64_t lo_slot, hi_slot, start, step, trips;
  int64_t gscratch;
  int64_t err;
  int64_t errflag;
};

// The tensor-core matmul's per-warp staging blocks (a 16x16 block of a and of b per warp, as
// __half / __nv_bfloat16): one static array per element type for the whole translation unit, so
// a kernel with many matmul sites (a tensor-level matmul's peeled edge tiles and k loops) holds
// one, not one per site (12 sites of 8 KiB passed the 48 KiB static limit). A warp uses only
// its own block, site after site.
__shared__ __align__(32) __half tspto_wmma_stage_f16[${CUDA_BLOCK_THREADS / 32}][2][256];
__shared__ __align__(32) __nv_bfloat16 tspto_wmma_stage_bf16[${CUDA_BLOCK_THREADS / 32}][2][256];

namespace {

#define TSPTO_D __device__ __forceinline__

// ------------------------------------------------------------------ bit casts
TSPTO_D float tspto_u2f(uint32_t u) { return __uint_as_float(u); }
TSPTO_D uint32_t tspto_f2u(float f) { return __float_as_uint(f); }
TSPTO_D double tspto_bitsd(int64_t u) { return __longlong_as_double((long long)u); }

// ------------------------------------------------------------------ the cpu formulas' math helpers
// The elementwise formulas are the cpu generator's (src/codegen/cpp/emitters/): on the cpu these
// names are the prelude's vectorized fp32 functions (within 1 ulp); on the GPU they are the
// reference's definition itself, CUDA's double-precision functions rounded once to float.
TSPTO_D float tspto_tanhf(float x) { return (float)tanh((double)x); }
TSPTO_D float tspto_sigmoidf(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
TSPTO_D float tspto_erff(float x) { return (float)erf((double)x); }
TSPTO_D float tspto_logf(float x) { return (float)log((double)x); }
TSPTO_D float tspto_sinf(float x) { return (float)sin((double)x); }
TSPTO_D float tspto_cosf(float x) { return (float)cos((double)x); }
TSPTO_D double tspto_pow_d(double a, double b) { return pow(a, b); }
template <int N> TSPTO_D double tspto_powi(double x) {
  if constexpr (N == 1) return x;
  else if constexpr (N % 2 == 0) { const double h = tspto_powi<N / 2>(x); return h * h; }
  else return x * tspto_powi<N - 1>(x);
}
// selects as blends: both values computed, no branch (as on the cpu)
TSPTO_D float tspto_self(bool c, float a, float b) { const uint32_t m = 0u - (uint32_t)c; return __uint_as_float((__float_as_uint(a) & m) | (__float_as_uint(b) & ~m)); }
TSPTO_D double tspto_seld(bool c, double a, double b) {
  const unsigned long long m = 0ull - (unsigned long long)c;
  return __longlong_as_double((long long)(((unsigned long long)__double_as_longlong(a) & m) | ((unsigned long long)__double_as_longlong(b) & ~m)));
}

// ------------------------------------------------------------------ float16 / bfloat16 (bit-exact with the cpu prelude)
TSPTO_D uint16_t tspto_f32_to_f16(float f) {
  uint32_t x = tspto_f2u(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7e00u;
  if (ax >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    const float t = __fadd_rn(tspto_u2f(ax), 0.5f);
    return (uint16_t)(sign | (tspto_f2u(t) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;
  return (uint16_t)(sign | (ax >> 13));
}
TSPTO_D float tspto_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return tspto_u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) { const float v = (float)m * 5.9604644775390625e-8f; return sign ? -v : v; }
  return tspto_u2f(sign | ((e + 112u) << 23) | (m << 13));
}
TSPTO_D uint16_t tspto_f32_to_bf16(float f) {
  uint32_t x = tspto_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
TSPTO_D float tspto_bf16_to_f32(uint16_t b) { return tspto_u2f((uint32_t)b << 16); }
TSPTO_D float tspto_rnd_f16(float x) { return tspto_f16_to_f32(tspto_f32_to_f16(x)); }
TSPTO_D float tspto_rnd_bf16(float x) { return tspto_bf16_to_f32(tspto_f32_to_bf16(x)); }
TSPTO_D float tspto_d2f_odd(double d) {
  float f = __double2float_rn(d);
  if ((double)f != d && d == d) {
    uint32_t u = tspto_f2u(f);
    if (fabs((double)f) > fabs(d)) u -= 1u;
    f = tspto_u2f(u | 1u);
  }
  return f;
}
TSPTO_D float tspto_d2f16v(double d) { return tspto_rnd_f16(tspto_d2f_odd(d)); }
TSPTO_D float tspto_d2bf16v(double d) { return tspto_rnd_bf16(tspto_d2f_odd(d)); }
${castModeHelpers("TSPTO_D")}

// ------------------------------------------------------------------ exp (correctly rounded to within 1 ulp: the device expf)
TSPTO_D float tspto_expf(float x) { return expf(x); }

// ------------------------------------------------------------------ integers
TSPTO_D int8_t tspto_sat_i8(int64_t v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }
TSPTO_D int16_t tspto_sat_i16(int64_t v) { return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }
TSPTO_D int32_t tspto_sat_i32(int64_t v) { return (int32_t)(v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v); }
TSPTO_D int64_t tspto_sat_i64(int64_t v) { return v; }
TSPTO_D uint8_t tspto_sat_u8(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }
TSPTO_D uint8_t tspto_sat_b(int64_t v) { return (uint8_t)(v != 0); }
TSPTO_D int8_t tspto_d2i8(double r) { return r != r ? 0 : r <= -128.0 ? -128 : r >= 127.0 ? 127 : (int8_t)r; }
TSPTO_D int16_t tspto_d2i16(double r) { return r != r ? 0 : r <= -32768.0 ? -32768 : r >= 32767.0 ? 32767 : (int16_t)r; }
TSPTO_D int32_t tspto_d2i32(double r) { return r != r ? 0 : r <= -2147483648.0 ? INT32_MIN : r >= 2147483647.0 ? INT32_MAX : (int32_t)r; }
TSPTO_D int64_t tspto_d2i64(double r) {
  return r != r ? 0 : r <= -9223372036854775808.0 ? INT64_MIN : r >= 9223372036854775808.0 ? INT64_MAX : (int64_t)r;
}
TSPTO_D uint8_t tspto_d2u8(double r) { return r != r ? 0 : r <= 0.0 ? 0 : r >= 255.0 ? 255 : (uint8_t)r; }
TSPTO_D uint8_t tspto_d2b(double r) { return (uint8_t)(r != 0.0); }
TSPTO_D double tspto_mode_round(double x) { return round(x); }
TSPTO_D double tspto_mode_rint(double x) { return rint(x); }
TSPTO_D double tspto_mode_floor(double x) { return floor(x); }
TSPTO_D double tspto_mode_ceil(double x) { return ceil(x); }
TSPTO_D double tspto_mode_trunc(double x) { return trunc(x); }
TSPTO_D int64_t tspto_add_sat(int64_t a, int64_t b) {
  const uint64_t r = (uint64_t)a + (uint64_t)b;
  return (((a ^ (int64_t)r) & (b ^ (int64_t)r)) < 0) ? (a < 0 ? INT64_MIN : INT64_MAX) : (int64_t)r;
}
TSPTO_D int64_t tspto_sub_sat(int64_t a, int64_t b) {
  const uint64_t r = (uint64_t)a - (uint64_t)b;
  return (((a ^ b) & (a ^ (int64_t)r)) < 0) ? (a < 0 ? INT64_MIN : INT64_MAX) : (int64_t)r;
}
TSPTO_D int64_t tspto_mul_sat(int64_t a, int64_t b) {
  const int64_t hi = __mul64hi((long long)a, (long long)b), lo = (int64_t)((uint64_t)a * (uint64_t)b);
  return (hi != (lo >> 63)) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : lo;
}
TSPTO_D int64_t tspto_neg_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : -a; }
TSPTO_D int64_t tspto_abs_sat(int64_t a) { return a == INT64_MIN ? INT64_MAX : (a < 0 ? -a : a); }
TSPTO_D int64_t tspto_idiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? tspto_neg_sat(a) : a / b; }
TSPTO_D int64_t tspto_imod(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }
TSPTO_D int64_t tspto_imax(int64_t a, int64_t b) { return a > b ? a : b; }
TSPTO_D int64_t tspto_imin(int64_t a, int64_t b) { return a < b ? a : b; }

// ------------------------------------------------------------------ floats (Math.max / Math.min semantics)
template <typename F> TSPTO_D F tspto_fmax(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a > b ? a : b > a ? b : (signbit(a) ? b : a);
}
template <typename F> TSPTO_D F tspto_fmin(F a, F b) {
  return (a != a || b != b) ? std::numeric_limits<F>::quiet_NaN() : a < b ? a : b < a ? b : (signbit(a) ? a : b);
}
template <typename F> TSPTO_D F tspto_relu(F a) { return a > (F)0 ? a : (F)0; }
// a select of two values already evaluated (the cpu formulas call it: sel, fillpad's pad, prelu, lrelu)
template <typename T> TSPTO_D T tspto_blend(bool m, T a, T b) { return m ? a : b; }

// ------------------------------------------------------------------ SPMD bands and failures
// The value of argument slot i for this block (the loop bounds of an SPMD launch differ per block).
TSPTO_D int64_t tspto_slot(const TsptoCudaArgs& a, int i) {
  if (i == a.lo_slot || i == a.hi_slot) {
    const int64_t b = blockIdx.x, g = gridDim.x;
    const int64_t t0 = a.trips * b / g, t1 = a.trips * (b + 1) / g;
    if (i == a.lo_slot) return a.start + t0 * a.step;
    return b + 1 == g ? a.v[i] : a.start + t1 * a.step;
  }
  return a.v[i];
}
// Record a run-time failure (first one wins): site id and up to 8 offsets; the host formats
// the message from the site table of the orchestration library (tspto_cuda_report).
__device__ __noinline__ void tspto_fail(const TsptoCudaArgs& a, int site, int rank, const int64_t* off) {
  unsigned long long* e = (unsigned long long*)(intptr_t)a.err;
  if (!e) return;
  if (atomicCAS(e, 0ull, 1ull) == 0ull) {
    e[1] = (unsigned long long)site;
    for (int i = 0; i < rank && i < 8; ++i) e[2 + i] = (unsigned long long)off[i];
    __threadfence_system();
    volatile int64_t* flag = (volatile int64_t*)(intptr_t)a.errflag;
    if (flag) *flag = 1;
  }
}

}  // namespace
`;

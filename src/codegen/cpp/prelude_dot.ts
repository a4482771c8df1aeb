// The bf16 and int8 matmul kernels of the cpu prelude on the CPU's dot-product and matrix units
// (issue 21), as C++ text: AMX (tdpbf16ps, tdpbssd / tdpbusd / tdpbsud), AVX512-BF16
// (vdpbf16ps), AVX512-VNNI (vpdpbusd). Each is compiled only where the build's ISA path
// (src/targets/cpu/isa.ts) defines its macro; the matmul emitter (emitters/matmul.ts) calls
// them under the same #if and keeps its fp32 code in the #else.
export const DOT_KERNELS = String.raw`// ------------------------------------------------------------------ matmul: bf16 and int8 dot paths (issue 21)
// bf16 x bf16 -> fp32 and int8 x int8 -> int32 tile matmuls on the matrix / dot-product units the
// build's ISA path has (src/targets/cpu/isa.ts: AMX, AVX512-BF16, AVX512-VNNI), chosen by the
// compiler's predefined macros; docs/semantics.md (Matmul numerics) states what each computes.
// o[i * ldo + j] = init + sum_{k < K} a[i * lda + k] * b[k * ldb + j] for i < M, j < N (the
// valid extents: nothing else is written), init = c[i * ldc + j] or zero; c may be o (each block
// reads its own elements before it writes them).
#if defined(__AMX_TILE__) && defined(__linux__)
# include <sys/syscall.h>  // (indented: not one of the precompiled header's includes, which hold on every OS)
# include <unistd.h>
#endif
#if defined(__AMX_TILE__)
// Linux hands out the AMX tile-data state only to a process that asked for it
// (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18)); asked once per process. Refused
// (an old kernel, another OS): the AMX kernels are not used and the AVX-512 ones run instead.
static inline bool tspto_amx_ready() {
  static const bool ok = [] {
#if defined(__linux__)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return false;
#endif
  }();
  return ok;
}
// palette 1: tiles 0-3 the 2 x 2 output blocks (16 rows x 64 bytes), 4-5 two a blocks, 6-7 two b blocks
struct alignas(64) tspto_tilecfg { uint8_t palette, start_row, reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; };
// The configuration is a constant object: g++ 12 does not see that ldtilecfg reads all 64 bytes
// of its operand and dropped the stores of a stack copy past the first 32 (inlined into a GPT-2
// attention kernel: ldtilecfg of uninitialized rows, #GP, SIGSEGV), so nothing is stored at run time.
static inline void tspto_amx_config() {
  static const tspto_tilecfg cfg = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
  __asm__ volatile("" : : "m"(cfg) : "memory");
  _tile_loadconfig(&cfg);
}
#endif
static inline uint32_t tspto_bf16_hi(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u >> 16; }
#if defined(__AVX512F__)
/** The mask of the first n lanes of 16 (n clamped to 0..16): the valid tail of a vector. */
static inline __mmask16 tspto_lanes16(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : n > 0 ? (__mmask16)((1u << n) - 1) : (__mmask16)0; }
#endif

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__)
// (Packing uses AVX-512 (BF16) instructions: the kernel exists where those do, as on every AMX
// CPU; a build with AMX but AVX-512 turned off, -mno-avx512f, has neither kernel nor caller.)
// AMX-BF16 (tdpbf16ps). Each instruction adds to every fp32 output the 32 products of its k
// step, summed inside the unit in an order and width of its own (docs/semantics.md, measured:
// not k order; denormals flushed). Blocks of 32 x 32 outputs (2 x 2 accumulator tiles, 2 a
// and 2 b tiles per 32-deep k step). Packing is vectorized: a's rows as bf16 (exact: the
// inputs are bf16 values widened to fp32), b's k pairs interleaved per column (k even in the
// low half of a dword); a missing k (K not a multiple of 32) is a (-0) * (+0) = -0 product,
// which changes no sum. Full blocks load and store their accumulators straight from c / o.
static inline void tspto_mm_bf16_amx(const float* a, int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                              float* o, int64_t ldo, int64_t M, int64_t N, int64_t K) {
  const int64_t ks = (K + 31) / 32, nb = (N + 31) / 32, mb = (M + 31) / 32;
  // column groups of JG blocks: their packed b (JG x 2 KiB per k step) stays in L1 while every
  // row block's packed a panel (2 KiB per k step) streams past it
  const int64_t JG = ks <= 4 ? 4 : ks <= 8 ? 2 : 1;
  static thread_local std::vector<uint32_t> bp, ap;  // dwords: bf16 pairs
  if ((int64_t)bp.size() < JG * ks * 512) bp.resize((size_t)(JG * ks * 512));
  if ((int64_t)ap.size() < mb * ks * 512) ap.resize((size_t)(mb * ks * 512));
  const __m512 negz = _mm512_set1_ps(-0.0f);
  // a: [row block ib][k step s][tile t][row r][16 dwords: 32 k]; -0 beyond K, zero beyond M
  for (int64_t s = 0; s < ks; ++s) {
    const int64_t k0 = s * 32, kl = K - k0;
    const __mmask16 m0 = tspto_lanes16(kl);
    const __mmask16 m1 = tspto_lanes16(kl - 16);
    for (int64_t row = 0; row < mb * 32; ++row) {
      uint32_t* d = &ap[(size_t)(((row >> 5) * ks + s) * 512 + ((row >> 4) & 1) * 256 + (row & 15) * 16)];
      if (row < M) {
        const float* src = a + row * lda + k0;
        const __m512 lo = _mm512_mask_loadu_ps(negz, m0, src), hi = _mm512_mask_loadu_ps(negz, m1, src + 16);
        // lo: k 0-15, hi: k 16-31; vcvtne2ps2bf16 is exact on bf16 values
        _mm512_storeu_si512((void*)d, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
      } else {
        _mm512_storeu_si512((void*)d, _mm512_setzero_si512());
      }
    }
  }
  const __m512i hiMask = _mm512_set1_epi32((int)0xFFFF0000u);
  alignas(64) float tmp[32][32];
  tspto_amx_config();
  for (int64_t g0 = 0; g0 < nb; g0 += JG) {
    const int64_t gn = nb - g0 < JG ? nb - g0 : JG;
    // b: [block jb in the group][k step s][tile t][pair p][col j] (dword: k = 2p low half, 2p + 1 high)
    for (int64_t jg = 0; jg < gn; ++jg)
      for (int t = 0; t < 2; ++t) {
        const int64_t col = (g0 + jg) * 32 + t * 16, w = N - col;
        const __mmask16 mk = tspto_lanes16(w);
        for (int64_t s = 0; s < ks; ++s) {
          uint32_t* d = &bp[(size_t)(((jg * ks + s) * 2 + t) * 256)];
          for (int p = 0; p < 16; ++p) {
            const int64_t k0 = s * 32 + 2 * p;
            const __m512i x0 = k0 < K ? _mm512_maskz_loadu_epi32(mk, b + k0 * ldb + col) : _mm512_setzero_si512();
            const __m512i x1 = k0 + 1 < K ? _mm512_maskz_loadu_epi32(mk, b + (k0 + 1) * ldb + col) : _mm512_setzero_si512();
            _mm512_storeu_si512((void*)(d + 16 * p), _mm512_or_si512(_mm512_and_si512(x1, hiMask), _mm512_srli_epi32(x0, 16)));
          }
        }
      }
    for (int64_t ib = 0; ib < mb; ++ib) {
      const int64_t i0 = ib * 32;
      for (int64_t jg = 0; jg < gn; ++jg) {
        const int64_t j0 = (g0 + jg) * 32;
        const bool full = i0 + 32 <= M && j0 + 32 <= N;
        if (c && full) {
          const float* cb = c + i0 * ldc + j0;
          _tile_loadd(0, cb, ldc * 4); _tile_loadd(1, cb + 16, ldc * 4);
          _tile_loadd(2, cb + 16 * ldc, ldc * 4); _tile_loadd(3, cb + 16 * ldc + 16, ldc * 4);
        } else if (c) {
          for (int r = 0; r < 32; ++r) for (int j = 0; j < 32; ++j) tmp[r][j] = (i0 + r < M && j0 + j < N) ? c[(i0 + r) * ldc + j0 + j] : 0.0f;
          _tile_loadd(0, &tmp[0][0], 128); _tile_loadd(1, &tmp[0][16], 128);
          _tile_loadd(2, &tmp[16][0], 128); _tile_loadd(3, &tmp[16][16], 128);
        } else {
          _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
        }
        const uint32_t* as = &ap[(size_t)(ib * ks * 512)];
        const uint32_t* bs = &bp[(size_t)(jg * ks * 512)];
        for (int64_t s = 0; s < ks; ++s, as += 512, bs += 512) {
          _tile_loadd(4, as, 64); _tile_loadd(6, bs, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_loadd(7, bs + 256, 64);
          _tile_dpbf16ps(1, 4, 7);
          _tile_loadd(5, as + 256, 64);
          _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
        }
        if (full) {
          float* ob = o + i0 * ldo + j0;
          _tile_stored(0, ob, ldo * 4); _tile_stored(1, ob + 16, ldo * 4);
          _tile_stored(2, ob + 16 * ldo, ldo * 4); _tile_stored(3, ob + 16 * ldo + 16, ldo * 4);
        } else {
          _tile_stored(0, &tmp[0][0], 128); _tile_stored(1, &tmp[0][16], 128);
          _tile_stored(2, &tmp[16][0], 128); _tile_stored(3, &tmp[16][16], 128);
          for (int r = 0; r < 32 && i0 + r < M; ++r) for (int j = 0; j < 32 && j0 + j < N; ++j) o[(i0 + r) * ldo + j0 + j] = tmp[r][j];
        }
      }
    }
  }
  _tile_release();
}
#endif

#if defined(__AVX512BF16__)
// AVX512-BF16 (vdpbf16ps): each fp32 lane adds, for each pair of its dword, the product of the
// odd (high) bf16 halves, then that of the even (low) halves, each rounded to fp32 (nearest
// even; the product of two bf16 values is exact), with denormal inputs (the accumulator too)
// and results flushed to zero (checked on this machine's Zen 4 as well). Pairs are packed
// swapped (k in the high half, k + 1 in the low one) so the sum runs in k order: every output
// is the fp32 k-order sum interp computes, but for denormals. A missing k + 1: (-0) * (+0).
template <int R, int V>
static inline void tspto_bf16_dp_block(const uint32_t* __restrict ap, int64_t aps, const uint32_t* __restrict bp, int64_t kpn,
                                       const float* init, int64_t ldi, float* o, int64_t ldo, __mmask16 last) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = init ? _mm512_maskz_loadu_ps(v == V - 1 ? last : (__mmask16)0xFFFF, init + r * ldi + 16 * v) : _mm512_setzero_ps();
  for (int64_t kp = 0; kp < kpn; ++kp) {
    __m512i bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512((const void*)(bp + kp * 16 * V + 16 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i av = _mm512_set1_epi32((int)ap[r * aps + kp]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)av, (__m512bh)bv[v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_ps(o + r * ldo + 16 * v, v == V - 1 ? last : (__mmask16)0xFFFF, acc[r][v]);
}
template <int V>
static inline void tspto_bf16_dp_rows(int64_t R, const uint32_t* ap, int64_t aps, const uint32_t* bp, int64_t kpn, const float* init, int64_t ldi, float* o, int64_t ldo, __mmask16 last) {
  switch (R) {
    case 6: tspto_bf16_dp_block<6, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
    case 5: tspto_bf16_dp_block<5, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
    case 4: tspto_bf16_dp_block<4, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
    case 3: tspto_bf16_dp_block<3, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
    case 2: tspto_bf16_dp_block<2, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
    default: tspto_bf16_dp_block<1, V>(ap, aps, bp, kpn, init, ldi, o, ldo, last); break;
  }
}
// (a template, so that its kernels are instantiated only where a program calls it, not in every
// translation unit that includes the prelude: ~40 ms of each compile)
template <int = 0>
static inline void tspto_mm_bf16(const float* a, int64_t lda, const float* b, int64_t ldb, const float* c, int64_t ldc,
                          float* o, int64_t ldo, int64_t M, int64_t N, int64_t K) {
  if (M <= 0 || N <= 0) return;
#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__)
  // AMX computes 32 rows per block whatever M is: below 12 rows the vdpbf16ps kernel is faster
  // (measured at [M, 768] x [768, 768]: M = 1 73 vs 166 us, M = 8 158 vs 183, M = 16 252 vs 188)
  if (M >= 12 && tspto_amx_ready()) { tspto_mm_bf16_amx(a, lda, b, ldb, c, ldc, o, ldo, M, N, K); return; }
#endif
  const int64_t KCP = 96;  // k pairs per chunk: a packed b panel of 64 columns is 24 KiB (L1)
  static thread_local std::vector<uint32_t> ap, bp;
  const int64_t kpAll = (K + 1) / 2;
  const int64_t kpMax = kpAll < KCP ? kpAll : KCP;
  if ((int64_t)ap.size() < M * kpMax) ap.resize((size_t)(M * kpMax));
  if ((int64_t)bp.size() < kpMax * 64) bp.resize((size_t)(kpMax * 64));
  if (K <= 0) {  // no k: the init (or zero) is the result
    for (int64_t i = 0; i < M; ++i) for (int64_t j = 0; j < N; ++j) o[i * ldo + j] = c ? c[i * ldc + j] : 0.0f;
    return;
  }
  for (int64_t kc = 0; kc < K; kc += 2 * KCP) {
    const int64_t kl = K - kc < 2 * KCP ? K - kc : 2 * KCP, kpn = (kl + 1) / 2;
    for (int64_t i = 0; i < M; ++i) {
      const float* ar = a + i * lda + kc;
      uint32_t* d = &ap[(size_t)(i * kpn)];
      int64_t p = 0;
      // 8 pairs at a time: as 64-bit lanes (k in the low dword, k + 1 in the high one), the
      // high half of k's bits over the high half of k + 1's, narrowed to 32 bits
      for (; 2 * p + 16 <= kl; p += 8) {
        const __m512i x = _mm512_loadu_si512((const void*)(ar + 2 * p));
        const __m512i y = _mm512_or_si512(_mm512_and_si512(x, _mm512_set1_epi64(0xFFFF0000LL)), _mm512_srli_epi64(x, 48));
        _mm256_storeu_si256((__m256i*)(d + p), _mm512_cvtepi64_epi32(y));
      }
      for (; p < kpn; ++p)
        d[p] = (tspto_bf16_hi(ar[2 * p]) << 16) | (2 * p + 1 < kl ? tspto_bf16_hi(ar[2 * p + 1]) : 0x8000u);
    }
    for (int64_t j0 = 0; j0 < N; j0 += 64) {
      const int64_t w = N - j0 < 64 ? N - j0 : 64;
      const int V = (int)((w + 15) / 16), W = 16 * V;
      for (int64_t p = 0; p < kpn; ++p) {
        const float* b0 = b + (kc + 2 * p) * ldb + j0;
        const float* b1 = b0 + ldb;
        const bool two = 2 * p + 1 < kl;
        uint32_t* d = &bp[(size_t)(p * W)];
        // 16 columns at a time (k's high half over k + 1's), the last ones masked: the columns
        // past w are zero
        const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u);
        for (int64_t j = 0; j < W; j += 16) {
          const __mmask16 mk = tspto_lanes16(w - j);
          const __m512i x0 = _mm512_and_si512(_mm512_maskz_loadu_epi32(mk, b0 + j), hi);
          const __m512i x = two ? _mm512_or_si512(x0, _mm512_srli_epi32(_mm512_maskz_loadu_epi32(mk, b1 + j), 16)) : x0;
          _mm512_storeu_si512((void*)(d + j), x);
        }
      }
      const int64_t rem = w - 16 * (V - 1);
      const __mmask16 last = tspto_lanes16(rem);
      for (int64_t i0 = 0; i0 < M; i0 += 6) {
        const int64_t R = M - i0 < 6 ? M - i0 : 6;
        const float* init = kc == 0 ? (c ? c + i0 * ldc + j0 : nullptr) : o + i0 * ldo + j0;
        const int64_t ldi = kc == 0 ? ldc : ldo;
        float* out = o + i0 * ldo + j0;
        const uint32_t* a0 = &ap[(size_t)(i0 * kpn)];
        switch (V) {
          case 4: tspto_bf16_dp_rows<4>(R, a0, kpn, bp.data(), kpn, init, ldi, out, ldo, last); break;
          case 3: tspto_bf16_dp_rows<3>(R, a0, kpn, bp.data(), kpn, init, ldi, out, ldo, last); break;
          case 2: tspto_bf16_dp_rows<2>(R, a0, kpn, bp.data(), kpn, init, ldi, out, ldo, last); break;
          default: tspto_bf16_dp_rows<1>(R, a0, kpn, bp.data(), kpn, init, ldi, out, ldo, last); break;
        }
      }
    }
  }
}
#endif

// int8 matmuls: a and b int8 or uint8 (not both uint8), exact: o = sat_int32(init + sum a * b),
// the dot products in int32 registers without saturation (vpdpbusd / tdpb*d wrap, never clip;
// the kernels are used for K <= 65536 only, where no partial sum can leave int32), the init
// added in int64 and the total saturated as interp does. AU / BU: the operand is uint8.
#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512BW__)
// AMX-INT8: tdpbssd / tdpbusd / tdpbsud, 4 products per dword; blocks of 32 x 32 (2 x 2 tiles),
// 64-deep k steps. Packing is vectorized: a's rows as they are (zero past K), b's k quads
// interleaved per column. Without an init a full block is stored straight from the tiles (the
// int32 sums are exact for K <= 65536); with one, the init is added with int32 saturation
// (an overflow of c + t takes c's sign: the saturated int64 sum, as interp).
static inline __m512i tspto_add_sat_i32(__m512i x, __m512i y) {
  const __m512i r = _mm512_add_epi32(x, y);
  const __mmask16 ov = _mm512_movepi32_mask(_mm512_and_si512(_mm512_xor_si512(x, r), _mm512_xor_si512(y, r)));
  const __m512i sat = _mm512_mask_blend_epi32(_mm512_movepi32_mask(x), _mm512_set1_epi32(INT32_MAX), _mm512_set1_epi32(INT32_MIN));
  return _mm512_mask_blend_epi32(ov, r, sat);
}
template <bool AU, bool BU>
static inline void tspto_mm_i8_amx(const void* av, int64_t lda, const void* bv, int64_t ldb, const int32_t* c, int64_t ldc,
                            int32_t* o, int64_t ldo, int64_t M, int64_t N, int64_t K) {
  const uint8_t* a = (const uint8_t*)av; const uint8_t* b = (const uint8_t*)bv;
  const int64_t ks = (K + 63) / 64, nb = (N + 31) / 32;
  static thread_local std::vector<uint32_t> bp, ap;  // dwords: k quads
  if ((int64_t)bp.size() < nb * ks * 512) bp.resize((size_t)(nb * ks * 512));
  if ((int64_t)ap.size() < ks * 512) ap.resize((size_t)(ks * 512));
  // b: [block jb][k step s][tile t][quad q][col j] (byte e of a dword: k = 4q + e)
  for (int64_t jb = 0; jb < nb; ++jb)
    for (int t = 0; t < 2; ++t) {
      const int64_t col = jb * 32 + t * 16, w = N - col;
      const __mmask16 mk = tspto_lanes16(w);
      for (int64_t s = 0; s < ks; ++s) {
        uint32_t* d = &bp[(size_t)(((jb * ks + s) * 2 + t) * 256)];
        for (int q = 0; q < 16; ++q) {
          const int64_t k0 = s * 64 + 4 * q;
          const uint8_t* s0 = b + k0 * ldb + col;
          const __m128i z = _mm_setzero_si128();
          const __m128i r0 = k0 < K ? _mm_maskz_loadu_epi8(mk, s0) : z, r1 = k0 + 1 < K ? _mm_maskz_loadu_epi8(mk, s0 + ldb) : z;
          const __m128i r2 = k0 + 2 < K ? _mm_maskz_loadu_epi8(mk, s0 + 2 * ldb) : z, r3 = k0 + 3 < K ? _mm_maskz_loadu_epi8(mk, s0 + 3 * ldb) : z;
          const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1), t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
          __m512i x = _mm512_castsi128_si512(_mm_unpacklo_epi16(t0, t2));
          x = _mm512_inserti32x4(x, _mm_unpackhi_epi16(t0, t2), 1);
          x = _mm512_inserti32x4(x, _mm_unpacklo_epi16(t1, t3), 2);
          x = _mm512_inserti32x4(x, _mm_unpackhi_epi16(t1, t3), 3);
          _mm512_storeu_si512((void*)(d + 16 * q), x);
        }
      }
    }
  alignas(64) int32_t tmp[32][32];
  tspto_amx_config();
  for (int64_t i0 = 0; i0 < M; i0 += 32) {
    // a: [k step s][tile t][row r][64 k]; zero past K and past M
    for (int64_t s = 0; s < ks; ++s) {
      const int64_t kl = K - s * 64;
      const __mmask64 mk = kl >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << kl) - 1);
      for (int r = 0; r < 32; ++r) {
        const int64_t row = i0 + r;
        uint32_t* d = &ap[(size_t)((s * 2 + (r >> 4)) * 256 + (r & 15) * 16)];
        _mm512_storeu_si512((void*)d, row < M ? _mm512_maskz_loadu_epi8(mk, a + row * lda + s * 64) : _mm512_setzero_si512());
      }
    }
    for (int64_t jb = 0; jb < nb; ++jb) {
      const int64_t j0 = jb * 32;
      const bool full = i0 + 32 <= M && j0 + 32 <= N;
      _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
      const uint32_t* as = ap.data();
      const uint32_t* bs = &bp[(size_t)(jb * ks * 512)];
      for (int64_t s = 0; s < ks; ++s, as += 512, bs += 512) {
        _tile_loadd(4, as, 64); _tile_loadd(6, bs, 64);
        _tile_loadd(7, bs + 256, 64); _tile_loadd(5, as + 256, 64);
        if (AU) { _tile_dpbusd(0, 4, 6); _tile_dpbusd(1, 4, 7); _tile_dpbusd(2, 5, 6); _tile_dpbusd(3, 5, 7); }
        else if (BU) { _tile_dpbsud(0, 4, 6); _tile_dpbsud(1, 4, 7); _tile_dpbsud(2, 5, 6); _tile_dpbsud(3, 5, 7); }
        else { _tile_dpbssd(0, 4, 6); _tile_dpbssd(1, 4, 7); _tile_dpbssd(2, 5, 6); _tile_dpbssd(3, 5, 7); }
      }
      if (full && !c) {
        int32_t* ob = o + i0 * ldo + j0;
        _tile_stored(0, ob, ldo * 4); _tile_stored(1, ob + 16, ldo * 4);
        _tile_stored(2, ob + 16 * ldo, ldo * 4); _tile_stored(3, ob + 16 * ldo + 16, ldo * 4);
        continue;
      }
      _tile_stored(0, &tmp[0][0], 128); _tile_stored(1, &tmp[0][16], 128);
      _tile_stored(2, &tmp[16][0], 128); _tile_stored(3, &tmp[16][16], 128);
      const int64_t w = N - j0 < 32 ? N - j0 : 32;
      const __mmask16 m0 = tspto_lanes16(w);
      const __mmask16 m1 = tspto_lanes16(w - 16);
      for (int r = 0; r < 32 && i0 + r < M; ++r) {
        int32_t* orow = o + (i0 + r) * ldo + j0;
        const int32_t* crow = c ? c + (i0 + r) * ldc + j0 : nullptr;
        for (int h = 0; h < 2; ++h) {
          const __mmask16 mk = h ? m1 : m0;
          __m512i v = _mm512_load_si512((const void*)&tmp[r][16 * h]);
          if (crow) v = tspto_add_sat_i32(_mm512_maskz_loadu_epi32(mk, crow + 16 * h), v);
          _mm512_mask_storeu_epi32(orow + 16 * h, mk, v);
        }
      }
    }
  }
  _tile_release();
}
#endif

#if defined(__AVX512VNNI__)
// AVX512-VNNI (vpdpbusd: uint8 x int8, 4 products added to each int32 lane, wrapping). The
// uint8 operand is the vector one: b when b is uint8, else a (broadcast). int8 x int8: a + 128
// as uint8 (a ^ 0x80), and 128 * (b's column sum over the valid K) taken off at the end, exact.
template <int R, int V, bool SWAP>
static inline void tspto_i8_dp_block(const uint32_t* __restrict ap, int64_t aps, const uint32_t* __restrict bp, int64_t kqn, __m512i (&acc)[R][V]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kqn; ++q) {
    __m512i bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_si512((const void*)(bp + q * 16 * V + 16 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_set1_epi32((int)ap[r * aps + q]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = SWAP ? _mm512_dpbusd_epi32(acc[r][v], bv[v], x) : _mm512_dpbusd_epi32(acc[r][v], x, bv[v]);
    }
  }
}
template <int R, int V, bool SWAP>
static inline void tspto_i8_dp_store(const uint32_t* ap, int64_t aps, const uint32_t* bp, int64_t kqn, const int32_t* cs, const int32_t* c, int64_t ldc,
                                     int32_t* o, int64_t ldo, int64_t w) {
  __m512i acc[R][V];
  tspto_i8_dp_block<R, V, SWAP>(ap, aps, bp, kqn, acc);
  alignas(64) int32_t t[16];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) {
      _mm512_store_si512((void*)t, acc[r][v]);
      for (int j = 0; j < 16 && 16 * v + j < w; ++j) {
        const int64_t jj = 16 * v + j;
        o[r * ldo + jj] = tspto_sat_i32((c ? (int64_t)c[r * ldc + jj] : 0) + (int64_t)t[j] - (cs ? 128 * (int64_t)cs[jj] : 0));
      }
    }
}
template <int V, bool SWAP>
static inline void tspto_i8_dp_rows(int64_t R, const uint32_t* ap, int64_t aps, const uint32_t* bp, int64_t kqn, const int32_t* cs, const int32_t* c, int64_t ldc, int32_t* o, int64_t ldo, int64_t w) {
  switch (R) {
    case 6: tspto_i8_dp_store<6, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
    case 5: tspto_i8_dp_store<5, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
    case 4: tspto_i8_dp_store<4, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
    case 3: tspto_i8_dp_store<3, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
    case 2: tspto_i8_dp_store<2, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
    default: tspto_i8_dp_store<1, V, SWAP>(ap, aps, bp, kqn, cs, c, ldc, o, ldo, w); break;
  }
}
#endif
#if defined(__AVX512VNNI__)
template <bool AU, bool BU>
static inline void tspto_mm_i8(const void* av, int64_t lda, const void* bv, int64_t ldb, const int32_t* c, int64_t ldc,
                        int32_t* o, int64_t ldo, int64_t M, int64_t N, int64_t K) {
  static_assert(!(AU && BU), "uint8 x uint8 has no dot-product kernel");
  if (M <= 0 || N <= 0) return;
#if defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512BW__)
  // (as bf16: AMX's 32-row blocks only from 12 rows up; exact either way)
  if (M >= 12 && tspto_amx_ready()) { tspto_mm_i8_amx<AU, BU>(av, lda, bv, ldb, c, ldc, o, ldo, M, N, K); return; }
#endif
  const uint8_t* a = (const uint8_t*)av; const uint8_t* b = (const uint8_t*)bv;
  const bool bias = !AU && !BU;  // int8 x int8: a + 128
  const uint32_t ax = bias ? 0x80808080u : 0u;
  const int64_t kqn = (K + 3) / 4;
  static thread_local std::vector<uint32_t> ap, bp;
  static thread_local std::vector<int32_t> cs;
  if ((int64_t)ap.size() < M * kqn) ap.resize((size_t)(M * kqn));
  if ((int64_t)bp.size() < kqn * 64) bp.resize((size_t)(kqn * 64));
  cs.assign(64, 0);
  // a row's quads are its bytes in k order (byte e of dword q: k = 4 q + e), after the bias
  const __m512i axv = _mm512_set1_epi32((int)ax);
  for (int64_t i = 0; i < M; ++i) {
    const uint8_t* ar = a + i * lda;
    uint8_t* d = (uint8_t*)&ap[(size_t)(i * kqn)];
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) _mm512_storeu_si512((void*)(d + k), _mm512_xor_si512(_mm512_loadu_si512((const void*)(ar + k)), axv));
    for (; k < 4 * kqn; ++k) d[k] = k < K ? (uint8_t)(ar[k] ^ (uint8_t)ax) : (uint8_t)0;  // (a pad: 0 after the bias; b's pad is 0 anyway)
  }
  const __m512i ones = _mm512_set1_epi8(1);
  const int64_t qfull = K / 4;  // quads with 4 valid k
  for (int64_t j0 = 0; j0 < N; j0 += 64) {
    const int64_t w = N - j0 < 64 ? N - j0 : 64;
    const int V = (int)((w + 15) / 16), W = 16 * V;
    if (bias) for (int j = 0; j < W; ++j) cs[j] = 0;
    __m512i csv[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int64_t q = 0; q < kqn; ++q) {
      int64_t j = 0;
      // 16 columns of 4 full k rows at a time: bytes interleaved into dwords; b's column sums
      // (int8 x int8) by vpdpbusd with ones, exact
      if (q < qfull)
        for (; j + 16 <= w; j += 16) {
          const uint8_t* s0 = b + 4 * q * ldb + j0 + j;
          const __m128i r0 = _mm_loadu_si128((const __m128i*)s0), r1 = _mm_loadu_si128((const __m128i*)(s0 + ldb));
          const __m128i r2 = _mm_loadu_si128((const __m128i*)(s0 + 2 * ldb)), r3 = _mm_loadu_si128((const __m128i*)(s0 + 3 * ldb));
          const __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1), t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
          __m512i x = _mm512_castsi128_si512(_mm_unpacklo_epi16(t0, t2));
          x = _mm512_inserti32x4(x, _mm_unpackhi_epi16(t0, t2), 1);
          x = _mm512_inserti32x4(x, _mm_unpacklo_epi16(t1, t3), 2);
          x = _mm512_inserti32x4(x, _mm_unpackhi_epi16(t1, t3), 3);
          _mm512_storeu_si512((void*)&bp[(size_t)(q * W + j)], x);
          if (bias) csv[j >> 4] = _mm512_dpbusd_epi32(csv[j >> 4], ones, x);
        }
      for (; j < W; ++j) {
        uint32_t x = 0;
        for (int e = 0; e < 4; ++e) {
          const int64_t kk = 4 * q + e;
          if (j < w && kk < K) { const uint8_t v = b[kk * ldb + j0 + j]; x |= (uint32_t)v << (8 * e); if (bias) cs[j] += (int8_t)v; }
        }
        bp[(size_t)(q * W + j)] = x;
      }
    }
    if (bias) {
      alignas(64) int32_t t[16];
      for (int v = 0; v < V; ++v) { _mm512_store_si512((void*)t, csv[v]); for (int e = 0; e < 16; ++e) cs[16 * v + e] += t[e]; }
    }
    for (int64_t i0 = 0; i0 < M; i0 += 6) {
      const int64_t R = M - i0 < 6 ? M - i0 : 6;
      const uint32_t* a0 = &ap[(size_t)(i0 * kqn)];
      const int32_t* ci = c ? c + i0 * ldc + j0 : nullptr;
      const int32_t* csp = bias ? cs.data() : nullptr;
      int32_t* out = o + i0 * ldo + j0;
      switch (V) {
        case 4: tspto_i8_dp_rows<4, BU>(R, a0, kqn, bp.data(), kqn, csp, ci, ldc, out, ldo, w); break;
        case 3: tspto_i8_dp_rows<3, BU>(R, a0, kqn, bp.data(), kqn, csp, ci, ldc, out, ldo, w); break;
        case 2: tspto_i8_dp_rows<2, BU>(R, a0, kqn, bp.data(), kqn, csp, ci, ldc, out, ldo, w); break;
        default: tspto_i8_dp_rows<1, BU>(R, a0, kqn, bp.data(), kqn, csp, ci, ldc, out, ldo, w); break;
      }
    }
  }
}
#endif
`;

// AVX-512 attention for one query token and one group of query heads (attention_kernels.h):
// attention_simd-inl.h's body on vectors of 16 floats. One q·k accumulator is one vector,
// sixteen (head, key) chains are in flight, and a value pass covers 64 dims.
//
// Only intrinsics and C library calls here: this file is compiled with -mavx512*, and an
// inline function shared with other files could be merged into theirs (see
// quant/kernels/x86_helpers.h).

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

struct Simd {
  using F = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kScoreChains = 16;
  static constexpr int kValueVectors = 4;

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }

  static F load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static F round_f16(F v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  static F scale_of(uint16_t bits) { return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(bits))); }
  static F from_codes(const uint8_t* codes, F scale) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(c)), scale);
  }

  static __mmask16 first(int32_t n) { return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1); }
  static F load_first(const float* p, int32_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  static void store_first(float* p, int32_t n, F v) { _mm512_mask_storeu_ps(p, first(n), v); }
  static F keep_first(F v, int32_t n) { return _mm512_maskz_mov_ps(first(n), v); }
  static F max_first(F m, F v, int32_t n) { return _mm512_mask_max_ps(m, first(n), m, v); }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }

  static float sum_16(F v) {
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
  }
  // [sum_16(a), sum_16(b), sum_16(c), sum_16(d)] with the same additions.
  static __m128 sum_4x16(F a, F b, F c, F d) {
    const F ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
    const F cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                               _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
    const F s4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
    const F s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
    const F s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castps512_ps128(
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), s1));
  }
  // dots[c] = the 16 lanes of acc[0][c] summed: halves, then halves of those, ...
  template <int kChains>
  static void reduce_16(const F (&acc)[1][kChains], float* dots) {
    if constexpr (kChains % 4 == 0) {
      for (int c = 0; c < kChains; c += 4) _mm_storeu_ps(dots + c, sum_4x16(acc[0][c], acc[0][c + 1], acc[0][c + 2], acc[0][c + 3]));
    } else {
      for (int c = 0; c < kChains; ++c) dots[c] = sum_16(acc[0][c]);
    }
  }

  // e^x for x <= 0: x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 split in two so that r is
  // exact), e^r by its Taylor series to r^7 (truncation < 0.06 ulp at |r| = 0.35), times
  // 2^n by vscalefps (one rounding, subnormal results included). Within about 1 ulp of
  // expf; lanes below -88 give 0 (their probability rounds to 0 in F16 anyway).
  static F exp_nonpositive(F x) {
    const F n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    F p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_GE_OQ);
    return _mm512_maskz_scalef_ps(live, p, n);
  }

  // Lane l sums the values of keys l (mod 16).
  struct DoubleSums16 {
    __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
    void add(F e, int32_t /*j*/) {
      low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
      high = _mm512_add_pd(high, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    double total() const {
      alignas(64) double lanes[16];
      _mm512_store_pd(lanes, low);
      _mm512_store_pd(lanes + 8, high);
      double sum = 0.0;
      for (double lane : lanes) sum += lane;
      return sum;
    }
  };
};

#include "ops/cpu/attention_simd-inl.h"

}  // namespace

void attend_head_group_avx512(const HeadGroupAttention& a) { attend_any_rows(a); }

}  // namespace tokenmill::ops::cpu

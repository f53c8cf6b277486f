// AVX2 (+FMA, F16C) attention for one query token and one group of query heads
// (attention_kernels.h), for CPUs without AVX-512: attention_simd-inl.h's body on vectors
// of 8 floats. A 16-lane q·k accumulator is two vectors, filled in two passes over a
// tile's rows; eight (head, key) chains are in flight, and a value pass covers 16 dims.
// The sums are the AVX-512 kernel's, in its order, so both give the same bits.
//
// Only intrinsics and C library calls here: this file is compiled with -mavx2, and an
// inline function shared with other files could be merged into theirs.
#include <immintrin.h>
#include <math.h>

#include <cstdint>
#include <cstring>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

struct Simd {
  using F = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kScoreChains = 8;
  static constexpr int kValueVectors = 2;

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }

  static F load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F round_f16(F v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
  static F scale_of(uint16_t bits) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(bits))); }
  static F from_codes(const uint8_t* codes, F scale) {
    const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c)), scale);
  }

  static __m256i first(int32_t n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
  static F load_first(const float* p, int32_t n) { return _mm256_maskload_ps(p, first(n)); }
  static void store_first(float* p, int32_t n, F v) { _mm256_maskstore_ps(p, first(n), v); }
  static F keep_first(F v, int32_t n) { return _mm256_and_ps(_mm256_castsi256_ps(first(n)), v); }
  static F max_first(F m, F v, int32_t n) { return _mm256_blendv_ps(m, _mm256_max_ps(m, v), _mm256_castsi256_ps(first(n))); }
  static float reduce_max(F v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }

  // dots[c] = the 16 lanes of the accumulator acc[0][c] (lanes 0-7), acc[1][c] (lanes
  // 8-15) summed as the AVX-512 kernel sums one vector: halves, then halves of those, ...
  template <int kChains>
  static void reduce_16(const F (&acc)[2][kChains], float* dots) {
    for (int c = 0; c < kChains; ++c) {
      const __m256 s8 = _mm256_add_ps(acc[0][c], acc[1][c]);
      const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
      const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
      dots[c] = _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
    }
  }

  // e^x for x <= 0: x = n ln 2 + r (ln 2 in two parts, so r is exact), e^r by its Taylor
  // series to r^7, times 2^n as AVX-512's vscalefps computes it: one rounding, also where
  // the result is subnormal (p * 2^(n + 64) is exact, the multiply by 2^-64 rounds once).
  // Lanes below -88 give 0.
  static F exp_nonpositive(F x) {
    const F n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    F p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127 + 64)), 23);
    const F scaled = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(exponent)), _mm256_set1_ps(0x1p-64f));
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_GE_OQ), scaled);
  }

  // Lane l sums the values of keys l (mod 16): keys j .. j + 7 go to lanes 0-7 or 8-15.
  struct DoubleSums16 {
    __m256d lanes[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    void add(F e, int32_t j) {
      __m256d* pair = lanes + 2 * ((j / 8) % 2);
      pair[0] = _mm256_add_pd(pair[0], _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      pair[1] = _mm256_add_pd(pair[1], _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double total() const {
      alignas(32) double values[16];
      for (int i = 0; i < 4; ++i) _mm256_store_pd(values + 4 * i, lanes[i]);
      double sum = 0.0;
      for (double value : values) sum += value;
      return sum;
    }
  };
};

#include "ops/cpu/attention_simd-inl.h"

}  // namespace

void attend_head_group_avx2(const HeadGroupAttention& a) { attend_any_rows(a); }

}  // namespace tokenmill::ops::cpu

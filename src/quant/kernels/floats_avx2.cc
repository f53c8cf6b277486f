// AVX2 dot products of F32, F16 and BF16 rows: floats_simd-inl.h on vectors of 8 floats.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

struct Simd {
  static constexpr int kLanes = 8;
  static __m256 load_f32(const float* p) { return _mm256_loadu_ps(p); }
  static __m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(load_128(p)); }
  static __m256 load_bf16(const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_128(p)), 16));
  }
  static __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }

  // Lane l sums the products of values l (mod 8).
  struct DoubleSums {
    __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
    void add(__m256 products) {
      high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(products, 1)));
      low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(products)));
    }
    double total() const {
      const __m256d v = _mm256_add_pd(low, high);
      const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
      return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
    }
  };
};

}  // namespace

#include "quant/kernels/floats_simd-inl.h"

}  // namespace tokenmill::quant::avx2

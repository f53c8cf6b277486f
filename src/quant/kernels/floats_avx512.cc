// AVX-512 dot products of F32, F16 and BF16 rows: floats_simd-inl.h on vectors of 16
// floats.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

struct Simd {
  static constexpr int kLanes = 16;
  static __m512 load_f32(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(load_256(p)); }
  static __m512 load_bf16(const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load_256(p)), 16));
  }
  static __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }

  // Lane l sums the products of values l (mod 16).
  struct DoubleSums {
    __m512d low = _mm512_setzero_pd(), high = _mm512_setzero_pd();
    void add(__m512 products) {
      high = _mm512_add_pd(high, _mm512_cvtps_pd(_mm512_extractf32x8_ps(products, 1)));
      low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(products)));
    }
    double total() const { return _mm512_reduce_add_pd(_mm512_add_pd(low, high)); }
  };
};

}  // namespace

#include "quant/kernels/floats_simd-inl.h"

}  // namespace tokenmill::quant::avx512

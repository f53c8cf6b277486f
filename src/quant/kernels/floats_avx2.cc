// AVX2 dot products of F32 and F16 rows. As in the reference (float_formats.cc) each
// product is rounded to float and the sum is kept in double, so the result differs from
// the reference only by the order of the double additions: almost always not at all.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// acc += the 8 float products, widened to double.
__m256d add_widened(__m256d acc_low, __m256d* acc_high, __m256 products) {
  *acc_high = _mm256_add_pd(*acc_high, _mm256_cvtps_pd(_mm256_extractf128_ps(products, 1)));
  return _mm256_add_pd(acc_low, _mm256_cvtps_pd(_mm256_castps256_ps128(products)));
}

double hsum_pd(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  __m256d acc_low = _mm256_setzero_pd(), acc_high = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc_low = add_widened(acc_low, &acc_high, _mm256_mul_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  double sum = hsum_pd(_mm256_add_pd(acc_low, acc_high));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  __m256d acc_low = _mm256_setzero_pd(), acc_high = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 products = _mm256_mul_ps(_mm256_cvtph_ps(load_128(x + i)), _mm256_cvtph_ps(load_128(y + i)));
    acc_low = add_widened(acc_low, &acc_high, products);
  }
  double sum = hsum_pd(_mm256_add_pd(acc_low, acc_high));
  for (; i < n; ++i) sum += static_cast<double>(half_to_float(x[i]) * half_to_float(y[i]));
  return static_cast<float>(sum);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  // BF16 is the upper half of an F32: widen to 32 bits and shift.
  auto to_f32 = [](const uint16_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load_128(p)), 16));
  };
  __m256d acc_low = _mm256_setzero_pd(), acc_high = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc_low = add_widened(acc_low, &acc_high, _mm256_mul_ps(to_f32(x + i), to_f32(y + i)));
  double sum = hsum_pd(_mm256_add_pd(acc_low, acc_high));
  for (; i < n; ++i) {
    uint32_t xb = static_cast<uint32_t>(x[i]) << 16, yb = static_cast<uint32_t>(y[i]) << 16;
    float xf, yf;
    std::memcpy(&xf, &xb, sizeof xf);
    std::memcpy(&yf, &yb, sizeof yf);
    sum += static_cast<double>(xf * yf);
  }
  return static_cast<float>(sum);
}

}  // namespace tokenmill::quant::avx2

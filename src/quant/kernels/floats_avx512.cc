// AVX-512 dot products of F32 and F16 rows: floats_avx2.cc, 16 values per step.

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

// acc += the 16 float products, widened to double.
__m512d add_widened(__m512d acc_low, __m512d* acc_high, __m512 products) {
  *acc_high = _mm512_add_pd(*acc_high, _mm512_cvtps_pd(_mm512_extractf32x8_ps(products, 1)));
  return _mm512_add_pd(acc_low, _mm512_cvtps_pd(_mm512_castps512_ps256(products)));
}

}  // namespace

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  __m512d acc_low = _mm512_setzero_pd(), acc_high = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc_low = add_widened(acc_low, &acc_high, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  }
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc_low, acc_high));
  for (; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  __m512d acc_low = _mm512_setzero_pd(), acc_high = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 products = _mm512_mul_ps(_mm512_cvtph_ps(load_256(x + i)), _mm512_cvtph_ps(load_256(y + i)));
    acc_low = add_widened(acc_low, &acc_high, products);
  }
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc_low, acc_high));
  for (; i < n; ++i) sum += static_cast<double>(half_to_float(x[i]) * half_to_float(y[i]));
  return static_cast<float>(sum);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  // BF16 is the upper half of an F32: widen to 32 bits and shift.
  auto to_f32 = [](const uint16_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load_256(p)), 16));
  };
  __m512d acc_low = _mm512_setzero_pd(), acc_high = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc_low = add_widened(acc_low, &acc_high, _mm512_mul_ps(to_f32(x + i), to_f32(y + i)));
  double sum = _mm512_reduce_add_pd(_mm512_add_pd(acc_low, acc_high));
  for (; i < n; ++i) {
    uint32_t xb = static_cast<uint32_t>(x[i]) << 16, yb = static_cast<uint32_t>(y[i]) << 16;
    float xf, yf;
    std::memcpy(&xf, &xb, sizeof xf);
    std::memcpy(&yf, &yb, sizeof yf);
    sum += static_cast<double>(xf * yf);
  }
  return static_cast<float>(sum);
}

}  // namespace tokenmill::quant::avx512

// F32, F16 and BF16 rows: conversions and reference dot products.
//
// The dot products follow ggml's scalar path: each product is rounded to float, then
// accumulated in double, and the sum is rounded to float once at the end.

#include <cstring>

#include "base/half.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* halves = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(halves[i]);
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
  const auto* halves = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(halves[i]);
}

void quantize_row_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* halves = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) halves[i] = f32_to_f16(src[i]);
}

void quantize_row_bf16(const float* src, void* dst, int64_t n) {
  auto* halves = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) halves[i] = f32_to_bf16(src[i]);
}

float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

float vec_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(f16_to_f32(x[i]) * f16_to_f32(y[i]));
  return static_cast<float>(sum);
}

float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_f32(x[i]) * bf16_to_f32(y[i]));
  return static_cast<float>(sum);
}

}  // namespace tokenmill::quant::ref

#include "ops/cpu/elementwise.h"

#include <array>
#include <cmath>
#include <memory>

#include "base/half.h"

namespace tokenmill::ops::cpu {

namespace {

float gelu_tanh_exact(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefficient = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefficient * x * x)));
}

// 65,536 entries: the GELU of every F16 value, rounded back to F16.
const std::array<uint16_t, 65536>& gelu_table() {
  static const std::unique_ptr<std::array<uint16_t, 65536>> table = [] {
    auto t = std::make_unique<std::array<uint16_t, 65536>>();
    for (uint32_t i = 0; i < 65536; ++i) {
      (*t)[i] = f32_to_f16(gelu_tanh_exact(f16_to_f32(static_cast<uint16_t>(i))));
    }
    return t;
  }();
  return *table;
}

}  // namespace

float gelu_tanh(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return f16_to_f32(gelu_table()[f32_to_f16(x)]);
}

const float* gelu_f32_table() {
  static const std::unique_ptr<std::array<float, 65536>> table = [] {
    auto t = std::make_unique<std::array<float, 65536>>();
    for (uint32_t i = 0; i < 65536; ++i) (*t)[i] = f16_to_f32(gelu_table()[i]);
    return t;
  }();
  return table->data();
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* y) {
  // Squares summed in double, as ggml does, but in kLanes independent partial sums: one
  // chain of dependent double adds made this a few percent of a batched decode step.
  constexpr int kLanes = 8;
  double partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) partial[j] += static_cast<double>(x[i + j] * x[i + j]);
  }
  for (; i < n; ++i) partial[0] += static_cast<double>(x[i] * x[i]);
  double sum = 0.0;
  for (double p : partial) sum += p;
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (i = 0; i < n; ++i) y[i] = (x[i] * scale) * weight[i];
}

}  // namespace tokenmill::ops::cpu

// Importance-weighted quantization: no importance is the reference, bit for bit; uniform
// importance costs little against the reference; skewed importance lowers the weighted
// error the matmul actually sees.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "quant/quant.h"
#include "quant_test_util.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

constexpr TensorType kWeightedTypes[] = {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                         TensorType::kQ5_1, TensorType::kQ2_K, TensorType::kQ3_K,
                                         TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                                         TensorType::kIQ3_S, TensorType::kIQ3_XXS, TensorType::kIQ2_S,
                                         TensorType::kIQ2_XS, TensorType::kIQ2_XXS, TensorType::kIQ1_M,
                                         TensorType::kIQ1_S};

std::vector<float> round_trip(TensorType type, const std::vector<float>& x, const float* importance) {
  std::vector<uint8_t> q(row_size(type, static_cast<int64_t>(x.size())));
  quantize_row_weighted(type, x.data(), q.data(), static_cast<int64_t>(x.size()), importance);
  std::vector<float> y(x.size());
  dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

double weighted_error(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& w) {
  double e = 0;
  for (size_t i = 0; i < x.size(); ++i) e += w[i] * (x[i] - y[i]) * (x[i] - y[i]);
  return e;
}

TEST(QuantizeWeighted, NullImportanceIsTheReference) {
  const std::vector<float> x = testing::random_normal(1024, 11);
  for (TensorType type : kWeightedTypes) {
    std::vector<uint8_t> weighted(row_size(type, 1024)), reference(row_size(type, 1024));
    quantize_row_weighted(type, x.data(), weighted.data(), 1024, nullptr);
    quantize_row_ref(type, x.data(), reference.data(), 1024);
    EXPECT_EQ(weighted, reference) << gguf::tensor_type_name(type);
  }
}

TEST(QuantizeWeighted, UniformImportanceIsAboutAsGoodAsTheReference) {
  const size_t n = 4096;
  const std::vector<float> x = testing::random_normal(n, 12);
  const std::vector<float> ones(n, 1.0f);
  for (TensorType type : kWeightedTypes) {
    const double e_weighted = weighted_error(x, round_trip(type, x, ones.data()), ones);
    const double e_reference = weighted_error(x, round_trip(type, x, nullptr), ones);
    EXPECT_LT(e_weighted, 1.10 * e_reference) << gguf::tensor_type_name(type);
  }
}

TEST(QuantizeWeighted, SkewedImportanceLowersTheWeightedError) {
  const size_t n = 8192;
  const std::vector<float> x = testing::random_normal(n, 13);
  // Activations' energy is very uneven across channels in real models: a few outliers.
  std::mt19937 rng(14);
  std::lognormal_distribution<float> spread(0.0f, 1.5f);
  std::vector<float> importance(n);
  for (float& v : importance) v = spread(rng);
  for (TensorType type : kWeightedTypes) {
    const double e_weighted = weighted_error(x, round_trip(type, x, importance.data()), importance);
    const double e_reference = weighted_error(x, round_trip(type, x, nullptr), importance);
    EXPECT_LT(e_weighted, 0.97 * e_reference) << gguf::tensor_type_name(type);
  }
}

TEST(QuantizeWeighted, OtherTypesFallBackToTheReference) {
  const std::vector<float> x = testing::random_normal(256, 15);
  const std::vector<float> importance(256, 2.0f);
  for (TensorType type : {TensorType::kQ8_0, TensorType::kF16, TensorType::kBF16, TensorType::kF32}) {
    EXPECT_FALSE(supports_weighted_quantization(type));
    std::vector<uint8_t> weighted(row_size(type, 256)), reference(row_size(type, 256));
    quantize_row_weighted(type, x.data(), weighted.data(), 256, importance.data());
    quantize_row_ref(type, x.data(), reference.data(), 256);
    EXPECT_EQ(weighted, reference);
  }
}

TEST(QuantizeWeighted, ZeroImportanceGroupsStayFinite) {
  const std::vector<float> x = testing::random_normal(512, 16);
  std::vector<float> importance(512, 1.0f);
  std::fill(importance.begin(), importance.begin() + 256, 0.0f);
  for (TensorType type : kWeightedTypes) {
    for (float v : round_trip(type, x, importance.data())) ASSERT_TRUE(std::isfinite(v));
  }
}

}  // namespace
}  // namespace tokenmill::quant

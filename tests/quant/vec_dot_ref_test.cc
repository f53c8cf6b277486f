// vec_dot_ref against a float reference: dequantize both rows, multiply, sum in double.
// The integer part of every quantized dot product is exact, so the two differ only by
// float rounding in the scale products and the running sum.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/quant.h"
#include "quant_test_util.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;
using testing::dequantize;
using testing::quantize;
using testing::random_normal;

// |vec_dot_ref - float reference| <= tolerance * sum_i |w_i * a_i|.
constexpr double kVecDotRelativeTolerance = 1e-5;

// Q4_1 / Q5_1 against Q8_1 add m_w * s_a per block, where s_a = d_a * sum(q_a) was
// rounded to f16 (and taken from the unrounded d_a), while the float reference uses
// f16(d_a) * q_a. That is a relative error of up to 2^-11 twice on that term.
constexpr double kQ8_1SumRelativeError = 1.0 / 1024.0;

// Extra allowance for the stored activation sums of Q8_1, 0 for other activation types.
double q8_1_sum_allowance(const TypeTraits& traits, const std::vector<uint8_t>& w,
                          const std::vector<uint8_t>& a, size_t n) {
  if (traits.vec_dot_type != TensorType::kQ8_1) return 0.0;
  const auto* activations = reinterpret_cast<const BlockQ8_1*>(a.data());
  double allowance = 0.0;
  for (size_t b = 0; b < n / kLegacyBlockSize; ++b) {
    // m is the second f16 of both BlockQ4_1 and BlockQ5_1.
    uint16_t m;
    std::memcpy(&m, w.data() + b * traits.bytes_per_block + 2, sizeof m);
    allowance += std::fabs(double(f16_to_f32(m)) * f16_to_f32(activations[b].s)) * kQ8_1SumRelativeError;
  }
  return allowance;
}

class VecDotRef : public ::testing::TestWithParam<TensorType> {};

TEST_P(VecDotRef, MatchesFloatReferenceOnOddBlockCounts) {
  const TypeTraits& traits = type_traits(GetParam());
  ASSERT_NE(traits.vec_dot_ref, nullptr);
  // Float types have blocks of one; count their "blocks" in groups of 32 values.
  const int64_t block = traits.block_size == 1 ? 32 : traits.block_size;
  for (int64_t n_blocks : {1, 7, 31, 255}) {
    const size_t n = static_cast<size_t>(n_blocks * block);
    const std::vector<float> w_float = random_normal(n, 17 + static_cast<uint32_t>(n_blocks));
    const std::vector<float> a_float = random_normal(n, 71 + static_cast<uint32_t>(n_blocks), 2.0f);
    const std::vector<uint8_t> w = quantize(traits.type, w_float);
    const std::vector<uint8_t> a = quantize(traits.vec_dot_type, a_float);

    const std::vector<float> w_values = dequantize(traits.type, w, n);
    const std::vector<float> a_values = dequantize(traits.vec_dot_type, a, n);
    double expected = 0.0, magnitude = 0.0;
    for (size_t i = 0; i < n; ++i) {
      expected += double(w_values[i]) * a_values[i];
      magnitude += std::fabs(double(w_values[i]) * a_values[i]);
    }
    const float ours = vec_dot_ref(traits.type, static_cast<int64_t>(n), w.data(), a.data());
    EXPECT_NEAR(ours, expected,
                kVecDotRelativeTolerance * magnitude + q8_1_sum_allowance(traits, w, a, n))
        << traits.name << " with " << n_blocks << " blocks";
  }
}

std::string type_name(const ::testing::TestParamInfo<TensorType>& info) {
  return std::string(type_traits(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, VecDotRef,
                         ::testing::Values(TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                                           TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                                           TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ2_K,
                                           TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K,
                                           TensorType::kQ6_K),
                         type_name);

}  // namespace
}  // namespace tokenmill::quant

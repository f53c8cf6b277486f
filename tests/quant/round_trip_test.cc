// dequantize(quantize_row_ref(x)) stays within a per-type RMS error of x, for Gaussian
// data with unit variance. The bounds sit ~25% above what the reference quantizers
// reach, so a regression in a scale search shows up here even without fixtures.

#include <gtest/gtest.h>

#include <cmath>
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

// Maximum RMS of dequantize(quantize(x)) - x for x ~ N(0, 1).
constexpr double kMaxRmsF32 = 0.0;
constexpr double kMaxRmsF16 = 3e-4;   // 11-bit mantissa
constexpr double kMaxRmsBF16 = 2.5e-3;  // 8-bit mantissa
constexpr double kMaxRmsQ8_0 = 6e-3;
constexpr double kMaxRmsQ8_1 = 6e-3;
constexpr double kMaxRmsQ8_K = 9e-3;  // one scale per 256 values: larger amax, coarser step
constexpr double kMaxRmsQ6_K = 2e-2;
constexpr double kMaxRmsQ5_0 = 4.5e-2;
constexpr double kMaxRmsQ5_1 = 4.5e-2;
constexpr double kMaxRmsQ5_K = 4e-2;
constexpr double kMaxRmsQ4_0 = 9.5e-2;
constexpr double kMaxRmsQ4_1 = 9.5e-2;
constexpr double kMaxRmsQ4_K = 8e-2;
constexpr double kMaxRmsQ3_K = 1.7e-1;
constexpr double kMaxRmsQ2_K = 3.2e-1;
constexpr double kMaxRmsIQ3_S = 2.0e-1;
constexpr double kMaxRmsIQ3_XXS = 2.7e-1;
constexpr double kMaxRmsIQ2_S = 4.4e-1;
constexpr double kMaxRmsIQ2_XS = 4.9e-1;
constexpr double kMaxRmsIQ2_XXS = 5.3e-1;
constexpr double kMaxRmsIQ1_M = 6.2e-1;
constexpr double kMaxRmsIQ1_S = 6.8e-1;

struct RoundTripCase {
  TensorType type;
  double max_rms;
};

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, RmsErrorWithinBound) {
  const TypeTraits& traits = type_traits(GetParam().type);
  const size_t n = 32 * 256;  // 32 super-blocks, 256 legacy blocks
  const std::vector<float> x = random_normal(n, 1234);
  const std::vector<uint8_t> packed = quantize(traits.type, x);
  ASSERT_EQ(packed.size(), row_size(traits.type, n));
  const std::vector<float> y = dequantize(traits.type, packed, n);
  double sum_sq = 0.0;
  for (size_t i = 0; i < n; ++i) sum_sq += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
  const double rms = std::sqrt(sum_sq / n);
  EXPECT_LE(rms, GetParam().max_rms) << traits.name;
  std::printf("[   INFO   ] %-5s round-trip RMS error %.5f (bound %.5f)\n",
              std::string(traits.name).c_str(), rms, GetParam().max_rms);
}

TEST_P(RoundTrip, ZerosStayZero) {
  const TypeTraits& traits = type_traits(GetParam().type);
  const std::vector<float> x(512, 0.0f);
  const std::vector<float> y = dequantize(traits.type, quantize(traits.type, x), x.size());
  for (float v : y) ASSERT_EQ(v, 0.0f) << traits.name;
}

TEST_P(RoundTrip, PublicApiForwardsToTable) {
  const TypeTraits& traits = type_traits(GetParam().type);
  const size_t n = 512;
  const std::vector<float> x = random_normal(n, 99);
  std::vector<uint8_t> packed(row_size(traits.type, n));
  quantize_row_ref(traits.type, x.data(), packed.data(), n);
  EXPECT_EQ(packed, quantize(traits.type, x));
  std::vector<float> y(n);
  dequantize_row(traits.type, packed.data(), y.data(), n);
  EXPECT_EQ(y, dequantize(traits.type, packed, n));
}

std::string case_name(const ::testing::TestParamInfo<RoundTripCase>& info) {
  return std::string(type_traits(info.param.type).name);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, RoundTrip,
    ::testing::Values(RoundTripCase{TensorType::kF32, kMaxRmsF32}, RoundTripCase{TensorType::kF16, kMaxRmsF16},
                      RoundTripCase{TensorType::kBF16, kMaxRmsBF16}, RoundTripCase{TensorType::kQ8_0, kMaxRmsQ8_0},
                      RoundTripCase{TensorType::kQ8_1, kMaxRmsQ8_1}, RoundTripCase{TensorType::kQ8_K, kMaxRmsQ8_K},
                      RoundTripCase{TensorType::kQ6_K, kMaxRmsQ6_K}, RoundTripCase{TensorType::kQ5_0, kMaxRmsQ5_0},
                      RoundTripCase{TensorType::kQ5_1, kMaxRmsQ5_1}, RoundTripCase{TensorType::kQ5_K, kMaxRmsQ5_K},
                      RoundTripCase{TensorType::kQ4_0, kMaxRmsQ4_0}, RoundTripCase{TensorType::kQ4_1, kMaxRmsQ4_1},
                      RoundTripCase{TensorType::kQ4_K, kMaxRmsQ4_K}, RoundTripCase{TensorType::kQ3_K, kMaxRmsQ3_K},
                      RoundTripCase{TensorType::kQ2_K, kMaxRmsQ2_K}, RoundTripCase{TensorType::kIQ3_S, kMaxRmsIQ3_S},
                      RoundTripCase{TensorType::kIQ3_XXS, kMaxRmsIQ3_XXS}, RoundTripCase{TensorType::kIQ2_S, kMaxRmsIQ2_S},
                      RoundTripCase{TensorType::kIQ2_XS, kMaxRmsIQ2_XS},
                      RoundTripCase{TensorType::kIQ2_XXS, kMaxRmsIQ2_XXS}, RoundTripCase{TensorType::kIQ1_M, kMaxRmsIQ1_M},
                      RoundTripCase{TensorType::kIQ1_S, kMaxRmsIQ1_S}),
    case_name);

// The activation formats carry sums that the dot products rely on.
TEST(ActivationBlocks, Q8_1StoresScaledSum) {
  const std::vector<float> x = random_normal(32 * 8, 5);
  const std::vector<uint8_t> packed = quantize(TensorType::kQ8_1, x);
  const auto* blocks = reinterpret_cast<const BlockQ8_1*>(packed.data());
  for (int b = 0; b < 8; ++b) {
    int sum = 0;
    for (int8_t q : blocks[b].qs) sum += q;
    // s is computed from the unrounded scale, so compare within f16 rounding (twice).
    const float expected = static_cast<float>(sum) * f16_to_f32(blocks[b].d);
    EXPECT_NEAR(f16_to_f32(blocks[b].s), expected, std::fabs(expected) / 1024.0f);
  }
}

TEST(ActivationBlocks, Q8_KStoresGroupSums) {
  const std::vector<float> x = random_normal(256 * 3, 6);
  const std::vector<uint8_t> packed = quantize(TensorType::kQ8_K, x);
  const auto* blocks = reinterpret_cast<const BlockQ8_K*>(packed.data());
  for (int b = 0; b < 3; ++b) {
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += blocks[b].qs[16 * g + i];
      EXPECT_EQ(blocks[b].bsums[g], sum);
    }
    for (int8_t q : blocks[b].qs) EXPECT_GE(q, -127);
  }
}

}  // namespace
}  // namespace tokenmill::quant

// Our kernels against fixtures from tools/make_quant_fixtures.py: gguf.quants (Python)
// and llama.cpp's own ggml library are the references. Dequantization and quantization
// must be bit-exact; dot products within kVecDotFixtureTolerance (see below).

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "quant/type_traits.h"
#include "quant_test_util.h"

namespace tokenmill::quant {
namespace {

using testing::FixtureReader;
using testing::bits_of;
using testing::fixture_path;
using testing::read_file;

// ggml's scalar dot kernels as shipped may be compiled with fused multiply-adds (one
// rounding instead of two in "d * isum - dmin * summs"), so allow a relative difference
// of a few float ulps of the sum of |w_i * a_i|.
constexpr double kVecDotFixtureTolerance = 1e-6;

class GoldenFixture : public ::testing::TestWithParam<gguf::TensorType> {
 protected:
  const TypeTraits& traits() const { return type_traits(GetParam()); }
  std::string file(std::string_view kind) const {
    return fixture_path(std::string(kind) + "_" + std::string(traits().name) + ".bin");
  }
};

TEST_P(GoldenFixture, DequantizeIsBitExact) {
  FixtureReader in(read_file(file("dequant")));
  ASSERT_TRUE(in.expect_magic("TMQD")) << file("dequant");
  ASSERT_EQ(in.u32(), static_cast<uint32_t>(GetParam()));
  const uint32_t n = in.u32();
  const uint32_t n_bytes = in.u32();
  const std::vector<uint8_t> row = in.bytes(n_bytes);
  const std::vector<float> expected = in.floats(n);
  ASSERT_TRUE(in.ok() && in.at_end());
  ASSERT_EQ(n_bytes, n / traits().block_size * traits().bytes_per_block);

  std::vector<float> ours(n);
  traits().dequantize_row(row.data(), ours.data(), n);
  int n_mismatches = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (bits_of(ours[i]) != bits_of(expected[i]) && ++n_mismatches <= 5) {
      ADD_FAILURE() << "element " << i << ": ours " << ours[i] << " expected " << expected[i];
    }
  }
  EXPECT_EQ(n_mismatches, 0);
}

TEST_P(GoldenFixture, QuantizeRefIsBitExact) {
  FixtureReader in(read_file(file("quantize")));
  ASSERT_TRUE(in.expect_magic("TMQQ")) << file("quantize");
  ASSERT_EQ(in.u32(), static_cast<uint32_t>(GetParam()));
  const uint32_t n = in.u32();
  const uint32_t n_bytes = in.u32();
  const std::vector<float> x = in.floats(n);
  const std::vector<uint8_t> expected = in.bytes(n_bytes);
  ASSERT_TRUE(in.ok() && in.at_end());

  std::vector<uint8_t> ours(n_bytes);
  traits().quantize_row_ref(x.data(), ours.data(), n);
  const size_t block_bytes = traits().bytes_per_block * (traits().block_size == 1 ? 32 : 1);
  for (size_t block = 0; block * block_bytes < n_bytes; ++block) {
    const size_t begin = block * block_bytes;
    EXPECT_TRUE(std::equal(ours.begin() + begin, ours.begin() + begin + block_bytes, expected.begin() + begin))
        << "block " << block << " differs";
  }
}

TEST_P(GoldenFixture, VecDotRefMatchesGgmlScalarKernel) {
  if (traits().vec_dot_ref == nullptr || traits().block_size == 1) GTEST_SKIP() << "no fixture";
  FixtureReader in(read_file(file("vec_dot")));
  ASSERT_TRUE(in.expect_magic("TMQV")) << file("vec_dot");
  ASSERT_EQ(in.u32(), static_cast<uint32_t>(GetParam()));
  const uint32_t n_cases = in.u32();
  ASSERT_GT(n_cases, 0u);
  int n_exact = 0;
  for (uint32_t c = 0; c < n_cases; ++c) {
    const uint32_t n = in.u32();
    const uint32_t w_bytes = in.u32();
    const uint32_t a_bytes = in.u32();
    const std::vector<uint8_t> w = in.bytes(w_bytes);
    const std::vector<uint8_t> a = in.bytes(a_bytes);
    const float expected = in.f32();
    const float magnitude = in.f32();
    ASSERT_TRUE(in.ok());
    const float ours = traits().vec_dot_ref(n, w.data(), a.data());
    EXPECT_NEAR(ours, expected, kVecDotFixtureTolerance * magnitude) << "n = " << n;
    n_exact += bits_of(ours) == bits_of(expected);
  }
  EXPECT_TRUE(in.at_end());
  RecordProperty("bit_exact_cases", n_exact);
  std::printf("[   INFO   ] %s vec_dot: %d of %u cases bit-exact with ggml\n",
              std::string(traits().name).c_str(), n_exact, n_cases);
}

std::string type_name(const ::testing::TestParamInfo<gguf::TensorType>& info) {
  return std::string(type_traits(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GoldenFixture,
                         ::testing::Values(gguf::TensorType::kF32, gguf::TensorType::kF16,
                                           gguf::TensorType::kBF16, gguf::TensorType::kQ4_0,
                                           gguf::TensorType::kQ4_1, gguf::TensorType::kQ5_0,
                                           gguf::TensorType::kQ5_1, gguf::TensorType::kQ8_0,
                                           gguf::TensorType::kQ8_1, gguf::TensorType::kQ2_K,
                                           gguf::TensorType::kQ3_K, gguf::TensorType::kQ4_K,
                                           gguf::TensorType::kQ5_K, gguf::TensorType::kQ6_K,
                                           gguf::TensorType::kQ8_K),
                         type_name);

}  // namespace
}  // namespace tokenmill::quant

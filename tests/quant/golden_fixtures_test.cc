// Our kernels against fixtures from tools/make_quant_fixtures.py: gguf.quants (Python)
// and llama.cpp's own ggml library are the references. Dequantization and quantization
// must be bit-exact; dot products within kVecDotFixtureTolerance (see below).

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <span>
#include <sstream>
#include <string>

#include "quant/blocks.h"
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

void check_dequantize(const TypeTraits& traits, const std::string& path, gguf::TensorType type) {
  FixtureReader in(read_file(path));
  ASSERT_TRUE(in.expect_magic("TMQD")) << path;
  ASSERT_EQ(in.u32(), static_cast<uint32_t>(type));
  const uint32_t n = in.u32();
  const uint32_t n_bytes = in.u32();
  const std::vector<uint8_t> row = in.bytes(n_bytes);
  const std::vector<float> expected = in.floats(n);
  ASSERT_TRUE(in.ok() && in.at_end());
  ASSERT_EQ(n_bytes, n / traits.block_size * traits.bytes_per_block);

  std::vector<float> ours(n);
  traits.dequantize_row(row.data(), ours.data(), n);
  int n_mismatches = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (bits_of(ours[i]) != bits_of(expected[i]) && ++n_mismatches <= 5) {
      ADD_FAILURE() << "element " << i << ": ours " << ours[i] << " expected " << expected[i];
    }
  }
  EXPECT_EQ(n_mismatches, 0);
}

void check_vec_dot(const TypeTraits& traits, const std::string& path, gguf::TensorType type) {
  FixtureReader in(read_file(path));
  ASSERT_TRUE(in.expect_magic("TMQV")) << path;
  ASSERT_EQ(in.u32(), static_cast<uint32_t>(type));
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
    const float ours = traits.vec_dot_ref(n, w.data(), a.data());
    EXPECT_NEAR(ours, expected, kVecDotFixtureTolerance * magnitude) << "n = " << n;
    n_exact += bits_of(ours) == bits_of(expected);
  }
  EXPECT_TRUE(in.at_end());
  ::testing::Test::RecordProperty("bit_exact_cases", n_exact);
  std::printf("[   INFO   ] %s vec_dot: %d of %u cases bit-exact with ggml\n",
              std::string(traits.name).c_str(), n_exact, n_cases);
}

// A quantize fixture: the input floats and the bytes ggml's reference quantizer made.
struct QuantizeCase {
  std::vector<float> x;
  std::vector<uint8_t> ggml;
};
QuantizeCase read_quantize_case(const std::string& path, gguf::TensorType type) {
  FixtureReader in(read_file(path));
  EXPECT_TRUE(in.expect_magic("TMQQ")) << path;
  EXPECT_EQ(in.u32(), static_cast<uint32_t>(type));
  const uint32_t n = in.u32();
  const uint32_t n_bytes = in.u32();
  QuantizeCase c{in.floats(n), in.bytes(n_bytes)};
  EXPECT_TRUE(in.ok() && in.at_end()) << path;
  return c;
}

TEST_P(GoldenFixture, DequantizeIsBitExact) { check_dequantize(traits(), file("dequant"), GetParam()); }

TEST_P(GoldenFixture, QuantizeRefIsBitExact) {
  const QuantizeCase c = read_quantize_case(file("quantize"), GetParam());
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::vector<float>& x = c.x;
  const std::vector<uint8_t>& expected = c.ggml;
  const auto n = static_cast<int64_t>(x.size());
  const size_t n_bytes = expected.size();

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
  check_vec_dot(traits(), file("vec_dot"), GetParam());
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
                                           gguf::TensorType::kQ8_K, gguf::TensorType::kTQ1_0,
                                           gguf::TensorType::kTQ2_0),
                         type_name);

// The i-quants: dequantization and dot products as above; quantization is our own search,
// so its fixture (ggml's bytes) is the fit to match, not the bytes: our weighted squared
// error (weights x^2, what both searches weigh by without an imatrix) at most ggml's.
class IQuantFixture : public GoldenFixture {};

TEST_P(IQuantFixture, DequantizeIsBitExact) { check_dequantize(traits(), file("dequant"), GetParam()); }

TEST_P(IQuantFixture, VecDotRefMatchesGgmlScalarKernel) { check_vec_dot(traits(), file("vec_dot"), GetParam()); }

TEST_P(IQuantFixture, QuantizeFitsAtLeastAsWellAsGgml) {
  const QuantizeCase c = read_quantize_case(file("quantize"), GetParam());
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::vector<float>& x = c.x;
  const std::vector<uint8_t>& ggml = c.ggml;
  const auto n = static_cast<uint32_t>(x.size());
  const size_t n_bytes = ggml.size();
  std::vector<uint8_t> ours(n_bytes);
  traits().quantize_row_ref(x.data(), ours.data(), n);
  std::vector<float> ours_values(n), ggml_values(n);
  traits().dequantize_row(ours.data(), ours_values.data(), n);
  traits().dequantize_row(ggml.data(), ggml_values.data(), n);
  double ours_error = 0, ggml_error = 0, norm = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double w = static_cast<double>(x[i]) * x[i];
    ours_error += w * (x[i] - ours_values[i]) * (x[i] - ours_values[i]);
    ggml_error += w * (x[i] - ggml_values[i]) * (x[i] - ggml_values[i]);
    norm += w * x[i] * x[i];
  }
  std::printf("[   INFO   ] %s: weighted error %.4g of the signal, ggml's %.4g\n", std::string(traits().name).c_str(),
              ours_error / norm, ggml_error / norm);
  EXPECT_LE(ours_error, ggml_error * 1.0001 + 1e-30);
}

// SplitMix64 output words as little-endian bytes, as tools/make_quant_fixtures.py draws them.
std::vector<uint8_t> splitmix64_bytes(uint64_t seed, size_t n) {
  std::vector<uint8_t> out;
  out.reserve(n + 8);
  uint64_t state = seed;
  while (out.size() < n) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int k = 0; k < 8; ++k) out.push_back(static_cast<uint8_t>(z >> (8 * k)));
  }
  out.resize(n);
  return out;
}

// Byte offset of a type's f16 super-block scale d, as make_quant_fixtures.py sanitizes
// it; -1 for MXFP4 (an E8M0 exponent: every byte is valid) and IQ1_M (d in four nibbles).
int f16_scale_offset(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kMXFP4:
    case gguf::TensorType::kIQ1_M: return -1;
    case gguf::TensorType::kTQ1_0: return 52;
    case gguf::TensorType::kTQ2_0: return 64;
    default: return 0;
  }
}

// Clears bit 14 of a d that would be inf or NaN, as make_quant_fixtures.py does.
void sanitize_scale(gguf::TensorType type, uint8_t* block) {
  if (type == gguf::TensorType::kIQ1_M) {
    BlockIQ1_M b;
    std::memcpy(&b, block, sizeof b);
    if ((iq1_m_scale_bits(b) & 0x7C00) == 0x7C00) block[offsetof(BlockIQ1_M, scales) + 7] &= 0xBF;
    return;
  }
  const int offset = f16_scale_offset(type);
  if (offset >= 0 && (block[offset + 1] & 0x7C) == 0x7C) block[offset + 1] &= 0xBF;
}

// 10,000 blocks of every bit pattern (scales from subnormal to 65504; every MXFP4
// exponent, the largest overflowing to infinity as in gguf-py) dequantize to the floats
// gguf-py gives, recorded as their hash.
void check_many_blocks(const TypeTraits& traits) {
  const std::vector<uint8_t> text = read_file(fixture_path("iquant_many_blocks.txt"));
  std::istringstream lines(std::string(text.begin(), text.end()));
  std::string name, hash;
  size_t n_blocks = 0;
  while (lines >> name >> n_blocks >> hash && name != traits.name) {
  }
  ASSERT_EQ(name, traits.name) << "no record in iquant_many_blocks.txt";
  ASSERT_GE(n_blocks, 10000u);
  std::vector<uint8_t> blocks = splitmix64_bytes(static_cast<uint64_t>(traits.type), n_blocks * traits.bytes_per_block);
  for (size_t b = 0; b < n_blocks; ++b) sanitize_scale(traits.type, &blocks[b * traits.bytes_per_block]);
  std::vector<float> values(n_blocks * static_cast<size_t>(traits.block_size));
  traits.dequantize_row(blocks.data(), values.data(), static_cast<int64_t>(values.size()));
  uint64_t h = 1469598103934665603ull;
  for (const uint8_t byte : std::span(reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float))) {
    h = (h ^ byte) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  EXPECT_EQ(std::string(hex), hash);
}

TEST_P(IQuantFixture, DequantizesManyBlocksAsGgufPy) { check_many_blocks(traits()); }

INSTANTIATE_TEST_SUITE_P(IQuants, IQuantFixture,
                         ::testing::Values(gguf::TensorType::kIQ4_NL, gguf::TensorType::kIQ4_XS,
                                           gguf::TensorType::kMXFP4),
                         type_name);

// The lattice i-quants (read only): dequantization and dot products as above, on random
// blocks and on 10,000 blocks of every bit pattern.
class LatticeFixture : public GoldenFixture {};

TEST_P(LatticeFixture, DequantizeIsBitExact) { check_dequantize(traits(), file("dequant"), GetParam()); }

TEST_P(LatticeFixture, VecDotRefMatchesGgmlScalarKernel) { check_vec_dot(traits(), file("vec_dot"), GetParam()); }

TEST_P(LatticeFixture, DequantizesManyBlocksAsGgufPy) { check_many_blocks(traits()); }

INSTANTIATE_TEST_SUITE_P(Lattice, LatticeFixture,
                         ::testing::Values(gguf::TensorType::kIQ2_XXS, gguf::TensorType::kIQ2_XS,
                                           gguf::TensorType::kIQ2_S, gguf::TensorType::kIQ3_XXS,
                                           gguf::TensorType::kIQ3_S, gguf::TensorType::kIQ1_S,
                                           gguf::TensorType::kIQ1_M),
                         type_name);

TEST(TernaryFixture, DequantizesManyBlocksAsGgufPy) {
  check_many_blocks(type_traits(gguf::TensorType::kTQ1_0));
  check_many_blocks(type_traits(gguf::TensorType::kTQ2_0));
}

}  // namespace
}  // namespace tokenmill::quant

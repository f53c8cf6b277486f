// Every per-instruction-set kernel of the traits table against its scalar reference,
// on every path this CPU can run: dot products to a named tolerance (they sum in another
// order), activation quantizers bit for bit. Paths the CPU lacks are reported as skipped.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpu_features.h"
#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels/dispatch.h"
#include "quant/quant.h"
#include "quant_test_util.h"
#include "recorded_bits.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;
using testing::quantize;
using testing::random_normal;

// |fast - ref| <= tolerance * sum_i |w_i * a_i| (dequantized values). Both kernels compute
// the same exact integer sums per block; only the float accumulation order differs.
constexpr double kKernelRelativeTolerance = 1e-5;

// Odd block counts, up to a row longer than any model's (4097 blocks of 256 = 1M values).
constexpr int64_t kBlockCounts[] = {1, 2, 3, 7, 31, 255, 4097};

struct IsaPath {
  const char* name;
  bool available;
  const char* missing;  // why not, for the log
  const SimdKernels& (*kernels)(const TypeTraits&);
  bool every_type = true;  // has a dot product for every quantized type (x86), or only for some
};

const std::vector<IsaPath>& isa_paths() {
  static const std::vector<IsaPath> paths = [] {
    const CpuFeatures cpu = detect_cpu_features();  // the hardware, not TOKENMILL_ISA
#if defined(__x86_64__)
    return std::vector<IsaPath>{
        {"avx2", cpu.has_avx2_kernels(), "CPU lacks avx2/fma/f16c",
         [](const TypeTraits& t) -> const SimdKernels& { return t.avx2; }},
        {"avx512", cpu.has_avx512_kernels(), "CPU lacks avx512 f/bw/dq/vl/vnni",
         [](const TypeTraits& t) -> const SimdKernels& { return t.avx512; }},
    };
#elif defined(__aarch64__)
    return std::vector<IsaPath>{
        {"neon", cpu.has_neon_kernels(), "not an arm64 CPU",
         [](const TypeTraits& t) -> const SimdKernels& { return t.neon; }, false},
        {"neon-dotprod", cpu.has_neon_kernels() && cpu.dotprod, "CPU lacks the int8 dot product (dotprod)",
         [](const TypeTraits& t) -> const SimdKernels& { return t.neon_dotprod; }, false},
    };
#else
    (void)cpu;
    return std::vector<IsaPath>{};
#endif
  }();
  return paths;
}

TEST(Kernels, ReportsWhichPathsRun) {
  std::printf("[ kernels  ] cpu: %s\n", detect_cpu_features().to_string().c_str());
  for (const IsaPath& path : isa_paths()) {
    std::string covered;
    for (const TypeTraits& traits : all_type_traits()) {
      const SimdKernels& k = path.kernels(traits);
      if (k.vec_dot || k.quantize_row) covered += std::string(covered.empty() ? "" : " ") + std::string(traits.name);
    }
    if (path.available) {
      std::printf("[ kernels  ] %s: runs (%s)\n", path.name, covered.c_str());
    } else {
      std::printf("[ kernels  ] %s: skipped, %s\n", path.name, path.missing);
    }
  }
  for (const TypeTraits& traits : all_type_traits()) {
    if (traits.vec_dot_ref == nullptr) continue;
    std::printf("[ kernels  ] dispatch %-5s -> %s\n", std::string(traits.name).c_str(),
                best_dot_kernel(traits.type).isa);
  }
}

// sum_i |w_i * a_i| over the dequantized rows.
double magnitude(const TypeTraits& traits, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, size_t n) {
  const std::vector<float> wf = testing::dequantize(traits.type, w, n);
  const std::vector<float> af = testing::dequantize(traits.vec_dot_type, a, n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::fabs(double(wf[i]) * af[i]);
  return sum;
}

class KernelVecDot : public ::testing::TestWithParam<TensorType> {};

TEST_P(KernelVecDot, MatchesReferenceOnOddSizes) {
  const TypeTraits& traits = type_traits(GetParam());
  ASSERT_NE(traits.vec_dot_ref, nullptr);
  // Float types have blocks of one: 33 per "block" leaves every tail length a vector
  // loop can leave.
  const int64_t block = traits.block_size == 1 ? 33 : traits.block_size;
  int n_checked = 0;
  double worst = 0.0;  // largest |fast - ref| / sum|w * a| seen
  for (const IsaPath& path : isa_paths()) {
    const SimdKernels& kernels = path.kernels(traits);
    if (kernels.vec_dot == nullptr) continue;
    if (!path.available) {
      std::printf("[ kernels  ] %s %s: skipped, %s\n", std::string(traits.name).c_str(), path.name, path.missing);
      continue;
    }
    for (int64_t n_blocks : kBlockCounts) {
      SCOPED_TRACE(std::string(path.name) + " n_blocks=" + std::to_string(n_blocks));
      const size_t n = static_cast<size_t>(n_blocks * block);
      const uint32_t seed = static_cast<uint32_t>(n_blocks) * 7919u;
      const std::vector<uint8_t> w = quantize(traits.type, random_normal(n, seed + 1));
      const std::vector<uint8_t> a = quantize(traits.vec_dot_type, random_normal(n, seed + 2, 3.0f));
      const float expected = traits.vec_dot_ref(static_cast<int64_t>(n), w.data(), a.data());
      const float actual = kernels.vec_dot(static_cast<int64_t>(n), w.data(), a.data());
      const double tolerance = kKernelRelativeTolerance * magnitude(traits, w, a, n);
      EXPECT_NEAR(actual, expected, tolerance);
      if (tolerance > 0) worst = std::max(worst, std::fabs(double(actual) - expected) / (tolerance / kKernelRelativeTolerance));
      ++n_checked;
    }
  }
  std::printf("[ kernels  ] %s vec_dot: %d (path, size) cases checked, worst error %.2g of sum|w*a|\n",
              std::string(traits.name).c_str(), n_checked, worst);
}

// Several activation rows per weight row, with a stride wider than a row and an output
// stride, in counts that exercise the tiles and the remainder.
TEST_P(KernelVecDot, RowsMatchSingleRowKernel) {
  const TypeTraits& traits = type_traits(GetParam());
  // Float rows of an odd length: past the last whole vector, the tail in order.
  const int64_t n = traits.block_size == 1 ? 229 : 7 * traits.block_size;
  const size_t row_bytes = row_size(traits.vec_dot_type, n);
  const size_t stride = row_bytes + 64;
  const std::vector<uint8_t> w = quantize(traits.type, random_normal(static_cast<size_t>(n), 5));
  for (int64_t n_rows : {1, 3, 4, 5, 9}) {
    std::vector<uint8_t> a(static_cast<size_t>(n_rows) * stride);
    for (int64_t t = 0; t < n_rows; ++t) {
      const std::vector<uint8_t> row =
          quantize(traits.vec_dot_type, random_normal(static_cast<size_t>(n), 100 + static_cast<uint32_t>(t)));
      std::memcpy(a.data() + t * stride, row.data(), row_bytes);
    }
    auto check = [&](const char* label, auto&& run_rows, VecDotFn single) {
      SCOPED_TRACE(std::string(label) + " n_rows=" + std::to_string(n_rows));
      constexpr int64_t kOutStride = 3;
      std::vector<float> out(static_cast<size_t>(n_rows * kOutStride), -1.0f);
      run_rows(out.data(), kOutStride);
      for (int64_t t = 0; t < n_rows; ++t) {
        // Same kernel family, same order: the rows variant must agree exactly.
        const float expected = single(n, w.data(), a.data() + t * stride);
        EXPECT_EQ(testing::bits_of(out[t * kOutStride]), testing::bits_of(expected)) << "row " << t;
      }
    };
    for (const IsaPath& path : isa_paths()) {
      const SimdKernels& kernels = path.kernels(traits);
      if (!path.available || kernels.vec_dot_rows == nullptr) continue;
      check(path.name, [&](float* out, int64_t out_stride) {
        kernels.vec_dot_rows(n, w.data(), a.data(), stride, n_rows, out, out_stride);
      }, kernels.vec_dot);
    }
    const DotKernel& best = best_dot_kernel(traits.type);
    check("dispatched", [&](float* out, int64_t out_stride) {
      best.dot_rows(n, w.data(), a.data(), stride, n_rows, out, out_stride);
    }, best.vec_dot);
  }
}

// Many weight rows x many activation rows (the matmul tile kernels), with strides wider
// than a row, in counts that exercise every tile shape and remainder: each result must be
// bit-identical to vec_dot of its two rows (batch invariance rests on this).
TEST_P(KernelVecDot, MatrixMatchesSingleRowKernel) {
  const TypeTraits& traits = type_traits(GetParam());
  const int64_t block = traits.block_size == 1 ? 32 : traits.block_size;
  for (int64_t n_blocks : {1, 2, 7}) {
    const int64_t n = n_blocks * block;
    const size_t w_row_bytes = row_size(traits.type, n);
    const size_t a_row_bytes = row_size(traits.vec_dot_type, n);
    const size_t w_stride = w_row_bytes + 16, a_stride = a_row_bytes + 64;
    constexpr int64_t kMaxRows = 11, kMaxTokens = 6;
    std::vector<uint8_t> w(kMaxRows * w_stride), a(kMaxTokens * a_stride);
    for (int64_t r = 0; r < kMaxRows; ++r) {
      const std::vector<uint8_t> row = quantize(traits.type, random_normal(static_cast<size_t>(n), 300 + r));
      std::memcpy(w.data() + r * w_stride, row.data(), w_row_bytes);
    }
    for (int64_t t = 0; t < kMaxTokens; ++t) {
      const std::vector<uint8_t> row = quantize(traits.vec_dot_type, random_normal(static_cast<size_t>(n), 400 + t));
      std::memcpy(a.data() + t * a_stride, row.data(), a_row_bytes);
    }
    auto check = [&](const char* label, auto&& run_matrix, VecDotFn single) {
      for (int64_t n_rows : {1, 3, 4, 5, 8, 11}) {
        for (int64_t n_tokens : {1, 2, 3, 5, 6}) {
          SCOPED_TRACE(std::string(label) + " n_blocks=" + std::to_string(n_blocks) + " rows=" +
                       std::to_string(n_rows) + " tokens=" + std::to_string(n_tokens));
          const int64_t out_stride = n_rows + 2;
          std::vector<float> out(static_cast<size_t>(n_tokens * out_stride), -1.0f);
          run_matrix(n, n_rows, n_tokens, out.data(), out_stride);
          for (int64_t t = 0; t < n_tokens; ++t) {
            for (int64_t r = 0; r < n_rows; ++r) {
              const float expected = single(n, w.data() + r * w_stride, a.data() + t * a_stride);
              ASSERT_EQ(testing::bits_of(out[t * out_stride + r]), testing::bits_of(expected))
                  << "row " << r << " token " << t;
            }
          }
        }
      }
    };
    for (const IsaPath& path : isa_paths()) {
      const SimdKernels& kernels = path.kernels(traits);
      if (!path.available || kernels.vec_dot_matrix == nullptr) continue;
      check(path.name, [&](int64_t n, int64_t n_rows, int64_t n_tokens, float* out, int64_t out_stride) {
        kernels.vec_dot_matrix(n, w.data(), w_stride, n_rows, a.data(), a_stride, n_tokens, out, out_stride);
      }, kernels.vec_dot);
    }
    const DotKernel& best = best_dot_kernel(traits.type);
    check("dispatched", [&](int64_t n, int64_t n_rows, int64_t n_tokens, float* out, int64_t out_stride) {
      best.dot_matrix(n, w.data(), w_stride, n_rows, a.data(), a_stride, n_tokens, out, out_stride);
    }, best.vec_dot);
  }
}

// The shapes past the small ones above: several 16-row panels with a partial last one,
// full 8-token tiles with remainders, the switch between the in-place and the panel
// paths (2 .. 5 tokens), and more than one 64-token block.
TEST_P(KernelVecDot, MatrixMatchesSingleRowKernelOnLargeShapes) {
  const TypeTraits& traits = type_traits(GetParam());
  const int64_t block = traits.block_size == 1 ? 32 : traits.block_size;
  const int64_t n = 3 * block;
  const size_t w_row_bytes = row_size(traits.type, n);
  const size_t a_row_bytes = row_size(traits.vec_dot_type, n);
  const size_t w_stride = w_row_bytes + 16, a_stride = a_row_bytes + 64;
  constexpr int64_t kRows = 37, kMaxTokens = 70;
  std::vector<uint8_t> w(kRows * w_stride), a(kMaxTokens * a_stride);
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<uint8_t> row = quantize(traits.type, random_normal(static_cast<size_t>(n), 500 + r));
    std::memcpy(w.data() + r * w_stride, row.data(), w_row_bytes);
  }
  for (int64_t t = 0; t < kMaxTokens; ++t) {
    const std::vector<uint8_t> row = quantize(traits.vec_dot_type, random_normal(static_cast<size_t>(n), 600 + t));
    std::memcpy(a.data() + t * a_stride, row.data(), a_row_bytes);
  }
  const DotKernel& best = best_dot_kernel(traits.type);
  for (int64_t n_rows : {16, 33, 37}) {
    for (int64_t n_tokens : {3, 4, 5, 8, 9, 16, 17, 70}) {
      SCOPED_TRACE("rows=" + std::to_string(n_rows) + " tokens=" + std::to_string(n_tokens));
      const int64_t out_stride = n_rows + 1;
      std::vector<float> out(static_cast<size_t>(n_tokens * out_stride), -1.0f);
      best.dot_matrix(n, w.data(), w_stride, n_rows, a.data(), a_stride, n_tokens, out.data(), out_stride);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < n_rows; ++r) {
          const float expected = best.vec_dot(n, w.data() + r * w_stride, a.data() + t * a_stride);
          ASSERT_EQ(testing::bits_of(out[t * out_stride + r]), testing::bits_of(expected))
              << "row " << r << " token " << t;
        }
      }
    }
  }
}

// The legacy _0 formats and Q4_K / Q5_K / Q6_K take the same integer sums and float
// steps on every instruction set: where the CPU has several, their matrix kernels (the
// many-token tiles and the few-token rows) give the same bits.
TEST(Kernels, InstructionSetsAgreeBitForBit) {
  // Every type whose decode the tuner may move to the other width (dispatch.cc's
  // same_bits_on_both_widths) is here.
  const TensorType kTypes[] = {TensorType::kQ4_0,   TensorType::kQ5_0,   TensorType::kQ8_0,   TensorType::kQ4_K,
                               TensorType::kQ5_K,   TensorType::kQ6_K,   TensorType::kIQ4_NL, TensorType::kIQ4_XS,
                               TensorType::kMXFP4,  TensorType::kIQ2_XXS, TensorType::kIQ2_XS, TensorType::kIQ2_S,
                               TensorType::kIQ1_S,  TensorType::kIQ1_M,  TensorType::kTQ1_0,  TensorType::kTQ2_0};
  std::vector<const IsaPath*> paths;
  for (const IsaPath& path : isa_paths()) {
    if (path.available) paths.push_back(&path);
  }
  if (paths.size() < 2) {
    std::printf("[ kernels  ] instruction sets compared: none (this CPU has %zu set)\n", paths.size());
    return;
  }
  for (TensorType type : kTypes) {
    const TypeTraits& traits = type_traits(type);
    const int64_t n = traits.block_size == kSuperBlockSize ? 4 * kSuperBlockSize : 20 * traits.block_size;
    const size_t w_row_bytes = row_size(type, n), a_row_bytes = row_size(traits.vec_dot_type, n);
    constexpr int64_t kRows = 45, kMaxTokens = 70;
    std::vector<uint8_t> w(kRows * w_row_bytes), a(kMaxTokens * a_row_bytes);
    for (int64_t r = 0; r < kRows; ++r) {
      const std::vector<uint8_t> row = quantize(type, random_normal(static_cast<size_t>(n), 700 + r));
      std::memcpy(w.data() + r * w_row_bytes, row.data(), w_row_bytes);
    }
    for (int64_t t = 0; t < kMaxTokens; ++t) {
      const std::vector<uint8_t> row = quantize(traits.vec_dot_type, random_normal(static_cast<size_t>(n), 800 + t));
      std::memcpy(a.data() + t * a_row_bytes, row.data(), a_row_bytes);
    }
    for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 13, 16, 70}) {
      std::vector<float> first;
      for (const IsaPath* path : paths) {
        const SimdKernels& kernels = path->kernels(traits);
        if (kernels.vec_dot == nullptr) continue;  // no kernel of this set for the type
        const DotKernel dot{kernels.vec_dot, kernels.vec_dot_rows, kernels.vec_dot_matrix, path->name};
        std::vector<float> out(static_cast<size_t>(kRows * n_tokens));
        dot.dot_matrix(n, w.data(), w_row_bytes, kRows, a.data(), a_row_bytes, n_tokens, out.data(), kRows);
        if (first.empty()) {
          first = out;
          continue;
        }
        ASSERT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0)
            << traits.name << ", " << n_tokens << " tokens: " << path->name << " vs " << paths[0]->name;
      }
    }
  }
  std::printf("[ kernels  ] instruction sets compared:");
  for (const IsaPath* path : paths) std::printf(" %s", path->name);
  std::printf("\n");
}

// The types whose kernels give the same bits on every instruction set, on every target:
// the dispatched kernel (what the model runs) over a matrix, its output hashed and
// compared with the hash recorded on x86-64 (tests/fixtures/quant/kernel_bits.txt,
// written by tools/make_kernel_bits.sh). Under qemu-aarch64 this checks the NEON bodies
// against the AVX-512 and AVX2 ones; on x86 it checks the quantizers and kernels did not
// drift.
TEST(Kernels, DispatchedKernelsGiveTheRecordedBitsOnEveryTarget) {
  // Every type whose decode the tuner may move to the other width (dispatch.cc's
  // same_bits_on_both_widths) is here.
  const TensorType kTypes[] = {TensorType::kQ4_0,   TensorType::kQ5_0,   TensorType::kQ8_0,   TensorType::kQ4_K,
                               TensorType::kQ5_K,   TensorType::kQ6_K,   TensorType::kIQ4_NL, TensorType::kIQ4_XS,
                               TensorType::kMXFP4,  TensorType::kIQ2_XXS, TensorType::kIQ2_XS, TensorType::kIQ2_S,
                               TensorType::kIQ1_S,  TensorType::kIQ1_M,  TensorType::kTQ1_0,  TensorType::kTQ2_0};
  std::string lines, compared;
  std::vector<std::string> vector_types;  // "name " of each type a vector body ran
  for (TensorType type : kTypes) {
    const TypeTraits& traits = type_traits(type);
    const int64_t n = 8 * kSuperBlockSize;
    constexpr int64_t kRows = 19, kTokens = 6;
    const size_t w_row_bytes = row_size(type, n), a_row_bytes = row_size(traits.vec_dot_type, n);
    std::vector<uint8_t> w(kRows * w_row_bytes), a(kTokens * a_row_bytes);
    for (int64_t r = 0; r < kRows; ++r) {
      const std::vector<float> x = tokenmill::testing::hashed_values(static_cast<size_t>(n), 100 + r);
      quantize_row_ref(type, x.data(), w.data() + r * w_row_bytes, n);
    }
    for (int64_t t = 0; t < kTokens; ++t) {
      std::vector<float> x = tokenmill::testing::hashed_values(static_cast<size_t>(n), 200 + t);
      for (float& v : x) v *= static_cast<float>(t + 1);
      quantize_row_ref(traits.vec_dot_type, x.data(), a.data() + t * a_row_bytes, n);
    }
    std::vector<float> out(kRows * kTokens);
    best_dot_kernel(type).dot_matrix(n, w.data(), w_row_bytes, kRows, a.data(), a_row_bytes, kTokens, out.data(),
                                     kRows);
    tokenmill::testing::BitsHash h;  // over the weight, activation and result bytes
    h.add(w.data(), w.size());
    h.add(a.data(), a.size());
    h.add(out.data(), out.size() * sizeof(float));
    const std::string line = std::string(traits.name) + " " + h.hex() + "\n";
    lines += line;
    // The scalar reference sums in ggml's order, not the vector bodies': not under the
    // contract (only a CPU with no vector set, or TOKENMILL_ISA=scalar, dispatches to it)
    // but for the IQ4 types and MXFP4, whose kernels repeat the reference's float steps (on
    // arm64, with no NEON kernel for them yet, the reference is what runs).
    const bool reference_in_contract =
        type == TensorType::kIQ4_NL || type == TensorType::kIQ4_XS || type == TensorType::kMXFP4;
    if (reference_in_contract || std::string_view(best_dot_kernel(type).isa) != "scalar") {
      compared += line;
      vector_types.push_back(std::string(traits.name) + " ");
    }
    std::printf("[ kernels  ] %s: %s kernel\n", std::string(traits.name).c_str(), best_dot_kernel(type).isa);
  }
  std::string recorded;
  const std::string text = tokenmill::testing::recorded_bits("quant/kernel_bits.txt", lines);
  std::string_view all = text;
  while (!all.empty()) {
    const size_t end = all.find('\n') == std::string_view::npos ? all.size() : all.find('\n') + 1;
    const std::string_view recorded_line = all.substr(0, end);
    for (const std::string& name : vector_types) {
      if (recorded_line.starts_with(name)) recorded += recorded_line;
    }
    all.remove_prefix(end);
  }
  EXPECT_EQ(compared, recorded);
}

std::string type_name(const ::testing::TestParamInfo<TensorType>& info) {
  return std::string(type_traits(info.param).name);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, KernelVecDot,
                         ::testing::Values(TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ8_0, TensorType::kQ4_K,
                                           TensorType::kQ6_K, TensorType::kQ4_1, TensorType::kQ5_1, TensorType::kQ5_K,
                                           TensorType::kQ3_K, TensorType::kQ2_K, TensorType::kF16,
                                           TensorType::kBF16, TensorType::kF32, TensorType::kIQ4_NL,
                                           TensorType::kIQ4_XS, TensorType::kMXFP4),
                         type_name);

// The i-quant kernels repeat the reference's float steps (kernels_ref.h), so every set
// gives the reference's bits, on rows of random bytes (every level, every 6-bit scale).
TEST(Kernels, IQuantKernelsGiveTheReferenceBits) {
  for (TensorType type : {TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kMXFP4}) {
    const TypeTraits& traits = type_traits(type);
    for (int64_t n_blocks : {1, 7, 8, 9, 17, 40}) {
      const int64_t n = n_blocks * traits.block_size;
      std::vector<uint8_t> w(row_size(type, n));
      uint32_t h = static_cast<uint32_t>(n_blocks) * 2654435761u + 1;
      for (uint8_t& byte : w) {
        h ^= h << 13;
        h ^= h >> 17;
        h ^= h << 5;
        byte = static_cast<uint8_t>(h >> 24);
      }
      for (size_t b = 0; b < static_cast<size_t>(n_blocks); ++b) {  // a sane scale at offset 0
        if (type == TensorType::kMXFP4) {  // E8M0 exponents 2^-12 .. 2^0, and 0 and 1 (subnormal)
          w[b * traits.bytes_per_block] = static_cast<uint8_t>(b % 5 == 4 ? b % 2 : 116 + b % 13);
          continue;
        }
        const uint16_t d = f32_to_f16(0.001f * static_cast<float>(b % 13 + 1) * (b % 2 ? -1.0f : 1.0f));
        std::memcpy(w.data() + b * traits.bytes_per_block, &d, sizeof d);
      }
      const std::vector<uint8_t> a = quantize(traits.vec_dot_type, random_normal(static_cast<size_t>(n), 31, 3.0f));
      const float expected = traits.vec_dot_ref(n, w.data(), a.data());
      for (const IsaPath& path : isa_paths()) {
        const SimdKernels& kernels = path.kernels(traits);
        if (!path.available || kernels.vec_dot == nullptr) continue;
        EXPECT_EQ(testing::bits_of(kernels.vec_dot(n, w.data(), a.data())), testing::bits_of(expected))
            << traits.name << " " << path.name << " n_blocks=" << n_blocks;
      }
    }
  }
}

// The lattice i-quants: rows of random bytes (every grid index, sign pattern, scale and
// shift) under finite super-block scales, against activation rows that reach ±127; every
// set gives the reference's bits, one activation row or several.
std::vector<uint8_t> random_lattice_row(TensorType type, int64_t n_blocks, uint32_t seed) {
  const TypeTraits& traits = type_traits(type);
  std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * traits.bytes_per_block);
  std::mt19937 rng(seed);
  for (uint8_t& byte : row) byte = static_cast<uint8_t>(rng());
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* block = row.data() + b * traits.bytes_per_block;
    const uint16_t d = f32_to_f16(0.001f * static_cast<float>(1 + rng() % 100) * (b % 2 ? -1.0f : 1.0f));
    if (type == TensorType::kIQ1_M) {  // d in the top nibbles of the four scale words
      uint16_t words[4];
      std::memcpy(words, block + offsetof(BlockIQ1_M, scales), sizeof words);
      for (int k = 0; k < 4; ++k) words[k] = static_cast<uint16_t>((words[k] & 0x0fff) | ((d >> (4 * k)) & 0xf) << 12);
      std::memcpy(block + offsetof(BlockIQ1_M, scales), words, sizeof words);
    } else {
      std::memcpy(block, &d, sizeof d);  // every other lattice type: d first
    }
  }
  return row;
}

// The lattice i-quants on random bits, the ternary formats on quantized rows (every trit
// at every position).
TEST(Kernels, LatticeAndTernaryKernelsGiveTheReferenceBits) {
  const TensorType kTypes[] = {TensorType::kIQ2_XXS, TensorType::kIQ2_XS, TensorType::kIQ2_S,
                               TensorType::kIQ3_XXS, TensorType::kIQ3_S,  TensorType::kIQ1_S,
                               TensorType::kIQ1_M,   TensorType::kTQ1_0,  TensorType::kTQ2_0};
  for (TensorType type : kTypes) {
    const TypeTraits& traits = type_traits(type);
    const bool ternary = type == TensorType::kTQ1_0 || type == TensorType::kTQ2_0;
    int n_paths = 0;
    for (int64_t n_blocks : {1, 3, 8}) {
      const int64_t n = n_blocks * kSuperBlockSize;
      const uint32_t seed = static_cast<uint32_t>(n_blocks) * 31u + 7u;
      const std::vector<uint8_t> w = ternary ? quantize(type, random_normal(static_cast<size_t>(n), seed))
                                             : random_lattice_row(type, n_blocks, seed);
      constexpr int64_t kTokens = 11;  // 5 rows unpack the weights per tile of 4, 11 once for the call
      const size_t a_bytes = row_size(TensorType::kQ8_K, n);
      std::vector<uint8_t> a(kTokens * a_bytes);
      for (int64_t t = 0; t < kTokens; ++t) {
        std::vector<float> x = random_normal(static_cast<size_t>(n), 40 + static_cast<uint32_t>(t), 3.0f);
        x[static_cast<size_t>(t)] = t % 2 ? 50.0f : -50.0f;  // a block's extreme: a quant of ±127
        const std::vector<uint8_t> row = quantize(TensorType::kQ8_K, x);
        std::memcpy(a.data() + t * a_bytes, row.data(), a_bytes);
      }
      for (const IsaPath& path : isa_paths()) {
        const SimdKernels& kernels = path.kernels(traits);
        if (!path.available || kernels.vec_dot_rows == nullptr) continue;
        n_paths += n_blocks == 1;
        for (int64_t n_rows : {int64_t{5}, kTokens}) {
          float out[kTokens];
          kernels.vec_dot_rows(n, w.data(), a.data(), a_bytes, n_rows, out, 1);
          for (int64_t t = 0; t < n_rows; ++t) {
            const float expected = traits.vec_dot_ref(n, w.data(), a.data() + t * a_bytes);
            EXPECT_EQ(testing::bits_of(out[t]), testing::bits_of(expected))
                << traits.name << " " << path.name << " n_blocks=" << n_blocks << " rows " << n_rows << " token " << t;
            EXPECT_EQ(testing::bits_of(kernels.vec_dot(n, w.data(), a.data() + t * a_bytes)),
                      testing::bits_of(expected));
          }
        }
        if (kernels.vec_dot_matrix == nullptr) continue;
        // The matrix kernel: weight rows in tiles of 2 (AVX2) or 4 (AVX-512) and the rows
        // past the last tile, each against every token.
        constexpr int64_t kWeightRows = 5;
        const size_t w_bytes = w.size();
        std::vector<uint8_t> matrix(kWeightRows * w_bytes);
        for (int64_t r = 0; r < kWeightRows; ++r) {
          const uint32_t row_seed = seed + 1000 * static_cast<uint32_t>(r);
          const std::vector<uint8_t> row = ternary ? quantize(type, random_normal(static_cast<size_t>(n), row_seed))
                                                   : random_lattice_row(type, n_blocks, row_seed);
          std::memcpy(matrix.data() + r * w_bytes, row.data(), w_bytes);
        }
        // One token (decode: weight rows a few at a time, unpacked as reached) and many
        // (prefill: unpacked once per block of tokens); the grid-gathering variant too.
        for (const VecDotMatrixFn matrix_kernel : {kernels.vec_dot_matrix, kernels.vec_dot_matrix_gathered}) {
          if (matrix_kernel == nullptr) continue;
          for (const int64_t n_tokens : {int64_t{1}, kTokens}) {
            std::vector<float> out(n_tokens * kWeightRows);
            matrix_kernel(n, matrix.data(), w_bytes, kWeightRows, a.data(), a_bytes, n_tokens, out.data(), kWeightRows);
            for (int64_t t = 0; t < n_tokens; ++t) {
              for (int64_t r = 0; r < kWeightRows; ++r) {
                const float expected = traits.vec_dot_ref(n, matrix.data() + r * w_bytes, a.data() + t * a_bytes);
                EXPECT_EQ(testing::bits_of(out[t * kWeightRows + r]), testing::bits_of(expected))
                    << traits.name << " " << path.name << " matrix n_blocks=" << n_blocks << " row " << r << " token " << t
                    << " of " << n_tokens << (matrix_kernel == kernels.vec_dot_matrix ? "" : " (gathered)");
              }
            }
          }
        }
      }
    }
    std::printf("[ kernels  ] %s: %d vector sets give the reference's bits\n", std::string(traits.name).c_str(), n_paths);
  }
}

// Q2_K and Q3_K rows of random bytes: every bit pattern of the 2-bit quants, the hmask and
// the packed scales, where rows from the quantizer reach only some (a Q3_K sub-block
// scale of -32 or +31, say). The f16 scales are set to finite values.
std::vector<uint8_t> random_block_bytes(TensorType type, int64_t n_blocks, uint32_t seed) {
  const TypeTraits& traits = type_traits(type);
  std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * traits.bytes_per_block);
  std::mt19937 rng(seed);
  for (uint8_t& byte : row) byte = static_cast<uint8_t>(rng());
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* block = row.data() + b * traits.bytes_per_block;
    const uint16_t d = f32_to_f16(0.01f * static_cast<float>(1 + rng() % 100));
    const uint16_t d_min = f32_to_f16(0.002f * static_cast<float>(1 + rng() % 100));
    if (type == TensorType::kQ2_K) {
      std::memcpy(block + offsetof(BlockQ2_K, d), &d, sizeof d);
      std::memcpy(block + offsetof(BlockQ2_K, dmin), &d_min, sizeof d_min);
    } else {
      std::memcpy(block + offsetof(BlockQ3_K, d), &d, sizeof d);
    }
  }
  return row;
}

TEST(Kernels, LowBitKQuantsMatchReferenceOnRandomBits) {
  for (TensorType type : {TensorType::kQ2_K, TensorType::kQ3_K}) {
    const TypeTraits& traits = type_traits(type);
    for (const IsaPath& path : isa_paths()) {
      const SimdKernels& kernels = path.kernels(traits);
      if (!path.every_type && kernels.vec_dot == nullptr) continue;
      ASSERT_NE(kernels.vec_dot, nullptr) << traits.name << " " << path.name;
      if (!path.available) continue;
      for (int64_t n_blocks : kBlockCounts) {
        SCOPED_TRACE(std::string(traits.name) + " " + path.name + " n_blocks=" + std::to_string(n_blocks));
        const size_t n = static_cast<size_t>(n_blocks * traits.block_size);
        const uint32_t seed = static_cast<uint32_t>(n_blocks) * 104729u;
        const std::vector<uint8_t> w = random_block_bytes(type, n_blocks, seed);
        const std::vector<uint8_t> a = quantize(traits.vec_dot_type, random_normal(n, seed + 1, 3.0f));
        const float expected = traits.vec_dot_ref(static_cast<int64_t>(n), w.data(), a.data());
        const float actual = kernels.vec_dot(static_cast<int64_t>(n), w.data(), a.data());
        EXPECT_NEAR(actual, expected, kKernelRelativeTolerance * magnitude(traits, w, a, n));
      }
    }
  }
}

// Inputs that probe the rounding: values landing exactly on .5 after scaling, ties for
// the largest magnitude with opposite signs, zero blocks, tiny and huge scales.
std::vector<float> awkward_row(size_t n, uint32_t seed) {
  std::vector<float> x = random_normal(n, seed, 2.0f);
  for (size_t i = 0; i < n; ++i) {
    switch ((i / 32 + seed) % 6) {
      case 0: x[i] = static_cast<float>(static_cast<int>(i % 255) - 127) * 0.5f; break;  // halves
      case 1: x[i] = (i % 2 ? -1.0f : 1.0f) * static_cast<float>(i % 7);  break;          // +-max ties
      case 2: x[i] = 0.0f; break;
      case 3: x[i] *= 1e-30f; break;
      case 4: x[i] *= 1e20f; break;
      default: break;
    }
  }
  return x;
}

class KernelQuantize : public ::testing::TestWithParam<TensorType> {};

TEST_P(KernelQuantize, BitIdenticalToReference) {
  const TypeTraits& traits = type_traits(GetParam());
  for (const IsaPath& path : isa_paths()) {
    const SimdKernels& kernels = path.kernels(traits);
    if (!path.every_type && kernels.quantize_row == nullptr) continue;  // the reference quantizes there
    ASSERT_NE(kernels.quantize_row, nullptr) << path.name;
    if (!path.available) {
      std::printf("[ kernels  ] %s %s quantize: skipped, %s\n", std::string(traits.name).c_str(), path.name,
                  path.missing);
      continue;
    }
    for (int64_t n_blocks : kBlockCounts) {
      for (uint32_t variant = 0; variant < 2; ++variant) {
        SCOPED_TRACE(std::string(path.name) + " n_blocks=" + std::to_string(n_blocks) + " variant=" +
                     std::to_string(variant));
        const size_t n = static_cast<size_t>(n_blocks * traits.block_size);
        const std::vector<float> x = variant == 0 ? random_normal(n, static_cast<uint32_t>(n_blocks), 4.0f)
                                                  : awkward_row(n, static_cast<uint32_t>(n_blocks));
        const std::vector<uint8_t> expected = quantize(traits.type, x);
        std::vector<uint8_t> actual(expected.size(), 0xcd);
        kernels.quantize_row(x.data(), actual.data(), static_cast<int64_t>(n));
        ASSERT_EQ(actual.size(), expected.size());
        size_t first_diff = 0;
        while (first_diff < actual.size() && actual[first_diff] == expected[first_diff]) ++first_diff;
        EXPECT_EQ(first_diff, actual.size()) << "first differing byte " << first_diff << " of block "
                                             << first_diff / traits.bytes_per_block;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ActivationTypes, KernelQuantize, ::testing::Values(TensorType::kQ8_0, TensorType::kQ8_K),
                         type_name);

TEST(Kernels, DispatchNeverPicksAPathTheCpuLacks) {
  const CpuFeatures& cpu = cpu_features();
  for (const TypeTraits& traits : all_type_traits()) {
    if (traits.vec_dot_ref == nullptr) continue;
    const DotKernel& kernel = best_dot_kernel(traits.type);
    EXPECT_NE(kernel.vec_dot, nullptr);
    if (kernel.vec_dot == traits.avx512.vec_dot && traits.avx512.vec_dot != nullptr) {
      EXPECT_TRUE(cpu.has_avx512_kernels());
    } else if (kernel.vec_dot == traits.avx2.vec_dot && traits.avx2.vec_dot != nullptr) {
      EXPECT_TRUE(cpu.has_avx2_kernels());
    } else if (kernel.vec_dot == traits.neon_dotprod.vec_dot && traits.neon_dotprod.vec_dot != nullptr) {
      EXPECT_TRUE(cpu.has_neon_kernels() && cpu.dotprod);
    } else if (kernel.vec_dot == traits.neon.vec_dot && traits.neon.vec_dot != nullptr) {
      EXPECT_TRUE(cpu.has_neon_kernels());
    } else {
      EXPECT_EQ(kernel.vec_dot, traits.vec_dot_ref);
    }
    // The lattice i-quants are read only: no quantizer to dispatch to.
    EXPECT_EQ(best_quantize_activation(traits.type) != nullptr, traits.quantize_row_ref != nullptr);
  }
}

}  // namespace
}  // namespace tokenmill::quant

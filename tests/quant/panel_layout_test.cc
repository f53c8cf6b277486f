// quant/panel_layout.h: packing Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, IQ4_XS and MXFP4 rows into 16-row
// panels loses nothing, and the AVX2 and AVX-512 kernels that read panels give the
// row-major kernels' results bit for bit (and, where the CPU has both, each other's).

#include "quant/panel_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/cpu_features.h"
#include "base/first_max.h"
#include "quant/blocks.h"
#include "quant/kernels/dispatch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/quant.h"
#include "quant/type_traits.h"
#include "quant_test_util.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

struct Matrix {
  int64_t n_rows, n_cols;
  size_t row_bytes;
  std::vector<uint8_t> rows;
};

Matrix random_matrix(TensorType type, int64_t n_rows, int64_t n_cols, uint32_t seed) {
  Matrix m{n_rows, n_cols, row_size(type, n_cols), {}};
  m.rows.resize(m.row_bytes * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    const std::vector<float> x = testing::random_normal(static_cast<size_t>(n_cols), seed + static_cast<uint32_t>(r));
    quantize_row_ref(type, x.data(), m.rows.data() + r * m.row_bytes, n_cols);
  }
  return m;
}

constexpr TensorType kPackedTypes[] = {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ4_K,
                                       TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_XS, TensorType::kMXFP4};

// Every panel kernel set has the legacy _0 types; the others only some sets.
bool every_set_has(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ5_0;
}

bool is_k_quant(TensorType type) { return type_traits(type).block_size == 256; }

// A row width of a few blocks of `type`: 640 (20 legacy blocks) or 768 (3 super-blocks).
int64_t some_columns(TensorType type) { return is_k_quant(type) ? 768 : 640; }

TEST(PanelLayout, TypesWithAPanelLayout) {
  for (TensorType type : kPackedTypes) EXPECT_TRUE(has_panel_layout(type));
  EXPECT_FALSE(has_panel_layout(TensorType::kQ4_1));
  EXPECT_FALSE(has_panel_layout(TensorType::kQ2_K));
  EXPECT_FALSE(has_panel_layout(TensorType::kF16));
}

TEST(PanelLayout, PackedRowsDequantizeToTheSameFloats) {
  for (TensorType type : kPackedTypes) {
    const Matrix m = random_matrix(type, 48, some_columns(type), 7);
    std::vector<uint8_t> packed(m.rows.size());
    pack_panels(type, m.rows.data(), m.n_rows, m.row_bytes, packed.data());
    std::vector<float> expected(m.n_cols), got(m.n_cols);
    for (int64_t r = 0; r < m.n_rows; ++r) {
      dequantize_row(type, m.rows.data() + r * m.row_bytes, expected.data(), m.n_cols);
      dequantize_panel_row(type, packed.data(), r, m.n_cols, m.row_bytes, got.data());
      ASSERT_EQ(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)), 0)
          << type_traits(type).name << " row " << r;
    }
  }
}

// The instruction sets with panel kernels that this CPU can run (TOKENMILL_ISA caps them):
// each set's kernels for a type, avxvnni being AVX2's with its own panel kernels.
struct PanelSet {
  const char* name;
  SimdKernels (*kernels)(TensorType);
};
#if defined(__x86_64__)
VecDotPanelsFn avx_vnni_panels(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0: return avx_vnni::vec_dot_panels_q8_0_q8_0;
    case TensorType::kQ4_0: return avx_vnni::vec_dot_panels_q4_0_q8_0;
    case TensorType::kQ5_0: return avx_vnni::vec_dot_panels_q5_0_q8_0;
    default: return nullptr;
  }
}
VecDotPanelsFn amx_panels(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0: return amx::vec_dot_panels_q8_0_q8_0;
    case TensorType::kQ4_0: return amx::vec_dot_panels_q4_0_q8_0;
    case TensorType::kQ5_0: return amx::vec_dot_panels_q5_0_q8_0;
    case TensorType::kQ4_K: return amx::vec_dot_panels_q4_K_q8_K;
    case TensorType::kQ6_K: return amx::vec_dot_panels_q6_K_q8_K;
    case TensorType::kIQ4_XS: return amx::vec_dot_panels_iq4_xs_q8_K;
    default: return nullptr;
  }
}
#endif
std::vector<PanelSet> panel_sets() {
  std::vector<PanelSet> sets;
#if defined(__x86_64__)
  const CpuFeatures& cpu = cpu_features();
  if (cpu.has_avx2_kernels()) sets.push_back({"avx2", [](TensorType t) { return type_traits(t).avx2; }});
  if (cpu.has_avx_vnni_kernels()) {
    sets.push_back({"avxvnni", [](TensorType t) {
                      SimdKernels kernels = type_traits(t).avx2;
                      kernels.vec_dot_panels = avx_vnni_panels(t);
                      return kernels;
                    }});
  }
  if (cpu.has_avx512_kernels()) sets.push_back({"avx512", [](TensorType t) { return type_traits(t).avx512; }});
  if (cpu.has_amx_kernels()) {
    sets.push_back({"amx", [](TensorType t) {
                      SimdKernels kernels = type_traits(t).avx512;
                      kernels.vec_dot_panels = amx_panels(t);
                      if (t == TensorType::kQ6_K) kernels.vec_dot_matrix = amx::vec_dot_matrix_q6_K_q8_K;
                      return kernels;
                    }});
  }
#endif
  std::printf("[ kernels  ] panel kernels run:");
  for (const PanelSet& set : sets) std::printf(" %s", set.name);
  std::printf("%s\n", sets.empty() ? " none (no panel kernels for this CPU)" : "");
  return sets;
}

TEST(PanelLayout, PanelKernelMatchesRowKernelBitForBit) {
  const std::vector<PanelSet> sets = panel_sets();
  for (TensorType type : kPackedTypes) {
    const TensorType input_type = type_traits(type).vec_dot_type;
    // 48 rows: an odd number of panels (two at a time, then one); 16 tokens: balanced
    // tiles of two panels (6, 5, 5).
    const std::vector<std::pair<int64_t, int64_t>> shapes =
        is_k_quant(type) ? std::vector<std::pair<int64_t, int64_t>>{{64, 256}, {48, 768}, {64, 2048}, {32, 5120}}
                         : std::vector<std::pair<int64_t, int64_t>>{{64, 32}, {64, 64}, {64, 128}, {64, 640}, {48, 640}, {64, 2048}, {32, 2880}};
    for (const auto& [n_rows, n_cols] : shapes) {
      const Matrix m = random_matrix(type, n_rows, n_cols, 11);
      std::vector<uint8_t> packed(m.rows.size());
      pack_panels(type, m.rows.data(), m.n_rows, m.row_bytes, packed.data());
      const size_t input_bytes = row_size(input_type, n_cols);
      // 16, 20, 70: whole AMX tiles of 16 and the rest beside them.
      for (const int64_t n_tokens : {1, 2, 3, 5, 6, 7, 8, 13, 16, 20, 70}) {
        std::vector<uint8_t> input(input_bytes * static_cast<size_t>(n_tokens));
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> x =
              testing::random_normal(static_cast<size_t>(n_cols), 100 + static_cast<uint32_t>(t));
          quantize_row_ref(input_type, x.data(), input.data() + t * input_bytes, n_cols);
        }
        std::vector<float> first_set;
        for (const PanelSet& set : sets) {
          const SimdKernels kernels = set.kernels(type);
          if (!every_set_has(type) && kernels.vec_dot_panels == nullptr) continue;  // e.g. AVX-VNNI, AMX
          ASSERT_NE(kernels.vec_dot_panels, nullptr) << set.name << " " << type_traits(type).name;
          std::vector<float> expected(static_cast<size_t>(m.n_rows * n_tokens)), got(expected.size());
          // The set's row-major path: its matrix kernel, else its rows kernel per weight row.
          const DotKernel row_major{kernels.vec_dot, kernels.vec_dot_rows, kernels.vec_dot_matrix, set.name};
          row_major.dot_matrix(n_cols, m.rows.data(), m.row_bytes, m.n_rows, input.data(), input_bytes, n_tokens,
                               expected.data(), m.n_rows);
          kernels.vec_dot_panels(n_cols, packed.data(), m.n_rows, input.data(), input_bytes, n_tokens, got.data(),
                                 m.n_rows, nullptr);
          if (kernels.vec_dot_panels_unprefetched != nullptr) {  // a tuning variant: the same bits
            std::vector<float> variant(expected.size());
            kernels.vec_dot_panels_unprefetched(n_cols, packed.data(), m.n_rows, input.data(), input_bytes, n_tokens,
                                                variant.data(), m.n_rows, nullptr);
            ASSERT_EQ(std::memcmp(variant.data(), got.data(), got.size() * sizeof(float)), 0)
                << set.name << " " << type_traits(type).name << " without prefetch, " << n_tokens << " tokens";
          }
          const std::string where = std::string(set.name) + " " + std::string(type_traits(type).name) + ": " +
                                    std::to_string(n_rows) + " x " + std::to_string(n_cols) + ", " +
                                    std::to_string(n_tokens) + " tokens";
          ASSERT_EQ(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)), 0) << where;
          // One row alone through vec_dot: the same bits again.
          EXPECT_EQ(kernels.vec_dot(n_cols, m.rows.data() + (n_rows - 1) * m.row_bytes,
                                    input.data() + (n_tokens - 1) * input_bytes),
                    got[static_cast<size_t>((n_tokens - 1) * m.n_rows + n_rows - 1)])
              << where;
          // Every instruction set gives the same bits.
          if (first_set.empty()) {
            first_set = got;
          } else {
            ASSERT_EQ(std::memcmp(first_set.data(), got.data(), got.size() * sizeof(float)), 0) << where << " vs " << sets[0].name;
          }
        }
      }
    }
  }
}

// Q6_K rows in the file's layout (the matrix kernels, packing panels per call; on AMX
// whole tiles of 16 tokens) in a row count that leaves a partial panel, and token counts
// past one staged block of 64: every result has vec_dot's bits, for each panel set's
// kernels and the dispatched ones (every CPU has those).
TEST(PanelLayout, Q6KMatrixKernelsOnPartialPanelsMatchVecDot) {
  const Matrix m = random_matrix(TensorType::kQ6_K, 37, 512, 23);
  const size_t input_bytes = row_size(TensorType::kQ8_K, m.n_cols);
  std::vector<std::pair<std::string, DotKernel>> kernel_sets;
  for (const PanelSet& set : panel_sets()) {
    const SimdKernels kernels = set.kernels(TensorType::kQ6_K);
    if (kernels.vec_dot_matrix != nullptr) {
      kernel_sets.emplace_back(set.name, DotKernel{kernels.vec_dot, kernels.vec_dot_rows, kernels.vec_dot_matrix, set.name});
    }
  }
  kernel_sets.emplace_back("dispatched", best_dot_kernel(TensorType::kQ6_K));
  for (const int64_t n_tokens : {5, 16, 35, 70, 129}) {
    std::vector<uint8_t> input(input_bytes * static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::vector<float> x = testing::random_normal(static_cast<size_t>(m.n_cols), 500 + static_cast<uint32_t>(t));
      x[static_cast<size_t>(t % m.n_cols)] = t % 2 ? 40.0f : -40.0f;  // quants of -128 / 127 in that block
      quantize_row_ref(TensorType::kQ8_K, x.data(), input.data() + t * input_bytes, m.n_cols);
    }
    for (const auto& [name, kernel] : kernel_sets) {
      const int64_t out_stride = m.n_rows + 3;
      std::vector<float> out(static_cast<size_t>(out_stride * n_tokens), -1.0f);
      kernel.dot_matrix(m.n_cols, m.rows.data(), m.row_bytes, m.n_rows, input.data(), input_bytes, n_tokens,
                        out.data(), out_stride);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < m.n_rows; ++r) {
          const float expected = kernel.vec_dot(m.n_cols, m.rows.data() + r * m.row_bytes, input.data() + t * input_bytes);
          ASSERT_EQ(testing::bits_of(out[static_cast<size_t>(t * out_stride + r)]), testing::bits_of(expected))
              << name << ", " << n_tokens << " tokens: row " << r << " token " << t;
        }
        EXPECT_EQ(out[static_cast<size_t>(t * out_stride + m.n_rows)], -1.0f) << name << ": a store past the last row";
      }
    }
  }
}

TEST(PanelLayout, PanelKernelFoldsEachTokensFirstLargestResult) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (const PanelSet& set : panel_sets()) {
  for (TensorType type : kPackedTypes) {
    const VecDotPanelsFn panels = set.kernels(type).vec_dot_panels;
    if (panels == nullptr) continue;  // e.g. no K-quant panels: AVX-VNNI, AMX
    const TensorType input_type = type_traits(type).vec_dot_type;
    const int64_t n_rows = 96, n_cols = is_k_quant(type) ? 512 : 640;
    Matrix m = random_matrix(type, n_rows, n_cols, 5);
    // Rows 70 and 90 repeat row 7: whenever row 7 holds a token's largest result, the
    // first of the three equal ones must be named.
    for (const int64_t copy : {70, 90}) {
      std::memcpy(m.rows.data() + copy * m.row_bytes, m.rows.data() + 7 * m.row_bytes, m.row_bytes);
    }
    std::vector<uint8_t> packed(m.rows.size());
    pack_panels(type, m.rows.data(), m.n_rows, m.row_bytes, packed.data());
    const size_t input_bytes = row_size(input_type, n_cols);
    for (const int64_t n_tokens : {1, 6, 16, 37, 70}) {
      std::vector<uint8_t> input(input_bytes * static_cast<size_t>(n_tokens));
      std::vector<float> x0;
      for (int64_t t = 0; t < n_tokens; ++t) {
        // Token t aligned with row 7 when t is even, so that its copies tie for the top.
        std::vector<float> x = testing::random_normal(static_cast<size_t>(n_cols), 300 + static_cast<uint32_t>(t));
        if (t % 2 == 0) {
          std::vector<float> row7(static_cast<size_t>(n_cols));
          type_traits(type).dequantize_row(m.rows.data() + 7 * m.row_bytes, row7.data(), n_cols);
          for (int64_t i = 0; i < n_cols; ++i) x[i] = 0.1f * x[i] + row7[i] * 100.0f;
        }
        quantize_row_ref(input_type, x.data(), input.data() + t * input_bytes, n_cols);
      }
      std::vector<float> out(static_cast<size_t>(n_rows * n_tokens));
      // Two calls over halves of the rows, the second continuing the first's maxima.
      std::vector<RunningMax> maxima(static_cast<size_t>(n_tokens), RunningMax{kNegInf, -1});
      panels(n_cols, packed.data(), 48, input.data(), input_bytes, n_tokens, out.data(), n_rows, maxima.data());
      std::vector<RunningMax> second(static_cast<size_t>(n_tokens), RunningMax{kNegInf, -1});
      panels(n_cols, packed.data() + 48 * m.row_bytes, 48, input.data(), input_bytes, n_tokens, out.data() + 48,
             n_rows, second.data());
      for (int64_t t = 0; t < n_tokens; ++t) {
        const std::span<const float> row(out.data() + t * n_rows, static_cast<size_t>(n_rows));
        const int32_t expected = first_max_index(row);
        const RunningMax& a = maxima[static_cast<size_t>(t)];
        const RunningMax& b = second[static_cast<size_t>(t)];
        const int32_t got = b.value > a.value ? 48 + b.column : a.column;
        EXPECT_EQ(got, expected) << set.name << " " << type_traits(type).name << ", token " << t << " of " << n_tokens;
        EXPECT_EQ(a.value, *std::max_element(row.begin(), row.begin() + 48));
        if (t % 2 == 0) {
          EXPECT_EQ(expected, 7) << type_traits(type).name << ", token " << t;
          EXPECT_EQ(b.column, 70 - 48) << "the first of the second half's tied rows 70 and 90";
          EXPECT_EQ(b.value, a.value);
        }
      }
    }
  }
  }
}

TEST(PanelLayout, Iq4XsPanelsOnEveryScaleAndCode) {
  // Random bytes: every stored scale 0 .. 63 (factor -32 .. 31) and every code, with d a
  // finite F16 of either sign; against the reference and the row kernels.
  constexpr int64_t kRows = 32, kCols = 2048;
  const size_t row_bytes = row_size(TensorType::kIQ4_XS, kCols);
  std::vector<uint8_t> rows(row_bytes * kRows);
  uint32_t state = 12345;
  for (uint8_t& byte : rows) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<uint8_t>(state >> 24);
  }
  auto* blocks = reinterpret_cast<BlockIQ4_XS*>(rows.data());
  for (int64_t b = 0; b < kRows * kCols / kSuperBlockSize; ++b) {
    blocks[b].d = static_cast<uint16_t>((b % 2 == 0 ? 0x3000 : 0xb000) | (blocks[b].d & 0x0fff));
  }
  std::vector<uint8_t> packed(rows.size());
  pack_panels(TensorType::kIQ4_XS, rows.data(), kRows, row_bytes, packed.data());
  const size_t input_bytes = row_size(TensorType::kQ8_K, kCols);
  for (const PanelSet& set : panel_sets()) {
    const SimdKernels kernels = set.kernels(TensorType::kIQ4_XS);
    if (kernels.vec_dot_panels == nullptr) continue;  // AVX2: row kernels only
    for (const int64_t n_tokens : {1, 9}) {
      std::vector<uint8_t> input(input_bytes * static_cast<size_t>(n_tokens));
      for (int64_t t = 0; t < n_tokens; ++t) {
        const std::vector<float> x = testing::random_normal(kCols, 900 + static_cast<uint32_t>(t));
        quantize_row_ref(TensorType::kQ8_K, x.data(), input.data() + t * input_bytes, kCols);
      }
      std::vector<float> got(static_cast<size_t>(kRows * n_tokens));
      kernels.vec_dot_panels(kCols, packed.data(), kRows, input.data(), input_bytes, n_tokens, got.data(), kRows,
                             nullptr);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < kRows; ++r) {
          const float expected = type_traits(TensorType::kIQ4_XS)
                                     .vec_dot_ref(kCols, rows.data() + r * row_bytes, input.data() + t * input_bytes);
          ASSERT_EQ(got[static_cast<size_t>(t * kRows + r)], expected)
              << set.name << " row " << r << ", token " << t << " of " << n_tokens;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tokenmill::quant

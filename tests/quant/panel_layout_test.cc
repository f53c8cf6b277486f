// quant/panel_layout.h: packing Q8_0, Q4_0 and Q5_0 rows into 16-row panels loses
// nothing, and the AVX-512 kernels that read panels give the row-major kernels' results
// bit for bit.

#include "quant/panel_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "base/cpu_features.h"
#include "quant/kernels/dispatch.h"
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

constexpr TensorType kPackedTypes[] = {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ5_0};

TEST(PanelLayout, LegacyZeroTypesOnly) {
  for (TensorType type : kPackedTypes) EXPECT_TRUE(has_panel_layout(type));
  EXPECT_FALSE(has_panel_layout(TensorType::kQ4_1));
  EXPECT_FALSE(has_panel_layout(TensorType::kQ4_K));
  EXPECT_FALSE(has_panel_layout(TensorType::kF16));
}

TEST(PanelLayout, PackedRowsDequantizeToTheSameFloats) {
  for (TensorType type : kPackedTypes) {
    const Matrix m = random_matrix(type, 48, 640, 7);
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

TEST(PanelLayout, PanelKernelMatchesRowKernelBitForBit) {
  if (!cpu_features().has_avx512_kernels()) {
    std::printf("[ kernels  ] panel kernel: not run, this CPU lacks the AVX-512 kernels\n");
    return;
  }
  for (TensorType type : kPackedTypes) {
    const VecDotPanelsFn panels = best_panel_kernel(type);
    const VecDotMatrixFn matrix = type_traits(type).avx512.vec_dot_matrix;
    ASSERT_NE(panels, nullptr) << type_traits(type).name;
    // 48 rows: an odd number of panels (two at a time, then one); 16 tokens: balanced
    // tiles of two panels (6, 5, 5).
    for (const auto& [n_rows, n_cols] : {std::pair<int64_t, int64_t>{64, 32}, {64, 640}, {48, 640}, {64, 2048}}) {
      const Matrix m = random_matrix(type, n_rows, n_cols, 11);
      std::vector<uint8_t> packed(m.rows.size());
      pack_panels(type, m.rows.data(), m.n_rows, m.row_bytes, packed.data());
      const size_t input_bytes = row_size(TensorType::kQ8_0, n_cols);
      for (const int64_t n_tokens : {1, 2, 6, 7, 8, 13, 16, 70}) {
        std::vector<uint8_t> input(input_bytes * static_cast<size_t>(n_tokens));
        for (int64_t t = 0; t < n_tokens; ++t) {
          const std::vector<float> x =
              testing::random_normal(static_cast<size_t>(n_cols), 100 + static_cast<uint32_t>(t));
          quantize_row_ref(TensorType::kQ8_0, x.data(), input.data() + t * input_bytes, n_cols);
        }
        std::vector<float> expected(static_cast<size_t>(m.n_rows * n_tokens)), got(expected.size());
        matrix(n_cols, m.rows.data(), m.row_bytes, m.n_rows, input.data(), input_bytes, n_tokens, expected.data(),
               m.n_rows);
        panels(n_cols, packed.data(), m.n_rows, input.data(), input_bytes, n_tokens, got.data(), m.n_rows);
        ASSERT_EQ(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)), 0)
            << type_traits(type).name << ": " << n_rows << " x " << n_cols << ", " << n_tokens << " tokens";
      }
    }
  }
}

}  // namespace
}  // namespace tokenmill::quant

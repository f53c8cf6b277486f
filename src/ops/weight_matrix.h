// A 2-D weight tensor as it lies in the model file (or in a repacked copy).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace tokenmill::ops {

// Row r holds the weights of output feature r: W[r, 0..n_cols).
struct WeightMatrix {
  gguf::TensorType type = gguf::TensorType::kF32;
  const uint8_t* data = nullptr;  // [n_rows, row_bytes]
  int64_t n_cols = 0;             // input features (the contiguous dimension)
  int64_t n_rows = 0;             // output features
  size_t row_bytes = 0;
  // Rows stored in quant/panel_layout.h's 16-row panels (repacked at load for the kernels
  // that read them); row() does not apply then: read rows through the back end.
  bool panels = false;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  // Bytes a pass over every row reads (panels hold the same bytes).
  int64_t n_bytes() const { return static_cast<int64_t>(row_bytes) * n_rows; }
};

}  // namespace tokenmill::ops

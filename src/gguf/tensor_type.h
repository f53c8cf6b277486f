// The tensor element types GGUF files use, with ggml's numeric ids, and the two facts
// the file reader needs to validate sizes: elements per block and bytes per block.
// Everything else about a format (quantize, dequantize, kernels) lives in quant/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tokenmill::gguf {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct TensorTypeLayout {
  TensorType type;
  std::string_view name;     // as llama.cpp prints it: "q4_K", "f16"
  uint32_t block_size;       // elements per block (1 for plain types)
  uint32_t bytes_per_block;
};

// nullopt for ids we do not know (the file is then unsupported, not corrupt).
std::optional<TensorTypeLayout> tensor_type_layout(uint32_t type_id);
std::string_view tensor_type_name(TensorType type);
// Parses "q4_K", "Q4_K", "f16" ...; nullopt if unknown.
std::optional<TensorType> tensor_type_from_name(std::string_view name);

// Bytes of one row of n_elements; nullopt if n_elements is not a multiple of the block.
std::optional<size_t> row_bytes(TensorType type, int64_t n_elements);

}  // namespace tokenmill::gguf

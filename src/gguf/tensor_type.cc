#include "gguf/tensor_type.h"

#include <array>
#include <cctype>
#include <string>

namespace tokenmill::gguf {

namespace {

// Every type a GGUF file may hold that we can size, whether or not quant/ implements it:
// a file with a type quant/ lacks then parses, and loading names the type.
constexpr std::array<TensorTypeLayout, 32> kLayouts = {{
    {TensorType::kF32, "f32", 1, 4},
    {TensorType::kF16, "f16", 1, 2},
    {TensorType::kQ4_0, "q4_0", 32, 18},
    {TensorType::kQ4_1, "q4_1", 32, 20},
    {TensorType::kQ5_0, "q5_0", 32, 22},
    {TensorType::kQ5_1, "q5_1", 32, 24},
    {TensorType::kQ8_0, "q8_0", 32, 34},
    {TensorType::kQ8_1, "q8_1", 32, 36},
    {TensorType::kQ2_K, "q2_K", 256, 84},
    {TensorType::kQ3_K, "q3_K", 256, 110},
    {TensorType::kQ4_K, "q4_K", 256, 144},
    {TensorType::kQ5_K, "q5_K", 256, 176},
    {TensorType::kQ6_K, "q6_K", 256, 210},
    {TensorType::kQ8_K, "q8_K", 256, 292},
    {TensorType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {TensorType::kIQ2_XS, "iq2_xs", 256, 74},
    {TensorType::kIQ3_XXS, "iq3_xxs", 256, 98},
    {TensorType::kIQ1_S, "iq1_s", 256, 50},
    {TensorType::kIQ4_NL, "iq4_nl", 32, 18},
    {TensorType::kIQ3_S, "iq3_s", 256, 110},
    {TensorType::kIQ2_S, "iq2_s", 256, 82},
    {TensorType::kIQ4_XS, "iq4_xs", 256, 136},
    {TensorType::kI8, "i8", 1, 1},
    {TensorType::kI16, "i16", 1, 2},
    {TensorType::kI32, "i32", 1, 4},
    {TensorType::kI64, "i64", 1, 8},
    {TensorType::kF64, "f64", 1, 8},
    {TensorType::kIQ1_M, "iq1_m", 256, 56},
    {TensorType::kBF16, "bf16", 1, 2},
    {TensorType::kTQ1_0, "tq1_0", 256, 54},
    {TensorType::kTQ2_0, "tq2_0", 256, 66},
    {TensorType::kMXFP4, "mxfp4", 32, 17},
}};

}  // namespace

std::optional<TensorTypeLayout> tensor_type_layout(uint32_t type_id) {
  for (const auto& layout : kLayouts) {
    if (static_cast<uint32_t>(layout.type) == type_id) return layout;
  }
  return std::nullopt;
}

std::string_view tensor_type_name(TensorType type) {
  auto layout = tensor_type_layout(static_cast<uint32_t>(type));
  return layout ? layout->name : std::string_view("unknown");
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& layout : kLayouts) {
    if (layout.name.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) !=
          std::tolower(static_cast<unsigned char>(layout.name[i]))) {
        same = false;
        break;
      }
    }
    if (same) return layout.type;
  }
  return std::nullopt;
}

std::optional<size_t> row_bytes(TensorType type, int64_t n_elements) {
  auto layout = tensor_type_layout(static_cast<uint32_t>(type));
  if (!layout || n_elements < 0 || n_elements % layout->block_size != 0) return std::nullopt;
  return static_cast<size_t>(n_elements / layout->block_size) * layout->bytes_per_block;
}

}  // namespace tokenmill::gguf

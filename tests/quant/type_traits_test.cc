#include "quant/type_traits.h"

#include <gtest/gtest.h>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

TEST(TypeTraits, AgreesWithGgufLayouts) {
  for (const TypeTraits& traits : all_type_traits()) {
    SCOPED_TRACE(std::string(traits.name));
    auto layout = gguf::tensor_type_layout(static_cast<uint32_t>(traits.type));
    ASSERT_TRUE(layout.has_value());
    EXPECT_EQ(layout->name, traits.name);
    EXPECT_EQ(layout->block_size, traits.block_size);
    EXPECT_EQ(layout->bytes_per_block, traits.bytes_per_block);
    EXPECT_NE(traits.dequantize_row, nullptr);
    EXPECT_NE(traits.quantize_row_ref, nullptr);  // every type is written as well as read
    EXPECT_EQ(&type_traits(traits.type), &traits);
  }
}

TEST(TypeTraits, VecDotTypesMatchGgmlCpuBackend) {
  struct Expected {
    TensorType weight, activation;
  };
  const Expected expected[] = {
      {TensorType::kF32, TensorType::kF32},   {TensorType::kF16, TensorType::kF16},
      {TensorType::kBF16, TensorType::kBF16}, {TensorType::kQ4_0, TensorType::kQ8_0},
      {TensorType::kQ4_1, TensorType::kQ8_1}, {TensorType::kQ5_0, TensorType::kQ8_0},
      {TensorType::kQ5_1, TensorType::kQ8_1}, {TensorType::kQ8_0, TensorType::kQ8_0},
      {TensorType::kQ2_K, TensorType::kQ8_K}, {TensorType::kQ3_K, TensorType::kQ8_K},
      {TensorType::kQ4_K, TensorType::kQ8_K}, {TensorType::kQ5_K, TensorType::kQ8_K},
      {TensorType::kQ6_K, TensorType::kQ8_K},
      {TensorType::kIQ4_NL, TensorType::kQ8_0}, {TensorType::kIQ4_XS, TensorType::kQ8_K},
      {TensorType::kMXFP4, TensorType::kQ8_0},
      {TensorType::kIQ2_XXS, TensorType::kQ8_K}, {TensorType::kIQ2_XS, TensorType::kQ8_K},
      {TensorType::kIQ2_S, TensorType::kQ8_K},   {TensorType::kIQ3_XXS, TensorType::kQ8_K},
      {TensorType::kIQ3_S, TensorType::kQ8_K},   {TensorType::kIQ1_S, TensorType::kQ8_K},
      {TensorType::kIQ1_M, TensorType::kQ8_K},   {TensorType::kTQ1_0, TensorType::kQ8_K},
      {TensorType::kTQ2_0, TensorType::kQ8_K},
  };
  for (const Expected& e : expected) {
    const TypeTraits& traits = type_traits(e.weight);
    SCOPED_TRACE(std::string(traits.name));
    EXPECT_EQ(traits.vec_dot_type, e.activation);
    EXPECT_NE(traits.vec_dot_ref, nullptr);
  }
  EXPECT_EQ(type_traits(TensorType::kQ8_1).vec_dot_ref, nullptr);
  EXPECT_EQ(type_traits(TensorType::kQ8_K).vec_dot_ref, nullptr);
}

TEST(TypeTraits, CoversExactlyTheTwentySevenTypes) {
  EXPECT_EQ(all_type_traits().size(), 27u);
  EXPECT_EQ(find_type_traits(TensorType::kI8), nullptr);  // sized by gguf/, not implemented here
  EXPECT_EQ(find_type_traits(TensorType::kI32), nullptr);
  EXPECT_EQ(find_type_traits(TensorType::kF64), nullptr);
  EXPECT_TRUE(type_traits(TensorType::kQ4_K).is_quantized);
  EXPECT_FALSE(type_traits(TensorType::kBF16).is_quantized);
}

}  // namespace
}  // namespace tokenmill::quant

#include "quant/type_traits.h"

#include <array>
#include <cassert>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

// Per-instruction-set columns: {vec_dot, vec_dot_rows, quantize_row}.
constexpr SimdKernels kNoKernels{};
constexpr SimdKernels kAvx2F32{avx2::vec_dot_f32, nullptr, nullptr};
constexpr SimdKernels kAvx512F32{avx512::vec_dot_f32, nullptr, nullptr};
constexpr SimdKernels kAvx2F16{avx2::vec_dot_f16, nullptr, nullptr};
constexpr SimdKernels kAvx512F16{avx512::vec_dot_f16, nullptr, nullptr};
constexpr SimdKernels kAvx2BF16{avx2::vec_dot_bf16, nullptr, nullptr};
constexpr SimdKernels kAvx512BF16{avx512::vec_dot_bf16, nullptr, nullptr};
constexpr SimdKernels kAvx2Q4_1{avx2::vec_dot_q4_1_q8_1, avx2::vec_dot_rows_q4_1_q8_1, nullptr};
constexpr SimdKernels kAvx2Q5_1{avx2::vec_dot_q5_1_q8_1, avx2::vec_dot_rows_q5_1_q8_1, nullptr};
constexpr SimdKernels kAvx2Q4_0{avx2::vec_dot_q4_0_q8_0, avx2::vec_dot_rows_q4_0_q8_0, nullptr, nullptr,
                                avx2::vec_dot_panels_q4_0_q8_0};
constexpr SimdKernels kAvx512Q4_0{avx512::vec_dot_q4_0_q8_0, avx512::vec_dot_rows_q4_0_q8_0, nullptr,
                                  avx512::vec_dot_matrix_q4_0_q8_0, avx512::vec_dot_panels_q4_0_q8_0};
constexpr SimdKernels kAvx512Q4_1{avx512::vec_dot_q4_1_q8_1, avx512::vec_dot_rows_q4_1_q8_1, nullptr,
                                  avx512::vec_dot_matrix_q4_1_q8_1};
constexpr SimdKernels kAvx512Q5_1{avx512::vec_dot_q5_1_q8_1, avx512::vec_dot_rows_q5_1_q8_1, nullptr,
                                  avx512::vec_dot_matrix_q5_1_q8_1};
constexpr SimdKernels kAvx2Q5_0{avx2::vec_dot_q5_0_q8_0, avx2::vec_dot_rows_q5_0_q8_0, nullptr, nullptr,
                                avx2::vec_dot_panels_q5_0_q8_0};
constexpr SimdKernels kAvx512Q5_0{avx512::vec_dot_q5_0_q8_0, avx512::vec_dot_rows_q5_0_q8_0, nullptr,
                                  avx512::vec_dot_matrix_q5_0_q8_0, avx512::vec_dot_panels_q5_0_q8_0};
constexpr SimdKernels kAvx2Q8_0{avx2::vec_dot_q8_0_q8_0, avx2::vec_dot_rows_q8_0_q8_0, avx2::quantize_row_q8_0, nullptr,
                                avx2::vec_dot_panels_q8_0_q8_0};
constexpr SimdKernels kAvx512Q8_0{avx512::vec_dot_q8_0_q8_0, avx512::vec_dot_rows_q8_0_q8_0,
                                  avx512::quantize_row_q8_0, avx512::vec_dot_matrix_q8_0_q8_0,
                                  avx512::vec_dot_panels_q8_0_q8_0};
constexpr SimdKernels kAvx2Q2_K{avx2::vec_dot_q2_K_q8_K, nullptr, nullptr};
constexpr SimdKernels kAvx512Q2_K{avx512::vec_dot_q2_K_q8_K, avx512::vec_dot_rows_q2_K_q8_K, nullptr,
                                  avx512::vec_dot_matrix_q2_K_q8_K};
constexpr SimdKernels kAvx2Q3_K{avx2::vec_dot_q3_K_q8_K, nullptr, nullptr};
constexpr SimdKernels kAvx512Q3_K{avx512::vec_dot_q3_K_q8_K, avx512::vec_dot_rows_q3_K_q8_K, nullptr,
                                  avx512::vec_dot_matrix_q3_K_q8_K};
constexpr SimdKernels kAvx2Q4_K{avx2::vec_dot_q4_K_q8_K, avx2::vec_dot_rows_q4_K_q8_K, nullptr,
                                avx2::vec_dot_matrix_q4_K_q8_K};
constexpr SimdKernels kAvx512Q4_K{avx512::vec_dot_q4_K_q8_K, avx512::vec_dot_rows_q4_K_q8_K, nullptr,
                                  avx512::vec_dot_matrix_q4_K_q8_K};
constexpr SimdKernels kAvx2Q5_K{avx2::vec_dot_q5_K_q8_K, avx2::vec_dot_rows_q5_K_q8_K, nullptr,
                                avx2::vec_dot_matrix_q5_K_q8_K};
constexpr SimdKernels kAvx512Q5_K{avx512::vec_dot_q5_K_q8_K, avx512::vec_dot_rows_q5_K_q8_K, nullptr,
                                  avx512::vec_dot_matrix_q5_K_q8_K};
constexpr SimdKernels kAvx2Q6_K{avx2::vec_dot_q6_K_q8_K, avx2::vec_dot_rows_q6_K_q8_K, nullptr,
                                avx2::vec_dot_matrix_q6_K_q8_K};
constexpr SimdKernels kAvx512Q6_K{avx512::vec_dot_q6_K_q8_K, avx512::vec_dot_rows_q6_K_q8_K, nullptr,
                                  avx512::vec_dot_matrix_q6_K_q8_K};
constexpr SimdKernels kAvx2Q8_K{nullptr, nullptr, avx2::quantize_row_q8_K};
constexpr SimdKernels kAvx512Q8_K{nullptr, nullptr, avx512::quantize_row_q8_K};

// Ordered by ggml type id. vec_dot_type follows ggml's x86 CPU backend: legacy _0 types
// and Q8_0 multiply against Q8_0, _1 types against Q8_1 (whose stored sum pays for the
// weight's minimum), every K-quant against Q8_K; float types keep their own format.
constexpr std::array<TypeTraits, 15> kTypeTraits = {{
    {TensorType::kF32, "f32", 1, sizeof(float), false, TensorType::kF32,
     ref::dequantize_row_f32, ref::quantize_row_f32, ref::vec_dot_f32,
     kAvx2F32, kAvx512F32},
    {TensorType::kF16, "f16", 1, sizeof(uint16_t), false, TensorType::kF16,
     ref::dequantize_row_f16, ref::quantize_row_f16, ref::vec_dot_f16,
     kAvx2F16, kAvx512F16},
    {TensorType::kQ4_0, "q4_0", kLegacyBlockSize, sizeof(BlockQ4_0), true, TensorType::kQ8_0,
     ref::dequantize_row_q4_0, ref::quantize_row_q4_0, ref::vec_dot_q4_0_q8_0,
     kAvx2Q4_0, kAvx512Q4_0},
    {TensorType::kQ4_1, "q4_1", kLegacyBlockSize, sizeof(BlockQ4_1), true, TensorType::kQ8_1,
     ref::dequantize_row_q4_1, ref::quantize_row_q4_1, ref::vec_dot_q4_1_q8_1,
     kAvx2Q4_1, kAvx512Q4_1},
    {TensorType::kQ5_0, "q5_0", kLegacyBlockSize, sizeof(BlockQ5_0), true, TensorType::kQ8_0,
     ref::dequantize_row_q5_0, ref::quantize_row_q5_0, ref::vec_dot_q5_0_q8_0,
     kAvx2Q5_0, kAvx512Q5_0},
    {TensorType::kQ5_1, "q5_1", kLegacyBlockSize, sizeof(BlockQ5_1), true, TensorType::kQ8_1,
     ref::dequantize_row_q5_1, ref::quantize_row_q5_1, ref::vec_dot_q5_1_q8_1,
     kAvx2Q5_1, kAvx512Q5_1},
    {TensorType::kQ8_0, "q8_0", kLegacyBlockSize, sizeof(BlockQ8_0), true, TensorType::kQ8_0,
     ref::dequantize_row_q8_0, ref::quantize_row_q8_0, ref::vec_dot_q8_0_q8_0,
     kAvx2Q8_0, kAvx512Q8_0},
    {TensorType::kQ8_1, "q8_1", kLegacyBlockSize, sizeof(BlockQ8_1), true, TensorType::kQ8_1,
     ref::dequantize_row_q8_1, ref::quantize_row_q8_1, nullptr,
     kNoKernels, kNoKernels},
    {TensorType::kQ2_K, "q2_K", kSuperBlockSize, sizeof(BlockQ2_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q2_K, ref::quantize_row_q2_K, ref::vec_dot_q2_K_q8_K,
     kAvx2Q2_K, kAvx512Q2_K},
    {TensorType::kQ3_K, "q3_K", kSuperBlockSize, sizeof(BlockQ3_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q3_K, ref::quantize_row_q3_K, ref::vec_dot_q3_K_q8_K,
     kAvx2Q3_K, kAvx512Q3_K},
    {TensorType::kQ4_K, "q4_K", kSuperBlockSize, sizeof(BlockQ4_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q4_K, ref::quantize_row_q4_K, ref::vec_dot_q4_K_q8_K,
     kAvx2Q4_K, kAvx512Q4_K},
    {TensorType::kQ5_K, "q5_K", kSuperBlockSize, sizeof(BlockQ5_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q5_K, ref::quantize_row_q5_K, ref::vec_dot_q5_K_q8_K,
     kAvx2Q5_K, kAvx512Q5_K},
    {TensorType::kQ6_K, "q6_K", kSuperBlockSize, sizeof(BlockQ6_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q6_K, ref::quantize_row_q6_K, ref::vec_dot_q6_K_q8_K,
     kAvx2Q6_K, kAvx512Q6_K},
    {TensorType::kQ8_K, "q8_K", kSuperBlockSize, sizeof(BlockQ8_K), true, TensorType::kQ8_K,
     ref::dequantize_row_q8_K, ref::quantize_row_q8_K, nullptr,
     kAvx2Q8_K, kAvx512Q8_K},
    {TensorType::kBF16, "bf16", 1, sizeof(uint16_t), false, TensorType::kBF16,
     ref::dequantize_row_bf16, ref::quantize_row_bf16, ref::vec_dot_bf16,
     kAvx2BF16, kAvx512BF16},
}};

}  // namespace

const TypeTraits* find_type_traits(gguf::TensorType type) {
  for (const TypeTraits& traits : kTypeTraits) {
    if (traits.type == type) return &traits;
  }
  return nullptr;
}

const TypeTraits& type_traits(gguf::TensorType type) {
  const TypeTraits* traits = find_type_traits(type);
  assert(traits != nullptr && "tensor type not implemented by quant/");
  return *traits;
}

std::span<const TypeTraits> all_type_traits() { return kTypeTraits; }

}  // namespace tokenmill::quant

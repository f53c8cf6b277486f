#include "quant/type_traits.h"

#include <array>
#include <cassert>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

// A set's kernels from the one dot product its files implement for a type; the other
// forms are that kernel with one row (the same bits: every form of a set is one
// algorithm). These thunks only call the kernel, so they are compiled without the set's
// instruction flags.
template <VecDotMatrixFn kMatrix>
float dot_by_matrix(int64_t n, const void* w, const void* a) {
  float result;
  kMatrix(n, w, 0, 1, a, 0, 1, &result, 0);
  return result;
}
template <VecDotMatrixFn kMatrix>
void rows_by_matrix(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
                    int64_t out_stride) {
  kMatrix(n, w, 0, 1, a, a_stride, n_a_rows, out, out_stride);
}
template <VecDotRowsFn kRows>
float dot_by_rows(int64_t n, const void* w, const void* a) {
  float result;
  kRows(n, w, a, 0, 1, &result, 0);
  return result;
}

template <VecDotMatrixFn kMatrix>
constexpr SimdKernels by_matrix(VecDotPanelsFn panels = nullptr, QuantizeRowFn quantize = nullptr,
                                VecDotPanelsFn panels_unprefetched = nullptr) {
  return {.vec_dot = dot_by_matrix<kMatrix>, .vec_dot_rows = rows_by_matrix<kMatrix>, .quantize_row = quantize,
          .vec_dot_matrix = kMatrix, .vec_dot_panels = panels, .vec_dot_panels_unprefetched = panels_unprefetched};
}
template <VecDotRowsFn kRows>
constexpr SimdKernels by_rows(VecDotMatrixFn matrix = nullptr, VecDotPanelsFn panels = nullptr,
                              QuantizeRowFn quantize = nullptr, VecDotPanelsFn panels_unprefetched = nullptr) {
  return {.vec_dot = dot_by_rows<kRows>, .vec_dot_rows = kRows, .quantize_row = quantize, .vec_dot_matrix = matrix,
          .vec_dot_panels = panels, .vec_dot_panels_unprefetched = panels_unprefetched};
}

// kernels with the grid-gathering forms of their rows and matrix kernels beside them (x86).
[[maybe_unused]] constexpr SimdKernels with_gathered(SimdKernels kernels, VecDotRowsFn rows, VecDotMatrixFn matrix) {
  kernels.vec_dot_rows_gathered = rows;
  kernels.vec_dot_matrix_gathered = matrix;
  return kernels;
}

// The x86 and arm64 columns of the table exist only where their kernel files are compiled
// (cmake/layers.cmake leaves them out of other targets); each macro brings its own comma.
#if defined(__x86_64__)
#define TM_X86_KERNELS(...) __VA_ARGS__,
#else
#define TM_X86_KERNELS(...)
#endif
#if defined(__aarch64__)
#define TM_ARM64_KERNELS(...) __VA_ARGS__,
#else
#define TM_ARM64_KERNELS(...)
#endif

// A column left out of an entry is empty: that set has no kernel for the type.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// Ordered by ggml type id. vec_dot_type follows ggml's x86 CPU backend: legacy _0 types,
// IQ4_NL, MXFP4 and Q8_0 multiply against Q8_0, _1 types against Q8_1 (whose stored sum pays for
// the weight's minimum), every K-quant, the lattice i-quants, IQ4_XS and the ternary types
// against Q8_K; float types keep their own format.
constexpr std::array<TypeTraits, 27> kTypeTraits = {{
    {.type = TensorType::kF32, .name = "f32", .block_size = 1, .bytes_per_block = sizeof(float),
     .is_quantized = false, .vec_dot_type = TensorType::kF32,
     .dequantize_row = ref::dequantize_row_f32, .quantize_row_ref = ref::quantize_row_f32,
     .vec_dot_ref = ref::vec_dot_f32,
     TM_X86_KERNELS(.avx2 = {.vec_dot = avx2::vec_dot_f32, .vec_dot_rows = avx2::vec_dot_rows_f32},
                    .avx512 = {.vec_dot = avx512::vec_dot_f32, .vec_dot_rows = avx512::vec_dot_rows_f32})
     TM_ARM64_KERNELS(.neon = {.vec_dot = neon::vec_dot_f32, .vec_dot_rows = neon::vec_dot_rows_f32})},
    {.type = TensorType::kF16, .name = "f16", .block_size = 1, .bytes_per_block = sizeof(uint16_t),
     .is_quantized = false, .vec_dot_type = TensorType::kF16,
     .dequantize_row = ref::dequantize_row_f16, .quantize_row_ref = ref::quantize_row_f16,
     .vec_dot_ref = ref::vec_dot_f16,
     TM_X86_KERNELS(.avx2 = {.vec_dot = avx2::vec_dot_f16, .vec_dot_rows = avx2::vec_dot_rows_f16},
                    .avx512 = {.vec_dot = avx512::vec_dot_f16, .vec_dot_rows = avx512::vec_dot_rows_f16})
     TM_ARM64_KERNELS(.neon = {.vec_dot = neon::vec_dot_f16, .vec_dot_rows = neon::vec_dot_rows_f16})},
    {.type = TensorType::kQ4_0, .name = "q4_0", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ4_0),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_0,
     .dequantize_row = ref::dequantize_row_q4_0, .quantize_row_ref = ref::quantize_row_q4_0,
     .vec_dot_ref = ref::vec_dot_q4_0_q8_0,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q4_0_q8_0>(nullptr, avx2::vec_dot_panels_q4_0_q8_0),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q4_0_q8_0>(avx512::vec_dot_panels_q4_0_q8_0))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q4_0_q8_0>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q4_0_q8_0>())},
    {.type = TensorType::kQ4_1, .name = "q4_1", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ4_1),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_1,
     .dequantize_row = ref::dequantize_row_q4_1, .quantize_row_ref = ref::quantize_row_q4_1,
     .vec_dot_ref = ref::vec_dot_q4_1_q8_1,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q4_1_q8_1>(),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q4_1_q8_1>())},
    {.type = TensorType::kQ5_0, .name = "q5_0", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ5_0),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_0,
     .dequantize_row = ref::dequantize_row_q5_0, .quantize_row_ref = ref::quantize_row_q5_0,
     .vec_dot_ref = ref::vec_dot_q5_0_q8_0,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q5_0_q8_0>(nullptr, avx2::vec_dot_panels_q5_0_q8_0),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q5_0_q8_0>(avx512::vec_dot_panels_q5_0_q8_0))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q5_0_q8_0>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q5_0_q8_0>())},
    {.type = TensorType::kQ5_1, .name = "q5_1", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ5_1),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_1,
     .dequantize_row = ref::dequantize_row_q5_1, .quantize_row_ref = ref::quantize_row_q5_1,
     .vec_dot_ref = ref::vec_dot_q5_1_q8_1,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q5_1_q8_1>(),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q5_1_q8_1>())},
    {.type = TensorType::kQ8_0, .name = "q8_0", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ8_0),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_0,
     .dequantize_row = ref::dequantize_row_q8_0, .quantize_row_ref = ref::quantize_row_q8_0,
     .vec_dot_ref = ref::vec_dot_q8_0_q8_0,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q8_0_q8_0>(nullptr, avx2::vec_dot_panels_q8_0_q8_0, avx2::quantize_row_q8_0),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q8_0_q8_0>(avx512::vec_dot_panels_q8_0_q8_0,
                                                            avx512::quantize_row_q8_0))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q8_0_q8_0>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q8_0_q8_0>())},
    {.type = TensorType::kQ8_1, .name = "q8_1", .block_size = kLegacyBlockSize, .bytes_per_block = sizeof(BlockQ8_1),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_1,
     .dequantize_row = ref::dequantize_row_q8_1, .quantize_row_ref = ref::quantize_row_q8_1,
     .vec_dot_ref = nullptr, TM_X86_KERNELS(.avx2 = {}, .avx512 = {})},
    {.type = TensorType::kQ2_K, .name = "q2_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ2_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q2_K, .quantize_row_ref = ref::quantize_row_q2_K,
     .vec_dot_ref = ref::vec_dot_q2_K_q8_K,
     TM_X86_KERNELS(.avx2 = {.vec_dot = avx2::vec_dot_q2_K_q8_K},
     .avx512 = by_matrix<avx512::vec_dot_matrix_q2_K_q8_K>())},
    {.type = TensorType::kQ3_K, .name = "q3_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ3_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q3_K, .quantize_row_ref = ref::quantize_row_q3_K,
     .vec_dot_ref = ref::vec_dot_q3_K_q8_K,
     TM_X86_KERNELS(.avx2 = {.vec_dot = avx2::vec_dot_q3_K_q8_K},
     .avx512 = by_matrix<avx512::vec_dot_matrix_q3_K_q8_K>())},
    {.type = TensorType::kQ4_K, .name = "q4_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ4_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q4_K, .quantize_row_ref = ref::quantize_row_q4_K,
     .vec_dot_ref = ref::vec_dot_q4_K_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q4_K_q8_K>(avx2::vec_dot_matrix_q4_K_q8_K, avx2::vec_dot_panels_q4_K_q8_K,
                                                        nullptr, avx2::vec_dot_panels_q4_K_q8_K_unprefetched),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q4_K_q8_K>(avx512::vec_dot_panels_q4_K_q8_K, nullptr,
                                                             avx512::vec_dot_panels_q4_K_q8_K_unprefetched))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q4_K_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q4_K_q8_K>())},
    {.type = TensorType::kQ5_K, .name = "q5_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ5_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q5_K, .quantize_row_ref = ref::quantize_row_q5_K,
     .vec_dot_ref = ref::vec_dot_q5_K_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q5_K_q8_K>(avx2::vec_dot_matrix_q5_K_q8_K, avx2::vec_dot_panels_q5_K_q8_K,
                                                        nullptr, avx2::vec_dot_panels_q5_K_q8_K_unprefetched),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q5_K_q8_K>(avx512::vec_dot_panels_q5_K_q8_K, nullptr,
                                                             avx512::vec_dot_panels_q5_K_q8_K_unprefetched))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q5_K_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q5_K_q8_K>())},
    {.type = TensorType::kQ6_K, .name = "q6_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ6_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q6_K, .quantize_row_ref = ref::quantize_row_q6_K,
     .vec_dot_ref = ref::vec_dot_q6_K_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_q6_K_q8_K>(avx2::vec_dot_matrix_q6_K_q8_K, avx2::vec_dot_panels_q6_K_q8_K,
                                                        nullptr, avx2::vec_dot_panels_q6_K_q8_K_unprefetched),
     .avx512 = by_matrix<avx512::vec_dot_matrix_q6_K_q8_K>(avx512::vec_dot_panels_q6_K_q8_K, nullptr,
                                                             avx512::vec_dot_panels_q6_K_q8_K_unprefetched))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_q6_K_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_q6_K_q8_K>())},
    {.type = TensorType::kQ8_K, .name = "q8_K", .block_size = kSuperBlockSize, .bytes_per_block = sizeof(BlockQ8_K),
     .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_q8_K, .quantize_row_ref = ref::quantize_row_q8_K,
     .vec_dot_ref = nullptr,
     TM_X86_KERNELS(.avx2 = {.quantize_row = avx2::quantize_row_q8_K}, .avx512 = {.quantize_row = avx512::quantize_row_q8_K})},
    {.type = TensorType::kIQ2_XXS, .name = "iq2_xxs", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ2_XXS), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq2_xxs, .quantize_row_ref = ref::quantize_row_iq2_xxs,
     .vec_dot_ref = ref::vec_dot_iq2_xxs_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq2_xxs_q8_K>(avx2::vec_dot_matrix_iq2_xxs_q8_K),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq2_xxs_q8_K>(avx512::vec_dot_matrix_iq2_xxs_q8_K))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq2_xxs_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq2_xxs_q8_K>())},
    {.type = TensorType::kIQ2_XS, .name = "iq2_xs", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ2_XS), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq2_xs, .quantize_row_ref = ref::quantize_row_iq2_xs,
     .vec_dot_ref = ref::vec_dot_iq2_xs_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq2_xs_q8_K>(avx2::vec_dot_matrix_iq2_xs_q8_K),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq2_xs_q8_K>(avx512::vec_dot_matrix_iq2_xs_q8_K))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq2_xs_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq2_xs_q8_K>())},
    {.type = TensorType::kIQ3_XXS, .name = "iq3_xxs", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ3_XXS), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq3_xxs, .quantize_row_ref = ref::quantize_row_iq3_xxs,
     .vec_dot_ref = ref::vec_dot_iq3_xxs_q8_K,
     TM_X86_KERNELS(.avx2 = with_gathered(by_rows<avx2::vec_dot_rows_iq3_xxs_q8_K>(avx2::vec_dot_matrix_iq3_xxs_q8_K),
                                         avx2::vec_dot_rows_iq3_xxs_q8_K_gathered, avx2::vec_dot_matrix_iq3_xxs_q8_K_gathered),
                    .avx512 = with_gathered(by_rows<avx512::vec_dot_rows_iq3_xxs_q8_K>(avx512::vec_dot_matrix_iq3_xxs_q8_K),
                                         avx512::vec_dot_rows_iq3_xxs_q8_K_gathered, avx512::vec_dot_matrix_iq3_xxs_q8_K_gathered))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq3_xxs_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq3_xxs_q8_K>())},
    {.type = TensorType::kIQ1_S, .name = "iq1_s", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ1_S), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq1_s, .quantize_row_ref = ref::quantize_row_iq1_s,
     .vec_dot_ref = ref::vec_dot_iq1_s_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq1_s_q8_K>(),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq1_s_q8_K>())
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq1_s_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq1_s_q8_K>())},
    {.type = TensorType::kIQ4_NL, .name = "iq4_nl", .block_size = kLegacyBlockSize,
     .bytes_per_block = sizeof(BlockIQ4_NL), .is_quantized = true, .vec_dot_type = TensorType::kQ8_0,
     .dequantize_row = ref::dequantize_row_iq4_nl, .quantize_row_ref = ref::quantize_row_iq4_nl,
     .vec_dot_ref = ref::vec_dot_iq4_nl_q8_0,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq4_nl_q8_0>(),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq4_nl_q8_0>())
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq4_nl_q8_0>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq4_nl_q8_0>())},
    {.type = TensorType::kIQ3_S, .name = "iq3_s", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ3_S), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq3_s, .quantize_row_ref = ref::quantize_row_iq3_s,
     .vec_dot_ref = ref::vec_dot_iq3_s_q8_K,
     TM_X86_KERNELS(.avx2 = with_gathered(by_rows<avx2::vec_dot_rows_iq3_s_q8_K>(avx2::vec_dot_matrix_iq3_s_q8_K),
                                         avx2::vec_dot_rows_iq3_s_q8_K_gathered, avx2::vec_dot_matrix_iq3_s_q8_K_gathered),
                    .avx512 = with_gathered(by_rows<avx512::vec_dot_rows_iq3_s_q8_K>(avx512::vec_dot_matrix_iq3_s_q8_K),
                                         avx512::vec_dot_rows_iq3_s_q8_K_gathered, avx512::vec_dot_matrix_iq3_s_q8_K_gathered))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq3_s_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq3_s_q8_K>())},
    {.type = TensorType::kIQ2_S, .name = "iq2_s", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ2_S), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq2_s, .quantize_row_ref = ref::quantize_row_iq2_s,
     .vec_dot_ref = ref::vec_dot_iq2_s_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq2_s_q8_K>(avx2::vec_dot_matrix_iq2_s_q8_K),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq2_s_q8_K>(avx512::vec_dot_matrix_iq2_s_q8_K))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq2_s_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq2_s_q8_K>())},
    {.type = TensorType::kIQ4_XS, .name = "iq4_xs", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ4_XS), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq4_xs, .quantize_row_ref = ref::quantize_row_iq4_xs,
     .vec_dot_ref = ref::vec_dot_iq4_xs_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq4_xs_q8_K>(nullptr, avx2::vec_dot_panels_iq4_xs_q8_K, nullptr,
                                                                   avx2::vec_dot_panels_iq4_xs_q8_K_unprefetched),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq4_xs_q8_K>(nullptr, avx512::vec_dot_panels_iq4_xs_q8_K, nullptr,
                                                                       avx512::vec_dot_panels_iq4_xs_q8_K_unprefetched))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq4_xs_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq4_xs_q8_K>())},
    {.type = TensorType::kIQ1_M, .name = "iq1_m", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockIQ1_M), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_iq1_m, .quantize_row_ref = ref::quantize_row_iq1_m,
     .vec_dot_ref = ref::vec_dot_iq1_m_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_iq1_m_q8_K>(),
                    .avx512 = by_rows<avx512::vec_dot_rows_iq1_m_q8_K>())
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_iq1_m_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_iq1_m_q8_K>())},
    {.type = TensorType::kBF16, .name = "bf16", .block_size = 1, .bytes_per_block = sizeof(uint16_t),
     .is_quantized = false, .vec_dot_type = TensorType::kBF16,
     .dequantize_row = ref::dequantize_row_bf16, .quantize_row_ref = ref::quantize_row_bf16,
     .vec_dot_ref = ref::vec_dot_bf16,
     TM_X86_KERNELS(.avx2 = {.vec_dot = avx2::vec_dot_bf16, .vec_dot_rows = avx2::vec_dot_rows_bf16},
                    .avx512 = {.vec_dot = avx512::vec_dot_bf16, .vec_dot_rows = avx512::vec_dot_rows_bf16})
     TM_ARM64_KERNELS(.neon = {.vec_dot = neon::vec_dot_bf16, .vec_dot_rows = neon::vec_dot_rows_bf16})},
    {.type = TensorType::kTQ1_0, .name = "tq1_0", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockTQ1_0), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_tq1_0, .quantize_row_ref = ref::quantize_row_tq1_0,
     .vec_dot_ref = ref::vec_dot_tq1_0_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_tq1_0_q8_K>(avx2::vec_dot_matrix_tq1_0_q8_K),
                    .avx512 = by_rows<avx512::vec_dot_rows_tq1_0_q8_K>(avx512::vec_dot_matrix_tq1_0_q8_K))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_tq1_0_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_tq1_0_q8_K>())},
    {.type = TensorType::kTQ2_0, .name = "tq2_0", .block_size = kSuperBlockSize,
     .bytes_per_block = sizeof(BlockTQ2_0), .is_quantized = true, .vec_dot_type = TensorType::kQ8_K,
     .dequantize_row = ref::dequantize_row_tq2_0, .quantize_row_ref = ref::quantize_row_tq2_0,
     .vec_dot_ref = ref::vec_dot_tq2_0_q8_K,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_tq2_0_q8_K>(avx2::vec_dot_matrix_tq2_0_q8_K),
                    .avx512 = by_rows<avx512::vec_dot_rows_tq2_0_q8_K>(avx512::vec_dot_matrix_tq2_0_q8_K))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_tq2_0_q8_K>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_tq2_0_q8_K>())},
    {.type = TensorType::kMXFP4, .name = "mxfp4", .block_size = kLegacyBlockSize,
     .bytes_per_block = sizeof(BlockMXFP4), .is_quantized = true, .vec_dot_type = TensorType::kQ8_0,
     .dequantize_row = ref::dequantize_row_mxfp4, .quantize_row_ref = ref::quantize_row_mxfp4,
     .vec_dot_ref = ref::vec_dot_mxfp4_q8_0,
     TM_X86_KERNELS(.avx2 = by_rows<avx2::vec_dot_rows_mxfp4_q8_0>(nullptr, avx2::vec_dot_panels_mxfp4_q8_0),
                    .avx512 = by_rows<avx512::vec_dot_rows_mxfp4_q8_0>(nullptr, avx512::vec_dot_panels_mxfp4_q8_0))
     TM_ARM64_KERNELS(.neon = by_rows<neon::vec_dot_rows_mxfp4_q8_0>(),
                      .neon_dotprod = by_rows<neon_dotprod::vec_dot_rows_mxfp4_q8_0>())},
}};
#pragma GCC diagnostic pop

// ggml type id -> position in kTypeTraits, or -1: one array read per lookup.
constexpr size_t kIdCount = 40;
constexpr std::array<int8_t, kIdCount> kPositionOfId = [] {
  std::array<int8_t, kIdCount> position{};
  for (int8_t& p : position) p = -1;
  for (size_t i = 0; i < kTypeTraits.size(); ++i) position[static_cast<size_t>(kTypeTraits[i].type)] = static_cast<int8_t>(i);
  return position;
}();

}  // namespace

const TypeTraits* find_type_traits(gguf::TensorType type) {
  const auto id = static_cast<size_t>(type);
  if (id >= kIdCount || kPositionOfId[id] < 0) return nullptr;
  return &kTypeTraits[static_cast<size_t>(kPositionOfId[id])];
}

const TypeTraits& type_traits(gguf::TensorType type) {
  const TypeTraits* traits = find_type_traits(type);
  assert(traits != nullptr && "tensor type not implemented by quant/");
  return *traits;
}

std::span<const TypeTraits> all_type_traits() { return kTypeTraits; }

}  // namespace tokenmill::quant

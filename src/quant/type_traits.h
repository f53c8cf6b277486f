// One row per tensor type: the facts and reference kernels that every other part of the
// engine looks up instead of switching on the type.
//
// Thread-safety: the table is immutable after static initialization; read it from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {

// dst[0, n) = the values of the first n / block_size blocks at src.
// REQUIRES: n % block_size == 0.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);

// Writes n / block_size blocks to dst.  REQUIRES: n % block_size == 0, finite input.
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);

// Dot product of one weight row (this type) with one activation row already quantized
// to this type's vec_dot_type, both n elements long.  REQUIRES: n % block_size == 0.
using VecDotFn = float (*)(int64_t n, const void* weights, const void* activations);

// One weight row dotted with several activation rows, so each weight block is read and
// unpacked once for all of them:
//   out[t * out_stride] = dot(weights, activations + t * activation_stride)
// for t in [0, n_activation_rows); activation_stride is in bytes.
// REQUIRES: n % block_size == 0.
using VecDotRowsFn = void (*)(int64_t n, const void* weights, const void* activations,
                              size_t activation_stride, int64_t n_activation_rows, float* out,
                              int64_t out_stride);

// Several weight rows dotted with several activation rows, a tile of a matrix product:
//   out[t * out_stride + r] = dot(weights + r * weight_stride, activations + t * activation_stride)
// for r in [0, n_weight_rows), t in [0, n_activation_rows); strides in bytes. Each result
// is bit-identical to the same set's vec_dot of those two rows, whatever the tile
// shapes, so a token's result never depends on which other tokens share its batch.
// REQUIRES: n % block_size == 0.
using VecDotMatrixFn = void (*)(int64_t n, const void* weights, size_t weight_stride, int64_t n_weight_rows,
                                const void* activations, size_t activation_stride, int64_t n_activation_rows,
                                float* out, int64_t out_stride);

// A running maximum over a row of results, as a greedy sampler picks: the largest value
// seen and the first (lowest) column holding it. NaN is never largest; column = -1 while
// no value has exceeded -inf. Start from {-inf, -1}.
struct RunningMax {
  float value;
  int32_t column;
};

// The matrix kernel for weights in quant/panel_layout.h's 16-row panels: vec_dot_matrix's
// contract with the weight stride implied (n_weight_rows a multiple of 16). With
// row_max (n_activation_rows entries), each activation row's results out[t * out_stride
// + r] are also folded into row_max[t] in order of r (r counted from this call's first
// weight row) while they are still in cache, saving a later pass over them from memory;
// out may then be null, for a caller that wants only the maxima (nothing is stored).
using VecDotPanelsFn = void (*)(int64_t n, const void* weights, int64_t n_weight_rows, const void* activations,
                                size_t activation_stride, int64_t n_activation_rows, float* out, int64_t out_stride,
                                RunningMax* row_max);

// Kernels for one instruction set. Each pointer is null where that set has no kernel
// for the type (then the reference, or a lower set, is used). Call them only after a
// run-time CPU check: quant/kernels/dispatch.h does that once and is the normal way in.
struct SimdKernels {
  VecDotFn vec_dot = nullptr;           // same contract and result (to rounding) as vec_dot_ref
  VecDotRowsFn vec_dot_rows = nullptr;  // several activation rows per weight row
  // Only for activation types (Q8_0, Q8_K): bit-identical to quantize_row_ref.
  QuantizeRowFn quantize_row = nullptr;
  VecDotMatrixFn vec_dot_matrix = nullptr;  // many weight rows x many activation rows
  VecDotPanelsFn vec_dot_panels = nullptr;  // the same on repacked panels (quant/panel_layout.h)
  // vec_dot_panels without software prefetch of the weights: a variant the load-time
  // tuner may choose (quant/kernels/dispatch.h), the same bits.
  VecDotPanelsFn vec_dot_panels_unprefetched = nullptr;
  // vec_dot_rows and vec_dot_matrix reading a lattice format's grid rows by vector gathers
  // (IQ3_XXS and IQ3_S on x86): a decode variant the tuner may choose, the same bits;
  // null where the type has none.
  VecDotRowsFn vec_dot_rows_gathered = nullptr;
  VecDotMatrixFn vec_dot_matrix_gathered = nullptr;
};

struct TypeTraits {
  gguf::TensorType type;
  std::string_view name;   // as llama.cpp prints it: "q4_K", "bf16"
  int64_t block_size;      // elements per block (1 for the float types)
  size_t bytes_per_block;
  bool is_quantized;
  // The format activations are converted to before a dot product with a row of this
  // type — the same choice as ggml's x86 CPU backend, so our integer sums and scale
  // products match llama.cpp's.
  gguf::TensorType vec_dot_type;

  DequantizeRowFn dequantize_row;
  QuantizeRowFn quantize_row_ref;  // deterministic reference, as ggml's *_ref
  // Scalar reference dot product; nullptr for the activation-only types Q8_1 and Q8_K.
  VecDotFn vec_dot_ref;
  // Kernels per instruction set (src/quant/kernels/), each tested against the
  // reference above (tests/quant/kernels_test.cc). avx2 also needs FMA and F16C;
  // avx512 needs F, BW, DQ, VL and VNNI (CpuFeatures::has_avx512_kernels).
  SimdKernels avx2;
  SimdKernels avx512;
  // arm64: NEON for every CPU, and the same body with the int8 dot product (dotprod).
  SimdKernels neon;
  SimdKernels neon_dotprod;
};

// The row for `type`, or nullptr if this layer does not implement it (I8, F64 ...).
const TypeTraits* find_type_traits(gguf::TensorType type);

// REQUIRES: find_type_traits(type) != nullptr.
const TypeTraits& type_traits(gguf::TensorType type);

// Every implemented type, in ggml id order.
std::span<const TypeTraits> all_type_traits();

}  // namespace tokenmill::quant

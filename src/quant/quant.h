// Public entry points of the quant layer: convert rows between float and any supported
// tensor type, and take reference dot products. Each call looks the type up in the
// traits table (type_traits.h) and forwards to its kernel.
//
// Thread-safety: all functions are pure (no shared state); call them from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {

// Bytes of a row of n elements.  REQUIRES: n % block_size == 0.
size_t row_size(gguf::TensorType type, int64_t n);

// dst[n] = values of the row at src.  REQUIRES: n % block_size == 0.
void dequantize_row(gguf::TensorType type, const void* src, float* dst, int64_t n);

// Reference quantization of src[n] into row_size(type, n) bytes at dst, bit-identical
// to ggml's quantize_row_*_ref.  REQUIRES: n % block_size == 0, finite input.
void quantize_row_ref(gguf::TensorType type, const float* src, void* dst, int64_t n);

// Whether quantize_row_weighted uses the importance for `type` (the legacy 4/5-bit types
// and Q2_K … Q6_K); for the others it is quantize_row_ref.
bool supports_weighted_quantization(gguf::TensorType type);

// Quantization that minimises the importance-weighted error: importance[j] (>= 0, one per
// column, e.g. E[activation_j^2] from an imatrix) scales the error of element j. The
// output is an ordinary row of `type`. importance == nullptr gives quantize_row_ref.
// REQUIRES: n % block_size == 0, finite input.  Defined in quants_weighted.cc.
void quantize_row_weighted(gguf::TensorType type, const float* src, void* dst, int64_t n, const float* importance);

// Reference dot product of a weight row of `weight_type` with an activation row in
// type_traits(weight_type).vec_dot_type.  REQUIRES: vec_dot_ref is not null for the
// type, n % block_size == 0.
float vec_dot_ref(gguf::TensorType weight_type, int64_t n, const void* weights,
                  const void* activations);

}  // namespace tokenmill::quant

#include "quant/quant.h"

#include <cassert>

namespace tokenmill::quant {

size_t row_size(gguf::TensorType type, int64_t n) {
  const TypeTraits& traits = type_traits(type);
  assert(n % traits.block_size == 0);
  return static_cast<size_t>(n / traits.block_size) * traits.bytes_per_block;
}

void dequantize_row(gguf::TensorType type, const void* src, float* dst, int64_t n) {
  const TypeTraits& traits = type_traits(type);
  assert(n % traits.block_size == 0);
  traits.dequantize_row(src, dst, n);
}

void quantize_row_ref(gguf::TensorType type, const float* src, void* dst, int64_t n) {
  const TypeTraits& traits = type_traits(type);
  assert(n % traits.block_size == 0);
  traits.quantize_row_ref(src, dst, n);
}

float vec_dot_ref(gguf::TensorType weight_type, int64_t n, const void* weights,
                  const void* activations) {
  const TypeTraits& traits = type_traits(weight_type);
  assert(traits.vec_dot_ref != nullptr && "activation-only type has no dot product");
  assert(n % traits.block_size == 0);
  return traits.vec_dot_ref(n, weights, activations);
}

}  // namespace tokenmill::quant

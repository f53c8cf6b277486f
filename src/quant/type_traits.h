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
  // Kernels for an instruction set are added beside it as further pointers
  // (vec_dot_avx2, vec_dot_avx512), each tested against this one; a null fast pointer
  // means "use the reference".
  VecDotFn vec_dot_ref;
};

// The row for `type`, or nullptr if this layer does not implement it (I8, F64 ...).
const TypeTraits* find_type_traits(gguf::TensorType type);

// REQUIRES: find_type_traits(type) != nullptr.
const TypeTraits& type_traits(gguf::TensorType type);

// Every implemented type, in ggml id order.
std::span<const TypeTraits> all_type_traits();

}  // namespace tokenmill::quant

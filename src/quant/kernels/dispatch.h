// The fastest kernel this CPU can run for each tensor type, chosen once.
//
// The choice reads base::cpu_features() (which TOKENMILL_ISA can cap) on the first call
// and is cached: AVX-512 kernels where the CPU has F/BW/DQ/VL/VNNI and the type has one,
// else AVX2 (+FMA, F16C); on arm64 NEON with the int8 dot product where the CPU has it,
// else plain NEON; else the scalar reference. This is the only
// place outside the tests that hands out the per-ISA pointers of the traits table.
//
// Thread-safety: the first call initialises a function-local static (thread-safe);
// every call after that only reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "gguf/tensor_type.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {

// The dot-product kernels chosen for one weight type.
struct DotKernel {
  VecDotFn vec_dot = nullptr;           // null only for the activation-only types
  VecDotRowsFn vec_dot_rows = nullptr;  // null where the chosen set has none: use dot_rows()
  VecDotMatrixFn vec_dot_matrix = nullptr;  // null where the chosen set has none: use dot_matrix()
  const char* isa = "scalar";  // "avx512", "avx2", "neon", "neon-dotprod" or "scalar", for logs

  // out[t * out_stride] = dot(weights, activations + t * activation_stride), through
  // vec_dot_rows when there is one, else one vec_dot per activation row.
  // REQUIRES: vec_dot != nullptr, n % block_size == 0.
  void dot_rows(int64_t n, const void* weights, const void* activations, size_t activation_stride,
                int64_t n_activation_rows, float* out, int64_t out_stride) const;

  // out[t * out_stride + r] = dot(weights + r * weight_stride, activations + t * activation_stride),
  // through vec_dot_matrix when there is one, else dot_rows() per weight row. Each
  // result is bit-identical to vec_dot of its two rows.  REQUIRES: as dot_rows.
  void dot_matrix(int64_t n, const void* weights, size_t weight_stride, int64_t n_weight_rows,
                  const void* activations, size_t activation_stride, int64_t n_activation_rows, float* out,
                  int64_t out_stride) const;
};

// REQUIRES: find_type_traits(weight_type) != nullptr.
const DotKernel& best_dot_kernel(gguf::TensorType weight_type);

// best_dot_kernel(weight_type).vec_dot; nullptr for Q8_1 and Q8_K.
VecDotFn best_vec_dot(gguf::TensorType weight_type);

// The matrix kernel for weights in quant/panel_layout.h's layout, where the kernel set
// chosen for weight_type has one (Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, IQ4_XS, MXFP4 on x86);
// nullptr otherwise (keep the file's layout then). Chosen once per process with the
// others; whether a matrix is repacked follows this choice.
VecDotPanelsFn best_panel_kernel(gguf::TensorType weight_type);

// Calls with at most this many tokens are decode steps: the tuning may give them other
// kernels of the same bits (KernelTuning::decode_variant).
inline constexpr int64_t kDecodeTokens = 2;
// The kernels for a call of n_tokens tokens: best_dot_kernel / best_panel_kernel, or for a
// decode step of a type in the tuning's decode_variant its variant kernels. The same bits
// either way; the panel kernel is null exactly where best_panel_kernel is.
const DotKernel& dot_kernel_for(gguf::TensorType weight_type, int64_t n_tokens);
VecDotPanelsFn panel_kernel_for(gguf::TensorType weight_type, int64_t n_tokens);

// Kernel variants that give the same bits but whose speed depends on the CPU: the
// load-time tuner (ops/cpu/kernel_tuner.h) times them on the model's own matrices and
// picks one per process. Every variant's kernels are chosen once; the tuning only selects
// which answer.
struct KernelTuning {
  // Software prefetch of the weight stream in the repacked-panel kernels that have a
  // variant without it (AVX-512 Q4_K and Q5_K); without it the hardware prefetcher
  // alone follows the (sequential) panels.
  bool prefetch_weights = true;
  // The weight types whose decode steps (kDecodeTokens tokens or fewer) run their variant
  // kernels, as a set of bits indexed like all_type_traits(); the types that have a
  // variant on this CPU are decode_variant_candidates(). A type's variant is one of:
  // - its AVX2 kernels, on a CPU with AVX-512 kernels, for the types whose AVX2 and
  //   AVX-512 kernels give the same bits (the legacy _0 formats, the K-quants Q4_K to
  //   Q6_K, IQ4_XS, the lattice i-quants but IQ3_XXS and IQ3_S, the ternary types).
  //   Which width runs a type's decode faster depends on the CPU and the type: where
  //   512-bit work is split in two halves (Zen 4) the AVX2 kernels often win; on
  //   Sapphire Rapids Q4_K's and IQ2_XS's do and Q6_K's do not;
  // - for IQ3_XXS and IQ3_S, its kernels reading the grid rows by vector gathers, in
  //   place of a load and a blend per row: faster on Sapphire Rapids, but a gather's
  //   cost differs widely between cores (Intel's Downfall microcode mitigation, for
  //   one, makes them several times slower).
  // Prefill keeps the type's own kernels.
  uint32_t decode_variant = 0;
};

// The types decode_variant can hold on this CPU (bits as in KernelTuning::decode_variant).
uint32_t decode_variant_candidates();
// The instruction set ("avx2", "avx512+gather", ...) of the kernels a decode step of type
// runs under tuning, as dot_kernel_for would give it with that tuning set; the tuning in
// force is not touched.  REQUIRES: find_type_traits(type).
const char* decode_kernel_isa(const KernelTuning& tuning, gguf::TensorType type);
// The bit of a type in KernelTuning::decode_variant.  REQUIRES: find_type_traits(type).
uint32_t decode_variant_bit(gguf::TensorType type);
// The tunings the tuner times whole, the default first: each prefetch setting with no
// type on its variant and with every candidate on it (it then settles each type apart).
std::span<const KernelTuning> kernel_tunings();
KernelTuning kernel_tuning();
// "prefetch_weights=1 decode_variant=q4_K,q6_K" ("decode_variant=none" for the empty set):
// the tuning's fields as name=value (the tuner's cache and logs).
std::string to_string(const KernelTuning& tuning);
// The inverse of to_string for any tuning this CPU can take; false (out untouched) for
// anything else (an unknown type, or one that is not a candidate).
bool parse_kernel_tuning(std::string_view text, KernelTuning& out);
// Takes effect for every kernel chosen after it; the kernels of either tuning give the
// same bits, so a call in flight on another thread is unaffected either way.
void set_kernel_tuning(const KernelTuning& tuning);
// Whether the tunings choose different kernels for this weight type (else timing it
// tells the tuner nothing).
bool tuning_changes_kernels(gguf::TensorType weight_type);

// The fastest quantizer for rows of `type`, bit-identical to its quantize_row_ref (the
// reference itself where no instruction set has one). Meant for the activation types
// Q8_0 and Q8_K; valid for every type.  REQUIRES: find_type_traits(type) != nullptr.
QuantizeRowFn best_quantize_activation(gguf::TensorType type);

}  // namespace tokenmill::quant

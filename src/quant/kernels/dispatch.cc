#include "quant/kernels/dispatch.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <string_view>

#include "base/cpu_features.h"
#include "quant/kernels/simd_kernels.h"

namespace tokenmill::quant {

namespace {

struct Choice {
  DotKernel dot;
  VecDotPanelsFn panels = nullptr;
  QuantizeRowFn quantize = nullptr;
  DotKernel decode_dot;  // dot and panels for kDecodeTokens tokens or fewer
  VecDotPanelsFn decode_panels = nullptr;
};

#if defined(__x86_64__)
// The types whose AVX2 and AVX-512 kernels compute the same integers and float steps, so
// that a call may take either (tests/quant: Kernels.InstructionSetsAgreeBitForBit,
// PanelLayout.PanelKernelMatchesRowKernelBitForBit).
bool same_bits_on_both_widths(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ8_0:
    case gguf::TensorType::kQ4_0:
    case gguf::TensorType::kQ5_0:
    case gguf::TensorType::kQ4_K:
    case gguf::TensorType::kQ5_K:
    case gguf::TensorType::kQ6_K:
    case gguf::TensorType::kIQ4_XS: return true;
    default: return false;
  }
}

// Decode on the AVX2 kernels of the type (narrow_decode), where the choice is AVX-512's:
// the row-layout kernels always, the panel kernel only where the AVX-512 choice repacks
// (the matrix is in panels then) and AVX2 has one for it.
void narrow_decode_kernels(const TypeTraits& traits, const KernelTuning& tuning, Choice& choice) {
  const SimdKernels& narrow = traits.avx2;
  if (narrow.vec_dot == nullptr || (choice.panels != nullptr && narrow.vec_dot_panels == nullptr)) return;
  choice.decode_dot = {narrow.vec_dot, narrow.vec_dot_rows, narrow.vec_dot_matrix, "avx2"};
  if (choice.panels != nullptr) {
    choice.decode_panels = !tuning.prefetch_weights && narrow.vec_dot_panels_unprefetched != nullptr
                               ? narrow.vec_dot_panels_unprefetched
                               : narrow.vec_dot_panels;
  }
}
#endif

// Indexed like all_type_traits(); at most this many types.
constexpr size_t kMaxTypes = 32;

struct ChoiceTable {
  std::array<Choice, kMaxTypes> choices;
};

ChoiceTable choose_kernels(const KernelTuning& tuning) {
  const CpuFeatures& cpu = cpu_features();
  ChoiceTable table;
  const std::span<const TypeTraits> all = all_type_traits();
  assert(all.size() <= kMaxTypes);
  for (size_t i = 0; i < all.size(); ++i) {
    const TypeTraits& traits = all[i];
    Choice& choice = table.choices[i];
    choice.dot.vec_dot = traits.vec_dot_ref;
    choice.quantize = traits.quantize_row_ref;
    // Later (faster) sets override earlier ones, kernel by kernel.
    const struct {
      bool available;
      const SimdKernels& kernels;
      const char* name;
    } sets[] = {{cpu.has_avx2_kernels(), traits.avx2, "avx2"},
                {cpu.has_avx512_kernels(), traits.avx512, "avx512"},
                {cpu.has_neon_kernels(), traits.neon, "neon"},
                {cpu.has_neon_kernels() && cpu.dotprod, traits.neon_dotprod, "neon-dotprod"}};
    for (const auto& set : sets) {
      if (!set.available) continue;
      if (set.kernels.vec_dot != nullptr) {
        choice.dot.vec_dot = set.kernels.vec_dot;
        choice.dot.vec_dot_rows = set.kernels.vec_dot_rows;
        choice.dot.vec_dot_matrix = set.kernels.vec_dot_matrix;
        choice.panels = set.kernels.vec_dot_panels;
        if (!tuning.prefetch_weights && set.kernels.vec_dot_panels_unprefetched != nullptr) {
          choice.panels = set.kernels.vec_dot_panels_unprefetched;
        }
        choice.dot.isa = set.name;
      }
      if (set.kernels.quantize_row != nullptr) choice.quantize = set.kernels.quantize_row;
    }
#if defined(__x86_64__)
    // With AMX, the AVX-512 packed panels of the legacy _0 formats run their whole tiles
    // of tokens on it (the same bits).
    if (choice.dot.isa == std::string_view("avx512") && cpu.has_amx_kernels()) {
      switch (traits.type) {
        case gguf::TensorType::kQ8_0: choice.panels = amx::vec_dot_panels_q8_0_q8_0; break;
        case gguf::TensorType::kQ4_0: choice.panels = amx::vec_dot_panels_q4_0_q8_0; break;
        case gguf::TensorType::kQ5_0: choice.panels = amx::vec_dot_panels_q5_0_q8_0; break;
        default: break;
      }
    }
    // On AVX2 the packed panels of the legacy _0 formats have AVX-VNNI variants (the same
    // bits): the other kernels of the type stay AVX2's.
    if (choice.dot.isa == std::string_view("avx2") && cpu.has_avx_vnni_kernels()) {
      switch (traits.type) {
        case gguf::TensorType::kQ8_0: choice.panels = avx_vnni::vec_dot_panels_q8_0_q8_0; break;
        case gguf::TensorType::kQ4_0: choice.panels = avx_vnni::vec_dot_panels_q4_0_q8_0; break;
        case gguf::TensorType::kQ5_0: choice.panels = avx_vnni::vec_dot_panels_q5_0_q8_0; break;
        default: break;
      }
    }
#endif
    choice.decode_dot = choice.dot;
    choice.decode_panels = choice.panels;
#if defined(__x86_64__)
    if (tuning.narrow_decode && choice.dot.isa == std::string_view("avx512") && cpu.has_avx2_kernels() &&
        same_bits_on_both_widths(traits.type)) {
      narrow_decode_kernels(traits, tuning, choice);
    }
#endif
  }
  return table;
}

// One table per tuning (KernelTuning's fields as bits of the index), all chosen once; the
// tuning only picks which one answers.
constexpr KernelTuning kAllTunings[] = {{.prefetch_weights = true, .narrow_decode = false},
                                        {.prefetch_weights = false, .narrow_decode = false},
                                        {.prefetch_weights = true, .narrow_decode = true},
                                        {.prefetch_weights = false, .narrow_decode = true}};
constexpr int kTunings = static_cast<int>(std::size(kAllTunings));
int tuning_index(const KernelTuning& tuning) {
  for (int i = 0; i < kTunings; ++i) {
    if (kAllTunings[i].prefetch_weights == tuning.prefetch_weights &&
        kAllTunings[i].narrow_decode == tuning.narrow_decode) {
      return i;
    }
  }
  return 0;
}
KernelTuning tuning_of(int index) { return kAllTunings[index]; }
std::atomic<int> g_tuning{0};

const Choice& choice_in(int tuning, gguf::TensorType type) {
  static const std::array<ChoiceTable, kTunings> tables = [] {
    std::array<ChoiceTable, kTunings> all;
    for (int i = 0; i < kTunings; ++i) all[i] = choose_kernels(tuning_of(i));
    return all;
  }();
  const TypeTraits& traits = type_traits(type);
  return tables[tuning].choices[static_cast<size_t>(&traits - all_type_traits().data())];
}

const Choice& choice_for(gguf::TensorType type) { return choice_in(g_tuning.load(std::memory_order_relaxed), type); }

}  // namespace

void DotKernel::dot_rows(int64_t n, const void* weights, const void* activations, size_t activation_stride,
                         int64_t n_activation_rows, float* out, int64_t out_stride) const {
  if (vec_dot_rows != nullptr) {
    vec_dot_rows(n, weights, activations, activation_stride, n_activation_rows, out, out_stride);
    return;
  }
  const auto* rows = static_cast<const uint8_t*>(activations);
  for (int64_t t = 0; t < n_activation_rows; ++t) {
    out[t * out_stride] = vec_dot(n, weights, rows + t * activation_stride);
  }
}

void DotKernel::dot_matrix(int64_t n, const void* weights, size_t weight_stride, int64_t n_weight_rows,
                           const void* activations, size_t activation_stride, int64_t n_activation_rows, float* out,
                           int64_t out_stride) const {
  if (vec_dot_matrix != nullptr) {
    vec_dot_matrix(n, weights, weight_stride, n_weight_rows, activations, activation_stride, n_activation_rows, out,
                   out_stride);
    return;
  }
  // The activations a block of tokens at a time (kActivationBlockBytes).
  const int64_t block = std::max<int64_t>(1, static_cast<int64_t>(kActivationBlockBytes / activation_stride));
  const auto* rows = static_cast<const uint8_t*>(weights);
  const auto* tokens = static_cast<const uint8_t*>(activations);
  for (int64_t t0 = 0; t0 < n_activation_rows; t0 += block) {
    const int64_t n_tokens = std::min(block, n_activation_rows - t0);
    for (int64_t r = 0; r < n_weight_rows; ++r) {
      dot_rows(n, rows + r * weight_stride, tokens + static_cast<size_t>(t0) * activation_stride, activation_stride,
               n_tokens, out + t0 * out_stride + r, out_stride);
    }
  }
}

const DotKernel& best_dot_kernel(gguf::TensorType weight_type) { return choice_for(weight_type).dot; }

VecDotFn best_vec_dot(gguf::TensorType weight_type) { return choice_for(weight_type).dot.vec_dot; }

QuantizeRowFn best_quantize_activation(gguf::TensorType type) { return choice_for(type).quantize; }

VecDotPanelsFn best_panel_kernel(gguf::TensorType weight_type) { return choice_for(weight_type).panels; }

const DotKernel& dot_kernel_for(gguf::TensorType weight_type, int64_t n_tokens) {
  const Choice& choice = choice_for(weight_type);
  return n_tokens <= kDecodeTokens ? choice.decode_dot : choice.dot;
}

VecDotPanelsFn panel_kernel_for(gguf::TensorType weight_type, int64_t n_tokens) {
  const Choice& choice = choice_for(weight_type);
  return n_tokens <= kDecodeTokens ? choice.decode_panels : choice.panels;
}

std::string to_string(const KernelTuning& tuning) {
  return std::string("prefetch_weights=") + (tuning.prefetch_weights ? "1" : "0") +
         " narrow_decode=" + (tuning.narrow_decode ? "1" : "0");
}

std::span<const KernelTuning> kernel_tunings() { return kAllTunings; }

bool parse_kernel_tuning(std::string_view text, KernelTuning& out) {
  for (const KernelTuning& tuning : kAllTunings) {
    if (text == to_string(tuning)) {
      out = tuning;
      return true;
    }
  }
  return false;
}

KernelTuning kernel_tuning() { return tuning_of(g_tuning.load(std::memory_order_relaxed)); }

void set_kernel_tuning(const KernelTuning& tuning) { g_tuning.store(tuning_index(tuning), std::memory_order_relaxed); }

bool tuning_changes_kernels(gguf::TensorType weight_type) {
  const Choice& first = choice_in(0, weight_type);
  for (int i = 1; i < kTunings; ++i) {
    const Choice& other = choice_in(i, weight_type);
    if (other.panels != first.panels || other.decode_panels != first.decode_panels ||
        other.decode_dot.vec_dot != first.decode_dot.vec_dot) {
      return true;
    }
  }
  return false;
}

}  // namespace tokenmill::quant

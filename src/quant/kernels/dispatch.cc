#include "quant/kernels/dispatch.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <cassert>
#include <string_view>
#include <vector>

#include "base/cpu_features.h"
#include "quant/kernels/simd_kernels.h"

namespace tokenmill::quant {

namespace {

struct Choice {
  DotKernel dot;
  VecDotPanelsFn panels = nullptr;
  QuantizeRowFn quantize = nullptr;
  // The type's variant kernels for decode steps (KernelTuning::decode_variant), where it
  // has them: then variant_bit is its bit there, else 0.
  uint32_t variant_bit = 0;
  DotKernel variant_dot;
  VecDotPanelsFn variant_panels = nullptr;
};

#if defined(__x86_64__)
// The types whose AVX2 and AVX-512 kernels compute the same integers and float steps, so
// that a call may take either (tests/quant: Kernels.InstructionSetsAgreeBitForBit,
// PanelLayout.PanelKernelMatchesRowKernelBitForBit). IQ3_XXS and IQ3_S agree as well, but
// their one decode variant is the grid-gathering kernels.
bool same_bits_on_both_widths(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ8_0:
    case gguf::TensorType::kQ4_0:
    case gguf::TensorType::kQ5_0:
    case gguf::TensorType::kQ4_K:
    case gguf::TensorType::kQ5_K:
    case gguf::TensorType::kQ6_K:
    case gguf::TensorType::kIQ4_XS:
    case gguf::TensorType::kIQ2_XXS:
    case gguf::TensorType::kIQ2_XS:
    case gguf::TensorType::kIQ2_S:
    case gguf::TensorType::kIQ1_S:
    case gguf::TensorType::kIQ1_M:
    case gguf::TensorType::kTQ1_0:
    case gguf::TensorType::kTQ2_0: return true;
    default: return false;
  }
}

// The AVX2 kernels of the type as its decode variant, where the choice is AVX-512's: the
// row-layout kernels always, the panel kernel only where the AVX-512 choice repacks (the
// matrix is in panels then) and AVX2 has one for it.
void narrow_kernels(const TypeTraits& traits, uint32_t bit, bool prefetch_weights, Choice& choice) {
  const SimdKernels& narrow = traits.avx2;
  if (narrow.vec_dot == nullptr || (choice.panels != nullptr && narrow.vec_dot_panels == nullptr)) return;
  choice.variant_bit = bit;
  choice.variant_dot = {narrow.vec_dot, narrow.vec_dot_rows, narrow.vec_dot_matrix, "avx2"};
  if (choice.panels != nullptr) {
    choice.variant_panels = !prefetch_weights && narrow.vec_dot_panels_unprefetched != nullptr
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

ChoiceTable choose_kernels(bool prefetch_weights) {
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
        if (!prefetch_weights && set.kernels.vec_dot_panels_unprefetched != nullptr) {
          choice.panels = set.kernels.vec_dot_panels_unprefetched;
        }
        choice.dot.isa = set.name;
      }
      if (set.kernels.quantize_row != nullptr) choice.quantize = set.kernels.quantize_row;
    }
#if defined(__x86_64__)
    // With AMX, the AVX-512 packed panels of the legacy _0 formats, Q4_K, Q6_K and IQ4_XS, and Q6_K's
    // matrix kernel, run their whole tiles of tokens on it (the same bits).
    if (choice.dot.isa == std::string_view("avx512") && cpu.has_amx_kernels()) {
      switch (traits.type) {
        case gguf::TensorType::kQ8_0: choice.panels = amx::vec_dot_panels_q8_0_q8_0; break;
        case gguf::TensorType::kQ4_0: choice.panels = amx::vec_dot_panels_q4_0_q8_0; break;
        case gguf::TensorType::kQ5_0: choice.panels = amx::vec_dot_panels_q5_0_q8_0; break;
        case gguf::TensorType::kQ4_K:
          choice.panels = prefetch_weights ? amx::vec_dot_panels_q4_K_q8_K : amx::vec_dot_panels_q4_K_q8_K_unprefetched;
          break;
        case gguf::TensorType::kQ6_K:
          choice.panels = prefetch_weights ? amx::vec_dot_panels_q6_K_q8_K : amx::vec_dot_panels_q6_K_q8_K_unprefetched;
          choice.dot.vec_dot_matrix = amx::vec_dot_matrix_q6_K_q8_K;
          break;
        case gguf::TensorType::kIQ4_XS:
          choice.panels = prefetch_weights ? amx::vec_dot_panels_iq4_xs_q8_K : amx::vec_dot_panels_iq4_xs_q8_K_unprefetched;
          break;
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
    if (choice.dot.isa == std::string_view("avx512") && cpu.has_avx2_kernels() &&
        same_bits_on_both_widths(traits.type)) {
      narrow_kernels(traits, uint32_t{1} << i, prefetch_weights, choice);
    }
    // The lattice formats whose grid rows can come by vector gathers: those kernels of the
    // chosen set are their decode variant (how fast a gather is differs most between CPUs).
    const SimdKernels& chosen = choice.dot.isa == std::string_view("avx512") ? traits.avx512 : traits.avx2;
    if (choice.dot.isa != std::string_view("scalar") && chosen.vec_dot_rows_gathered != nullptr) {
      choice.variant_bit = uint32_t{1} << i;
      choice.variant_dot = {choice.dot.vec_dot, chosen.vec_dot_rows_gathered, chosen.vec_dot_matrix_gathered,
                            choice.dot.isa == std::string_view("avx512") ? "avx512+gather" : "avx2+gather"};
    }
#endif
  }
  return table;
}

// One table per prefetch setting, both chosen once; the tuning only picks which one
// answers, and for each type whether its decode steps take its variant kernels.
std::atomic<bool> g_prefetch_weights{true};
std::atomic<uint32_t> g_decode_variant{0};

const ChoiceTable& table_for(bool prefetch_weights) {
  static const std::array<ChoiceTable, 2> tables = {choose_kernels(false), choose_kernels(true)};
  return tables[prefetch_weights ? 1 : 0];
}

size_t type_index(gguf::TensorType type) {
  const TypeTraits& traits = type_traits(type);
  return static_cast<size_t>(&traits - all_type_traits().data());
}

const Choice& choice_in(bool prefetch_weights, gguf::TensorType type) {
  return table_for(prefetch_weights).choices[type_index(type)];
}

const Choice& choice_for(gguf::TensorType type) {
  return choice_in(g_prefetch_weights.load(std::memory_order_relaxed), type);
}

bool takes_variant(const Choice& choice) { return (g_decode_variant.load(std::memory_order_relaxed) & choice.variant_bit) != 0; }

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
  return n_tokens <= kDecodeTokens && takes_variant(choice) ? choice.variant_dot : choice.dot;
}

VecDotPanelsFn panel_kernel_for(gguf::TensorType weight_type, int64_t n_tokens) {
  const Choice& choice = choice_for(weight_type);
  return n_tokens <= kDecodeTokens && takes_variant(choice) ? choice.variant_panels : choice.panels;
}

uint32_t decode_variant_bit(gguf::TensorType type) { return uint32_t{1} << type_index(type); }

const char* decode_kernel_isa(const KernelTuning& tuning, gguf::TensorType type) {
  const Choice& choice = choice_in(tuning.prefetch_weights, type);
  return (tuning.decode_variant & choice.variant_bit) != 0 ? choice.variant_dot.isa : choice.dot.isa;
}

uint32_t decode_variant_candidates() {
  static const uint32_t candidates = [] {
    uint32_t bits = 0;
    const ChoiceTable& table = table_for(true);
    for (size_t i = 0; i < all_type_traits().size(); ++i) bits |= table.choices[i].variant_bit;
    return bits;
  }();
  return candidates;
}

std::span<const KernelTuning> kernel_tunings() {
  static const std::vector<KernelTuning> tunings = [] {
    std::vector<KernelTuning> all = {{.prefetch_weights = true, .decode_variant = 0},
                                     {.prefetch_weights = false, .decode_variant = 0}};
    if (const uint32_t candidates = decode_variant_candidates(); candidates != 0) {
      all.push_back({.prefetch_weights = true, .decode_variant = candidates});
      all.push_back({.prefetch_weights = false, .decode_variant = candidates});
    }
    return all;
  }();
  return tunings;
}

std::string to_string(const KernelTuning& tuning) {
  std::string types;
  const std::span<const TypeTraits> all = all_type_traits();
  for (size_t i = 0; i < all.size(); ++i) {
    if ((tuning.decode_variant >> i) & 1) types += (types.empty() ? "" : ",") + std::string(all[i].name);
  }
  return std::string("prefetch_weights=") + (tuning.prefetch_weights ? "1" : "0") +
         " decode_variant=" + (types.empty() ? "none" : types);
}

bool parse_kernel_tuning(std::string_view text, KernelTuning& out) {
  KernelTuning parsed;
  constexpr std::string_view kPrefetch = "prefetch_weights=", kVariant = " decode_variant=";
  if (!text.starts_with(kPrefetch) || text.size() < kPrefetch.size() + 1) return false;
  const char flag = text[kPrefetch.size()];
  if (flag != '0' && flag != '1') return false;
  parsed.prefetch_weights = flag == '1';
  text.remove_prefix(kPrefetch.size() + 1);
  if (!text.starts_with(kVariant)) return false;
  text.remove_prefix(kVariant.size());
  if (text != "none") {
    while (true) {
      const size_t comma = text.find(',');
      const std::optional<gguf::TensorType> type = gguf::tensor_type_from_name(text.substr(0, comma));
      if (!type || find_type_traits(*type) == nullptr) return false;
      const uint32_t bit = decode_variant_bit(*type);
      if ((decode_variant_candidates() & bit) == 0 || (parsed.decode_variant & bit) != 0) return false;
      parsed.decode_variant |= bit;
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
  }
  out = parsed;
  return true;
}

KernelTuning kernel_tuning() {
  return {.prefetch_weights = g_prefetch_weights.load(std::memory_order_relaxed),
          .decode_variant = g_decode_variant.load(std::memory_order_relaxed)};
}

void set_kernel_tuning(const KernelTuning& tuning) {
  g_prefetch_weights.store(tuning.prefetch_weights, std::memory_order_relaxed);
  g_decode_variant.store(tuning.decode_variant & decode_variant_candidates(), std::memory_order_relaxed);
}

bool tuning_changes_kernels(gguf::TensorType weight_type) {
  const Choice& with = choice_in(true, weight_type);
  const Choice& without = choice_in(false, weight_type);
  return with.variant_bit != 0 || with.panels != without.panels;
}

}  // namespace tokenmill::quant

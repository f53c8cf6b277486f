#include "quant/quantize_mix.h"

#include <array>
#include <cctype>
#include <charconv>

#include "quant/type_traits.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

constexpr std::array<MixInfo, 28> kMixes = {{
    {Mix::kF32, "F32", TensorType::kF32, 0, "32-bit float: the lossless reference"},
    {Mix::kF16, "F16", TensorType::kF16, 1, "16-bit float weight matrices"},
    {Mix::kBF16, "BF16", TensorType::kBF16, 32, "bfloat16 weight matrices"},
    {Mix::kQ8_0, "Q8_0", TensorType::kQ8_0, 7, "8.5 bits per weight, nearly lossless"},
    {Mix::kQ6_K, "Q6_K", TensorType::kQ6_K, 18, "6.56 bpw K-quant"},
    {Mix::kQ5_K_M, "Q5_K_M", TensorType::kQ5_K, 17, "Q5_K, with Q6_K for attn_v / ffn_down in some layers"},
    {Mix::kQ5_K_S, "Q5_K_S", TensorType::kQ5_K, 16, "Q5_K throughout"},
    {Mix::kQ5_0, "Q5_0", TensorType::kQ5_0, 8, "legacy 5.5 bpw, 32-element blocks"},
    {Mix::kQ4_K_M, "Q4_K_M", TensorType::kQ4_K, 15, "Q4_K, with Q6_K for attn_v / ffn_down in some layers"},
    {Mix::kQ4_K_S, "Q4_K_S", TensorType::kQ4_K, 14, "Q4_K, Q5_K for the first layers' attn_v / ffn_down"},
    {Mix::kQ4_0, "Q4_0", TensorType::kQ4_0, 2, "legacy 4.5 bpw, 32-element blocks"},
    {Mix::kQ3_K_M, "Q3_K_M", TensorType::kQ3_K, 12, "Q3_K, with Q4_K / Q5_K for attn_v, attn_output, ffn_down"},
    {Mix::kQ3_K_S, "Q3_K_S", TensorType::kQ3_K, 11, "Q3_K throughout"},
    {Mix::kQ2_K, "Q2_K", TensorType::kQ2_K, 10, "Q2_K, with Q3_K / Q4_K for attn_v, attn_output, ffn_down"},
    {Mix::kIQ4_NL, "IQ4_NL", TensorType::kIQ4_NL, 25, "4.5 bpw non-linear levels, 32-element blocks"},
    {Mix::kIQ4_XS, "IQ4_XS", TensorType::kIQ4_XS, 30, "4.25 bpw non-linear levels; IQ4_NL where 256 does not divide a row"},
    {Mix::kIQ3_M, "IQ3_M", TensorType::kIQ3_S, 27, "IQ3_S, with Q4_K for attn_v, attn_output and the first ffn_down"},
    {Mix::kIQ3_S, "IQ3_S", TensorType::kIQ3_S, 26, "3.44 bpw lattice quantization"},
    {Mix::kIQ3_XS, "IQ3_XS", TensorType::kIQ3_S, 22, "IQ3_S, with IQ3_XXS for attn_q, attn_k and the middle FFN"},
    {Mix::kIQ3_XXS, "IQ3_XXS", TensorType::kIQ3_XXS, 23, "3.06 bpw lattice quantization (needs --imatrix)"},
    {Mix::kIQ2_M, "IQ2_M", TensorType::kIQ2_S, 29, "IQ2_S, with IQ3_S for attn_v, attn_output and the first ffn_down (needs --imatrix)"},
    {Mix::kIQ2_S, "IQ2_S", TensorType::kIQ2_XS, 28, "IQ2_XS, with IQ3_S for attn_v, attn_output and the first ffn_down (needs --imatrix)"},
    {Mix::kIQ2_XS, "IQ2_XS", TensorType::kIQ2_XS, 20, "2.31 bpw lattice quantization (needs --imatrix)"},
    {Mix::kIQ2_XXS, "IQ2_XXS", TensorType::kIQ2_XXS, 19, "2.06 bpw lattice quantization (needs --imatrix)"},
    {Mix::kIQ1_M, "IQ1_M", TensorType::kIQ1_M, 31, "1.75 bpw lattice quantization (needs --imatrix)"},
    {Mix::kIQ1_S, "IQ1_S", TensorType::kIQ1_S, 24, "1.56 bpw lattice quantization (needs --imatrix)"},
    {Mix::kTQ2_0, "TQ2_0", TensorType::kTQ2_0, 37, "2.06 bpw ternary weights, for models trained ternary (BitNet)"},
    {Mix::kTQ1_0, "TQ1_0", TensorType::kTQ1_0, 36, "1.69 bpw ternary weights, for models trained ternary (BitNet)"},
}};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The layers whose attn_v / ffn_down get more bits in the _M mixes: the first and last
// eighth, and every third layer in between.
bool layer_gets_more_bits(int32_t layer, int32_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

enum class Role {
  kOutput, kTokenEmbedding, kAttentionQ, kAttentionK, kAttentionV, kAttentionOutput, kFfnUp, kFfnGate, kFfnDown, kOther
};

Role role_of(std::string_view name, const ModelFacts& model) {
  if (name == "output.weight") return Role::kOutput;
  if (name == "token_embd.weight") return model.tied_embeddings ? Role::kOutput : Role::kTokenEmbedding;
  // A fused QKV projection takes attn_v's rule, as in llama.cpp.
  if (contains(name, "attn_v.weight") || contains(name, "attn_qkv.weight")) return Role::kAttentionV;
  if (contains(name, "attn_k.weight")) return Role::kAttentionK;
  if (contains(name, "attn_q.weight")) return Role::kAttentionQ;
  if (contains(name, "attn_output.weight")) return Role::kAttentionOutput;
  if (contains(name, "ffn_up")) return Role::kFfnUp;
  if (contains(name, "ffn_gate")) return Role::kFfnGate;
  if (contains(name, "ffn_down")) return Role::kFfnDown;
  return Role::kOther;
}

// The 1- and 2-bit lattice mixes share one rule; IQ2_S and IQ2_M give their more
// sensitive tensors IQ3_S where the others give them Q2_K.
bool is_iq2_mix(Mix mix) {
  return mix == Mix::kIQ2_XXS || mix == Mix::kIQ2_XS || mix == Mix::kIQ2_S || mix == Mix::kIQ2_M ||
         mix == Mix::kIQ1_S || mix == Mix::kIQ1_M;
}
bool is_iq1_mix(Mix mix) { return mix == Mix::kIQ1_S || mix == Mix::kIQ1_M; }
bool is_wide_iq2_mix(Mix mix) { return mix == Mix::kIQ2_S || mix == Mix::kIQ2_M; }

TensorType iq2_mix_role_type(const MixInfo& mix, Role role, int32_t layer, int32_t n_layers, int32_t gqa) {
  const TensorType sensitive = is_wide_iq2_mix(mix.mix) ? TensorType::kIQ3_S : TensorType::kQ2_K;
  switch (role) {
    case Role::kTokenEmbedding: return sensitive;
    case Role::kAttentionV: return gqa >= 4 ? TensorType::kQ4_K : sensitive;
    case Role::kFfnDown: return layer < n_layers / 8 ? sensitive : mix.base_type;
    case Role::kAttentionOutput:
      return is_wide_iq2_mix(mix.mix) ? TensorType::kIQ3_S : is_iq1_mix(mix.mix) ? TensorType::kIQ2_XXS : mix.base_type;
    default: return mix.base_type;
  }
}

// The type a role asks for, before the row-length check.
TensorType role_type(const MixInfo& mix, Role role, int32_t layer, const ModelFacts& model, int64_t row_length,
                     bool has_imatrix) {
  const TensorType base = mix.base_type;
  const int32_t n = model.n_layers;
  const int32_t gqa = model.n_kv_heads > 0 ? model.n_heads / model.n_kv_heads : 1;
  const bool middle_layer = layer >= n / 8 && layer < 7 * n / 8;
  if (role == Role::kOutput) {
    // The output projection scores every token of the vocabulary: Q6_K at least (Q5_K
    // under the 2-bit mixes and IQ3_XXS), or Q8_0 where the base type's 256-element
    // block does not fit the rows.
    if (row_length % type_traits(base).block_size != 0) return TensorType::kQ8_0;
    if (is_iq2_mix(mix.mix) || mix.mix == Mix::kIQ3_XXS) return TensorType::kQ5_K;
    return base == TensorType::kQ8_0 ? TensorType::kQ8_0 : TensorType::kQ6_K;
  }
  if (is_iq2_mix(mix.mix)) return iq2_mix_role_type(mix, role, layer, n, gqa);
  switch (role) {
    case Role::kOutput:
    case Role::kOther:
      return base;
    case Role::kTokenEmbedding:
      if (mix.mix == Mix::kTQ1_0 || mix.mix == Mix::kTQ2_0) return TensorType::kQ4_K;
      return mix.mix == Mix::kIQ3_XXS ? TensorType::kIQ3_S : base;
    case Role::kAttentionQ:
    case Role::kAttentionK:
      switch (mix.mix) {
        case Mix::kIQ3_XS: return TensorType::kIQ3_XXS;
        case Mix::kIQ3_XXS: return TensorType::kIQ2_S;
        default: return base;
      }
    case Role::kFfnUp:
    case Role::kFfnGate:
      return mix.mix == Mix::kIQ3_XS && middle_layer ? TensorType::kIQ3_XXS : base;
    case Role::kAttentionV:
      switch (mix.mix) {
        case Mix::kIQ3_XXS: return gqa >= 4 ? TensorType::kQ4_K : has_imatrix ? TensorType::kIQ3_XXS : TensorType::kIQ3_S;
        case Mix::kIQ3_XS:
        case Mix::kIQ3_S: return gqa >= 4 ? TensorType::kQ4_K : base;
        case Mix::kIQ3_M: return TensorType::kQ4_K;
        case Mix::kIQ4_NL:
        case Mix::kIQ4_XS: return gqa >= 4 ? TensorType::kQ5_K : base;
        case Mix::kQ2_K: return gqa >= 4 ? TensorType::kQ4_K : TensorType::kQ3_K;
        case Mix::kQ3_K_M: return layer < 2 ? TensorType::kQ5_K : TensorType::kQ4_K;
        case Mix::kQ4_K_M:
        case Mix::kQ5_K_M: return layer_gets_more_bits(layer, n) ? TensorType::kQ6_K : base;
        case Mix::kQ4_K_S: return layer < 4 ? TensorType::kQ5_K : base;
        default: return base;
      }
    case Role::kAttentionOutput:
      switch (mix.mix) {
        case Mix::kQ2_K: return TensorType::kQ3_K;
        case Mix::kQ3_K_M: return TensorType::kQ4_K;
        case Mix::kIQ3_XXS: return TensorType::kIQ3_S;
        case Mix::kIQ3_M: return TensorType::kQ4_K;
        default: return base;
      }
    case Role::kFfnDown:
      switch (mix.mix) {
        case Mix::kQ2_K: return TensorType::kQ3_K;
        case Mix::kQ3_K_M: return layer < n / 16 ? TensorType::kQ5_K : TensorType::kQ4_K;
        case Mix::kQ4_K_M:
        case Mix::kQ5_K_M: return layer_gets_more_bits(layer, n) ? TensorType::kQ6_K : base;
        case Mix::kQ4_K_S: return layer < n / 8 ? TensorType::kQ5_K : base;
        case Mix::kQ4_0: return has_imatrix && layer < n / 8 ? TensorType::kQ4_1 : base;
        case Mix::kQ5_0: return has_imatrix && layer < n / 8 ? TensorType::kQ5_1 : base;
        case Mix::kIQ3_XXS:
          if (has_imatrix) return base;
          return layer < n / 8 ? TensorType::kQ4_K : TensorType::kQ3_K;
        case Mix::kIQ3_M: return layer < n / 8 ? TensorType::kQ4_K : base;
        case Mix::kIQ4_NL:
        case Mix::kIQ4_XS: return !has_imatrix && layer < n / 8 ? TensorType::kQ5_K : base;
        default: return base;
      }
  }
  return base;
}

// A 32-element type of about the same size for rows a 256-element block does not divide.
TensorType fallback_type(TensorType wanted) {
  switch (wanted) {
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kTQ1_0:
    case TensorType::kTQ2_0: return TensorType::kQ4_0;
    case TensorType::kQ4_K: return TensorType::kQ5_0;
    case TensorType::kQ5_K: return TensorType::kQ5_1;
    case TensorType::kQ6_K: return TensorType::kQ8_0;
    case TensorType::kIQ4_XS:
    case TensorType::kIQ3_S:
    case TensorType::kIQ3_XXS:
    case TensorType::kIQ2_S:
    case TensorType::kIQ2_XS:
    case TensorType::kIQ2_XXS:
    case TensorType::kIQ1_S:
    case TensorType::kIQ1_M: return TensorType::kIQ4_NL;
    default: return TensorType::kF16;
  }
}

}  // namespace

std::span<const MixInfo> all_mixes() { return kMixes; }

std::optional<MixInfo> find_mix(std::string_view name) {
  for (const MixInfo& m : kMixes) {
    if (equal_ignoring_case(m.name, name)) return m;
  }
  return std::nullopt;
}

int32_t layer_of_tensor(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size();
  int32_t layer = -1;
  auto [ptr, ec] = std::from_chars(begin, end, layer);
  if (ec != std::errc() || ptr == end || *ptr != '.') return -1;
  return layer;
}

bool is_quantizable_weight(const TensorFacts& t) {
  // A mixture of experts' router (ffn_gate_inp) stays F32 as llama.cpp keeps it: it is
  // tiny, and rounding it moves tokens to other experts. So does BERT's token-type table
  // (two rows), which llama.cpp adds to the embeddings as F32 without converting it.
  return t.n_dims >= 2 && ends_with(t.name, "weight") && !contains(t.name, "_norm.weight") &&
         !contains(t.name, "ffn_gate_inp.weight") && t.name != "token_types.weight";
}

bool type_requires_importance(TensorType type, std::string_view tensor_name) {
  if (tensor_name == "output.weight" || tensor_name == "token_embd.weight") return false;
  switch (type) {
    case TensorType::kIQ3_XXS:
    case TensorType::kIQ2_XXS:
    case TensorType::kIQ2_XS:
    case TensorType::kIQ2_S:
    case TensorType::kIQ1_S:
    case TensorType::kIQ1_M: return true;
    default: return false;
  }
}

bool is_weight_type(TensorType type) {
  const TypeTraits* traits = find_type_traits(type);
  return traits != nullptr && traits->vec_dot_ref != nullptr && traits->quantize_row_ref != nullptr;
}

TypeChoice choose_tensor_type(const MixInfo& mix, const TensorFacts& tensor, const ModelFacts& model,
                              bool has_imatrix, const TypeOverrides& overrides) {
  if (!is_quantizable_weight(tensor)) return {TensorType::kF32, TensorType::kF32, false};
  const Role role = role_of(tensor.name, model);
  const std::optional<TensorType> named = role == Role::kOutput           ? overrides.output
                                          : role == Role::kTokenEmbedding ? overrides.token_embedding
                                                                          : std::nullopt;
  if (!named && !type_traits(mix.base_type).is_quantized) return {mix.base_type, mix.base_type, true};
  const TensorType wanted =
      named ? *named : role_type(mix, role, layer_of_tensor(tensor.name), model, tensor.row_length, has_imatrix);
  TensorType type = wanted;
  if (tensor.row_length % type_traits(type).block_size != 0) {
    type = fallback_type(wanted);
    if (tensor.row_length % type_traits(type).block_size != 0) type = TensorType::kF16;
  }
  return {type, wanted, true};
}

}  // namespace tokenmill::quant

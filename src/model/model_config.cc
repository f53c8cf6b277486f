#include "model/model_config.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

namespace tokenmill::model {

namespace {

// Reads "<arch>.<suffix>" as a positive int32.
Status read_positive(const gguf::File& file, const std::string& arch, const char* suffix, int32_t& out) {
  const std::string key = arch + "." + suffix;
  auto v = file.get_int(key);
  if (!v.ok()) return v.status();
  if (*v <= 0 || *v > (1 << 30)) {
    return corrupt_data("metadata '" + key + "' is " + std::to_string(*v) + ", expected a positive size");
  }
  out = static_cast<int32_t>(*v);
  return {};
}

// "<arch>.attention.sliding_window", where the file has it, as a window on every layer.
Status read_uniform_window(const gguf::File& file, const std::string& arch, ModelConfig& c) {
  const int64_t window = file.get_int_or(arch + ".attention.sliding_window", 0);
  if (window < 0 || window > (1 << 30)) {
    return corrupt_data("metadata '" + arch + ".attention.sliding_window' is " + std::to_string(window) +
                        ", expected a size");
  }
  c.sliding_window = static_cast<int32_t>(window);
  c.layer_is_sliding.assign(c.n_layers, window > 0);
  return {};
}

// The metadata keys (after "<arch>.") that change a model's arithmetic beyond the sizes,
// norms' epsilon, rope base, dimension count and scaling, and experts that every
// architecture reads; and the values at which each changes nothing (NaN: none, so any
// value is refused where the key is not honoured).
struct ArithmeticKey {
  const char* suffix;
  double neutral;
  double other_neutral;  // a second neutral value (NaN: none)
};
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
constexpr ArithmeticKey kArithmeticKeys[] = {
    {"attention.sliding_window", 0, kNone},
    {"attention.sliding_window_pattern", kNone, kNone},
    {"rope.freq_base_swa", kNone, kNone},
    {"final_logit_softcapping", 0, kNone},
    {"attn_logit_softcapping", 0, kNone},
    {"embedding_scale", 1, kNone},
    {"residual_scale", 1, kNone},
    {"attention.scale", 0, kNone},  // 0: 1/sqrt(head size), as llama.cpp reads it
    {"logit_scale", 1, kNone},
    {"attention.clamp_kqv", 0, kNone},
    {"attention.causal", 1, kNone},
    {"rope.dimension_sections", kNone, kNone},
    {"expert_shared_count", 0, kNone},
    {"expert_gating_func", 0, 1},  // 0: unset, 1: softmax (what the routers here compute)
    {"expert_weights_scale", 0, 1},
    {"leading_dense_block_count", 0, kNone},
    {"interleave_moe_layer_step", 0, 1},
};

// One entry per architecture: its general.architecture name, its rotary pair layout,
// and which of kArithmeticKeys it honours (space-separated suffixes). `ignored` lists
// such keys that llama.cpp does not read for the architecture either, so that a file
// carrying them computes the same without them (Qwen's configs name a sliding window
// that use_sliding_window leaves off).
struct ArchitectureSpec {
  const char* name;
  Architecture architecture;
  ops::RopeStyle rope_style;
  std::string_view honoured;
  std::string_view ignored = "";
};
constexpr ArchitectureSpec kArchitectures[] = {
    {"gemma2", Architecture::kGemma2, ops::RopeStyle::kNeox,
     "attention.sliding_window final_logit_softcapping attn_logit_softcapping"},
    {"gemma3", Architecture::kGemma3, ops::RopeStyle::kNeox,
     "attention.sliding_window attention.sliding_window_pattern rope.freq_base_swa final_logit_softcapping"},
    // Even layers slide over attention.sliding_window tokens, odd layers see everything.
    {"gpt-oss", Architecture::kGptOss, ops::RopeStyle::kNeox, "attention.sliding_window"},
    {"granite", Architecture::kGranite, ops::RopeStyle::kNormal,
     "embedding_scale residual_scale attention.scale logit_scale"},
    // Mistral 7B v0.1's window on every layer (which llama.cpp ignores).
    {"llama", Architecture::kLlama, ops::RopeStyle::kNormal, "attention.sliding_window"},
    {"olmo2", Architecture::kOlmo2, ops::RopeStyle::kNeox, ""},
    // Phi-3-mini's window of 2047.
    {"phi3", Architecture::kPhi3, ops::RopeStyle::kNeox, "attention.sliding_window"},
    {"qwen2", Architecture::kQwen2, ops::RopeStyle::kNeox, "", "attention.sliding_window"},
    {"qwen3", Architecture::kQwen3, ops::RopeStyle::kNeox, "", "attention.sliding_window"},
    {"qwen3moe", Architecture::kQwen3Moe, ops::RopeStyle::kNeox, "", "attention.sliding_window"},
    {"smollm3", Architecture::kSmolLM3, ops::RopeStyle::kNormal, "", "attention.sliding_window"},
};

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

bool lists(std::string_view words, std::string_view word) {
  while (!words.empty()) {
    const size_t space = words.find(' ');
    if (words.substr(0, space) == word) return true;
    if (space == std::string_view::npos) break;
    words.remove_prefix(space + 1);
  }
  return false;
}

const ArchitectureSpec* find_architecture(std::string_view name) {
  for (const ArchitectureSpec& spec : kArchitectures) {
    if (name == spec.name) return &spec;
  }
  return nullptr;
}

// OK where "<arch>.<k.suffix>" is absent or holds one of k's neutral values; else an
// unsupported error naming the key and its value, then `why`.
Status refuse_unless_neutral(const gguf::File& file, const std::string& arch, const ArithmeticKey& k,
                             const std::string& why) {
  const std::string key = arch + "." + k.suffix;
  if (file.find(key) == nullptr) return {};
  auto number = file.get_double(key);
  if (!number.ok()) {
    if (auto flag = file.get_bool(key); flag.ok()) number = *flag ? 1.0 : 0.0;
  }
  if (number.ok() && (*number == k.neutral || *number == k.other_neutral)) return {};
  return unsupported("metadata '" + key + "' = " + (number.ok() ? number_text(*number) : std::string("(not a number)")) +
                     why);
}

// Refuses a key of kArithmeticKeys that the architecture neither honours nor may ignore,
// unless its value changes nothing.
Status refuse_unhonoured_keys(const gguf::File& file, const ArchitectureSpec& spec) {
  for (const ArithmeticKey& k : kArithmeticKeys) {
    if (lists(spec.honoured, k.suffix) || lists(spec.ignored, k.suffix)) continue;
    TM_RETURN_IF_ERROR(refuse_unless_neutral(
        file, spec.name, k, std::string(" changes the arithmetic in a way tokenmill does not implement for ") + spec.name));
  }
  return {};
}

// YaRN's metadata (llama.cpp's keys). The variants GGUF readers also know (another
// extrapolation mix, attention factor or DeepSeek's log multiplier) are refused unless
// neutral, and so is YaRN over part of each head (its q and k scale would then miss the
// unrotated values).
Status read_yarn(const gguf::File& file, const std::string& a, double factor, ModelConfig& c) {
  if (!(factor < 1e4)) return corrupt_data(a + ".rope.scaling.factor " + number_text(factor) + " is out of range");
  const int64_t original = file.get_int_or(a + ".rope.scaling.original_context_length", 0);
  if (original < 2 || original > INT32_MAX) {
    return corrupt_data("YaRN needs " + a + ".rope.scaling.original_context_length (it is " + std::to_string(original) + ")");
  }
  if (c.n_rot != c.head_dim) return unsupported("YaRN over part of each head (rope.dimension_count) is not supported");
  constexpr ArithmeticKey kVariantKeys[] = {{"rope.scaling.yarn_ext_factor", 1, -1},  // -1: llama.cpp's "unset"
                                            {"rope.scaling.yarn_attn_factor", 1, kNone},
                                            {"rope.scaling.attn_factor", 1, kNone},
                                            {"rope.scaling.yarn_log_multiplier", 0, kNone}};
  for (const ArithmeticKey& k : kVariantKeys) {
    TM_RETURN_IF_ERROR(refuse_unless_neutral(file, a, k, ": this YaRN variant is not supported"));
  }
  YarnRope y;
  y.factor = static_cast<float>(factor);
  y.original_context = static_cast<int32_t>(original);
  y.beta_fast = static_cast<float>(file.get_double_or(a + ".rope.scaling.yarn_beta_fast", 32.0));
  y.beta_slow = static_cast<float>(file.get_double_or(a + ".rope.scaling.yarn_beta_slow", 1.0));
  if (!(y.beta_fast > 0 && y.beta_slow > 0 && y.beta_fast < 1e6 && y.beta_slow < 1e6)) {
    return corrupt_data("YaRN beta_fast / beta_slow out of range");
  }
  c.yarn = y;
  return {};
}

}  // namespace

std::vector<float> yarn_rope_divisors(const ModelConfig& c) {
  // The pair whose wavelength turns `rotations` times within the original context.
  const double n = c.n_rot, base = c.rope_freq_base, two_pi = 2.0 * 3.14159265358979323846;
  auto pair_of = [&](double rotations) {
    return n * std::log(c.yarn->original_context / (rotations * two_pi)) / (2.0 * std::log(base));
  };
  const bool round = c.yarn->round_ramp_ends;
  const double low = std::max(0.0, round ? std::floor(pair_of(c.yarn->beta_fast)) : pair_of(c.yarn->beta_fast));
  const double high = std::min(n - 1, round ? std::ceil(pair_of(c.yarn->beta_slow)) : pair_of(c.yarn->beta_slow));
  std::vector<float> divisors(static_cast<size_t>(c.n_rot / 2));
  for (size_t i = 0; i < divisors.size(); ++i) {
    // extrapolate: 1 for the fast pairs (below low), 0 for the slow ones (above high).
    const double ramp = std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
    const double extrapolate = 1.0 - ramp;
    divisors[i] = static_cast<float>(1.0 / ((1.0 - extrapolate) / c.yarn->factor + extrapolate));
  }
  return divisors;
}

Result<ModelConfig> read_model_config(const gguf::File& file) {
  ModelConfig c;
  auto arch = file.get_string("general.architecture");
  if (!arch.ok()) return arch.status();
  c.architecture_name = *arch;
  const std::string& a = c.architecture_name;
  if (a == "bert") {
    return unsupported("'" + file.get_string_or("general.name", a) +
                       "' is an embedding model (architecture 'bert'): it has no text to generate; serve it with "
                       "`tokenmill serve -m FILE` (or --embedding-model beside a chat model) for /v1/embeddings and /api/embed");
  }
  const ArchitectureSpec* spec = find_architecture(a);
  if (spec == nullptr) {
    return unsupported("model architecture '" + a + "' is not supported (supported: " + supported_architectures() + ")");
  }
  c.architecture = spec->architecture;
  c.rope_style = spec->rope_style;
  TM_RETURN_IF_ERROR(refuse_unhonoured_keys(file, *spec));
  c.name = file.get_string_or("general.name", a);

  TM_RETURN_IF_ERROR(read_positive(file, a, "embedding_length", c.n_embd));
  TM_RETURN_IF_ERROR(read_positive(file, a, "block_count", c.n_layers));
  // Each layer has several tensors; a count beyond the file's tensors is corrupt (and
  // must not size anything before the weights are bound).
  if (static_cast<size_t>(c.n_layers) > file.tensors().size()) {
    return corrupt_data("block_count " + std::to_string(c.n_layers) + " is more than the file's " +
                        std::to_string(file.tensors().size()) + " tensors");
  }
  TM_RETURN_IF_ERROR(read_positive(file, a, "feed_forward_length", c.n_ff));
  TM_RETURN_IF_ERROR(read_positive(file, a, "attention.head_count", c.n_heads));
  c.n_kv_heads = c.n_heads;
  if (file.find(a + ".attention.head_count_kv")) {
    TM_RETURN_IF_ERROR(read_positive(file, a, "attention.head_count_kv", c.n_kv_heads));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return corrupt_data("head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " +
                        std::to_string(c.n_kv_heads));
  }
  c.head_dim = c.n_embd / c.n_heads;
  if (file.find(a + ".attention.key_length")) {
    TM_RETURN_IF_ERROR(read_positive(file, a, "attention.key_length", c.head_dim));
  }
  if (file.find(a + ".attention.value_length")) {
    int32_t value_dim = 0;
    TM_RETURN_IF_ERROR(read_positive(file, a, "attention.value_length", value_dim));
    if (value_dim != c.head_dim) return unsupported("attention.value_length differs from key_length");
  }
  if (c.head_dim % 2 != 0) return corrupt_data("attention head size " + std::to_string(c.head_dim) + " is odd");
  // RoPE rotates the first rope.dimension_count values of each head (Phi-4-mini: 3/4 of
  // them) and leaves the rest, as llama.cpp reads the key; absent, the whole head.
  const int64_t n_rot = file.get_int_or(a + ".rope.dimension_count", c.head_dim);
  if (n_rot < 2 || n_rot > c.head_dim || n_rot % 2 != 0) {
    return corrupt_data(a + ".rope.dimension_count " + std::to_string(n_rot) +
                        " must be even and at most the head size " + std::to_string(c.head_dim));
  }
  c.n_rot = static_cast<int32_t>(n_rot);
  // Every width a layer computes with stays far inside int32 (the largest models are
  // below 2^17), so products of them in 64 bits never overflow either.
  constexpr int64_t kMaxWidth = int64_t{1} << 20;
  for (const auto& [name, width] : {std::pair<const char*, int64_t>{"embedding_length", c.n_embd},
                                    {"feed_forward_length", c.n_ff},
                                    {"head_count * key_length", int64_t{c.n_heads} * c.head_dim}}) {
    if (width > kMaxWidth) {
      return corrupt_data(std::string(name) + " " + std::to_string(width) + " is more than " + std::to_string(kMaxWidth));
    }
  }
  const int64_t context_length = file.get_int_or(a + ".context_length", 4096);
  if (context_length < 1 || context_length > INT32_MAX) {
    return corrupt_data("context_length " + std::to_string(context_length) + " is out of range");
  }
  c.context_length = static_cast<int32_t>(context_length);
  c.rms_eps = static_cast<float>(file.get_double_or(a + ".attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_freq_base = static_cast<float>(file.get_double_or(a + ".rope.freq_base", 10000.0));
  c.rope_freq_base_local = c.rope_freq_base;
  double longrope_attn_factor = 1.0;
  if (file.find_tensor("rope_factors_long.weight") || file.find_tensor("rope_factors_short.weight")) {
    // LongRoPE: both factor sets, the original context that separates them, and the
    // factor on the rotated q and k (sqrt(1 + ln(s) / ln(original)) for a context
    // stretched s times when the file does not say).
    if (!file.find_tensor("rope_factors_long.weight") || !file.find_tensor("rope_factors_short.weight")) {
      return corrupt_data("LongRoPE needs both rope_factors_long.weight and rope_factors_short.weight");
    }
    const int64_t original = file.get_int_or(a + ".rope.scaling.original_context_length", 0);
    if (original < 2 || original > INT32_MAX) {
      return corrupt_data("LongRoPE needs " + a + ".rope.scaling.original_context_length (it is " +
                          std::to_string(original) + ")");
    }
    c.longrope = true;
    c.rope_original_context = static_cast<int32_t>(original);
    const double stretch = static_cast<double>(c.context_length) / static_cast<double>(original);
    longrope_attn_factor = file.get_double_or(
        a + ".rope.scaling.attn_factor",
        stretch <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(stretch) / std::log(static_cast<double>(original))));
    if (!(longrope_attn_factor > 0 && longrope_attn_factor < 100)) {
      return corrupt_data("rope.scaling.attn_factor is out of range");
    }
  }
  const double rope_factor = file.get_double_or(a + ".rope.scaling.factor", 1.0);
  const std::string rope_type = file.get_string_or(a + ".rope.scaling.type", "none");
  if (rope_type == "linear" && rope_factor > 0) {
    c.rope_freq_scale = static_cast<float>(1.0 / rope_factor);
  } else if (rope_type == "yarn" && rope_factor > 1.0) {
    TM_RETURN_IF_ERROR(read_yarn(file, a, rope_factor, c));
  } else if (rope_type != "none" && rope_factor != 1.0) {
    return unsupported("rope scaling type '" + rope_type + "' is not supported");
  }
  c.layer_is_sliding.assign(c.n_layers, false);
  // LongRoPE scales the rotated q and k by its factor: scores by its square.
  c.attention_scale = static_cast<float>(longrope_attn_factor * longrope_attn_factor) /
                      std::sqrt(static_cast<float>(c.head_dim));

  c.layer_has_rope.assign(c.n_layers, true);
  switch (c.architecture) {
    case Architecture::kGemma2: {
      // As Gemma 3: 1/sqrt(head_dim), but 1/sqrt(n_embd / n_heads) for the 27B (46 layers).
      if (c.n_layers == 46) c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_heads));
      c.embedding_scale = std::sqrt(static_cast<float>(c.n_embd));
      c.final_logit_softcap = static_cast<float>(file.get_double_or(a + ".final_logit_softcapping", 0.0));
      c.attn_logit_softcap = static_cast<float>(file.get_double_or(a + ".attn_logit_softcapping", 0.0));
      if (c.final_logit_softcap < 0 || c.attn_logit_softcap < 0) return corrupt_data("a softcapping value is negative");
      c.sliding_window = static_cast<int32_t>(file.get_int_or(a + ".attention.sliding_window", 0));
      // Even layers see a sliding window, odd layers everything.
      for (int32_t l = 0; l < c.n_layers; ++l) c.layer_is_sliding[l] = c.sliding_window > 0 && l % 2 == 0;
      break;
    }
    case Architecture::kGemma3: {
      // Gemma scales queries by 1/sqrt(head_dim) for all sizes but 27B, which uses
      // 1/sqrt(n_embd / n_heads).
      if (c.n_layers == 62) c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_heads));
      c.embedding_scale = std::sqrt(static_cast<float>(c.n_embd));
      c.final_logit_softcap = static_cast<float>(file.get_double_or(a + ".final_logit_softcapping", 0.0));
      c.sliding_window = static_cast<int32_t>(file.get_int_or(a + ".attention.sliding_window", 0));
      if (c.sliding_window > 0) {
        // Five local (sliding-window) layers, then one global layer, repeating.
        const int64_t period = file.get_int_or(a + ".attention.sliding_window_pattern", 6);
        if (period <= 0) return corrupt_data("attention.sliding_window_pattern must be positive");
        for (int32_t l = 0; l < c.n_layers; ++l) c.layer_is_sliding[l] = (l % period) < period - 1;
        c.rope_freq_base_local = static_cast<float>(file.get_double_or(a + ".rope.freq_base_swa", 10000.0));
      }
      break;
    }
    case Architecture::kGptOss: {
      TM_RETURN_IF_ERROR(read_uniform_window(file, a, c));
      for (int32_t l = 0; l < c.n_layers; ++l) c.layer_is_sliding[l] = c.sliding_window > 0 && l % 2 == 0;
      // GGUF has no key for the clamp: gpt-oss's configs all use 7, which llama.cpp fixes.
      c.swiglu_limit = 7.0f;
      if (c.yarn) c.yarn->round_ramp_ends = false;
      break;
    }
    case Architecture::kGranite: {
      // The four multipliers (llama.cpp requires them too; a missing one is the neutral value here).
      const double embedding = file.get_double_or(a + ".embedding_scale", 1.0);
      const double residual = file.get_double_or(a + ".residual_scale", 1.0);
      const double attention = file.get_double_or(a + ".attention.scale", 0.0);
      const double logit = file.get_double_or(a + ".logit_scale", 1.0);
      for (const double v : {embedding, residual, logit}) {
        if (!(std::isfinite(v) && v > 0 && v < 1e6)) return corrupt_data("a granite multiplier is out of range");
      }
      if (!(std::isfinite(attention) && attention >= 0 && attention < 1e6)) {
        return corrupt_data("granite attention.scale is out of range");
      }
      c.embedding_scale = static_cast<float>(embedding);
      c.residual_scale = static_cast<float>(residual);
      if (attention > 0) c.attention_scale = static_cast<float>(attention);
      c.logit_scale = static_cast<float>(logit);
      break;
    }
    case Architecture::kLlama:
    case Architecture::kPhi3:
      // Mistral 7B v0.1's and Phi-3-mini's window on every layer, where the file has one.
      TM_RETURN_IF_ERROR(read_uniform_window(file, a, c));
      break;
    case Architecture::kOlmo2:
      c.qk_norm_whole = true;
      break;
    case Architecture::kSmolLM3:
      // Every fourth layer has no rotary embedding (NoPE); GGUF has no key for the
      // interval, which llama.cpp fixes at 4 as SmolLM3's configs do.
      for (int32_t l = 0; l < c.n_layers; ++l) c.layer_has_rope[l] = (l + 1) % 4 != 0;
      break;
    case Architecture::kQwen2:
    case Architecture::kQwen3:
    case Architecture::kQwen3Moe:
      break;
  }
  if (c.longrope && (c.architecture == Architecture::kGemma2 || c.architecture == Architecture::kGemma3)) {
    return unsupported("LongRoPE is not supported for " + a);
  }
  if (c.yarn) {
    // Gemma's per-layer bases and Granite's own attention scale are not combined with it.
    if (c.longrope || c.architecture == Architecture::kGemma2 || c.architecture == Architecture::kGemma3 ||
        c.architecture == Architecture::kGranite) {
      return unsupported("YaRN rope scaling is not supported for " + a + (c.longrope ? " with LongRoPE" : ""));
    }
    const float mscale = 1.0f + 0.1f * std::log(c.yarn->factor);
    c.attention_scale *= mscale * mscale;
  }
  if (c.architecture == Architecture::kQwen3Moe || c.architecture == Architecture::kGptOss ||
      file.find(a + ".expert_count")) {
    TM_RETURN_IF_ERROR(read_positive(file, a, "expert_count", c.n_expert));
    TM_RETURN_IF_ERROR(read_positive(file, a, "expert_used_count", c.n_expert_used));
    if (c.n_expert > 1024 || c.n_expert_used > c.n_expert) {
      return corrupt_data("expert_used_count " + std::to_string(c.n_expert_used) + " of expert_count " +
                          std::to_string(c.n_expert) + " is out of range");
    }
    c.n_ff_expert = c.n_ff;
    if (file.find(a + ".expert_feed_forward_length")) {
      TM_RETURN_IF_ERROR(read_positive(file, a, "expert_feed_forward_length", c.n_ff_expert));
      if (c.n_ff_expert > kMaxWidth) return corrupt_data("expert_feed_forward_length is out of range");
    }
  }

  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (!embd) return not_found("tensor 'token_embd.weight' is missing");
  if (embd->shape.size() != 2 || embd->shape[0] != c.n_embd) {
    return corrupt_data("tensor 'token_embd.weight' should be [" + std::to_string(c.n_embd) + ", n_vocab]");
  }
  c.n_vocab = static_cast<int32_t>(embd->shape[1]);
  return c;
}

std::string supported_architectures() {
  std::string names;
  for (const ArchitectureSpec& spec : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(spec.name);
  return names;
}

std::vector<std::string> honoured_arithmetic_keys(const std::string& architecture) {
  std::vector<std::string> keys;
  const ArchitectureSpec* spec = find_architecture(architecture);
  for (const ArithmeticKey& k : kArithmeticKeys) {
    if (spec != nullptr && lists(spec->honoured, k.suffix)) keys.emplace_back(k.suffix);
  }
  return keys;
}

std::vector<std::string> all_arithmetic_keys() {
  std::vector<std::string> keys;
  for (const ArithmeticKey& k : kArithmeticKeys) keys.emplace_back(k.suffix);
  return keys;
}

}  // namespace tokenmill::model

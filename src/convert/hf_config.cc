#include "convert/hf_config.h"

#include <cmath>
#include <filesystem>

#include "convert/json_file.h"

namespace tokenmill::convert {

namespace {

using json = nlohmann::json;

// Widths past 2^20 and counts past 2^16 layers are no model's: a value beyond is a typo
// or a hostile file, refused before it sizes anything.
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxVocab = int64_t{1} << 24;

Status field_error(const std::string& label, const std::string& key, const std::string& what) {
  return invalid_argument(label + ": '" + key + "' " + what);
}

// An integer field in [1, max]; absent gives `fallback` (0: required).
Status read_size(const json& c, const std::string& label, const char* key, int64_t max, int64_t& out,
                 int64_t fallback = 0) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) {
    if (fallback > 0) {
      out = fallback;
      return {};
    }
    return field_error(label, key, "is missing");
  }
  if (!it->is_number_integer()) return field_error(label, key, "is not an integer");
  const int64_t v = it->get<int64_t>();
  if (v < 1 || v > max) {
    return field_error(label, key, "is " + std::to_string(v) + ", outside [1, " + std::to_string(max) + "]");
  }
  out = v;
  return {};
}

Status read_positive_number(const json& c, const std::string& label, const char* key, double& out) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return {};  // keeps the default
  if (!it->is_number()) return field_error(label, key, "is not a number");
  const double v = it->get<double>();
  if (!(v > 0) || v > 1e12) return field_error(label, key, "is " + it->dump() + ", not a positive number");
  out = v;
  return {};
}

std::optional<int64_t> first_token_id(const json& c, const char* key) {
  auto it = c.find(key);
  if (it == c.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_array() && !it->empty() && (*it)[0].is_number_integer()) return (*it)[0].get<int64_t>();
  return std::nullopt;
}

// LongRoPE's factor lists (one per rotary pair, checked against head_dim once it is known),
// its original context (in the scaling object or, as Phi-3's configs have it, top level),
// and the attention factor: given, or sqrt(1 + ln(s) / ln(original)) for the context
// stretch s = max_position_embeddings / original (1 when not stretched), as transformers
// computes it.
Status read_longrope(const json& c, const json& r, const std::string& where, HfConfig& config) {
  LongRopeScaling s;
  for (const char* key : {"short_factor", "long_factor"}) {
    auto it = r.find(key);
    if (it == r.end() || !it->is_array() || it->empty() || it->size() > 4096) {
      return field_error(where, key, "is missing or not a list of numbers");
    }
    std::vector<double>& out = std::string(key) == "short_factor" ? s.short_factor : s.long_factor;
    for (const json& v : *it) {
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e6) {
        return field_error(where, key, "holds " + v.dump() + ", not a positive number");
      }
      out.push_back(v.get<double>());
    }
  }
  double original = 0;
  TM_RETURN_IF_ERROR(read_positive_number(c, where, "original_max_position_embeddings", original));
  TM_RETURN_IF_ERROR(read_positive_number(r, where, "original_max_position_embeddings", original));
  if (original < 2 || original > (1 << 30)) {
    return field_error(where, "original_max_position_embeddings", "is missing or out of range");
  }
  s.original_max_position_embeddings = static_cast<int64_t>(original);
  double max_positions = original;
  TM_RETURN_IF_ERROR(read_positive_number(c, where, "max_position_embeddings", max_positions));
  double factor = max_positions / original;
  TM_RETURN_IF_ERROR(read_positive_number(r, where, "factor", factor));
  s.attention_factor = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original));
  TM_RETURN_IF_ERROR(read_positive_number(r, where, "attention_factor", s.attention_factor));
  config.longrope = std::move(s);
  return {};
}

// transformers 4 writes "rope_scaling" {"rope_type", ...}; transformers 5 writes
// "rope_parameters" {"rope_theta", "rope_type", ...}. Either is read.
Status read_rope_scaling(const json& c, const std::string& label, HfConfig& config) {
  const char* key = c.contains("rope_parameters") ? "rope_parameters" : "rope_scaling";
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return {};
  if (!it->is_object()) return field_error(label, key, "is not an object");
  if (it->contains("full_attention") || it->contains("sliding_attention")) {
    // Per layer type (transformers 5's Gemma 3): each its own base, no scaling supported.
    for (const char* type : {"full_attention", "sliding_attention"}) {
      if (!it->contains(type)) continue;
      const json& r = (*it)[type];
      if (!r.is_object()) return field_error(label, key, std::string("'") + type + "' is not an object");
      const std::string rope_type = r.value("rope_type", "default");
      if (rope_type != "default") {
        return unsupported(label + " " + key + " " + type + ": type '" + rope_type + "' is not supported");
      }
      double& theta = std::string(type) == "full_attention" ? config.rope_theta : config.rope_theta_local;
      TM_RETURN_IF_ERROR(read_positive_number(r, label + " " + key + " " + type, "rope_theta", theta));
    }
    return {};
  }
  const json& r = *it;
  if (r.contains("rope_theta")) TM_RETURN_IF_ERROR(read_positive_number(r, label + " " + key, "rope_theta", config.rope_theta));
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (r.contains(key) && r[key].is_string()) {
      type = r[key].get<std::string>();
      break;
    }
  }
  if (type == "default" || type.empty()) return {};
  const std::string where = label + " " + key;
  if (type == "llama3") {
    Llama3RopeScaling s;
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "factor", s.factor));
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "low_freq_factor", s.low_freq_factor));
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "high_freq_factor", s.high_freq_factor));
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "original_max_position_embeddings",
                                            s.original_max_position_embeddings));
    if (s.high_freq_factor <= s.low_freq_factor) {
      return field_error(where, "high_freq_factor", "must be larger than low_freq_factor");
    }
    config.llama3_rope = s;
    return {};
  }
  if (type == "longrope" || type == "su") {
    return read_longrope(c, r, where, config);
  }
  if (type == "yarn") {
    YarnScaling s;
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "factor", s.factor));
    double original = 0;
    if (r.contains("original_max_position_embeddings")) {
      TM_RETURN_IF_ERROR(read_positive_number(r, where, "original_max_position_embeddings", original));
    } else {
      TM_RETURN_IF_ERROR(read_positive_number(c, label, "max_position_embeddings", original));
    }
    if (original < 2) return field_error(where, "original_max_position_embeddings", "is missing");
    s.original_max_position_embeddings = static_cast<int64_t>(original);
    if (r.contains("beta_fast")) TM_RETURN_IF_ERROR(read_positive_number(r, where, "beta_fast", s.beta_fast));
    if (r.contains("beta_slow")) TM_RETURN_IF_ERROR(read_positive_number(r, where, "beta_slow", s.beta_slow));
    // Variants GGUF readers do not compute: another attention factor, DeepSeek's mscale
    // pair (truncate false is the architecture's to judge: check_hf_config).
    for (const char* other : {"attention_factor", "mscale", "mscale_all_dim"}) {
      if (r.contains(other) && !r[other].is_null()) {
        return unsupported(where + ": YaRN with '" + other + "' is not supported");
      }
    }
    if (r.contains("truncate") && r["truncate"] == false) s.truncate = false;
    config.yarn = s;
    return {};
  }
  if (type == "linear") {
    double factor = 1.0;
    TM_RETURN_IF_ERROR(read_positive_number(r, where, "factor", factor));
    config.linear_rope_factor = factor;
    return {};
  }
  return unsupported(where + ": type '" + type + "' is not supported (supported: default, linear, llama3, longrope, yarn)");
}

}  // namespace

Result<HfConfig> parse_hf_config(const std::string& text, const std::string& label) {
  const json c = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (c.is_discarded() || !c.is_object()) return invalid_argument(label + ": not a JSON object");
  return hf_config_from_json(c, label);
}

Result<HfConfig> hf_config_from_json(const json& c, const std::string& label) {
  HfConfig config;
  if (!c.contains("model_type") || !c["model_type"].is_string()) {
    return field_error(label, "model_type", "is missing or not a string");
  }
  config.model_type = c["model_type"].get<std::string>();
  TM_RETURN_IF_ERROR(read_size(c, label, "hidden_size", kMaxWidth, config.hidden_size));
  TM_RETURN_IF_ERROR(read_size(c, label, "num_hidden_layers", 1 << 16, config.n_layers));
  TM_RETURN_IF_ERROR(read_size(c, label, "num_attention_heads", 1 << 14, config.n_heads));
  TM_RETURN_IF_ERROR(read_size(c, label, "num_key_value_heads", 1 << 14, config.n_kv_heads, config.n_heads));
  if (config.n_heads % config.n_kv_heads != 0) {
    return field_error(label, "num_attention_heads",
                       "(" + std::to_string(config.n_heads) + ") is not a multiple of num_key_value_heads (" +
                           std::to_string(config.n_kv_heads) + ")");
  }
  const int64_t default_head_dim = config.hidden_size / config.n_heads;
  TM_RETURN_IF_ERROR(read_size(c, label, "head_dim", 1 << 12, config.head_dim, std::max<int64_t>(default_head_dim, 1)));
  if (config.head_dim % 2 != 0) return field_error(label, "head_dim", "is odd; rotary pairs need an even size");
  TM_RETURN_IF_ERROR(read_size(c, label, "intermediate_size", kMaxWidth, config.intermediate_size));
  TM_RETURN_IF_ERROR(read_size(c, label, "vocab_size", kMaxVocab, config.vocab_size));
  TM_RETURN_IF_ERROR(read_size(c, label, "max_position_embeddings", int64_t{1} << 30, config.max_position_embeddings,
                               4096));
  TM_RETURN_IF_ERROR(read_positive_number(c, label, "rms_norm_eps", config.rms_norm_eps));
  if (config.rms_norm_eps > 1) return field_error(label, "rms_norm_eps", "is larger than 1");
  TM_RETURN_IF_ERROR(read_positive_number(c, label, "rope_theta", config.rope_theta));
  TM_RETURN_IF_ERROR(read_positive_number(c, label, "rope_local_base_freq", config.rope_theta_local));
  if (c.contains("tie_word_embeddings") && c["tie_word_embeddings"].is_boolean()) {
    config.tie_word_embeddings = c["tie_word_embeddings"].get<bool>();
  }
  if (c.contains("sliding_window") && c["sliding_window"].is_number_integer()) {
    const bool used = !c.contains("use_sliding_window") || !c["use_sliding_window"].is_boolean() ||
                      c["use_sliding_window"].get<bool>();
    if (used) TM_RETURN_IF_ERROR(read_size(c, label, "sliding_window", int64_t{1} << 30, config.sliding_window));
  }
  config.rotary_dim = config.head_dim;
  for (const json* where : {&c, c.contains("rope_parameters") ? &c["rope_parameters"] : nullptr}) {
    if (where == nullptr || !where->is_object() || !where->contains("partial_rotary_factor")) continue;
    const json& factor = (*where)["partial_rotary_factor"];
    if (factor.is_null()) continue;
    // transformers rotates int(head_dim * factor) values.
    const double rotated = factor.is_number() ? static_cast<double>(config.head_dim) * factor.get<double>() : -1;
    if (!(rotated >= 2 && rotated <= static_cast<double>(config.head_dim))) {
      return field_error(label, "partial_rotary_factor", "must leave 2 .. head_dim values to rotate");
    }
    config.rotary_dim = static_cast<int64_t>(rotated);
    if (config.rotary_dim % 2 != 0) {
      return field_error(label, "partial_rotary_factor", "gives an odd number of rotated values (" +
                                                             std::to_string(config.rotary_dim) + ")");
    }
  }
  TM_RETURN_IF_ERROR(read_rope_scaling(c, label, config));
  const auto n_pairs = static_cast<size_t>(config.rotary_dim / 2);
  if (config.longrope && (config.longrope->short_factor.size() != n_pairs || config.longrope->long_factor.size() != n_pairs)) {
    return field_error(label, "rope_scaling", "short_factor and long_factor need one number per rotated pair, " +
                                                  std::to_string(n_pairs) + " each");
  }
  for (const char* key : {"num_experts", "num_local_experts"}) {
    if (c.contains(key) && !c[key].is_null()) TM_RETURN_IF_ERROR(read_size(c, label, key, 1024, config.n_expert));
  }
  if (config.n_expert > 0) {
    TM_RETURN_IF_ERROR(read_size(c, label, "num_experts_per_tok", config.n_expert, config.n_expert_used));
    TM_RETURN_IF_ERROR(read_size(c, label, "moe_intermediate_size", kMaxWidth, config.expert_intermediate_size,
                                 config.intermediate_size));
  }
  config.bos_token_id = first_token_id(c, "bos_token_id");
  config.eos_token_id = first_token_id(c, "eos_token_id");
  config.raw = c;
  return config;
}

Result<HfConfig> read_hf_config(const std::string& dir) {
  const std::filesystem::path path = std::filesystem::path(dir) / "config.json";
  auto c = read_json_object(path, /*required=*/true);
  if (!c.ok()) return c.status();
  return hf_config_from_json(*c, path.string());
}

}  // namespace tokenmill::convert

// A Hugging Face model's config.json, read and range-checked: the hyperparameters the
// converter writes as GGUF metadata and checks the tensors' shapes against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tokenmill::convert {

// Llama 3.1+'s rope_scaling {"rope_type": "llama3", ...}.
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192;
};

// Phi-3's LongRoPE (rope_type "longrope", formerly "su"): per-pair frequency divisors for
// contexts up to the original one (short) and beyond it (long), and the factor on the
// rotated q and k.
struct LongRopeScaling {
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  int64_t original_max_position_embeddings = 0;
  double attention_factor = 1.0;
};

// YaRN (rope_type "yarn": Qwen 2.5 and Qwen 3 long-context, gpt-oss): frequencies
// blended between interpolated (divided by factor) and extrapolated by a ramp over the
// rotary pairs between beta_fast and beta_slow rotations in the original context, and q·k
// scaled by (1 + 0.1 ln factor)^2.
struct YarnScaling {
  double factor = 1.0;
  int64_t original_max_position_embeddings = 0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  // false: the ramp's ends left fractional (gpt-oss's configs). GGUF has no key for it and
  // its readers round them, as tokenmill does (check_hf_config accepts it for gpt_oss only).
  bool truncate = true;
};

struct HfConfig {
  std::string model_type;
  int64_t hidden_size = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  // The leading values of each head that RoPE rotates: head_dim * partial_rotary_factor
  // (top level, as Phi-4-mini's config.json has it, or in rope_parameters); head_dim
  // without one.
  int64_t rotary_dim = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  double rope_theta_local = 0;  // sliding-window layers' base where it differs (Gemma 3); 0: rope_theta
  bool tie_word_embeddings = false;
  std::optional<Llama3RopeScaling> llama3_rope;
  std::optional<LongRopeScaling> longrope;
  double linear_rope_factor = 0;  // rope_scaling {"rope_type": "linear"}: positions divided by it
  std::optional<YarnScaling> yarn;
  int64_t sliding_window = 0;     // 0: none
  // Mixture of experts (num_experts or num_local_experts; 0: dense), the experts each
  // token uses, and each expert's FFN width (moe_intermediate_size, else intermediate_size).
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t expert_intermediate_size = 0;
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> eos_token_id;  // the first, when config.json lists several
  nlohmann::json raw;                   // the whole file, for architecture-specific fields
};

// Reads DIR/config.json. Sizes must be positive and within what any real model uses;
// heads must divide evenly; unknown rope scaling types are refused.
Result<HfConfig> read_hf_config(const std::string& dir);
Result<HfConfig> parse_hf_config(const std::string& text, const std::string& label);
Result<HfConfig> hf_config_from_json(const nlohmann::json& config, const std::string& label);

}  // namespace tokenmill::convert

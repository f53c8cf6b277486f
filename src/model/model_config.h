// Hyperparameters of a model, read from GGUF metadata ("<arch>.embedding_length" ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "ops/backend.h"

namespace tokenmill::model {

enum class Architecture {
  kGemma2, kGemma3, kGptOss, kGranite, kLlama, kOlmo2, kPhi3, kQwen2, kQwen3, kQwen3Moe, kSmolLM3
};

// YaRN rope scaling (rope.scaling.type "yarn"): each rotary pair's frequency blended between
// interpolated (divided by factor) and extrapolated by a ramp over the pairs that turn
// between beta_fast and beta_slow times within the original context; the rotated q and k
// scaled by 1 + 0.1 ln(factor) (folded into attention_scale).
struct YarnRope {
  float factor = 1.0f;
  int32_t original_context = 0;
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  // Whether the ramp's end pairs are rounded outwards to whole pairs, as llama.cpp does for
  // every model; gpt-oss was trained without (its configs' truncate false), so for that
  // architecture tokenmill computes them as trained, as transformers does. GGUF has no key.
  bool round_ramp_ends = true;
};

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  std::string architecture_name;  // general.architecture
  std::string name;               // general.name
  int32_t n_vocab = 0;
  int32_t n_embd = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;           // key_length; value_length must match
  int32_t n_rot = 0;              // rope.dimension_count: leading values of each head that RoPE rotates
  int32_t n_ff = 0;
  int32_t context_length = 0;     // trained context
  float rms_eps = 1e-6f;
  float rope_freq_base = 10000.0f;
  float rope_freq_base_local = 10000.0f;  // sliding-window layers (Gemma 3)
  float rope_freq_scale = 1.0f;
  std::optional<YarnRope> yarn;
  ops::RopeStyle rope_style = ops::RopeStyle::kNormal;
  // LongRoPE (Phi-3 128k, Phi-3.5): per-pair divisors from rope_factors_short.weight, or
  // rope_factors_long.weight when a sequence may grow past rope_original_context (chosen
  // at load, LoadOptions::max_context). Its attention factor is in attention_scale.
  bool longrope = false;
  bool rope_long_factors = false;
  int32_t rope_original_context = 0;
  int32_t sliding_window = 0;             // 0: none
  std::vector<bool> layer_is_sliding;     // [n_layers]
  std::vector<bool> layer_has_rope;       // [n_layers]; false: no rotary embedding (SmolLM3's NoPE layers)
  float attention_scale = 1.0f;           // multiplies q·k
  // OLMo 2: the q and k norms normalize each token's whole q and k (all heads together),
  // with weights of q_dim and kv_dim; otherwise (Qwen 3, Gemma 3) each head on its own.
  bool qk_norm_whole = false;
  float residual_scale = 1.0f;            // Granite: multiplies attention and FFN outputs before the residual add
  float logit_scale = 1.0f;               // Granite: logits are divided by this
  float final_logit_softcap = 0.0f;       // 0: off
  float attn_logit_softcap = 0.0f;        // 0: off; else q·k scores = cap * tanh(scores / cap) (Gemma 2)
  float embedding_scale = 1.0f;           // input embeddings are multiplied by this
  // Mixture of experts (Mixtral, Qwen 3 MoE): each layer's FFN is n_expert expert FFNs of
  // n_ff_expert rows, of which a router picks n_expert_used per token, their weights
  // renormalized to sum to 1. n_expert = 0: dense.
  int32_t n_expert = 0;
  int32_t n_expert_used = 0;
  int32_t n_ff_expert = 0;
  // gpt-oss: the experts' SwiGLU clamps the gate from above and up from both sides at this
  // limit, sharpens the gate's sigmoid by kClampedSwigluAlpha and adds 1 to up:
  // min(g, L) * sigmoid(1.702 min(g, L)) * (clamp(u, -L, L) + 1). 0: plain SwiGLU.
  float swiglu_limit = 0.0f;
  static constexpr float kClampedSwigluAlpha = 1.702f;

  int32_t q_dim() const { return n_heads * head_dim; }
  // Whether logits get a final transform (soft-cap, scale) that a fused argmax must come after.
  bool transforms_logits() const { return final_logit_softcap > 0.0f || logit_scale != 1.0f; }
  int32_t kv_dim() const { return n_kv_heads * head_dim; }
};

Result<ModelConfig> read_model_config(const gguf::File& file);

// YaRN's per-pair divisors of the rotary frequencies ([n_rot / 2], as rope_freqs.weight's
// are applied). REQUIRES: config.yarn.
std::vector<float> yarn_rope_divisors(const ModelConfig& config);

// The general.architecture names read_model_config accepts, comma-separated.
std::string supported_architectures();
// The <arch>.* metadata keys (suffixes after "<arch>.") that change a model's arithmetic
// and that an architecture honours; every other such key in a file is refused at load
// unless its value is the neutral one (model_config.cc lists both).
std::vector<std::string> honoured_arithmetic_keys(const std::string& architecture);
std::vector<std::string> all_arithmetic_keys();

}  // namespace tokenmill::model

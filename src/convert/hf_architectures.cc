#include "convert/hf_architectures.h"

#include <cmath>
#include <numbers>
#include <span>

#include "convert/hf_bert.h"
#include "convert/hf_gpt_oss.h"

namespace tokenmill::convert {

namespace {

// A Hugging Face name (or suffix) and the GGUF one it becomes.
struct NamePair {
  const char* hf;
  const char* gguf;
};

constexpr HfArchitecture kArchitectures[] = {
    {.model_type = "llama", .gguf_arch = "llama", .permute_qk = true},
    // llama.cpp runs Mistral 7B-style models as llama. Mistral 7B v0.1's sliding window
    // (every layer) is written as llama.attention.sliding_window, which tokenmill applies
    // and llama.cpp ignores.
    {.model_type = "mistral", .gguf_arch = "llama", .permute_qk = true, .sliding_window = true},
    {.model_type = "qwen2", .gguf_arch = "qwen2", .qkv_bias = true},
    {.model_type = "qwen3", .gguf_arch = "qwen3", .qk_norm = true},
    {.model_type = "qwen3_moe", .gguf_arch = "qwen3moe", .qk_norm = true, .moe = MoeLayout::kQwen},
    // llama.cpp runs Mixtral as llama with experts.
    {.model_type = "mixtral", .gguf_arch = "llama", .permute_qk = true, .moe = MoeLayout::kMixtral,
     .sliding_window = true},
    {.model_type = "phi3", .gguf_arch = "phi3", .fused = true, .sliding_window = true},
    {.model_type = "gemma2", .gguf_arch = "gemma2", .gemma = true, .activation = "gelu_pytorch_tanh"},
    {.model_type = "gemma3_text", .gguf_arch = "gemma3", .qk_norm = true, .gemma = true,
     .activation = "gelu_pytorch_tanh"},
    {.model_type = "bert", .gguf_arch = "bert", .activation = "gelu", .encoder = true},
    {.model_type = "smollm3", .gguf_arch = "smollm3", .permute_qk = true, .nope_every_fourth = true},
    {.model_type = "olmo2", .gguf_arch = "olmo2", .qk_norm = true, .post_norms_only = true},
    {.model_type = "granite", .gguf_arch = "granite", .permute_qk = true, .multipliers = true},
    {.model_type = "gpt_oss", .gguf_arch = "gpt-oss", .qkv_bias = true, .moe = MoeLayout::kGptOss, .gpt_oss = true},
};

// gpt-oss's tensors beside the common ones (after "model.layers.N." and "blk.N.").
constexpr NamePair kGptOssNames[] = {
    {"self_attn.o_proj.bias", "attn_output.bias"},
    {"self_attn.sinks", "attn_sinks.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"mlp.router.weight", "ffn_gate_inp.weight"},
    {"mlp.router.bias", "ffn_gate_inp.bias"},
};

// OLMo 2's two norms of a block, both after their half.
constexpr NamePair kPostNorms[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

// Granite's config.json multipliers and the GGUF keys (after "<arch>.") they become.
constexpr NamePair kGraniteMultipliers[] = {
    {"embedding_multiplier", "embedding_scale"},
    {"residual_multiplier", "residual_scale"},
    {"attention_multiplier", "attention.scale"},
    {"logits_scaling", "logit_scale"},
};

// Gemma's four norms of a block (the others' post_attention_layernorm is their FFN norm).
constexpr NamePair kGemmaNorms[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
};

// The period of a sliding/full layer pattern that repeats (sliding layers, then one full
// layer), or 0 if layer_types is absent or follows no such pattern.
int64_t sliding_period(const HfConfig& c) {
  const auto it = c.raw.find("layer_types");
  if (it == c.raw.end() || !it->is_array() || it->size() != static_cast<size_t>(c.n_layers)) return 0;
  std::vector<bool> sliding;
  for (const auto& t : *it) sliding.push_back(t.is_string() && t.get<std::string>() == "sliding_attention");
  for (int64_t period = 1; period <= c.n_layers; ++period) {
    bool fits = true;
    for (int64_t l = 0; l < c.n_layers && fits; ++l) fits = sliding[static_cast<size_t>(l)] == (l % period < period - 1);
    if (fits) return period;
  }
  return 0;
}

// An expert's matrices: Hugging Face suffix after "<experts prefix>.E." and the GGUF stack.
constexpr NamePair kQwenExperts[] = {
    {"gate_proj.weight", "ffn_gate_exps.weight"},
    {"up_proj.weight", "ffn_up_exps.weight"},
    {"down_proj.weight", "ffn_down_exps.weight"},
};
constexpr NamePair kMixtralExperts[] = {
    {"w1.weight", "ffn_gate_exps.weight"},
    {"w3.weight", "ffn_up_exps.weight"},
    {"w2.weight", "ffn_down_exps.weight"},
};

// Per-layer tensors: Hugging Face suffix after "model.layers.N." and GGUF suffix after "blk.N.".
constexpr NamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

}  // namespace

std::optional<std::pair<int64_t, std::string>> leading_index(const std::string& text, int64_t limit) {
  const size_t dot = text.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 6) return std::nullopt;
  const std::string digits = text.substr(0, dot);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t value = std::stoll(digits);
  if (value >= limit) return std::nullopt;
  return std::make_pair(value, text.substr(dot + 1));
}

Result<HfArchitecture> find_hf_architecture(const std::string& model_type) {
  for (const HfArchitecture& a : kArchitectures) {
    if (model_type == a.model_type) return a;
  }
  return unsupported("model_type '" + model_type + "' is not supported (supported: " + supported_model_types() + ")");
}

std::string supported_model_types() {
  std::string s;
  for (const HfArchitecture& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.model_type);
  return s;
}

std::vector<ExpectedTensor> expected_tensors(const HfArchitecture& arch, const HfConfig& c) {
  if (arch.encoder) return bert_expected_tensors(c);
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  std::vector<ExpectedTensor> out = {{"token_embd.weight", {c.hidden_size, c.vocab_size}},
                                     {"output_norm.weight", {c.hidden_size}}};
  if (!c.tie_word_embeddings) out.push_back({"output.weight", {c.hidden_size, c.vocab_size}});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (!arch.post_norms_only) out.push_back({p + "attn_norm.weight", {c.hidden_size}});
    if (arch.fused) {
      out.push_back({p + "attn_qkv.weight", {c.hidden_size, q_dim + 2 * kv_dim}});
    } else {
      out.push_back({p + "attn_q.weight", {c.hidden_size, q_dim}});
      out.push_back({p + "attn_k.weight", {c.hidden_size, kv_dim}});
      out.push_back({p + "attn_v.weight", {c.hidden_size, kv_dim}});
    }
    if (arch.qkv_bias) {
      out.push_back({p + "attn_q.bias", {q_dim}});
      out.push_back({p + "attn_k.bias", {kv_dim}});
      out.push_back({p + "attn_v.bias", {kv_dim}});
    }
    if (arch.qk_norm) {
      out.push_back({p + "attn_q_norm.weight", {arch.post_norms_only ? q_dim : c.head_dim}});
      out.push_back({p + "attn_k_norm.weight", {arch.post_norms_only ? kv_dim : c.head_dim}});
    }
    out.push_back({p + "attn_output.weight", {q_dim, c.hidden_size}});
    if (arch.gpt_oss) {
      // The experts are hf_gpt_oss.h's to check and write.
      out.push_back({p + "attn_output.bias", {c.hidden_size}});
      out.push_back({p + "attn_sinks.weight", {c.n_heads}});
      out.push_back({p + "post_attention_norm.weight", {c.hidden_size}});
      out.push_back({p + "ffn_gate_inp.weight", {c.hidden_size, c.n_expert}});
      out.push_back({p + "ffn_gate_inp.bias", {c.n_expert}});
      continue;
    }
    if (!arch.post_norms_only) out.push_back({p + "ffn_norm.weight", {c.hidden_size}});
    if (arch.gemma || arch.post_norms_only) {
      out.push_back({p + "post_attention_norm.weight", {c.hidden_size}});
      out.push_back({p + "post_ffw_norm.weight", {c.hidden_size}});
    }
    if (arch.moe != MoeLayout::kNone) {
      const int64_t ff = c.expert_intermediate_size, n = c.n_expert;
      out.push_back({p + "ffn_gate_inp.weight", {c.hidden_size, n}});
      out.push_back({p + "ffn_gate_exps.weight", {c.hidden_size, ff, n}, n});
      out.push_back({p + "ffn_up_exps.weight", {c.hidden_size, ff, n}, n});
      out.push_back({p + "ffn_down_exps.weight", {ff, c.hidden_size, n}, n});
      continue;
    }
    if (arch.fused) {
      out.push_back({p + "ffn_up.weight", {c.hidden_size, 2 * c.intermediate_size}});
    } else {
      out.push_back({p + "ffn_gate.weight", {c.hidden_size, c.intermediate_size}});
      out.push_back({p + "ffn_up.weight", {c.hidden_size, c.intermediate_size}});
    }
    out.push_back({p + "ffn_down.weight", {c.intermediate_size, c.hidden_size}});
  }
  return out;
}

Result<std::optional<TensorPlace>> gguf_tensor_place(const HfArchitecture& arch, const HfConfig& c,
                                                     const std::string& hf) {
  using Place = std::optional<TensorPlace>;
  if (arch.encoder) return bert_tensor_place(c, hf);
  if (hf == "model.embed_tokens.weight") return Place(TensorPlace{"token_embd.weight"});
  if (hf == "model.norm.weight") return Place(TensorPlace{"output_norm.weight"});
  if (hf == "lm_head.weight") {
    // Some tied checkpoints store the output matrix anyway; the embedding serves for it.
    if (c.tie_word_embeddings) return Place();
    return Place(TensorPlace{"output.weight"});
  }
  if (hf.ends_with(".rotary_emb.inv_freq")) return Place();
  const std::string prefix = "model.layers.";
  const auto layer = hf.starts_with(prefix) ? leading_index(hf.substr(prefix.size()), c.n_layers) : std::nullopt;
  if (layer) {
    const std::string blk = "blk." + std::to_string(layer->first) + ".";
    const std::string& suffix = layer->second;
    const bool moe = arch.moe != MoeLayout::kNone;
    if (arch.gemma) {
      for (const NamePair& n : kGemmaNorms) {
        if (suffix == n.hf) return Place(TensorPlace{blk + n.gguf});
      }
    }
    if (arch.post_norms_only) {
      for (const NamePair& n : kPostNorms) {
        if (suffix == n.hf) return Place(TensorPlace{blk + n.gguf});
      }
    }
    if (arch.gpt_oss) {
      for (const NamePair& n : kGptOssNames) {
        if (suffix == n.hf) return Place(TensorPlace{blk + n.gguf});
      }
      if (is_gpt_oss_expert_tensor(suffix)) return Place();  // written by add_gpt_oss_experts
    }
    if (arch.fused) {
      if (suffix == "self_attn.qkv_proj.weight") return Place(TensorPlace{blk + "attn_qkv.weight"});
      if (suffix == "mlp.gate_up_proj.weight") return Place(TensorPlace{blk + "ffn_up.weight"});
    }
    for (const NamePair& n : kLayerNames) {
      if (suffix != n.hf) continue;
      const std::string g = n.gguf;
      const bool is_bias = g.ends_with(".bias");
      const bool is_qk_norm = g == "attn_q_norm.weight" || g == "attn_k_norm.weight";
      const bool is_dense_ffn = g == "ffn_gate.weight" || g == "ffn_up.weight" || g == "ffn_down.weight";
      if ((is_bias && !arch.qkv_bias) || (is_qk_norm && !arch.qk_norm) || (is_dense_ffn && moe)) break;
      return Place(TensorPlace{blk + g});
    }
    if (moe) {
      const bool qwen = arch.moe == MoeLayout::kQwen;
      const std::string block = qwen ? "mlp." : "block_sparse_moe.";
      if (suffix == block + "gate.weight") return Place(TensorPlace{blk + "ffn_gate_inp.weight"});
      const auto expert = suffix.starts_with(block + "experts.")
                              ? leading_index(suffix.substr(block.size() + 8), c.n_expert)
                              : std::nullopt;
      if (expert) {
        for (const NamePair& n : qwen ? std::span<const NamePair>(kQwenExperts) : std::span<const NamePair>(kMixtralExperts)) {
          if (expert->second == n.hf) return Place(TensorPlace{blk + n.gguf, expert->first});
        }
      }
    }
  }
  return unsupported("tensor '" + hf + "' has no place in a " + arch.model_type + " model with " +
                     std::to_string(c.n_layers) + " layers" +
                     (c.n_expert > 0 ? " and " + std::to_string(c.n_expert) + " experts" : ""));
}

Status check_hf_config(const HfArchitecture& arch, const HfConfig& c) {
  const nlohmann::json& raw = c.raw;
  // Each architecture gates its FFN with one activation; another would load and run,
  // wrongly.
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    if (raw.contains(key) && raw[key].is_string() && raw[key].get<std::string>() != arch.activation) {
      return unsupported("config.json: " + std::string(key) + " '" + raw[key].get<std::string>() +
                         "' is not supported for " + arch.model_type + " (" + arch.activation + " only)");
    }
  }
  if (arch.encoder) return check_bert_config(c);
  if (arch.gemma) {
    // GGUF has no key for the query scale: llama.cpp uses 1/sqrt(head_dim), or
    // 1/sqrt(hidden / heads) for Gemma 2 27B (46 layers) and Gemma 3 27B (62 layers).
    const bool big = c.n_layers == (std::string(arch.gguf_arch) == "gemma2" ? 46 : 62);
    const double expected = big ? static_cast<double>(c.hidden_size / c.n_heads) : static_cast<double>(c.head_dim);
    if (raw.contains("query_pre_attn_scalar") && raw["query_pre_attn_scalar"].is_number() &&
        raw["query_pre_attn_scalar"].get<double>() != expected) {
      return unsupported("config.json: query_pre_attn_scalar " + raw["query_pre_attn_scalar"].dump() +
                         " differs from the " + std::to_string(static_cast<int64_t>(expected)) +
                         " that GGUF readers assume for this size");
    }
    const bool gemma2 = std::string(arch.gguf_arch) == "gemma2";
    if (!gemma2 && raw.contains("attn_logit_softcapping") && !raw["attn_logit_softcapping"].is_null()) {
      return unsupported("config.json: attention soft-capping is not supported for gemma3");
    }
    const int64_t period = sliding_period(c);
    if (raw.contains("layer_types") && (period == 0 || (gemma2 && period != 2))) {
      return unsupported("config.json: layer_types do not follow the sliding/full pattern " +
                         std::string(gemma2 ? "of Gemma 2 (every other layer sliding)" : "of Gemma 3 (N sliding, then one full)"));
    }
  }
  if (c.rotary_dim != c.head_dim && !arch.fused) {
    // Phi-3's attention rotates part of the head (Phi-4-mini); the others' whole heads.
    return unsupported(std::string("config.json: partial_rotary_factor other than 1 is supported for phi3 only, not ") +
                       arch.model_type);
  }
  if (c.yarn && !c.yarn->truncate && !arch.gpt_oss) {
    return unsupported(std::string("config.json: YaRN with truncate false is not supported for ") + arch.model_type);
  }
  if (arch.gpt_oss) {
    if (raw.contains("swiglu_limit") && !(raw["swiglu_limit"].is_number() && raw["swiglu_limit"].get<double>() == 7.0)) {
      return unsupported("config.json: swiglu_limit other than 7 is not supported (GGUF has no key for it)");
    }
    if (raw.contains("layer_types") && sliding_period(c) != 2) {
      return unsupported("config.json: layer_types do not follow gpt-oss's pattern (every other layer sliding, "
                         "from the first)");
    }
    if (!raw.value("attention_bias", true)) {
      return unsupported("config.json: gpt_oss without attention biases is not supported");
    }
  }
  if (c.yarn && (arch.fused || arch.gemma || c.rotary_dim != c.head_dim)) {
    return unsupported(std::string("config.json: YaRN is not supported for ") + arch.model_type +
                       (c.rotary_dim != c.head_dim ? " with partial rotary" : ""));
  }
  if (arch.fused) {
    if (c.llama3_rope || c.linear_rope_factor > 0) {
      return unsupported("config.json: Phi-3 with rope scaling other than LongRoPE is not supported");
    }
  } else if (c.longrope) {
    return unsupported(std::string("config.json: LongRoPE is supported for phi3 only, not ") + arch.model_type);
  }
  if (c.sliding_window > 0 && !arch.gemma && !arch.sliding_window && !arch.gpt_oss) {
    // Qwen 2/3 slide only from max_window_layers on, a pattern GGUF has no key for.
    return unsupported(std::string("config.json: a sliding window (use_sliding_window) is not supported for ") +
                       arch.model_type);
  }
  if (arch.nope_every_fourth) {
    // transformers' default: no_rope_layers[l] = 1 unless (l + 1) % no_rope_layer_interval == 0.
    const int64_t interval = raw.value("no_rope_layer_interval", int64_t{4});
    const auto it = raw.find("no_rope_layers");
    bool fits = interval == 4;
    if (it != raw.end() && !it->is_null()) {
      fits = it->is_array() && it->size() == static_cast<size_t>(c.n_layers);
      for (int64_t l = 0; fits && l < c.n_layers; ++l) {
        const nlohmann::json& v = (*it)[static_cast<size_t>(l)];
        fits = v.is_number_integer() && v.get<int64_t>() == ((l + 1) % 4 != 0 ? 1 : 0);
      }
    }
    if (!fits) {
      return unsupported("config.json: no_rope_layers other than every fourth layer without RoPE is not supported "
                         "(GGUF has no key for another pattern)");
    }
  }
  if (arch.multipliers) {
    for (const NamePair& m : kGraniteMultipliers) {
      if (raw.contains(m.hf) && !(raw[m.hf].is_number() && raw[m.hf].get<double>() > 0)) {
        return invalid_argument(std::string("config.json: ") + m.hf + " must be a positive number");
      }
    }
  }
  if (arch.moe == MoeLayout::kNone && c.n_expert > 0) {
    return unsupported(std::string("config.json: a ") + arch.model_type + " model with experts is not supported");
  }
  if (arch.moe != MoeLayout::kNone && c.n_expert == 0) {
    return invalid_argument(std::string("config.json: a ") + arch.model_type + " model needs num_experts");
  }
  if (arch.moe == MoeLayout::kQwen) {
    if (raw.contains("mlp_only_layers") && raw["mlp_only_layers"].is_array() && !raw["mlp_only_layers"].empty()) {
      return unsupported("config.json: dense layers between the sparse ones (mlp_only_layers) are not supported");
    }
    if (raw.value("decoder_sparse_step", 1) != 1) {
      return unsupported("config.json: decoder_sparse_step other than 1 is not supported");
    }
    if (!raw.value("norm_topk_prob", true)) {
      return unsupported("config.json: norm_topk_prob false (routing weights not renormalized) is not supported");
    }
  }
  return {};
}

void apply_architecture_defaults(const HfArchitecture& arch, HfConfig& c) {
  if (arch.gemma && !c.raw.contains("tie_word_embeddings")) c.tie_word_embeddings = true;
}

void write_architecture_metadata(const HfArchitecture& arch, const HfConfig& c, gguf::Writer& w) {
  const std::string a = arch.gguf_arch;
  w.set_string("general.architecture", a);
  w.set_u32(a + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  w.set_u32(a + ".context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.set_f32(a + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(c.rotary_dim));
  if (c.n_expert > 0) {
    w.set_u32(a + ".expert_count", static_cast<uint32_t>(c.n_expert));
    w.set_u32(a + ".expert_used_count", static_cast<uint32_t>(c.n_expert_used));
    w.set_u32(a + ".expert_feed_forward_length", static_cast<uint32_t>(c.expert_intermediate_size));
  }
  if (arch.gemma) {
    auto number = [&](const char* key) -> std::optional<double> {
      if (c.raw.contains(key) && c.raw[key].is_number()) return c.raw[key].get<double>();
      return std::nullopt;
    };
    if (auto cap = number("final_logit_softcapping")) w.set_f32(a + ".final_logit_softcapping", static_cast<float>(*cap));
    if (auto cap = number("attn_logit_softcapping")) w.set_f32(a + ".attn_logit_softcapping", static_cast<float>(*cap));
    if (c.sliding_window > 0) w.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
    if (a == "gemma3") {
      if (const int64_t period = sliding_period(c)) {
        w.set_u32(a + ".attention.sliding_window_pattern", static_cast<uint32_t>(period));
      }
      w.set_f32(a + ".rope.freq_base_swa", static_cast<float>(c.rope_theta_local > 0 ? c.rope_theta_local : 10000.0));
    }
  }
  if (arch.multipliers) {  // transformers' defaults are 1 for all four
    for (const NamePair& m : kGraniteMultipliers) {
      w.set_f32(a + "." + m.gguf, static_cast<float>(c.raw.contains(m.hf) ? c.raw[m.hf].get<double>() : 1.0));
    }
  }
  if ((arch.sliding_window || arch.gpt_oss) && c.sliding_window > 0) {
    w.set_u32(a + ".attention.sliding_window", static_cast<uint32_t>(c.sliding_window));
  }
  if (c.longrope) {  // the factors themselves are the rope_factors_{short,long}.weight tensors
    w.set_f32(a + ".rope.scaling.attn_factor", static_cast<float>(c.longrope->attention_factor));
    w.set_u32(a + ".rope.scaling.original_context_length",
              static_cast<uint32_t>(c.longrope->original_max_position_embeddings));
  }
  if (c.yarn) {  // as llama.cpp's converter writes it; beta_fast/slow only where not 32/1
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", static_cast<float>(c.yarn->factor));
    w.set_u32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(c.yarn->original_max_position_embeddings));
    if (c.yarn->beta_fast != 32.0) w.set_f32(a + ".rope.scaling.yarn_beta_fast", static_cast<float>(c.yarn->beta_fast));
    if (c.yarn->beta_slow != 1.0) w.set_f32(a + ".rope.scaling.yarn_beta_slow", static_cast<float>(c.yarn->beta_slow));
  }
  if (c.linear_rope_factor > 0) {
    w.set_string(a + ".rope.scaling.type", "linear");
    w.set_f32(a + ".rope.scaling.factor", static_cast<float>(c.linear_rope_factor));
  }
}

std::vector<float> llama3_rope_divisors(const HfConfig& c) {
  const Llama3RopeScaling& s = *c.llama3_rope;
  const double low_freq_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const double high_freq_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
  std::vector<float> divisors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const double freq = 1.0 / std::pow(c.rope_theta, static_cast<double>(i) / static_cast<double>(c.head_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    double divisor = 1.0;
    if (wavelen > low_freq_wavelen) {
      divisor = s.factor;
    } else if (wavelen >= high_freq_wavelen) {
      // Between the two: the frequency is blended from scaled and unscaled.
      const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      divisor = 1.0 / ((1 - smooth) / s.factor + smooth);
    }
    divisors.push_back(static_cast<float>(divisor));
  }
  return divisors;
}

}  // namespace tokenmill::convert

#include "convert/hf_architectures.h"

#include <cmath>
#include <numbers>

namespace tokenmill::convert {

namespace {

constexpr HfArchitecture kArchitectures[] = {
    {.model_type = "llama", .gguf_arch = "llama", .permute_qk = true},
    // llama.cpp runs Mistral 7B-style models as llama (their sliding window, where set, is
    // longer than the contexts they are run at).
    {.model_type = "mistral", .gguf_arch = "llama", .permute_qk = true},
    {.model_type = "qwen2", .gguf_arch = "qwen2", .qkv_bias = true},
    {.model_type = "qwen3", .gguf_arch = "qwen3", .qk_norm = true},
};

// Per-layer tensors: Hugging Face suffix after "model.layers.N." and GGUF suffix after "blk.N.".
struct LayerName {
  const char* hf;
  const char* gguf;
};
constexpr LayerName kLayerNames[] = {
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
  const int64_t q_dim = c.n_heads * c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  std::vector<ExpectedTensor> out = {{"token_embd.weight", {c.hidden_size, c.vocab_size}},
                                     {"output_norm.weight", {c.hidden_size}}};
  if (!c.tie_word_embeddings) out.push_back({"output.weight", {c.hidden_size, c.vocab_size}});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    out.push_back({p + "attn_norm.weight", {c.hidden_size}});
    out.push_back({p + "attn_q.weight", {c.hidden_size, q_dim}});
    out.push_back({p + "attn_k.weight", {c.hidden_size, kv_dim}});
    out.push_back({p + "attn_v.weight", {c.hidden_size, kv_dim}});
    if (arch.qkv_bias) {
      out.push_back({p + "attn_q.bias", {q_dim}});
      out.push_back({p + "attn_k.bias", {kv_dim}});
      out.push_back({p + "attn_v.bias", {kv_dim}});
    }
    if (arch.qk_norm) {
      out.push_back({p + "attn_q_norm.weight", {c.head_dim}});
      out.push_back({p + "attn_k_norm.weight", {c.head_dim}});
    }
    out.push_back({p + "attn_output.weight", {q_dim, c.hidden_size}});
    out.push_back({p + "ffn_norm.weight", {c.hidden_size}});
    out.push_back({p + "ffn_gate.weight", {c.hidden_size, c.intermediate_size}});
    out.push_back({p + "ffn_up.weight", {c.hidden_size, c.intermediate_size}});
    out.push_back({p + "ffn_down.weight", {c.intermediate_size, c.hidden_size}});
  }
  return out;
}

Result<std::optional<std::string>> gguf_tensor_name(const HfArchitecture& arch, const HfConfig& c,
                                                     const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return std::optional<std::string>("token_embd.weight");
  if (hf == "model.norm.weight") return std::optional<std::string>("output_norm.weight");
  if (hf == "lm_head.weight") {
    // Some tied checkpoints store the output matrix anyway; the embedding serves for it.
    if (c.tie_word_embeddings) return std::optional<std::string>();
    return std::optional<std::string>("output.weight");
  }
  if (hf.ends_with(".rotary_emb.inv_freq")) return std::optional<std::string>();
  const std::string prefix = "model.layers.";
  if (hf.starts_with(prefix)) {
    const size_t dot = hf.find('.', prefix.size());
    const std::string index = hf.substr(prefix.size(), dot == std::string::npos ? std::string::npos : dot - prefix.size());
    const bool numeric = !index.empty() && index.size() <= 6 &&
                         index.find_first_not_of("0123456789") == std::string::npos;
    if (numeric && dot != std::string::npos && std::stoll(index) < c.n_layers) {
      const std::string suffix = hf.substr(dot + 1);
      for (const LayerName& n : kLayerNames) {
        if (suffix != n.hf) continue;
        const std::string g = n.gguf;
        const bool is_bias = g.ends_with(".bias");
        const bool is_qk_norm = g == "attn_q_norm.weight" || g == "attn_k_norm.weight";
        if ((is_bias && !arch.qkv_bias) || (is_qk_norm && !arch.qk_norm)) break;
        return std::optional<std::string>("blk." + index + "." + g);
      }
    }
  }
  return unsupported("tensor '" + hf + "' has no place in a " + arch.model_type + " model with " +
                     std::to_string(c.n_layers) + " layers");
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
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(c.head_dim));
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

#include "convert/hf_bert.h"

#include <filesystem>

#include "convert/json_file.h"

namespace tokenmill::convert {

namespace {

// A Hugging Face name (or part of one) and the GGUF one it becomes.
struct NamePair {
  const char* hf;
  const char* gguf;
};

// A layer's tensors: Hugging Face name after "encoder.layer.N." and GGUF name after "blk.N."
// (each with a .weight and a .bias).
constexpr NamePair kLayerParts[] = {
    {"attention.self.query", "attn_q"},
    {"attention.self.key", "attn_k"},
    {"attention.self.value", "attn_v"},
    {"attention.output.dense", "attn_output"},
    {"attention.output.LayerNorm", "attn_output_norm"},
    {"intermediate.dense", "ffn_up"},
    {"output.dense", "ffn_down"},
    {"output.LayerNorm", "layer_output_norm"},
};

constexpr NamePair kEmbeddingParts[] = {
    {"embeddings.word_embeddings.weight", "token_embd.weight"},
    {"embeddings.position_embeddings.weight", "position_embd.weight"},
    {"embeddings.token_type_embeddings.weight", "token_types.weight"},
    {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
    {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
};

// llama.cpp's LLAMA_POOLING_TYPE_*.
constexpr uint32_t kPoolingMean = 1;
constexpr uint32_t kPoolingCls = 2;
constexpr uint32_t kPoolingLast = 3;

int64_t type_vocab_size(const HfConfig& c) {
  const auto it = c.raw.find("type_vocab_size");
  return it != c.raw.end() && it->is_number_integer() ? it->get<int64_t>() : 2;
}

}  // namespace

std::vector<ExpectedTensor> bert_expected_tensors(const HfConfig& c) {
  const int64_t h = c.hidden_size, ff = c.intermediate_size;
  std::vector<ExpectedTensor> out = {
      {"token_embd.weight", {h, c.vocab_size}},
      {"position_embd.weight", {h, c.max_position_embeddings}},
      {"token_types.weight", {h, type_vocab_size(c)}},
      {"token_embd_norm.weight", {h}},
      {"token_embd_norm.bias", {h}},
  };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      out.push_back({p + m + ".weight", {h, h}});
      out.push_back({p + m + ".bias", {h}});
    }
    out.push_back({p + "attn_output_norm.weight", {h}});
    out.push_back({p + "attn_output_norm.bias", {h}});
    out.push_back({p + "ffn_up.weight", {h, ff}});
    out.push_back({p + "ffn_up.bias", {ff}});
    out.push_back({p + "ffn_down.weight", {ff, h}});
    out.push_back({p + "ffn_down.bias", {h}});
    out.push_back({p + "layer_output_norm.weight", {h}});
    out.push_back({p + "layer_output_norm.bias", {h}});
  }
  return out;
}

Result<std::optional<TensorPlace>> bert_tensor_place(const HfConfig& c, const std::string& hf_name) {
  using Place = std::optional<TensorPlace>;
  const std::string name = hf_name.starts_with("bert.") ? hf_name.substr(5) : hf_name;
  if (name == "embeddings.position_ids" || name.starts_with("pooler.")) return Place();
  for (const NamePair& g : kEmbeddingParts) {
    if (name == g.hf) return Place(TensorPlace{g.gguf});
  }
  const std::string prefix = "encoder.layer.";
  const auto layer = name.starts_with(prefix) ? leading_index(name.substr(prefix.size()), c.n_layers) : std::nullopt;
  if (layer) {
    const std::string blk = "blk." + std::to_string(layer->first) + ".";
    for (const NamePair& p : kLayerParts) {
      for (const char* kind : {".weight", ".bias"}) {
        if (layer->second == std::string(p.hf) + kind) return Place(TensorPlace{blk + p.gguf + kind});
      }
    }
  }
  return unsupported("tensor '" + hf_name + "' has no place in a bert model with " + std::to_string(c.n_layers) +
                     " layers");
}

Status check_bert_config(const HfConfig& c) {
  const auto& raw = c.raw;
  if (raw.contains("position_embedding_type") && raw["position_embedding_type"].is_string() &&
      raw["position_embedding_type"].get<std::string>() != "absolute") {
    return unsupported("config.json: position_embedding_type '" + raw["position_embedding_type"].get<std::string>() +
                       "' is not supported (absolute only)");
  }
  if (raw.value("is_decoder", false)) return unsupported("config.json: a BERT decoder (is_decoder) is not supported");
  const int64_t n_types = type_vocab_size(c);
  if (n_types < 1 || n_types > 16) {
    return invalid_argument("config.json: 'type_vocab_size' is " + std::to_string(n_types) + ", outside [1, 16]");
  }
  if (c.n_kv_heads != c.n_heads || c.head_dim * c.n_heads != c.hidden_size) {
    return invalid_argument("config.json: a BERT model's heads must split hidden_size evenly");
  }
  return {};
}

Status write_bert_metadata(const std::string& dir, const HfConfig& c, gguf::Writer& w) {
  w.set_string("general.architecture", "bert");
  w.set_u32("bert.context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.set_u32("bert.embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.set_u32("bert.feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.set_u32("bert.block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32("bert.attention.head_count", static_cast<uint32_t>(c.n_heads));
  double eps = 1e-12;
  if (c.raw.contains("layer_norm_eps") && c.raw["layer_norm_eps"].is_number()) eps = c.raw["layer_norm_eps"].get<double>();
  if (!(eps > 0 && eps < 1)) return invalid_argument("config.json: 'layer_norm_eps' is outside (0, 1)");
  w.set_f32("bert.attention.layer_norm_epsilon", static_cast<float>(eps));
  w.set_bool("bert.attention.causal", false);
  w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(type_vocab_size(c)));

  const std::filesystem::path pooling_path = std::filesystem::path(dir) / "1_Pooling" / "config.json";
  auto pooling = read_json_object(pooling_path, /*required=*/false);
  if (!pooling.ok()) return pooling.status();
  uint32_t type = kPoolingMean;
  if (pooling->is_object()) {
    const bool cls = pooling->value("pooling_mode_cls_token", false);
    const bool mean = pooling->value("pooling_mode_mean_tokens", false);
    const bool last = pooling->value("pooling_mode_lasttoken", false);
    if (pooling->value("pooling_mode_max_tokens", false) || pooling->value("pooling_mode_mean_sqrt_len_tokens", false) ||
        cls + mean + last != 1) {
      return unsupported(pooling_path.string() + ": only one of mean, CLS or last-token pooling is supported");
    }
    type = cls ? kPoolingCls : last ? kPoolingLast : kPoolingMean;
  }
  w.set_u32("bert.pooling_type", type);
  return {};
}

}  // namespace tokenmill::convert

// A BERT-family sentence encoder (GGUF architecture "bert": all-MiniLM, BGE, E5, ...):
// token + position + token-type embeddings, LayerNorm, then per layer bidirectional
// self-attention and a GELU feed-forward block, each followed by a residual LayerNorm
// (post-norm); the token vectors are pooled (mean, [CLS] or last, from bert.pooling_type)
// and L2-normalized, as sentence-transformers does.
//
// Many inputs go through one call: their tokens are flattened into one batch, so every
// weight matrix is read once for all of them; attention stays within each input.
//
// Thread-safety: embed() is called by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "ops/backend.h"
#include "ops/weight_matrix.h"

namespace tokenmill::model {

enum class Pooling { kMean, kCls, kLast };
const char* pooling_name(Pooling pooling);  // "mean", "cls", "last"

struct BertConfig {
  int32_t n_layers = 0;
  int32_t n_embd = 0;
  int32_t n_heads = 0;
  int32_t n_ff = 0;
  int32_t n_vocab = 0;
  int32_t max_positions = 0;  // bert.context_length: tokens per input at most
  float eps = 1e-12f;
  Pooling pooling = Pooling::kMean;
};

class BertEncoder {
 public:
  // Validates the metadata and binds every tensor (f32, f16 or any quantized matrix).
  static Result<std::unique_ptr<BertEncoder>> load(std::shared_ptr<const gguf::File> file,
                                                   std::unique_ptr<ops::Backend> backend);

  const BertConfig& config() const { return config_; }
  const gguf::File& file() const { return *file_; }
  ops::Backend& backend() { return *backend_; }

  // out[i]: the pooled, normalized embedding of inputs[i] ([n_embd] floats).
  // REQUIRES: every input has 1 .. max_positions token ids < n_vocab.
  void embed(std::span<const std::vector<int32_t>> inputs, std::vector<std::vector<float>>& out);

 private:
  struct Layer {
    ops::WeightMatrix q, k, v, o, up, down;
    const float *q_bias, *k_bias, *v_bias, *o_bias, *up_bias, *down_bias;
    const float *attn_norm, *attn_norm_bias, *out_norm, *out_norm_bias;
  };

  BertEncoder() = default;

  std::shared_ptr<const gguf::File> file_;
  std::unique_ptr<ops::Backend> backend_;
  BertConfig config_;
  ops::WeightMatrix token_embd_, position_embd_, token_types_;
  const float* embd_norm_ = nullptr;
  const float* embd_norm_bias_ = nullptr;
  std::vector<Layer> layers_;
  std::vector<std::shared_ptr<uint8_t[]>> repacked_;  // matrices moved into panels (weights.h)
};

}  // namespace tokenmill::model

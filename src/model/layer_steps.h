// The two halves of a transformer block, shared by the architectures: self-attention
// over the paged cache and the gated feed-forward network. Each architecture file
// arranges the norms and residuals around them in its own order.
#pragma once

#include <vector>

#include "model/batch.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "ops/kv_storage.h"

namespace tokenmill::model {

// Per-step working memory, sized for the batch. n = batch.n_tokens().
struct LayerScratch {
  std::vector<float> normed;  // [n, n_embd]   input of attention / FFN
  std::vector<float> q;       // [n, q_dim]
  std::vector<float> k;       // [n, kv_dim]
  std::vector<float> v;       // [n, kv_dim]
  std::vector<float> attn;    // [n, q_dim]
  std::vector<float> gate;    // [n, n_ff]
  std::vector<float> up;      // [n, n_ff]
  std::vector<float> out;     // [n, n_embd]   output of attention / FFN
  // Mixture of experts: router logits, and one expert's gathered rows.
  std::vector<float> router;          // [n, n_expert]
  std::vector<int32_t> routed_ids;    // [n, n_expert_used] each token's experts
  std::vector<float> routed_weights;  // [n, n_expert_used] and their weights
  std::vector<float> expert_in;       // [n, n_embd]
  std::vector<float> expert_gate;     // [n, n_ff_expert]
  std::vector<float> expert_up;       // [n, n_ff_expert]
  std::vector<float> expert_out;      // [n, n_embd]
  std::vector<int32_t> expert_rows;   // tokens routed to one expert
  std::vector<float> expert_weights;  // their routing weights

  void resize(const ModelConfig& c, int64_t n_tokens);
};

enum class FfnActivation { kGeluTanh, kSilu };

// scratch.normed -> scratch.out: q, k, v projections (+ biases), optional per-head q/k
// RMSNorm, rotary embedding (with per-pair frequency divisors when rope_freqs is given),
// cache write, attention, output projection.
void attention_step(ops::Backend& backend, const ModelConfig& config, const LayerWeights& weights, int32_t layer,
                    const Batch& batch, ops::KvStorage& kv, LayerScratch& scratch,
                    const float* rope_freqs = nullptr);

// scratch.normed -> scratch.out: down(act(gate(x)) * up(x)).
void gated_ffn_step(ops::Backend& backend, const ModelConfig& config, const LayerWeights& weights,
                    FfnActivation activation, int64_t n_tokens, LayerScratch& scratch);

// The experts each token is routed to: softmax over the router's logits, the
// config.n_expert_used most probable (ties to the lower index), their probabilities
// renormalized to sum to 1. Writes n_expert_used ids and weights per token.
void route_tokens(const float* router_logits, int64_t n_tokens, int32_t n_expert, int32_t n_expert_used,
                  int32_t* expert_ids, float* expert_weights);

// gpt-oss's activation, ModelConfig::swiglu_limit's formula, over n values (y may alias gate).
void clamped_swiglu(const float* gate, const float* up, int64_t n, float limit, float* y);

// scratch.normed -> scratch.out, mixture of experts: each token's output is the weighted
// sum of its experts' SiLU-gated FFNs (with gpt-oss's router and expert biases and clamped
// SwiGLU where the weights and config have them). The tokens routed to an expert are
// gathered and multiplied together, so each expert's weights are read once per step however many
// tokens chose it, and experts no token chose are not read at all.
// Returns the bytes of weights it read (the router and each chosen expert once).
int64_t moe_ffn_step(ops::Backend& backend, const ModelConfig& config, const LayerWeights& weights, int64_t n_tokens,
                     LayerScratch& scratch);

}  // namespace tokenmill::model

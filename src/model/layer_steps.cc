#include "model/layer_steps.h"

#include <algorithm>
#include <cmath>

namespace tokenmill::model {

void LayerScratch::resize(const ModelConfig& c, int64_t n) {
  normed.resize(n * c.n_embd);
  q.resize(n * c.q_dim());
  k.resize(n * c.kv_dim());
  v.resize(n * c.kv_dim());
  attn.resize(n * c.q_dim());
  gate.resize(n * c.n_ff);
  up.resize(n * c.n_ff);
  out.resize(n * c.n_embd);
  if (c.n_expert > 0) {
    router.resize(n * c.n_expert);
    expert_in.resize(n * c.n_embd);
    expert_gate.resize(n * c.n_ff_expert);
    expert_up.resize(n * c.n_ff_expert);
    expert_out.resize(n * c.n_embd);
    routed_ids.resize(n * c.n_expert_used);
    routed_weights.resize(n * c.n_expert_used);
  }
}

void attention_step(ops::Backend& backend, const ModelConfig& c, const LayerWeights& w, int32_t layer,
                    const Batch& batch, ops::KvStorage& kv, LayerScratch& s, const float* rope_freqs) {
  const int64_t n = batch.n_tokens();
  const ops::MatmulProduct qkv[] = {{&w.wq, s.q.data()}, {&w.wk, s.k.data()}, {&w.wv, s.v.data()}};
  backend.matmul_shared_input(qkv, s.normed.data(), n);
  if (w.bq) backend.add_bias(s.q.data(), w.bq, n, c.q_dim());
  if (w.bk) backend.add_bias(s.k.data(), w.bk, n, c.kv_dim());
  if (w.bv) backend.add_bias(s.v.data(), w.bv, n, c.kv_dim());
  // Gemma 3 and Qwen 3 normalize every head of q and k on its own, OLMo 2 each token's
  // whole q and k.
  const int32_t q_width = c.qk_norm_whole ? c.q_dim() : c.head_dim;
  const int32_t k_width = c.qk_norm_whole ? c.kv_dim() : c.head_dim;
  if (w.q_norm) backend.rms_norm(s.q.data(), w.q_norm, n * c.q_dim() / q_width, q_width, c.rms_eps, s.q.data());
  if (w.k_norm) backend.rms_norm(s.k.data(), w.k_norm, n * c.kv_dim() / k_width, k_width, c.rms_eps, s.k.data());

  const bool sliding = c.layer_is_sliding[layer];
  const float freq_base = sliding ? c.rope_freq_base_local : c.rope_freq_base;
  if (c.layer_has_rope[layer]) {
    backend.rope(s.q.data(), batch.positions, c.n_heads, c.head_dim, c.n_rot, freq_base, c.rope_freq_scale,
                 c.rope_style, rope_freqs);
    backend.rope(s.k.data(), batch.positions, c.n_kv_heads, c.head_dim, c.n_rot, freq_base, c.rope_freq_scale,
                 c.rope_style, rope_freqs);
  }

  ops::AttentionBatch ab{batch.positions, batch.sequence_of_token, batch.block_tables};
  backend.store_kv(kv, layer, ab, s.k.data(), s.v.data());
  ops::AttentionParams params;
  params.layer = layer;
  params.n_heads = c.n_heads;
  params.n_kv_heads = c.n_kv_heads;
  params.head_dim = c.head_dim;
  params.scale = c.attention_scale;
  params.softcap = c.attn_logit_softcap;
  params.window = sliding ? c.sliding_window : 0;
  params.sinks = w.attn_sinks;
  backend.attention(kv, ab, params, s.q.data(), s.attn.data());
  backend.matmul(w.wo, s.attn.data(), n, s.out.data());
  if (w.bo) backend.add_bias(s.out.data(), w.bo, n, c.n_embd);
}

void gated_ffn_step(ops::Backend& backend, const ModelConfig& c, const LayerWeights& w, FfnActivation activation,
                    int64_t n, LayerScratch& s) {
  const ops::MatmulProduct gate_up[] = {{&w.ffn_gate, s.gate.data()}, {&w.ffn_up, s.up.data()}};
  backend.matmul_shared_input(gate_up, s.normed.data(), n);
  if (activation == FfnActivation::kGeluTanh) {
    backend.geglu(s.gate.data(), s.up.data(), n * c.n_ff, s.gate.data());
  } else {
    backend.swiglu(s.gate.data(), s.up.data(), n * c.n_ff, s.gate.data());
  }
  backend.matmul(w.ffn_down, s.gate.data(), n, s.out.data());
}

void route_tokens(const float* logits, int64_t n, int32_t n_expert, int32_t n_used, int32_t* ids, float* weights) {
  std::vector<float> probs(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n; ++t) {
    const float* l = logits + t * n_expert;
    const float max = *std::max_element(l, l + n_expert);
    float sum = 0;
    for (int32_t e = 0; e < n_expert; ++e) sum += probs[e] = std::exp(l[e] - max);
    int32_t* id = ids + t * n_used;
    float* w = weights + t * n_used;
    float chosen = 0;
    for (int32_t k = 0; k < n_used; ++k) {
      int32_t best = -1;
      for (int32_t e = 0; e < n_expert; ++e) {
        if (std::find(id, id + k, e) != id + k) continue;
        if (best < 0 || probs[e] > probs[best]) best = e;
      }
      id[k] = best;
      w[k] = probs[best] / sum;
      chosen += w[k];
    }
    for (int32_t k = 0; k < n_used; ++k) w[k] /= chosen;
  }
}

void clamped_swiglu(const float* gate, const float* up, int64_t n, float limit, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::clamp(up[i], -limit, limit);
    y[i] = g / (1.0f + std::exp(-ModelConfig::kClampedSwigluAlpha * g)) * (u + 1.0f);
  }
}

int64_t moe_ffn_step(ops::Backend& backend, const ModelConfig& c, const LayerWeights& w, int64_t n, LayerScratch& s) {
  int64_t bytes_read = w.ffn_gate_inp.n_bytes();
  backend.matmul(w.ffn_gate_inp, s.normed.data(), n, s.router.data());
  if (w.ffn_gate_inp_bias) backend.add_bias(s.router.data(), w.ffn_gate_inp_bias, n, c.n_expert);
  const int32_t n_used = c.n_expert_used;
  std::vector<int32_t>& ids = s.routed_ids;
  std::vector<float>& weights = s.routed_weights;
  route_tokens(s.router.data(), n, c.n_expert, n_used, ids.data(), weights.data());
  std::fill(s.out.begin(), s.out.begin() + n * c.n_embd, 0.0f);
  // Experts in index order: a token's sum runs over its experts in that order whatever
  // else is in the batch, so its output does not depend on the other tokens.
  for (int32_t e = 0; e < c.n_expert; ++e) {
    s.expert_rows.clear();
    s.expert_weights.clear();
    for (int64_t t = 0; t < n; ++t) {
      for (int32_t k = 0; k < n_used; ++k) {
        if (ids[static_cast<size_t>(t * n_used + k)] != e) continue;
        s.expert_rows.push_back(static_cast<int32_t>(t));
        s.expert_weights.push_back(weights[static_cast<size_t>(t * n_used + k)]);
      }
    }
    const int64_t m = static_cast<int64_t>(s.expert_rows.size());
    if (m == 0) continue;
    for (int64_t i = 0; i < m; ++i) {
      std::copy_n(s.normed.data() + s.expert_rows[i] * c.n_embd, c.n_embd, s.expert_in.data() + i * c.n_embd);
    }
    const ops::MatmulProduct gate_up[] = {{&w.ffn_gate_exps[e], s.expert_gate.data()},
                                          {&w.ffn_up_exps[e], s.expert_up.data()}};
    backend.matmul_shared_input(gate_up, s.expert_in.data(), m);
    const int64_t ff = c.n_ff_expert;
    if (w.ffn_gate_exps_bias) {
      backend.add_bias(s.expert_gate.data(), w.ffn_gate_exps_bias + e * ff, m, ff);
      backend.add_bias(s.expert_up.data(), w.ffn_up_exps_bias + e * ff, m, ff);
    }
    if (c.swiglu_limit > 0) {
      clamped_swiglu(s.expert_gate.data(), s.expert_up.data(), m * ff, c.swiglu_limit, s.expert_gate.data());
    } else {
      backend.swiglu(s.expert_gate.data(), s.expert_up.data(), m * ff, s.expert_gate.data());
    }
    backend.matmul(w.ffn_down_exps[e], s.expert_gate.data(), m, s.expert_out.data());
    if (w.ffn_down_exps_bias) backend.add_bias(s.expert_out.data(), w.ffn_down_exps_bias + int64_t{e} * c.n_embd, m, c.n_embd);
    bytes_read += w.ffn_gate_exps[e].n_bytes() + w.ffn_up_exps[e].n_bytes() + w.ffn_down_exps[e].n_bytes();
    for (int64_t i = 0; i < m; ++i) {
      float* out = s.out.data() + s.expert_rows[i] * c.n_embd;
      const float* y = s.expert_out.data() + i * c.n_embd;
      const float weight = s.expert_weights[i];
      for (int32_t j = 0; j < c.n_embd; ++j) out[j] += weight * y[j];
    }
  }
  return bytes_read;
}

}  // namespace tokenmill::model

#include "model/layer_steps.h"

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
}

void attention_step(ops::Backend& backend, const ModelConfig& c, const LayerWeights& w, int32_t layer,
                    const Batch& batch, ops::KvStorage& kv, LayerScratch& s, const float* rope_freqs) {
  const int64_t n = batch.n_tokens();
  const ops::MatmulProduct qkv[] = {{&w.wq, s.q.data()}, {&w.wk, s.k.data()}, {&w.wv, s.v.data()}};
  backend.matmul_shared_input(qkv, s.normed.data(), n);
  if (w.bq) backend.add_bias(s.q.data(), w.bq, n, c.q_dim());
  if (w.bk) backend.add_bias(s.k.data(), w.bk, n, c.kv_dim());
  if (w.bv) backend.add_bias(s.v.data(), w.bv, n, c.kv_dim());
  // Gemma 3 normalizes every head of q and k on its own.
  if (w.q_norm) backend.rms_norm(s.q.data(), w.q_norm, n * c.n_heads, c.head_dim, c.rms_eps, s.q.data());
  if (w.k_norm) backend.rms_norm(s.k.data(), w.k_norm, n * c.n_kv_heads, c.head_dim, c.rms_eps, s.k.data());

  const bool sliding = c.layer_is_sliding[layer];
  const float freq_base = sliding ? c.rope_freq_base_local : c.rope_freq_base;
  backend.rope(s.q.data(), batch.positions, c.n_heads, c.head_dim, freq_base, c.rope_freq_scale, c.rope_style,
               rope_freqs);
  backend.rope(s.k.data(), batch.positions, c.n_kv_heads, c.head_dim, freq_base, c.rope_freq_scale, c.rope_style,
               rope_freqs);

  ops::AttentionBatch ab{batch.positions, batch.sequence_of_token, batch.block_tables};
  backend.store_kv(kv, layer, ab, s.k.data(), s.v.data());
  ops::AttentionParams params;
  params.layer = layer;
  params.n_heads = c.n_heads;
  params.n_kv_heads = c.n_kv_heads;
  params.head_dim = c.head_dim;
  params.scale = c.attention_scale;
  params.window = sliding ? c.sliding_window : 0;
  backend.attention(kv, ab, params, s.q.data(), s.attn.data());
  backend.matmul(w.wo, s.attn.data(), n, s.out.data());
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

}  // namespace tokenmill::model

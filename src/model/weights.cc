#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/large_buffer.h"
#include "model/tensor_binder.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/type_traits.h"

namespace tokenmill::model {

namespace {

// Rows [begin, begin + n) of a matrix, as a matrix of their own (a fused projection's parts).
ops::WeightMatrix row_range(const ops::WeightMatrix& m, int64_t begin, int64_t n) {
  ops::WeightMatrix part = m;
  part.data = m.data + static_cast<size_t>(begin) * m.row_bytes;
  part.n_rows = n;
  return part;
}

}  // namespace

Result<ModelWeights> bind_weights(const gguf::File& file, const ModelConfig& c) {
  TensorBinder b(file);
  ModelWeights w;
  TM_RETURN_IF_ERROR(b.matrix("token_embd.weight", c.n_vocab, c.n_embd, w.token_embd));
  TM_RETURN_IF_ERROR(b.vector("output_norm.weight", c.n_embd, w.output_norm));
  if (b.has("output.weight")) {
    TM_RETURN_IF_ERROR(b.matrix("output.weight", c.n_vocab, c.n_embd, w.output));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  if (b.has("rope_freqs.weight")) TM_RETURN_IF_ERROR(b.vector("rope_freqs.weight", c.n_rot / 2, w.rope_freqs));
  if (c.yarn) {
    if (w.rope_freqs) return corrupt_data("a model with both rope_freqs.weight and YaRN scaling");
    w.computed_rope_freqs = yarn_rope_divisors(c);
    w.rope_freqs = w.computed_rope_freqs.data();
  }
  if (c.longrope) {
    if (w.rope_freqs) return corrupt_data("a model with both rope_freqs.weight and LongRoPE factors");
    const char* factors = c.rope_long_factors ? "rope_factors_long.weight" : "rope_factors_short.weight";
    TM_RETURN_IF_ERROR(b.vector(factors, c.n_rot / 2, w.rope_freqs));
  }
  const bool gemma = c.architecture == Architecture::kGemma2 || c.architecture == Architecture::kGemma3;
  const bool olmo2 = c.architecture == Architecture::kOlmo2;  // norms after attention and FFN only
  const bool gpt_oss = c.architecture == Architecture::kGptOss;
  w.layers.resize(c.n_layers);
  w.n_expert_used = c.n_expert_used;
  for (int32_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    if (!olmo2) TM_RETURN_IF_ERROR(b.vector(p + "attn_norm.weight", c.n_embd, L.attn_norm));
    const bool fused = c.architecture == Architecture::kPhi3;  // attn_qkv, and ffn_up holding gate and up
    if (fused) {
      ops::WeightMatrix qkv;
      TM_RETURN_IF_ERROR(b.matrix(p + "attn_qkv.weight", c.q_dim() + 2 * c.kv_dim(), c.n_embd, qkv));
      L.wq = row_range(qkv, 0, c.q_dim());
      L.wk = row_range(qkv, c.q_dim(), c.kv_dim());
      L.wv = row_range(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      TM_RETURN_IF_ERROR(b.matrix(p + "attn_q.weight", c.q_dim(), c.n_embd, L.wq));
      TM_RETURN_IF_ERROR(b.matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd, L.wk));
      TM_RETURN_IF_ERROR(b.matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd, L.wv));
    }
    TM_RETURN_IF_ERROR(b.matrix(p + "attn_output.weight", c.n_embd, c.q_dim(), L.wo));
    if (c.architecture == Architecture::kQwen2 || gpt_oss) {
      TM_RETURN_IF_ERROR(b.vector(p + "attn_q.bias", c.q_dim(), L.bq));
      TM_RETURN_IF_ERROR(b.vector(p + "attn_k.bias", c.kv_dim(), L.bk));
      TM_RETURN_IF_ERROR(b.vector(p + "attn_v.bias", c.kv_dim(), L.bv));
    }
    if (gpt_oss) {
      TM_RETURN_IF_ERROR(b.vector(p + "attn_output.bias", c.n_embd, L.bo));
      TM_RETURN_IF_ERROR(b.vector(p + "attn_sinks.weight", c.n_heads, L.attn_sinks));
    }
    if (c.architecture == Architecture::kGemma3 || c.architecture == Architecture::kQwen3 ||
        c.architecture == Architecture::kQwen3Moe || olmo2) {
      TM_RETURN_IF_ERROR(b.vector(p + "attn_q_norm.weight", c.qk_norm_whole ? c.q_dim() : c.head_dim, L.q_norm));
      TM_RETURN_IF_ERROR(b.vector(p + "attn_k_norm.weight", c.qk_norm_whole ? c.kv_dim() : c.head_dim, L.k_norm));
    }
    if (gemma || olmo2) {
      TM_RETURN_IF_ERROR(b.vector(p + "post_attention_norm.weight", c.n_embd, L.post_attn_norm));
      TM_RETURN_IF_ERROR(b.vector(p + "post_ffw_norm.weight", c.n_embd, L.post_ffn_norm));
    }
    // gpt-oss names its FFN norm after the attention it follows.
    if (!olmo2) {
      TM_RETURN_IF_ERROR(b.vector(p + (gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), c.n_embd, L.ffn_norm));
    }
    if (c.n_expert > 0) {
      TM_RETURN_IF_ERROR(b.matrix(p + "ffn_gate_inp.weight", c.n_expert, c.n_embd, L.ffn_gate_inp));
      TM_RETURN_IF_ERROR(b.experts(p + "ffn_gate_exps.weight", c.n_expert, c.n_ff_expert, c.n_embd, L.ffn_gate_exps));
      TM_RETURN_IF_ERROR(b.experts(p + "ffn_up_exps.weight", c.n_expert, c.n_ff_expert, c.n_embd, L.ffn_up_exps));
      TM_RETURN_IF_ERROR(b.experts(p + "ffn_down_exps.weight", c.n_expert, c.n_embd, c.n_ff_expert, L.ffn_down_exps));
      if (gpt_oss) {
        TM_RETURN_IF_ERROR(b.vector(p + "ffn_gate_inp.bias", c.n_expert, L.ffn_gate_inp_bias));
        const int64_t n_ff_all = int64_t{c.n_expert} * c.n_ff_expert;
        TM_RETURN_IF_ERROR(b.vector(p + "ffn_gate_exps.bias", n_ff_all, L.ffn_gate_exps_bias));
        TM_RETURN_IF_ERROR(b.vector(p + "ffn_up_exps.bias", n_ff_all, L.ffn_up_exps_bias));
        TM_RETURN_IF_ERROR(b.vector(p + "ffn_down_exps.bias", int64_t{c.n_expert} * c.n_embd, L.ffn_down_exps_bias));
      }
      continue;
    }
    if (fused) {
      ops::WeightMatrix gate_up;
      TM_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", 2 * c.n_ff, c.n_embd, gate_up));
      L.ffn_gate = row_range(gate_up, 0, c.n_ff);
      L.ffn_up = row_range(gate_up, c.n_ff, c.n_ff);
    } else {
      TM_RETURN_IF_ERROR(b.matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd, L.ffn_gate));
      TM_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", c.n_ff, c.n_embd, L.ffn_up));
    }
    TM_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", c.n_embd, c.n_ff, L.ffn_down));
  }
  return w;
}

int64_t weight_bytes_per_token(const ModelWeights& w) {
  int64_t total = w.output.n_bytes();  // the embedding table itself is only gathered, one row per token
  for (const LayerWeights& L : w.layers) {
    for (const ops::WeightMatrix* m : dense_matrices(L)) total += m->n_bytes();
    if (!L.ffn_gate_exps.empty()) {
      // A token reads the router and the experts it is routed to: n_expert_used of them.
      total += L.ffn_gate_inp.n_bytes();
      for (const auto* experts : expert_matrices(L)) total += w.n_expert_used * (*experts)[0].n_bytes();
    }
  }
  return total;
}

std::vector<const ops::WeightMatrix*> decode_matrices(const ModelWeights& w) {
  std::vector<const ops::WeightMatrix*> out;
  for (const LayerWeights& L : w.layers) {
    for (const ops::WeightMatrix* m : dense_matrices(L)) {
      if (m->data != nullptr) out.push_back(m);
    }
    for (const auto* experts : expert_matrices(L)) {
      for (const ops::WeightMatrix& m : *experts) out.push_back(&m);
    }
  }
  out.push_back(&w.output);
  return out;
}

namespace {

bool takes_panels(const ops::WeightMatrix& m) {
  return quant::best_panel_kernel(m.type) != nullptr && m.n_rows % quant::kPanelRows == 0;
}

// m's bytes rewritten into `to` (m.n_bytes()): in panels, or its rows as they are, a slab
// at a time, dropping the file's pages behind, so that the matrix is never resident
// twice, even for a moment (the 262,144-row output matrix is 178 MB).
void move_matrix(ops::WeightMatrix& m, const gguf::File& file, uint8_t* to, bool panels) {
  constexpr int64_t kSlabRows = 64 * quant::kPanelRows;
  for (int64_t r = 0; r < m.n_rows; r += kSlabRows) {
    const int64_t n = std::min(kSlabRows, m.n_rows - r);
    const size_t offset = static_cast<size_t>(r) * m.row_bytes;
    if (panels) {
      quant::pack_panels(m.type, m.data + offset, n, m.row_bytes, to + offset);
    } else {
      std::memcpy(to + offset, m.data + offset, static_cast<size_t>(n) * m.row_bytes);
    }
    // From the previous slab's start: release() keeps a page that straddles a range's
    // ends, and each such page lies inside the next call's range.
    const size_t from = r >= kSlabRows ? offset - static_cast<size_t>(kSlabRows) * m.row_bytes : 0;
    file.release(m.data + from, offset + static_cast<size_t>(n) * m.row_bytes - from);
  }
  m.data = to;
  m.panels = panels;
}

}  // namespace

std::shared_ptr<uint8_t[]> repack_matrix(ops::WeightMatrix& m, const gguf::File& file) {
  if (m.panels || !takes_panels(m)) return nullptr;
  std::shared_ptr<uint8_t[]> buffer = allocate_large_buffer(static_cast<size_t>(m.n_bytes()));
  move_matrix(m, file, buffer.get(), true);
  return buffer;
}

void repack_for_kernels(ModelWeights& weights, const gguf::File& file) {
  // The matrices a forward pass multiplies (and the embedding table where it has panels:
  // its rows are gathered from them), in the order of the file's usual layout.
  std::vector<ops::WeightMatrix*> matrices;
  auto add = [&](ops::WeightMatrix& m) {
    if (m.data != nullptr && !m.panels) matrices.push_back(&m);
  };
  if (weights.tied_output || takes_panels(weights.token_embd)) add(weights.token_embd);
  if (!weights.tied_output) add(weights.output);
  for (LayerWeights& layer : weights.layers) {
    for (ops::WeightMatrix* m : dense_matrices(layer)) add(*m);
    for (auto* experts : expert_matrices(layer)) {
      for (ops::WeightMatrix& m : *experts) add(m);
    }
  }
  // One buffer for all of them: a matrix smaller than a huge page in a buffer of its own
  // would take a whole one (a MoE model's experts: twice the file's size in memory).
  constexpr size_t kAlign = 64;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const ops::WeightMatrix* m : matrices) {
    offsets.push_back(total);
    total += (static_cast<size_t>(m->n_bytes()) + kAlign - 1) / kAlign * kAlign;
  }
  if (matrices.empty()) return;
  std::shared_ptr<uint8_t[]> buffer = allocate_large_buffer(total);
  for (size_t i = 0; i < matrices.size(); ++i) {
    move_matrix(*matrices[i], file, buffer.get() + offsets[i], takes_panels(*matrices[i]));
  }
  if (weights.tied_output) weights.output = weights.token_embd;
  weights.repacked.push_back(std::move(buffer));
}

}  // namespace tokenmill::model

// Weight tensors bound by name from a GGUF file, checked for shape and type at load.
// They point into the file's memory map: the File must outlive the weights.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "ops/weight_matrix.h"

namespace tokenmill::model {

struct LayerWeights {
  const float* attn_norm = nullptr;       // [n_embd] (none in OLMo 2)
  ops::WeightMatrix wq;                   // [q_dim, n_embd]   (rows x cols)
  ops::WeightMatrix wk;                   // [kv_dim, n_embd]
  ops::WeightMatrix wv;                   // [kv_dim, n_embd]
  ops::WeightMatrix wo;                   // [n_embd, q_dim]
  const float* bq = nullptr;              // [q_dim]  (Qwen 2, gpt-oss)
  const float* bk = nullptr;              // [kv_dim]
  const float* bv = nullptr;              // [kv_dim]
  const float* bo = nullptr;              // [n_embd] (gpt-oss)
  const float* attn_sinks = nullptr;      // [n_heads] (gpt-oss): see ops::AttentionParams::sinks
  const float* q_norm = nullptr;          // [head_dim] (Gemma 3, Qwen 3); [q_dim] (OLMo 2)
  const float* k_norm = nullptr;          // [head_dim];                     [kv_dim] (OLMo 2)
  const float* post_attn_norm = nullptr;  // [n_embd]   (Gemma, OLMo 2)
  const float* ffn_norm = nullptr;        // [n_embd]   (none in OLMo 2)
  ops::WeightMatrix ffn_gate;             // [n_ff, n_embd]
  ops::WeightMatrix ffn_up;               // [n_ff, n_embd]
  ops::WeightMatrix ffn_down;             // [n_embd, n_ff]
  const float* post_ffn_norm = nullptr;   // [n_embd]   (Gemma, OLMo 2)
  // Mixture of experts, in place of ffn_gate/up/down: the router and one matrix per expert.
  ops::WeightMatrix ffn_gate_inp;                 // [n_expert, n_embd]
  std::vector<ops::WeightMatrix> ffn_gate_exps;   // n_expert x [n_ff_expert, n_embd]
  std::vector<ops::WeightMatrix> ffn_up_exps;     // n_expert x [n_ff_expert, n_embd]
  std::vector<ops::WeightMatrix> ffn_down_exps;   // n_expert x [n_embd, n_ff_expert]
  // gpt-oss: biases of the router and of every expert's projections, expert by expert
  // (expert e's gate bias is ffn_gate_exps_bias + e * n_ff_expert); null: none.
  const float* ffn_gate_inp_bias = nullptr;   // [n_expert]
  const float* ffn_gate_exps_bias = nullptr;  // [n_expert, n_ff_expert]
  const float* ffn_up_exps_bias = nullptr;    // [n_expert, n_ff_expert]
  const float* ffn_down_exps_bias = nullptr;  // [n_expert, n_embd]
};

// A layer's dense matrices in the order a decode step reads them (an absent one has null
// data: the FFN of a mixture-of-experts layer), and its per-expert matrices. Templates
// so that a const layer gives const pointers.
template <typename Layer>
auto dense_matrices(Layer& L) {
  return std::array{&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down};
}
template <typename Layer>
auto expert_matrices(Layer& L) {
  return std::array{&L.ffn_gate_exps, &L.ffn_up_exps, &L.ffn_down_exps};
}

struct ModelWeights {
  ops::WeightMatrix token_embd;  // [n_vocab, n_embd]
  const float* output_norm = nullptr;  // [n_embd]
  ops::WeightMatrix output;      // [n_vocab, n_embd]; token_embd when tied
  bool tied_output = false;
  // [head_dim / 2] divisors of the rotary frequencies (Llama 3.1+'s rope scaling, baked
  // into the tensor rope_freqs.weight by the converter); null when the file has none.
  const float* rope_freqs = nullptr;
  // Divisors computed at load (YaRN); rope_freqs then points into this vector, which
  // ModelWeights only ever moves (a move keeps the buffer).
  std::vector<float> computed_rope_freqs;
  std::vector<LayerWeights> layers;
  int32_t n_expert_used = 0;  // experts a token reads per layer (0: dense)
  // Buffers of matrices repacked at load (repack_for_kernels); the matrices point into them.
  std::vector<std::shared_ptr<uint8_t[]>> repacked;
};

Result<ModelWeights> bind_weights(const gguf::File& file, const ModelConfig& config);

// Repacks one matrix into panels where its type's kernels read them faster (and drops
// the file's pages behind it): the buffer now holding it, which must outlive m's use;
// nullptr (m unchanged) where there is nothing to gain.
std::shared_ptr<uint8_t[]> repack_matrix(ops::WeightMatrix& m, const gguf::File& file);

// Moves every matrix a forward pass multiplies out of the file's pages into one buffer of
// huge pages owned by `weights` (base/large_buffer.h): into quant/panel_layout.h's layout
// where the CPU's kernels read that faster (Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, IQ4_XS, MXFP4
// with a multiple of 16 rows, where the kernel set has a panel kernel for the type), its
// rows as they are otherwise; the embedding table too where it has panels. The file's
// pages of the originals are dropped (the same bytes, never resident twice). A tied
// output matrix is moved once. Results are bit-identical either way.
void repack_for_kernels(ModelWeights& weights, const gguf::File& file);

// Bytes of every weight a single decode step reads (for roofline figures).
int64_t weight_bytes_per_token(const ModelWeights& weights);

// The weight matrices a decode step reads, in the order it reads them (each layer's
// attention, then its FFN or experts, then the output projection).
std::vector<const ops::WeightMatrix*> decode_matrices(const ModelWeights& weights);

}  // namespace tokenmill::model

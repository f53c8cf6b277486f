// What the converter knows about each Hugging Face model_type: the GGUF architecture it
// becomes, its tensors' GGUF names, and the tensors a complete model has (with shapes,
// checked before anything is written).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

// Where a mixture-of-experts model keeps its router and experts.
enum class MoeLayout {
  kNone,
  kQwen,     // mlp.gate, mlp.experts.E.{gate,up,down}_proj
  kMixtral,  // block_sparse_moe.gate, block_sparse_moe.experts.E.{w1,w3,w2}
  kGptOss,   // mlp.router (with bias), mlp.experts.* stacks (hf_gpt_oss.h)
};

struct HfArchitecture {
  const char* model_type;  // config.json
  const char* gguf_arch;   // general.architecture
  // Llama's GGUF rotates adjacent pairs while Hugging Face rotates the two halves of each
  // head: q and k rows are reordered so the same pairs rotate together.
  bool permute_qk = false;
  bool qkv_bias = false;
  bool qk_norm = false;
  MoeLayout moe = MoeLayout::kNone;
  // Gemma: norms before and after both halves of a block, each scaling by (1 + weight)
  // (GGUF stores 1 + weight), GELU-tanh, tied embeddings unless said otherwise.
  bool gemma = false;
  // Phi-3: q, k and v in one matrix (attn_qkv), and gate and up in one (GGUF's ffn_up,
  // gate rows first), as llama.cpp keeps them.
  bool fused = false;
  const char* activation = "silu";
  // A sliding window over every layer (config.json's sliding_window), written as
  // <arch>.attention.sliding_window. Gemma's alternating windows are the gemma flag's.
  bool sliding_window = false;
  // A BERT encoder (hf_bert.h): its own tensors and bert.* metadata.
  bool encoder = false;
  // OLMo 2: RMSNorms after attention and after the FFN (before each residual add) and
  // none before them; q/k norms over all heads together (weights of q_dim and kv_dim).
  bool post_norms_only = false;
  // SmolLM3: every fourth layer without rotary embedding, which GGUF readers assume for
  // the architecture (no key says it): config.json's no_rope_layers must be that pattern.
  bool nope_every_fourth = false;
  // Granite: embedding, residual, attention and logit multipliers, written as
  // <arch>.embedding_scale, .residual_scale, .attention.scale and .logit_scale.
  bool multipliers = false;
  // gpt-oss: q/k/v/o biases, per-head attention sinks, the FFN norm written as
  // post_attention_norm, every other layer sliding (from the first), YaRN whose ramp ends
  // are not rounded (GGUF readers round them), experts per hf_gpt_oss.h.
  bool gpt_oss = false;
};

Result<HfArchitecture> find_hf_architecture(const std::string& model_type);
// Refuses configurations of a known model_type that the converted model would compute
// differently (another activation, dense layers between sparse ones, unnormalized
// routing weights, ...).
Status check_hf_config(const HfArchitecture& arch, const HfConfig& config);
// Fills what an architecture leaves unsaid in config.json (Gemma ties its embeddings).
void apply_architecture_defaults(const HfArchitecture& arch, HfConfig& config);
std::string supported_model_types();  // "llama, mistral, qwen2, qwen3"

// A tensor the GGUF file must hold: its name and shape in ggml order (shape[0] contiguous).
// Expert stacks are made of n_parts source tensors, one per expert, each of the shape
// without its last dimension.
struct ExpectedTensor {
  std::string gguf_name;
  std::vector<int64_t> shape;
  int64_t n_parts = 1;
};

// Where a Hugging Face tensor goes: a GGUF tensor, or one expert's part of a stack.
struct TensorPlace {
  std::string gguf_name;
  int64_t part = 0;
};
std::vector<ExpectedTensor> expected_tensors(const HfArchitecture& arch, const HfConfig& config);

// The GGUF name of a Hugging Face tensor; nullopt for tensors GGUF does not keep (rotary
// inverse frequencies, a tied output) and an error for a name the architecture lacks.
Result<std::optional<TensorPlace>> gguf_tensor_place(const HfArchitecture& arch, const HfConfig& config,
                                                     const std::string& hf_name);

// A decimal index below `limit` at the start of text ("12.mlp.gate..." -> 12), and the
// rest after its dot; nullopt for anything else.
std::optional<std::pair<int64_t, std::string>> leading_index(const std::string& text, int64_t limit);

// "<arch>.*" hyperparameters (and general.architecture).
void write_architecture_metadata(const HfArchitecture& arch, const HfConfig& config, gguf::Writer& writer);

// Llama 3.1+ rope scaling as the per-pair frequency divisors of rope_freqs.weight.
std::vector<float> llama3_rope_divisors(const HfConfig& config);

}  // namespace tokenmill::convert

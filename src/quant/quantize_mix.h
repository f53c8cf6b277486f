// Quantization mixes: the names users pick (Q4_K_M, Q8_0 ...) and the rule that gives
// every tensor of a model its own type under a mix. A mix names a base type; tensors whose
// error hurts most (the output projection, attention V, FFN down in some layers) get more
// bits, tensors that are not weight matrices stay F32, and a row length the base type's
// block does not divide falls back to a 32-element type. docs/quantization.md lists the
// rules; they follow llama.cpp's llama-quant.cpp so that our files have the same layout.
//
// Thread-safety: pure functions over immutable tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {

enum class Mix {
  kF32, kF16, kBF16, kQ8_0, kQ6_K, kQ5_K_M, kQ5_K_S, kQ5_0,
  kQ4_K_M, kQ4_K_S, kQ4_0, kQ3_K_M, kQ3_K_S, kQ2_K, kIQ4_NL, kIQ4_XS,
  kIQ3_M, kIQ3_S, kIQ3_XS, kIQ3_XXS, kIQ2_M, kIQ2_S, kIQ2_XS, kIQ2_XXS, kIQ1_M, kIQ1_S, kTQ2_0, kTQ1_0,
};

struct MixInfo {
  Mix mix;
  std::string_view name;        // as typed on the command line: "Q4_K_M"
  gguf::TensorType base_type;   // most weight matrices get this
  uint32_t llama_file_type;     // general.file_type: llama.cpp's llama_ftype value
  std::string_view summary;     // one line for --help and the docs
};

std::span<const MixInfo> all_mixes();
// Case-insensitive lookup; nullopt for an unknown name.
std::optional<MixInfo> find_mix(std::string_view name);

// What the rule needs to know about the model (from the GGUF metadata).
struct ModelFacts {
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  bool tied_embeddings = false;  // no output.weight: token_embd is the output projection too
};

// What the rule needs to know about one tensor.
struct TensorFacts {
  std::string_view name;
  int32_t n_dims = 0;
  int64_t row_length = 0;  // shape[0], the contiguous dimension
};

struct TypeChoice {
  gguf::TensorType type;
  // The type the role asked for when its block does not divide the row length (then
  // `type` is the fallback); equal to `type` otherwise.
  gguf::TensorType wanted;
  bool quantized_weight = false;  // a weight matrix the mix converts (not kept F32)
};

// The layer index of "blk.N.<...>", or -1 for tensors outside the blocks.
int32_t layer_of_tensor(std::string_view name);

// Whether quantizing `tensor` to `type` needs an importance matrix: the 2- and 3-bit
// lattice types below IQ3_S, except for the vocabulary tensors, as llama-quantize
// requires (without one their error is too large to be useful).
bool type_requires_importance(gguf::TensorType type, std::string_view tensor_name);

// Whether a tensor is a weight matrix that mixes convert (2-D or more, named *weight,
// not a norm). Everything else is stored as F32.
bool is_quantizable_weight(const TensorFacts& tensor);

// Types named by the user for the vocabulary tensors, over the mix's rule (llama-quantize's
// --output-tensor-type and --token-embedding-type). With tied embeddings token_embd.weight
// is the output projection and takes `output`. A type whose block does not divide the
// rows falls back as the mix's own choice would.
struct TypeOverrides {
  std::optional<gguf::TensorType> output;
  std::optional<gguf::TensorType> token_embedding;
};

// Whether `type` can be chosen for a weight matrix (a float type or a quantized weight
// format, not an activation-only one such as Q8_K).
bool is_weight_type(gguf::TensorType type);

// The type `tensor` gets under `mix`. has_imatrix changes one rule, as in llama.cpp
// (FFN down of the first layers in Q4_0 / Q5_0 goes to Q4_1 / Q5_1).
TypeChoice choose_tensor_type(const MixInfo& mix, const TensorFacts& tensor, const ModelFacts& model,
                              bool has_imatrix, const TypeOverrides& overrides = {});

}  // namespace tokenmill::quant

// Tiny random models for fast model-layer tests: a GGUF file built in memory with
// gguf::Writer (hyperparameters and random weights, no tokenizer), parsed and loaded as
// a real model file would be. The File and the bytes it reads stay alive as long as
// any shared_ptr to the File (and so the Model) does.
//
// Weight matrices take their types in turn from TinyModelSpec::matrix_types; a type
// whose block does not divide a matrix's row length falls back to Q8_0, then F32.
// Vectors (norms, biases) are F32, as in real files.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "gguf/tensor_type.h"
#include "model/model.h"

namespace tokenmill::model::testing {

struct TinyModelSpec {
  std::string architecture = "llama";  // general.architecture: gemma3, llama, qwen2
  int32_t n_vocab = 97;
  int32_t n_embd = 64;
  int32_t n_layers = 2;
  int32_t n_heads = 4;
  int32_t n_kv_heads = 2;
  int32_t head_dim = 16;  // written as key_length / value_length
  int32_t n_ff = 128;
  float rms_eps = 1e-6f;
  float rope_freq_base = 10000.0f;
  // Gemma 3 only (0 / unset elsewhere).
  int32_t sliding_window = 0;
  int32_t sliding_window_pattern = 0;  // layer l is local iff l % pattern < pattern - 1
  float rope_freq_base_swa = 10000.0f;
  float final_logit_softcap = 0.0f;
  bool tied_output = false;  // no output.weight: the embedding table is reused
  bool rope_freqs = false;   // a rope_freqs.weight tensor (Llama 3.1+'s rope scaling)
  int32_t rope_dimension_count = 0;  // > 0: written as rope.dimension_count (partial rotary)

  // More metadata: "<architecture>.<suffix>" = value (F32, U32 or string), after the keys above.
  std::map<std::string, float> extra_f32;
  std::map<std::string, uint32_t> extra_u32;
  std::map<std::string, std::string> extra_strings;

  std::vector<gguf::TensorType> matrix_types = {gguf::TensorType::kF32};
  uint32_t seed = 1;

  // Damage, for loader tests.
  std::set<std::string> omit_tensors;
  std::map<std::string, gguf::TensorType> type_overrides;
  std::map<std::string, std::vector<int64_t>> shape_overrides;  // ggml order
};

// Gemma 3: 3 layers (local, global, local) with sliding window 4, q/k norms, post norms,
// head_dim 32 != n_embd / n_heads, tied embeddings, a final logit softcap.
TinyModelSpec tiny_gemma3_spec();
// Llama: 2 layers, GQA with 4 query heads over 2 KV heads, untied output.
TinyModelSpec tiny_llama_spec();
// Qwen 2: q/k/v biases, NeoX rotary pairs, GQA.
TinyModelSpec tiny_qwen2_spec();
// Llama with n_embd 256 and n_ff 512, so every row length allows the K-quants.
TinyModelSpec tiny_llama_k_quant_spec();

// The GGUF file the spec describes.
Result<std::vector<uint8_t>> build_tiny_gguf(const TinyModelSpec& spec);

// Parses bytes into a File that owns them (through the shared_ptr's control block).
Result<std::shared_ptr<const gguf::File>> parse_owned(std::vector<uint8_t> bytes);

// build_tiny_gguf + parse_owned + load_model(n_threads, no prefetch).
Result<std::unique_ptr<Model>> load_tiny_model(const TinyModelSpec& spec, int n_threads = 2);

// Every element of a tensor of the file as float, rows in order. REQUIRES: it exists.
std::vector<float> dequantize_tensor(const gguf::File& file, const std::string& name);

}  // namespace tokenmill::model::testing

// What the converter knows about each Hugging Face model_type: the GGUF architecture it
// becomes, its tensors' GGUF names, and the tensors a complete model has (with shapes,
// checked before anything is written).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "convert/hf_config.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::convert {

struct HfArchitecture {
  const char* model_type;  // config.json
  const char* gguf_arch;   // general.architecture
  // Llama's GGUF rotates adjacent pairs while Hugging Face rotates the two halves of each
  // head: q and k rows are reordered so the same pairs rotate together.
  bool permute_qk = false;
  bool qkv_bias = false;
  bool qk_norm = false;
};

Result<HfArchitecture> find_hf_architecture(const std::string& model_type);
std::string supported_model_types();  // "llama, mistral, qwen2, qwen3"

// A tensor the GGUF file must hold: its name and shape in ggml order (shape[0] contiguous).
struct ExpectedTensor {
  std::string gguf_name;
  std::vector<int64_t> shape;
};
std::vector<ExpectedTensor> expected_tensors(const HfArchitecture& arch, const HfConfig& config);

// The GGUF name of a Hugging Face tensor; nullopt for tensors GGUF does not keep (rotary
// inverse frequencies, a tied output) and an error for a name the architecture lacks.
Result<std::optional<std::string>> gguf_tensor_name(const HfArchitecture& arch, const HfConfig& config,
                                                     const std::string& hf_name);

// "<arch>.*" hyperparameters (and general.architecture).
void write_architecture_metadata(const HfArchitecture& arch, const HfConfig& config, gguf::Writer& writer);

// Llama 3.1+ rope scaling as the per-pair frequency divisors of rope_freqs.weight.
std::vector<float> llama3_rope_divisors(const HfConfig& config);

}  // namespace tokenmill::convert

// tokenmill convert: a Hugging Face model directory (config.json, *.safetensors,
// tokenizer.json and friends) to a GGUF file with llama.cpp's metadata keys and tensor
// names, so the file loads in llama.cpp and Ollama as well as in tokenmill.
//
// Everything is checked before anything is written: the config's sizes, every
// safetensors header, each tensor's name and shape against what the architecture needs
// (a missing, extra or misshapen tensor is an error naming it), the tokenizer. The file
// is written as F32 and, for any other type, quantized from that by quant::quantize_model
// with the type's mix; OUT appears only complete (temporary file + rename).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "quant/quantize_mix.h"

namespace tokenmill::convert {

struct ConvertOptions {
  quant::MixInfo outtype;  // F32, F16, BF16, Q8_0, Q4_K_M, ...
  int n_threads = 1;
  std::string name;  // general.name; empty: the directory's name
  // Called after each tensor is converted to F32 (done of total), then per quantized
  // tensor when the type is not F32.
  std::function<void(const char* phase, int64_t done, int64_t total)> on_progress;
};

struct ConvertSummary {
  std::string model_type;
  std::string gguf_arch;
  std::string tokenizer_pre;
  int64_t n_tensors = 0;
  int64_t n_parameters = 0;
  int64_t n_tokens = 0;
};

Result<ConvertSummary> convert_hf_model(const std::string& dir, const std::string& out_path,
                                        const ConvertOptions& options);

}  // namespace tokenmill::convert

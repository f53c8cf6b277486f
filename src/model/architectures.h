// Constructors of the per-architecture models (one file each).
#pragma once

#include <memory>

#include "model/model.h"

namespace tokenmill::model {

// Gemma 3 and Gemma 2.
std::unique_ptr<Model> make_gemma3(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
                                   std::unique_ptr<ops::Backend> backend);
// Llama 2/3, Mistral, Qwen 2 (which adds q/k/v biases and NeoX rotary pairs) and Qwen 3
// (per-head q/k RMS norms instead of the biases).
std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
                                  std::unique_ptr<ops::Backend> backend);

}  // namespace tokenmill::model

// Turns what the user typed after -m into a model file path.
#pragma once

#include <string>

#include "base/status.h"

namespace tokenmill::cli {

inline constexpr const char* kDefaultModelFile = "gemma-3-270m-q4_k_m.gguf";

// "default" (or empty) finds the default model in $TOKENMILL_MODELS_DIR, ./models, or
// the models/ folder of the source tree the binary was built in; anything else is a
// path that must exist.
Result<std::string> resolve_model_path(const std::string& spec);

}  // namespace tokenmill::cli

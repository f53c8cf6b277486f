// Turns what the user typed after -m into a model file path.
#pragma once

#include <string>

#include "base/status.h"

namespace tokenmill::cli {

inline constexpr const char* kDefaultModelFile = "gemma-3-270m-q4_k_m.gguf";

// "default" (or empty) finds the default model in $TOKENMILL_MODELS_DIR, ./models, or
// the models/ folder of the source tree the binary was built in; an existing file is
// itself; anything else is looked up as a name in the model store at models_dir (""
// : the default store, store/model_store.h).
Result<std::string> resolve_model_path(const std::string& spec, const std::string& models_dir = "");

// The same, with the name the model is served under: its store name ("gemma3:latest"),
// or "" for a file (the server then names it after the file).
struct ResolvedModel {
  std::string path;
  std::string name;
};
Result<ResolvedModel> resolve_model(const std::string& spec, const std::string& models_dir = "");

}  // namespace tokenmill::cli

// Where tests find the real default model: $TOKENMILL_MODEL, else models/ in the source
// tree (scripts/setup puts it there).
#pragma once

#include <cstdlib>
#include <string>

namespace tokenmill::testing {

inline std::string default_model_path() {
  if (const char* env = std::getenv("TOKENMILL_MODEL")) return env;
  return std::string(TOKENMILL_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
}

}  // namespace tokenmill::testing

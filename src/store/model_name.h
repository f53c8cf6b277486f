// Names of models in the store, as Ollama writes them: NAME[:TAG], where NAME is one to
// three '/'-separated parts ("gemma3", "me/gemma3-tuned") and TAG defaults to "latest".
// A name becomes a path under the store's manifests/, so every part is checked: letters,
// digits, '.', '_' and '-', never starting with '.' or '-' (no "..", no hidden files).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tokenmill::store {

struct ModelName {
  std::string name;  // "gemma3", "me/gemma3-tuned"
  std::string tag = "latest";

  std::string full() const { return name + ":" + tag; }  // "gemma3:latest"
  bool operator==(const ModelName&) const = default;
};

// InvalidArgument naming the offending part when text is not a valid NAME[:TAG].
Result<ModelName> parse_model_name(std::string_view text);

}  // namespace tokenmill::store

// An embedding model a server serves: beside its chat model (tokenmill serve
// --embedding-model), as its model (-m), or from its model store by name: its encoder,
// tokenizer and the embedder that batches its requests.
//
// Thread-safety: immutable after construction; the embedder is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/embedder.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::server {

struct ServedEmbeddings {
  std::string name;  // the file's basename without extension
  const tokenizer::Tokenizer& tokenizer;
  engine::Embedder& embedder;
  std::string path = "";  // the GGUF file (for /api/tags)

  // True for name and name + ":latest" (Ollama's tag).
  bool answers_to(std::string_view requested) const {
    return requested == name || (requested.ends_with(":latest") && requested.substr(0, requested.size() - 7) == name);
  }
};

// An embedding model loaded whole, as a model store's loader makes one (ModelSet):
// destroying it answers the requests its embedder holds and stops it.
class LoadedEmbeddings {
 public:
  virtual ~LoadedEmbeddings() = default;
  virtual const ServedEmbeddings& served() const = 0;
};

}  // namespace tokenmill::server

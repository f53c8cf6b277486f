// The embedding model a server may serve beside its chat model (tokenmill serve
// --embedding-model): its encoder, tokenizer and the embedder that batches its requests.
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

}  // namespace tokenmill::server

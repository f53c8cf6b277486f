// A BERT-family embedding GGUF loaded to answer /v1/embeddings, beside a chat model
// (`serve --embedding-model`, `batch --embedding-model`), as the model itself (`serve -m`)
// or from the model store:
// its encoder, tokenizer and the embedder that batches its requests, owned together.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/embedder.h"
#include "model/bert_encoder.h"
#include "server/served_embeddings.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::cli {

class EmbeddingModel final : public server::LoadedEmbeddings {
 public:
  // path: the GGUF file; n_threads: its encoder's compute threads; name: what requests
  // call it ("": the file's basename without extension). Prints one line on stderr
  // (dimensions, tokens per input, pooling) when verbose.
  static Result<std::unique_ptr<EmbeddingModel>> load(const std::string& path, int n_threads, bool verbose,
                                                      const std::string& name = "");
  // Whether path is a GGUF of an embedding architecture (one load() reads).
  static bool is_embedding_file(const std::string& path);

  const server::ServedEmbeddings& served() const override { return *served_; }
  // Answers the requests it holds, then stops its batching thread (also on destruction).
  void shutdown() { embedder_->shutdown(); }

 private:
  EmbeddingModel() = default;

  std::unique_ptr<model::BertEncoder> encoder_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<engine::Embedder> embedder_;  // after encoder_: it is destroyed first
  std::unique_ptr<server::ServedEmbeddings> served_;
};

}  // namespace tokenmill::cli

#include "cli/embedding_model.h"

#include <cstdio>
#include <filesystem>

#include "gguf/gguf_file.h"
#include "ops/cpu/cpu_backend.h"

namespace tokenmill::cli {

bool EmbeddingModel::is_embedding_file(const std::string& path) {
  auto file = gguf::File::open(path);
  return file.ok() && file->get_string_or("general.architecture", "") == "bert";
}

Result<std::unique_ptr<EmbeddingModel>> EmbeddingModel::load(const std::string& path, int n_threads, bool verbose,
                                                              const std::string& name_given) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.status();
  auto shared = std::make_shared<const gguf::File>(std::move(file).value());
  auto encoder = model::BertEncoder::load(shared, std::make_unique<ops::CpuBackend>(n_threads));
  if (!encoder.ok()) return encoder.status();
  auto words = tokenizer::Tokenizer::from_gguf(*shared);
  if (!words.ok()) return words.status();
  std::unique_ptr<EmbeddingModel> loaded(new EmbeddingModel());
  loaded->encoder_ = std::move(encoder).value();
  loaded->tokenizer_ = std::move(words).value();
  loaded->embedder_ = std::make_unique<engine::Embedder>(*loaded->encoder_);
  const std::string name = name_given.empty() ? std::filesystem::path(path).stem().string() : name_given;
  loaded->served_ = std::make_unique<server::ServedEmbeddings>(
      server::ServedEmbeddings{name, *loaded->tokenizer_, *loaded->embedder_, path});
  if (verbose) {
    const model::BertConfig& c = loaded->encoder_->config();
    std::fprintf(stderr, "embedding model %s: %d dimensions, %d tokens per input, %s pooling\n", name.c_str(),
                 c.n_embd, c.max_positions, model::pooling_name(c.pooling));
  }
  return loaded;
}

}  // namespace tokenmill::cli

#include "tiny_engine_model.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "gguf/gguf_writer.h"
#include "model/tiny_model.h"

namespace tokenmill::engine::testing {

namespace {

// U+2581 (the SentencePiece space) is written as its own string literal so that a
// following hex-digit letter is not swallowed into the escape.
#define TM_SPACE "\xE2\x96\x81"
const char* kWords[] = {TM_SPACE "the", TM_SPACE "cat", TM_SPACE "sat", TM_SPACE "on",  TM_SPACE "a",
                        TM_SPACE "mat", TM_SPACE "and", TM_SPACE "dog", TM_SPACE "ran", TM_SPACE "far",
                        TM_SPACE,       "e",            "t",            "a",            "o",
                        "n",            "s",            "r",            "h",            "d"};
#undef TM_SPACE

// Copies a parsed file into a writer, then adds tokenizer metadata.
std::vector<uint8_t> with_tokenizer(const gguf::File& file, int32_t n_vocab) {
  gguf::Writer w;
  for (const auto& kv : file.metadata()) w.set(kv.key, kv.value);
  std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>"};
  std::vector<float> scores = {0, 0, 0, 0};
  std::vector<int32_t> types = {3, 3, 3, 2};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    scores.push_back(0);
    types.push_back(6);
  }
  float score = -1;
  for (const char* word : kWords) {
    tokens.push_back(word);
    scores.push_back(score);
    score -= 0.5f;
    types.push_back(1);
  }
  while (static_cast<int32_t>(tokens.size()) < n_vocab) {
    tokens.push_back("<unused" + std::to_string(tokens.size()) + ">");
    scores.push_back(-1000);
    types.push_back(5);
  }
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", gguf::make_array(gguf::ValueType::kString, tokens));
  w.set("tokenizer.ggml.scores", gguf::make_array(gguf::ValueType::kFloat32, scores));
  w.set("tokenizer.ggml.token_type", gguf::make_array(gguf::ValueType::kInt32, types));
  w.set_u32("tokenizer.ggml.bos_token_id", 2);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_u32("tokenizer.ggml.unknown_token_id", 3);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  w.set_bool("tokenizer.ggml.add_space_prefix", true);
  for (const auto& t : file.tensors()) {
    Status s = w.add_tensor(t.name, t.type, t.shape, file.tensor_data(t));
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  auto bytes = w.to_bytes();
  EXPECT_TRUE(bytes.ok());
  return std::move(bytes).value();
}

}  // namespace

TinyEngineModel load_tiny_engine_model(TinyDraft draft, std::shared_ptr<ThreadPool> thread_pool) {
  TinyEngineModel out;
  auto spec = model::testing::tiny_gemma3_spec();
  spec.n_vocab = 4 + 256 + 20 + 4;
  spec.matrix_types = {gguf::TensorType::kQ8_0, gguf::TensorType::kF16, gguf::TensorType::kQ4_0};
  if (draft == TinyDraft::kAgreeing) spec.matrix_types = {gguf::TensorType::kQ4_0};
  if (draft == TinyDraft::kDisagreeing) {
    spec.seed = 77;
    spec.tied_output = false;
  }
  auto bytes = model::testing::build_tiny_gguf(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return out;
  auto plain = model::testing::parse_owned(std::move(bytes).value());
  EXPECT_TRUE(plain.ok());
  if (!plain.ok()) return out;
  auto file = model::testing::parse_owned(with_tokenizer(**plain, spec.n_vocab));
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return out;
  model::LoadOptions options;
  options.n_threads = 2;
  options.prefetch = false;
  options.thread_pool = std::move(thread_pool);
  auto model = model::load_model(*file, options);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (!model.ok()) return out;
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  if (!tokenizer.ok()) return out;
  out.model = std::move(model).value();
  out.tokenizer = std::move(tokenizer).value();
  return out;
}

}  // namespace tokenmill::engine::testing

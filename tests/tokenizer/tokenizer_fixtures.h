// Shared by the tokenizer tests: where the fixtures and the real model are, and loading
// them. The real model is required: a missing file fails the test with a message that
// says how to get it, it is never skipped.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::tokenizer::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(TOKENMILL_FIXTURES_DIR) + "/tokenizer/" + name;
}

inline nlohmann::json load_json_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << fixture_path(name)
                         << " (tools/make_tokenizer_fixtures.py writes it)";
  if (!in.good()) return nlohmann::json::object();
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// TOKENMILL_MODEL, else ${TOKENMILL_SOURCE_DIR}/models/gemma-3-270m-q4_k_m.gguf.
inline std::string default_model_path() {
  if (const char* model = std::getenv("TOKENMILL_MODEL"); model && *model) return model;
  const char* source = std::getenv("TOKENMILL_SOURCE_DIR");
  const std::string root = source && *source ? source : TOKENMILL_SOURCE_DIR;
  return root + "/models/gemma-3-270m-q4_k_m.gguf";
}

// The embedding model scripts/setup converts (all-MiniLM-L6-v2, WordPiece).
inline std::string minilm_model_path() {
  const char* source = std::getenv("TOKENMILL_SOURCE_DIR");
  return std::string(source && *source ? source : TOKENMILL_SOURCE_DIR) + "/models/all-minilm-l6-v2-f16.gguf";
}

// A GGUF file and the tokenizer built from it, kept together (the tokenizer copies what
// it needs, but tests may also want the file).
struct LoadedTokenizer {
  std::unique_ptr<gguf::File> file;
  std::unique_ptr<Tokenizer> tokenizer;
};

// ADD_FAILURE()s and returns an empty tokenizer if the file cannot be used.
inline LoadedTokenizer load_tokenizer(const std::string& path) {
  LoadedTokenizer loaded;
  Result<gguf::File> file = gguf::File::open(path);
  if (!file.ok()) {
    ADD_FAILURE() << "cannot open " << path << ": " << file.status().to_string()
                  << "\n(the default model is installed by scripts/setup; "
                     "TOKENMILL_MODEL=/path/to/model.gguf overrides the path)";
    return loaded;
  }
  loaded.file = std::make_unique<gguf::File>(std::move(file).value());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(*loaded.file);
  if (!tokenizer.ok()) {
    ADD_FAILURE() << "no tokenizer from " << path << ": " << tokenizer.status().to_string();
    return loaded;
  }
  loaded.tokenizer = std::move(tokenizer).value();
  return loaded;
}

// "[1, 2, 3]" for failure messages.
inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

}  // namespace tokenmill::tokenizer::testing

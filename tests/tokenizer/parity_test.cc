// Token ids must equal llama.cpp's on every corpus line (tests/fixtures/tokenizer/,
// written by tools/make_tokenizer_fixtures.py), for the default model's SentencePiece
// vocabulary and for a byte-level BPE vocabulary under four pre-tokenizers; and Hugging
// Face's on every line for BERT's WordPiece.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tokenmill::tokenizer {
namespace {

using testing::ids_to_string;

struct Mode {
  const char* key;     // field of a fixture case
  bool add_special;
  bool parse_special;
};

// Compares every case of fixture for each mode; reports the first few mismatches in full
// and the count per mode.
void expect_parity(const Tokenizer& tokenizer, const nlohmann::json& fixture,
                   const std::vector<Mode>& modes) {
  ASSERT_TRUE(fixture.contains("cases"));
  for (const Mode& mode : modes) {
    int n_cases = 0, n_match = 0;
    for (const auto& c : fixture["cases"]) {
      if (!c.contains(mode.key)) continue;
      ++n_cases;
      const std::string text = c["text"].get<std::string>();
      const auto expected = c[mode.key].get<std::vector<int32_t>>();
      const std::vector<int32_t> actual = tokenizer.encode(text, mode.add_special, mode.parse_special);
      if (actual == expected) {
        ++n_match;
      } else if (n_cases - n_match <= 5) {
        ADD_FAILURE() << mode.key << ": text " << nlohmann::json(text).dump()
                      << "\n  expected " << ids_to_string(expected)
                      << "\n  actual   " << ids_to_string(actual);
      }
    }
    EXPECT_GT(n_cases, 0) << mode.key;
    EXPECT_EQ(n_match, n_cases) << mode.key << ": " << n_match << " of " << n_cases
                                << " lines match llama.cpp";
  }
}

TEST(TokenizerParity, GemmaSentencePieceMatchesLlamaCpp) {
  const testing::LoadedTokenizer loaded = testing::load_tokenizer(testing::default_model_path());
  ASSERT_NE(loaded.tokenizer, nullptr);
  const nlohmann::json fixture = testing::load_json_fixture("gemma3_270m.json");
  ASSERT_GE(fixture["cases"].size(), 1000u);
  EXPECT_EQ(loaded.tokenizer->n_vocab(), fixture["n_vocab"].get<int32_t>());
  expect_parity(*loaded.tokenizer, fixture,
                {{"plain", false, false}, {"special", false, true}, {"plain_bos", true, false}});
}

// BERT's uncased WordPiece (all-MiniLM-L6-v2, as scripts/setup and tokenmill convert
// write it) against Hugging Face's tokenizers on every corpus line
// (tools/make_wordpiece_fixtures.py): [CLS] and [SEP] added, special-token text matched.
TEST(TokenizerParity, WordPieceMatchesHuggingFaceTokenizers) {
  const testing::LoadedTokenizer loaded = testing::load_tokenizer(testing::minilm_model_path());
  ASSERT_NE(loaded.tokenizer, nullptr) << "scripts/setup converts all-MiniLM-L6-v2";
  const nlohmann::json fixture = testing::load_json_fixture("wordpiece_minilm_corpus.json");
  ASSERT_GE(fixture["cases"].size(), 1000u);
  expect_parity(*loaded.tokenizer, fixture, {{"special", true, true}});
}

class BpeParity : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeParity, ByteLevelBpeMatchesLlamaCpp) {
  const std::string pre = GetParam();
  const nlohmann::json fixture = testing::load_json_fixture("llama3_bpe.json");
  Result<gguf::File> file = gguf::File::open(testing::fixture_path("llama3_bpe_32k.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  Result<Vocab> vocab = load_vocab(*file);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  ASSERT_EQ(vocab->pre, "llama-bpe");
  vocab->pre = pre;  // the fixture's other pre-tokenizers ran on this same vocabulary
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_vocab(std::move(vocab).value());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();

  const std::string plain = pre + "/plain";
  const std::string special = pre + "/special";
  const std::string plain_bos = pre + "/plain_bos";
  std::vector<Mode> modes = {{plain.c_str(), false, false}};
  if (pre == "llama-bpe") {
    modes.push_back({special.c_str(), false, true});
    modes.push_back({plain_bos.c_str(), true, false});
  }
  expect_parity(**tokenizer, fixture, modes);
}

INSTANTIATE_TEST_SUITE_P(PreTokenizers, BpeParity,
                         ::testing::Values("llama-bpe", "qwen2", "gpt-2", "default"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace tokenmill::tokenizer

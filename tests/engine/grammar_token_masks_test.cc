// Whole-vocabulary masks (engine/grammar_token_masks.h) equal GrammarMatcher::allows()
// token by token, along walks through the schema corpus that follow the masks, on a
// vocabulary built to cross every kind of boundary: every single byte, JSON punctuation
// glued to words, digits, escapes, UTF-8 sequences whole and cut, duplicates and empty
// pieces.
#include "engine/grammar_token_masks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "engine/json_constraint.h"
#include "engine/json_schema.h"
#include "engine/schema_corpus.h"
#include "tokenizer/vocab.h"

namespace tokenmill::engine {
namespace {

using json = nlohmann::ordered_json;

std::vector<json> corpus() { return testing::schema_corpus(); }

std::vector<std::string> vocabulary() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  const std::vector<std::string> parts = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\\", "\\n", "\\u00", "-", ".",
                                          "e", "0", "1", "7", "9", "12", "2024", "true", "false", "null", "name", "id",
                                          "a", "b", "x", "@", "T", "Z", "é", "中", "\xe4\xb8", "\xad", "https", "://"};
  std::mt19937 rng(5);
  std::uniform_int_distribution<size_t> part(0, parts.size() - 1);
  for (int i = 0; i < 4000; ++i) {
    std::string piece;
    for (int n = std::uniform_int_distribution<int>(1, 4)(rng); n > 0; --n) piece += parts[part(rng)];
    pieces.push_back(piece);
  }
  pieces.push_back("");
  pieces.push_back("\":");
  pieces.push_back("\":");  // a duplicate
  return pieces;
}

bool bit(const std::vector<uint32_t>& bits, size_t id) { return (bits[id / 32] >> (id % 32)) & 1u; }

// Walks each grammar by tokens drawn from its masks and checks every mask on the way.
// Returns the walks that fell back to stepping parse sets.
size_t check_walks(const std::vector<json>& schemas, size_t stride, size_t max_states, int steps, int min_masks) {
  const std::vector<std::string> pieces = vocabulary();
  auto trie = std::make_shared<const TokenTrie>(pieces);
  std::mt19937 rng(7);
  int n_masks = 0;
  size_t fallbacks = 0;
  for (size_t k = 0; k < schemas.size(); k += stride) {
    auto compiled = JsonSchema::compile(schemas[k]["schema"]);
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
    if (!compiled.ok()) continue;
    GrammarTokenMasks masks((*compiled)->grammar(), trie, max_states);
    GrammarMatcher matcher((*compiled)->grammar());
    std::vector<uint32_t> bits(GrammarTokenMasks::words(trie->n_vocab()));
    for (int step = 0; step < steps && !matcher.complete(); ++step) {
      masks.fill(matcher, bits);
      ++n_masks;
      std::vector<size_t> allowed;
      for (size_t id = 0; id < pieces.size(); ++id) {
        const bool expected = !pieces[id].empty() && matcher.allows(pieces[id]);
        EXPECT_EQ(bit(bits, id), expected) << schemas[k]["name"] << " step " << step << " token " << json(pieces[id]).dump(
                                                  -1, ' ', false, json::error_handler_t::replace);
        if (expected) allowed.push_back(id);
      }
      if (allowed.empty() || ::testing::Test::HasFailure()) break;
      matcher.advance(pieces[allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)]]);
    }
    fallbacks += masks.walks_without_automaton();
  }
  EXPECT_GE(n_masks, min_masks);
  return fallbacks;
}

TEST(GrammarTokenMasks, EqualAllowsAlongWalksThroughTheCorpus) {
  const std::vector<json> schemas = corpus();
  ASSERT_GE(schemas.size(), 150u);
  EXPECT_EQ(check_walks(schemas, 3, GrammarTokenMasks::kMaxStates, 24, 600), 0u);
}

TEST(GrammarTokenMasks, EqualAllowsWhenTheAutomatonOverflows) {
  // Four states at most: nearly every walk falls back to stepping parse sets directly.
  const std::vector<json> schemas = corpus();
  EXPECT_GT(check_walks(schemas, 17, 4, 12, 100), 10u);
}

TEST(TokenTrie, HoldsEveryNonEmptyPieceOnceInPreorder) {
  const std::vector<std::string> pieces = {"ab", "a", "", "abc", "b", "ab", "\xff"};
  const TokenTrie trie(pieces);
  ASSERT_EQ(trie.nodes().size(), 5u);  // a, ab, abc, b, \xff
  EXPECT_EQ(trie.tokens().size(), 6u);
  EXPECT_EQ(trie.max_depth(), 3u);
  const TokenTrie::Node& a = trie.nodes()[0];
  EXPECT_EQ(a.byte, 'a');
  EXPECT_EQ(a.subtree_end, 3u);
  const TokenTrie::Node& ab = trie.nodes()[1];
  EXPECT_EQ(ab.n_tokens, 2u);  // tokens 0 and 5
  EXPECT_EQ(trie.tokens()[ab.first_token], 0);
  EXPECT_EQ(trie.tokens()[ab.first_token + 1], 5);
  EXPECT_EQ(trie.nodes()[4].byte, 0xff);
}

// When no token near the top of the logits fits, the draw falls back to the whole
// vocabulary: through the mask, the same tokens as asking allows() one by one.
TEST(MaskToJson, FallsBackToTheWholeVocabularyThroughTheMask) {
  tokenizer::Vocab vocab;
  vocab.tokens.push_back({"<unk>", 0.0f, tokenizer::TokenType::kUnknown});
  vocab.tokens.push_back({"<eos>", 0.0f, tokenizer::TokenType::kControl});
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    vocab.tokens.push_back({text, 0.0f, tokenizer::TokenType::kByte});
  }
  for (const char* piece : {"{\"", "name", "\":", " \"", "Ada", "\"}", "hello", "world", "}", "42"}) {
    vocab.tokens.push_back({piece, 0.0f, tokenizer::TokenType::kNormal});
  }
  vocab.unk_id = 0;
  vocab.eos_id = 1;
  tokenizer::finish_vocab(vocab);
  auto made = tokenizer::Tokenizer::from_vocab(std::move(vocab));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const tokenizer::Tokenizer& words = **made;
  auto schema = JsonSchema::compile(json::parse(R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})"));
  ASSERT_TRUE(schema.ok());
  JsonSchemaGrammar grammar(*schema);
  grammar.advance("{\"name\": \"");
  // Inside the string, "}" is an ordinary character: the weight goes to a token that is
  // not, a control token, so nothing within the logit window fits.
  std::vector<float> logits(static_cast<size_t>(words.n_vocab()), -100.0f);
  logits[1] = 10.0f;  // <eos>: the value is not whole
  const std::shared_ptr<const TokenTrie> trie = token_trie_of(words);
  std::vector<float> by_mask, by_allows;
  ASSERT_TRUE(mask_to_json(grammar, logits, words, false, by_mask, [&] { return trie; }));
  ASSERT_TRUE(mask_to_json(grammar, logits, words, false, by_allows, nullptr));
  EXPECT_EQ(by_mask, by_allows);
  int n_allowed = 0;
  for (float x : by_mask) n_allowed += std::isfinite(x);
  EXPECT_GT(n_allowed, 100);  // the byte tokens that may sit in a string, and the words
}

}  // namespace
}  // namespace tokenmill::engine

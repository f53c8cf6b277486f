// WordPiece (BERT uncased) against Hugging Face's tokenizers on all-MiniLM-L6-v2's
// vocabulary: the GGUF tools/convert_bert_gguf.py writes (scripts/setup does) and the ids
// tools/make_wordpiece_fixtures.py recorded, over accents, case, CJK, Hangul, emoji,
// control characters, punctuation, overlong words. Then decoding, and the rules on a
// hand-made vocabulary.
#include "tokenizer/wordpiece_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_fixtures.h"

namespace tokenmill::tokenizer {
namespace {

using testing::load_json_fixture;
using testing::load_tokenizer;
using testing::LoadedTokenizer;
using testing::minilm_model_path;

TEST(WordPiece, MatchesHuggingFaceOnMiniLm) {
  LoadedTokenizer loaded = load_tokenizer(minilm_model_path());
  ASSERT_TRUE(loaded.tokenizer) << "scripts/setup converts all-MiniLM-L6-v2 to " << minilm_model_path();
  const nlohmann::json fixture = load_json_fixture("wordpiece_minilm.json");
  ASSERT_GE(fixture["cases"].size(), 20u);
  for (const auto& c : fixture["cases"]) {
    const std::string text = c["text"];
    const std::vector<int32_t> expected = c["ids"];
    // Hugging Face's encode() matches special tokens written in the text ("[SEP]").
    EXPECT_EQ(loaded.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/true), expected) << text;
  }
}

TEST(WordPiece, DecodesWordsWithSpacesAndContinuationsJoined) {
  LoadedTokenizer loaded = load_tokenizer(minilm_model_path());
  ASSERT_TRUE(loaded.tokenizer);
  const Tokenizer& t = *loaded.tokenizer;
  const std::vector<int32_t> ids = t.encode("Unbelievably playful, isn't it?", true, false);
  EXPECT_EQ(t.decode(ids, /*render_special=*/false), "unbelievably playful , isn ' t it ?");
  EXPECT_EQ(t.decode(ids, /*render_special=*/true).rfind("[CLS]", 0), 0u);
  EXPECT_EQ(t.bos_id(), *t.find_token("[CLS]"));
  // Streamed the same (the fuzzer found the incremental decoder keeping the first word's space).
  IncrementalDecoder decoder(t, /*render_special=*/false);
  std::string streamed;
  for (int32_t id : ids) streamed += decoder.push(id);
  streamed += decoder.flush();
  EXPECT_EQ(streamed, t.decode(ids, false));
  EXPECT_EQ(t.eos_id(), *t.find_token("[SEP]"));
}

Vocab tiny_vocab() {
  Vocab vocab;
  vocab.kind = VocabKind::kWordPiece;
  const std::string w = "\xE2\x96\x81";  // U+2581: a word's first token
  for (const char* text : {"[UNK]", "[CLS]", "[SEP]"}) vocab.tokens.push_back({text, 0, TokenType::kControl});
  for (const std::string& text : std::vector<std::string>{w + "play", w + "p", "ing", "s", "in", "g", w + ",", w + "!"}) {
    vocab.tokens.push_back({text, 0, TokenType::kNormal});
  }
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  return vocab;
}

TEST(WordPiece, LongestPrefixFirstAndUnknownWords) {
  auto tokenizer = Tokenizer::from_vocab(tiny_vocab());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  const auto ids = [&](const std::string& text) { return (*tokenizer)->encode(text, false, false); };
  EXPECT_EQ(ids("playing"), (std::vector<int32_t>{3, 5}));     // play + ing, not p + ...
  EXPECT_EQ(ids("PLAYS!"), (std::vector<int32_t>{3, 6, 10}));  // lowercased; "!" split off
  EXPECT_EQ(ids("plaything"), (std::vector<int32_t>{0}));      // "thing" has no tokens: the whole word is [UNK]
  EXPECT_EQ(ids("play , p"), (std::vector<int32_t>{3, 9, 4}));
  EXPECT_EQ(ids(std::string(101, 'p')), (std::vector<int32_t>{0}));  // over 100 characters
  Vocab no_unk = tiny_vocab();
  no_unk.unk_id = kNoToken;
  EXPECT_FALSE(Tokenizer::from_vocab(std::move(no_unk)).ok());
}

TEST(WordPiece, Normalization) {
  EXPECT_EQ(bert_normalize("Café ÅNGSTRÖM"), "cafe angstrom");
  EXPECT_EQ(bert_normalize("a\tb\nc\u00a0d"), "a b c d");
  EXPECT_EQ(bert_normalize("x\x01y\u200bz"), "xyz");        // control and format characters go
  EXPECT_EQ(bert_normalize("中文"), " 中  文 ");              // ideographs stand alone
  EXPECT_EQ(bert_normalize("한"), "\u1112\u1161\u11ab");     // Hangul: its jamo
  EXPECT_EQ(bert_normalize("bad \xff byte"), "bad  byte");  // invalid UTF-8 is U+FFFD, dropped
}

}  // namespace
}  // namespace tokenmill::tokenizer

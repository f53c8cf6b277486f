// WordPiece, as BERT's uncased tokenizers split text (Hugging Face's BertNormalizer,
// BertPreTokenizer and WordPiece model, which sentence-transformers models use):
//
//   normalize: drop NUL, U+FFFD and "other" characters (control, format, unassigned,
//              private use); whitespace -> ' '; a space on each side of CJK ideographs;
//              strip accents (NFD, drop nonspacing marks) and lowercase
//              (bert_normalization_table.inc)
//   split:     on whitespace, and every punctuation character alone
//   per word:  the longest vocabulary prefix, then the longest continuation token for
//              the rest, and so on; a word with a part that no token covers, or longer
//              than kMaxWordChars characters, is one [UNK]
//
// The vocabulary is written as llama.cpp's converter writes BERT's: a word's first token
// as U+2581 + text ("▁play"), a continuation without BERT's "##" ("ing").
//
// Thread-safety: encode() is const and keeps its state on the stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace tokenmill::tokenizer {

class WordPieceTokenizer {
 public:
  static constexpr size_t kMaxWordChars = 100;

  // REQUIRES: vocab outlives the tokenizer; vocab.unk_id is a token.
  explicit WordPieceTokenizer(const Vocab& vocab) : vocab_(&vocab) {}

  // Appends the tokens of one stretch of plain text (no special tokens) to out.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  const Vocab* vocab_;
};

// BERT's uncased normalization of text (the first step above), for tests and tools.
std::string bert_normalize(std::string_view text);

}  // namespace tokenmill::tokenizer

// SentencePiece-style BPE over scores (Llama 2, Gemma): start from single UTF-8
// characters and repeatedly merge the adjacent pair whose concatenation is the
// vocabulary token with the highest score (ties: the leftmost pair). Pieces that never
// became tokens fall back to one <0xXX> token per byte.
//
// Input is one stretch of plain text, already with spaces written as U+2581.
// Thread-safety: encode() is const and keeps its state on the stack.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace tokenmill::tokenizer {

class SpmTokenizer {
 public:
  // REQUIRES: vocab outlives the tokenizer.
  explicit SpmTokenizer(const Vocab& vocab) : vocab_(&vocab) {}

  // Appends the tokens of text to out.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  const Vocab* vocab_;
};

// Spaces become U+2581 ("▁"), as SentencePiece vocabularies write them.
std::string escape_spaces(std::string_view text);

}  // namespace tokenmill::tokenizer

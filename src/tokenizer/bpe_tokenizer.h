// Byte-level BPE (GPT-2, Llama 3, Qwen 2): the pre-tokenizer cuts text into words, each
// word's bytes are written as GPT-2 byte characters, and within a word the adjacent pair
// with the lowest merge rank (tokenizer.ggml.merges order; ties: leftmost) is merged
// until no ranked pair is left.
//
// Thread-safety: immutable after creation; encode() may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace tokenmill::tokenizer {

class BpeTokenizer {
 public:
  // REQUIRES: vocab outlives the tokenizer. Fails on an unknown vocab.pre.
  static Result<std::unique_ptr<BpeTokenizer>> create(const Vocab& vocab);

  // Appends the tokens of one stretch of plain (raw UTF-8) text to out.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

  const PreTokenizerConfig& pretokenizer_config() const { return config_; }

 private:
  BpeTokenizer(const Vocab& vocab, PreTokenizerConfig config,
               std::unique_ptr<PreTokenizer> pre);
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  int32_t merge_rank(std::string_view left, std::string_view right, std::string& scratch) const;

  const Vocab* vocab_;
  PreTokenizerConfig config_;
  std::unique_ptr<PreTokenizer> pre_;
  // "left right" -> rank (the merge's index in the vocabulary's list).
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> ranks_;
};

}  // namespace tokenmill::tokenizer
